"""Fixed-size batches: a uniformly random batch of B examples each step (sampling without replacement),
replace-one neighbours with the dataset size public (docs/math.md §3.3).

The Rényi curve is the Wang–Balle–Kasiviswanathan 2019 upper bound (AISTATS 2019, arXiv:1808.00087, Thm 9;
:func:`dpcalc.engine.mechanisms.sgm.rdp_without_replacement`) at σ/2: the replace-one sensitivity of the
clipped sum is 2C.  The Bassily–Smith–Thakurta 2014 reference formula (docs/math.md §3.4) is for this
setting.  Under add/remove neighbours no theorem here covers it.
"""

from __future__ import annotations

import numpy as np

from dpcalc.engine.mechanisms import sgm
from dpcalc.engine.samplers.base import RELATIONS, Sampler


class FixedSize(Sampler):
    name = "fixed-size"
    order = 20
    relations = ("replace-one",)
    refusal = (
        "--sampling fixed-size with --neighbors add-remove: no theorem covers it here (the "
        "Wang-Balle-Kasiviswanathan 2019 bound for sampling without replacement is for replace-one with "
        "the dataset size public); use --neighbors replace-one, or --sampling poisson"
    )
    accountants = {"rdp": RELATIONS, "bassily": ("replace-one",)}
    vectorised_inverse = True
    profile_relations = ()
    rdp_seconds = 0.025

    def rdp_step(self, q, sigma, alphas, neighbors, dataset_size=None, max_batch_size=None):
        """:func:`sgm.rdp_without_replacement` (WBK 2019 bound; docs/math.md §3.3) at σ/2."""
        return sgm.rdp_without_replacement(q, np.asarray(sigma, dtype=float) / 2.0, alphas)


SAMPLER = FixedSize()
