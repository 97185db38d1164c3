"""``dpcalc sgd-epsilon``: the options of DP-SGD accounting (docs/math.md §3); the work is
:func:`dpcalc.commands.sgd_epsilon.sgd_epsilon`."""

from __future__ import annotations

import dataclasses
import sys

import click

from dpcalc.cli.common import common_options, eps_error_option, run, single
from dpcalc.cli.rdp_curve import curve_options, wanted
from dpcalc.cli.run_options import run_options
from dpcalc.cli.tradeoff import refuse_with, risk_options, risk_question, tradeoff_options, with_max_tpr
from dpcalc.cli.tuning import tuning_option
from dpcalc.cli.types import SEED_MAX, Grid
from dpcalc.commands.choices import GROUP_SIZE_MAX, SGD_ACCOUNTANTS, SGD_CONVERSIONS, SGD_SAMPLINGS

MAN_EXAMPLES = [
    (
        "ε of 60 epochs of DP-SGD on 60000 examples, batches of 256, noise multiplier 1.1, δ = 1e-5:",
        "dpcalc sgd-epsilon --noise-multiplier 1.1 --batch-size 256 --dataset-size 60000 --epochs 60 --delta 1e-5",
    ),
    (
        "The per-epoch curve, as CSV:",
        "dpcalc sgd-epsilon --sigma 1.1 --batch-size 256 --dataset-size 60000 --epochs 1:60:1 --delta 1e-5 -f csv",
    ),
    (
        "Every accountant side by side (exact RDP, the Abadi et al. closed form):",
        "dpcalc sgd-epsilon --sigma 4 --sample-rate 0.04 --steps 1000 --delta 1e-5 --accountant all",
    ),
    (
        "The smallest noise multiplier for ε <= 3:",
        "dpcalc sgd-epsilon --target-epsilon 3 --sample-rate 0.004267 --steps 14063 --delta 1e-5",
    ),
    (
        "The same with the tight accountant (certified, less noise):",
        "dpcalc sgd-epsilon --target-epsilon 3 --sample-rate 0.004267 --steps 14063 --delta 1e-5 --accountant pld",
    ),
    (
        "The largest number of steps within ε <= 2:",
        "dpcalc sgd-epsilon --target-epsilon 2 --sigma 4 --sample-rate 0.04 --delta 1e-5",
    ),
    (
        "The largest number of steps (and whole epochs) within ε <= 3, RDP beside the tight accountant:",
        "dpcalc sgd-epsilon --target-epsilon 3 --sigma 1.1 --batch-size 256 --dataset-size 60000 --delta 1e-5 "
        "--accountant all",
    ),
    (
        "The largest batch size for 60 epochs within ε <= 3 (leave the batch size out):",
        "dpcalc sgd-epsilon --target-epsilon 3 --sigma 1.1 --dataset-size 60000 --epochs 60 --delta 1e-5 "
        "--accountant pld",
    ),
    (
        "Fixed-size batches (sampling without replacement), replace-one neighbours:",
        "dpcalc sgd-epsilon --sigma 2 --batch-size 512 --dataset-size 50000 --steps 4900 --delta 1e-5 "
        "--sampling fixed-size --neighbors replace-one",
    ),
    (
        "Shuffled batches: the upper bound a shuffled run may publish, and the lower bound of Chua et al.:",
        "dpcalc sgd-epsilon --sigma 1.1 --batch-size 256 --dataset-size 60000 --epochs 60 --delta 1e-5 "
        "--sampling shuffle",
    ),
    (
        "Poisson batches capped at 300 (a larger batch is cut to a random 300):",
        "dpcalc sgd-epsilon --sigma 1.1 --batch-size 256 --dataset-size 60000 --epochs 60 --delta 1e-5 "
        "--sampling truncated-poisson --max-batch-size 300 --accountant pld",
    ),
    (
        "Balls-in-bins batches: the deterministic RDP bound, and one epoch by Monte Carlo (95 % confidence):",
        "dpcalc sgd-epsilon --sigma 1.1 --batch-size 256 --dataset-size 60000 --epochs 1 --delta 1e-5 "
        "--sampling balls-in-bins --accountant mc",
    ),
    (
        "Poisson batches under replace-one neighbours, tight:",
        "dpcalc sgd-epsilon --sigma 1.1 --batch-size 256 --dataset-size 60000 --epochs 60 --delta 1e-5 "
        "--neighbors replace-one --accountant pld",
    ),
    (
        "Tight accounting with a certified bracket, beside RDP:",
        "dpcalc sgd-epsilon --sigma 1.1 --sample-rate 0.004267 --steps 14063 --delta 1e-5 --accountant all",
    ),
    (
        "ε by steps for every accountant, drawn to a file:",
        "dpcalc sgd-epsilon --sigma 1.1 --sample-rate 0.004267 --steps 1000:14000:1000 --delta 1e-5 "
        "--accountant all --plot sgd.png",
    ),
    (
        "The best membership attack's true-positive rate at false-positive rates 1e-5 and 1e-3, every accountant:",
        "dpcalc sgd-epsilon --sigma 1.1 --sample-rate 0.004267 --steps 1000 --fpr 1e-5,1e-3 --accountant all",
    ),
    (
        "The Rényi curve of a run (no δ needed), and ε from that curve:",
        "dpcalc sgd-epsilon --sigma 1.1 --sample-rate 0.004267 --steps 14063 --rdp-curve -f csv | "
        "dpcalc convert --curve - --delta 1e-5",
    ),
]

MAN_NOTES = """\
rdp: the exact Rényi DP of the Poisson-subsampled Gaussian (Mironov, Talwar and Zhang 2019), at
integer orders by the binomial expansion and at fractional orders by the signed two-sided series or,
where that loses digits, a quadrature with a positive integrand (dp_accounting's absolute-value
series over-reports by up to 27%), times the steps, converted to (ε, δ) by --conversion and
minimised over 225 orders from 1.01 to 10^4 (the best order is the alpha column).  optimal: the
exact per-order conversion of Asoodeh et al. (on the orders around the best order of its closed
form); balle: Balle et al. 2020 / Canonne et al. 2020; mironov: Mironov 2017.

pld: privacy loss distributions of the Poisson-subsampled Gaussian (both directions of the
add/remove pair, the worse reported), composed by FFT: [epsilon_lower, epsilon] is a certified
bracket (pessimistic and optimistic discretisation, truncation and aliasing counted in), so epsilon
is the certified upper end as in every other row; epsilon_estimate, a value inside the bracket, is
not a bound.  Where the rdp bound is already 0 at δ (Poisson sampling: the total variation is at most
δ), the row is the exact [0, 0] without a PLD, and its note says so.  Budget checks and -q read epsilon.  --eps-error sets the
bracket width (default 0.5% of ε).  With --target-epsilon it answers the inverse questions with its
certified upper end: the smallest noise multiplier (about 5% less noise than RDP at typical
settings), the largest number of steps (about 15% more) and the largest sample rate or batch size;
each search starts from the RDP answer and needs a handful of PLD evaluations (interpolating in
log-log, then confirming the neighbouring value), about a second per target.

Bounded work: a sweep is refused up front (exit 2, one line naming the swept options, the count and
the limit) past about 10 s of CPU: 2000 configurations with the rdp accountant under Poisson or
shuffle sampling, 200 under fixed-size, 250 under truncated-Poisson, 10 under balls-in-bins or random
allocation, 50 with pld, 50000 with abadi or bassily (costs add up with --accountant all); a
--target-epsilon search costs 10 to 100 times more per configuration, the mc accountant its samples.

Sampling and neighbours: --sampling fixed-size uses the Wang, Balle and Kasiviswanathan 2019 bound
for sampling without replacement, an upper bound, under replace-one neighbours.  The noise
multiplier is the noise standard deviation over the clipping norm C: the sensitivity of the clipped
sum is C under add/remove and 2C under replace-one, so replace-one analyses σ/2.  Fixed-size batches
with add/remove are refused: no theorem here covers them.

--sampling poisson --neighbors replace-one: pld composes the pair (1−q)N(0,σ²)+qN(±1,σ²) (as
dp_accounting's REPLACE_ONE does; it also answers --target-epsilon); rdp is an upper bound by
Mironov's weak triangle inequality over the add/remove RDP (loose, about 2-3x the pld ε).  --sampling shuffle (replace-one): batches of B from a random permutation each epoch
(an epoch is floor(N/B) steps): epsilon is the certified upper bound without amplification (each
example in one step per epoch: the exact composition of Gaussians with r = 2/σ), epsilon_lower the
lower bound of Chua et al. 2024 (ICML, arXiv:2403.17673) for the run that releases every step.
Publish epsilon; the Poisson number does not apply to a shuffled run.
--sampling truncated-poisson --max-batch-size B (with --dataset-size N, which counts the example):
Poisson batches cut to a random subset of B when larger.  Revealing whether the other N − 1 examples
alone fill B, a step is Poisson at q (no cut) or, with probability P(Bin(N−1, q) >= B), the
subsampled Gaussian with sensitivity 2 at the rate q̄ of the example in a cut batch (arXiv:2508.15089;
dp_accounting's TruncatedSubsampledGaussianDpEvent): pld composes that mixture, rdp mixes the Rényi
moments.  Both answer --target-epsilon (one search per configuration) and --fpr; --rdp-curve prints the
mixed curve.
--sampling balls-in-bins: every epoch (floor(N/B) steps), each example in one uniformly random batch;
--sampling random-allocation: each example in exactly E = ceil(q·(steps−1)) random steps of the whole
run (the epochs).  Add/remove neighbours; rdp is the Rényi bound of Feldman & Shenfeld 2025
(arXiv:2502.08202) per allocation round, composed over rounds (--rdp-curve prints that curve); pld is
the certified PLD of the rounds (docs/math.md §3.10: the law of a sum of lognormals, bounded in convex
order, every neglected mass and the FFT round-off counted at +∞), an upper bound with no epsilon_lower,
tighter than rdp and at or below Poisson's pld at rate 1/t (noise multipliers from about 0.7 up; δ above
about 10^-11 per epoch of 234 steps, growing with the epoch's length).  Both answer --target-epsilon and
--fpr.
--accountant mc (balls-in-bins only, never part of all): the Monte Carlo accountant of Chua et al. 2025
(arXiv:2412.16802) — its epsilon holds with probability --confidence over the sampling (columns
confidence and samples; --seed fixes it), an estimate beside it; not a deterministic bound.

abadi: the moments-accountant closed form ε = ρT + sqrt(4ρT log(1/δ)), ρ = q²/((1−q)σ²) (Abadi et
al. 2016, Lemma 3's leading term); asymptotic, and a bound only under σ >= 1, q < 1/(16σ) and
α* − 1 <= σ² log(1/(qσ)): the valid column says whether they hold.

bassily: the noise formula of Bassily, Smith and Thakurta 2014 as in Bellet's 2022 slides, solved
for ε; a reference, valid for ε <= 1.

--epochs E means steps = ceil(E / sample rate).  --target-epsilon solves for the option left out:
the smallest noise multiplier (within a factor 1.0001), the largest number of steps (and the whole
epochs within them), or the largest sample rate (within a factor 1.0001; with --dataset-size, the
largest batch size, and with --epochs the steps follow from it); every answer is one at which ε was
computed and found within the target, and the next value (one step, one batch, a factor 1.0001) was
computed and found above it.  Every accountant answers these questions, pld included.  Solving for
the noise multiplier or the sample rate needs --target-epsilon >= 0.001 (smaller targets are refused:
those searches evaluate ε ever closer to 0, where it is not certified within bounded work).

--tuning-runs KIND:mean=M[,shape=η]: private hyperparameter tuning (Papernot and Steinke 2022): the
whole run is repeated K times, K ~ geometric, poisson, logarithmic or negative-binomial (shape
η > −1, η ≠ 0) with mean M, and the best model released.  rdp only (Thm 2, or Thm 6 for poisson,
applied to the run's curve, then --conversion); pld and abadi rows say it does not apply.  With
--target-epsilon it solves for the noise multiplier only: the smallest σ (within a factor 1.0001)
whose tuned ε is within the target; --rdp-curve refuses it.

--plot FILE draws the headline against the first swept option, one line per accountant (the PLD
bracket shaded; bounds whose conditions fail hollow and dotted).

--rdp-curve prints the rdp accountant's curve instead of ε: T times the per-step Rényi DP at each
order of --alphas (default: the 225 orders ε is minimised over), one curve per configuration, in the
columns of RDP CURVE COLUMNS; --delta and --conversion are not needed and do not change it;
--target-epsilon and the other accountants are refused.  dpcalc convert --curve - reads its CSV as it
is and gives the rdp row's ε: exactly with --conversion balle or mironov; with optimal, equal or
lower (the accountant evaluates the exact conversion on a window of orders around its best one).

--fpr X[,...]: for each false-positive rate α, tpr_upper, a certified upper bound on the
true-positive rate of every membership test at α (docs: compose --fpr): rdp from the profile of the
Rényi curve, pld a certified bracket [tpr_lower, tpr_upper]; with --accountant all also
clt-asymptotic, the central-limit μ = q·sqrt(T(e^(1/σ²) − 1)) of Dong, Roth and Su 2022 and Bu et
al. 2020 (an approximation, not a bound, never judged), and exact at q = 1 (μ = √T/σ, TPR =
Φ(Φ⁻¹(α) + μ)).  Poisson sampling (either relation), truncated Poisson (one --max-batch-size and
--dataset-size; rdp and pld), balls-in-bins and random allocation (rdp, and pld with tpr_upper only);
replaces --delta; --max-tpr T is its budget check (exit 3)."""


#: The words of the DP-SGD run options (declared in dpcalc.cli.run_options) in sgd-epsilon's help.
RUN_HELP = {
    "--noise-multiplier": "Noise standard deviation / clipping norm (> 0). Leave out with --target-epsilon to solve "
    "for it.",
    "--sample-rate": "Sampling probability q in (0, 1].",
    "--batch-size": "Batch size B (q = B/N).",
    "--dataset-size": "Dataset size N (with --batch-size; also checks δ < 1/N).",
    "--max-batch-size": "With --sampling truncated-poisson: the largest batch kept; a larger Poisson batch is cut to a "
    "random subset of this size (needs --dataset-size).",
    "--steps": "Number of steps T: optimizer steps (noise additions); with --accumulation-steps, one per logical "
    "batch, not one per micro-batch.",
    "--epochs": "Epochs E: steps = ceil(E / sample rate).",
}


@click.command("sgd-epsilon")
@run_options(RUN_HELP)
@click.option(
    "--physical-batch-size",
    type=click.IntRange(min=1),
    default=None,
    metavar="B",
    help="Gradient accumulation: the micro-batch B of one forward/backward pass (with --accumulation-steps and "
    "--dataset-size, instead of --batch-size / --sample-rate).  Noise is added once per optimizer step over the "
    "logical batch B·A: q = B·A/N.",
)
@click.option(
    "--accumulation-steps",
    type=click.IntRange(min=1),
    default=None,
    metavar="A",
    help="Gradient accumulation: micro-batches per optimizer step (with --physical-batch-size); the logical "
    "batch is B·A, --steps counts optimizer steps, --epochs gives ceil(E·N/(B·A)) of them.",
)
@click.option(
    "--schedule",
    type=click.Path(dir_okay=False, allow_dash=True),
    default=None,
    metavar="FILE",
    help="A run in phases instead of --noise-multiplier/--sample-rate/--steps: a CSV file (header; one phase a line: "
    "noise_multiplier, sample_rate or batch_size [with dataset_size], steps or epochs; optionally sampling and "
    "max_batch_size) or JSON (an Opacus "
    "history [[noise_multiplier, sample_rate, steps], ...], or an object with one); - reads standard input.  "
    "One row per phase: ε after it.  One phase's noise_multiplier may be ? (JSON null): with --target-epsilon, "
    "the least noise for it.",
)
@click.option(
    "--write-dp-event",
    is_flag=True,
    help="Print the run's DpEvent (dp-accounting's named-tuple form, as JSON) instead of accounting for it: one "
    "configuration, Poisson, truncated Poisson or fixed-size sampling (use dp-accounting's neighbouring relation "
    "to match --neighbors).",
)
@click.option(
    "--delta",
    type=Grid(lo=0, lo_open=False, hi=1, hi_open=True),
    default=None,
    help="Target δ in [0, 1) (required, except with --rdp-curve).  At δ = 0 every accountant reports "
    "ε = inf: the subsampled Gaussian's privacy loss is unbounded (not with --target-epsilon).",
)
@click.option(
    "--accountant",
    type=click.Choice([*SGD_ACCOUNTANTS, "all"]),
    default="rdp",
    show_default=True,
    help="rdp (exact RDP), pld (privacy loss distributions: a certified [lower, upper] bracket; random "
    "allocation: the certified upper end), "
    "abadi (closed form, asymptotic), bassily (reference), mc (balls-in-bins by Monte Carlo: a bound with a "
    "confidence; only when asked for), rdp-group and dp-group (with --group-size: the RDP group property and "
    "the (ε, δ) group conversion of the example-level bound, for comparison), or all that apply.",
)
@click.option(
    "--group-size",
    type=Grid(lo=1, hi=GROUP_SIZE_MAX, lo_open=False, integer=True),
    default=None,
    metavar="K",
    help="What the run promises a person who contributed K examples (1 <= K <= 10000; 1, the default: one "
    "example; a list or range sweeps K, the column group_size).  With "
    "Poisson sampling the rdp and pld rows are tight (each step the mixture of Ganesh 2024, Thm 3.1); "
    "--accountant all adds the rdp-group and dp-group comparison rows.  Users sampled as units (a user's "
    "whole contribution clipped together) are plain DP-SGD with users as --dataset-size: no --group-size.",
)
@eps_error_option
@click.option(
    "--conversion",
    type=click.Choice(SGD_CONVERSIONS),
    default="optimal",
    show_default=True,
    help="RDP → (ε, δ) conversion of the rdp accountant.",
)
@click.option(
    "--sampling",
    type=click.Choice(list(SGD_SAMPLINGS)),
    default="poisson",
    show_default=True,
    help="poisson (each example with probability q), fixed-size (a uniformly random batch of B), "
    "truncated-poisson (Poisson batches cut at --max-batch-size), shuffle (batches of B from a random "
    "permutation each epoch: an upper bound without amplification and a lower bound), balls-in-bins (each "
    "example in one random batch of each epoch), or random-allocation (each example in E = ceil(q·(steps−1)) "
    "random steps of the run: the epochs).",
)
@click.option(
    "--neighbors",
    type=click.Choice(["add-remove", "replace-one"]),
    default=None,
    help="Neighbouring relation [default: replace-one for fixed-size and shuffle, else add-remove].",
)
@click.option(
    "--mc-samples",
    type=click.IntRange(min=1000),
    default=None,
    metavar="N",
    help="--accountant mc: Monte Carlo samples per direction [default: 1000000]; more samples certify "
    "smaller δ (about 10 s per million samples per epoch of 234 steps; samples × steps above 2.5e8 are refused).",
)
@click.option(
    "--confidence",
    type=click.FloatRange(min=0.5, max=1.0, min_open=False, max_open=True),
    default=None,
    help="--accountant mc: the probability, over the sampling, with which its ε is an upper bound "
    "[default: 0.95].",
)
@click.option(
    "--seed",
    type=click.IntRange(0, SEED_MAX),
    default=None,
    help="--accountant mc: the seed of the sampling [default: 0; fixed, so reproducible].",
)
@click.option(
    "--target-epsilon",
    type=Grid(lo=0),
    default=None,
    help="Solve for the option left out (noise multiplier, steps/epochs, or sample rate/batch size) so that "
    "ε <= this.",
)
@click.option(
    "--jobs",
    type=click.IntRange(min=1),
    default=None,
    metavar="N",
    help="Processes for a large sweep [default: one per core from 8192 rows, else 1].",
)
@tradeoff_options
@risk_options(target=True)
@tuning_option
@curve_options
@common_options
def command(
    sigma,
    sample_rate,
    batch_size,
    dataset_size,
    max_batch_size,
    steps,
    epochs,
    physical_batch_size,
    accumulation_steps,
    schedule,
    write_dp_event,
    delta,
    accountant,
    group_size,
    conversion,
    sampling,
    neighbors,
    mc_samples,
    confidence,
    seed,
    target_epsilon,
    eps_error,
    jobs,
    fpr,
    max_tpr,
    advantage,
    prior,
    max_advantage,
    target_advantage,
    target_tpr,
    tuning,
    out,
    rdp_curve=False,
    alphas=None,
):
    """DP-SGD accounting: ε of a training run, or the noise / steps for a target ε.

    Give the noise multiplier, the sample rate (--sample-rate, or --batch-size with --dataset-size),
    the length (--steps, or --epochs) and --delta.  With --target-epsilon, leave out the noise
    multiplier (to get the smallest one), the length (to get the largest number of steps) or the
    sample rate (to get the largest one; the largest batch size with --dataset-size).
    Every numeric option takes sweeps; the output has one row per combination and accountant.
    With --rdp-curve, the Rényi curve of each configuration instead (no --delta needed).
    """
    out = with_max_tpr(out, fpr, max_tpr)
    out, risk = risk_question(out, fpr, advantage, prior, max_advantage, target_advantage, target_tpr)
    accumulation = _accumulation(
        physical_batch_size, accumulation_steps, batch_size, sample_rate, dataset_size
    )
    if accumulation is not None:
        batch_size = [accumulation[0] * accumulation[1]]  # the logical batch: q = B·A/N, noise once per step
    if schedule is not None:
        _schedule(
            schedule,
            out,
            delta,
            accountant,
            neighbors,
            conversion,
            eps_error,
            sampling,
            dataset_size,
            target_epsilon,
            **{
                "--noise-multiplier": sigma,
                "--sample-rate": sample_rate,
                "--batch-size": batch_size,
                "--steps": steps,
                "--epochs": epochs,
                "--max-batch-size": max_batch_size,
                "--physical-batch-size": physical_batch_size,
                "--tuning-runs": tuning,
                "--fpr": fpr,
                "--write-dp-event": write_dp_event or None,
                "--rdp-curve": rdp_curve or None,
            },
        )
        return
    if target_tpr is None:
        refuse_with(fpr, **{"--delta": delta, "--rdp-curve": rdp_curve, "--tuning-runs": tuning})
    target = target_advantage if target_tpr is None else target_tpr
    if risk:
        _refuse_with_risk(target, delta, rdp_curve, tuning, write_dp_event)
    if (
        not wanted(rdp_curve, alphas, out)
        and delta is None
        and fpr is None
        and not write_dp_event
        and not risk
    ):
        ctx = click.get_current_context()
        raise click.MissingParameter(ctx=ctx, param=next(q for q in ctx.command.params if q.name == "delta"))
    # lazy: the command's work (numpy, the engine) loads when it runs, never for --help or completion
    from dpcalc.commands import sgd as cmd

    params = cmd.SgdEpsilonParams(
        delta=delta,
        sigma=sigma,
        sample_rate=sample_rate,
        batch_size=batch_size,
        dataset_size=dataset_size,
        max_batch_size=max_batch_size,
        steps=steps,
        epochs=epochs,
        target_epsilon=target_epsilon,
        accountant=accountant,
        conversion=conversion,
        sampling=sampling,
        neighbors=neighbors,
        eps_error=eps_error,
        tuning=tuning,
        mc_samples=mc_samples,
        confidence=confidence,
        seed=seed,
        accumulation=accumulation,
        group_size=tuple(group_size) if group_size is not None else 1,
    )
    if write_dp_event:  # the run as a DpEvent, to check it in dp-accounting
        if out.plot:
            raise click.UsageError("--plot: --write-dp-event prints a DpEvent (JSON), nothing to draw")
        from dpcalc.commands.dp_events import sgd_event  # lazy: with the command's work

        click.echo(sgd_event(params if delta is not None else _with_delta(params)))
        return
    if risk:  # membership-inference risk: advantage, an attacker's success (docs/math.md §10.4)
        goal = single(target_advantage, "--target-advantage")
        at = None if target_tpr is None else (single(target_tpr, "--target-tpr"), float(fpr[0]))
        run(out, lambda: cmd.sgd_risk(params, prior, goal, tpr_at=at))
        return
    if fpr is not None:  # the trade-off curve: TPR at each false-positive rate (docs/math.md §10)
        run(out, lambda: cmd.sgd_tradeoff(params, fpr))
        return
    if rdp_curve:
        if tuning is not None:
            raise click.UsageError("--tuning-runs cannot be used with --rdp-curve")
        run(out, lambda: cmd.sgd_curve(params, alphas, stream=True))
        return
    run(out, lambda: cmd.sgd_epsilon_stream(params, jobs=jobs))


def _refuse_with_risk(target, delta, rdp_curve, tuning, write_dp_event) -> None:
    """What cannot go with --advantage/--prior/--target-advantage/--target-tpr (a usage error naming it)."""
    if target is None and delta is not None:
        raise click.UsageError(
            "--advantage/--prior replace --delta as the question (--delta goes with --target-advantage)"
        )
    for option, value in (
        ("--rdp-curve", rdp_curve),
        ("--tuning-runs", tuning),
        ("--write-dp-event", write_dp_event),
    ):
        if value not in (None, False):
            raise click.UsageError(f"{option} cannot be used with --advantage/--prior/--target-advantage")


def _accumulation(physical, steps, batch_size, sample_rate, dataset_size):
    """(B, A) of --physical-batch-size B --accumulation-steps A, or None; a usage error (exit 2) when one
    comes without the other, beside --batch-size / --sample-rate, or without --dataset-size."""
    if physical is None and steps is None:
        return None
    if physical is None:
        raise click.UsageError(
            "--accumulation-steps needs --physical-batch-size (the logical batch is their product)"
        )
    if steps is None:
        raise click.UsageError(
            "--physical-batch-size needs --accumulation-steps (the logical batch is their product)"
        )
    for name, value in (("--batch-size", batch_size), ("--sample-rate", sample_rate)):
        if value is not None:
            raise click.UsageError(
                f"--physical-batch-size/--accumulation-steps cannot be used with {name} (they give the logical batch)"
            )
    if dataset_size is None:
        raise click.UsageError("--physical-batch-size/--accumulation-steps need --dataset-size (q = B·A/N)")
    return (physical, steps)


def _with_delta(params):
    """``params`` with a placeholder δ (a DpEvent does not depend on δ; the checks ask for one)."""
    return dataclasses.replace(params, delta=[1e-5])


def _schedule(
    path, out, delta, accountant, neighbors, conversion, eps_error, sampling, dataset_size, target, **others
):
    """``--schedule FILE``: the phases of a run, ε after each (dpcalc.commands.sgd_schedule)."""
    for option, value in others.items():
        if value is not None:
            raise click.UsageError(f"--schedule cannot be used with {option} (the schedule gives the run)")
    if delta is None:
        raise click.UsageError("--schedule needs --delta")
    if sampling not in ("poisson", "fixed-size", "truncated-poisson"):
        raise click.UsageError(
            f"--schedule with --sampling {sampling}: phases compose for poisson, fixed-size and truncated-poisson"
        )
    if dataset_size is not None and len(dataset_size) != 1:
        raise click.UsageError("--schedule: --dataset-size takes a single value")
    # lazy: the command's work (numpy, the engine) loads when it runs, never for --help or completion
    from dpcalc.commands import sgd_schedule as cmd

    text = sys.stdin.read(cmd.MAX_BYTES + 1) if path == "-" else None
    n = dataset_size[0] if dataset_size is not None else None
    eps_error = single(eps_error, "--eps-error")
    target = None if target is None else single(target, "--target-epsilon")

    def answer():
        phases, settings = cmd.read_schedule(path, text, n, sampling)
        # a fixed-size phase (Wang et al.'s bound) is for replace-one neighbours: the run's default then
        relation = neighbors or (
            "replace-one" if any(st[0] == "fixed-size" for st in settings) else "add-remove"
        )
        return cmd.sgd_schedule(
            phases, delta, accountant, relation, conversion, eps_error, path, target, settings
        )

    run(out, answer)
