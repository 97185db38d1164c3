"""A vectorised multisection search for the boundary of a monotone predicate (shared by the noise
calibration and the step budget of DP-SGD)."""

from __future__ import annotations

import numpy as np


def multisect(f, lo, hi, done, *, points, rounds, integer=False, log=True):
    """Vectorised search for the boundary of a monotone predicate ``f(x) -> bool`` (True = within target,
    True for large x): keeps ``f(lo) False, f(hi) True`` and shrinks ``[lo, hi]`` by evaluating ``points``
    interior values per round (one vectorised call of shape (N, points)).  ``done(lo, hi)`` says where to stop.
    """
    lo = lo.astype(float).copy()
    hi = hi.astype(float).copy()
    for _ in range(rounds):
        active = ~done(lo, hi)
        if not np.any(active):
            break
        t = np.arange(1, points + 1) / (points + 1.0)
        if log:
            x = np.exp(np.log(lo)[:, None] + t * (np.log(hi) - np.log(lo))[:, None])
        else:
            x = lo[:, None] + t * (hi - lo)[:, None]
        if integer:
            x = np.floor(x)
        x = np.clip(x, lo[:, None], hi[:, None])
        ok = f(x, active)  # (N, points) bool; rows not active may be anything
        # first True (ok is monotone in x): hi = that point, lo = the point before (or lo)
        first = np.argmax(ok, axis=1)
        anyok = np.any(ok, axis=1)
        new_hi = np.where(anyok, x[np.arange(x.shape[0]), first], hi)
        before = np.where(first > 0, x[np.arange(x.shape[0]), np.maximum(first - 1, 0)], lo)
        new_lo = np.where(anyok, before, x[:, -1])
        lo = np.where(active, new_lo, lo)
        hi = np.where(active, new_hi, hi)
    return lo, hi


#: Integer orders used by the first, coarse phase of the rdp calibration (those present in the grid).
#: Orders either side of the best coarse order searched in the second phase of the rdp calibration.
