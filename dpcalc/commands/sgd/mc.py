"""The Monte Carlo accountant of ``dpcalc sgd-epsilon --method mc`` (balls-in-bins and random allocation,
:mod:`dpcalc.engine.dpsgd.balls_in_bins_mc`): its plan (rounds, epochs, samples), its cost, and its rows — ε at
δ holding with probability ``confidence`` over the sampling (:func:`epsilon_rows`), or δ at ε
(:func:`delta_rows`), each beside its estimate.  The samples are drawn in batches on the processes or cluster of
the settings in force (:func:`dpcalc.execution.mapper`: the same numbers anywhere).
"""

from __future__ import annotations

import math

import numpy as np

from dpcalc import execution
from dpcalc.commands.sgd.mc_cost import MC_CONFIDENCE, MC_SAMPLES, mc_seconds  # noqa: F401 (re-exported)
from dpcalc.engine.dpsgd import accounting as sgd
from dpcalc.engine.dpsgd.balls_in_bins_mc import (
    DEFAULT_SAMPLES,
    delta_balls_in_bins_mc,
    epsilon_balls_in_bins_mc,
    samples_to_certify,
)
from dpcalc.engine.dpsgd.balls_in_bins_samples import MAX_WIDTH
from dpcalc.errors import InputError


def mc_plan(p, sampler, g):
    """``(m, epochs, samples)`` of balls-in-bins Monte Carlo for the rows ``g``: the rounds, epochs and samples per
    direction.  Any number of samples is computed (in batches, in bounded memory,
    :mod:`dpcalc.engine.dpsgd.balls_in_bins_samples`); a run whose one sample would not fit in memory (more than
    :data:`~dpcalc.engine.dpsgd.balls_in_bins_samples.MAX_WIDTH` steps) is refused before any draw."""
    m, _, epochs = sampler.rounds(g["q"], g["steps"], g.get("n"))
    samples = DEFAULT_SAMPLES if p.mc_samples is None else p.mc_samples
    widest = float(np.max(np.asarray(m, float) * np.asarray(epochs, float))) if np.size(m) else 0.0
    if widest > MAX_WIDTH:
        raise InputError(
            f"--method mc: one Monte Carlo sample of this run is {widest:.3g} normal draws (epochs × steps per "
            f"epoch) held in memory at once, more than {MAX_WIDTH:.3g}; use --method rdp or pld"
        )
    return m, epochs, samples


def mc_needed_note(samples: int, needed: float, delta: float, confidence: float) -> str:
    """The note of a Monte Carlo row whose ε is inf: the samples given cannot certify δ, and how many would
    (rounded up to two significant digits)."""
    return (
        f"{samples:,} samples cannot certify δ = {delta:g} at confidence {confidence:g} (ε = inf): "
        f"{_count_up(needed)} samples per direction would (the least count whose bound, beyond every sampled loss, "
        "is within δ); raise --mc-samples"
    )


def _count_up(n: float) -> str:
    """``n`` rounded up to two significant digits, written out (e.g. 3,000,000), or in e-notation beyond 10^15."""
    if not math.isfinite(n):
        return "no number of"
    digits = max(0, int(math.floor(math.log10(max(n, 1.0)))) - 1)
    up = math.ceil(n / 10**digits) * 10**digits
    return f"{up:,}" if up < 1e15 else f"{up:.2e}"


def epsilon_rows(p, sampler, g) -> dict:
    """The Monte Carlo rows of balls-in-bins (:mod:`dpcalc.engine.dpsgd.balls_in_bins_mc`): ε holding with
    probability ``p.confidence`` over the sampling, and the estimate; the samples drawn in batches on the
    processes or cluster of the settings in force (:func:`dpcalc.execution.mapper`: the same numbers anywhere).
    Where ε is inf the note says how many samples would certify δ (:func:`samples_to_certify`)."""
    (m, epochs, samples), (upper, est) = _bounds(epsilon_balls_in_bins_mc, p, sampler, g, g["delta"])
    n = g["q"].size
    e = sgd.Epsilon(upper, np.full(n, np.nan), np.zeros(n, bool), np.ones(n, bool))
    cfg = np.broadcast_arrays(
        *(np.asarray(x, float).reshape(-1) for x in (g["sigma"], m, epochs, g["delta"]))
    )
    needed: dict = {}
    note = []
    for i, u in enumerate(upper):
        if np.isfinite(u):
            note.append("")
            continue
        key = tuple(float(c[i]) for c in cfg)
        if key not in needed:
            needed[key] = samples_to_certify(
                key[0], int(key[1]), int(key[2]), key[3], samples=samples, confidence=p.confidence
            )
        note.append(mc_needed_note(samples, needed[key], key[3], p.confidence))
    return dict(noise_multiplier=g["sigma"], steps=g["steps"], eps=e, estimate=est, note=note)


def delta_bounds(p, sampler, g):
    """The Monte Carlo upper bound on δ(ε) of balls-in-bins (probability ``p.confidence``) and its estimate."""
    _, (upper, est) = _bounds(delta_balls_in_bins_mc, p, sampler, g, g["eps"])
    return np.minimum(upper, 1.0), est


def _bounds(accountant, p, sampler, g, at):
    """The plan (:func:`mc_plan`) and ``accountant``'s (upper bound, estimate) at ``at`` (δ's or ε's) on the
    rows ``g``, as flat arrays."""
    plan = mc_plan(p, sampler, g)
    m, epochs, samples = plan
    upper, est = accountant(
        g["sigma"],
        m,
        epochs,
        at,
        samples=samples,
        confidence=p.confidence,
        seed=p.seed,
        mapper=execution.mapper(),
    )
    n = g["q"].size
    return plan, (np.asarray(upper, float).reshape(n), np.asarray(est, float).reshape(n))
