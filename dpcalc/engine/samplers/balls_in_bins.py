"""Balls-in-bins batches (Chua et al. 2025, "Balls-and-bins sampling for DP-SGD", arXiv:2412.16802): every
epoch, each example is put in one of the epoch's ``m = ⌊N/B⌋`` batches (``⌊1/q⌋`` without N) uniformly at
random, independently of the others (docs/math.md §3.8).

An epoch is one 1-of-m allocation; T steps touch ``⌈T/m⌉`` epochs (a partial epoch is a post-processing of
a whole one, so it costs at most as much).  Add/remove-one neighbours.  The rdp and pld accountants read
the rounds (:mod:`dpcalc.engine.samplers.allocation`); the Monte Carlo accountant of the dominating pair
(docs/math.md §3.9) is :mod:`dpcalc.engine.dpsgd.balls_in_bins_mc`.
"""

from __future__ import annotations

import numpy as np

from dpcalc.engine.samplers.allocation import Allocation, epoch_steps
from dpcalc.engine.samplers.base import RELATIONS


class BallsInBins(Allocation):
    name = "balls-in-bins"
    order = 50
    accountants = {"rdp": RELATIONS, "pld": RELATIONS, "mc": RELATIONS}
    run_inputs = ("dataset_size",)
    whole_epochs = True
    rdp_seconds = 0.5
    caption = (
        "; balls-in-bins: an epoch is floor(N/B) steps (floor(1/q) without --dataset-size), each example in "
        "one uniformly random step of each epoch; steps = ceil(epochs × that)"
    )
    notes = {
        ("rdp", "add-remove"): (
            "add/remove; upper bound: each epoch a 1-of-floor(N/B) random allocation, its Rényi DP bounded as in "
            "Feldman & Shenfeld 2025 (arXiv:2502.08202, Thm 4.4 remove; add: the Laplace-transform bound of "
            "docs/math.md §3.8), ceil(steps/floor(N/B)) epochs composed"
        ),
        ("pld", "add-remove"): (
            "add/remove; certified upper bound (no lower end or estimate: the bracket is of models that "
            "dominate the pair): PLD of each epoch's 1-of-floor(N/B) allocation "
            "(Feldman & Shenfeld 2025, arXiv:2502.08202, Thm 3.1 pair) from the law of a sum of lognormals, "
            "bounded in convex order with every neglected mass counted (docs/math.md §3.10), epochs composed"
        ),
        ("mc", "add-remove"): (
            "add/remove; Monte Carlo (Chua et al. 2025, arXiv:2412.16802): epsilon is an upper bound only with "
            "probability confidence over the sampling (Hoeffding's KL bound), not a deterministic bound"
        ),
    }

    def rounds(self, q, steps, dataset_size=None):
        """``(m, 1, ⌈T/m⌉)``: an epoch of m steps is one 1-of-m allocation."""
        q, steps = np.broadcast_arrays(np.asarray(q, dtype=float), np.asarray(steps, dtype=float))
        m = np.broadcast_to(epoch_steps(q, dataset_size), q.shape)
        return m, np.ones(m.shape), np.ceil(steps / m)

    def whole_epochs_within(self, steps, q, dataset_size=None, batch_size=None):
        """The whole epochs of ⌊N/B⌋ steps within ``steps``."""
        return np.floor(steps / epoch_steps(q, dataset_size))


SAMPLER = BallsInBins()
