"""Tree aggregation, the noise of DP-FTRL (Kairouz, McMahan, Song, Thakkar, Thakurta & Xu 2021,
"Practical and Private (Deep) Learning without Sampling or Shuffling", arXiv:2103.00039, §3 and
Appendix D; docs/math.md §2.9).

Spec ``tree-aggregation:sigma=S,steps=T[,epochs=E]`` (kind alias ``dp-ftrl``).

* ``steps`` T — the leaves of one tree: the steps of one epoch (a whole number >= 1).
* ``epochs`` E — how many trees are run one after another, the tree restarted at every epoch
  (a whole number >= 1, default 1).
* ``sigma`` σ — the noise multiplier: the standard deviation of the Gaussian noise added to every
  tree node, divided by the clipping norm (the ℓ₂ sensitivity of one leaf).

Neighbouring relation: one example is added or removed (equivalently, its contributions are replaced
by zero: dp_accounting's ``REPLACE_SPECIAL``), and every example contributes to at most one leaf
(step) per epoch, a vector of norm at most the clipping norm.  Under replace-one neighbours a leaf
moves by twice the clipping norm: give ``sigma`` = σ/2.

Rényi DP (one release, i.e. one run of E epochs).  A tree over T leaves releases the noisy sums of
the complete dyadic intervals of [1, T]; the nodes containing a given leaf lie on distinct levels,
and only the levels 0 .. ⌊log₂ T⌋ hold a complete interval, so one example changes at most
``D(T) = ⌊log₂ T⌋ + 1 = ⌈log₂(T + 1)⌉`` node sums, each by at most the clipping norm: the vector of
all node sums has ℓ₂ sensitivity √D(T), and the tree is a Gaussian mechanism with ratio √D(T)/σ
(Kairouz et al. 2021, Appendix D).  Its RDP is ``α·D(T)/(2σ²)`` (Mironov 2017, arXiv:1702.07476,
Table II) — the tree's (adaptive) outputs are post-processing of the noisy nodes — and the E trees,
one participation each, compose (Mironov 2017, Prop. 1)::

    ζ(α) = α · E · D(T) / (2σ²)

At T = 1 each tree is one Gaussian mechanism (α/(2σ²) per epoch).  ``count=K`` composes K
independent runs: K·ζ(α) (the same curve as ``epochs`` = K·E).

This is what dp_accounting computes for ``SingleEpochTreeAggregationDpEvent(σ, T)`` (composed E
times with ``SelfComposedDpEvent``) and what TensorFlow Privacy's ``compute_rdp_tree_restart(σ, [T]*E,
orders)`` computes.  The same argument makes the run a Gaussian mechanism exactly: each node is a Gaussian
release (adaptively chosen inputs, one of them moved by at most the clipping norm) and the example enters
E·D(T) of them, so the run is √(E·D(T))/σ-GDP, tight (Dong, Roth & Su 2022, Cor. 3.3: adaptive composition of
Gaussian mechanisms): its exact ε (Balle & Wang 2018) and its privacy loss distribution are the Gaussian's
(``gaussian_ratio``, ``pld_pair``), the same as ``dpcalc matrix --strategy tree`` with one participation
(:func:`dpcalc.engine.matrix.strategies.tree_gram`).  No per-release (ε, δ); unbounded privacy loss.
Several participations per tree (a minimum separation between them): ``dpcalc matrix --strategy tree
--participation min-sep:k=K,b=B``.
"""

from __future__ import annotations

import math

import numpy as np

from dpcalc.engine.mechanisms.base import Key, Mechanism, check_alphas, up, whole
from dpcalc.engine.mechanisms.gaussian_loss import gaussian_loss

#: The largest ``steps``: whole numbers up to 2^53 are exact doubles.
MAX_STEPS = 2**53
#: The largest ``epochs`` (as for ``count``).
MAX_EPOCHS = 10**12


def tree_depth(steps: int) -> int:
    """``D(T) = ⌊log₂ T⌋ + 1``: the number of tree levels holding a complete dyadic interval of [1, T],
    i.e. the most node sums one leaf enters (Kairouz et al. 2021, Appendix D)."""
    steps = int(steps)
    if steps < 1:
        raise ValueError(f"steps must be a whole number >= 1, got {steps}")
    return steps.bit_length()  # exact, where math.log2 of a large integer may round


def rdp_tree_aggregation(sigma, steps, epochs, alphas):
    """``ζ(α) = α·E·D(T)/(2σ²)``: E restarted trees of T leaves, noise multiplier σ per node, one
    participation per tree (docs/math.md §2.9).  ∞ at α = ∞."""
    a = check_alphas(alphas)
    levels = float(int(epochs) * tree_depth(steps))  # an exact integer below 2^53
    with np.errstate(over="ignore"):
        z = a * (levels * np.square(1.0 / np.float64(sigma))) / 2.0  # inf, not OverflowError, past range
    return up(z, z)


class TreeAggregation(Mechanism):
    noise = ("sigma", 1)
    kind = "tree-aggregation"
    aliases = ("dp-ftrl",)
    keys = (Key("sigma", "pos"), Key("steps", "pos"), Key("epochs", "pos", 1.0))
    order = 45

    def complete(self, params, given, fail):
        params["steps"] = whole(params, given, fail, "steps", MAX_STEPS, "2^53")
        params["epochs"] = whole(params, given, fail, "epochs", MAX_EPOCHS, "10^12")
        return params

    def rdp(self, params, alphas):
        return rdp_tree_aggregation(params["sigma"], params["steps"], params["epochs"], alphas)

    def max_loss(self, params):
        return None, "the privacy loss of tree aggregation (Gaussian noise on every node) is unbounded"

    def _sensitivity(self, params) -> float:
        """√(E·D(T)), the ℓ₂ sensitivity of every node sum of the E trees, rounded up (E·D(T) < 2^53 exactly)."""
        return math.sqrt(int(params["epochs"]) * tree_depth(params["steps"])) * (1.0 + 2.0**-51)

    def gaussian_ratio(self, params):
        return self._sensitivity(params) / params["sigma"]

    def pld_pair(self, params):
        return gaussian_loss(params["sigma"], self._sensitivity(params)), None


MECHANISM = TreeAggregation()
