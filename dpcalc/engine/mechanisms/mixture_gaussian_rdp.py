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

**Certified quadrature (the add direction, and remove orders beyond that).**  With ``λ = α`` (remove) or
``λ = 1 − α`` (add), ``E_Q[e^{λL}] = 1 + E_Q[G(L)]`` where ``G(ℓ) = e^{λℓ} − 1 − λ(e^ℓ − 1) >= 0``
(``E_Q e^L = 1``; ``r ↦ r^λ`` is convex and ``G`` is it minus its tangent at ``r = 1``), so small
divergences keep their relative precision.  ``G`` decreases for ``ℓ < 0`` and increases for ``ℓ > 0``
and ``L`` is increasing, so on each interval of a grid the integrand ``G(L(x))`` is at most its larger
end value (with the rounding error of ``L`` allowed for); the Gaussian mass of the interval is bounded by the
tangent of ``−x²/(2σ²)`` at its midpoint (``∫ ≤ φ(t)·h·sinh(y)/y``, ``y = th/(2σ²)``, and
``sinh(y)/y ≤ e^{y²/6}``).  Outside the window the tails are bounded in closed form (``L`` has slope in
``[0, c_max/σ²]`` and is convex).  The grid is refined where the upper and lower sums differ.

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

from dpcalc.engine._numerics import log_sub
from dpcalc.engine.mechanisms.base import check_alphas, up
from dpcalc.engine.mechanisms.loss_models import _LOG_SQRT_2PI, log_normal_sf
from dpcalc.engine.mechanisms.mixture_gaussian_loss import MixtureTerms

_U = float(np.finfo(float).eps)
#: Element operations allowed for the exact coefficients (repeated multiplication) of one curve.
POLY_WORK = 8_000_000
#: Largest whole multiple ``n_i = c_i/g`` for the exact coefficients.
POLY_DEGREE_MAX = 100_000
#: Largest order of the binomial sum (two components).
BINOMIAL_MAX = 2_000_000
#: Grid points × components allowed for one quadrature (else the order keeps its closed-form bounds).
QUAD_WORK = 4_000_000
#: Grid points × components evaluated by the quadratures of one curve (then the remaining orders keep
#: their closed-form bounds).
CURVE_WORK = 40_000_000
#: Relative gap between the upper and lower sums at which a quadrature stops refining.
QUAD_RHO = 1e-3
#: Fractional orders up to this are also computed by quadrature where the chord between whole orders
#: may be loose (above it the log-moment is close to a parabola on the scale of one order).
FRAC_QUAD_MAX = 12.0
#: Relative gap of the fractional orders' quadratures.
FRAC_RHO = 1e-2
#: Window half-width beyond the bulk, in σ (tails beyond are bounded in closed form).
_T = 14.0


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
    with np.errstate(invalid="ignore", over="ignore"):
        for a in range(2, want[-1] + 1):
            new = np.full(cur.size + n_max, -np.inf)
            for ni, wi in zip(n, lw):
                seg = new[ni : ni + cur.size]
                new[ni : ni + cur.size] = np.logaddexp(seg, cur + wi)
            cur = new
            mag = max(mag, float(np.max(np.abs(cur[np.isfinite(cur)]))))
            if a in want:
                s = np.arange(cur.size, dtype=float)
                t = cur + 0.5 * s * s / s2
                mx = float(np.max(t))
                v = mx + math.log(float(np.sum(np.exp(t[np.isfinite(t)] - mx))))
                tmag = mag + 0.5 * (cur.size - 1) ** 2 / s2
                out[a] = v + 8.0 * _U * (a * (m + 2) + cur.size + 8) * (tmag + abs(v) + 1.0)
    return out


# ------------------------------------------------------------------------------ certified quadrature


def _log_g_up(ell, lam: float) -> np.ndarray:
    """An upper bound on ``log G(ℓ)``, ``G(ℓ) = e^{λℓ} − 1 − λ(e^ℓ − 1)`` (λ > 1 or λ < 0)."""
    ell = np.asarray(ell, dtype=float)
    with np.errstate(over="ignore", invalid="ignore", divide="ignore", under="ignore"):
        small = (np.abs(ell) <= 0.5) & (np.abs(lam * ell) <= 0.5)
        es = np.where(small, ell, 0.0)
        t1 = np.expm1(lam * es)
        t2 = lam * np.expm1(es)
        g_small = np.maximum(t1 - t2, 0.0) + 4.0 * _U * (np.abs(t1) + np.abs(t2))
        lg_small = np.log(g_small)
        if lam > 1:
            pos = np.logaddexp(lam * ell, math.log(lam - 1.0))
            neg = math.log(lam) + ell
        else:
            pos = np.logaddexp(lam * ell, math.log(-lam) + ell)
            neg = math.log(1.0 - lam) + np.zeros_like(ell)
        lg = np.where(pos > neg, log_sub(pos, np.minimum(neg, pos)), -np.inf)
        lg_big = np.logaddexp(lg, pos + math.log(16.0 * _U)) + 16.0 * _U * (np.abs(pos) + 1.0)
    return np.where(small, lg_small, lg_big)


def _log_g(ell, lam: float) -> np.ndarray:
    """``log G(ℓ)`` as computed (for the lower sum, an estimate)."""
    ell = np.asarray(ell, dtype=float)
    with np.errstate(over="ignore", invalid="ignore", divide="ignore", under="ignore"):
        small = (np.abs(ell) <= 0.5) & (np.abs(lam * ell) <= 0.5)
        es = np.where(small, ell, 0.0)
        lg_small = np.log(np.maximum(np.expm1(lam * es) - lam * np.expm1(es), 0.0))
        if lam > 1:
            pos = np.logaddexp(lam * ell, math.log(lam - 1.0))
            neg = math.log(lam) + ell
        else:
            pos = np.logaddexp(lam * ell, math.log(-lam) + ell)
            neg = math.log(1.0 - lam) + np.zeros_like(ell)
        lg = np.where(pos > neg, log_sub(pos, np.minimum(neg, pos)), -np.inf)
    return np.where(small, lg_small, lg)


def _log_mass_up(lo: np.ndarray, hi: np.ndarray, sigma: float) -> np.ndarray:
    """Upper bounds on ``log P(lo < X < hi)``, ``X ~ N(0, σ²)``: the tangent bound of the module docstring,
    and for intervals away from 0 the Mills bound ``Q(z) <= φ(z)/z`` of the tail beyond the nearer end."""
    h = hi - lo
    t = 0.5 * (lo + hi)
    s2 = sigma * sigma
    y = np.abs(t) * h / (2.0 * s2)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        lsinhc = np.where(
            y < 0.5,
            y * y / 6.0,
            y + np.log(-np.expm1(-2.0 * np.maximum(y, 0.5))) - np.log(2.0 * np.maximum(y, 0.5)),
        )
        tangent = -0.5 * t * t / s2 - _LOG_SQRT_2PI - math.log(sigma) + np.log(h) + lsinhc
        tangent = tangent + 16.0 * _U * (0.5 * t * t / s2 + np.abs(np.log(h)) + y + 8.0)
        z = np.where(lo > 0, lo, np.where(hi < 0, -hi, 0.0)) / sigma
        mills = np.where(z > 1.0, -0.5 * z * z - np.log(z) - _LOG_SQRT_2PI, np.inf)
        mills = mills + 16.0 * _U * (0.5 * z * z + 8.0)
    return np.minimum(tangent, mills)


def _tails(terms: MixtureTerms, lam: float, a: float, b: float) -> list:
    """Log upper bounds on ``∫ φ_σ(x) G(L(x)) dx`` over ``(−∞, a]`` and ``[b, ∞)`` (module docstring)."""
    sig, s2, cm = terms.sigma, terms.s2, terms.c_max
    xs = np.array([a, b])
    lv = terms.log_ratio(xs)
    dv = terms.log_ratio_error(xs)
    la_hi, lb_hi = float(lv[0] + dv[0]), float(lv[1] + dv[1])
    la_lo, lb_lo = float(lv[0] - dv[0]), float(lv[1] - dv[1])
    out = []
    if lam > 1:  # G <= e^{λℓ} + λ − 1
        out.append(float(np.logaddexp(lam * la_hi, math.log(lam - 1.0))) + log_normal_sf(-a / sig))
        out.append(
            lam * lb_hi - lam * cm * b / s2 + 0.5 * (lam * cm) ** 2 / s2 + log_normal_sf((b - lam * cm) / sig)
        )
        out.append(math.log(lam - 1.0) + log_normal_sf(b / sig))
    else:  # G <= e^{−βℓ} + β e^{ℓ}, β = −λ
        beta = -lam
        out.append(
            -beta * la_lo
            + beta * cm * a / s2
            + 0.5 * (beta * cm) ** 2 / s2
            + log_normal_sf(-(a + beta * cm) / sig)
        )
        out.append(math.log(beta) + la_hi + log_normal_sf(-a / sig))
        out.append(-beta * lb_lo + log_normal_sf(b / sig))
        out.append(math.log(beta) + terms.log_mix_sf(b))
    return [v + 16.0 * _U * (abs(v) + 8.0) for v in out]


def _log_sum(v: np.ndarray) -> float:
    """``log Σ e^{v}`` raised by a relative rounding margin (``-inf`` for none)."""
    v = np.where(np.isnan(v), np.inf, v)  # a failed term bounds nothing
    v = v[v > -np.inf]
    if v.size == 0:
        return -math.inf
    mx = float(np.max(v))
    if math.isinf(mx):
        return mx
    return mx + math.log(float(np.sum(np.exp(v - mx)))) + (v.size + 8) * 4.0 * _U * (1.0 + abs(mx))


def _refined(x: np.ndarray, lgap: np.ndarray, log_target: float, cap: int):
    """The grid with interval ``j`` cut into ``k_j`` equal parts, ``k_j`` in proportion to its gap share
    (at most 64), or ``None`` past ``cap`` points."""
    h = x[1:] - x[:-1]
    with np.errstate(over="ignore", invalid="ignore"):
        k = np.ceil(np.exp(np.minimum(lgap - log_target, 10.0)))
    k = np.clip(np.where(np.isfinite(k), k, 1.0), 1, 64).astype(np.int64)
    if int(np.sum(k)) + 1 > cap or np.all(k == 1):
        return None
    left = np.repeat(x[:-1], k)
    step = np.repeat(h / k, k)
    j = np.arange(left.size) - np.repeat(np.cumsum(k) - k, k)
    return np.append(left + j * step, x[-1])


def _lsinhc(y: np.ndarray) -> np.ndarray:
    """An upper bound on ``log(sinh(y)/y)`` (``y²/6`` near 0: ``sinh(y)/y = Π(1 + y²/(kπ)²) <= e^{y²/6}``)."""
    a = np.abs(y)
    big = np.maximum(a, 0.5)
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        far = big + np.log(-np.expm1(-2.0 * big)) - np.log(2.0 * big)
    return np.where(a < 0.5, a * a / 6.0, far + 16.0 * _U * (big + 4.0))


def _quad_raw(terms: MixtureTerms, lam: float, a: float, b: float, cap: int, rho: float):
    """``(upper, lower estimate)`` of ``log E_Q[e^{λL}]`` by log-linear envelopes: on each interval
    ``λL`` is below its chord (λ > 1, L convex) or its tangent at the midpoint (λ < 0), and
    ``−x²/(2σ²)`` below its tangent at the midpoint; ``e^{linear}`` integrates in closed form."""
    sig, s2 = terms.sigma, terms.s2
    lognorm = _LOG_SQRT_2PI + math.log(sig)
    n0 = max(64, int(math.ceil((b - a) / sig)))
    if n0 > cap:
        return None
    x = np.linspace(a, b, n0 + 1)
    tails = _tails_raw(terms, lam, a, b)
    log_up = log_lo = math.inf
    for _ in range(6):
        h = x[1:] - x[:-1]
        t = 0.5 * (x[1:] + x[:-1])
        lt, st, vt = terms.derivatives(t)
        dt = terms.log_ratio_error(t)
        if lam > 1:
            lv = terms.log_ratio(x) + terms.log_ratio_error(x)
            alpha = lam * 0.5 * (lv[:-1] + lv[1:])
            slope = lam * (lv[1:] - lv[:-1]) / h
        else:
            es = 8.0 * _U * (terms.m + 4) * float(terms.b[-1]) + 1e-300
            alpha = lam * (lt - dt - es * 0.5 * h)
            slope = lam * st
        alpha = alpha - 0.5 * t * t / s2 - lognorm
        beta = slope - t / s2
        lu = alpha + np.log(h) + _lsinhc(0.5 * beta * h)
        lu = lu + 16.0 * _U * (np.abs(alpha) + np.abs(lam * lt) + 0.5 * t * t / s2 + np.abs(np.log(h)) + 8.0)
        err = (abs(lam) * vt + 1.0 / s2) * h * h / 8.0
        with np.errstate(divide="ignore", invalid="ignore"):
            lgap = lu + np.log(-np.expm1(-np.minimum(err, 700.0)))
        log_up = _log_sum(np.concatenate([lu, tails]))
        log_gap = _log_sum(lgap)
        log_lo = float(log_sub(log_up, min(log_gap, log_up)))
        a_up = log_up  # log A
        want = math.log(rho) + math.log(max(min(a_up, 1.0), 1e-300))  # relative accuracy in log A
        if log_gap - log_up <= want or a_up < 1e-2:
            break
        nxt = _refined(x, lgap, log_up + want - math.log(2.0 * h.size), cap)
        if nxt is None:
            break
        x = nxt
    return log_up, log_lo


def _tails_raw(terms: MixtureTerms, lam: float, a: float, b: float) -> list:
    """Log upper bounds on ``∫ φ_σ(x) e^{λL(x)} dx`` over ``(−∞, a]`` and ``[b, ∞)``."""
    sig, s2, cm = terms.sigma, terms.s2, terms.c_max
    xs = np.array([a, b])
    lv = terms.log_ratio(xs)
    dv = terms.log_ratio_error(xs)
    if lam > 1:
        out = [
            lam * float(lv[0] + dv[0]) + log_normal_sf(-a / sig),
            lam * float(lv[1] + dv[1])
            - lam * cm * b / s2
            + 0.5 * (lam * cm) ** 2 / s2
            + log_normal_sf((b - lam * cm) / sig),
        ]
    else:
        beta = -lam
        out = [
            -beta * float(lv[0] - dv[0])
            + beta * cm * a / s2
            + 0.5 * (beta * cm) ** 2 / s2
            + log_normal_sf(-(a + beta * cm) / sig),
            -beta * float(lv[1] - dv[1]) + log_normal_sf(b / sig),
        ]
    return np.array([v + 16.0 * _U * (abs(v) + 8.0) for v in out])


def _quad_f(terms: MixtureTerms, lam: float, a: float, b: float, cap: int, rho: float):
    """``(upper, lower estimate)`` of ``log E_Q[G(L)]`` (module docstring: upper sums of the
    quasi-convex ``G(L(x))`` against bounds on the Gaussian masses)."""
    sig = terms.sigma
    n0 = max(256, int(math.ceil((b - a) / (0.25 * sig))))
    if n0 > cap:
        return None
    x = np.linspace(a, b, n0 + 1)
    tails = np.array(_tails(terms, lam, a, b))
    log_up = log_lo = math.inf
    for _ in range(5):
        lv = terms.log_ratio(x)
        dv = terms.log_ratio_error(x)
        g_left = _log_g_up(lv - dv, lam)  # the interval's smallest loss, lowered
        g_right = _log_g_up(lv + dv, lam)  # its largest, raised
        gmax = np.maximum(g_left[:-1], g_right[1:])
        lm = _log_mass_up(x[:-1], x[1:], sig)
        lu = lm + gmax + 16.0 * _U * (np.abs(gmax) + 8.0)
        g_est = _log_g(lv, lam)
        straddle = (lv[:-1] <= 0) & (lv[1:] >= 0)
        gmin = np.where(straddle, -np.inf, np.minimum(g_est[:-1], g_est[1:]))
        h = x[1:] - x[:-1]
        with np.errstate(invalid="ignore", divide="ignore", under="ignore"):
            lgap = np.logaddexp(
                lm + log_sub(gmax, np.minimum(gmin, gmax)), lu + np.log(h * h / (12.0 * sig * sig))
            )
        log_up = _log_sum(np.concatenate([lu, tails]))
        log_gap = _log_sum(lgap)
        log_lo = float(log_sub(log_up, min(log_gap, log_up))) if math.isfinite(log_up) else log_up
        if not math.isfinite(log_up) or log_gap - log_up <= math.log(rho):
            break
        nxt = _refined(x, lgap, log_up + math.log(rho) - math.log(2.0 * h.size), cap)
        if nxt is None:
            break
        x = nxt
    return log_up, log_lo


def quad_log_moment(terms: MixtureTerms, lam: float, rho: float = QUAD_RHO, with_lower: bool = False):
    """An upper bound on ``log E_Q[e^{λL}]`` (λ > 1: remove, ``A_λ``; λ < 0: add, ``B_{1−λ}``) by the
    certified quadratures of the module docstring (the smaller), or ``None`` beyond :data:`QUAD_WORK`.
    ``with_lower``: ``(upper, an estimate of the value from the lower sums)``."""
    sig, cm = terms.sigma, terms.c_max
    if lam > 1:
        a, b = float(terms.c[0]) - _T * sig, lam * cm + _T * sig
    else:
        a, b = -(1.0 - lam) * cm - _T * sig, cm + _T * sig
    cap = max(QUAD_WORK // terms.m, 64)
    best = best_lo = None
    raw = _quad_raw(terms, lam, a, b, cap, rho)
    if raw is not None:
        best, best_lo = raw
    if raw is None or raw[0] - raw[1] > rho * raw[0]:
        fg = _quad_f(terms, lam, a, b, cap, rho)
        if fg is not None:
            up_f = float(np.logaddexp(0.0, fg[0]))
            lo_f = float(np.logaddexp(0.0, fg[1]))
            if best is None or up_f < best:
                best = up_f
            best_lo = lo_f if best_lo is None else max(best_lo, lo_f)
    if best is None:
        return None
    best = best + 4.0 * _U * (abs(best) + 1.0)
    return (best, best_lo) if with_lower else best


# ------------------------------------------------------------------------------ the curve


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
