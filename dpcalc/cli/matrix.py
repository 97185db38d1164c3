"""``dpcalc matrix``: the options of the matrix mechanism's accounting (docs/math.md §12); the work is
:func:`dpcalc.commands.matrix.command.matrix`."""

from __future__ import annotations

import click

from dpcalc.cli.common import common_options, eps_error_option, monte_carlo_options, run, single
from dpcalc.cli.run_options import noise_multiplier, run_options
from dpcalc.cli.tradeoff import refuse_with, risk_options, risk_question, tradeoff_options, with_max_tpr
from dpcalc.cli.types import Grid
from dpcalc.cli.work_options import work_options
from dpcalc.commands.choices import MATRIX_METHODS

MAN_EXAMPLES = [
    (
        "One epoch of 1000 steps as DP-SGD (C = I) and as banded square-root factorizations, each example once:",
        "dpcalc matrix --strategy identity --strategy sqrt:bands=16 --steps 1000 --noise-multiplier 5 "
        "--delta 1e-6",
    ),
    (
        "BandMF with 4 bands, cyclic Poisson sampling over 4 partitions at q = 0.25: amplified and not:",
        "dpcalc matrix --strategy sqrt:bands=4 --steps 1000 --participation cyclic-poisson:b=4,q=0.25 "
        "--noise-multiplier 1 --delta 1e-6",
    ),
    (
        "MMCC: the 4-banded square root over 200 steps, Poisson sampling at q = 0.01 over the whole run:",
        "dpcalc matrix --strategy sqrt:bands=4 --steps 200 --participation poisson:q=0.01 --noise-multiplier 1 "
        "--delta 1e-6",
    ),
    (
        "A buffered linear Toeplitz (BLT) strategy with two buffers beside the square root, 5 epochs of 200 steps:",
        "dpcalc matrix --strategy 'blt:theta=0.9|0.5,omega=0.1|0.6' --strategy sqrt --steps 1000 "
        "--participation min-sep:k=5,b=200 --noise-multiplier 4 --delta 1e-6",
    ),
    (
        "Balls-in-bins over 100 bins, four cycles: the Monte Carlo row beside the unamplified one:",
        "dpcalc matrix --strategy sqrt:bands=4 --steps 400 --participation balls-in-bins:b=100 --noise-multiplier 2 "
        "--delta 1e-4 --mc-samples 200000",
    ),
    (
        "The most steps of the banded square root at σ = 4 within ε = 3, each example at most 5 times, 200 apart:",
        "dpcalc matrix --strategy sqrt:bands=16 --participation min-sep:k=5,b=200 --noise-multiplier 4 "
        "--target-epsilon 3 --delta 1e-6",
    ),
    (
        "What an attacker can do: the largest advantage TPR − FPR of any membership test, unamplified and amplified:",
        "dpcalc matrix --strategy identity --strategy sqrt:bands=4 --steps 1000 --participation "
        "cyclic-poisson:b=4,q=0.02 --noise-multiplier 4 --advantage",
    ),
    (
        "The trade-off curve of the 16-banded square root at three step counts (a sweep of --steps):",
        "dpcalc matrix --strategy sqrt:bands=16 --steps 500:1500:500 --participation cyclic-poisson:b=16,q=0.08 "
        "--noise-multiplier 4 --fpr 1e-3,1e-2 --method bandmf-pld",
    ),
    (
        "The noise for ε = 3 of 5 epochs of 200 steps (min-separation 200):",
        "dpcalc matrix --strategy sqrt:bands=8 --steps 1000 --participation min-sep:k=5,b=200 --target-epsilon 3 "
        "--delta 1e-6",
    ),
]

MAN_NOTES = """\
The run releases A·G + B·Z for a workload A = B·C: G the clipped gradient sums (one per step, clipping
norm 1), Z ~ N(0, σ²) per entry; its privacy is that of C·G + Z (docs/math.md §12).  --noise-std S
--clip-norm NORM gives σ = S / NORM: S the standard deviation of each entry of Z when the per-example
gradients are clipped to NORM (the caption names the quotient).

Strategies (--strategy, repeatable): identity (DP-SGD); toeplitz:coef=c0|c1|... (alias banded: the
lower-triangular Toeplitz C with those diagonals, b = len(coef) bands) or toeplitz:path=FILE (the
coefficients from a text file — numbers separated by commas, spaces or new lines — or a 1-D .npy array); sqrt (the square root of the
prefix-sum workload, c_k = C(2k,k)/4^k: Fichtenberger, Henzinger & Upadhyay 2023) and sqrt:bands=b (its
first b coefficients: Kalinin & Lampert 2024); blt:theta=θ1|θ2|...,omega=ω1|ω2|... (a buffered linear
Toeplitz C: c_0 = 1, c_k = Σ_i ω_i θ_i^(k−1), Dvijotham et al. 2024, arXiv:2404.16706; buf_decay and
output_scale are aliases of theta and omega, as jax_privacy names them); tree (the binary tree of DP-FTRL, Kairouz et al. 2021);
file:path=FILE (a square lower-triangular C, CSV or .npy, checked).

Participation (--participation): single (each example once); min-sep:k=K,b=B (at most K times, at least B
steps apart: K epochs of B steps); cyclic-poisson:b=B,q=Q (the examples in B partitions, step i uses
partition i mod B, each example with probability Q); poisson:q=Q (each example in every step with
probability Q); balls-in-bins:b=B (each example in every step of one of B partitions, chosen uniformly at
random, the same in every cycle).

sensitivity: the largest ‖C·ΔG‖ over the participation (sensitivity_exact true: exact, by a theorem
named in the note — single participation; McKenna et al. 2024, Thm 2 for non-negative non-increasing
Toeplitz C; non-overlapping columns of a banded C; a non-negative C under cyclic participation — else a
certified upper bound).

gaussian: no amplification, the Gaussian mechanism with that sensitivity (Balle & Wang 2018), exact.
bandmf-rdp: amplified BandMF (Choquette-Choo et al. 2023, Thm 4) for a C with at most B bands under cyclic
Poisson sampling: DP-SGD with Poisson sampling at rate Q, ceil(n/B) steps and noise σ / max column norm, by
DP-SGD's rdp accountant (no lower end).
bandmf-pld: the same run itself, per partition: an example of partition k takes part in steps k, k+B, ...
whose columns of C do not overlap, so the run is the composition of Poisson-subsampled Gaussians at noise
σ / ‖C e_j‖ over those steps; epsilon_lower and epsilon bracket the worst partition's (a certified PLD
bracket, the upper end also capped by Thm 4's). Beyond 64 different noise multipliers: Thm 4's upper end
alone, with no epsilon_lower or epsilon_estimate (that bracket is of the dominating DP-SGD, not the run).
mmcc: MMCC (Choquette-Choo, Ganesh, Steinke & Thakurta 2024, arXiv:2310.15526, Thm 4.8 and the conditional
composition of Thm 3.1) for a non-negative C under poisson:q=Q: each row a mixture of Gaussians whose
participation probabilities p̃ bound the posterior given the earlier rows outside tail events of total
probability δ_tail = δ/2, composed by a certified PLD at δ − δ_tail (the unamplified Gaussian where smaller):
a certified upper bound only. Its PLD bracket (in the note) is of that dominating construction, not the run,
so epsilon_lower and epsilon_estimate are empty — except where C has one entry per row and column and the
laws are exact (C = I: DP-SGD), where the bracket is the run's.
mc: balls-in-bins participation (balls-in-bins:b=B) by Monte Carlo for a non-negative C: the pair of
Choquette-Choo et al. 2025 (arXiv:2410.06266), a b-dimensional mixture of Gaussians — it dominates the run and
is the run's own in its worst case, so epsilon_estimate estimates the run's ε — sampled --mc-samples times per
direction; ε holds with probability --confidence over the sampling (never a certified bound: -q and budget
checks skip it); ε only.

--steps takes a list or a range: one set of rows per step count, in that order, as separate runs would give them; a
file:path= strategy fixes n and takes one --steps.  A sweep of any size (up to 10⁸ rows) is computed, not refused:
its work is estimated from measured costs of each accountant before anything runs, said on stderr when above 3 s,
capped by --max-seconds, shown by a bar on a terminal, and its runs (step count, strategy, pattern, method) spread
over every core (--jobs) or a dask cluster (--scheduler), the rows in the same order; with an mc row, the runs go in
order and each run's Monte Carlo samples are spread instead.

--fpr, --advantage, --prior (in place of --delta) read each row's privacy profile in an attacker's terms, with
sgd-epsilon's columns and rules (TRADE-OFF COLUMNS, RISK COLUMNS; docs/math.md §10, §10.4, §12.6): gaussian is
μ-GDP at μ = Δ/σ, its trade-off curve Φ(Φ⁻¹(α) + μ) — the run itself, with lower ends, where the participation is
deterministic and Δ exact, else an upper bound only; bandmf-rdp the Rényi curve's profile (an upper bound);
bandmf-pld the run's per-partition PLD bracket (Thm 4's upper end alone, no lower end, beyond its limits); mmcc an
upper bound (its tail events at a probability fixed in advance: 10⁻³ of the smallest δ asked, 10⁻⁴ of the smallest
--fpr), with lower ends only where its laws are the run's; mc: advantage and success that hold with probability
--confidence, each at its own ε (never judged by -q or a budget), and no trade-off row (a minimum over many ε,
which that confidence does not cover: its note says so).  --target-advantage A (or --target-tpr T with --fpr F)
with --delta and the noise left out: the least noise multiplier of each gaussian, bandmf-rdp and bandmf-pld row
whose certified advantage (TPR at F) is at most the target, by sgd-epsilon's monotone search (σ/1.0001 computed
and above it), with its ε at --delta; mmcc and mc rows say why they are not calibrated.

--target-epsilon: the smallest noise multiplier of each row (exact for gaussian; within a factor 1.0001,
conservative, for the bandmf and mmcc rows — bandmf-pld by a monotone search of its own ε below Thm 4's σ,
mmcc by a monotone search of MMCC computations, at most 16, started from DP-SGD's σ times ‖C·1‖/√n); with --noise-multiplier and no --steps, the largest number of steps
(a search: ε computed at the answer and found within the target, one more step computed and above it; mmcc
up to 2048 steps). mc answers ε only."""


@click.command("matrix")
@click.option(
    "--strategy",
    "strategies",
    multiple=True,
    required=True,
    metavar="STRATEGY",
    help="The strategy C (repeatable): identity, toeplitz:coef=c0|c1|... (or path=FILE of them), sqrt, sqrt:bands=B, "
    "blt:theta=θ1|..,omega=ω1|.. (buffered linear Toeplitz), tree or file:path=FILE (a square lower-triangular "
    "matrix, CSV or .npy).",
)
@click.option(
    "--steps",
    type=Grid(lo=1, hi=1_000_000, lo_open=False, integer=True),
    default=None,
    help="Steps n of the run (columns of C), in [1, 1000000]; a list or range sweeps it (rows for each; not with a "
    "file:path= strategy, whose C fixes n); leave out with --target-epsilon and --noise-multiplier to solve for "
    "the largest.",
)
@click.option(
    "--participation",
    multiple=True,
    metavar="PATTERN",
    help="single (the default), min-sep:k=K,b=B (at most K times, B steps apart), cyclic-poisson:b=B,q=Q (B "
    "partitions, each example with probability Q at each step of its partition), poisson:q=Q (each example "
    "with probability Q at every step) or balls-in-bins:b=B (each example in every step of one of B partitions, "
    "chosen at random); repeatable: rows for each.",
)
@click.option(
    "--noise-multiplier",
    "--sigma",
    "sigma",
    type=Grid(lo=0),
    default=None,
    help="Noise standard deviation / clipping norm (> 0); leave out with --target-epsilon.",
)
@run_options(
    {
        "--noise-std": "Instead of --noise-multiplier, with --clip-norm: the standard deviation S of each entry of the "
        "noise Z (> 0), the noise the strategy correlates, on the sums of the clipped per-example gradients; the "
        "noise multiplier is S / clip norm, named in the caption.",
        "--clip-norm": "With --noise-std: the clipping norm of each per-example gradient (> 0; one value).",
    },
    {"--clip-norm": "NORM"},
)
@click.option(
    "--delta",
    type=Grid(lo=0, hi=1, hi_open=True),
    default=None,
    help="Target δ in (0, 1) (required, except with --fpr, --advantage or --prior, which replace it as the question).",
)
@click.option(
    "--target-epsilon", type=Grid(lo=0), default=None, help="Solve for the smallest noise multiplier."
)
@click.option(
    "--method",
    type=click.Choice([*MATRIX_METHODS, "all"]),
    default="all",
    show_default=True,
    help="gaussian (no amplification, exact), bandmf-rdp / bandmf-pld (amplified BandMF: cyclic Poisson "
    "sampling and a banded C), mmcc (MMCC: Poisson sampling, C >= 0), mc (balls-in-bins by Monte Carlo, C >= 0: "
    "a bound with a confidence), or all that apply.",
)
@eps_error_option
@monte_carlo_options(
    "mc (balls-in-bins)",
    "about 9 s of CPU per million samples for b = 100 bins, growing as b², spread over every core; any number is "
    "computed, in bounded memory (--max-seconds caps it)",
)
@tradeoff_options
@risk_options(
    target=True,
    what="Leave out the noise: the least noise multiplier whose certified advantage is at most A, per row "
    "(gaussian, bandmf-rdp, bandmf-pld), with its ε at --delta.",
    tpr_what="With --fpr F, leave out the noise: the least noise multiplier whose certified TPR at F is at most T, "
    "per row (gaussian, bandmf-rdp, bandmf-pld), with its ε at --delta.",
)
@work_options
@common_options
def command(
    strategies,
    steps,
    participation,
    sigma,
    noise_std,
    clip_norm,
    delta,
    target_epsilon,
    method,
    eps_error,
    mc_samples,
    confidence,
    seed,
    fpr,
    max_tpr,
    advantage,
    prior,
    max_advantage,
    target_advantage,
    target_tpr,
    out,
):
    """Correlated noise: ε of matrix-factorization training (DP-FTRL, BandMF).

    For each strategy C: its sensitivity under the participation pattern, and ε without amplification (the
    Gaussian mechanism) and, under cyclic Poisson sampling with a banded C, amplified BandMF (rdp and a
    certified pld bracket); under Poisson sampling with C >= 0, MMCC (a certified pld bracket); under
    balls-in-bins with C >= 0, a Monte Carlo bound with a confidence.  With --target-epsilon: the smallest
    noise multiplier instead.
    """
    eps_error = single(eps_error, "--eps-error")
    # the noise is what a target solves for, except --target-epsilon without --steps (then the steps are)
    solved = next(
        (
            o
            for o, v in (("--target-advantage", target_advantage), ("--target-tpr", target_tpr))
            if v is not None
        ),
        "--target-epsilon" if target_epsilon is not None and steps is not None else None,
    )
    sigma, noise = noise_multiplier(sigma, noise_std, clip_norm, solved=solved)
    out = with_max_tpr(out, fpr, max_tpr)
    out, risk = risk_question(out, fpr, advantage, prior, max_advantage, target_advantage, target_tpr)
    if target_tpr is None:
        refuse_with(fpr, **{"--delta": delta, "--target-epsilon": target_epsilon})
    target = target_advantage if target_tpr is None else target_tpr
    if risk and target is None and delta is not None:
        raise click.UsageError(
            "--advantage/--prior replace --delta as the question (--delta goes with --target-advantage)"
        )
    if risk and target_epsilon is not None:
        raise click.UsageError("--target-epsilon cannot be used with --advantage/--prior/--target-advantage")
    if delta is None and fpr is None and not risk:
        ctx = click.get_current_context()
        raise click.MissingParameter(ctx=ctx, param=next(q for q in ctx.command.params if q.name == "delta"))
    # lazy: the command's work (numpy, the engine) loads when it runs, never for --help or completion
    from dpcalc.commands.matrix import command as cmd

    params = cmd.MatrixParams(
        strategies=list(strategies),
        steps=steps,
        delta=delta,
        sigma=sigma,
        target_epsilon=target_epsilon,
        participation=list(participation) or "single",
        method=method,
        eps_error=eps_error,
        mc_samples=mc_samples,
        confidence=confidence,
        seed=seed,
        noise_std=noise,
    )
    if risk or fpr is not None:  # an attacker's terms (docs/math.md §10, §10.4, §12.6)
        from dpcalc.commands.matrix import risk as matrix_risk  # lazy: with the command's work

        if target is not None:
            at = None if target_tpr is None else float(fpr[0])
            goal = single(target, "--target-advantage" if target_tpr is None else "--target-tpr")
            run(out, lambda: matrix_risk.matrix_target(params, prior, goal, at))
        elif risk:
            run(out, lambda: matrix_risk.matrix_risk(params, prior))
        else:
            run(out, lambda: matrix_risk.matrix_tradeoff(params, fpr))
        return
    run(out, lambda: cmd.matrix(params))
