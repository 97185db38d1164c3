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


def eps_of_curve(alphas, total_rdp, delta, conversion="optimal"):
    """min over orders of the per-order conversion of a total RDP curve (docs/math.md §1.6).

    ``balle`` and ``mironov`` use every order.  ``optimal`` (the exact per-order conversion of Asoodeh et al.,
    §1.3, costly per order) is evaluated on the 2·OPTIMAL_STRIDE+1 orders around the best order of its
    closed-form bound (``asoodeh``, evaluated on every order), and again around the best exact order where
    that lies at the window's edge; the result is the smaller of that and the closed form: a valid bound,
    never above Balle's; adding orders can only lower it.
    Returns a :class:`conversions.CurveBound`.
    """
    if conversion not in CONVERSIONS:
        raise InputError(f"--conversion: must be one of {', '.join(CONVERSIONS)}, got {conversion!r}")
    alphas = np.asarray(alphas, dtype=float)
    if conversion != "optimal":
        return conversions.eps_from_curve(alphas, total_rdp, delta, conversion)
    base = conversions.eps_from_curve(alphas, total_rdp, delta, "asoodeh")
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
    w = min(2 * OPTIMAL_STRIDE + 1, m)
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
