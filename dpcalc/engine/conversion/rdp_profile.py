"""The privacy profile δ(ε) of a Rényi curve read through its optimal trade-off curve, for the risk questions
(``--advantage`` = δ(0), ``--prior π`` = δ at |logit π|, and the calibrations to them).

Why
---
The per-order conversion (:func:`dpcalc.engine.conversion.methods.delta_optimal`, the exact conversion of one
(α, ζ) pair, one direction) is minimised over the orders.  The trade-off curve of
:mod:`dpcalc.engine.conversion.rdp_tradeoff` meets every order's constraint at once and in both directions,
so its profile can only be lower: with T(a) the largest true-positive rate of any test at false-positive
rate a,

    δ(ε) = sup over events S of P(S) − e^ε Q(S) <= sup_a T(a) − e^ε a

(the test that rejects on S has FPR Q(S) and TPR P(S); the constraints hold in both directions, so the same
bound holds for E_{e^ε}(Q‖P)).  This is the usual duality between trade-off curves and privacy profiles
(Dong, Roth & Su 2022, JRSS B, arXiv:1905.02383, Prop. 2.12).  For ρ = 2 zCDP the advantage falls from 0.868
(the best of dpcalc's 225 orders) to 0.834; for small ρ the two agree, and the smaller of the two is returned.

Certifying the supremum
-----------------------
T is concave and non-decreasing (the feasible set of (a, 1 − β) is convex), and it is known only within a
certified bracket low <= T <= up at the points of a grid.  On each interval the supremum of T(a) − e^ε a is
bounded by lines that lie above T there (:func:`_interval_bounds`: the monotone bound up_{i+1} − e^ε a_i, the
neighbouring chords extended into the interval, and their mixtures), each line's maximum taken at the
interval's ends, so that no point is solved for.  The largest of these over the intervals bounds the supremum,
whatever the grid.  The grid is refined where that bound is loose: the intervals whose bound exceeds the best
grid point's value are split (linearly, or geometrically toward 0), round after round, until the bound is
within RTOL of that value or ROUNDS are spent.  Refining only tightens; stopping early only costs tightness.
e^ε is rounded down before the products, each interval's bound carries SLACK for rounding, and the result is
rounded up.
"""

from __future__ import annotations

import numpy as np

from dpcalc.engine._numerics import next_up, sorted_unique
from dpcalc.engine.conversion import rdp_tradeoff
from dpcalc.engine.conversion.methods import delta_from_curve
from dpcalc.engine.orders import DEFAULT_ORDERS

#: the first grid: 0, half decades from 1e-30 to 1e-1, then steps of 0.05 up to 1
_GRID = sorted_unique(np.concatenate([[0.0], np.logspace(-30.0, -1.0, 59), np.linspace(0.1, 1.0, 19)]))
#: each round splits every interval whose bound is loose for some ε (at most KEEP, the loosest) in SPLIT pieces
KEEP = 48
SPLIT = 16
ROUNDS = 12
#: stop when the bound is within RTOL (relative, with an absolute floor ATOL) of the best grid point
RTOL = 1e-7
ATOL = 1e-12
#: rounding allowance per interval bound, relative to the magnitudes that enter it
SLACK = 16.0 * np.finfo(float).eps
_EPS = np.finfo(float).eps


def _split(lo, hi):
    """SPLIT − 1 interior points of each interval (rows): geometric where 0 < lo and hi/lo > 4, toward 0 by
    decades where lo = 0, linear otherwise."""
    t = np.arange(1, SPLIT) / SPLIT
    lin = lo[:, None] + (hi - lo)[:, None] * t
    with np.errstate(divide="ignore", invalid="ignore"):
        geo = np.exp(np.log(lo)[:, None] * (1.0 - t) + np.log(hi)[:, None] * t)
        zero = hi[:, None] * 10.0 ** (-2.0 * (SPLIT - np.arange(1, SPLIT)))
    pts = np.where((lo > 0)[:, None] & (hi > 4.0 * lo)[:, None], geo, lin)
    pts = np.where((lo == 0)[:, None], zero, pts)
    return pts.ravel()


def _interval_bounds(a, low, up, w):
    """Per interval [a_i, a_{i+1}] (rows) and ε (columns), a certified upper bound on sup (T(a) − w a) over the
    interval, for a concave non-decreasing T with low <= T <= up at the grid ``a``: the smallest of

    - the monotone bound up_{i+1} − w a_i;
    - the chord of [a_{i−1}, a_i] extended to the right, A(a) = up_i + s_L (a − a_i) with
      s_L = (up_i − low_{i−1})/(a_i − a_{i−1}) (concavity: T lies below it right of a_i);
    - the chord of [a_{i+1}, a_{i+2}] extended to the left, B(a) = up_{i+1} − s_R (a_{i+1} − a);
    - λA + (1 − λ)B for the λ in [0, 1] that levels the slope (min(A, B) <= any mixture),

    each line's maximum over the interval taken at its ends (a linear function's maximum is at an end, so no
    point is solved for and a wrong λ only loosens), plus SLACK for rounding."""
    n = a.size
    lo, hi = a[:-1, None], a[1:, None]
    width = np.diff(a)[:, None]
    u0, u1 = up[:-1, None], up[1:, None]
    bound = u1 - w * lo  # monotone
    inf = np.full((n - 1, 1), np.inf)
    s_l = inf.copy()
    s_l[1:, 0] = (up[1:-1] - low[:-2]) / np.diff(a)[:-1]
    s_r = np.full((n - 1, 1), -np.inf)
    s_r[:-1, 0] = (low[2:] - up[1:-1]) / np.diff(a)[1:]
    has_l, has_r = np.isfinite(s_l), np.isfinite(s_r)
    with np.errstate(invalid="ignore", over="ignore"):
        s_l0, s_r0 = np.where(has_l, s_l, 0.0), np.where(has_r, s_r, 0.0)
        a0 = u0 - w * lo  # A at the left end, minus w a
        a1 = u0 + s_l0 * width - w * hi
        b0 = u1 - s_r0 * width - w * lo
        b1 = u1 - w * hi
        line_l = np.where(has_l, np.maximum(a0, a1), np.inf)
        line_r = np.where(has_r, np.maximum(b0, b1), np.inf)
        lam = np.clip((w - s_r0) / (s_l0 - s_r0), 0.0, 1.0)
        lam = np.where(np.isfinite(lam), lam, 0.5)
        mix = np.maximum(lam * a0 + (1.0 - lam) * b0, lam * a1 + (1.0 - lam) * b1)
        mix = np.where(has_l & has_r, mix, np.inf)
        scale = 1.0 + np.abs(u0) + np.abs(u1) + (np.abs(s_l0) + np.abs(s_r0)) * width + w * hi
    best = np.minimum(np.minimum(bound, line_l), np.minimum(line_r, mix))
    return best + SLACK * scale


def delta_from_tpr(bracket, eps) -> np.ndarray:
    """Certified upper bound on sup_a (T(a) − e^ε a) at each ``eps`` (any shape, >= 0), for a concave
    non-decreasing true-positive-rate curve T on [0, 1] with T <= 1, given ``bracket(a)`` = (low, up) with
    low <= T(a) <= up elementwise for an array of false-positive rates a in [0, 1] (the bound above; the
    same shape as ``eps``, in [0, 1])."""
    eps = np.asarray(eps, dtype=float)
    w = np.exp(eps.ravel()) * (1.0 - 4.0 * _EPS)  # e^ε rounded down
    a = _GRID.copy()
    low, up = (np.asarray(v, dtype=float) for v in bracket(a))
    for round_ in range(ROUNDS + 1):
        point = np.max(low[:, None] - a[:, None] * w, axis=0)  # the best grid point per ε (a guide)
        bound = _interval_bounds(a, low, up, w)  # (intervals, ε)
        upper = np.max(bound, axis=0)
        target = np.maximum(point, 0.0) + ATOL + RTOL * np.abs(point)
        loose = upper > target
        if not np.any(loose) or round_ == ROUNDS:
            break
        excess = np.max(bound[:, loose] - target[loose], axis=1)
        pick = np.flatnonzero(excess > 0)
        pick = pick[np.argsort(-excess[pick], kind="stable")[:KEEP]]
        new = _split(a[pick], a[pick + 1])
        new = np.setdiff1d(new[(new > 0) & (new < 1)], a)
        if new.size == 0:
            break
        more = [np.asarray(v, dtype=float) for v in bracket(new)]
        a = np.concatenate([a, new])
        low, up = np.concatenate([low, more[0]]), np.concatenate([up, more[1]])
        o = np.argsort(a, kind="stable")
        a, low, up = a[o], low[o], up[o]
    return np.clip(next_up(upper), 0.0, 1.0).reshape(eps.shape)


def delta_from_rdp(orders, curve, eps, *, kl=None) -> np.ndarray:
    """Certified δ(ε) of a mechanism that is (λ, ρ(λ))-RDP at each order of ``orders`` ((n,), > 1) with the
    curve ``curve`` ((n,)) and optionally KL <= ``kl``: the smaller of the per-order optimal conversion and
    the profile of the optimal trade-off curve (:func:`delta_from_tpr` of
    :func:`dpcalc.engine.conversion.rdp_tradeoff.tpr_bracket_from_rdp`).  ``eps``: any shape, >= 0."""
    orders = np.asarray(orders, dtype=float)
    curve = np.asarray(curve, dtype=float)
    eps = np.asarray(eps, dtype=float)
    per_order = np.asarray(delta_from_curve(orders, curve, eps, "optimal").value, dtype=float)
    return np.minimum(per_order, _dual(orders, curve, eps, kl))


def _dual(orders, curve, eps, kl):
    return delta_from_tpr(lambda a: rdp_tradeoff.tpr_bracket_from_rdp(orders, curve, a, kl=kl), eps)


#: zCDP's orders for the trade-off curve: λ − 1 geometric from 1e-3 to 1e4 (the conversion at any set of
#: orders is an upper bound; the best order for a test at FPR a sits near sqrt(log(1/a)/ρ))
ZCDP_ORDERS = 1.0 + np.geomspace(1e-3, 1e4, 120)


def delta_from_zcdp(rho: float, eps) -> np.ndarray:
    """Certified δ(ε) under ρ-zCDP (Bun & Steinke 2016, arXiv:1605.02065, Def. 1.1): the smaller of the
    per-order optimal conversion of the curve ρλ at dpcalc's orders and the profile of the optimal trade-off
    curve at :data:`ZCDP_ORDERS` with KL <= ρ (the curve's limit at λ → 1)."""
    rho = float(rho)
    eps = np.asarray(eps, dtype=float)
    orders = np.asarray(DEFAULT_ORDERS, dtype=float)
    per_order = np.asarray(delta_from_curve(orders, rho * orders, eps, "optimal").value, dtype=float)
    return np.minimum(per_order, _dual(ZCDP_ORDERS, rho * ZCDP_ORDERS, eps, rho))
