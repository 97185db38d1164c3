"""ε of a total Rényi-DP curve: the minimum over orders of a per-order conversion (docs/math.md §1.6), the
conversion used by the RDP accountants of DP-SGD (:mod:`dpcalc.engine.dpsgd.accounting`) and of random
allocation (:mod:`dpcalc.engine.mechanisms.random_allocation.rdp`).
"""

from __future__ import annotations

import numpy as np

from dpcalc.engine.conversion import methods as conversions
from dpcalc.errors import InputError

CONVERSIONS = ("optimal", "balle", "mironov")
#: The exact per-order conversion is evaluated on this many orders either side of the closed form's best order.
OPTIMAL_STRIDE = 8


def eps_of_curve(alphas, total_rdp, delta, conversion="optimal", closed=None):
    """min over orders of the per-order conversion of a total RDP curve (docs/math.md §1.6).

    ``balle`` and ``mironov`` use every order.  ``optimal`` (the exact per-order conversion of Asoodeh et al.,
    §1.3, costly per order) is evaluated on the 2·OPTIMAL_STRIDE+1 orders around the best order of its
    closed-form bound (``asoodeh``, evaluated on every order), and again around the best exact order where
    that lies at the window's edge; the result is the smaller of that and the closed form: a valid bound,
    never above Balle's; adding orders can only lower it.
    ``closed``: the per-order values of the closed form it starts from (``asoodeh`` for ``optimal``, else the
    conversion itself; :func:`conversions.eps_per_order`), if the caller has them.
    Returns a :class:`conversions.CurveBound`.
    """
    check_conversion(conversion)
    alphas = np.asarray(alphas, dtype=float)
    if conversion != "optimal":
        return conversions.eps_from_curve(alphas, total_rdp, delta, conversion, per_order=closed)
    base = conversions.eps_from_curve(alphas, total_rdp, delta, closed_form(conversion), per_order=closed)
    m = alphas.size
    shape = base.value.shape
    rdp_b = np.broadcast_to(total_rdp, shape + (m,)).reshape(-1, m)
    d_b = np.broadcast_to(np.asarray(delta, dtype=float), shape).reshape(-1)
    n = d_b.size
    best = base.value.reshape(-1).copy()
    index = base.index.reshape(-1).copy()

    def try_orders(rows, idx):
        """Evaluate the exact conversion at orders ``idx`` (len(rows), k) of the given rows; keep improvements."""
        z = rdp_b[rows[:, None], idx]
        d = np.broadcast_to(d_b[rows, None], z.shape)
        vals = np.where(np.isfinite(z), conversions.eps_optimal_min(alphas[idx], z, d), np.inf)
        j = np.argmin(vals, axis=1)
        v = vals[np.arange(rows.size), j]
        better = v < best[rows]
        best[rows] = np.where(better, v, best[rows])
        index[rows] = np.where(better, idx[np.arange(rows.size), j], index[rows])

    # the exact conversion on the orders around the best order of its closed-form bound (Asoodeh et al.,
    # which follows the exact one closely); a second window where the best lies at the first one's edge
    w = _window(m)
    start = np.clip(np.maximum(index, 0) - OPTIMAL_STRIDE, 0, m - w)
    rows = np.arange(n)
    try_orders(rows, start[:, None] + np.arange(w))
    edge = ((index == start) & (start > 0)) | ((index == start + w - 1) & (start < m - w))
    if np.any(edge):
        rows = np.nonzero(edge)[0]
        start2 = np.clip(index[rows] - OPTIMAL_STRIDE, 0, m - w)
        try_orders(rows, start2[:, None] + np.arange(w))
    value = best.reshape(shape)
    index = index.reshape(shape)
    alpha = np.where(index >= 0, alphas[np.maximum(index, 0)], np.nan)
    at_edge = (index >= 0) & ((index == 0) | (index == m - 1))
    return conversions.CurveBound(value, alpha, index, at_edge)


def check_conversion(conversion: str) -> None:
    """:class:`InputError` naming ``--conversion`` unless it is one of :data:`CONVERSIONS`."""
    if conversion not in CONVERSIONS:
        raise InputError(f"--conversion: must be one of {', '.join(CONVERSIONS)}, got {conversion!r}")


def closed_form(conversion: str) -> str:
    """The closed form whose per-order values :func:`eps_of_curve` minimises first: Asoodeh et al.'s for
    ``optimal`` (its windows start from it), else the conversion itself."""
    return "asoodeh" if conversion == "optimal" else conversion


def _window(m: int) -> int:
    """The number of orders the exact conversion is evaluated on around a best order (all, if fewer)."""
    return min(2 * OPTIMAL_STRIDE + 1, m)


#: Slack on the comparison of a closed form at a lower bound of ζ with the best value: covers the closed
#: forms' last-ulp departures from monotonicity in ζ.
MATTER_RTOL = 1e-9


def orders_that_matter(alphas, deferred, total_up, total_low, delta, conversion="optimal"):
    """Which deferred orders each row's :func:`eps_of_curve` may depend on (docs/math.md §1.6).

    ``total_up`` (rows × orders): the curve with the ``deferred`` orders (bool per order) at an upper bound and
    every other order at its final value; ``total_low``: lower bounds on the final curve at the deferred
    orders.  The closed form's best order over the curve is the best of the orders not deferred, or a
    deferred order whose closed form at its lower bound is not above that best value (the closed forms
    increase with ζ).  ``optimal`` then evaluates the exact conversion in a window around the best order and in
    a second window around the best order of the first: every deferred order those windows can reach from a
    candidate is needed; ``balle`` and ``mironov`` need the candidates only.  Returns ``(need, closed)``:
    ``need`` (rows × orders, bool) and the closed form's per-order values of ``total_up`` (to be reused where
    the curve does not change).
    """
    check_conversion(conversion)
    alphas = np.asarray(alphas, dtype=float)
    kind = closed_form(conversion)
    closed = conversions.eps_per_order(alphas, total_up, delta, kind)
    m = alphas.size
    shape = closed.shape[:-1]
    flat = closed.reshape(-1, m)
    n = flat.shape[0]
    cols = np.flatnonzero(deferred)
    need = np.zeros((n, m), dtype=bool)
    if cols.size == 0 or n == 0:
        return need.reshape(shape + (m,)), closed
    known = np.where(deferred | np.isnan(flat), np.inf, flat)
    k_best = np.argmin(known, axis=1)
    v_best = known[np.arange(n), k_best]
    d = np.broadcast_to(np.asarray(delta, dtype=float), shape).reshape(-1)
    low = conversions.eps_per_order(alphas[cols], np.reshape(total_low, (-1, m))[:, cols], d, kind)
    with np.errstate(invalid="ignore", over="ignore"):
        cand = ~(low > v_best[:, None] * (1.0 + MATTER_RTOL) + 1e-300)  # nan: a candidate
    if conversion != "optimal":
        need[:, cols] = cand
        return need.reshape(shape + (m,)), closed
    lo = np.minimum(k_best, np.min(np.where(cand, cols, m), axis=1))
    hi = np.maximum(k_best, np.max(np.where(cand, cols, -1), axis=1))
    w = _window(m)
    reach_lo = np.clip(np.clip(lo - OPTIMAL_STRIDE, 0, m - w) - OPTIMAL_STRIDE, 0, m - w)
    reach_hi = np.clip(np.clip(hi - OPTIMAL_STRIDE, 0, m - w) + w - 1 - OPTIMAL_STRIDE, 0, m - w) + w - 1
    need[:, cols] = (cols >= reach_lo[:, None]) & (cols <= reach_hi[:, None])
    return need.reshape(shape + (m,)), closed
