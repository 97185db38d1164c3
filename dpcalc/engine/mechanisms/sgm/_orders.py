"""The (pairs × orders) plumbing shared by :mod:`dpcalc.engine.mechanisms.sgm.poisson` and :mod:`dpcalc.engine.mechanisms.sgm.fixed_size`.

Input checks and de-duplication of (q, σ) pairs, the special cases q = 0, q = 1, σ = 0, the table of log A
at the integer orders with the log-convex chord bound between them (Hölder; WBK 2019 Cor. 10), rounding
up by one ulp and the suffix minimum over orders (RDP is non-decreasing in α).  docs/math.md §3.2–§3.3.
"""

from __future__ import annotations

import numpy as np

from dpcalc.engine._numerics import sorted_unique
from dpcalc.engine.orders import ORDER_MAX
from dpcalc.errors import InputError

#: above this noise multiplier a level is taken from the unsubsampled Gaussian (see :func:`_per_order`)
SIGMA_HUGE = 1e150


def _prepare(q, sigma, alphas):
    q = np.asarray(q, dtype=float)
    sigma = np.asarray(sigma, dtype=float)
    alphas = np.asarray(alphas, dtype=float).reshape(-1)
    if np.any(~(alphas > 1.0)):
        raise ValueError("orders must be > 1")
    if np.any(np.isfinite(alphas) & (alphas > ORDER_MAX)):
        raise InputError(f"alphas: every finite order must be at most {ORDER_MAX:g}")
    if np.any(~((q >= 0) & (q <= 1))):
        raise ValueError("q must lie in [0, 1]")
    if np.any(~(sigma >= 0)):
        raise ValueError("sigma must be >= 0")
    shape = np.broadcast_shapes(q.shape, sigma.shape)
    qf = np.broadcast_to(q, shape).reshape(-1)
    sf = np.broadcast_to(sigma, shape).reshape(-1)
    pairs, inverse = np.unique(np.stack([qf, sf], axis=1), axis=0, return_inverse=True)
    return shape, pairs[:, 0], pairs[:, 1], np.asarray(inverse).reshape(-1), alphas


def _per_order(shape, qu, su, inverse, alphas, generic, q_one):
    """Fill the (unique pairs × orders) table: special cases, then ``generic(q, σ, alphas)`` → (pairs, m)
    log A table for the pairs with 0 < q < 1, σ > 0; RDP = log A/(α − 1)."""
    m = alphas.size
    P = qu.size
    Qm = np.repeat(qu, m).reshape(P, m)
    Sm = np.repeat(su, m).reshape(P, m)
    Am = np.broadcast_to(alphas, (P, m))
    out = np.zeros((P, m))
    with np.errstate(divide="ignore", over="ignore"):
        out = np.where(Sm == 0, np.inf, out)
        out = np.where((Qm == 1) & (Sm > 0), q_one(Am, Sm), out)
    out = np.where(np.isposinf(Am) & (Qm > 0), np.inf, out)
    out = np.where(Qm == 0, 0.0, out)
    # σ = inf: no loss, the zeros stand.  σ above SIGMA_HUGE: every level lies below 1e-285 (α <= 1e15),
    # where the expansions' intermediate σ² leaves double range; the unsubsampled Gaussian's level bounds
    # it (subsampling only helps) and is used as it is.
    huge = (qu > 0) & (su > SIGMA_HUGE) & np.isfinite(su)
    if np.any(huge):
        hs = huge[:, None] & (Am > 0)
        with np.errstate(under="ignore"):
            out = np.where(hs, q_one(Am, np.where(hs, Sm, 1.0)), out)
    main = (qu > 0) & (qu < 1) & (su > 0) & (su <= SIGMA_HUGE)
    fin = np.isfinite(alphas)
    if np.any(main) and np.any(fin):
        af = alphas[fin]
        with np.errstate(over="ignore"):
            sub = generic(qu[main], su[main], af) / (af - 1.0)
        rows = out[main]
        rows[:, fin] = sub
        out[main] = rows
    # A level computed as exactly 0 where q > 0 and σ is finite has underflowed (the true level is
    # positive): 0 would read as "identical distributions" (ε = 0 even at δ = 0).  Replace it by the
    # unsubsampled Gaussian's level q_one(α, σ), which bounds it (subsampling only helps), or by the
    # smallest positive double where that underflows too (then the true level lies below it).
    lost = (out == 0) & (Qm > 0) & np.isfinite(Sm)
    if np.any(lost):
        with np.errstate(under="ignore"):
            full = np.nextafter(q_one(Am, np.where(lost, Sm, 1.0)), np.inf)
        out = np.where(lost, np.maximum(full, np.nextafter(0.0, 1.0)), out)
    return out[inverse].reshape(shape + (m,))


def _q_one(A, S):
    """The level at q = 1 (the Gaussian mechanism, α/(2σ²)) of the orders ``A`` and noise ``S``: the special
    case of :func:`_per_order`, and the bound on a subsampled level it falls back to."""
    return A / (2.0 * S) / S


def _int_table(q, sigma, alphas, log_a_int):
    """log A at the integer orders needed (the integer α's and ⌊α⌋, ⌊α⌋+1 of the others): returns
    ``lookup(k_array (m',)) -> (pairs, m')`` (log A_1 = 0), with those orders as ``lookup.orders``."""
    fl = np.floor(alphas)
    frac = fl != alphas
    ks = sorted_unique(np.concatenate([fl, fl[frac] + 1.0]))
    ks = ks[ks >= 2]
    P, n = q.size, ks.size
    table = log_a_int(np.repeat(q, n), np.repeat(sigma, n), np.tile(ks, P)).reshape(P, n)

    def lookup(k):
        idx = np.searchsorted(ks, np.maximum(k, 2.0))
        return np.where(k >= 2, table[:, idx], 0.0)

    lookup.orders = ks  # the integer orders in the table
    return lookup


def _interp_table(alphas, lookup):
    """Chord bound on log A_α between ⌊α⌋ and ⌈α⌉ (convexity of α ↦ log A_α; Hölder; WBK 2019 Cor. 10)."""
    lo = np.floor(alphas)
    t = alphas - lo
    la_lo, la_hi = lookup(lo), lookup(lo + 1.0)
    with np.errstate(invalid="ignore"):
        return np.where(np.isposinf(la_lo) | np.isposinf(la_hi), np.inf, (1.0 - t) * la_lo + t * la_hi)


def _round_up(x):
    """One ulp up (safe side), keeping exact zeros."""
    return np.where(x == 0, 0.0, np.nextafter(x, np.inf))


def _monotone(rdp, alphas):
    """RDP is non-decreasing in α, so a bound at a higher order bounds every lower one: suffix minimum."""
    order = np.argsort(alphas)
    r = rdp[..., order]
    r = np.minimum.accumulate(r[..., ::-1], axis=-1)[..., ::-1]
    out = np.empty_like(rdp)
    out[..., order] = r
    return out
