"""DP-SGD's noise calibration: the smallest noise multiplier whose ε is within a target (docs/math.md §3;
the forward accounting is :mod:`dpcalc.engine.dpsgd.accounting`).

Conservative by construction: every σ returned is one at which ε was computed on the full grid of orders and
found within the target, and found above the target at σ/(1 + rtol) (but for σ = 1e-150, the smallest
evaluated, reported with a warning where even it meets the target).  The search range widens per row until
the answer is bracketed (up to σ = 1e150; beyond, inf with a warning).
"""

from __future__ import annotations

import warnings

import numpy as np

from dpcalc.engine.dpsgd._fast_calibration import _fast_rdp_estimate
from dpcalc.engine.dpsgd._multisect import multisect
from dpcalc.engine.dpsgd.accounting import (
    CONVERSIONS,
    Epsilon,
    _bcast,
    check_setting,
    check_whole,
    epsilon,
)
from dpcalc.engine.orders import DEFAULT_ORDERS
from dpcalc.errors import DpcalcWarning, InputError

_LOCAL_ORDERS = 3
_COARSE_ORDERS = (2, 3, 4, 5, 6, 8, 10, 12, 16, 20, 24, 32, 48, 64, 128, 256, 512, 1024)


def _sigma_search(eps_fn, ef, lo, hi, rtol, *, points=15, ends=None):
    """Smallest σ in [lo, hi] with eps_fn(σ) <= ef, per row, to a factor 1 + rtol: returns (σ, low_ok) where
    σ = lo where lo already meets the target and σ = inf where hi does not.  ``eps_fn(s, rows)`` takes a
    (len(rows), K) array of σ values.  ``ends``: the known (lo meets target, hi meets target) flags."""
    n = ef.size
    if ends is None:
        e = eps_fn(np.stack([lo, hi], axis=1), np.arange(n))
        ends = (e[:, 0] <= ef, e[:, 1] <= ef)
    low_ok, high_ok = ends

    def f(x, active):
        out = np.zeros(x.shape, dtype=bool)
        rows = np.nonzero(active)[0]
        out[rows] = eps_fn(x[rows], rows) <= ef[rows, None]
        return out

    search = ~low_ok & high_ok
    _, hi_s = multisect(f, lo, hi, lambda a, b: ~search | (b <= a * (1.0 + rtol)), points=points, rounds=40)
    return np.where(low_ok, lo, np.where(high_ok, hi_s, np.inf)), low_ok


#: The σ search starts on ``sigma_range`` and is widened per row, geometrically, until the target is
#: bracketed, but not beyond these limits: past them σ² (resp. 1/σ²) nears the end of the double range,
#: per-step RDP values underflow (resp. overflow: ε = inf) and no accountant here is evaluated meaningfully
#: any more.
SIGMA_LIMITS = (1e-150, 1e150)


def calibrate_noise(
    q,
    steps,
    delta,
    target,
    *,
    accountant="rdp",
    rtol=1e-4,
    sigma_range=(1e-3, 1e6),
    **kw,
):
    """Smallest noise multiplier σ (within a factor 1 + rtol) with ε(q, σ, steps, δ) <= target, vectorised.

    Conservative by construction: the σ returned is one at which ε was computed and found <= target, and at
    σ/(1 + rtol) it was found above the target.  The search starts on ``sigma_range``; a row whose answer
    lies outside it has the range widened (:func:`_widen`: away from the end by factors 10 (six times),
    100, 10^4, …, ε on the full grid at each) until the target is bracketed, then is searched again on that
    bracket.  The widening stops at :data:`SIGMA_LIMITS`: where ε at σ = 1e150 still misses the target, σ =
    inf and ε = nan (with a warning: no σ that can be evaluated reaches it); where ε at σ = 1e-150 already
    meets it (ε ~ 1/σ² makes that a target near 1e300), σ = 1e-150, the smallest searched (with a
    warning).  Returns ``(sigma, Epsilon at sigma)``.

    For ``rdp``, :func:`_fast_rdp_estimate` first estimates the boundary σ* from a few cheap evaluations of
    the RDP curve on sub-grids of orders; σ = σ*·(1 + rtol/2) is then accepted only where ε on the full grid
    with the requested conversion is found <= target at σ and > target at σ/(1 + rtol) (one evaluation of
    the full grid at those two values); elsewhere the estimate is refined on the sub-grid and checked again.
    Every other row (and every other accountant) goes to :func:`_calibrate_search`: multisection on a coarse
    grid of integer orders with Balle's conversion, then on the orders of the full grid near the best coarse
    order, then the same check on the full grid, falling back to a search on the full grid where that check
    fails (in either direction: Mironov's conversion lies above Balle's, so the coarse σ is not always an
    upper end).
    """
    q, steps, delta, target = _bcast(q, steps, delta, target)
    check_whole(steps, "steps")
    shape = q.shape
    qf, tf, df, ef = (x.reshape(-1) for x in (q, steps, delta, target))
    n = qf.size
    lo0 = np.full(n, max(float(sigma_range[0]), SIGMA_LIMITS[0]))
    hi0 = np.full(n, min(float(sigma_range[1]), SIGMA_LIMITS[1]))
    orders = np.asarray(kw.pop("orders", DEFAULT_ORDERS), dtype=float)
    sigma, final = _calibrate_rows(accountant, qf, tf, df, ef, lo0, hi0, orders, rtol, kw)
    fin_eps, fin_alpha, fin_edge, fin_valid = final
    floor = np.zeros(n, dtype=bool)
    # rows whose answer lies outside the range: widen it until the target is bracketed, and search again
    out_hi = ~np.isfinite(sigma)
    out_lo = np.isfinite(sigma) & (sigma <= lo0)
    if np.any(out_hi | out_lo):
        rows = np.nonzero(out_hi | out_lo)[0]
        grid_kw = {"orders": orders} if accountant == "rdp" else {}

        def eps_full(s, r):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", DpcalcWarning)
                return epsilon(
                    accountant, qf[rows[r]], s, tf[rows[r]], df[rows[r]], warn=False, **grid_kw, **kw
                )

        lo_w, hi_w, status, at_floor = _widen(eps_full, ef[rows], lo0[rows], hi0[rows], out_hi[rows])
        sigma[rows[status == _IMPOSSIBLE]] = np.inf
        fl = status == _FLOOR
        sigma[rows[fl]] = SIGMA_LIMITS[0]
        floor[rows[fl]] = True
        for dst, src in zip((fin_eps, fin_alpha, fin_edge, fin_valid), at_floor):
            dst[rows[fl]] = np.asarray(src)[fl]
        br = rows[status == _BRACKETED]
        if br.size:
            s2, f2 = _calibrate_rows(
                accountant, qf[br], tf[br], df[br], ef[br], lo_w[status == _BRACKETED],
                hi_w[status == _BRACKETED], orders, rtol, kw,
            )  # fmt: skip
            sigma[br] = s2
            for dst, src in zip((fin_eps, fin_alpha, fin_edge, fin_valid), f2):
                dst[br] = src
    if np.any(fin_edge & np.isfinite(sigma)):
        warnings.warn(
            "the best Rényi order is at the edge of the grid of orders: a wider grid could allow less noise",
            DpcalcWarning,
            stacklevel=2,
        )
    if np.any(~np.isfinite(sigma)):
        hint = ""
        if accountant == "rdp" and kw.get("conversion", "optimal") == "mironov":
            hint = (
                f": Mironov's conversion with orders up to {orders.max():g} never certifies ε below "
                f"log(1/δ)/{orders.max() - 1:g}"
            )
        warnings.warn(
            f"--target-epsilon: no noise multiplier up to {SIGMA_LIMITS[1]:g} (the largest evaluated) "
            f"reaches the target for {int(np.sum(~np.isfinite(sigma)))} row(s) (noise_multiplier inf, "
            f"no epsilon){hint}",
            DpcalcWarning,
            stacklevel=2,
        )
    if np.any(floor):
        warnings.warn(
            f"--target-epsilon: even a noise multiplier of {SIGMA_LIMITS[0]:g} (the smallest evaluated) "
            f"meets the target for {int(np.sum(floor))} row(s); that value is reported",
            DpcalcWarning,
            stacklevel=2,
        )
    if np.any(np.isfinite(sigma) & ~(fin_eps <= ef)):  # cannot happen: every candidate was checked
        raise AssertionError("calibration returned a σ above the target")
    feasible = np.isfinite(sigma)
    eps = np.where(feasible, fin_eps, np.nan)
    alpha = np.where(feasible, fin_alpha, np.nan)
    res = Epsilon(*(np.asarray(v).reshape(shape) for v in (eps, alpha, fin_edge & feasible, fin_valid)))
    return sigma.reshape(shape), res


_BRACKETED, _IMPOSSIBLE, _FLOOR = 0, 1, 2


def _widen(eps_fn, ef, lo0, hi0, up):
    """Per row, a bracket ``[lo, hi]`` of σ with ε(lo) > target >= ε(hi) outside ``[lo0, hi0]``: beyond
    ``hi0`` where ``up`` (ε(hi0) > target), below ``lo0`` elsewhere (ε(lo0) <= target).  ε is non-increasing
    in σ for every accountant, so the answer lies in the bracket.

    ``eps_fn(s, rows)`` gives the :class:`Epsilon` (full grid) at σ = ``s`` (len(rows),).  The far limit of
    :data:`SIGMA_LIMITS` is tried first (one evaluation settles the rows that cannot be bracketed: status
    ``_IMPOSSIBLE`` above, ``_FLOOR`` below), then the end moves by a factor 10 six times, then by 10^2,
    10^4, … (one evaluation per step; at most 6 + 5).  Returns ``(lo, hi, status, Epsilon fields at the
    lower limit)``."""
    n = ef.size
    lo, hi = lo0.copy(), hi0.copy()
    status = np.full(n, _BRACKETED)
    limit = np.where(up, SIGMA_LIMITS[1], SIGMA_LIMITS[0])
    e = eps_fn(limit, np.arange(n))
    meets = e.epsilon <= ef
    status[up & ~meets] = _IMPOSSIBLE
    status[~up & meets] = _FLOOR
    at_floor = tuple(np.asarray(v) for v in e)
    todo = status == _BRACKETED
    # the end that is known: hi0 misses (up), lo0 meets (down)
    known = np.where(up, hi0, lo0)
    factor, step = 10.0, 0
    while np.any(todo):
        rows = np.nonzero(todo)[0]
        u = up[rows]
        nxt = np.where(
            u, np.minimum(known[rows] * factor, limit[rows]), np.maximum(known[rows] / factor, limit[rows])
        )
        # at the limit the answer is known from the first evaluation (it meets above, misses below): not
        # evaluated again, so that a different batch's last-digit rounding cannot contradict it
        ok = np.where(nxt == limit[rows], u, False)
        ev = nxt != limit[rows]
        if np.any(ev):
            ok[ev] = eps_fn(nxt[ev], rows[ev]).epsilon <= ef[rows[ev]]
        done_up = u & ok  # bracket [known, nxt]
        done_dn = ~u & ~ok  # bracket [nxt, known]
        r_up, r_dn = rows[done_up], rows[done_dn]
        lo[r_up], hi[r_up] = known[r_up], nxt[done_up]
        lo[r_dn], hi[r_dn] = nxt[done_dn], known[r_dn]
        known[rows] = nxt
        todo[rows[done_up | done_dn]] = False
        # six decades one at a time (a narrow bracket makes the search that follows cheaper), then faster
        step += 1
        factor = 10.0 if step < 6 else factor * factor
    return lo, hi, status, at_floor


def _calibrate_rows(accountant, qf, tf, df, ef, lo0, hi0, orders, rtol, kw):
    """The search of :func:`calibrate_noise` on flat rows and the ranges ``[lo0, hi0]`` (arrays): returns
    ``(sigma, (ε, α, at_edge, valid) at sigma)``, σ = lo0 where lo0 already meets the target, inf where hi0
    misses it (no warnings)."""
    n = qf.size
    coarse = orders[np.isin(orders, _COARSE_ORDERS)]
    sigma = np.full(n, np.nan)
    fin_eps, fin_alpha, fin_edge, fin_valid = (
        np.full(n, np.nan),
        np.full(n, np.nan),
        np.zeros(n, bool),
        np.ones(n, bool),
    )
    todo = np.ones(n, dtype=bool)
    if accountant == "rdp" and coarse.size >= 6 and rtol > 0:
        conversion = kw.get("conversion", "optimal")
        if conversion not in CONVERSIONS:
            raise InputError(f"--conversion: must be one of {', '.join(CONVERSIONS)}, got {conversion!r}")
        setting = {"sampling": kw.get("sampling", "poisson"), "neighbors": kw.get("neighbors", "add-remove")}
        check_setting(**setting)
        est, refine = _fast_rdp_estimate(qf, tf, df, ef, lo0, hi0, orders, coarse, conversion, setting, rtol)
        # accept σ = est·(1 + rtol/2) where ε on the full grid confirms it; elsewhere refine the estimate on the
        # sub-grid (σ then a sample meeting the target there) and check again
        for attempt in range(2):
            s_hi = est * (1.0 + 0.5 * rtol) if attempt == 0 else est
            cand = todo & np.isfinite(s_hi) & (s_hi <= hi0) & (s_hi / (1.0 + rtol) >= lo0)
            if np.any(cand):
                rows = np.nonzero(cand)[0]
                both = np.stack([s_hi[rows], s_hi[rows] / (1.0 + rtol)], axis=1)
                chk = epsilon(
                    "rdp",
                    qf[rows, None],
                    both,
                    tf[rows, None],
                    df[rows, None],
                    warn=False,
                    orders=orders,
                    **kw,
                )
                ok = (chk.epsilon[:, 0] <= ef[rows]) & (chk.epsilon[:, 1] > ef[rows])
                r = rows[ok]
                sigma[r] = s_hi[r]
                fin_eps[r], fin_alpha[r], fin_edge[r], fin_valid[r] = (np.asarray(v)[ok, 0] for v in chk)
                todo[r] = False
            if attempt == 0 and refine is not None and np.any(todo & np.isfinite(est)):
                est = refine(todo & np.isfinite(est))
            else:
                break
    if np.any(todo):
        r = np.nonzero(todo)[0]
        sigma[r], final = _calibrate_search(
            accountant, qf[r], tf[r], df[r], ef[r], lo0[r], hi0[r], orders, rtol, kw
        )
        fin_eps[r], fin_alpha[r], fin_edge[r], fin_valid[r] = final
    return sigma, (fin_eps, fin_alpha, fin_edge, fin_valid)


def _calibrate_search(accountant, qf, tf, df, ef, lo0, hi0, orders, rtol, kw):
    """The multisection calibration of :func:`calibrate_noise` on flat rows: returns ``(sigma, (ε, α,
    at_edge, valid) at sigma)``; σ = inf where ``hi0`` misses the target."""

    def eps_with(order_grid, **over):
        extra = {"orders": order_grid} if accountant == "rdp" else {}
        args = {**kw, **over}

        def fn(s, rows):
            return epsilon(
                accountant, qf[rows, None], s, tf[rows, None], df[rows, None], warn=False, **extra, **args
            ).epsilon

        return fn

    # the coarse phase uses Balle's conversion: never below the exact one, so its σ is an upper end for both
    kw_b = {**kw, "conversion": "balle"} if accountant == "rdp" else kw

    full = eps_with(orders)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DpcalcWarning)
        coarse = orders[np.isin(orders, _COARSE_ORDERS)]
        if accountant != "rdp" or coarse.size < 6:
            sigma, _ = _sigma_search(full, ef, lo0, hi0, rtol)
        else:
            sig_c, low_c = _sigma_search(eps_with(coarse, **kw_b), ef, lo0, hi0, 1e-2, points=63)
            sigma = np.where(low_c, lo0, np.inf)
            mid = np.isfinite(sig_c) & ~low_c
            if np.any(mid):
                rows = np.nonzero(mid)[0]
                a_c = epsilon(
                    "rdp", qf[rows], sig_c[rows], tf[rows], df[rows], warn=False, orders=coarse, **kw_b
                ).alpha
                # the best full-grid order near σ_c lies between the coarse orders either side of the coarse best
                around = np.zeros(orders.size, dtype=bool)
                for a in np.unique(a_c[np.isfinite(a_c)]):
                    i = int(np.searchsorted(coarse, a))
                    lo_a = coarse[i - 1] if i > 0 else orders[0]
                    hi_a = coarse[i + 1] if i + 1 < coarse.size else orders[-1]
                    around |= (orders >= lo_a) & (orders <= hi_a)
                cand = orders[around]
                a_f = epsilon(
                    "rdp", qf[rows], sig_c[rows], tf[rows], df[rows], warn=False, orders=cand, **kw_b
                ).alpha
                near = np.zeros(orders.size, dtype=bool)
                for a in np.unique(a_f[np.isfinite(a_f)]):
                    pos = int(np.argmin(np.abs(orders - a)))
                    near[max(pos - _LOCAL_ORDERS, 0) : pos + _LOCAL_ORDERS + 1] = True
                local = orders[near] if np.any(near) else orders
                sub = eps_with(local)
                lo2 = sig_c[rows] / 1.25
                lo_bad = sub(lo2[:, None], rows)[:, 0] <= ef[rows]
                lo2 = np.where(lo_bad, lo0[rows], lo2)
                # ε on a sub-grid of orders is at least the full grid's: σ_c meets the target there too
                known = (np.zeros(rows.size, dtype=bool), np.ones(rows.size, dtype=bool))
                s2, _ = _sigma_search(
                    lambda s, r: sub(s, rows[r]), ef[rows], lo2, sig_c[rows], rtol, points=47, ends=known
                )
                sigma[rows] = s2
    # ε on the full grid at the answer, and one step below it (the full grid can only lower ε: where the step
    # below also meets the target, search again on the full grid)
    s_fin = np.where(np.isfinite(sigma), sigma, hi0)
    both = np.stack([s_fin, np.maximum(s_fin / (1.0 + rtol), lo0)], axis=1)
    grid_kw = {"orders": orders} if accountant == "rdp" else {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DpcalcWarning)
        final = epsilon(accountant, qf[:, None], both, tf[:, None], df[:, None], warn=False, **grid_kw, **kw)
        redo = np.isfinite(sigma) & (sigma > lo0) & (final.epsilon[:, 1] <= ef)
        # the coarse phase's upper end assumes a conversion never below Balle's (not so for Mironov's)
        miss = np.isfinite(sigma) & (final.epsilon[:, 0] > ef)
        redo |= miss
        if accountant == "rdp" and coarse.size >= 6:
            redo |= ~np.isfinite(sigma)  # the coarse grid missed the target: the full grid may still reach it
        if np.any(redo):
            rows = np.nonzero(redo)[0]
            hi_r = np.where(np.isfinite(sigma[rows]) & ~miss[rows], sigma[rows], hi0[rows])
            lo_r = np.where(miss[rows], sigma[rows], lo0[rows])
            s3, _ = _sigma_search(lambda s, r: full(s, rows[r]), ef[rows], lo_r, hi_r, rtol)
            sigma[rows] = s3
            s_fin = np.where(np.isfinite(sigma), sigma, hi0)
            final = epsilon(
                accountant, qf[:, None], s_fin[:, None], tf[:, None], df[:, None], warn=False, **grid_kw, **kw
            )
    final = Epsilon(*(np.asarray(v)[:, 0] for v in final))
    return sigma, tuple(final)
