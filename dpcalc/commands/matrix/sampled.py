"""The rows of ``dpcalc matrix`` under sampling over the whole run: MMCC (``poisson:q=Q``, ε and its inverse
questions: :mod:`dpcalc.engine.matrix.mmcc`, :mod:`dpcalc.engine.matrix.mmcc_calibration`) and balls-in-bins by
Monte Carlo (``balls-in-bins:b=B``: :mod:`dpcalc.engine.matrix.balls_in_bins_mc`) — docs/math.md §12.4, §12.5.
Each builder returns the columns :func:`dpcalc.commands.matrix.command._rows` fills in; the engines load lazily."""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np

from dpcalc import execution
from dpcalc.commands.sgd.mc import MC_CONFIDENCE, MC_SAMPLES, mc_needed_note  # as sgd-epsilon's --method mc
from dpcalc.engine.dpsgd.noise_calibration import calibrate_noise
from dpcalc.engine.matrix import accounting as acc
from dpcalc.engine.matrix import balls_in_bins_mc as bb
from dpcalc.engine.matrix import mmcc, mmcc_calibration, mmcc_posterior, mmcc_row_laws
from dpcalc.errors import InputError

#: The relative tolerance of the noise calibration of the amplified rows (bandmf, mmcc).
SIGMA_RTOL = 1e-4
#: The notes of the rows (the bandmf rows' come with their numbers: dpcalc.engine.matrix.accounting).
NOTES = {
    "gaussian": "no amplification: the Gaussian mechanism with this sensitivity (Balle & Wang 2018, Thm 8), exact",
    "mmcc": "MMCC (Choquette-Choo, Ganesh, Steinke & Thakurta 2024, arXiv:2310.15526, Thm 4.8 with conditional "
    "composition, Thm 3.1): the rows as mixtures of Gaussians under posterior bounds p̃; certified upper bound",
    "mc": "balls-in-bins by Monte Carlo (the pair of Choquette-Choo et al. 2025, arXiv:2410.06266, which dominates "
    "the run and is its own in the worst case, so the estimate is of the run; Chua et al. 2025, arXiv:2412.16802): "
    "an upper bound with probability confidence over the sampling, not a certified bound",
}
#: The Monte Carlo row's cost on one core, measured on the development machine (2 cores, shared) with a margin:
#: CPU seconds per sample and direction — a fixed part, per bin (the log-sum-exp of b terms) and per bin squared
#: (b normals times the b × b root) — and per noise value (the inversion).
MC_SECONDS_PER_SAMPLE = 5e-7
MC_SECONDS_PER_BIN = 4e-8
MC_SECONDS_PER_BIN2 = 2.5e-10
MC_SECONDS_PER_NOISE = 0.1


#: The cost of one MMCC evaluation (one σ and δ) on one core, from its own count of elementary operations
#: (:func:`dpcalc.engine.matrix.mmcc_calibration.work`: tail bounds and row laws), which it follows sublinearly (the
#: PLD composition, not counted there, weighs more in small runs).  Quick timings on the development machine (2 cores,
#: shared; time.process_time) under poisson:q=0.01 to 0.1: 0.1 s (identity, 10⁶ operations), 0.55 s (the 4-banded
#: square root over 200 steps, 8.6·10⁵), 4.5 s (8 bands over 1000 steps, 8.6·10⁶), 3.9 s (16 bands, 1.4·10⁷), 7.7 s
#: (the full square root over 60 steps, 1.3·10⁸), 17 s (over 100 steps at q = 0.1, 8.1·10⁸): at most 1.5·10⁻³ s times
#: the square root of the operations; taken as 0.2 s + 2·10⁻³ s × √operations (1.3 to 3.4 times the timings).
MMCC_SECONDS_EACH = 0.2
MMCC_SECONDS_SQRT_OP = 2e-3


def mmcc_seconds(s, q: float, sigmas, per_sigma: int) -> float:
    """Estimated CPU seconds on one core of mmcc's ε rows of the run (``per_sigma`` δ at each σ of ``sigmas``): its
    pairs found (the refusals of the run's size raised here, before any work) and its operations counted."""

    C = mmcc.causal_matrix(s)
    pairs = mmcc_posterior.find_pairs(C, q)
    rows = mmcc_row_laws.row_work(C)
    return sum(
        per_sigma
        * (
            MMCC_SECONDS_EACH
            + MMCC_SECONDS_SQRT_OP * math.sqrt(mmcc_posterior.tail_work(pairs, float(x)) + rows)
        )
        for x in np.atleast_1d(sigmas)
    )


#: The most steps of mmcc's search over the steps (C and its Gram matrix held dense at each candidate).
MMCC_SEARCH_STEPS = 2048


def mmcc_search_check(g, p) -> None:
    """The refusals of mmcc's searches (:func:`dpcalc.engine.matrix.mmcc_calibration.search_eps_error`: a target
    or δ too small) for every (target, δ) of the grid ``g``, raised before any work or estimate is said."""
    for target, delta in zip(
        np.asarray(g["target"], float).reshape(-1), np.asarray(g["delta"], float).reshape(-1)
    ):
        mmcc_calibration.search_eps_error(float(target), p.eps_error, float(delta))


class MmccBudget:
    """The work of one mmcc search over the steps, bounded as the noise search's
    (:data:`dpcalc.engine.matrix.mmcc_calibration.SEARCH_WORK`); an evaluation past it is not run."""

    def __init__(self, p, target, delta):

        self.spent = 0.0
        self.cut = False
        self.params = replace(
            p,
            eps_error=mmcc_calibration.search_eps_error(target, p.eps_error, delta),
            mmcc_memory_cap=mmcc_calibration.SEARCH_MEMORY_CAP,
        )

    def admits(self, s, q, sigma) -> bool:

        try:
            w = mmcc_calibration.work(mmcc.causal_matrix(s), q, float(sigma))
        except InputError:
            self.cut = True
            return False
        if w > mmcc.MAX_WORK or self.spent + w > mmcc_calibration.SEARCH_WORK:
            self.cut = True
            return False
        self.spent += w
        return True


#: Why mc answers no inverse question.
MC_ONLY_EPSILON = (
    "answers ε at a given --noise-multiplier and --steps only (a Monte Carlo bound; --target-epsilon is not "
    "offered for mc)"
)


def mc_refusal(s, part, solve) -> str | None:
    """Why the mc row does not apply, or None."""
    if part.kind != "balls-in-bins":
        return "mc needs balls-in-bins participation (--participation balls-in-bins:b=B)"
    if solve:
        return MC_ONLY_EPSILON
    if not s.nonnegative:
        return f"mc needs C >= 0 entrywise; {s.label} has negative entries"
    return None


def mc_seconds(samples: int, bins: int, noises: int = 1) -> float:
    """Estimated CPU seconds on one core of the Monte Carlo row: ``samples`` per direction, both directions, for
    each of ``noises`` noise values, over ``bins`` bins (the constants above)."""
    per = MC_SECONDS_PER_SAMPLE + MC_SECONDS_PER_BIN * bins + MC_SECONDS_PER_BIN2 * bins * bins
    return noises * (2.0 * samples * per + MC_SECONDS_PER_NOISE)


def mc_count(p) -> int:
    """The Monte Carlo samples per direction of the run ``p`` (--mc-samples, else :data:`MC_SAMPLES`)."""
    return MC_SAMPLES if p.mc_samples is None else p.mc_samples


def mc_check(s, part) -> None:
    """The Monte Carlo row's refusals of one run (its bins, the work of its bins' Gram matrix), before any plan."""

    bb.mode_gram(s, part.b)


def plan_mc(samples: int, bins: int, noises: int) -> None:
    """Describe the Monte Carlo row's work before any draw (:func:`dpcalc.execution.plan`: the estimate said on
    stderr when long, ``--max-seconds``' cap, the progress bar over the samples of both directions and every noise
    value).  Any number of samples is computed: in batches, in bounded memory."""
    execution.plan(mc_seconds(samples, bins, noises), 2.0 * samples * noises, "samples", what="Monte Carlo")


def mc_note(samples: int, delta: float, confidence: float, finite: bool) -> str:
    """The Monte Carlo row's note; where ε is inf, how many samples would certify δ (the plain sampler's floor:
    :func:`dpcalc.engine.matrix.balls_in_bins_mc.samples_to_certify`)."""

    if finite:
        return NOTES["mc"]
    return f"{NOTES['mc']}; " + mc_needed_note(
        samples, bb.samples_to_certify(delta, confidence), delta, confidence
    )


def mc_rows(s, part, g, p):
    """The Monte Carlo row's (ε upper bounds, estimates, notes): its batches run on the processes or cluster of the
    settings in force (the same numbers anywhere); its work is planned by the caller, with the sweep's
    (:func:`dpcalc.commands.matrix.plan.work`, :func:`mc_seconds`)."""

    samples = mc_count(p)
    confidence = MC_CONFIDENCE if p.confidence is None else p.confidence
    K = bb.mode_gram(s, part.b) if s.nonnegative else None
    up, est = bb.epsilon_mc(
        s,
        part.b,
        g["sigma"],
        g["delta"],
        samples=samples,
        confidence=confidence,
        seed=p.seed or 0,
        gram=K,
        mapper=execution.mapper(),
    )
    deltas = np.broadcast_to(np.asarray(g["delta"], float).reshape(-1), up.shape)
    note = [mc_note(samples, float(d), confidence, bool(np.isfinite(u))) for u, d in zip(up, deltas)]
    return up, est, note, samples, confidence


def mmcc_sigma_rows(s, part, sens, g, p):
    """The smallest σ of each (target, δ) by MMCC (:mod:`dpcalc.engine.matrix.mmcc_calibration`): searched
    from a start at DP-SGD's σ (same rate and steps) times ‖C·1‖/√n, up to the unamplified Gaussian's σ (which
    MMCC always meets)."""

    C = mmcc.causal_matrix(s)
    per_step = sens.value / math.sqrt(s.n)  # ‖C·1‖/√n: C = I gives DP-SGD's σ as the start
    n = g["delta"].size
    sigma, eps, lower, est = (np.full(n, np.nan) for _ in range(4))
    note = []
    for i in range(n):
        target, delta = float(g["target"][i]), float(g["delta"][i])
        hi = float(acc.unamplified_sigma(sens.value, target, delta)) * (1 + SIGMA_RTOL)
        guess, _ = calibrate_noise(part.q, s.n, delta, target, accountant="rdp", rtol=1e-3)
        res = mmcc_calibration.mmcc_sigma(
            C,
            part.q,
            target,
            delta,
            start=float(guess) * per_step,
            hi=hi,
            rtol=SIGMA_RTOL,
            eps_error=p.eps_error,
            unamplified_sensitivity=sens.value,
            label=s.label,
        )
        if res.sigma is None:  # MMCC is never above the unamplified Gaussian, whose σ meets the target
            sigma[i] = hi
            eps[i] = float(np.asarray(acc.unamplified_epsilon(sens.value, hi, delta)).reshape(-1)[0])
            note.append(
                f"{NOTES['mmcc']}; noise_multiplier: the unamplified Gaussian's (which MMCC never exceeds): no "
                f"MMCC computation below it could be run within the search's limits ({res.evaluations} tried)"
            )
            continue
        r = res.answer
        sigma[i], eps[i] = res.sigma, r.upper
        if r.of_run:
            lower[i], est[i] = r.lower, r.estimate
        how = (
            f"σ/(1 + {SIGMA_RTOL:g}) computed and above the target"
            if res.neighbour_missed
            else "the search was cut short at its work limit: a smaller σ may meet the target too"
        )
        note.append(
            f"{NOTES['mmcc']}; noise_multiplier: the smallest found by a monotone search ({res.evaluations} "
            f"MMCC evaluations; {how}); δ_tail = {r.tail_delta:.3g}, largest p̃ {r.max_p_tilde:.4g}"
            + ("; the unamplified Gaussian was smaller: reported" if r.unamplified else "")
            + _mmcc_bracket_note(r)
        )
    return sigma, eps, lower, est, note


def mmcc_refusal(s, part, solve) -> str | None:
    """Why the mmcc row does not apply, or None."""
    if part.kind != "poisson":
        return "mmcc needs Poisson sampling over the whole run (--participation poisson:q=Q)"
    if not s.nonnegative:
        return f"mmcc needs C >= 0 entrywise; {s.label} has negative entries"
    return None


def mmcc_epsilon_rows(s, part, sens, g, p):
    """ε of each (σ, δ) by MMCC (:mod:`dpcalc.engine.matrix.mmcc`): (σ, upper, lower, estimate, notes)."""

    C = mmcc.causal_matrix(s)
    pairs = mmcc_posterior.find_pairs(C, part.q)
    sig, dl = np.broadcast_arrays(np.asarray(g["sigma"], float), np.asarray(g["delta"], float))
    # one (σ, δ) at a time (each is computed on its own, the same numbers as together): the engine's limit of
    # operations is one evaluation's, and a sweep of many is estimated (mmcc_seconds), never refused
    res = [
        r
        for x, d in zip(sig.ravel().tolist(), dl.ravel().tolist())
        for r in mmcc.mmcc_epsilon(
            C,
            part.q,
            x,
            d,
            eps_error=p.eps_error,
            unamplified_sensitivity=sens.value,
            label=s.label,
            pairs=pairs,
            memory_cap=p.mmcc_memory_cap,
        )
    ]
    sigma = g["sigma"]
    eps = np.array([r.upper for r in res])
    lower, est = (
        np.array([getattr(r, k) if r.of_run else np.nan for r in res]) for k in ("lower", "estimate")
    )
    note = [
        f"{NOTES['mmcc']}; δ_tail = {r.tail_delta:.3g} for {r.pairs} (row, step) pairs, largest p̃ "
        f"{r.max_p_tilde:.4g}, {r.laws} row laws"
        + (
            "; the unamplified Gaussian (all p̃ = 1, δ_tail = 0) was smaller: reported"
            if r.unamplified
            else ""
        )
        + _mmcc_bracket_note(r)
        for r in res
    ]
    return sigma, eps, lower, est, note


def _mmcc_bracket_note(r) -> str:
    """What the row's bracket is of (docs/math.md §12.4): the run only where MMCC's laws are the run's own."""
    if r.of_run:
        return "; C has one entry per row and column and its laws are exact: the bracket is of the run itself"
    if r.unamplified:
        return "; no lower end or estimate for the run (the exact unamplified Gaussian bounds it from above only)"
    return (
        f"; the PLD bracket [{r.lower:.6g}, {r.upper:.6g}] is of MMCC's dominating construction (the row laws "
        "under p̃), not the run: no lower end or estimate for the run"
    )
