"""The certified quadrature of the mixture-of-Gaussians' log-moments (docs/math.md §2.14; numpy only):
upper bounds on ``log E_Q[e^{λL}]`` for the pair ``P = Σ p_i N(c_i, σ²)``, ``Q = N(0, σ²)``, ``L = log P/Q``
(λ > 1: the remove direction's ``A_λ``; λ < 0: the add direction's ``B_{1−λ}``), read by the Rényi curve of
:mod:`dpcalc.engine.mechanisms.mixture_gaussian_rdp`.

Two quadratures, the smaller kept.  **Log-linear envelopes** (:func:`_quad_raw`): on each interval of a grid
``λL`` is below its chord (λ > 1, ``L`` convex) or its tangent at the midpoint (λ < 0), and ``−x²/(2σ²)``
below its tangent at the midpoint; ``e^{linear}`` integrates in closed form.  **Upper sums of G**
(:func:`_quad_f`): ``E_Q[e^{λL}] = 1 + E_Q[G(L)]`` where ``G(ℓ) = e^{λℓ} − 1 − λ(e^ℓ − 1) >= 0``
(``E_Q e^L = 1``; ``r ↦ r^λ`` is convex and ``G`` is it minus its tangent at ``r = 1``), so small
divergences keep their relative precision.  ``G`` decreases for ``ℓ < 0`` and increases for ``ℓ > 0``
and ``L`` is increasing, so on each interval the integrand ``G(L(x))`` is at most its larger end value
(with the rounding error of ``L`` allowed for); the Gaussian mass of the interval is bounded by the
tangent of ``−x²/(2σ²)`` at its midpoint (``∫ ≤ φ(t)·h·sinh(y)/y``, ``y = th/(2σ²)``, and
``sinh(y)/y ≤ e^{y²/6}``).  Outside the window the tails are bounded in closed form (``L`` has slope in
``[0, c_max/σ²]`` and is convex).  The grid is refined where the upper and lower sums differ.
"""

from __future__ import annotations

import math

import numpy as np

from dpcalc.engine._numerics import log_sub
from dpcalc.engine.mechanisms.loss_models import _LOG_SQRT_2PI, log_normal_sf
from dpcalc.engine.mechanisms.mixture_gaussian_terms import MixtureTerms

_U = float(np.finfo(float).eps)
#: Grid points × components allowed for one quadrature (else the order keeps its closed-form bounds).
QUAD_WORK = 4_000_000
#: Relative gap between the upper and lower sums at which a quadrature stops refining.
QUAD_RHO = 1e-3
#: Window half-width beyond the bulk, in σ (tails beyond are bounded in closed form).
_T = 14.0
#: The remove direction's grids of at least this many intervals leave out the intervals whose terms would
#: add exactly 0 (:func:`_skipping`), judged :data:`SKIP_BLOCK` intervals at a time.
SKIP_FROM = 1024
SKIP_BLOCK = 64


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


def _log_sum(v: np.ndarray, unseen: int = 0) -> float:
    """``log Σ e^{v}`` raised by a relative rounding margin (``-inf`` for none); ``unseen`` more terms, left out
    of ``v``, are each below the smallest positive ``e^{v − max}`` (so they would add exactly 0) and count in
    the margin only."""
    v = np.where(np.isnan(v), np.inf, v)  # a failed term bounds nothing
    v = v[v > -np.inf]
    if v.size == 0:
        return -math.inf
    mx = float(np.max(v))
    if math.isinf(mx):
        return mx
    return mx + math.log(float(np.sum(np.exp(v - mx)))) + (v.size + unseen + 8) * 4.0 * _U * (1.0 + abs(mx))


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


def _refined_at(x: np.ndarray, j: np.ndarray, lgap_j: np.ndarray, log_target: float, cap: int):
    """:func:`_refined` where only the intervals ``j`` (increasing) have gap terms ``lgap_j`` and every other
    interval stays whole (its gap below the target): the same grid, by the same arithmetic."""
    n = x.size - 1
    with np.errstate(over="ignore", invalid="ignore"):
        k = np.ceil(np.exp(np.minimum(lgap_j - log_target, 10.0)))
    k = np.clip(np.where(np.isfinite(k), k, 1.0), 1, 64).astype(np.int64)
    if n - j.size + int(np.sum(k)) + 1 > cap or np.all(k == 1):
        return None
    cut = k > 1
    i, k = j[cut], k[cut]
    step = (x[i + 1] - x[i]) / k
    reps = k - 1
    which = np.repeat(np.arange(i.size), reps)
    m = np.arange(which.size) - np.repeat(np.cumsum(reps) - reps, reps) + 1  # 1 .. k − 1 in each interval
    return np.insert(x, np.repeat(i + 1, reps), x[i][which] + m * step[which])


def _lsinhc(y: np.ndarray) -> np.ndarray:
    """An upper bound on ``log(sinh(y)/y)`` (``y²/6`` near 0: ``sinh(y)/y = Π(1 + y²/(kπ)²) <= e^{y²/6}``)."""
    a = np.abs(y)
    big = np.maximum(a, 0.5)
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        far = big + np.log(-np.expm1(-2.0 * big)) - np.log(2.0 * big)
    return np.where(a < 0.5, a * a / 6.0, far + 16.0 * _U * (big + 4.0))


def _envelopes(terms: MixtureTerms, lam: float, h, t, lv, lt, st, vt):
    """``(lu, lgap)`` of intervals of widths ``h`` and midpoints ``t`` (:func:`_quad_raw`): the log of each
    interval's envelope integral (an upper bound) and of its gap to the integrand; ``lv`` the raised loss at
    the intervals' two ends (λ > 1: a pair of arrays), ``lt, st, vt`` :meth:`MixtureTerms.derivatives` at
    the midpoints."""
    s2 = terms.s2
    lognorm = _LOG_SQRT_2PI + math.log(terms.sigma)
    if lam > 1:
        lv_l, lv_r = lv
        alpha = lam * 0.5 * (lv_l + lv_r)
        slope = lam * (lv_r - lv_l) / h
    else:
        dt = terms.log_ratio_error(t)
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
    return lu, lgap


def _skipping(terms: MixtureTerms, lam: float, x: np.ndarray, h: np.ndarray, tails):
    """The envelopes of :func:`_quad_raw` (λ > 1) on the grid ``x`` (widths ``h``) without evaluating the
    intervals whose terms would add exactly 0 to its sums: ``(j, lu, lgap, unseen, top)``, the intervals
    evaluated (increasing) and their terms, the number left out and a bound on their ``lu`` (``-inf`` for
    none); or ``None``.

    At a high order the integrand's bulk (some tens of σ) is a small part of the window.  The grid's
    intervals are taken :data:`SKIP_BLOCK` at a time; a block's own envelope (the chord of the raised loss
    between its ends, the tangent of ``−x²/(2σ²)`` at its midpoint) bounds the envelope of each of its
    intervals: their chords lie below the block's (``L`` is convex; the raised values at the inner points are
    at most ``2·e`` above the block's chord, ``e`` the largest rounding bound of ``L`` there), and their
    tangents at most ``h²/(8σ²)`` above the block's (``h`` their width).  A block is evaluated unless that
    bound, with a margin, is 800 below both sums' largest terms (``e^{−800}`` is below the smallest double):
    so every term left out would have added exactly 0, and it lies below the refinement's threshold, so the
    next grid is the same too.  The work counted is the whole grid's, as if every interval were evaluated."""
    n = x.size - 1
    w0 = terms.work
    starts = np.arange(0, n, SKIP_BLOCK)
    ends = np.minimum(starts + SKIP_BLOCK, n)
    pe = np.append(starts, n)  # the blocks' ends
    xe = x[pe]
    err_e = terms.log_ratio_error(xe)
    lve = terms.log_ratio(xe) + err_e
    la, lb = lve[:-1], lve[1:]
    xa, xb = xe[:-1], xe[1:]
    hb = xb - xa
    tb = 0.5 * (xa + xb)
    hmax = np.maximum.reduceat(h, starts)
    emax = np.maximum(err_e[:-1], err_e[1:])  # the rounding bound grows with |x|: largest at an end
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        alpha = lam * 0.5 * (la + lb) - 0.5 * tb * tb / terms.s2 - _LOG_SQRT_2PI - math.log(terms.sigma)
        beta = lam * (lb - la) / hb - tb / terms.s2
        bound = alpha + np.log(hb) + _lsinhc(0.5 * beta * hb)
        bound = bound + 2.0 * lam * emax + hmax * hmax / (8.0 * terms.s2) + 10.0
        bound = bound + 1e-6 * (
            np.abs(alpha) + lam * np.maximum(np.abs(la), np.abs(lb)) + tb * tb / terms.s2 + 1.0
        )
    done = np.zeros(starts.size, dtype=bool)
    todo = ~(bound < np.nanmax(np.where(np.isnan(bound), -np.inf, bound)) - 1000.0)  # NaN: evaluate
    if not np.any(todo):
        return None
    mx_lu, mx_gap = float(np.max(tails)), -math.inf
    parts = []
    while np.any(todo):
        blocks = np.nonzero(todo)[0]
        j = np.concatenate([np.arange(starts[k], ends[k]) for k in blocks])  # intervals, increasing
        mark = np.zeros(n + 1, dtype=bool)
        mark[j] = mark[j + 1] = True
        pts = np.nonzero(mark)[0]  # the intervals' ends, increasing
        lvp = terms.log_ratio(x[pts]) + terms.log_ratio_error(x[pts])
        lv_l = lvp[np.searchsorted(pts, j)]
        lv_r = lvp[np.searchsorted(pts, j + 1)]
        tj = 0.5 * (x[j + 1] + x[j])
        lt, st, vt = terms.derivatives(tj)
        lu, lgap = _envelopes(terms, lam, h[j], tj, (lv_l, lv_r), lt, st, vt)
        parts.append((j, lu, lgap))
        done |= todo
        # (a NaN term makes the floor NaN: then every block is evaluated)
        mx_lu = max(mx_lu, float(np.max(np.where(np.isnan(lu), np.nan, np.where(lu > -np.inf, lu, -np.inf)))))
        mx_gap = max(mx_gap, float(np.max(np.where(np.isfinite(lgap), lgap, -np.inf))))
        floor = min(mx_lu, mx_gap) if not math.isnan(mx_lu) else math.nan
        todo = ~done & ~(bound < floor - 800.0)
    # derivatives at n midpoints (2 each), the loss at n + 1 points: the whole grid's work
    terms.work = w0 + (3 * n + 1) * (terms.m + 16)
    unseen = int(np.sum(ends[~done] - starts[~done]))
    top = float(np.max(bound[~done])) if unseen else -math.inf
    j = np.concatenate([p[0] for p in parts])
    order = np.argsort(j, kind="stable")
    lu = np.concatenate([p[1] for p in parts])[order]
    lgap = np.concatenate([p[2] for p in parts])[order]
    return j[order], lu, lgap, unseen, top


def _quad_raw(terms: MixtureTerms, lam: float, a: float, b: float, cap: int, rho: float):
    """``(upper, lower estimate)`` of ``log E_Q[e^{λL}]`` by log-linear envelopes: on each interval
    ``λL`` is below its chord (λ > 1, L convex) or its tangent at the midpoint (λ < 0), and
    ``−x²/(2σ²)`` below its tangent at the midpoint; ``e^{linear}`` integrates in closed form."""
    sig = terms.sigma
    n0 = max(64, int(math.ceil((b - a) / sig)))
    if n0 > cap:
        return None
    x = np.linspace(a, b, n0 + 1)
    tails = _tails_raw(terms, lam, a, b)
    log_up = log_lo = math.inf
    for _ in range(6):
        h = x[1:] - x[:-1]
        w0 = terms.work
        skip = _skipping(terms, lam, x, h, tails) if lam > 1 and h.size >= SKIP_FROM else None
        for full in (False, True):
            if skip is None or full:
                terms.work = w0
                t = 0.5 * (x[1:] + x[:-1])
                lt, st, vt = terms.derivatives(t)
                lv = terms.log_ratio(x) + terms.log_ratio_error(x) if lam > 1 else None
                lu, lgap = _envelopes(terms, lam, h, t, None if lv is None else (lv[:-1], lv[1:]), lt, st, vt)
                seen, unseen, top = None, 0, -math.inf
            else:
                seen, lu, lgap, unseen, top = skip
            # (the terms left out are absent from lu, lgap: in index order the sums see the same terms)
            log_up = _log_sum(np.concatenate([lu, tails]), unseen)
            log_gap = _log_sum(lgap, unseen)
            a_up = log_up  # log A
            want = math.log(rho) + math.log(max(min(a_up, 1.0), 1e-300))  # relative accuracy in log A
            # the intervals left out must stay whole in the refinement (below its threshold by a margin)
            if top < log_up + want - math.log(2.0 * h.size) - 10.0:
                break
        log_lo = float(log_sub(log_up, min(log_gap, log_up)))
        if log_gap - log_up <= want or a_up < 1e-2:
            break
        target = log_up + want - math.log(2.0 * h.size)
        nxt = _refined(x, lgap, target, cap) if seen is None else _refined_at(x, seen, lgap, target, cap)
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
