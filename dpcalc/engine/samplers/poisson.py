"""Poisson sampling: each example in each step's batch independently with probability q (docs/math.md §3.2,
§3.5).

* add/remove-one neighbours (sensitivity C, the default): the exact Rényi DP of the Poisson-subsampled
  Gaussian (Mironov, Talwar & Zhang 2019, arXiv:1908.10530; :func:`dpcalc.engine.mechanisms.sgm.rdp_poisson`)
  and its pair (1−q)N(0,σ²)+qN(1,σ²) against N(0,σ²), both directions (Zhu, Dong & Wang 2022); the
  moments accountant's closed form (Abadi et al. 2016, docs/math.md §3.1) applies here alone;
* replace-one neighbours (sensitivity 2C, x replaced by −x): the weak-triangle RDP bound of
  :mod:`dpcalc.engine.mechanisms.sgm.replace` and the symmetric pair (1−q)N(0,σ²)+qN(±1,σ²)
  (:func:`dpcalc.engine.mechanisms.sgm_replace_loss.sgm_replace_loss`, Schuchardt et al. 2024).
"""

from __future__ import annotations

import numpy as np

from dpcalc.engine.mechanisms import sgm
from dpcalc.engine.mechanisms.sgm.replace import rdp_poisson_replace
from dpcalc.engine.samplers.base import RELATIONS, Sampler
from dpcalc.lazy import lazy_module

#: the PLD side (its privacy loss models and grid), loaded when a PLD is asked for
losses = lazy_module("dpcalc.engine.mechanisms.gaussian_loss")
replace_loss = lazy_module("dpcalc.engine.mechanisms.sgm_replace_loss")
grid = lazy_module("dpcalc.engine.pld.grid")


class Poisson(Sampler):
    name = "poisson"
    order = 10
    relations = RELATIONS
    accountants = {"rdp": RELATIONS, "pld": RELATIONS, "abadi": ("add-remove",)}
    vectorised_inverse = True
    pld_zero_by_rdp = True  # the exact Rényi DP: its ε = 0 is the exact ε (docs/math.md §3.2, §1.4)
    profile_relations = RELATIONS
    rdp_seconds = 2.5e-3
    curve_reused = True
    notes = {
        ("rdp", "replace-one"): (
            "replace-one; upper bound: Mironov 2017 Prop. 11 (weak triangle, p = 2) over the exact add/remove "
            "RDP of Mironov-Talwar-Zhang 2019, capped by the Gaussian of sensitivity 2; loose, prefer pld"
        ),
        ("pld", "replace-one"): (
            "replace-one; PLD of the pair (1-q)N(0,σ²)+qN(±1,σ²) (dp_accounting REPLACE_ONE; Schuchardt et al. "
            "2024): certified bracket"
        ),
    }

    def relation_caption(self, neighbors: str) -> str:
        if neighbors == "add-remove":
            return "sensitivity C"
        return "sensitivity 2C: x replaced by −x, the pair (1−q)N(0,σ²)+qN(±1,σ²)"

    def rdp_step(self, q, sigma, alphas, neighbors, dataset_size=None, max_batch_size=None):
        """Add/remove: :func:`sgm.rdp_poisson` (exact, MTZ 2019; docs/math.md §3.2) at σ; replace-one: the
        weak-triangle bound of :mod:`dpcalc.engine.mechanisms.sgm.replace` (docs/math.md §3.5)."""
        if neighbors == "replace-one":  # an upper bound (docs/math.md §3.5)
            return rdp_poisson_replace(q, sigma, alphas)
        return sgm.rdp_poisson(q, np.asarray(sigma, dtype=float), alphas)

    def pld_directions(self, q, sigma, steps, neighbors, config, delta=None):
        if neighbors == "replace-one":  # one symmetric pair (docs/math.md §3.5)
            return [[grid.Component(replace_loss.sgm_replace_loss(q, sigma), steps)]]
        if q == 1.0:
            return [[grid.Component(losses.gaussian_loss(sigma), steps)]]
        return [
            [grid.Component(losses.sgm_loss(q, sigma, "remove"), steps)],
            [grid.Component(losses.sgm_loss(q, sigma, "add"), steps)],
        ]

    def pld_setting(self, neighbors, dataset_size=None, max_batch_size=None) -> dict:
        return {} if neighbors == "add-remove" else {"neighbors": neighbors}


SAMPLER = Poisson()
