"""ρ-zero-concentrated DP (Bun & Steinke 2016, arXiv:1605.02065, Def. 1.1): (α, ρα)-RDP for every α > 1.

Spec ``zcdp:rho=R``.  No privacy loss distribution and no per-release (ε, δ) here.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np

from dpcalc.engine.mechanisms.base import Key, Mechanism, check_alphas, up


def rdp_zcdp(rho, alphas):
    """ρ-zCDP is ``(α, ρα)``-RDP for every α > 1 (Bun–Steinke 2016, Def. 1.1); ∞ at α = ∞ unless ρ = 0."""
    a = check_alphas(alphas)
    with np.errstate(invalid="ignore"):
        z = np.where(np.isinf(a), np.inf if rho > 0 else 0.0, rho * a)
    return up(z, z)


class ZCDP(Mechanism):
    kind = "zcdp"
    keys = (Key("rho", "nonneg"),)
    order = 50

    def rdp(self, params, alphas):
        return rdp_zcdp(params["rho"], alphas)

    def max_loss(self, params):
        if params["rho"] > 0:
            return None, "ρ-zCDP with ρ > 0 allows an unbounded privacy loss (a Gaussian is ρ-zCDP)"
        return (Fraction(0), Fraction(0)), None  # 0-zCDP: both distributions are equal


MECHANISM = ZCDP()
