"""The allocation samplers' common part (docs/math.md §3.8, §3.10): a run of T steps at sample rate q maps
onto allocation rounds (each sampler's :meth:`Allocation.rounds`), whose Rényi DP and privacy-loss pair are
composed over the run.

* ``balls-in-bins`` (Chua et al. 2025, "Balls-and-bins sampling for DP-SGD", arXiv:2412.16802): every
  epoch, each example is put in one of the epoch's ``m = ⌊N/B⌋`` batches (``⌊1/q⌋`` without N) uniformly
  at random, independently of the others; batch sizes vary around B.  An epoch is one 1-of-m allocation; T
  steps touch ``⌈T/m⌉`` epochs (a partial epoch is a post-processing of a whole one, so it costs at most as
  much).
* ``random-allocation`` (Feldman & Shenfeld 2025, arXiv:2502.08202): each example is used in exactly k of
  the run's T steps, the k-subset uniformly random; ``k = ⌈q(T − 1)⌉`` (= E for a run of E epochs; the
  expected batch is then N·k/T ≈ B; rounded up otherwise: more participations cost more).

Both: add/remove-one neighbours, the RDP bound of :func:`dpcalc.engine.mechanisms.random_allocation.rdp.rdp_random_allocation`
per round, composed over rounds; the pld accountant composes the rounds' loss models
(:func:`run_directions`, docs/math.md §3.10), which dominate the pair: an upper end only.  The two samplers
are :mod:`dpcalc.engine.samplers.balls_in_bins` and :mod:`dpcalc.engine.samplers.random_allocation`.
"""

from __future__ import annotations

import math

import numpy as np

from dpcalc.engine.conversion.of_curve import eps_of_curve
from dpcalc.engine.orders import DEFAULT_ORDERS
from dpcalc.engine.samplers.base import RELATIONS, Sampler, steps_per_epoch
from dpcalc.errors import InputError
from dpcalc.lazy import lazy_module

#: the rounds' Rényi bound, loaded when an allocation sampler is asked for (a Poisson query never is)
allocation_rdp = lazy_module("dpcalc.engine.mechanisms.random_allocation.rdp")
#: the PLD side (the rounds' privacy loss models and the grid), loaded when a PLD is asked for
loss_models = lazy_module("dpcalc.engine.mechanisms.loss_models")
round_loss = lazy_module("dpcalc.engine.mechanisms.random_allocation.round_loss")
grid = lazy_module("dpcalc.engine.pld.grid")


def epoch_steps(q, dataset_size=None) -> np.ndarray:
    """Steps per balls-in-bins epoch: ``⌊N/B⌋`` from the integers where ``q·N`` is a whole batch size B,
    else ``⌊1/q⌋`` (checked so that m·q <= 1)."""
    q = np.asarray(q, dtype=float)
    m = steps_per_epoch(q)
    if dataset_size is None:
        return m
    n = np.asarray(dataset_size, dtype=float)
    b = np.round(q * n)
    whole = (b >= 1) & (np.abs(q * n - b) <= 1e-9 * b)
    return np.where(whole, np.maximum(np.floor(n / np.where(whole, b, 1.0)), 1.0), m)


def participations(q, steps) -> np.ndarray:
    """``k = ⌈q(T − 1)⌉``: the steps each example is in under random allocation.  With ``--epochs E`` the run
    has ``T = ⌈E/q⌉`` steps, so ``E <= qT < E + q`` and k = E exactly; otherwise qT rounded up."""
    q, steps = np.asarray(q, dtype=float), np.asarray(steps, dtype=float)
    x = q * (steps - 1.0)
    return np.ceil(x - 1e-9 * np.maximum(x, 1.0))


class Allocation(Sampler):
    """A sampler analysed per allocation round: each sets :meth:`rounds`."""

    relations = ("add-remove",)
    accountants = {"rdp": RELATIONS, "pld": RELATIONS}
    pld_upper_only = True
    pld_upper_why = "the allocation rounds' models dominate the pair, docs/math.md §3.10"
    curve_words = "rounds × the per-round bound of random allocation"

    @property
    def refusal(self) -> str:
        return (
            f"--sampling {self.name} with --neighbors replace-one: no theorem covers it here (the random "
            "allocation bounds of Feldman & Shenfeld 2025 are for add/remove neighbours); use --neighbors add-remove"
        )

    def rounds(self, q, steps, dataset_size=None):
        """``(t, k, rounds)`` of the run: allocation size, participations per round, number of rounds."""
        raise NotImplementedError

    def rdp_step(self, q, sigma, alphas, neighbors, dataset_size=None, max_batch_size=None):
        raise InputError(
            f"--sampling {self.name}: a run's Rényi DP is per allocation round, not per step (see "
            "dpcalc.engine.samplers.allocation.Allocation.rdp_run)"
        )

    def rdp_run(self, q, sigma, steps, alphas, neighbors, dataset_size=None, max_batch_size=None):
        """The Rényi DP of the whole run, shape ``broadcast(q, sigma, steps).shape + (len(alphas),)``: rounds
        × the per-round bound (distinct (σ, t, k) computed once)."""
        q, sigma, steps = np.broadcast_arrays(*(np.asarray(x, dtype=float) for x in (q, sigma, steps)))
        alphas = np.asarray(alphas, dtype=float).reshape(-1)
        t, k, r = self.rounds(q, steps, dataset_size)
        keys = np.stack([sigma.ravel(), t.ravel(), k.ravel()], axis=1)
        uniq, inv = np.unique(keys, axis=0, return_inverse=True)
        per = allocation_rdp.rdp_random_allocation(uniq[:, 0], uniq[:, 1], uniq[:, 2], alphas)
        per = per[inv.ravel()].reshape(q.shape + (alphas.size,))
        with np.errstate(invalid="ignore", over="ignore"):
            return np.where(per == 0, 0.0, r[..., None] * per)

    def pld_config(self, dataset_size=None, max_batch_size=None) -> tuple:
        """N (nan when not given: ⌊1/q⌋ steps an epoch)."""
        return (np.asarray(np.nan if dataset_size is None else dataset_size, dtype=float),)

    def pld_directions(self, q, sigma, steps, neighbors, config, delta=None):
        """The rounds' loss models (docs/math.md §3.10; ``delta`` sets the precision they need)."""
        n = None if math.isnan(config[0]) else config[0]
        t, k, r = (int(v) for v in self.rounds(q, steps, n))
        return run_directions(sigma, t, k, r, delta)


def epsilon_random_allocation(sigma, t, k, rounds, delta, *, conversion="optimal", orders=None) -> np.ndarray:
    """ε upper bound of ``rounds`` independent k-of-t random allocations (add/remove neighbours) at δ:
    RDP composition (Mironov 2017, arXiv:1702.07476, Prop. 1) of :func:`rdp_random_allocation` and dpcalc's
    RDP→(ε, δ) conversion (:func:`dpcalc.engine.conversion.of_curve.eps_of_curve`, docs/math.md §1.6).
    All arguments broadcast."""
    orders = DEFAULT_ORDERS if orders is None else np.asarray(orders, dtype=float)
    rounds = np.asarray(rounds, dtype=float)
    delta = np.asarray(delta, dtype=float)
    if np.any(~np.isfinite(rounds)) or np.any(rounds < 0) or np.any(rounds != np.floor(rounds)):
        raise InputError(
            "rounds: must be an integer >= 0 (a partial round is not a fraction of a round's RDP)"
        )
    if np.any(~((delta > 0) & (delta < 1))):
        raise InputError("delta: must lie in (0, 1)")
    sigma, t, k, rounds, delta = np.broadcast_arrays(
        *(np.asarray(x, dtype=float) for x in (sigma, t, k, rounds, delta))
    )
    per = allocation_rdp.rdp_random_allocation(sigma, t, k, orders)
    with np.errstate(invalid="ignore", over="ignore"):
        total = np.where(per == 0, 0.0, rounds[..., None] * per)
    return np.asarray(eps_of_curve(orders, total, delta, conversion).value, dtype=float)


# ------------------------------------------------------------------- a run of random-allocation rounds


def run_directions(sigma: float, t: int, k: int, rounds: int, delta: float | None = None):
    """The two directions ``[remove, add]`` of a run of ``rounds`` rounds in which each example is in k of
    t steps (Lemma 3.2 of Feldman & Shenfeld 2025: given a uniformly random split of the t steps into k
    blocks of ⌊t/k⌋ or ⌊t/k⌋ + 1 steps, the blocks are independent 1-of-block rounds; the split is the same
    on both sides, so by joint convexity the profile is at most that of the blocks' composition), each a
    list of accountant components; the neglected mass rides along as ``approx_dp(0, extra)`` per block.
    ``delta`` (an ε(δ) question): where the double-precision round-off would take more than
    :data:`FLOOR_SHARE` of δ, the rounds are recomputed in extended precision."""
    t, k, rounds = int(t), int(k), int(rounds)
    m, r = divmod(t, k)
    blocks = [(m, (k - r) * rounds), (m + 1, r * rounds)]
    blocks = [(size, count) for size, count in blocks if count > 0]
    models = [round_loss.round_loss_models(float(sigma), size) for size, _ in blocks]
    if delta is not None and _floor(models, blocks) > FLOOR_SHARE * delta:
        models = [
            round_loss.round_loss_models(float(sigma), size, round_loss.PRECISE_TAIL, precise=True)
            for size, _ in blocks
        ]
    out = [[], []]
    for (remove, add, extra), (_, count) in zip(models, blocks):
        out[0].append(grid.Component(remove, count))
        out[1].append(grid.Component(add, count))
        if extra > 0:
            for d in out:
                d.append(grid.Component(loss_models.approx_dp(0.0, extra), count))
    return out


#: The share of δ the counted masses may take before the rounds are recomputed in extended precision (about
#: ten times slower): 5 % of δ moves ε by about 0.3 % (σ = 0.8, 60 epochs of 234 steps), less than the
#: accountant's default bracket width.
FLOOR_SHARE = 0.05


def _floor(models, blocks) -> float:
    """The mass at +∞ the composed extras carry: ``1 − Π (1 − extra)^count``."""
    return -math.expm1(sum(c * math.log1p(-m[2]) for m, (_, c) in zip(models, blocks)))
