"""DP-SGD runs whose batches come from random allocation (docs/math.md §3.8): how a run of T steps at
sample rate q maps onto allocation rounds, and the Rényi DP of the whole run.

* ``balls-in-bins`` (Chua et al. 2025, "Balls-and-bins sampling for DP-SGD", arXiv:2412.16802): every
  epoch, each example is put in one of the epoch's ``m = ⌊N/B⌋`` batches (``⌊1/q⌋`` without N) uniformly
  at random, independently of the others; batch sizes vary around B.  An epoch is one 1-of-m allocation; T
  steps touch ``⌈T/m⌉`` epochs (a partial epoch is a post-processing of a whole one, so it costs at most as
  much).
* ``random-allocation`` (Feldman & Shenfeld 2025, arXiv:2502.08202): each example is used in exactly k of
  the run's T steps, the k-subset uniformly random; ``k = ⌈q(T − 1)⌉`` (= E for a run of E epochs; the
  expected batch is then N·k/T ≈ B; rounded up otherwise: more participations cost more).

Both: add/remove-one neighbours, the RDP bound of :func:`dpcalc.engine.mechanisms.random_allocation.rdp.rdp_random_allocation`
per round, composed over rounds.
"""

from __future__ import annotations

import numpy as np

from dpcalc.engine.conversion.of_curve import eps_of_curve
from dpcalc.engine.dpsgd.shuffle import steps_per_epoch
from dpcalc.engine.mechanisms.random_allocation.rdp import rdp_random_allocation
from dpcalc.engine.orders import DEFAULT_ORDERS
from dpcalc.errors import InputError

#: The samplers of this module.
SAMPLINGS = ("balls-in-bins", "random-allocation")


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


def rounds(q, steps, sampling, dataset_size=None):
    """``(t, k, rounds)`` of the run: allocation size, participations per round, number of rounds."""
    q, steps = np.broadcast_arrays(np.asarray(q, dtype=float), np.asarray(steps, dtype=float))
    if sampling == "balls-in-bins":
        m = np.broadcast_to(epoch_steps(q, dataset_size), q.shape)
        return m, np.ones(m.shape), np.ceil(steps / m)
    if sampling == "random-allocation":
        k = np.minimum(np.maximum(participations(q, steps), 1.0), steps)
        return steps, k, np.ones(steps.shape)
    raise InputError(f"--sampling: not an allocation sampler: {sampling!r}")


def rdp_run(q, sigma, steps, alphas, sampling, dataset_size=None) -> np.ndarray:
    """The Rényi DP of the whole run, shape ``broadcast(q, sigma, steps).shape + (len(alphas),)``: rounds ×
    the per-round bound (distinct (σ, t, k) computed once)."""
    q, sigma, steps = np.broadcast_arrays(*(np.asarray(x, dtype=float) for x in (q, sigma, steps)))
    alphas = np.asarray(alphas, dtype=float).reshape(-1)
    t, k, r = rounds(q, steps, sampling, dataset_size)
    keys = np.stack([sigma.ravel(), t.ravel(), k.ravel()], axis=1)
    uniq, inv = np.unique(keys, axis=0, return_inverse=True)
    per = rdp_random_allocation(uniq[:, 0], uniq[:, 1], uniq[:, 2], alphas)
    per = per[inv.ravel()].reshape(q.shape + (alphas.size,))
    with np.errstate(invalid="ignore", over="ignore"):
        return np.where(per == 0, 0.0, r[..., None] * per)


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
    per = rdp_random_allocation(sigma, t, k, orders)
    with np.errstate(invalid="ignore", over="ignore"):
        total = np.where(per == 0, 0.0, rounds[..., None] * per)
    return np.asarray(eps_of_curve(orders, total, delta, conversion).value, dtype=float)
