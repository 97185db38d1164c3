"""The batch samplers of ``dpcalc sgd-epsilon --sampling`` beyond the classic pairs: which accountant
covers which (sampling, neighbouring relation), the caption and the note of each row (docs/math.md §3.5).

The engine modules that import scipy (shuffle, the Monte Carlo accountant) are imported where they are
used, so that a single query of the other samplers loads no scipy.
"""

from __future__ import annotations

import numpy as np

from dpcalc.engine.dpsgd import accounting as sgd
from dpcalc.engine.dpsgd.accounting import check_setting as classic
from dpcalc.engine.dpsgd.allocation import rounds
from dpcalc.errors import InputError

#: The samplers analysed per allocation round (dpcalc.engine.dpsgd.allocation, docs/math.md §3.8).
ALLOCATION = ("balls-in-bins", "random-allocation")

#: The theorem and neighbouring relation behind each (accountant, sampling, neighbours) row.
_NOTES = {
    ("rdp", "poisson", "replace-one"): (
        "replace-one; upper bound: Mironov 2017 Prop. 11 (weak triangle, p = 2) over the exact add/remove "
        "RDP of Mironov-Talwar-Zhang 2019, capped by the Gaussian of sensitivity 2; loose, prefer pld"
    ),
    ("pld", "poisson", "replace-one"): (
        "replace-one; PLD of the pair (1-q)N(0,σ²)+qN(±1,σ²) (dp_accounting REPLACE_ONE; Schuchardt et al. "
        "2024): certified bracket"
    ),
    ("rdp", "truncated-poisson", "add-remove"): (
        "add/remove, N counts the example; upper bound: revealed mixture (arXiv:2508.15089) "
        "of the exact RDP at q (no batch cut) and at q̄ with sensitivity 2 (a cut batch)"
    ),
    ("pld", "truncated-poisson", "add-remove"): (
        "add/remove, N counts the example; PLD of the revealed mixture (arXiv:2508.15089): "
        "Poisson at q w.p. 1-p_T, sensitivity 2 at q̄ w.p. p_T; certified bracket"
    ),
    ("rdp", "truncated-poisson", "replace-one"): (
        "replace-one; upper bound: revealed mixture (arXiv:2508.15089) of the weak-triangle RDP bounds at q "
        "and at q̄ with σ/2; loose, prefer pld"
    ),
    ("pld", "truncated-poisson", "replace-one"): (
        "replace-one; PLD of the revealed mixture (arXiv:2508.15089) of the replace-one "
        "pairs at q and at q̄ with σ/2; certified bracket"
    ),
    ("rdp", "balls-in-bins", "add-remove"): (
        "add/remove; upper bound: each epoch a 1-of-floor(N/B) random allocation, its Rényi DP bounded as in "
        "Feldman & Shenfeld 2025 (arXiv:2502.08202, Thm 4.4 remove; add: the Laplace-transform bound of "
        "docs/math.md §3.8), ceil(steps/floor(N/B)) epochs composed"
    ),
    ("rdp", "random-allocation", "add-remove"): (
        "add/remove; upper bound: each example in k = ceil(q·(steps−1)) of the steps (= epochs), Feldman & Shenfeld 2025 "
        "(arXiv:2502.08202, Lemma 3.2 blocks, Thm 4.4 remove; add: the Laplace-transform bound of docs/math.md §3.8)"
    ),
    ("pld", "balls-in-bins", "add-remove"): (
        "add/remove; certified upper bound (no lower end): PLD of each epoch's 1-of-floor(N/B) allocation "
        "(Feldman & Shenfeld 2025, arXiv:2502.08202, Thm 3.1 pair) from the law of a sum of lognormals, "
        "bounded in convex order with every neglected mass counted (docs/math.md §3.10), epochs composed"
    ),
    ("pld", "random-allocation", "add-remove"): (
        "add/remove; certified upper bound (no lower end): PLD of the k = ceil(q·(steps−1)) blocks "
        "(Feldman & Shenfeld 2025, arXiv:2502.08202, Lemma 3.2), each a 1-of-block allocation from the law "
        "of a sum of lognormals, bounded in convex order (docs/math.md §3.10)"
    ),
    ("mc", "balls-in-bins", "add-remove"): (
        "add/remove; Monte Carlo (Chua et al. 2025, arXiv:2412.16802): epsilon is an upper bound only with "
        "probability confidence over the sampling (Hoeffding's KL bound), not a deterministic bound"
    ),
    ("shuffle", "shuffle", "replace-one"): (
        "replace-one; epsilon: upper bound, k = ceil(steps/floor(N/B)) Gaussians with r = 2/σ composed "
        "exactly (Balle-Wang 2018 Thm 8), no amplification; epsilon_lower: LOWER bound of Chua et al. 2024 "
        "(arXiv:2403.17673) for the shuffled run releasing every step"
    ),
}


def relation_caption(sampling: str, neighbors: str) -> str:
    """The words after "neighbours: …" in a caption."""
    if neighbors == "add-remove":
        return "sensitivity C" + ("; 2C in a cut batch" if sampling == "truncated-poisson" else "")
    if sampling == "poisson":
        return "sensitivity 2C: x replaced by −x, the pair (1−q)N(0,σ²)+qN(±1,σ²)"
    if sampling == "truncated-poisson":
        return "sensitivity 2C: x replaced by −x"
    return "sensitivity 2C: the theorem sees σ/2"


def pld_applies(sampling: str) -> bool:
    """Whether the pld accountant covers the sampler: Poisson sampling (plain or truncated, either relation)
    and the allocation samplers (add/remove)."""
    return sampling in ("poisson", "truncated-poisson", *ALLOCATION)


def pld_setting(sampling: str, neighbors: str, dataset_size=None, max_batch_size=None) -> dict:
    """The keywords of :func:`dpcalc.engine.dpsgd.pld_accounting.sgd_epsilon_pld` (and ``sgd_delta_pld``) beyond
    plain Poisson sampling under add/remove neighbours: the relation, truncated Poisson's N and B, an
    allocation sampler and its N (docs/math.md §3.5, §3.7, §3.10)."""
    out = {}
    if neighbors != "add-remove":
        out["neighbors"] = neighbors
    if sampling == "truncated-poisson":
        out.update(dataset_size=dataset_size, max_batch_size=max_batch_size)
    elif sampling in ALLOCATION:
        out.update(sampling=sampling, dataset_size=dataset_size)
    return out


def check_pld(sampling: str) -> None:
    """Refuse ``--accountant pld`` where :func:`pld_applies` is false, saying why."""
    if not pld_applies(sampling):
        raise InputError(
            "--accountant pld: the privacy loss distribution here is for Poisson sampling (plain or truncated) "
            f"and random allocation; use --accountant rdp for --sampling {sampling}"
        )


def row_notes(name: str, sampling: str, neighbors: str, notes, default: str, n: int) -> list:
    """The note column of one accountant's ``n`` rows: a row's own note (a refusal's reason) if it has
    one, else the theorem and neighbouring relation of the setting, else ``default``."""
    theorem = _NOTES.get((name, sampling, neighbors), default)
    if notes is None:
        return [theorem] * n
    return [note if note else theorem for note in notes]


def check_setting(sampling: str, neighbors: str) -> None:
    """As :func:`dpcalc.engine.dpsgd.accounting.check_setting`, with ``shuffle`` (replace-one only)."""
    if sampling == "shuffle":
        if neighbors != "replace-one":
            raise InputError(
                "--sampling shuffle with --neighbors add-remove: no theorem covers it here (the batches of a "
                "permutation are analysed under replace-one); use --neighbors replace-one"
            )
        return

    classic(sampling, neighbors)


def check_truncated(p) -> None:
    """What ``--sampling truncated-poisson`` needs (the dataset size and the cap) and what it does not answer
    yet (--tuning-runs); ``--max-batch-size`` belongs to it."""
    if p.sampling != "truncated-poisson":
        if p.max_batch_size is not None:
            raise InputError("--max-batch-size applies to --sampling truncated-poisson only")
        return
    if p.max_batch_size is None:
        raise InputError("--sampling truncated-poisson needs --max-batch-size (the largest batch kept)")
    if p.dataset_size is None:
        raise InputError(
            "--sampling truncated-poisson needs --dataset-size (how often a batch is cut depends on N)"
        )
    if p.tuning is not None:
        raise InputError("--tuning-runs is not supported with --sampling truncated-poisson")


def check_mc(p, solve) -> None:
    """``--accountant mc`` (balls-in-bins only, ε only) and its options, which belong to it."""
    if p.accountant != "mc":
        for option, value in (
            ("--mc-samples", p.mc_samples),
            ("--confidence", p.confidence),
            ("--seed", p.seed),
        ):
            if value is not None:
                raise InputError(f"{option} applies to --accountant mc (the Monte Carlo accountant) only")
        return
    if p.sampling != "balls-in-bins":
        raise InputError("--accountant mc: the Monte Carlo accountant is for --sampling balls-in-bins")
    if solve is not None:
        raise InputError(
            "--accountant mc does not answer --target-epsilon (each ε costs a Monte Carlo run); use --accountant rdp"
        )
    if p.tuning is not None:
        raise InputError("--tuning-runs applies to --accountant rdp, not mc")
    if p.seed is not None and not 0 <= p.seed < 2**63:  # the command line's option checks it too
        raise InputError(f"--seed: {p.seed} is out of range: must be a whole number in [0, 2^63 − 1]")


#: The most normal draws per direction of the Monte Carlo accountant (samples × steps of the run): the
#: default one million samples of one 234-step epoch, about 10 s; more is refused up front.
MC_WORK_MAX = 2.5e8


def mc_rows(p, g) -> dict:
    """The Monte Carlo rows of balls-in-bins (:mod:`dpcalc.engine.dpsgd.balls_in_bins_mc`): ε holding with
    probability ``p.confidence`` over the sampling, and the estimate."""
    # lazy: scipy (this engine module imports it); only --accountant mc needs it, a single query imports none
    from dpcalc.engine.dpsgd.balls_in_bins_mc import DEFAULT_SAMPLES, epsilon_balls_in_bins_mc

    m, _, epochs = rounds(g["q"], g["steps"], "balls-in-bins", g.get("n"))
    samples = DEFAULT_SAMPLES if p.mc_samples is None else p.mc_samples
    work = float(samples) * float(np.max(np.asarray(m, float) * np.asarray(epochs, float)))
    if work > MC_WORK_MAX:  # bounded work, before any draw: one normal per sample and step
        raise InputError(
            f"--mc-samples: {samples} samples × {work / samples:.0f} steps = {work:.3g} normal draws per "
            f"direction, more than {MC_WORK_MAX:.3g} (about 10 s); lower --mc-samples or the epochs, or use "
            "--accountant rdp or pld"
        )
    upper, est = epsilon_balls_in_bins_mc(
        g["sigma"], m, epochs, g["delta"], samples=p.mc_samples, confidence=p.confidence, seed=p.seed
    )
    n = g["q"].size
    upper, est = np.asarray(upper, float).reshape(n), np.asarray(est, float).reshape(n)
    e = sgd.Epsilon(upper, np.full(n, np.nan), np.zeros(n, bool), np.ones(n, bool))
    note = [
        ""
        if np.isfinite(u)
        else f"{p.mc_samples} samples cannot certify this δ at confidence {p.confidence}: "
        "raise --mc-samples (epsilon = inf)"
        for u in upper
    ]
    return dict(noise_multiplier=g["sigma"], steps=g["steps"], eps=e, estimate=est, note=note)


def check_shuffle(accountant: str, neighbors: str, solve, tuning) -> list[str]:
    """The accountants of ``--sampling shuffle`` (its own row), refusing what it does not answer."""
    check_setting("shuffle", neighbors)
    if accountant not in ("rdp", "all"):
        raise InputError(
            f"--accountant {accountant} does not apply to --sampling shuffle: its row is the exact composition "
            "of Gaussians (leave --accountant out)"
        )
    if solve is not None:
        raise InputError("--target-epsilon is not supported with --sampling shuffle yet: give every option")
    if tuning is not None:
        raise InputError("--tuning-runs is not supported with --sampling shuffle")
    return ["shuffle"]


def caption(sampling: str) -> str:
    """What a caption adds for the samplers of this module."""
    if sampling in ALLOCATION:
        return (
            "; balls-in-bins: an epoch is floor(N/B) steps (floor(1/q) without --dataset-size), each example in "
            "one uniformly random step of each epoch; steps = ceil(epochs × that)"
            if sampling == "balls-in-bins"
            else "; random-allocation: each example in k = ceil(q·(steps − 1)) of all the steps (the epochs, with "
            "--epochs), chosen uniformly"
        )
    if sampling == "truncated-poisson":
        return (
            "; truncated-poisson: Poisson batches cut to a random subset of max_batch_size when larger; "
            "dataset_size N counts the example (its neighbour has N − 1)"
        )
    if sampling != "shuffle":
        return ""
    return (
        "; shuffle: epsilon is a certified upper bound (no amplification), epsilon_lower a LOWER bound "
        "(Chua et al. 2024): the true ε lies between them; publish epsilon; an epoch is floor(N/B) steps "
        "(floor(1/q) without --dataset-size), steps = ceil(epochs × that)"
    )


def shuffle_steps(g):
    """The steps of ``g["epochs"]`` shuffled epochs of ⌊N/B⌋ batches each."""
    # lazy: scipy (dpcalc.engine.dpsgd.shuffle imports it); only shuffled and balls-in-bins epochs need it
    from dpcalc.engine.dpsgd.shuffle import steps_per_epoch

    m = steps_per_epoch(g["q"], g.get("n"), g.get("b"))
    return np.maximum(np.ceil(g["epochs"] * m), 1.0)


def shuffle_rows(g) -> dict:
    """The shuffle row of each combination of ``g`` (flat arrays): the upper and the lower bound on ε
    (:mod:`dpcalc.engine.dpsgd.shuffle`)."""
    # lazy: scipy (dpcalc.engine.dpsgd.shuffle imports it); only --sampling shuffle needs it
    from dpcalc.engine.dpsgd import shuffle

    m = shuffle.steps_per_epoch(g["q"], g.get("n"), g.get("b"))
    upper, _ = shuffle.epsilon_shuffle_upper(g["sigma"], g["steps"], g["delta"], m)
    lower = shuffle.epsilon_shuffle_lower(g["sigma"], g["steps"], g["delta"], m)
    n = g["q"].size
    e = sgd.Epsilon(upper, np.full(n, np.nan), np.zeros(n, bool), np.ones(n, bool))
    return dict(noise_multiplier=g["sigma"], steps=g["steps"], eps=e, lower=lower)
