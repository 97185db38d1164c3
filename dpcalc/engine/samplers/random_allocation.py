"""Random allocation (Feldman & Shenfeld 2025, arXiv:2502.08202): each example is used in exactly k of the
run's T steps, the k-subset uniformly random; ``k = ⌈q(T − 1)⌉`` (= E for a run of E epochs; the expected
batch is then N·k/T ≈ B; rounded up otherwise: more participations cost more) (docs/math.md §3.8).

The whole run is one k-of-T allocation; add/remove-one neighbours.  The rdp and pld accountants read it as
:mod:`dpcalc.engine.samplers.allocation` says (Lemma 3.2's blocks for the PLD, docs/math.md §3.10).
"""

from __future__ import annotations

import numpy as np

from dpcalc.engine.samplers.allocation import Allocation, participations


class RandomAllocation(Allocation):
    name = "random-allocation"
    order = 60
    rdp_seconds = 0.5
    caption = (
        "; random-allocation: each example in k = ceil(q·(steps − 1)) of all the steps (the epochs, with "
        "--epochs), chosen uniformly"
    )
    notes = {
        ("rdp", "add-remove"): (
            "add/remove; upper bound: each example in k = ceil(q·(steps−1)) of the steps (= epochs), Feldman & Shenfeld 2025 "
            "(arXiv:2502.08202, Lemma 3.2 blocks, Thm 4.4 remove; add: the Laplace-transform bound of docs/math.md §3.8)"
        ),
        ("pld", "add-remove"): (
            "add/remove; certified upper bound (no lower end or estimate: the bracket is of models that "
            "dominate the pair): PLD of the k = ceil(q·(steps−1)) blocks "
            "(Feldman & Shenfeld 2025, arXiv:2502.08202, Lemma 3.2), each a 1-of-block allocation from the law "
            "of a sum of lognormals, bounded in convex order (docs/math.md §3.10)"
        ),
    }

    def rounds(self, q, steps, dataset_size=None):
        """``(T, k, 1)``: the run is one k-of-T allocation."""
        q, steps = np.broadcast_arrays(np.asarray(q, dtype=float), np.asarray(steps, dtype=float))
        k = np.minimum(np.maximum(participations(q, steps), 1.0), steps)
        return steps, k, np.ones(steps.shape)


SAMPLER = RandomAllocation()
