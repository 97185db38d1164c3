"""The fast first estimate of the rdp noise calibration (:mod:`dpcalc.engine.dpsgd.noise_calibration`):
three phases of vectorised σ sampling on growing grids of orders, each order's conversion turned into a
threshold on the total RDP, then a few refinement rounds.  An estimate only: the calibration confirms its
answer on the full grid of orders (docs/math.md §3).
"""

from __future__ import annotations

import numpy as np

from dpcalc.engine._numerics import log_h
from dpcalc.engine.conversion import methods as conversions
from dpcalc.engine.dpsgd.accounting import rdp_per_step
from dpcalc.engine.mechanisms import sgm

#: σ samples per row in the three phases of the fast rdp calibration (coarse orders over the whole σ range;
#: cheap orders near the best coarse one; the orders of the full grid around the best cheap ones).
_FAST_POINTS = (13, 12, 12)
#: Margins (factors on σ) by which the second and third phases extend their bracket downwards: the finer grid of
#: orders (and, in the second phase, the requested conversion instead of Balle's) can only lower the boundary.
_FAST_MARGINS = (1.2, 1.05)
#: Refinement rounds (each one evaluation at _FAST_REFINE_POINTS + 2 values of σ) after the three phases.
_FAST_ROUNDS = 4
_FAST_REFINE_POINTS = 12
#: The first phase tries the coarse orders up to this one first (dense binomial sums, cheap).
_FAST_LOW_MAX = 64


def _thresholds(alphas, target, delta, conversion):
    """The total RDP at each order up to which that order's conversion meets the ε target (shape (rows, m)).

    Only a guide for the search (every answer is checked with the real conversion afterwards): Balle et al.
    ``target − (log h_α − log δ)/(α−1)`` (docs/math.md §1.2; none at α <= 1.01), Mironov
    ``target − log(1/δ)/(α−1)`` (§1.1), optimal: the certified lower bound of ζ_α^ε(δ) (:func:`zeta_opt`, §1.3)."""
    t, d = target[:, None], delta[:, None]
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        if conversion == "optimal":
            return conversions.zeta_opt(alphas, t, d)
        if conversion == "mironov":
            return t + np.log(d) / (alphas - 1.0)
        z = t - (log_h(alphas) - np.log(d)) / (alphas - 1.0)
    return np.where(alphas <= conversions.BALLE_MIN_ORDER, -np.inf, z)


def _bracket(x, gv):
    """From ``gv`` (rows, K, m) = log(total RDP/threshold) at K increasing σ samples ``x`` (rows, K): the first
    sample meeting the target (some order with gv <= 0), whether the row is bracketed (the first sample
    misses, a later one meets), the best order at the boundary (the one whose interpolated crossing is the
    smallest; else the one with most slack at that sample) and that crossing (nan if none)."""
    meet = np.any(gv <= 0, axis=2)
    j = np.argmax(meet, axis=1)
    good = np.any(meet, axis=1) & (j > 0)
    roots = _crossings(np.log(x), gv)
    roots = np.where(np.isnan(roots), np.inf, roots)
    best = np.where(
        np.any(np.isfinite(roots), axis=1),
        np.argmin(roots, axis=1),
        np.argmin(gv[np.arange(gv.shape[0]), j], axis=1),
    )
    root = np.min(roots, axis=1)
    return j, good, best, np.where(np.isfinite(root), np.exp(root), np.nan)


def _crossings(x, gv):
    """Per (row, order): the root of ``gv`` (rows, K, m), decreasing in x (rows, K), by inverse cubic
    interpolation through the four samples around the first non-positive one (linear where that leaves the
    bracketing interval); nan where the order does not cross inside the samples."""
    r, k, m = gv.shape
    meet = gv <= 0
    i = np.argmax(meet, axis=1)  # (r, m)
    ok = np.any(meet, axis=1) & (i > 0)
    i = np.clip(i, 1, k - 1)
    base = np.clip(i - 2, 0, k - 4) if k >= 4 else np.zeros_like(i)
    npts = min(k, 4)
    rr = np.arange(r)[:, None]
    cols = np.arange(m)[None, :]
    xs = [x[rr, base + p] for p in range(npts)]
    gs = [gv[rr, base + p, cols] for p in range(npts)]
    x0, x1 = x[rr, i - 1], x[rr, i]
    g0, g1 = gv[rr, i - 1, cols], gv[rr, i, cols]
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        lin = x0 + (x1 - x0) * g0 / (g0 - g1)
        cub = np.zeros_like(lin)
        for p in range(npts):
            w = np.ones_like(lin)
            for o in range(npts):
                if o != p:
                    w = w * (0.0 - gs[o]) / (gs[p] - gs[o])
            cub = cub + w * xs[p]
    root = np.where(np.isfinite(cub) & (cub >= x0) & (cub <= x1), cub, lin)
    ok &= np.isfinite(root) & np.isfinite(g0) & np.isfinite(g1)
    return np.where(ok, root, np.nan)


def _fast_rdp_estimate(qf, tf, df, ef, lo0, hi0, orders, coarse, conversion, setting, rtol):
    """Estimates of the smallest σ meeting the target per row, on sub-grids of the orders: a guide only (the
    caller accepts a σ only where ε on the full grid with the requested conversion confirms it).

    Vectorised evaluations of the per-step RDP curve (docs/math.md §3.2/§3.3) at a dozen σ values per row,
    compared with each order's threshold (:func:`_thresholds`; ε is the min over orders, so the target is met
    where some order's total RDP is within its threshold): (1) the coarse integer orders (those above
    _FAST_LOW_MAX only where needed) over the whole σ range with Balle's conversion: a bracket within a
    factor ~5.6 and the best coarse order; (2) twice, the cheap orders of the full grid within two coarse
    neighbours of it (integers; above FRAC_SERIES_MAX the interpolation bound), with the requested
    conversion: a bracket within ~1.016; (3) every order of the full grid between the cheap neighbours of
    the cheap orders meeting the target at that bracket's top, whose crossings of their thresholds are
    interpolated in log σ (inverse cubic): the smallest is the estimate (nan where no bracket was found).

    Returns ``(estimate, refine)``; ``refine(rows_mask)`` continues phase (3) by sampling around the
    interpolated root until two samples bracket the sub-grid's boundary within a factor 1 + rtol, and
    returns the sample that meets the target (nan where that fails); None where no row got that far.
    """
    n = qf.size
    est = np.full(n, np.nan)

    def gval(rows, sig, alphas, z):
        per = rdp_per_step(qf[rows, None], sig, alphas, **setting)
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            v = np.log(tf[rows, None, None] * per) - np.log(np.maximum(z[:, None, :], 0.0))
        return np.where(np.isnan(v), np.inf, v)

    # phase 1: coarse integer orders, Balle's conversion, σ over the whole range; the orders above
    # _FAST_LOW_MAX (costlier) only for the rows whose best low order is the highest one or that found no bracket
    t1 = np.linspace(0.0, 1.0, _FAST_POINTS[0])
    s1 = lo0[:, None] * (hi0 / lo0)[:, None] ** t1
    low = coarse <= _FAST_LOW_MAX
    j, good, ic, _ = _bracket(
        s1, gval(np.arange(n), s1, coarse[low], _thresholds(coarse[low], ef, df, "balle"))
    )
    high = ~good | (ic == np.sum(low) - 1)
    if np.any(high) and not np.all(low):
        h = np.nonzero(high)[0]
        j[h], good[h], ic[h], _ = _bracket(
            s1[h], gval(h, s1[h], coarse, _thresholds(coarse, ef[h], df[h], "balle"))
        )
    rows = np.nonzero(good)[0]
    if rows.size == 0:
        return est, None
    a, b, ic = s1[rows, j[good] - 1], s1[rows, j[good]], ic[good]
    lo_a = np.where(ic > 1, coarse[np.maximum(ic - 2, 0)], orders[0])
    hi_a = np.where(ic + 2 < coarse.size, coarse[np.minimum(ic + 2, coarse.size - 1)], orders[-1])
    # phases 2 and 3 use the orders of the full grid between the coarse neighbours (thresholds of the requested
    # conversion computed once for them): first the cheap ones (integers; above FRAC_SERIES_MAX the
    # interpolation bound), then all of them between the neighbours of the best cheap one
    span = np.any((orders >= lo_a[:, None]) & (orders <= hi_a[:, None]), axis=0)
    o_rng = orders[span]
    z_rng = _thresholds(o_rng, ef[rows], df[rows], conversion)
    cheap = (o_rng == np.floor(o_rng)) | (o_rng > sgm.FRAC_SERIES_MAX)
    o2 = o_rng[cheap]
    if o2.size == 0:
        return est, None
    t2 = np.linspace(0.0, 1.0, _FAST_POINTS[1])
    a = a / _FAST_MARGINS[0]
    z2 = z_rng[:, cheap]
    for _ in range(2):  # two rounds: a bracket within ~1.2, then within ~1.016
        s2 = a[:, None] * (b / a)[:, None] ** t2
        g2 = gval(rows, s2, o2, z2)
        j, good, _, _ = _bracket(s2, g2)
        rows, z_rng, z2, g2, s2, j = rows[good], z_rng[good], z2[good], g2[good], s2[good], j[good]
        if rows.size == 0:
            return est, None
        a, b = s2[np.arange(rows.size), j - 1], s2[np.arange(rows.size), j]
    # the best order at the boundary meets the target at b: phase 3 takes every order of the full grid between
    # the cheap neighbours of the cheap orders meeting it there
    met = g2[np.arange(rows.size), j] <= 0  # (rows, len(o2))
    first = np.argmax(met, axis=1)
    last = o2.size - 1 - np.argmax(met[:, ::-1], axis=1)
    lo_k = np.where(first > 0, o2[np.maximum(first - 1, 0)], o_rng[0])
    hi_k = np.where(last + 1 < o2.size, o2[np.minimum(last + 1, o2.size - 1)], o_rng[-1])
    sel = np.any((o_rng >= lo_k[:, None]) & (o_rng <= hi_k[:, None]), axis=0)
    o3 = o_rng[sel]
    t3 = np.linspace(0.0, 1.0, _FAST_POINTS[2])
    a = a / _FAST_MARGINS[1]
    s3 = a[:, None] * (b / a)[:, None] ** t3
    g3 = gval(rows, s3, o3, z_rng[:, sel])
    j, good, _, guess = _bracket(s3, g3)
    rows, z3 = rows[good], z_rng[good][:, sel]
    lo, hi, guess = s3[good, j[good] - 1], s3[good, j[good]], guess[good]
    est[rows] = guess
    state = (rows, z3, lo, hi, guess)

    def refine(want):
        """Refinement for the rows ``want`` (bool, n): sample around the interpolated root (offsets rtol/4·3^i
        either side) and across the bracket, keep the tightest bracket of samples; a row is done once it
        is within a factor 1 + rtol, and its σ is then the sample that meets the target there."""
        out = np.full(n, np.nan)
        rows, z3, lo, hi, guess = state
        keep = want[rows]
        rows, z3, lo, hi, guess = rows[keep], z3[keep], lo[keep], hi[keep], guess[keep]
        offs = 0.25 * rtol * 3.0 ** np.arange(_FAST_REFINE_POINTS // 2)
        offs = np.concatenate([-offs[::-1], offs])
        fill = np.arange(1, offs.size + 1) / (offs.size + 1.0)
        for _ in range(_FAST_ROUNDS):
            done = hi <= lo * (1.0 + rtol)
            out[rows[done]] = hi[done]
            keep = ~done & np.isfinite(guess)
            rows, z3, lo, hi, guess = rows[keep], z3[keep], lo[keep], hi[keep], guess[keep]
            if rows.size == 0:
                return out
            cand = guess[:, None] * (1.0 + offs)
            uni = lo[:, None] * (hi / lo)[:, None] ** fill
            inner = np.sort(np.where((cand > lo[:, None]) & (cand < hi[:, None]), cand, uni), axis=1)
            x = np.concatenate([lo[:, None], inner, hi[:, None]], axis=1)
            gx = gval(rows, x, o3, z3)
            jj, ok, _, root = _bracket(x, gx)
            ok &= np.any(gx[:, -1] <= 0, axis=1)  # the ends still miss/meet (the same evaluation)
            r = np.arange(rows.size)
            lo = np.where(ok, x[r, np.maximum(jj - 1, 0)], np.nan)
            hi = np.where(ok, x[r, jj], np.nan)
            guess = np.where(ok, root, np.nan)
        done = hi <= lo * (1.0 + rtol)
        out[rows[done]] = hi[done]
        return out

    return est, refine
