"""The privacy loss of a Poisson-subsampled mechanism, from the base mechanism's (docs/math.md §7.1, §2.11).

Base pair (P, Q) with loss ``L = log dP/dQ`` (a symmetric :class:`LossModel`: the pair (Q, P) has the
same loss law, so ``L`` under Q is distributed as ``−L`` under P and ``Q(P = 0) = P(L = +∞)``).  With
add/remove neighbours and Poisson sampling at rate q the subsampled mechanism is dominated by the two
pairs (Zhu, Dong & Wang 2022, arXiv:2106.08567, dominating pairs of Poisson subsampling; the same pairs as for the subsampled Gaussian
of Mironov, Talwar & Zhang 2019):

* "remove" ``(P', Q)`` with ``P' = qP + (1−q)Q``: loss ``g(L) = log(1 − q + q e^L)`` (increasing in L,
  above ``log(1−q)``), law under P' = q·(law under P) + (1−q)·(law under Q): a point of the base with
  P-density p has P'-density ``p·(q + (1−q)e^{−L})``; Q's mass where P = 0 goes to the atom
  ``log(1−q)``, P's mass at +∞ stays at +∞ with weight q;
* "add" ``(Q, P')``: loss ``−g(L)`` under Q (P-density times ``e^{−L}``); Q's mass where P = 0 goes to
  the atom ``−log(1−q)``; no mass at +∞.

Both are monotone transforms of the base loss, so the base's piece (``x ↦ L(x)``) carries over with
the same ``x``; tail bounds use ``Q(L > l) <= min(e^{−l}P(L > l), P(L < −l))`` and
``Q(L < l) <= P(L > −l)`` (the second by symmetry).
"""

from __future__ import annotations

import math

import numpy as np

from dpcalc.engine.mechanisms.loss_models import LossModel, Piece
from dpcalc.errors import InputError

_EPS = float(np.finfo(float).eps)


def subsampled_model(base: LossModel, q: float, direction: str) -> LossModel:
    """The "remove" or "add" loss model of ``base`` under Poisson subsampling at rate ``q`` (module doc)."""
    q = float(q)
    if not (0.0 < q <= 1.0):
        raise InputError(f"q: the sampling rate must lie in (0, 1], got {q}")
    if direction not in ("remove", "add"):
        raise InputError(f"direction: must be 'remove' or 'add', got {direction!r}")
    if q == 1.0:
        return base
    lq, l1q = math.log(q), math.log1p(-q)

    def g(loss):  # log(1 − q + q e^L)
        with np.errstate(over="ignore", invalid="ignore"):
            return np.logaddexp(l1q, lq + np.asarray(loss, dtype=float))

    def ginv(y):  # the l with g(l) = y; −inf at or below log(1−q)
        y = np.asarray(y, dtype=float)
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            v = y + np.log(-np.expm1(l1q - np.where(y > l1q, y, l1q + 1.0))) - lq
        return np.where(y > l1q, v, -np.inf)

    def frac(loss):  # q e^L/(1 − q + q e^L), the slope of g, in (0, 1)
        with np.errstate(over="ignore", invalid="ignore"):
            return np.exp(lq + loss - g(loss))

    def fl(v):
        return float(np.asarray(v).reshape(-1)[0])

    def q_above(v):  # upper bound on log Q(v < L < ∞) (finite losses)
        a = base.log_tail_below(-v) if v > -math.inf else base.log_tail_below(math.inf)
        b = -v + base.log_tail_above(v) if v > -math.inf else math.inf
        return min(a, b, 0.0)

    def q_below(v):  # upper bound on log Q(L < v), finite losses
        return min(base.log_tail_above(-v), 0.0) if v < math.inf else 0.0

    pc = base.piece
    inf_mass = float(base.inf_mass)
    if direction == "remove":
        loc = g(base.atoms_loc)
        with np.errstate(divide="ignore", over="ignore", invalid="ignore"):
            mass = base.atoms_mass * np.exp(np.logaddexp(lq, l1q - base.atoms_loc))
        if not np.all(np.isfinite(mass)):  # an atom's P-mass underflowed where e^{-L} overflows: lost
            raise OverflowError("an atom's mass under subsampling is beyond double range")
        if inf_mass > 0:
            loc, mass = np.append(loc, l1q), np.append(mass, (1.0 - q) * inf_mass)
        piece = None
        if pc is not None:
            piece = Piece(
                x_lo=pc.x_lo,
                x_hi=pc.x_hi,
                increasing=pc.increasing,
                loss=lambda x: g(pc.loss(x)),
                x_of_loss=lambda v: pc.x_of_loss(ginv(v)),
                dloss=lambda x0, dx: np.log1p(frac(pc.loss(x0)) * np.expm1(pc.dloss(x0, dx))),
                log_pdf=lambda x: pc.log_pdf(x) + np.logaddexp(lq, l1q - pc.loss(x)),
                scale=pc.scale,
                tilt_rate=pc.tilt_rate,
                unbounded=pc.unbounded,
            )

        def sf_above(b):
            lb = fl(ginv(b))
            p_part = lq + (base.log_sf_above(lb) if lb > -math.inf else 0.0)
            return float(np.logaddexp(p_part, l1q + q_above(lb)))

        def cdf_below(a):
            la = fl(ginv(a))
            if la == -math.inf:
                return -math.inf
            return float(np.logaddexp(lq + base.log_cdf_below(la), l1q + q_below(la)))

        lo = min(fl(g(base.loss_min)), l1q) if inf_mass > 0 else fl(g(base.loss_min))
        return LossModel(
            name=f"poisson-remove(q={q:g},{base.name})",
            atoms_loc=np.asarray(loc, dtype=float),
            atoms_mass=np.asarray(mass, dtype=float),
            piece=piece,
            inf_mass=q * inf_mass,
            loss_min=_widen(lo, -1.0),
            loss_max=_widen(fl(g(base.loss_max)), 1.0),
            log_sf_above=sf_above if piece is not None else None,
            log_cdf_below=cdf_below if piece is not None else None,
            dominates_only=base.dominates_only,  # subsampling a dominating pair gives one that dominates
        )

    loc = -g(base.atoms_loc)
    with np.errstate(over="ignore"):
        mass = base.atoms_mass * np.exp(-base.atoms_loc)
    if inf_mass > 0:
        loc, mass = np.append(loc, -l1q), np.append(mass, inf_mass)
    piece = None
    if pc is not None:
        sgn = 1.0 if pc.increasing else -1.0

        def dloss_add(x0, dx):  # towards smaller base loss: x1 = x0 − sgn·dx, d = L(x0) − L(x1) >= 0
            d = pc.dloss(x0 - sgn * dx, dx)
            return -np.log1p(frac(pc.loss(x0)) * np.expm1(-d))

        piece = Piece(
            x_lo=pc.x_lo,
            x_hi=pc.x_hi,
            increasing=not pc.increasing,
            loss=lambda x: -g(pc.loss(x)),
            x_of_loss=lambda v: pc.x_of_loss(ginv(-np.asarray(v, dtype=float))),
            dloss=dloss_add,
            log_pdf=lambda x: pc.log_pdf(x) - pc.loss(x),
            scale=pc.scale,
            tilt_rate=pc.tilt_rate,
            unbounded=pc.unbounded,
        )

    def sf_above_add(b):  # Q(−g(L) > b) = Q(L < ginv(−b))
        lb = fl(ginv(-b))
        return -math.inf if lb == -math.inf else q_below(lb)

    def cdf_below_add(a):  # Q(−g(L) < a) = Q(L > ginv(−a))
        return q_above(fl(ginv(-a)))

    hi = -fl(g(base.loss_min))
    if inf_mass > 0:
        hi = max(hi, -l1q)
    lo = -fl(g(base.loss_max))
    return LossModel(
        name=f"poisson-add(q={q:g},{base.name})",
        atoms_loc=np.asarray(loc, dtype=float),
        atoms_mass=np.asarray(mass, dtype=float),
        piece=piece,
        inf_mass=0.0,
        loss_min=_widen(lo, -1.0),
        loss_max=_widen(hi, 1.0),
        log_sf_above=sf_above_add if piece is not None else None,
        log_cdf_below=cdf_below_add if piece is not None else None,
        dominates_only=base.dominates_only,
    )


def _widen(v: float, sign: float) -> float:
    """``v`` moved outwards by a few ulps of its size (a bound on the finite losses stays a bound)."""
    return v + sign * 8.0 * _EPS * (abs(v) + 1.0) if math.isfinite(v) else v
