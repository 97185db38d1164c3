"""Rényi DP of the Poisson-subsampled Gaussian under replace-one neighbours: an upper bound
(docs/math.md §3.5).

Replacing ``x`` by ``x'`` passes through the dataset without either example, so with ``μ_x`` the output
distribution with ``x`` in the data and ``μ_0`` the one without, Mironov's weak triangle inequality
(Mironov 2017, arXiv:1702.07476, Proposition 11, with p = q = 2) gives, for α > 1,

    D_α(μ_x ‖ μ_x') <= (α − 1/2)/(α − 1) · D_2α(μ_x ‖ μ_0) + D_{2α−1}(μ_0 ‖ μ_x').

Both divergences on the right are those of the add/remove pair, bounded by the exact add/remove RDP
``ε_AR`` of Mironov, Talwar & Zhang 2019 (arXiv:1908.10530, §3.3; docs/math.md §3.2), which covers both
directions.  Joint convexity of ``e^{(α−1)D_α}`` also bounds the pair by the Gaussian of sensitivity 2
(``2α/σ²``; exact at q = 1).  The bound returned is the smaller of the two: sound, not tight (the PLD
accountant evaluates the replace-one pair itself).
"""

from __future__ import annotations

import numpy as np

from dpcalc.engine.mechanisms.sgm.poisson import rdp_poisson


def rdp_poisson_replace(q, sigma, alphas) -> np.ndarray:
    """Per-step RDP bound, shape ``broadcast(q, sigma).shape + (len(alphas),)``; ``sigma`` is the noise
    standard deviation over the clipping norm (each example's clipped gradient has norm <= 1)."""
    alphas = np.asarray(alphas, dtype=float).reshape(-1)
    q = np.asarray(q, dtype=float)
    sigma = np.asarray(sigma, dtype=float)
    q, sigma = np.broadcast_arrays(q, sigma)
    both = np.concatenate([2.0 * alphas, 2.0 * alphas - 1.0])
    order = np.unique(both)
    table = np.asarray(rdp_poisson(q, sigma, order), dtype=float)
    at = {a: i for i, a in enumerate(order)}
    hi = table[..., [at[a] for a in 2.0 * alphas]]
    lo = table[..., [at[a] for a in 2.0 * alphas - 1.0]]
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        triangle = (alphas - 0.5) / (alphas - 1.0) * hi + lo
        gaussian = 2.0 * alphas / (sigma[..., None] ** 2)
    out = np.minimum(np.where(np.isnan(triangle), np.inf, triangle), gaussian)
    return np.where(q[..., None] >= 1.0, gaussian, out)
