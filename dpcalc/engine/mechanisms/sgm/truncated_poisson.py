"""DP-SGD with truncated Poisson batches: Poisson sampling at rate q, a batch larger than ``B`` cut to a
uniformly random subset of ``B`` (docs/math.md §3.7).

The dataset holds ``N`` examples, the one at stake among them (its neighbour has ``N − 1``: the convention of
dp_accounting's ``TruncatedSubsampledGaussianDpEvent``).  Let ``S`` be the sample drawn from the other
``N − 1`` examples and ``T = {|S| >= B}``; ``T`` does not depend on the example, and has the same probability

    p_T = P(Bin(N − 1, q) >= B)

on both datasets, so revealing it is a post-processing-safe refinement (the decomposition of "Tighter privacy analysis for
truncated Poisson sampling", 2025, arXiv:2508.15089, as implemented by dp_accounting; derived in full in
docs/math.md §3.7, with the revealed mixture of §7.8):

* on ``T``'s complement no batch is cut, and the step is the Poisson-subsampled Gaussian at rate ``q``;
* on ``T`` the batch without the example is a uniform ``B``-subset of the others (Poisson sampling is
  exchangeable), and with it the example is in the batch with probability

      q̄ = E[q·B/(|S| + 1) | T] = B·P(Bin(N, q) >= B + 1) / (N·p_T)

  (using ``P(Bin(N−1, q) = m)·q/(m+1) = P(Bin(N, q) = m+1)/N``), replacing a uniform member of it.  Given
  the other ``B − 1`` members, the pair is the subsampled Gaussian at rate ``q̄`` whose shift is a
  difference of two clipped gradients: sensitivity ``2C``.

Add/remove neighbours: the ``T`` component is the add/remove pair at rate ``q̄`` and noise ``σ/2``
(``(1−q̄)N(0,σ²) + q̄N(Δ,σ²)`` against ``N(0,σ²)`` with ``‖Δ‖ <= 2``), both directions — tighter than the
replace-one pair dp_accounting uses there.  Replace-one neighbours: both components are replace-one pairs
(rate ``q`` at σ; rate ``q̄`` at σ/2, the pair dp_accounting uses).  As ``B → ∞``, ``p_T → 0`` and the
bound is Poisson sampling's.

Rényi DP of the revealed mixture: ``e^{(α−1)D_α} = (1−p_T)e^{(α−1)ε₁(α)} + p_T e^{(α−1)ε₂(α)}``, with ε₁, ε₂
the components' RDP (exact for Poisson under add/remove, Mironov, Talwar & Zhang 2019; the weak-triangle
bound of :mod:`dpcalc.engine.mechanisms.sgm.replace` under replace-one).
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from dpcalc.engine._special import lazy_stats as stats
from dpcalc.engine.mechanisms.sgm.poisson import rdp_poisson
from dpcalc.engine.mechanisms.sgm.replace import rdp_poisson_replace
from dpcalc.errors import InputError
from dpcalc.lazy import lazy_module

#: the privacy loss models of the PLD side, loaded when a PLD is asked for
losses = lazy_module("dpcalc.engine.mechanisms.gaussian_loss")
loss_models = lazy_module("dpcalc.engine.mechanisms.loss_models")
mixture_loss = lazy_module("dpcalc.engine.mechanisms.mixture_loss")
replace_loss = lazy_module("dpcalc.engine.mechanisms.sgm_replace_loss")


def _check(q, dataset_size, max_batch_size):
    q, n, b = np.broadcast_arrays(*(np.asarray(x, dtype=float) for x in (q, dataset_size, max_batch_size)))
    if np.any(~((n >= 1) & (n == np.floor(n)) & np.isfinite(n))):
        raise InputError("--dataset-size: must be a whole number >= 1 with --sampling truncated-poisson")
    if np.any(~((b >= 1) & (b == np.floor(b)) & np.isfinite(b))):
        raise InputError("--max-batch-size: must be a whole number >= 1")
    return q, n, b


def truncation(q, dataset_size, max_batch_size) -> tuple[np.ndarray, np.ndarray]:
    """``(p_T, q̄)``: the probability that the other ``N − 1`` examples alone fill a batch of ``B``, and the
    example's probability to be in a cut batch given that (0 where ``p_T = 0``).  ``q̄`` is rounded up by a
    relative 1e-12 (a larger rate only loosens the bound); ``p_T``'s relative error (~1e-15, scipy's binomial
    tail) is far inside the accountant's mass margin."""
    q, n, b = _check(q, dataset_size, max_batch_size)
    p_t = np.where(b <= n - 1, stats.binom.sf(b - 1, n - 1, q), 0.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        q_bar = b * stats.binom.sf(b, n, q) / (n * p_t)
    q_bar = np.where(p_t > 0, np.minimum(q_bar * (1.0 + 1e-12), 1.0), 0.0)
    return p_t, q_bar


def rdp_truncated_poisson(
    q, sigma, alphas, dataset_size, max_batch_size, neighbors="add-remove"
) -> np.ndarray:
    """Per-step Rényi DP bound, shape ``broadcast(q, sigma, N, B).shape + (len(alphas),)`` (module doc)."""
    alphas = np.asarray(alphas, dtype=float).reshape(-1)
    p_t, q_bar = truncation(q, dataset_size, max_batch_size)
    q, sigma, p_t, q_bar = np.broadcast_arrays(np.asarray(q, float), np.asarray(sigma, float), p_t, q_bar)
    rdp = rdp_poisson_replace if neighbors == "replace-one" else rdp_poisson
    first = np.asarray(rdp(q, sigma, alphas), dtype=float)
    cut = p_t > 0
    if not np.any(cut):
        return first
    second = np.zeros(first.shape)
    second[cut] = np.asarray(rdp(q_bar[cut], sigma[cut] / 2.0, alphas), dtype=float)
    a1 = alphas - 1.0
    w = p_t[..., None]
    with np.errstate(divide="ignore", over="ignore", invalid="ignore"):
        # log((1−p)e^{(α−1)ε₁} + p e^{(α−1)ε₂}) / (α − 1), in log space
        mixed = np.logaddexp(np.log1p(-w) + a1 * first, np.log(w) + a1 * second) / a1
    mixed = np.where(w >= 1.0, second, mixed)
    mixed = np.where(np.isnan(mixed), np.inf, mixed)
    return np.where(cut[..., None], np.maximum(mixed, 0.0), first)


def loss_directions(q: float, sigma: float, dataset_size: float, max_batch_size: float, neighbors: str):
    """The privacy-loss models of one step, one list per direction (both directions under add/remove, one
    symmetric pair under replace-one); a revealed mixture where batches can be cut.

    Where a batch can be cut (p_T > 0) every model is marked ``dominates_only``: the revealed mixture dominates
    the step that hides whether its batch was cut, the cut component's pair (rate q̄ rounded up, a shift of 2C)
    dominates its own part, and neither is attained in general; so a PLD bracket of it has an upper end and no
    lower end or estimate.  Where none can (p_T = 0) the step is Poisson sampling's, exactly."""
    dirs = _directions(q, sigma, dataset_size, max_batch_size, neighbors)
    if float(truncation(q, dataset_size, max_batch_size)[0]) > 0:
        dirs = [[_upper_only(m) for m in d] for d in dirs]
    return dirs


def _upper_only(model):
    """``model`` marked as one that only dominates the mechanism (a revealed mixture always is)."""
    return replace(model, dominates_only=True) if isinstance(model, loss_models.LossModel) else model


def _directions(q: float, sigma: float, dataset_size: float, max_batch_size: float, neighbors: str):
    p_t, q_bar = (float(x) for x in truncation(q, dataset_size, max_batch_size))
    name = f"truncated-poisson(q={q:g},σ={sigma:g},N={dataset_size:g},B={max_batch_size:g})"
    if neighbors == "replace-one":
        return [
            [
                mixture_loss.mixture(
                    name,
                    (1.0 - p_t, p_t),
                    (replace_loss.sgm_replace_loss(q, sigma), _replace_or_none(q_bar, sigma)),
                )
            ]
        ]

    def pair(rate, s, direction):
        if rate <= 0:  # the example is never in the batch: no privacy loss
            return loss_models.LossModel("no-loss", np.zeros(1), np.ones(1), loss_min=0.0, loss_max=0.0)
        return losses.gaussian_loss(s, 1.0) if rate >= 1.0 else losses.sgm_loss(rate, s, direction)

    return [
        [mixture_loss.mixture(name, (1.0 - p_t, p_t), (pair(q, sigma, d), pair(q_bar, sigma / 2.0, d)))]
        for d in ("remove", "add")
    ]


def _replace_or_none(q_bar: float, sigma: float):
    return replace_loss.sgm_replace_loss(q_bar, sigma / 2.0) if q_bar > 0 else None
