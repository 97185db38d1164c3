"""Small vectorised root finding and 1-D minimisation (numpy only; replaces scipy.optimize).

Every routine works elementwise on arrays, with no Python loop over elements: the loop is over
iterations only.  Root finders return a *bracket* ``(lo, hi)`` that contains the root, so a caller
can take the side that is safe for privacy (e.g. ``hi`` for an ε that must not be under-reported).
"""

from __future__ import annotations

import numpy as np


def bisect(f, lo, hi, *, increasing: bool = True, xtol: float = 0.0, rtol: float = 4e-16, maxiter: int = 200):
    """Bracket the sign change of a monotone ``f`` on ``[lo, hi]`` (elementwise).

    ``f`` maps an array of the broadcast shape of ``lo``/``hi`` to values of the same shape.
    With ``increasing=True`` the function is assumed to satisfy ``f(lo) <= 0 <= f(hi)``;
    the returned ``(lo, hi)`` keeps ``f(lo) <= 0 < f(hi)`` (resp. the mirrored statement for
    ``increasing=False``: ``f(lo) >= 0 > f(hi)``).  Iteration stops elementwise once
    ``hi - lo <= xtol + rtol * |hi|``.  Callers check the end conditions themselves (where ``f``
    does not change sign the bracket collapses onto one end).

    NaN values of ``f`` are treated as "too far" (as if positive for an increasing ``f``), which
    keeps the bracket on the finite side.
    """
    lo, hi = np.broadcast_arrays(np.asarray(lo, dtype=float), np.asarray(hi, dtype=float))
    lo = lo.copy()
    hi = hi.copy()
    for _ in range(maxiter):
        width = hi - lo
        active = width > xtol + rtol * np.abs(hi)
        if not np.any(active):
            break
        mid = lo + 0.5 * width
        fm = np.asarray(f(mid), dtype=float)
        with np.errstate(invalid="ignore"):
            below = (fm <= 0) if increasing else (fm >= 0)
        below &= ~np.isnan(fm)
        lo = np.where(active & below, mid, lo)
        hi = np.where(active & ~below, mid, hi)
    return lo, hi


def bisect_active(
    f, lo, hi, *, increasing: bool = True, xtol: float = 0.0, rtol: float = 4e-16, maxiter: int = 200
):
    """:func:`bisect` that evaluates only the elements still narrowing: ``f(x, idx)`` receives the midpoints of
    the active elements and their indices into the 1-D arrays ``lo``/``hi`` (so that per-element data can be
    taken with ``idx``).  The same updates, the same stopping rule and the same guarantees as :func:`bisect`,
    element by element; an iteration costs what its active elements cost (a bracket that starts tight for
    most elements and wide for a few is not paid for at the full size each time)."""
    lo = np.array(lo, dtype=float, copy=True).ravel()
    hi = np.array(hi, dtype=float, copy=True).ravel()
    idx = np.nonzero(hi - lo > xtol + rtol * np.abs(hi))[0]
    for _ in range(maxiter):
        if idx.size == 0:
            break
        la, ha = lo[idx], hi[idx]
        mid = la + 0.5 * (ha - la)
        fm = np.asarray(f(mid, idx), dtype=float)
        with np.errstate(invalid="ignore"):
            below = (fm <= 0) if increasing else (fm >= 0)
        below &= ~np.isnan(fm)
        la = np.where(below, mid, la)
        ha = np.where(below, ha, mid)
        lo[idx], hi[idx] = la, ha
        idx = idx[ha - la > xtol + rtol * np.abs(ha)]
    return lo, hi


_INVPHI = (np.sqrt(5.0) - 1.0) / 2.0


def golden_min(f, lo, hi, *, iters: int = 90):
    """Minimise a unimodal ``f`` on ``[lo, hi]`` elementwise by golden-section search.

    Returns ``(x, f(x))`` at the best point evaluated.  ``f`` must accept arrays of the broadcast
    shape.  90 iterations shrink the interval by a factor of about 1.6e-19.
    """
    a, b = np.broadcast_arrays(np.asarray(lo, dtype=float), np.asarray(hi, dtype=float))
    a = a.copy()
    b = b.copy()
    c = b - _INVPHI * (b - a)
    d = a + _INVPHI * (b - a)
    fc = np.asarray(f(c), dtype=float)
    fd = np.asarray(f(d), dtype=float)
    for _ in range(iters):
        left = fc < fd  # the minimum lies in [a, d]
        a = np.where(left, a, c)
        b = np.where(left, d, b)
        new_c = np.where(left, b - _INVPHI * (b - a), d)
        new_d = np.where(left, c, a + _INVPHI * (b - a))
        fnew = np.asarray(f(np.where(left, new_c, new_d)), dtype=float)
        fc, fd = np.where(left, fnew, fd), np.where(left, fc, fnew)
        c, d = new_c, new_d
    x = np.where(fc < fd, c, d)
    return x, np.minimum(fc, fd)
