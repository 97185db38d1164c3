"""The privacy loss models of the mixture-of-Gaussians mechanism (docs/math.md §2.14; numpy only).

On one dataset the mechanism outputs ``P = Σ_i p_i N(c_i, σ²)`` (sensitivities ``c_i >= 0``, probabilities
``p_i > 0`` summing to 1), on its neighbour ``Q = N(0, σ²)`` (dp_accounting's
``MixtureOfGaussiansDpEvent``; Choquette-Choo, Ganesh, Steinke & Thakurta 2024, arXiv:2310.15526).  With
``v_i(x) = (c_i x − c_i²/2)/σ²`` the log likelihood ratio is

    L(x) = log P(x)/Q(x) = log Σ_i p_i e^{v_i(x)},

a log-sum-exp of lines with slopes ``c_i/σ² >= 0``: increasing and convex, between ``log p_0`` (``p_0``
the probability of sensitivity 0; ``−∞`` when there is none) at ``x → −∞`` and ``+∞``.

* :func:`mixture_loss` ``direction="remove"``: P = the mixture, Q = N(0, σ²), loss ``L(x)`` under P
  (increasing, ``L > log p_0``).
* ``direction="add"``: P = N(0, σ²), Q = the mixture, loss ``−L(x)`` under N(0, σ²) (decreasing,
  ``−L < −log p_0``).

The log likelihood ratio ``L``, its inverse ``x(ℓ)`` and the mixture's Gaussian tails are
:class:`~dpcalc.engine.mechanisms.mixture_gaussian_terms.MixtureTerms`'s
(:mod:`dpcalc.engine.mechanisms.mixture_gaussian_terms`).
"""

from __future__ import annotations

import math

import numpy as np

from dpcalc.engine.mechanisms.loss_models import _LOG_SQRT_2PI, _SPAN, LossModel, Piece, log_normal_sf
from dpcalc.engine.mechanisms.mixture_gaussian_terms import MixtureTerms
from dpcalc.errors import InputError


def _cut_remove(terms: MixtureTerms, log_budget: float) -> LossModel | None:
    """The remove direction with the components of largest sensitivity cut, as many as have total mass at most
    ``e^{log_budget}`` (None where none can be): the kept sub-mixture ``P_sub`` (its weights as they are, not
    renormalised) plus the cut mass T at +∞ (rounded up).  The pair ``(P_sub + T·δ_∞, Q)`` dominates ``(P, Q)``
    (``P = P_sub + P_tail``, ``P_tail`` of mass T), and since ``P >= P_sub`` pointwise, ``δ_P(ε) >= δ_{P_sub}(ε)``
    for every composition: T counts as a bad event of the lower end (:attr:`LossModel.cut_mass`).  A large
    group's mixture (K = 999: the weights of 121 components are non-zero in doubles, beyond the fifth or sixth
    below 1e-12) keeps a handful of components, and the loss model costs that many."""
    lp = terms.lp
    # log Σ_{i>=j} p_i for each j (decreasing in j): the tail mass a cut at j removes
    tails = np.logaddexp.accumulate(lp[::-1])[::-1]
    fits = np.nonzero(tails <= log_budget)[0]
    first_pos = int(np.nonzero(terms.c > 0)[0][0])
    j = max(int(fits[0]) if fits.size else terms.m, first_pos + 1)
    if j >= terms.m:
        return None
    mass = min(math.fsum(terms.p[j:].tolist()) * (1.0 + 1e-9), 1.0)
    sub = MixtureTerms(terms.sigma, terms.c[:j], terms.p[:j], normalize=False)
    model = mixture_loss(sub, "remove")
    model.cut = None
    model.inf_mass = mass
    model.cut_mass = mass
    return model


def mixture_loss(terms: MixtureTerms, direction: str) -> LossModel:
    """The loss model of one direction of the pair (see the module docstring)."""
    if direction not in ("remove", "add"):
        raise InputError(f"direction: must be 'remove' or 'add', got {direction!r}")
    t = terms
    sigma = t.sigma
    log_norm = _LOG_SQRT_2PI + math.log(sigma)
    label = f"mixture-gaussian-{direction}(sigma={sigma:g},components={t.m})"

    def _log_pdf_q(x):
        x = np.asarray(x, dtype=float)
        return -0.5 * (x / sigma) ** 2 - log_norm

    def _x_of(ell):
        lo, hi = t.inverse(ell)
        return np.where(np.isfinite(lo), 0.5 * (lo + hi), lo)

    if direction == "remove":
        x_lo = float(t.c[0]) - _SPAN * sigma
        x_hi = t.c_max + _SPAN * sigma
        loss_min = float(np.nextafter(t.log_p0, -np.inf)) if t.p0 > 0 else -math.inf
        piece = Piece(
            x_lo=x_lo,
            x_hi=x_hi,
            increasing=True,
            loss=t.log_ratio,
            x_of_loss=_x_of,
            dloss=lambda x0, dx: t.dlog_ratio(x0, dx, 1.0),
            log_pdf=lambda x: _log_pdf_q(x) + t.log_ratio(x),
            scale=sigma,
            tilt_rate=t.c_max,
        )

        def sf_above(b):  # P(L > b) = P(X > x(b)) under the mixture
            return t.log_mix_sf(t.point_below(float(b)))

        def cdf_below(a):  # P(L < a) = P(X < x(a))
            if a <= t.log_p0:
                return -math.inf
            return t.log_mix_cdf(t.point_above(float(a)))

        cuts: dict = {}

        def cut(log_budget):
            if log_budget not in cuts:
                cuts[log_budget] = _cut_remove(t, log_budget)
            return cuts[log_budget] or model

        model = LossModel(
            name=label,
            piece=piece,
            loss_min=loss_min,
            log_sf_above=sf_above,
            log_cdf_below=cdf_below,
            cut=cut,
        )
        return model

    loss_max = float(np.nextafter(-t.log_p0, np.inf)) if t.p0 > 0 else math.inf
    piece = Piece(
        x_lo=-_SPAN * sigma,
        x_hi=_SPAN * sigma,
        increasing=False,
        loss=lambda x: -t.log_ratio(x),
        x_of_loss=lambda v: _x_of(-np.asarray(v, dtype=float)),
        dloss=lambda x0, dx: -t.dlog_ratio(x0, dx, -1.0),
        log_pdf=_log_pdf_q,
        scale=sigma,
        tilt_rate=t.c_max,
    )

    def sf_above_add(b):  # P(−L > b) = P(L < −b) = P(X < x(−b)) under N(0, σ²)
        if -b <= t.log_p0:
            return -math.inf
        return log_normal_sf(-t.point_above(-float(b)) / sigma)

    def cdf_below_add(a):  # P(−L < a) = P(L > −a) = P(X > x(−a))
        if -a <= t.log_p0:
            return 0.0
        return log_normal_sf(t.point_below(-float(a)) / sigma)

    return LossModel(
        name=label,
        piece=piece,
        loss_max=loss_max,
        log_sf_above=sf_above_add,
        log_cdf_below=cdf_below_add,
    )
