"""An (ε, δ)-DP mechanism given by its guarantee alone (docs/math.md §1.4, §2.1–§2.3).

Spec ``dp:epsilon=E[,delta=D]`` (``eps``).  Privacy loss: the tight dominating pair of (ε, δ)-DP
(Kairouz, Oh & Viswanath 2015, arXiv:1311.0776; Murtagh & Vadhan 2016).  Rényi DP: for δ = 0 the tight
curve of ε-DP (that of randomized response); for δ > 0 none.  Per release: its own (ε, δ).
"""

from __future__ import annotations

import numpy as np

from dpcalc.engine.mechanisms.base import Key, Mechanism, check_alphas, decimal
from dpcalc.engine.mechanisms.loss_models import approx_dp
from dpcalc.engine.mechanisms.randomized_response import rdp_randomized_response


def rdp_pure_dp(eps, alphas):
    """The tight RDP curve of an ε-DP mechanism: that of randomized response with p = e^ε/(1+e^ε).

    docs/math.md §1.4: ``ζ = log((e^{αε} + e^{(1−α)ε})/(1+e^ε))/(α−1)``, which is below both ``ε`` and
    ``αε²/2`` (Bun–Steinke).  Why it holds for every ε-DP mechanism: the privacy loss L lies in [−ε, ε]
    and satisfies ``E_P[e^{−L}] = 1``; ``E_P[e^{(α−1)L}]`` is a convex function of ``e^{−L}``, so it is
    largest when L takes only the values ±ε — which is randomized response.
    """
    a = check_alphas(alphas)
    if eps == 0:
        return np.zeros_like(a)
    p = 1.0 / (1.0 + np.exp(-eps))
    return rdp_randomized_response(p, a, eps=eps)


class ApproxDP(Mechanism):
    kind = "dp"
    keys = (Key("epsilon", "nonneg", aliases=("eps",)), Key("delta", "delta", 0.0))
    order = 60

    def rdp_refusal(self, params):
        return "has delta > 0: no Rényi-DP curve" if params["delta"] > 0 else None

    def rdp(self, params, alphas):
        return rdp_pure_dp(params["epsilon"], alphas)

    def pld_pair(self, params):
        return approx_dp(params["epsilon"], params.get("delta", 0.0)), None

    def per_release(self, params):
        return (params["epsilon"], params["delta"]), None

    def max_loss(self, params):
        if params.get("delta", 0.0) > 0:
            return (
                None,
                "an (ε, δ)-DP guarantee with δ > 0 allows an infinite privacy loss with probability δ",
            )
        return (decimal(params["epsilon"]),) * 2, None


MECHANISM = ApproxDP()
