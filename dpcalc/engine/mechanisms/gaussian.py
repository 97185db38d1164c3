"""The Gaussian mechanism: N(f(D), σ²I) for a query f of ℓ₂-sensitivity Δ (docs/math.md §2.5, §2.6).

Spec ``gaussian:sigma=S[,sensitivity=D]`` (kind alias ``gauss``; ``sens``).  Rényi DP: Mironov 2017
(arXiv:1702.07476), Table II.  Privacy loss: ``L ~ N(r²/2, r²)`` with ``r = Δ/σ``, symmetric (Balle &
Wang 2018, arXiv:1805.06530, §3).  No per-release pure ε; its exact (ε, δ) profile is
:mod:`dpcalc.engine.mechanisms.gaussian_exact`.
"""

from __future__ import annotations

import numpy as np

from dpcalc.engine.mechanisms.base import Key, Mechanism, check_alphas, up
from dpcalc.engine.mechanisms.gaussian_loss import gaussian_loss as loss_model
from dpcalc.engine.mechanisms.gaussian_loss import sgm_loss
from dpcalc.engine.mechanisms.sgm import rdp_poisson, rdp_without_replacement


def rdp_gaussian(sigma, sensitivity, alphas):
    """``ζ(α) = αΔ²/(2σ²)`` (Mironov 2017, Table II; docs/math.md §2.5 — the square on Δ, which some lecture slides omit)."""
    a = check_alphas(alphas)
    with np.errstate(over="ignore"):
        z = a * np.square(np.float64(sensitivity) / sigma) / 2.0  # inf, not OverflowError, past double range
    return up(z, z)


class Gaussian(Mechanism):
    noise = ("sigma", 1)
    kind = "gaussian"
    aliases = ("gauss",)
    keys = (Key("sigma", "pos"), Key("sensitivity", "pos", 1.0, aliases=("sens",)))
    order = 10

    def rdp(self, params, alphas):
        return rdp_gaussian(params["sigma"], params["sensitivity"], alphas)

    def pld_pair(self, params):
        return loss_model(params["sigma"], params.get("sensitivity", 1.0)), None

    def gaussian_ratio(self, params):
        return params["sensitivity"] / params["sigma"]

    def subsampled_rdp(self, params, q, sampling, alphas):
        """The subsampled Gaussian's own curves (docs/math.md §3.2, §3.3) with σ/Δ as noise multiplier."""
        fn = rdp_poisson if sampling == "poisson" else rdp_without_replacement
        a = check_alphas(alphas)
        z = np.asarray(fn(q, _ratio_down(params["sigma"], params["sensitivity"]), a), dtype=float)
        return z.reshape(a.shape)

    def subsampled_pld_pair(self, params, q):
        """The pair of Mironov, Talwar & Zhang 2019 §3.3 (:func:`dpcalc.engine.mechanisms.gaussian_loss.sgm_loss`)."""
        s = _ratio_down(params["sigma"], params.get("sensitivity", 1.0))
        return sgm_loss(q, s, "remove"), sgm_loss(q, s, "add")

    def max_loss(self, params):
        return None, "the Gaussian's privacy loss is unbounded"


def _ratio_down(sigma, sensitivity) -> float:
    """σ/Δ as a double never above it (less noise per sensitivity is the safe side)."""
    r = float(sigma) / float(sensitivity)
    return r if sensitivity == 1.0 else float(np.nextafter(r, 0.0))


MECHANISM = Gaussian()
