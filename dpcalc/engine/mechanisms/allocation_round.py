"""Random allocation as a mechanism: one release is one allocation round (docs/math.md §3.8, §3.10).

Spec ``random-allocation:sigma=S,steps=T[,k=K]`` (kind alias ``balls-in-bins``): T steps of the Gaussian
mechanism with noise multiplier σ (clipped gradients, sensitivity 1 under add/remove-one neighbours), each
example used in exactly K of them, the K-subset uniformly random (Feldman & Shenfeld 2025,
arXiv:2502.08202).  K = 1 is one balls-in-bins epoch of T batches (Chua et al. 2025, arXiv:2412.16802), so
``count=E`` composes E epochs — what ``sgd-epsilon --sampling balls-in-bins`` computes for E·T steps.

* Rényi DP (below σ = :data:`SIGMA_GAUSSIAN_BELOW`: the k Gaussian steps' k·α/(2σ²), an upper bound):
  :func:`dpcalc.engine.mechanisms.random_allocation.rdp.rdp_random_allocation` (remove direction exact at
  integer orders, the add direction by the Laplace-transform bound; K > 1 by Lemma 3.2 blocks).
* Privacy loss distribution (K = 1): the certified round of :mod:`dpcalc.engine.mechanisms.random_allocation.round_loss` — an
  upper bound only; its counted mass (tails, round-off) rides along as a third element of the pair.  K > 1
  is refused there (the blocks compose inside one release); ``sgd-epsilon --sampling random-allocation``
  answers it.
"""

from __future__ import annotations

import numpy as np

from dpcalc.engine.mechanisms.base import Key, Mechanism, check_alphas, up, whole
from dpcalc.engine.mechanisms.random_allocation.rdp import rdp_random_allocation
from dpcalc.engine.mechanisms.random_allocation.round_loss import round_loss_models
from dpcalc.errors import InputError

#: The largest ``steps`` accepted (the remove direction's multinomial series grows with T).
MAX_STEPS = 10**7
#: The largest ``steps`` of a round whose privacy loss distribution is built (its models grow with T: some
#: seconds at 10^4); above it the pld method says so and rdp answers.
MAX_PLD_STEPS = 10**4
#: The noise multipliers accepted: the Rényi bounds work with σ² and 1/σ², which leave double range
#: beyond (at σ = 1e-100 a step's ε is about 1e200; at 1e100 about 1e-200).
SIGMA_RANGE = (1e-100, 1e100)
#: Below this noise multiplier the Rényi curve is the Gaussian one of the example's k steps, k·α/(2σ²): the
#: round is a mixture over allocations, shared by both datasets, of k Gaussian steps and steps that do not
#: depend on the example, so by the joint quasi-convexity of Rényi divergence (van Erven & Harremoës 2014,
#: Thm 13) that is an upper bound.  There amplification is small (at σ = 0.1 the series is within 7 % of it)
#: and the series' cost grows without bound as σ falls (over 10 s at σ = 0.1, minutes below).
SIGMA_GAUSSIAN_BELOW = 0.15


class AllocationRound(Mechanism):
    noise = ("sigma", 1)
    kind = "random-allocation"
    aliases = ("balls-in-bins",)
    keys = (
        Key("sigma", "pos", aliases=("noise_multiplier", "noise-multiplier")),
        Key("steps", "pos", aliases=("t",)),
        Key("k", "pos", 1.0, aliases=("participations",)),
    )
    order = 45

    def complete(self, params, given, fail):
        lo, hi = SIGMA_RANGE
        if params.get("sigma") is not None and not lo <= params["sigma"] <= hi:
            fail(
                f"bad value sigma={given.get('sigma')!r} (must lie in [{lo:g}, {hi:g}] for random-allocation)"
            )
        for name in ("steps", "k"):
            params[name] = whole(params, given, fail, name, MAX_STEPS, "10^7")
        if params["k"] > params["steps"]:
            fail(
                f"k={int(params['k'])} exceeds steps={int(params['steps'])} (each example is in k of the steps)"
            )
        return params

    def rdp(self, params, alphas):
        a = check_alphas(alphas)
        if params["sigma"] < SIGMA_GAUSSIAN_BELOW:  # k Gaussian steps (SIGMA_GAUSSIAN_BELOW)
            with np.errstate(over="ignore"):
                z = params["k"] * a / (2.0 * float(params["sigma"]) ** 2)
            return up(z, z)
        out = rdp_random_allocation(params["sigma"], params["steps"], params["k"], a.reshape(-1))
        return np.asarray(out, dtype=float).reshape(a.shape)

    def pld_pair(self, params):
        if params["k"] != 1:
            raise InputError(
                "the privacy loss distribution of a random allocation with k > 1 is not offered as a spec; "
                "use sgd-epsilon --sampling random-allocation --method pld, or the RDP accountant"
            )
        if params["steps"] > MAX_PLD_STEPS:
            raise InputError(
                f"the privacy loss distribution of a random allocation is built for steps up to {MAX_PLD_STEPS} "
                f"(its models grow with the steps), not {int(params['steps'])}; use the RDP accountant"
            )
        remove, add, extra = round_loss_models(float(params["sigma"]), int(params["steps"]))
        return remove, add, extra

    def pld_dominated(self, params):
        return "the round's law bounded in convex order (docs/math.md §3.10), above the allocation's own pair"

    def relation(self, params):
        return "poisson"  # add/remove-one neighbours, as Poisson sampling's analyses


MECHANISM = AllocationRound()
