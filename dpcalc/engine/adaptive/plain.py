"""The plain (non-adaptive) RDP ε of a running sum, row after row, with the work of the exact conversion cut.

The odometer prints, next to its own bound, the plain RDP bound ``min_α ε(α, r(α), δ)`` of the running
sums ``r`` (docs/math.md §1.6), which by the exact conversion of Asoodeh et al. (:func:`dpcalc.engine.
conversion.methods.eps_optimal_min`) costs a Newton solve per order and row: 38 orders × 100,000 rows
is minutes.  :class:`PlainBound` gives *the same numbers* (the same floats, orders and edge flags) for a
fraction of it, using that the running sums only grow (Lécuyer 2021, Thm 2's setting: every step adds a
non-negative RDP curve; docs/math.md §6) and that the exact ε is non-decreasing in ζ:

* ``eps_optimal_min`` estimates every order of a row (Newton) and certifies only the orders whose
  estimate is within ``TIE_RTOL`` of the row's lowest value (estimates and closed forms); the others keep
  the closed form.  Only the minimum over the orders, its order and the edge flag are used here.
* An order whose estimate is far above the row's minimum is never certified, so its estimate is not
  needed — if we can tell it is far above *without* estimating it.  A lower bound on its exact ε is its
  estimate at an earlier row (an *anchor*: every ``ANCHOR_EVERY``-th row is estimated at every order),
  because ε(α, ζ, δ) is non-decreasing in ζ and ``r`` only grows; an upper bound on the row's minimum is
  the estimate at the anchor's best order (estimated at every row) or any closed form.
* An order is skipped iff its floor exceeds that upper bound by the factor ``1 + MARGIN`` (1e-3), six
  orders of magnitude above the estimate's own accuracy (within 1e-10 relative of the exact value,
  :mod:`dpcalc.engine.conversion.optimal`), and ``TIE_RTOL`` (1e-6).  Such an order would neither be
  the row's lowest estimate nor a candidate for certification, so the certified candidates, hence the
  minimum, its order and the edge flag, are unchanged (tests/test_odometer_engine.py compares them
  with :func:`eps_from_curve` row by row).

Every step is elementwise (the solver's loops run over the still-active elements), so which elements
are computed together does not change any value.
"""

from __future__ import annotations

import numpy as np

from dpcalc.engine.conversion import methods as conversions
from dpcalc.engine.conversion import optimal as oc

#: Every this many rows, every order is estimated (the floors of the rows that follow).
ANCHOR_EVERY = 32
#: An order is skipped only if its floor is above (1 + MARGIN) × an upper bound on the row's minimum.
MARGIN = 1e-3


class PlainBound:
    """The plain RDP ε (``conversion``) of running sums given batch by batch, in order (rows only grow).

    :meth:`rows` takes the next rows of running sums, shape (n, m), and returns
    :class:`~dpcalc.engine.conversion.methods.CurveBound` arrays of shape (n,), equal to
    ``eps_from_curve(alphas, sums, delta, method=conversion)``.
    """

    def __init__(self, alphas, delta: float, conversion: str = "optimal") -> None:
        self.alphas = np.asarray(alphas, dtype=float)
        self.delta = float(delta)
        self.conversion = conversion
        self._floor = None  # per-order floors (estimates at the last anchor; -inf where unknown)
        self._count = 0  # rows seen

    def rows(self, sums) -> conversions.CurveBound:
        s = np.asarray(sums, dtype=float).reshape(-1, self.alphas.size)
        if self.conversion != "optimal" or s.shape[0] == 0:
            self._count += s.shape[0]
            return conversions.eps_from_curve(self.alphas, s, self.delta, method=self.conversion)
        alphas, rdp, delta = conversions._curve_args(self.alphas, s, self.delta)
        conversions._check_delta(delta)
        values = self._optimal(alphas, rdp, delta)
        return conversions._best(alphas, values)

    def _optimal(self, alphas, rdp, delta) -> np.ndarray:
        """``eps_optimal_min(alphas, rdp, delta)`` at the minimum (see the module docstring)."""
        alpha, rdp, delta = conversions._prep_eps(alphas, rdp, delta)
        n, m = rdp.shape
        closed = conversions.eps_asoodeh(alpha, rdp, delta)
        out = closed.copy()
        work = (delta > 0) & (delta < 1) & (rdp > 0) & np.isfinite(rdp) & (alpha * delta < 1) & (closed > 0)
        work &= np.isfinite(closed)
        if not np.any(work):
            self._count += n
            return out
        est = np.full((n, m), np.inf)
        t = np.full((n, m), np.nan)
        done = np.zeros((n, m), dtype=bool)

        def estimate(mask):
            mask = mask & work & ~done
            if np.any(mask):
                est[mask], t[mask] = oc.eps_estimate(alpha[mask], rdp[mask], delta[mask], closed[mask])
                done[mask] = True

        index = self._count + np.arange(n)
        anchor = index % ANCHOR_EVERY == 0
        if self._floor is None:
            anchor[0] = True
        estimate(anchor[:, None] & np.ones((1, m), dtype=bool))
        known = done & np.isfinite(est)  # estimated, not failed (nan) nor unbounded
        floors_at = np.where(known, est, -np.inf)
        # the floor of each row: the estimates at its latest anchor (this batch's, or the carried one)
        last = np.maximum.accumulate(np.where(anchor, np.arange(n), -1))
        carried = np.full(m, -np.inf) if self._floor is None else self._floor
        floor = np.where((last >= 0)[:, None], floors_at[np.maximum(last, 0)], carried[None, :])
        rest = ~anchor
        if np.any(rest):
            # stage A: each row's most promising order by its floor, for an upper bound on its minimum
            has = np.any(np.isfinite(floor), axis=1)
            best = np.argmin(np.where(np.isfinite(floor), floor, np.inf), axis=1)
            first = np.zeros((n, m), dtype=bool)
            first[np.flatnonzero(rest & has), best[rest & has]] = True
            estimate(first)
            upper = np.min(closed, axis=1)
            got = first & done & ~np.isnan(est)
            upper = np.minimum(upper, np.min(np.where(got, est, np.inf), axis=1))
            # stage B: the orders not clearly above it
            far = floor > (1.0 + MARGIN) * upper[:, None] + 1e-9 * (1.0 + rdp)
            estimate(rest[:, None] & ~far)
        # from here exactly eps_optimal_min: skipped orders have est = ∞ (never lowest, never candidates)
        failed = work & done & np.isnan(est)
        ranked = np.where(work & ~failed, est, np.inf)
        lowest = np.min(np.minimum(ranked, closed), axis=-1, keepdims=True)
        cand = work & (failed | (ranked <= lowest * (1.0 + conversions.TIE_RTOL) + 1e-300))
        e0 = np.where(failed, closed, est)
        cert = oc.certify_eps(alpha[cand], rdp[cand], delta[cand], e0[cand], t[cand])
        out[cand] = np.where(np.isnan(cert), closed[cand], np.minimum(cert, closed[cand]))
        if np.any(anchor):
            self._floor = floors_at[np.flatnonzero(anchor)[-1]].copy()
        self._count += n
        return out
