"""The Rényi-DP curve of the mixture-of-Gaussians mechanism, certified (docs/math.md §2.14; numpy only).

For the pair ``P = Σ p_i N(c_i, σ²)``, ``Q = N(0, σ²)`` and ``L = log P/Q`` (see
:mod:`dpcalc.engine.mechanisms.mixture_gaussian_loss`), both orderings of the pair are bounded and the
larger is reported (add/remove-one neighbours):

* remove, ``D_α(P‖Q) = log A_α/(α−1)`` with ``A_α = E_Q[e^{αL}]``;
* add, ``D_α(Q‖P) = log B_α/(α−1)`` with ``B_α = E_Q[e^{(1−α)L}]``.

**Integer orders, remove direction, exactly.**  ``e^{αL(x)} = (Σ_i w_i e^{c_i x/σ²})^α`` with
``w_i = p_i e^{−c_i²/(2σ²)}``; expanding and using ``E_Q e^{s x/σ²} = e^{s²/(2σ²)}``,
``A_α = Σ_s a_s e^{s²/(2σ²)}`` where ``a_s`` are the coefficients of ``(Σ_i w_i z^{c_i})^α`` — positive
terms only.  Two components: the binomial sum (any real sensitivities).  More: the coefficients by
repeated multiplication in log space when the sensitivities are whole multiples ``n_i g`` of one ``g``
(decimal inputs: their greatest common divisor), with ``σ/g`` rounded down (less noise: an upper bound), within
:data:`POLY_WORK` element operations.

**Certified quadrature (the add direction, and remove orders beyond that)**:
:func:`~dpcalc.engine.mechanisms.mixture_gaussian_quad.quad_log_moment`, upper bounds on the log-moments
``log E_Q[e^{λL}]`` (λ = α: remove; λ = 1 − α: add) by upper sums on a refined grid with closed-form
tails (its module docstring).

**Other orders.**  ``(α−1)D_α`` of each ordering is a log-moment, convex in α (Hölder), and 0 at α = 1: the chord
between the neighbouring integer orders is an upper bound (α ∈ (1, 2): between 1 and 2).  Always also:
``(α−1)D_α <= log Σ_i p_i e^{α(α−1)c_i²/(2σ²)}`` for both orderings (joint convexity of
``(a, b) ↦ ∫ a^α b^{1−α}``), and ``D_α(Q‖P) <= log(1/p_0)`` (``P >= p_0 Q``).  α = 1: the KL bound
``Σ p_i c_i²/(2σ²)``; α = ∞: ∞.  The curve is made non-decreasing by capping each order with the bounds at
higher orders (RDP is non-decreasing in α).
"""

from __future__ import annotations

import math
from decimal import Decimal
from fractions import Fraction

import numpy as np
from numpy.lib.stride_tricks import as_strided

from dpcalc.engine.mechanisms.base import check_alphas, up
from dpcalc.engine.mechanisms.mixture_gaussian_quad import QUAD_RHO, quad_log_moment
from dpcalc.engine.mechanisms.mixture_gaussian_terms import MixtureTerms

#: The quadrature's bound, read here and by the tests.
__all__ = ["QUAD_RHO", "quad_log_moment", "rdp_mixture"]

_U = float(np.finfo(float).eps)
#: Element operations allowed for the exact coefficients (repeated multiplication) of one curve.
POLY_WORK = 8_000_000
#: Largest whole multiple ``n_i = c_i/g`` for the exact coefficients.
POLY_DEGREE_MAX = 100_000
#: Largest order of the binomial sum (two components).
BINOMIAL_MAX = 2_000_000
#: Grid points × components evaluated by the quadratures of one curve (then the remaining orders keep
#: their closed-form bounds).
CURVE_WORK = 40_000_000
#: Fractional orders up to this are also computed by quadrature where the chord between whole orders
#: may be loose (above it the log-moment is close to a parabola on the scale of one order).
FRAC_QUAD_MAX = 12.0
#: Relative gap of the fractional orders' quadratures.
FRAC_RHO = 1e-2


# ------------------------------------------------------------------------------ the exact remove direction


def _lattice(terms: MixtureTerms):
    """``(n, σ/g rounded down)`` with ``c_i = n_i g`` (shortest decimals), or ``None``."""
    fr = [Fraction(Decimal(repr(float(c)))) for c in terms.c]
    den = 1
    for f in fr:
        den = den * f.denominator // math.gcd(den, f.denominator)
    nums = [int(f * den) for f in fr]
    g_num = 0
    for v in nums:
        g_num = math.gcd(g_num, v)
    n = [v // g_num for v in nums]
    if max(n) > POLY_DEGREE_MAX:
        return None
    g = Fraction(g_num, den)
    if g == 1:
        return np.array(n, dtype=np.int64), terms.sigma
    s = float(Fraction(Decimal(repr(terms.sigma))) / g)
    return np.array(n, dtype=np.int64), float(np.nextafter(s, 0.0))


def _binomial_log_moments(terms: MixtureTerms, orders) -> dict:
    """``log A_n`` (rounded up) for whole orders ``n`` of a two-component mixture: the binomial sum."""
    out = {}
    s2 = terms.s2
    lw = terms.lp - 0.5 * terms.c**2 / s2
    c1, c2 = float(terms.c[0]), float(terms.c[1])
    for n in orders:
        if n > BINOMIAL_MAX:
            continue
        k = np.arange(n + 1, dtype=float)
        # log C(n, k) by cumulative sums (exact integers' logs; rounding bounded below)
        inc = np.log(np.arange(n, 0, -1, dtype=float)) - np.log(np.arange(1, n + 1, dtype=float))
        logc = np.concatenate([[0.0], np.cumsum(inc)])
        s = c1 * (n - k) + c2 * k
        t = logc + (n - k) * lw[0] + k * lw[1] + 0.5 * s * s / s2
        m = float(np.max(t))
        v = m + math.log(float(np.sum(np.exp(t - m))))
        mag = float(np.max(np.abs(t))) + float(np.sum(np.abs(inc))) + 1.0
        out[n] = v + 8.0 * _U * (n + 8) * mag
    return out


def _poly_log_moments(terms: MixtureTerms, orders) -> dict:
    """``log A_n`` (rounded up) for whole orders by repeated multiplication of the coefficients of
    ``Σ w_i z^{n_i}`` in log space (sensitivities on a lattice), within :data:`POLY_WORK`."""
    lat = _lattice(terms)
    if lat is None or not orders:
        return {}
    n, sig = lat
    n_max = int(n[-1])
    m = terms.m
    top = 0
    work = 0
    for a in range(1, max(orders) + 1):
        work += m * (a * n_max + 1)
        if work > POLY_WORK:
            break
        top = a
    want = sorted(o for o in orders if o <= top)
    if not want:
        return {}
    s2 = sig * sig
    lw = terms.lp - 0.5 * n.astype(float) ** 2 / s2
    base = np.full(n_max + 1, -np.inf)
    base[n] = lw
    out = {}
    cur = base
    mag = float(np.max(np.abs(lw))) + 1.0
    wanted = set(want)
    # whole multiples 0, 1, ..., n_max (a group's sensitivities): every coefficient is positive, and the
    # shifted rows below are one strided view of a buffer holding cur between runs of -inf
    dense = m == n_max + 1 and bool(np.all(n == np.arange(m)))
    if dense:
        last = want[-1] * n_max + 1  # the coefficients' count at the last order
        buf = np.full(last + 2 * n_max, -np.inf)
        buf[n_max : n_max + cur.size] = cur
        shifted = as_strided(buf[n_max:], shape=(m, last + n_max), strides=(-buf.itemsize, buf.itemsize))
        lw_col = lw[:, None]
    with np.errstate(invalid="ignore", over="ignore", divide="ignore"):
        for a in range(2, want[-1] + 1):
            # the new coefficient of z^s: log Σ_i e^{cur[s − n_i] + log w_i}, by the largest term and one
            # exponential per term (rounding: a few ulps of the magnitudes, as the margin below allows)
            if dense:
                rows = shifted[:, : cur.size + n_max] + lw_col  # row i: cur shifted by i places, times w_i
                top_s = rows.max(axis=0)
                rows -= top_s
                np.exp(rows, out=rows)
                cur = top_s + np.log(rows.sum(axis=0))
                buf[n_max : n_max + cur.size] = cur
                mag = max(mag, -float(cur.min()), float(cur.max()))
            else:
                rows = np.full((m, cur.size + n_max), -np.inf)
                for i, (ni, wi) in enumerate(zip(n, lw)):
                    np.add(cur, wi, out=rows[i, ni : ni + cur.size])
                top_s = rows.max(axis=0)
                live = top_s > -np.inf
                shift = np.where(live, top_s, 0.0)
                rows -= shift
                np.exp(rows, out=rows)
                cur = np.where(live, shift + np.log(rows.sum(axis=0)), -np.inf)
                mag = max(mag, float(np.max(np.abs(cur[live]))))
            if a in wanted:
                s = np.arange(cur.size, dtype=float)
                t = cur + 0.5 * s * s / s2
                mx = float(np.max(t))
                v = mx + math.log(float(np.sum(np.exp(t[np.isfinite(t)] - mx))))
                tmag = mag + 0.5 * (cur.size - 1) ** 2 / s2
                out[a] = v + 8.0 * _U * (a * (m + 2) + cur.size + 8) * (tmag + abs(v) + 1.0)
    return out


def _component_bound(terms: MixtureTerms, a: np.ndarray) -> np.ndarray:
    """``log Σ p_i e^{α(α−1)c_i²/(2σ²)}/(α−1)`` (both orderings; joint convexity); the KL bound at α = 1."""
    out = np.empty(a.size)
    half = terms.c**2 / (2.0 * terms.s2)
    for i, al in enumerate(a):
        if al == 1.0:
            v = float(np.sum(terms.p * half))
        elif math.isinf(al):
            v = math.inf
        else:
            t = terms.lp + al * (al - 1.0) * half
            m = float(np.max(t))
            v = (m + math.log(float(np.sum(np.exp(t - m))))) / (al - 1.0)
        out[i] = v
    return up(out, out) * (1.0 + 8.0 * _U)


def _quad_below(terms: MixtureTerms, lam: float, level: float) -> float:
    """A quadrature bound on ``log E_Q[e^{λL}]``, coarse first (enough when it is below ``level``, the
    other ordering's value), then fine; ``inf`` past the work limit."""
    for rho in (0.03, QUAD_RHO):
        v = quad_log_moment(terms, lam, rho=rho)
        if v is None:
            return math.inf
        if v <= level:
            break
    return v


def _closed_forms(terms: MixtureTerms, orders: list) -> dict:
    """``n -> [remove, add]``: upper bounds on ``log A_n`` and ``log B_n`` at whole orders ``n >= 2`` from the
    exact sums where they apply and the closed-form bounds (no quadrature yet)."""
    half = terms.c**2 / (2.0 * terms.s2)
    exact = _binomial_log_moments(terms, orders) if terms.m == 2 else _poly_log_moments(terms, orders)
    out = {}
    for n in orders:
        t = terms.lp + n * (n - 1.0) * half
        m = float(np.max(t))
        comp = m + math.log(float(np.sum(np.exp(t - m))))
        comp = comp + 8.0 * _U * (abs(comp) + abs(m) + 8.0)
        rem = comp if n not in exact else min(exact[n], comp)
        add = comp
        if terms.p0 > 0:
            add = min(add, (n - 1.0) * -terms.log_p0 * (1.0 + 8.0 * _U))
        out[n] = [rem, add, n in exact]
    return out


def _improve_remove(terms: MixtureTerms, n: int, entry: list) -> None:
    """The remove direction's quadrature at a whole order without an exact sum, where it may lower the
    bound, within :data:`CURVE_WORK`."""
    rem, add, exact = entry
    if exact or terms.work > CURVE_WORK:
        return
    # A_n >= p_top^n e^{n(n−1)c_max²/(2σ²)} (one term of the expansion) and A_n >= 1: where that leaves
    # the closed form within 1e-4 relative, no quadrature can improve it by more
    floor = max(n * float(terms.lp[-1]) + n * (n - 1.0) * float(terms.c_max**2 / (2.0 * terms.s2)), 0.0)
    if rem - floor > 1e-4 * rem:
        q = quad_log_moment(terms, float(n))
        if q is not None:
            entry[0] = min(rem, q)


def _improve_add(terms: MixtureTerms, n: int, entry: list) -> None:
    """The add direction's quadrature at a whole order where its bound exceeds the remove direction's."""
    rem, add, _ = entry
    if add > rem and terms.work <= CURVE_WORK:
        entry[1] = min(add, _quad_below(terms, 1.0 - n, rem))


def _chord_loose(ints: dict, al: float, chord: float) -> bool:
    """Whether the chord at a fractional order may exceed the value by more than 1e-3 relative: the
    log-moment is convex, so the lines through neighbouring whole orders (where known) lie below it (an
    estimate only: the values at whole orders are upper bounds)."""
    n = int(math.floor(al))
    est = 0.0
    if n - 1 in ints and n in ints:
        est = max(est, ints[n] + (ints[n] - ints[n - 1]) * (al - n))
    if n + 1 in ints and n + 2 in ints:
        est = max(est, ints[n + 1] - (ints[n + 2] - ints[n + 1]) * (n + 1 - al))
    return chord > est * (1.0 + 2e-3) + 1e-300


def _fractional(terms: MixtureTerms, al: float) -> float:
    """An upper bound on ``max(log A_α, log B_α)`` at a fractional order by quadrature (``inf`` past the
    work limit)."""
    rem = quad_log_moment(terms, al, rho=FRAC_RHO)
    if rem is None:
        return math.inf
    return max(rem, _quad_below(terms, 1.0 - al, rem))


_MEMO: dict = {}


def rdp_mixture(terms: MixtureTerms, alphas) -> np.ndarray:
    """The certified Rényi-DP curve (max of both orderings) at ``alphas`` (module docstring); the last
    curves asked for are remembered."""
    a = check_alphas(alphas)
    key = (terms.sigma, terms.c.tobytes(), terms.p.tobytes(), a.tobytes())
    if key in _MEMO:
        return _MEMO[key].copy()
    res = _curve(terms, a)
    if len(_MEMO) >= 32:
        _MEMO.pop(next(iter(_MEMO)))
    _MEMO[key] = res.copy()
    return res


def _curve(terms: MixtureTerms, a: np.ndarray) -> np.ndarray:
    comp = _component_bound(terms, a)
    need = set()
    for al in a:
        if 1.0 < al < 1e7:
            need.update({int(math.floor(al)), int(math.ceil(al))})
        if 1.0 < al <= FRAC_QUAD_MAX and not float(al).is_integer():  # the lines of _chord_loose
            need.update({int(math.floor(al)) - 1, int(math.floor(al)) + 2})
    need -= {0, 1}
    if any(1.0 <= al < 2.0 for al in a):
        need.add(2)
    # anchors of the add direction: every order to 16, then a factor 1.25 apart; between anchors the chord
    # of their bounds is an upper bound (log B is convex in the order) and the quadrature runs only where
    # that chord is above the remove direction
    anchors = set(range(2, 17)) if need else set()
    k = 16
    while need and k < max(need):
        k = int(math.ceil(k * 1.25))
        anchors.add(k)
    entries = _closed_forms(terms, sorted(need | anchors))
    for n in sorted(x for x in need if x <= 64):  # by priority within the work limit: small orders first
        _improve_remove(terms, n, entries[n])
    for n in sorted(anchors):
        _improve_add(terms, n, entries[n])
    srt = sorted(anchors)
    for n in sorted(need - anchors):
        j = int(np.searchsorted(srt, n))
        lo, hi = srt[j - 1], srt[j]
        chord = ((hi - n) * entries[lo][1] + (n - lo) * entries[hi][1]) / (hi - lo)
        entries[n][1] = min(entries[n][1], chord * (1.0 + 16.0 * _U))
        if n <= 64:
            _improve_add(terms, n, entries[n])
    ints = {n: max(e[0], e[1]) for n, e in entries.items()}
    ints[1] = 0.0
    for n in sorted(x for x in need if x > 64):
        _improve_remove(terms, n, entries[n])
        _improve_add(terms, n, entries[n])
        ints[n] = max(entries[n][0], entries[n][1])
    frac = {}
    for al in sorted(set(float(x) for x in a)):
        if 1.0 < al <= FRAC_QUAD_MAX and not al.is_integer():
            lo, hi = int(math.floor(al)), int(math.ceil(al))
            chord = (hi - al) * ints[lo] + (al - lo) * ints[hi]
            if _chord_loose(ints, al, chord) and terms.work <= CURVE_WORK:
                frac[al] = _fractional(terms, al)
    out = comp.copy()
    for i, al in enumerate(a):
        if not (1.0 < al < 1e7):
            if al == 1.0:
                out[i] = min(out[i], ints[2])  # D_1 <= D_2 (RDP is non-decreasing in the order)
            continue
        lo, hi = int(math.floor(al)), int(math.ceil(al))
        if lo == hi:
            v = ints[lo]
        else:
            v = min((hi - al) * ints[lo] + (al - lo) * ints[hi], frac.get(float(al), math.inf))
        out[i] = min(out[i], v * (1.0 + 16.0 * _U) / (al - 1.0) + 1e-300)
    # non-decreasing in α: cap each order with the bounds at higher orders
    order = np.argsort(a, kind="stable")
    capped = np.minimum.accumulate(out[order][::-1])[::-1]
    res = np.empty_like(out)
    res[order] = capped
    return res
