"""Truncated Poisson batches: Poisson sampling at rate q, a batch larger than ``max_batch_size`` B cut to a
uniformly random subset of B; the dataset size N counts the example (docs/math.md §3.7).

Each step is the revealed mixture of "Tighter privacy analysis for truncated Poisson sampling" (2025,
arXiv:2508.15089): the Poisson step at q with probability 1 − p_T, the step at q̄ with sensitivity 2C
(a cut batch) with probability p_T.  Its Rényi curve and loss models are
:mod:`dpcalc.engine.mechanisms.sgm.truncated_poisson`'s.
"""

from __future__ import annotations

import numpy as np

from dpcalc.engine.mechanisms.sgm.truncated_poisson import loss_directions, rdp_truncated_poisson
from dpcalc.engine.samplers.base import RELATIONS, Sampler
from dpcalc.errors import InputError
from dpcalc.lazy import lazy_module

#: the PLD grid, loaded when a PLD is asked for
grid = lazy_module("dpcalc.engine.pld.grid")


class TruncatedPoisson(Sampler):
    name = "truncated-poisson"
    order = 30
    relations = RELATIONS
    accountants = {"rdp": RELATIONS, "pld": RELATIONS}
    needs = (
        ("max_batch_size", "--max-batch-size (the largest batch kept)"),
        ("dataset_size", "--dataset-size (how often a batch is cut depends on N)"),
    )
    run_inputs = ("dataset_size", "max_batch_size")
    captioned_inputs = ("dataset_size", "max_batch_size")
    takes_max_batch_size = True
    tuning_runs = False
    # the revealed mixture dominates the batches that hide whether they were cut (docs/math.md §3.7, §7.8)
    pld_upper_only = True
    pld_upper_why = "the revealed mixture dominates the truncated batches, docs/math.md §3.7"
    rdp_seconds = 0.02
    caption = (
        "; truncated-poisson: Poisson batches cut to a random subset of max_batch_size when larger; "
        "dataset_size N counts the example (its neighbour has N − 1)"
    )
    notes = {
        ("rdp", "add-remove"): (
            "add/remove, N counts the example; upper bound: revealed mixture (arXiv:2508.15089) "
            "of the exact RDP at q (no batch cut) and at q̄ with sensitivity 2 (a cut batch)"
        ),
        ("pld", "add-remove"): (
            "add/remove, N counts the example; certified upper bound (no lower end or estimate: the bracket is "
            "of the revealed mixture, arXiv:2508.15089, which dominates the truncated batches): PLD of Poisson at "
            "q w.p. 1-p_T, sensitivity 2 at q̄ w.p. p_T"
        ),
        ("rdp", "replace-one"): (
            "replace-one; upper bound: revealed mixture (arXiv:2508.15089) of the weak-triangle RDP bounds at q "
            "and at q̄ with σ/2; loose, prefer pld"
        ),
        ("pld", "replace-one"): (
            "replace-one; certified upper bound (no lower end or estimate: the bracket is of the revealed "
            "mixture, arXiv:2508.15089, which dominates the truncated batches): PLD of the replace-one pairs at q "
            "and at q̄ with σ/2"
        ),
    }

    def relation_caption(self, neighbors: str) -> str:
        return (
            "sensitivity C; 2C in a cut batch"
            if neighbors == "add-remove"
            else "sensitivity 2C: x replaced by −x"
        )

    def rdp_step(self, q, sigma, alphas, neighbors, dataset_size=None, max_batch_size=None):
        """The revealed mixture's Rényi curve, N and B broadcast with q (docs/math.md §3.7)."""
        if dataset_size is None or max_batch_size is None:
            raise InputError("--sampling truncated-poisson needs --dataset-size and --max-batch-size")
        return rdp_truncated_poisson(q, sigma, alphas, dataset_size, max_batch_size, neighbors)

    def pld_config(self, dataset_size=None, max_batch_size=None) -> tuple:
        if max_batch_size is None:
            raise InputError("--sampling truncated-poisson needs --max-batch-size")
        if dataset_size is None:
            raise InputError("--sampling truncated-poisson needs --dataset-size")
        return np.asarray(dataset_size, dtype=float), np.asarray(max_batch_size, dtype=float)

    def pld_directions(self, q, sigma, steps, neighbors, config, delta=None):
        """A revealed mixture per step (docs/math.md §3.7)."""
        return [[grid.Component(d[0], steps)] for d in loss_directions(q, sigma, *config, neighbors)]


SAMPLER = TruncatedPoisson()
