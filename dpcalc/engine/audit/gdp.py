"""The μ-GDP lower bound from a membership test's counts, and the ε it implies (docs/math.md §11.3).

A μ-GDP mechanism (Dong, Roth & Su 2019, arXiv:1905.02383, Def. 2.6) has every test at false-positive
rate FPR with ``TPR ≤ Φ(Φ⁻¹(FPR) + μ)``.  With probability ≥ c, ``TPR ≥ tpr_lower`` and
``FPR ≤ fpr_upper`` (:mod:`.counts`), hence

    μ ≥ mu_lower = max(0, Φ⁻¹(tpr_lower) − Φ⁻¹(fpr_upper)),

which the complementary test (TNR/FNR) reproduces exactly, the Gaussian curve being symmetric.
The ε it implies at δ is that of the Gaussian profile with r = mu_lower (Balle & Wang 2018,
arXiv:1805.06530, Thm 8; docs/math.md §2.6): a lower bound on ε *only* for a mechanism whose
trade-off curve is Gaussian (one Gaussian release; DP-SGD in its central-limit regime), not in
general (Nasr et al. 2023, arXiv:2302.07956, §3 make the same assumption).
"""

from __future__ import annotations

import numpy as np
from scipy import special

from dpcalc.engine.audit.counts import ROUND_DOWN
from dpcalc.engine.mechanisms.gaussian_exact import eps_gaussian

#: eps_gaussian rounds up to its bisection's safe end; a relative 1e-6 below it is below the exact value.
_GDP_EPS_MARGIN = 1e-6


def mu_lower(tpr_lo, fpr_hi):
    """``max(0, Φ⁻¹(tpr_lo) − Φ⁻¹(fpr_hi))``, rounded down (0 where tpr_lo = 0; inf where fpr_hi = 0 < tpr_lo)."""
    tpr_lo, fpr_hi = np.broadcast_arrays(np.asarray(tpr_lo, float), np.asarray(fpr_hi, float))
    with np.errstate(invalid="ignore"):
        mu = special.ndtri(tpr_lo) - special.ndtri(fpr_hi)
    mu = np.where(np.isnan(mu), 0.0, mu)
    mu = np.where(
        np.isfinite(mu), mu - ROUND_DOWN * (1.0 + np.abs(special.ndtri(np.clip(tpr_lo, 1e-300, 1)))), mu
    )
    mu = np.maximum(mu, 0.0)
    return mu[()] if mu.ndim == 0 else mu


def epsilon_gdp(mu, delta):
    """ε at δ of the Gaussian mechanism with r = ``mu`` (Balle & Wang 2018, Thm 8), rounded down.
    δ = 0 and μ > 0 give inf (a Gaussian curve certifies no finite pure ε); μ = 0 gives 0."""
    mu, delta = np.broadcast_arrays(np.asarray(mu, float), np.asarray(delta, float))
    pos = (delta > 0) & np.isfinite(mu)
    e = eps_gaussian(np.where(pos, delta, 0.5), np.where(pos, mu, 0.0))
    out = np.where(pos, np.maximum(np.asarray(e, float) * (1.0 - _GDP_EPS_MARGIN), 0.0), 0.0)
    out = np.where((~pos) & (mu > 0), np.inf, out)
    return out[()] if out.ndim == 0 else out
