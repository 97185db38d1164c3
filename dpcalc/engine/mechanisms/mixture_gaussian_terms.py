"""The terms of the mixture-of-Gaussians mechanism's privacy loss (docs/math.md §2.14; numpy only): the log
likelihood ratio of the mixture against ``N(0, σ²)``, its inverse and the mixture's Gaussian tails
(:class:`MixtureTerms`).

On one dataset the mechanism outputs ``P = Σ_i p_i N(c_i, σ²)`` (sensitivities ``c_i >= 0``, probabilities
``p_i > 0`` summing to 1), on its neighbour ``Q = N(0, σ²)`` (dp_accounting's
``MixtureOfGaussiansDpEvent``; Choquette-Choo, Ganesh, Steinke & Thakurta 2024, arXiv:2310.15526).  With
``v_i(x) = (c_i x − c_i²/2)/σ²`` the log likelihood ratio is

    L(x) = log P(x)/Q(x) = log Σ_i p_i e^{v_i(x)},

a log-sum-exp of lines with slopes ``c_i/σ² >= 0``: increasing and convex, between ``log p_0`` (``p_0``
the probability of sensitivity 0; ``−∞`` when there is none) at ``x → −∞`` and ``+∞``.

The inverse ``x(ℓ)`` is found (Newton steps, then a bisection) inside a bracket that holds by
the bounds ``a_top + b_top x <= L(x) <= max(0, c_max x/σ²)`` (and, for ``ℓ <= 0``, ``L(x) <=
log(p_0 + (1 − p_0) e^{c₊ x/σ²})`` with ``c₊`` the smallest positive sensitivity); the tails use points
whose loss is checked against the target with the rounding error of ``L`` allowed for.

:class:`MixtureTerms` serves the loss models of both directions
(:mod:`dpcalc.engine.mechanisms.mixture_gaussian_loss`) and the Rényi curve
(:mod:`dpcalc.engine.mechanisms.mixture_gaussian_rdp`, :mod:`dpcalc.engine.mechanisms.mixture_gaussian_quad`).
"""

from __future__ import annotations

import math

import numpy as np

from dpcalc.engine._numerics import log_sub
from dpcalc.engine._roots import bisect_active
from dpcalc.engine.mechanisms.loss_models import log_normal_sf
from dpcalc.errors import InputError

_U = float(np.finfo(float).eps)
#: Broadcast the components against the points when their product is at most this (else loop over them).
_BROADCAST = 1 << 20
#: Up to this many components, :meth:`MixtureTerms.log_ratio` loops over them with elementwise operations.
_LOOP = 32
#: The inverse's Newton stage: at most this many steps, and an element is done once its step is at most
#: :data:`_NEWTON_TOL` times ``|x| + σ`` (the next iterate is then exact to rounding: Newton converges
#: quadratically).
_NEWTON_STEPS = 60
_NEWTON_TOL = 2.0**-26
#: The probes that close the Newton bracket: first at ``2^-52 |x|`` (an ulp or two) on either side of the
#: Newton point (the final bisection then needs a halving or none), widened 4-fold where the computed loss
#: does not fall on the right side of ``ℓ`` (its rounding), at most :data:`_PROBES` times.
_PROBE = 2.0**-52
_PROBES = 8
#: From this many values on, the inverse first solves every :data:`_SEED_STEP`-th of them (in order) and starts
#: the others between those.
_SEEDS_FROM = 256
_SEED_STEP = 32


class MixtureTerms:
    """The components of ``Σ p_i N(c_i, σ²)`` against ``N(0, σ²)``: sorted by sensitivity, equal
    sensitivities merged, probability-0 components dropped (``sens``/``probs`` are checked by the kind;
    here only that they make a mixture with some positive sensitivity)."""

    def __init__(self, sigma: float, sens, probs, normalize: bool = True):
        sigma = float(sigma)
        if not (sigma > 0 and math.isfinite(sigma)):
            raise InputError(f"sigma: must be a finite number > 0, got {sigma}")
        c = np.asarray(sens, dtype=float).ravel()
        p = np.asarray(probs, dtype=float).ravel()
        if c.size != p.size or c.size == 0:
            raise InputError("sensitivities and probs: give one probability per sensitivity")
        if not (np.all(np.isfinite(c)) and np.all(c >= 0) and np.all(np.isfinite(p)) and np.all(p >= 0)):
            raise InputError("sensitivities and probs: must be finite numbers >= 0")
        keep = p > 0
        c, p = c[keep], p[keep]
        if c.size == 0 or not np.any(c > 0):
            raise InputError("sensitivities: no component has sensitivity > 0 and probability > 0")
        cs = np.array(sorted(set(c.tolist())), dtype=float)  # (np.unique would import numpy.ma: ~7 ms)
        ps = np.array([math.fsum(p[c == v]) for v in cs])
        if normalize:  # (else a sub-mixture: the components kept by a cut, their mass below 1)
            ps = ps / math.fsum(ps)
        self.sigma = sigma
        self.s2 = sigma * sigma
        self.c = cs
        self.p = ps
        self.m = int(cs.size)
        self.lp = np.log(ps)
        self.b = cs / self.s2  # slopes of v_i
        self.a = self.lp - 0.5 * cs * cs / self.s2  # intercepts of v_i
        self.c_max = float(cs[-1])
        self.c_pos_min = float(cs[cs > 0][0])
        self.p0 = float(ps[0]) if cs[0] == 0 else 0.0
        #: log p_0 (the infimum of L), ``-inf`` when no component has sensitivity 0
        self.log_p0 = math.log(self.p0) if self.p0 > 0 else -math.inf
        self._scale_a = float(np.max(np.abs(self.a)))
        self._ab = list(zip(self.a.tolist(), self.b.tolist()))  # the lines as Python floats (one point)
        #: points × components evaluated so far (the Rényi curve's work limit reads it)
        self.work = 0

    # ------------------------------------------------------------------ the log likelihood ratio

    def _terms(self, x):
        """``v_i(x) + log p_i`` with a trailing component axis (for a broadcastable size)."""
        return self.a + self.b * x[..., None]

    def log_ratio(self, x) -> np.ndarray:
        """``L(x) = log Σ p_i e^{v_i(x)}`` for an array of any shape."""
        x = np.asarray(x, dtype=float)
        if x.size == 1 and self.m <= _LOOP:  # one point (the tails' searches): Python floats
            self.work += self.m + 16
            return np.full(x.shape, self._lse_float(float(x.flat[0]))[0])
        return self._log_ratio_array(x)

    def _log_ratio_array(self, x: np.ndarray) -> np.ndarray:
        """:meth:`log_ratio` by array operations, whatever the size (the form the inverse of many values
        tests with, so that its brackets hold for :meth:`log_ratio` of the same arrays)."""
        self.work += x.size * (self.m + 16)
        if self.m <= _LOOP:
            return self._lse(x)[0]
        with np.errstate(over="ignore", invalid="ignore", under="ignore"):
            if x.size * self.m <= _BROADCAST:
                t = self._terms(x)
                mx = np.max(t, axis=-1)
                mx_s = np.where(np.isfinite(mx), mx, 0.0)
                out = mx_s + np.log(np.sum(np.exp(t - mx_s[..., None]), axis=-1))
                return np.where(np.isfinite(mx), out, mx)
            mx = np.full(x.shape, -np.inf)
            for a, b in zip(self.a, self.b):
                mx = np.maximum(mx, a + b * x)
            mx_s = np.where(np.isfinite(mx), mx, 0.0)
            acc = np.zeros(x.shape)
            for a, b in zip(self.a, self.b):
                acc += np.exp(a + b * x - mx_s)
            return np.where(np.isfinite(mx), mx_s + np.log(acc), mx)

    def _lse(self, x, slope: int = 0):
        """``(L(x), L′(x) or None)`` (``slope=2``: ``(L, L′, L″)``, as :meth:`derivatives`) by a loop over the (few) components: elementwise array operations only,
        no reduction over a short trailing axis (which numpy does slowly); :meth:`log_ratio` for ``m <=``
        :data:`_LOOP`.  The sum of the positive terms ``e^{v_i − max}`` is sequential: its relative error
        is at most ``(m − 1)`` ulps, inside :meth:`log_ratio_error`."""
        with np.errstate(over="ignore", invalid="ignore", under="ignore"):
            ts = [a + b * x for a, b in zip(self.a, self.b)]
            mx = ts[0]
            for t in ts[1:]:
                mx = np.maximum(mx, t)
            fin = np.isfinite(mx)
            mx_s = np.where(fin, mx, 0.0)
            es = [np.exp(t - mx_s) for t in ts]
            acc = es[0]
            for e in es[1:]:
                acc = acc + e
            out = np.where(fin, mx_s + np.log(acc), mx)
            if not slope:
                return out, None
            s1 = self.b[0] * es[0]
            for b, e in zip(self.b[1:], es[1:]):
                s1 = s1 + b * e
            if slope != 2:
                return out, np.minimum(s1 / acc, self.b[-1])
            s2 = self.b[0] ** 2 * es[0]
            for b, e in zip(self.b[1:], es[1:]):
                s2 = s2 + (b * b) * e
            s1 = np.minimum(s1 / acc, self.b[-1])
            return out, s1, np.maximum(s2 / acc - s1 * s1, 0.0)

    def _lse_float(self, x: float):
        """``(L(x), L′(x))`` at one point in Python floats (the math module): :meth:`log_ratio` of a single
        point, for up to :data:`_LOOP` components.  Its rounding is that of the array form (a few ulps of the
        terms' magnitude, inside :meth:`log_ratio_error`)."""
        if x != x:
            return math.nan, math.nan
        ts = [a + b * x for a, b in self._ab]
        mx = max(ts)
        if not math.isfinite(mx):
            return mx, math.nan
        ws = [math.exp(t - mx) for t in ts]
        acc = math.fsum(ws)
        d = math.fsum(b * w for (_, b), w in zip(self._ab, ws)) / acc
        return mx + math.log(acc), min(d, self._ab[-1][1])

    def log_ratio_error(self, x) -> np.ndarray:
        """A bound on the rounding error of :meth:`log_ratio` at ``x`` (absolute; generous)."""
        x = np.asarray(x, dtype=float)
        mag = self._scale_a + float(self.b[-1]) * np.abs(x) + 1.0
        return 8.0 * _U * (self.m + 8) * mag

    def dlog_ratio(self, x0, dx, sign: float) -> np.ndarray:
        """``L(x0 + sign·dx) − L(x0) = log1p(Σ π_i(x0) expm1(sign c_i dx/σ²))`` with the posterior weights
        ``π_i(x0) = p_i e^{v_i(x0) − L(x0)}`` (accurate for small ``dx``)."""
        x0 = np.asarray(x0, dtype=float)
        dx = np.asarray(dx, dtype=float)
        l0 = self.log_ratio(x0)
        shape = np.broadcast_shapes(x0.shape, dx.shape)
        acc = np.zeros(shape)
        with np.errstate(over="ignore", invalid="ignore", under="ignore"):
            for a, b in zip(self.a, self.b):
                if b == 0.0:
                    continue  # expm1(0) = 0
                acc = acc + _weighted_expm1(a + b * x0 - l0, sign * b * dx)
            return np.log1p(acc)

    def slope(self, x) -> np.ndarray:
        """``L′(x) = Σ π_i(x) c_i/σ²`` (in ``[0, c_max/σ²]``)."""
        x = np.asarray(x, dtype=float)
        l0 = self.log_ratio(x)
        acc = np.zeros(x.shape)
        with np.errstate(over="ignore", invalid="ignore", under="ignore"):
            for a, b in zip(self.a, self.b):
                acc = acc + b * np.exp(a + b * x - l0)
        return np.minimum(acc, self.b[-1])

    def derivatives(self, x):
        """``(L(x), L′(x), L″(x))``: the loss (as :meth:`log_ratio`), and the posterior mean and variance of
        ``c_i/σ²`` (with the weights ``π_i = e^{v_i − max}/Σ_j e^{v_j − max}`` of the loss's own sum, for up to
        :data:`_LOOP` components: one exponential per component and point)."""
        x = np.asarray(x, dtype=float)
        if self.m <= _LOOP:
            self.work += 2 * x.size * (self.m + 16)
            return self._lse(x, slope=2)
        l0 = self.log_ratio(x)
        self.work += x.size * (self.m + 16)
        s1 = np.zeros(x.shape)
        s2 = np.zeros(x.shape)
        with np.errstate(over="ignore", invalid="ignore", under="ignore"):
            for a, b in zip(self.a, self.b):
                w = np.exp(a + b * x - l0)
                s1 = s1 + b * w
                s2 = s2 + b * b * w
        s1 = np.minimum(s1, self.b[-1])
        return l0, s1, np.maximum(s2 - s1 * s1, 0.0)

    # ------------------------------------------------------------------ the inverse

    def _bracket(self, ell):
        """``(lo, hi)`` with ``L(lo) < ℓ < L(hi)`` for ``ℓ > log p_0`` (see the module docstring), widened."""
        ell = np.asarray(ell, dtype=float)
        hi = (ell - self.a[-1]) / self.b[-1]
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            if self.p0 > 0:
                inner = log_sub(ell, self.log_p0) - math.log1p(-self.p0)
            else:
                inner = ell
            lo_neg = self.s2 / self.c_pos_min * inner
        lo = np.where(ell > 0, self.s2 * ell / self.c_max, lo_neg)
        lo = np.minimum(lo, hi)
        pad = 1e-6 * (1.0 + np.abs(lo) + np.abs(hi)) + 1e-3 * self.sigma
        return lo - pad, hi + pad

    def inverse(self, ell):
        """``(lo, hi)``: a bracket of ``x(ℓ)`` (``L(lo) <= ℓ < L(hi)`` as computed) a few ulps wide;
        both ``−inf`` where ``ℓ <= log p_0`` and ``+inf`` where ``ℓ = +inf``.

        Every element at once: safeguarded Newton steps shrink the bracket of :meth:`_bracket` (from its
        upper end, where ``L`` is convex and increasing, they descend to the root; for many values, from
        between the roots of every 32nd, solved first; one value is solved in Python floats, as
        :meth:`log_ratio` computes one point);
        two probes an ulp or two either side of the Newton point close it; a bisection
        (:func:`~dpcalc.engine._roots.bisect_active`) finishes it to the same width as a bisection from the
        start.  Each end of the bracket only ever moves to a point whose computed loss lies on its side of
        ``ℓ`` (``L(x) <= ℓ`` for ``lo``, ``L(x) > ℓ`` or NaN for ``hi``, exactly the bisection's test, or to
        such an end of a smaller or larger value's bracket, which passes the same test), so the result has
        the bisection's guarantees; only the number of loss evaluations differs (a few instead of 60)."""
        ell = np.asarray(ell, dtype=float)
        below = ~(ell > self.log_p0)
        top = np.isposinf(ell)
        ok = ~(below | top)
        lo = np.where(below, -np.inf, np.where(top, np.inf, np.nan))
        hi = lo.copy()
        if np.any(ok):
            e = ell[ok]
            b_lo, b_hi = self._bracket(e)
            if e.size == 1 and self.m <= _LOOP:
                r_lo, r_hi = self._refine_float(float(e[0]), float(b_lo[0]), float(b_hi[0]))
            else:
                r_lo, r_hi = self._refine(e.ravel(), b_lo.ravel(), b_hi.ravel())
            lo[ok], hi[ok] = r_lo, r_hi
        return lo, hi

    def _refine_float(self, e: float, lo: float, hi: float):
        """:meth:`_refine` for one value in Python floats, ``L`` as :meth:`log_ratio` computes one point
        (:meth:`_lse_float`): safeguarded Newton steps from the upper end, probes an ulp or two either side,
        widened 4-fold, then the bisection of :func:`~dpcalc.engine._roots.bisect` (its test, its stopping
        rule); each end moves only to a point whose computed loss is on its side of ``e``."""
        x = hi
        for _ in range(_NEWTON_STEPS):
            lx, d = self._lse_float(x)
            self.work += self.m + 16
            f = lx - e
            if f <= 0:
                lo = max(lo, x)
            else:  # (NaN: above, as the bisection takes it)
                hi = min(hi, x)
            step = f / d if d > 0 else math.nan
            xn = x - step
            small = abs(step) <= _NEWTON_TOL * (abs(x) + self.sigma)
            if lo < xn < hi:
                x = xn
            elif small:
                x = min(max(xn, lo), hi)
            else:
                x = lo + 0.5 * (hi - lo)
            if small:
                break
        if math.isfinite(x):
            gap, need_lo, need_hi = max(_PROBE * abs(x), 1e-300), x > lo, x < hi
            for _ in range(_PROBES):
                if not (need_lo or need_hi):
                    break
                if need_lo:
                    p = max(x - gap, lo)
                    self.work += self.m + 16
                    if self._lse_float(p)[0] - e <= 0:
                        lo, need_lo = p, False
                if need_hi:
                    p = min(x + gap, hi)
                    self.work += self.m + 16
                    if not self._lse_float(p)[0] - e <= 0:
                        hi, need_hi = p, False
                gap *= 4.0
        for _ in range(200):
            if not hi - lo > 4e-16 * abs(hi):
                break
            mid = lo + 0.5 * (hi - lo)
            self.work += self.m + 16
            if self._lse_float(mid)[0] - e <= 0:
                lo = mid
            else:
                hi = mid
        return lo, hi

    def _refine(self, e, lo, hi):
        """The bracket ``(lo, hi)`` of ``L(x) = e`` (1-D arrays, ``L(lo) <= e < L(hi)`` expected) narrowed as
        :meth:`inverse` says."""
        lo, hi = lo.copy(), hi.copy()
        x = hi.copy()
        if e.size >= _SEEDS_FROM:
            # solve every _SEED_STEP-th value (in order) first: as x(ℓ) increases, an element's bracket is
            # narrowed to the ends of the seeds around it (``L(lo_j) <= ℓ_j <= ℓ`` and ``L(hi_k) > ℓ_k >= ℓ``
            # as computed: the same tests), and its Newton start interpolated between theirs
            order = np.argsort(e, kind="stable")
            pick = order[::_SEED_STEP]
            if pick[-1] != order[-1]:
                pick = np.append(pick, order[-1])
            es = e[pick]
            s_lo, s_hi = self._refine(es, lo[pick], hi[pick])
            jl = np.searchsorted(es, e, side="right") - 1
            ju = np.searchsorted(es, e, side="left")
            n_lo = np.where(jl >= 0, np.maximum(lo, s_lo[np.maximum(jl, 0)]), lo)
            n_hi = np.where(ju < es.size, np.minimum(hi, s_hi[np.minimum(ju, es.size - 1)]), hi)
            fine = n_lo <= n_hi  # (a loss that rounds against its order keeps its own bracket)
            lo, hi = np.where(fine, n_lo, lo), np.where(fine, n_hi, hi)
            x = np.clip(np.interp(e, es, 0.5 * (s_lo + s_hi)), lo, hi)

        def side(x, i, slope=True):
            """``(L(x) − e <= 0, L(x) − e, L′(x) or None)`` at the points ``x`` of the elements ``i`` (NaN: not
            below), ``L`` exactly as :meth:`log_ratio` computes it."""
            if self.m <= _LOOP:
                self.work += x.size * (self.m + 16)
                lx, dx = self._lse(x, slope)
            else:
                lx, dx = self.log_ratio(x), (self.slope(x) if slope else None)
            with np.errstate(invalid="ignore"):
                f = lx - e[i]
                return f <= 0, f, dx

        idx = np.arange(e.size)
        for _ in range(_NEWTON_STEPS):
            if idx.size == 0:
                break
            xa = x[idx]
            is_below, f, d = side(xa, idx)
            la = np.where(is_below, np.maximum(lo[idx], xa), lo[idx])
            ha = np.where(is_below, hi[idx], np.minimum(hi[idx], xa))
            lo[idx], hi[idx] = la, ha
            with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
                step = f / d
                xn = xa - step
                inside = (xn > la) & (xn < ha)
                # (a step below the tolerance may land on an end the evaluation just moved: the point is
                # then that end)
                done = np.abs(step) <= _NEWTON_TOL * (np.abs(xa) + self.sigma)
            x[idx] = np.where(inside, xn, np.where(done, np.clip(xn, la, ha), la + 0.5 * (ha - la)))
            idx = idx[~done]
        # the Newton point becomes one end of its bracket; a probe an ulp or two away on the other side closes
        # it (widened where rounding puts it on the wrong side)
        need_lo = np.isfinite(x) & (x > lo)
        need_hi = np.isfinite(x) & (x < hi)
        inner = np.nonzero(need_lo & need_hi)[0]
        if inner.size:
            is_below, _, _ = side(x[inner], inner, slope=False)
            lo[inner[is_below]] = x[inner[is_below]]
            hi[inner[~is_below]] = x[inner[~is_below]]
            need_lo[inner[is_below]] = False
            need_hi[inner[~is_below]] = False
        gap = np.maximum(_PROBE * np.abs(x), 1e-300)
        for _ in range(_PROBES):
            il, ih = np.nonzero(need_lo)[0], np.nonzero(need_hi)[0]
            if il.size + ih.size == 0:
                break
            pl = np.maximum(x[il] - gap[il], lo[il])
            ph = np.minimum(x[ih] + gap[ih], hi[ih])
            is_below, _, _ = side(np.concatenate([pl, ph]), np.concatenate([il, ih]), slope=False)
            ok_l, ok_h = is_below[: il.size], ~is_below[il.size :]
            lo[il[ok_l]] = pl[ok_l]
            hi[ih[ok_h]] = ph[ok_h]
            need_lo[il[ok_l]] = False
            need_hi[ih[ok_h]] = False
            gap *= 4.0
        return bisect_active(lambda xm, i: self._log_ratio_array(xm) - e[i], lo, hi, increasing=True)

    def point_below(self, ell: float) -> float:
        """A point ``x`` with ``L(x) <= ℓ`` exactly (so ``x <= x(ℓ)``): the bracket's lower end, moved down
        until the computed loss plus its rounding error is at most ``ℓ``."""
        lo, _ = self.inverse(np.array([ell]))
        x = float(lo[0])
        step = 1e-9 * (self.sigma + abs(x))
        for _ in range(200):
            if not math.isfinite(x):
                return x
            if float(self.log_ratio(np.array([x]))[0] + self.log_ratio_error(np.array([x]))[0]) <= ell:
                return x
            x -= step
            step *= 2.0
        return -math.inf

    def point_above(self, ell: float) -> float:
        """A point ``x`` with ``L(x) >= ℓ`` exactly (so ``x >= x(ℓ)``)."""
        _, hi = self.inverse(np.array([ell]))
        x = float(hi[0])
        step = 1e-9 * (self.sigma + abs(x))
        for _ in range(200):
            if not math.isfinite(x):
                return x
            if float(self.log_ratio(np.array([x]))[0] - self.log_ratio_error(np.array([x]))[0]) >= ell:
                return x
            x += step
            step *= 2.0
        return math.inf

    # ------------------------------------------------------------------ Gaussian tails

    def log_mix_sf(self, x: float) -> float:
        """An upper bound on ``log P(X > x)`` for ``X ~ Σ p_i N(c_i, σ²)``."""
        vals = [lp + log_normal_sf((x - c) / self.sigma) for lp, c in zip(self.lp, self.c)]
        return _log_sum_up(vals)

    def log_mix_cdf(self, x: float) -> float:
        """An upper bound on ``log P(X < x)`` for ``X ~ Σ p_i N(c_i, σ²)``."""
        vals = [lp + log_normal_sf((c - x) / self.sigma) for lp, c in zip(self.lp, self.c)]
        return _log_sum_up(vals)


def _weighted_expm1(log_w, y):
    """``e^{log_w}·expm1(y)`` without the ``0·∞`` of a tiny weight times a huge ``expm1`` (a wide bin far
    below a large component): for ``y > 0`` it is ``e^{log_w + log expm1(y)}``, with ``log expm1(y) =
    y + log1p(−e^{−y})``."""
    pos = y > 0
    with np.errstate(over="ignore", invalid="ignore", under="ignore", divide="ignore"):
        ys = np.where(pos, y, 1.0)
        up = np.exp(log_w + ys + np.log1p(-np.exp(-ys)))
        return np.where(pos, up, np.exp(log_w) * np.expm1(y))


def _log_sum_up(vals) -> float:
    """``log Σ e^{v}``, raised by a relative rounding margin."""
    v = np.asarray([x for x in vals if x > -math.inf], dtype=float)
    if v.size == 0:
        return -math.inf
    m = float(np.max(v))
    s = m + math.log(float(np.sum(np.exp(v - m))))
    return min(s + 8.0 * _U * (v.size + abs(s)), 0.0)
