"""FFT composition of discrete PLDs in an exponentially tilted frame, and the bounds it certifies.

Composition of independent mechanisms adds their privacy losses, so the composed discrete PLD is the
convolution of the per-mechanism PLDs (self-composition: the ``count``-th power of the Fourier
transform; Koskela, Jälkö & Honkela 2020, §4; Meiser & Mohammadi 2018).  The FFT works on a finite
window, and its round-off is about 1e-16 of the largest value; to reach δ far below that (δ down
to 1e-300) everything is computed for the **tilted** distribution ``ω_λ(l) ∝ ω(l)e^{λl}``: tilting
commutes with convolution, and choosing λ at the saddle point of the target ε puts the mass that
matters at the centre of the window (exponential tilting / saddle-point method; Esscher 1932).  The
untilted masses are ``ω(l) = exp(κ(λ) − λl)·ω_λ(l)`` with ``κ`` the cumulant function of the finite
part.

What this module certifies (for the discrete PLD it is given, :class:`GridBounds`): at every window
grid point ``ε = l_k``, ``Low_k <= δ_ω(l_k) <= Up_k`` where

* ``Up = (1+rel)(S + ν T) + tail_hi + ω(∞)`` and ``Low = ω(∞) + max(0, (1−rel)S − 2νT − alias·W)``;
* ``S`` is the profile computed from the (clipped) FFT output, ``ν`` bounds the FFT round-off per bin
  (10× the observed negative noise floor plus an a-priori ``(32 log₂N + Σcount)·u·max`` term: an
  a-posteriori estimate, not interval arithmetic), ``T`` sums the untilting weights;
* ``alias`` bounds the tilted mass outside the window, which circular convolution wraps into it, and
  ``tail_hi`` the untilted mass above the window (Chernoff bounds from block upper bounds of the
  cumulant function, :meth:`DiscretePLD.log_mgf_bound`);
* ``rel`` is the relative error of the masses compounded over all compositions.
"""

from __future__ import annotations

import math

import numpy as np

from dpcalc.engine._numerics import unimodal_argmin
from dpcalc.engine.pld.discretise import REL_MASS_ERROR, DiscretePLD

_U = float(np.finfo(float).eps)
#: Bytes per window point used by composition and bound arrays (a generous estimate).
BYTES_PER_POINT = 112
#: Bytes per per-mechanism grid point (discretisation temporaries are chunked).
BYTES_PER_STEP_POINT = 96


def fast_len(n: int) -> int:
    """The smallest 2^a·3^b·5^c >= n (a length pocketfft transforms quickly)."""
    n = max(int(n), 16)
    best = 1 << (n - 1).bit_length()
    p5 = 1
    while p5 < best:
        p35 = p5
        while p35 < best:
            v = p35
            while v < n:
                v *= 2
            best = min(best, v)
            p35 *= 3
        p5 *= 5
    return best


def log_w_star(lam: float) -> float:
    """``log max_{t>0} e^{−λt}(1 − e^{−t})`` = ``log(λ^λ/(λ+1)^{λ+1})`` (0 at λ = 0)."""
    if lam <= 0:
        return 0.0
    return lam * math.log(lam) - (lam + 1.0) * math.log1p(lam)


def kappa(plds, counts, t: float) -> float:
    """``Σ count·log M(t)``: the cumulant function of the composed finite part (exact)."""
    return float(sum(c * d.log_mgf(t) for d, c in zip(plds, counts)))


def kappa_bound(plds, counts, t) -> np.ndarray:
    """Upper bound on :func:`kappa` for an array of ``t``."""
    return sum(c * d.log_mgf_bound(t) for d, c in zip(plds, counts))


def compose_window(plds: list[DiscretePLD], counts, lam: float, lo_idx: int, n_fft: int):
    """The tilted composed PLD on the window ``lo_idx .. lo_idx+n_fft−1`` (clipped at 0) and ``ν``.

    Each per-mechanism tilted PMF is folded modulo ``n_fft``, transformed once, raised to its count in
    log-polar form and multiplied; one inverse transform gives the composition wrapped modulo
    ``n_fft`` (wrap-around is bounded by the caller's ``alias`` term).  A single mechanism used once
    needs no transform: its folded PMF is the answer, with no round-off floor (``ν = 0``; the few ulps
    of each value are inside the relative mass margin), which matters for heavy-tailed losses at
    small δ, where no tilt keeps both the answer and the top of the grid above the FFT's floor.
    """
    if len(plds) == 1 and int(counts[0]) == 1:
        d = plds[0]
        with np.errstate(divide="ignore", under="ignore"):
            vals = np.exp(d.log_p() + lam * d.losses() - d.log_mgf(lam))
        pos = (d.start + np.arange(d.n)) % n_fft
        raw = np.bincount(pos, weights=vals, minlength=n_fft)
        return np.roll(raw, -(lo_idx % n_fft)), 0.0
    acc = None
    total_count = 0
    for d, c in zip(plds, counts):
        with np.errstate(divide="ignore", under="ignore"):
            lm = d.log_mgf(lam)
            vals = np.exp(d.log_p() + lam * d.losses() - lm)
        pos = (d.start + np.arange(d.n)) % n_fft
        arr = np.bincount(pos, weights=vals, minlength=n_fft)
        z = np.fft.rfft(arr)
        del arr
        with np.errstate(divide="ignore", invalid="ignore"):
            lz = np.log(z)
        del z
        lz.real *= float(c)  # real and imaginary parts separately: (-inf)·c stays -inf, never nan
        lz.imag *= float(c)
        if acc is None:
            acc = lz
        else:
            acc += lz
        total_count += int(c)
    with np.errstate(under="ignore", invalid="ignore"):
        np.exp(acc, out=acc)
    acc = np.where(np.isfinite(acc), acc, 0.0)
    raw = np.fft.irfft(acc, n=n_fft)
    del acc
    raw = np.roll(raw, -(lo_idx % n_fft))
    mx = float(raw.max())
    nu = 10.0 * max(0.0, -float(raw.min())) + (32.0 * math.log2(n_fft) + total_count) * _U * max(mx, 0.0)
    np.maximum(raw, 0.0, out=raw)
    return raw, nu


def _suffix_scan(x: np.ndarray, c: float) -> np.ndarray:
    """``y_k = Σ_{j>=0} c^j x_{k+j}`` for ``0 < c <= 1`` and ``x >= 0`` (sums of positive terms only).

    Blocks of length ``B`` with ``c^B >= e^{-200}``: inside a block, a reversed cumulative sum of
    ``c^j x_j`` rescaled by ``c^{-k}``; blocks are chained from the top by the carried value.
    """
    if c >= 1.0:
        return np.cumsum(x[::-1])[::-1]
    n = x.size
    lc = -math.log(c)
    size = max(1, min(n, int(200.0 / lc)))
    if size == n:  # one block, nothing carried into it
        sc = np.exp(-lc * np.arange(n))
        with np.errstate(under="ignore"):
            return np.cumsum((x * sc)[::-1])[::-1] / sc
    y = np.empty(n)
    j = np.arange(size)
    scale_full = np.exp(-lc * j)
    carry = 0.0
    for start in range(((n - 1) // size) * size, -1, -size):
        blk = x[start : start + size]
        m = blk.size
        sc = scale_full[:m]
        with np.errstate(under="ignore"):
            z = np.cumsum((blk * sc)[::-1])[::-1] / sc
            z += np.exp(-lc * (m - j[:m])) * carry
        y[start : start + m] = z
        carry = float(z[0])
    return y


def spread(plds, counts) -> float:
    """Standard deviation of the composed discrete loss (finite part; exact moments of the PMFs)."""
    var = 0.0
    with np.errstate(over="ignore", invalid="ignore", under="ignore"):
        for d, c in zip(plds, counts):
            m = float(np.sum(d.p))
            if m > 0:
                x = d.losses()
                mu = float(np.sum(d.p * x)) / m
                var += c * float(np.sum(d.p * (x - mu) ** 2)) / m
    return math.sqrt(var) if var > 0 and math.isfinite(var) else 0.0  # 0: none, or beyond double range


def thetas(plds, counts) -> np.ndarray:
    """The θ grid searched for Chernoff bounds: 1e-4 .. 3e3, extended at the same density up to
    ``100/sd`` when the composed discrete loss has a small spread ``sd`` (tiny losses need large θ;
    the grid is unchanged for spreads above 1/30)."""
    sd = spread(plds, counts)
    top = 100.0 / sd if sd > 0 else math.inf
    if not (top > 3e3 and math.isfinite(top)):
        return _THETA
    extra = np.geomspace(3e3, top, max(2, int(math.ceil(6.5 * math.log10(top / 3e3))) + 1))[1:]
    return np.concatenate([_THETA, extra])


_THETA = np.geomspace(1e-4, 3e3, 49)
#: A Chernoff bound above this (log) is worse than any window is built for (:func:`window_for` aims at
#: 1e-10 or less): its θ was badly chosen, and the exact cumulant is searched on a coarse grid too.
_RETRY = math.log(1e-10)


def _best_theta(kc, lam: float, point: float, sign: float, base: float, theta=_THETA) -> np.ndarray:
    """Candidate θ > 0 for the Chernoff bound ``κ(λ + sign·θ) − base − sign·θ·point`` (chosen with the
    quadrature cumulant ``kc`` on the grid ``theta``; the bound itself is then evaluated with the exact
    discrete one)."""
    # κ is convex (a cumulant function; the quadrature one is a log-sum-exp of lines), so the bound is
    # convex in θ: its grid minimum is found from a quarter of the grid (any θ gives a valid bound)
    i, _ = unimodal_argmin(lambda th: kc(lam + sign * th) - base - sign * th * point, theta)
    return theta[i] * np.array([0.01, 0.1, 0.5, 0.8, 1.0, 1.25, 2.0, 10.0, 100.0])


def _chernoff(plds, counts, lam, point, sign, base, kc, grid=_THETA, exact=None) -> float:
    """Upper bound on ``log`` of the tilted mass beyond ``point`` (above for sign=+1, below for −1):
    ``min_θ κ_b(λ ± θ) − base ∓ θ·point`` with ``base = κ(λ)`` (or 0 for the untilted mass above).
    ``exact``: further θ to try directly (where the quadrature cumulant may mislead: heavy tails,
    :func:`_heavy`)."""
    theta = _best_theta(kc, lam, point, sign, base, grid)
    if exact is not None:
        theta = np.concatenate([theta, exact])
    vals = kappa_bound(plds, counts, lam + sign * theta) - base - sign * theta * point
    return float(np.min(vals))


def _geom(mu: float, h: float, m) -> np.ndarray:
    """``Σ_{j=1}^{m} e^{−μjh}`` for an array of counts ``m``, rounded up by a few ulps."""
    m = np.asarray(m, dtype=float)
    if mu <= 0:
        return m
    with np.errstate(under="ignore"):
        g = math.exp(-mu * h) * (-np.expm1(-mu * h * m)) / (-math.expm1(-mu * h))
    return g * (1.0 + 8.0 * _U)


class GridBounds:
    """Certified ``Low_k <= δ_ω(l_k) <= Up_k`` at window grid points ``l_k = (lo_idx + k)·h`` (module
    docstring), evaluated lazily at index arrays; :meth:`last_above` finds a crossing."""

    def __init__(self, plds, counts, lam, lo_idx, n_fft, w, nu, h, kc):
        self.lam, self.lo_idx, self.n, self.h, self.nu = lam, lo_idx, n_fft, h, nu
        self.kap = kap = kappa(plds, counts, lam)
        log_keep = sum(
            c * math.log1p(-d.inf_mass) if d.inf_mass < 1 else -math.inf for d, c in zip(plds, counts)
        )
        inf = -math.expm1(log_keep) if log_keep > -math.inf else 1.0
        self.log_inf_up = math.log(min(1.0, inf * (1 + 1e-12))) if inf > 0 else -math.inf
        self.log_inf_lo = math.log(inf * (1 - 1e-12)) if inf > 0 else -math.inf
        self.rel = min(0.5, float(sum(counts)) * REL_MASS_ERROR + 1e-12)
        if nu == 0.0:  # no transform (one mechanism used once): the scans' sums of positive terms carry
            self.rel = min(0.5, self.rel + 2.0 * n_fft * _U)  # up to n·u relative, unmasked by an FFT floor
        hi_val = (lo_idx + n_fft) * h  # first grid value above the window
        lo_val = (lo_idx - 1) * h  # first grid value below it
        # beyond the support of the composed discrete PLD there is no mass at all
        s_lo = sum(c * d.start for d, c in zip(plds, counts))
        s_hi = sum(c * (d.start + d.n - 1) for d, c in zip(plds, counts))
        above_all = lo_idx + n_fft > s_hi
        below_all = lo_idx <= s_lo
        grid = thetas(plds, counts)

        def bound(tilt, point, sign, base):
            v = _chernoff(plds, counts, tilt, point, sign, base, kc, grid)
            if v > _RETRY:  # above the window's design target: the quadrature cumulant misled the
                v = min(v, _chernoff(plds, counts, tilt, point, sign, base, kc, grid, grid[::3]))  # θ
            return v

        log_tau_hi = -math.inf if above_all else bound(lam, hi_val, 1.0, kap)
        log_tau_lo = -math.inf if below_all else bound(lam, lo_val, -1.0, kap)
        self.log_alias = min(0.0, float(np.logaddexp(log_tau_hi, log_tau_lo)))
        tail = -math.inf if above_all else bound(0.0, hi_val, 1.0, 0.0)
        self.log_tail_hi = tail if lam <= 0 else min(tail, log_tau_hi + kap - lam * hi_val)
        la = self.log_alias + log_w_star(lam)
        self.alias_w = math.exp(la) if la > -740.0 else 0.0
        # tilted-frame suffix sums: a_k = Σ_{i>k} w_i e^{−λ(i−k)h},  s_k = Σ_{i>k} w_i e^{−λ(i−k)h}(1 − e^{−(i−k)h})
        e_l = math.exp(-lam * h)
        x = np.empty_like(w)
        x[:-1] = e_l * w[1:]
        x[-1] = 0.0
        a = _suffix_scan(x, e_l)
        del x
        a *= -math.expm1(-h)
        self.s = _suffix_scan(a, math.exp(-(1.0 + lam) * h))

    def _parts(self, k):
        k = np.asarray(k, dtype=np.int64)
        m = self.n - 1 - k  # bins above l_k
        t = np.maximum(_geom(self.lam, self.h, m) - _geom(self.lam + 1.0, self.h, m), 0.0)
        log_e = self.kap - self.lam * ((self.lo_idx + k) * self.h)
        return self.s[k], t, log_e

    def log_up(self, k):
        s, t, log_e = self._parts(k)
        with np.errstate(divide="ignore"):
            main = log_e + np.log(s + self.nu * t) + math.log1p(self.rel)
        return np.logaddexp(np.logaddexp(main, self.log_tail_hi), self.log_inf_up)

    def log_low(self, k):
        s, t, log_e = self._parts(k)
        inner = (1.0 - self.rel) * s - 2.0 * self.nu * t - self.alias_w
        with np.errstate(divide="ignore"):
            return np.logaddexp(log_e + np.log(np.maximum(inner, 0.0)), self.log_inf_lo)

    def log_s(self, k):
        s, _, log_e = self._parts(k)
        with np.errstate(divide="ignore"):
            return np.logaddexp(log_e + np.log(s), self.log_inf_up)

    def last_at_least_below(self, fn, level: float, k0: int) -> int:
        """The last index ``k <= k0`` with ``fn(k) >= level``, or −1, searching down from ``k0`` in
        doubling steps (for ``Low``, which is non-increasing only where the signal exceeds the
        noise terms, i.e. near the crossing)."""
        k0 = min(int(k0), self.n - 1)
        step, prev = 1, k0 + 1
        while True:
            k = max(k0 - step + 1, 0)
            if fn(np.array([k]))[0] >= level:
                fine = np.arange(k, prev)
                hit = np.nonzero(fn(fine) >= level)[0]
                return int(fine[hit[-1]])
            if k == 0:
                return -1
            prev, step = k, step * 2

    def last_above(self, fn, level: float, strict: bool = True) -> int:
        """The last index ``k`` with ``fn(k) > level`` (``>=`` if not strict), or −1; the profile is
        non-increasing, so a coarse pass (every 256th point) locates the crossing first."""
        stride = 256
        coarse = np.arange(0, self.n, stride)
        if coarse.size == 0 or coarse[-1] != self.n - 1:  # (not np.unique: it imports numpy.ma, ~7 ms)
            coarse = np.append(coarse, self.n - 1)
        v = fn(coarse)
        hit = np.nonzero(v > level if strict else v >= level)[0]
        if hit.size == 0:
            return -1
        c = int(hit[-1])
        if c == coarse.size - 1:
            return self.n - 1
        fine = np.arange(coarse[c], coarse[c + 1] + 1)
        v = fn(fine)
        hit = np.nonzero(v > level if strict else v >= level)[0]
        return int(fine[hit[-1]])


def _heavy(plds, counts, n: float, h: float) -> bool:
    """Whether a window of ``n`` points is far wider (400×) than the composed spread: a heavy tail,
    where the quadrature cumulant (of the untruncated model) can lie far above the discrete one,
    whose far tail the grid moves to +∞, and so point the Chernoff bounds at useless θ."""
    return n > 400.0 * spread(plds, counts) / h + 64


def window_for(plds, counts, lam: float, log_tau: float, log_tail: float, h: float, kc):
    """Grid indices ``(lo_idx, n)`` of a window whose outside tilted mass is below ``e^{log_tau}`` on
    each side and whose untilted mass above is below ``e^{log_tail}``: Chernoff bounds with the exact
    cumulant of the discrete PLDs (their bounded support keeps heavy-tailed losses in check), at θ
    values pre-selected with the quadrature cumulant ``kc``.  Checked afterwards by :class:`GridBounds`."""
    kap = kappa(plds, counts, lam)
    theta = thetas(plds, counts)
    kb_up = kc(lam + theta)
    kb_dn = kc(lam - theta)
    with np.errstate(invalid="ignore"):
        # pre-select θ with the quadrature cumulant, then refine on a local grid with the exact one
        i_hi = int(np.nanargmin((kb_up - kap - log_tau) / theta))
        i_lo = int(np.nanargmax((log_tau - (kb_dn - kap)) / theta))
    loc = np.geomspace(1.0 / 16.0, 4.0, 7)

    def ends(th_hi, th_lo):
        """(bound on the tilted tail above, on the untilted tail above, bound below) at these θ."""
        ex_up = kappa_bound(plds, counts, lam + th_hi)
        ex_dn = kappa_bound(plds, counts, lam - th_lo)
        return (
            float(np.min((ex_up - kap - log_tau) / th_hi)),
            float(np.min((ex_up - log_tail) / (lam + th_hi))),
            float(np.max((log_tau - (ex_dn - kap)) / th_lo)),
        )

    hi_a, hi_b, lo = ends(theta[i_hi] * loc, theta[i_lo] * loc)
    # the composed discrete PLD lives on [Σ count·start, Σ count·end]: nothing to see outside
    s_lo = sum(c * d.start for d, c in zip(plds, counts))
    s_hi = sum(c * (d.start + d.n - 1) for d, c in zip(plds, counts))
    span = (min(max(hi_a, hi_b), s_hi * h) - max(lo, s_lo * h)) / h
    if _heavy(plds, counts, span, h):
        # the quadrature cumulant may have missed the useful θ: search the exact one on a coarse grid too
        g = theta[::3]
        a2, b2, lo2 = ends(g, g)
        hi_a, hi_b, lo = min(hi_a, a2), min(hi_b, b2), max(lo, lo2)
    hi = max(hi_a, hi_b)
    lo_idx = max(int(math.floor(lo / h)) - 2, s_lo - 1) if math.isfinite(lo) else s_lo - 1
    hi_idx = min(int(math.ceil(hi / h)) + 2, s_hi + 1) if math.isfinite(hi) else s_hi + 1
    return lo_idx, max(hi_idx - lo_idx + 1, 16)
