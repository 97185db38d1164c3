"""A mixture of privacy-loss pairs with the component revealed (docs/math.md §7.8; numpy only).

If a mechanism first draws a component ``k`` with probability ``w_k`` — the same on both neighbouring
datasets, independent of the data — and then runs pair ``(P_k, Q_k)``, the mechanism that also publishes
``k`` has the pair ``(Σ w_k δ_k ⊗ P_k, Σ w_k δ_k ⊗ Q_k)``.  Its privacy loss under ``P`` is ``L_k`` with
probability ``w_k``, so its privacy profile is the weighted mean of the components' profiles,

    δ(ε) = Σ_k w_k δ_k(ε),

and its Rényi moments are the weighted means of theirs.  The mechanism that hides ``k`` is a
post-processing of it, so this pair **dominates** it (joint convexity of the hockey-stick divergence;
the mixture of PLDs of dp_accounting's ``compute_mixture``, used for truncated Poisson sampling in
arXiv:2508.15089, 2025).

A :class:`MixtureLossModel` offers the parts of :class:`~dpcalc.engine.mechanisms.loss_models.LossModel`
that the accountant reads (cumulants, tails, loss range, mass at +∞); the discretiser puts every
component on one grid and adds the weighted masses (each component's discrete pair dominates it, so the
mixture of them dominates the mixture).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from dpcalc.engine.mechanisms.loss_models import LossModel
from dpcalc.errors import InputError


@dataclass
class MixtureLossModel:
    """Components ``models`` drawn with probabilities ``weights`` (positive, summing to 1), revealed."""

    name: str
    weights: tuple
    models: tuple

    def __post_init__(self):
        w = np.asarray(self.weights, dtype=float)
        if len(self.models) != w.size or w.size == 0:
            raise InputError("mixture: give one weight per component")
        if np.any(~(w > 0)) or abs(float(np.sum(w)) - 1.0) > 1e-12:
            raise InputError("mixture: the weights must be positive and sum to 1")
        self.weights = tuple(float(x) for x in w)
        self.models = tuple(self.models)

    #: No cheaper form of the mixture is offered (:attr:`~dpcalc.engine.mechanisms.loss_models.LossModel.cut`).
    cut = None

    @property
    def dominates_only(self) -> bool:
        """Always: the revealed pair (two or more components, :func:`mixture`) dominates the mechanism that
        hides the component and is in general not attained by it, so a bracket's lower end and estimate
        would be of the revealed mixture, not of the mechanism (docs/math.md §7.8)."""
        return True

    @property
    def inf_mass(self) -> float:
        return float(sum(w * m.inf_mass for w, m in zip(self.weights, self.models)))

    @property
    def loss_min(self) -> float:
        return min(m.loss_min for m in self.models)

    @property
    def loss_max(self) -> float:
        return max(m.loss_max for m in self.models)

    def _log_sum(self, values) -> float:
        with np.errstate(divide="ignore"):
            terms = [math.log(w) + float(v) for w, v in zip(self.weights, values)]
        return float(np.logaddexp.reduce(terms))

    def log_tail_above(self, b: float) -> float:
        """Upper bound on ``log P(b < L < ∞)``: the weighted sum of the components' bounds."""
        return self._log_sum(m.log_tail_above(b) for m in self.models)

    def log_tail_below(self, a: float) -> float:
        """Upper bound on ``log P(L < a)``."""
        return self._log_sum(m.log_tail_below(a) for m in self.models)

    def log_mgf(self, t) -> np.ndarray:
        """``log E_P[e^{tL}; L < ∞] = log Σ w_k E_{P_k}[e^{tL_k}; L_k < ∞]`` (an estimate, as the parts')."""
        t = np.atleast_1d(np.asarray(t, dtype=float))
        parts = np.stack([math.log(w) + np.asarray(m.log_mgf(t)) for w, m in zip(self.weights, self.models)])
        return np.logaddexp.reduce(parts, axis=0)

    def support_nodes(self, t: float):
        """(log weight, loss) of the atoms and quadrature nodes of every component, weighted by ``w_k``."""
        lw, lx = [], []
        for w, m in zip(self.weights, self.models):
            a, b = support_nodes(m, t)
            lw.append(a + math.log(w))
            lx.append(b)
        return np.concatenate(lw), np.concatenate(lx)


def support_nodes(model, t: float):
    """(log weight, loss) of a model's atoms and of its continuous piece's quadrature nodes covering the
    tilt ``t`` (for moment estimates; a mixture's are its components', weighted)."""
    if isinstance(model, MixtureLossModel):
        return model.support_nodes(t)
    lw, lx = [np.zeros(0)], [np.zeros(0)]
    if model.atoms_loc.size:
        with np.errstate(divide="ignore"):
            lw.append(np.log(model.atoms_mass))
        lx.append(np.asarray(model.atoms_loc, dtype=float))
    if model.piece is not None:
        a, b = model._piece_nodes(abs(t))
        lw.append(a)
        lx.append(b)
    return np.concatenate(lw), np.concatenate(lx)


def mixture(name: str, weights, models) -> LossModel | MixtureLossModel:
    """The revealed mixture of ``models``; components of weight 0 are dropped, one left is returned as is."""
    keep = [(float(w), m) for w, m in zip(weights, models) if w > 0]
    if not keep:
        raise InputError("mixture: no component has a positive weight")
    if len(keep) == 1:
        return keep[0][1]
    total = sum(w for w, _ in keep)
    return MixtureLossModel(name, tuple(w / total for w, _ in keep), tuple(m for _, m in keep))
