"""The exponential mechanism and report-noisy-max as ε-bounded-range mechanisms (docs/math.md §2.12).

Spec ``exponential:epsilon=E`` (kind alias ``em``; ``eps``).  ``epsilon`` is the ε of the usual exponential
mechanism, which outputs y with probability ∝ exp(ε·u(D, y)/(2Δu)) for a utility u of sensitivity Δu
(McSherry & Talwar 2007), or of report-noisy-max with Gumbel noise of scale 2Δu/ε (the same mechanism).
It is ε-DP, and also ε-*bounded range* (Durfee & Rogers 2019, arXiv:1905.04273): for
every pair of neighbours the privacy loss L(y) = log P(y)/Q(y) takes values in an interval [t − ε, t] of
length ε, for some t ∈ [0, ε] that may depend on the pair.

Worst pairs.  Write X = e^L; under Q, X lies in [e^{t−ε}, e^t] with E_Q[X] = 1.  The hockey-stick
divergence δ(ε') = E_Q[(X − e^{ε'})_+] and the Rényi moment E_Q[X^α] are expectations of convex functions of
X, so among such distributions they are largest for the two-point one on the interval's ends (a convex
function lies below its chord): the generalised randomized response GRR_t of Dong, Durfee & Rogers 2020
(arXiv:1909.13830, §4), losses t and t − ε with
P-masses ``p_t = (1 − e^{t−ε})/(1 − e^{−ε})`` and ``1 − p_t``.

* Rényi DP (:func:`rdp_exponential`): ``ζ(α) = max_t D_α(GRR_t)``, in closed form (the maximiser
  ``e^{t*} = (α−1)(1 − e^{−αε})/(α(e^{−ε} − e^{−αε}))`` lies in [0, ε]); capped by ``αε²/8`` (ε-BR is
  ε²/8-zCDP: Cesar & Rogers 2021, arXiv:2004.07223) and by ε.  α = 1:
  ``log((e^ε−1)/ε) − 1 + ε/(e^ε−1)`` (Dong, Durfee & Rogers 2020, the KL bound of their §7).
* Privacy loss distribution (:func:`loss_model`): the pointwise largest profile,
  ``δ*(ε') = max_t δ_t(ε') = (1 − e^{(ε'−ε)/2})²/(1 − e^{−ε})`` for 0 <= ε' <= ε (maximiser
  t = (ε + ε')/2), is the profile of the symmetric pair whose loss has P-density
  ``e^{(l−ε)/2}/(2(1 − e^{−ε}))`` on [−ε, ε] (no atoms).  Its profile dominates every ε-BR pair's at every
  ε', so it is a dominating pair for the mechanism (Zhu, Dong & Wang 2022, arXiv:2106.08567), and
  dominating pairs compose adaptively (their composition theorem for dominating pairs).  At ε' = 0 it gives tanh(ε/4), against tanh(ε/2) for
  ε-DP randomized response.  It is the envelope over t, not one mechanism's pair: composed (or subsampled,
  or beside other releases) it exceeds what any ε-BR mechanism reaches — at ε = 0.1, 100 releases, δ = 1e-6
  its lower end 2.60 lies above the certified rdp bound 2.40 — so the model is marked ``dominates_only``:
  its PLD rows carry an upper end only (docs/math.md §2.12).
* Per release: (ε, 0); largest loss ε (exact, in the decimals given).

Not here: Dong, Durfee & Rogers' exact composition max_t of the k-fold GRR_t is optimal for *non-adaptive*
composition only (their §5); they show adaptively chosen exponential mechanisms can lose more
(their §6), so compose does not use it.
"""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np

from dpcalc.engine.mechanisms.base import Key, Mechanism, check_alphas, decimal, up
from dpcalc.engine.mechanisms.laplace import half_exponential_model
from dpcalc.engine.mechanisms.loss_models import LossModel
from dpcalc.errors import InputError


def _log1mexp(x):
    """``log(1 − e^{−x})`` for x > 0 (array)."""
    x = np.asarray(x, float)
    with np.errstate(divide="ignore"):
        return np.where(x < math.log(2.0), np.log(-np.expm1(-x)), np.log1p(-np.exp(-x)))


def rdp_exponential(epsilon, alphas):
    """The Rényi-DP curve of an ε-bounded-range mechanism: ``max_{t ∈ [0, ε]} D_α(GRR_t)`` (module
    docstring; docs/math.md §2.12), raised by a few ulps of its terms, capped at ``min(αε²/8, ε)``.

    α > 1, with ``A = 1 − e^{−αε}``, ``B = e^{−ε}(1 − e^{−(α−1)ε})``, ``c = 1 − e^{−ε}``:
    ``(α−1)ζ = (α−1)·log((α−1)A/(αB)) + log(A/α) − log c``.
    """
    a = check_alphas(alphas)
    e = float(epsilon)
    mid = (a > 1) & np.isfinite(a)
    am = np.where(mid, a, 2.0)
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        log_a = _log1mexp(am * e)
        log_b = -e + _log1mexp((am - 1) * e)
        log_c = float(_log1mexp(e))
        t_star = np.log(am - 1) + log_a - np.log(am) - log_b
        num = (am - 1) * t_star + log_a - np.log(am) - log_c
        size = 1.0 + (am - 1) * (np.abs(np.log(am - 1)) + np.abs(log_a) + np.abs(np.log(am)) + np.abs(log_b))
        size = size + np.abs(log_a) + np.abs(np.log(am)) + abs(log_c)
        z = up(num, 4.0 * size) / (am - 1)
        zcdp = np.where(np.isinf(a), np.inf, up(a * (e * e / 8.0), a * e * e))
    # α = 1: the largest KL of GRR_t, at e^t = r = (e^ε − 1)/ε (log r = ε + log(1 − e^{−ε}) − log ε)
    log_r = e + float(_log1mexp(e)) - math.log(e) if e > 0 else 0.0
    kl = log_r - 1.0 + math.exp(-log_r) if e > 0 else 0.0
    kl = float(up(max(kl, 0.0), 4.0 + 2.0 * e))
    out = np.where(mid, z, np.where(a == 1, kl, e))
    return np.maximum(np.minimum(np.minimum(out, zcdp), e), 0.0)


def loss_model(epsilon: float) -> LossModel:
    """The dominating pair of an ε-bounded-range mechanism (module docstring): the loss has P-density
    ``e^{(l−ε)/2}/(2(1 − e^{−ε}))`` on [−ε, ε], symmetric, no atoms."""
    e = float(epsilon)
    if not (e > 0 and math.isfinite(e)):
        raise InputError(f"epsilon: must be a finite number > 0, got {e}")
    log_norm = math.log(2.0) + float(_log1mexp(e))  # log(2(1 − e^{−ε}))
    # the envelope of the GRR_t pairs, attained by none of them once composed: an upper end only
    return replace(half_exponential_model(e, log_norm, f"exponential(eps={e:g})"), dominates_only=True)


def profile(epsilon: float, eps_prime):
    """``δ*(ε')``: the largest hockey-stick divergence of an ε-BR pair at ε' >= 0,
    ``(1 − e^{(ε'−ε)/2})²/(1 − e^{−ε})`` below ε, 0 from ε on (a closed form, for tests and docs)."""
    x = np.minimum(np.asarray(eps_prime, float), float(epsilon))
    return np.square(-np.expm1(0.5 * (x - epsilon))) / -math.expm1(-float(epsilon))


class Exponential(Mechanism):
    noise = ("epsilon", -1)
    kind = "exponential"
    aliases = ("em",)
    keys = (Key("epsilon", "pos", aliases=("eps",)),)
    order = 32

    def rdp(self, params, alphas):
        return rdp_exponential(params["epsilon"], alphas)

    def pld_pair(self, params):
        return loss_model(params["epsilon"]), None

    def pld_dominated(self, params):
        return (
            "the envelope of every ε-bounded-range pair (docs/math.md §2.12), above what exponential mechanisms "
            "reach once composed"
        )

    def per_release(self, params):
        return (params["epsilon"], 0.0), None

    def max_loss(self, params):
        e = decimal(params["epsilon"])  # ε exactly: a bounded-range loss reaches ε as t → ε
        return (e, e), None


MECHANISM = Exponential()
