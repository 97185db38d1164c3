"""``dpcalc sgd-epsilon``: the options of DP-SGD accounting (docs/math.md §3); the work is
:func:`dpcalc.commands.sgd.epsilon.sgd_epsilon`."""

from __future__ import annotations

import dataclasses

import click

from dpcalc.cli.common import common_options, eps_error_option, monte_carlo_options, run, single
from dpcalc.cli.rdp_curve import curve_options, wanted
from dpcalc.cli.run_options import CLIP_NORM_WORDS, NOISE_STD_WORDS, noise_multiplier, run_options
from dpcalc.cli.sgd_epsilon_man import MAN_EXAMPLES, MAN_NOTES  # noqa: F401  (the man page's text)
from dpcalc.cli.tradeoff import refuse_with, risk_options, risk_question, tradeoff_options, with_max_tpr
from dpcalc.cli.tuning import tuning_option
from dpcalc.cli.types import Grid
from dpcalc.cli.work_options import work_options
from dpcalc.commands.choices import GROUP_SIZE_MAX, SGD_ACCOUNTANTS, SGD_CONVERSIONS, SGD_SAMPLINGS

RUN_HELP = {
    "--noise-multiplier": "Noise standard deviation / clipping norm (> 0). Leave out with --target-epsilon to solve "
    "for it.",
    "--noise-std": f"Instead of --noise-multiplier, with --clip-norm: {NOISE_STD_WORDS} (> 0); the noise "
    "multiplier is S/C under either --neighbors (the accountants count replace-one's sensitivity 2C), named in "
    "the caption.",
    "--clip-norm": f"With --noise-std: {CLIP_NORM_WORDS}.",
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
@run_options(RUN_HELP, {"--clip-norm": "C"})
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
    "--epsilon",
    type=Grid(lo=0, lo_open=False),
    default=None,
    help="Target ε >= 0: report δ at ε instead of ε at --delta (rdp: the Rényi curve's conversion; pld: the "
    "certified bracket [delta_lower, delta]; abadi, bassily: their formulas solved for δ; mc: a bound with a "
    "confidence).",
)
@click.option(
    "--method",
    type=click.Choice([*SGD_ACCOUNTANTS, "all"]),
    default=None,
    help="The accountant [default: rdp]: rdp (exact RDP), pld (privacy loss distributions: a certified [lower, upper] bracket; random "
    "allocation: the certified upper end), "
    "abadi (closed form, asymptotic), bassily (reference), mc (balls-in-bins by Monte Carlo: a bound with a "
    "confidence; only when asked for), rdp-group and dp-group (with --group-size: the RDP group property and "
    "the (ε, δ) group conversion of the example-level bound, for comparison), or all that apply.",
)
@click.option(
    "--accountant",
    "accountant_alias",
    type=click.Choice([*SGD_ACCOUNTANTS, "all"]),
    default=None,
    hidden=True,
    help="The former name of --method, still accepted.",
)
@click.option(
    "--group-size",
    type=Grid(lo=1, hi=GROUP_SIZE_MAX, lo_open=False, integer=True),
    default=None,
    metavar="K",
    help="What the run promises a person who contributed K examples (1 <= K <= 10000; 1, the default: one "
    "example; a list or range sweeps K, the column group_size).  With "
    "Poisson sampling each step is the mixture of Ganesh 2024, Thm 3.1: the pld row is its certified "
    "bracket, tight; the rdp row converts its Rényi curve, an upper bound that is loose for a large K at a "
    "small rate, where unlikely steps that take many of the person's examples drive the Rényi divergence "
    "(K = 999, q = 1e-4, σ = 3, one step, δ = 1e-6: rdp 15.0, pld 0.257), so use --method pld there; "
    "--method all adds the rdp-group and dp-group comparison rows.  Users sampled as units (a user's "
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
@monte_carlo_options(
    "--method mc",
    "about 13 s of CPU per million samples of an epoch of 234 steps, spread over every core; any number is "
    "computed, in bounded memory (--max-seconds caps it)",
)
@click.option(
    "--release",
    type=click.Choice(["full", "last-iterate"]),
    default="full",
    show_default=True,
    help="What the run releases: full (every step's noisy gradient; the model after each step, what every "
    "accountant bounds), or last-iterate, which adds the last-iterate heuristic of Steinke et al. 2025 "
    "(arXiv:2410.06186): a row last-iterate-heuristic whose ε (or δ) is in epsilon_estimate (delta_estimate), "
    "exact for linear losses only, NOT a bound (the paper gives counterexamples); never read by -q, "
    "--max-epsilon or a ledger.  Poisson sampling, add/remove neighbours, ε or δ of a run (no targets).",
)
@click.option(
    "--target-epsilon",
    type=Grid(lo=0),
    default=None,
    help="Solve for the option left out (noise multiplier, steps/epochs, or sample rate/batch size) so that "
    "ε <= this.",
)
@tradeoff_options
@risk_options(target=True)
@tuning_option
@curve_options
@work_options
@common_options
def command(
    sigma,
    noise_std,
    clip_norm,
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
    epsilon,
    method,
    accountant_alias,
    group_size,
    conversion,
    sampling,
    neighbors,
    mc_samples,
    confidence,
    seed,
    release,
    target_epsilon,
    eps_error,
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
    accountant = _method(method, accountant_alias)
    out = with_max_tpr(out, fpr, max_tpr)
    out, risk = risk_question(out, fpr, advantage, prior, max_advantage, target_advantage, target_tpr)
    accumulation = _accumulation(
        physical_batch_size, accumulation_steps, batch_size, sample_rate, dataset_size
    )
    if accumulation is not None:
        batch_size = [accumulation[0] * accumulation[1]]  # the logical batch: q = B·A/N, noise once per step
    sigma, noise = noise_multiplier(
        sigma,
        noise_std,
        clip_norm,
        solved=_solves_noise(
            target_epsilon, target_advantage, target_tpr, sample_rate, batch_size, steps, epochs
        ),
        refused={"--schedule": schedule},
        why="the schedule gives the run: a noise_multiplier per phase",
    )
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
                "--epsilon": epsilon,
                "--write-dp-event": write_dp_event or None,
                "--rdp-curve": rdp_curve or None,
            },
        )
        return
    if delta is not None and epsilon is not None:
        raise click.UsageError("give exactly one of --delta (to get ε) or --epsilon (to get δ)")
    if epsilon is not None and rdp_curve:
        raise click.UsageError("--epsilon cannot be used with --rdp-curve (a curve has no ε or δ)")
    if target_tpr is None:
        refuse_with(
            fpr, **{"--delta": delta, "--epsilon": epsilon, "--rdp-curve": rdp_curve, "--tuning-runs": tuning}
        )
    target = target_advantage if target_tpr is None else target_tpr
    if risk:
        _refuse_with_risk(target, delta, rdp_curve, tuning, write_dp_event, epsilon)
    if (
        not wanted(rdp_curve, alphas, out)
        and delta is None
        and epsilon is None
        and fpr is None
        and not write_dp_event
        and not risk
    ):
        ctx = click.get_current_context()
        raise click.MissingParameter(ctx=ctx, param=next(q for q in ctx.command.params if q.name == "delta"))
    # lazy: the command's work (numpy, the engine) loads when it runs, never for --help or completion
    from dpcalc.commands.sgd import command as cmd

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
        noise_std=noise,
        group_size=tuple(group_size) if group_size is not None else 1,
        epsilon=epsilon,
        release=release,
    )
    if write_dp_event:  # the run as a DpEvent, to check it in dp-accounting
        if out.plot:
            raise click.UsageError("--plot: --write-dp-event prints a DpEvent (JSON), nothing to draw")
        from dpcalc.commands.dp_events import sgd_event  # lazy: with the command's work

        click.echo(sgd_event(params if delta is not None else _with_delta(params)))  # (δ does not enter it)
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
    run(out, lambda: cmd.sgd_epsilon_stream(params))


def _method(method, alias) -> str:
    """The accountant asked for: --method, or its hidden former name --accountant (the same choices); both
    with different values is a usage error naming both; neither: rdp."""
    if method is not None and alias is not None and method != alias:
        raise click.UsageError(
            f"--method {method} and --accountant {alias} disagree: --accountant is the former name of --method; "
            "give one"
        )
    return method or alias or "rdp"


def _solves_noise(target_epsilon, target_advantage, target_tpr, sample_rate, batch_size, steps, epochs):
    """The target option that solves for the noise (given, with the rate and the length given), or None."""
    target = next(
        (
            o
            for o, v in (
                ("--target-epsilon", target_epsilon),
                ("--target-advantage", target_advantage),
                ("--target-tpr", target_tpr),
            )
            if v is not None
        ),
        None,
    )
    rate = sample_rate is not None or batch_size is not None
    return target if rate and (steps is not None or epochs is not None) else None


def _refuse_with_risk(target, delta, rdp_curve, tuning, write_dp_event, epsilon=None) -> None:
    """What cannot go with --advantage/--prior/--target-advantage/--target-tpr (a usage error naming it)."""
    if epsilon is not None:
        raise click.UsageError("--advantage/--prior replace --epsilon as the question: give one of them")
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
    return dataclasses.replace(params, delta=[1e-5], epsilon=None)


def _schedule(
    path, out, delta, accountant, neighbors, conversion, eps_error, sampling, dataset_size, target, **others
):
    """``--schedule FILE``: the phases of a run, ε after each (dpcalc.commands.sgd.schedule)."""
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
    from dpcalc.commands.sgd import schedule as cmd

    text = cmd.schedule_text(path)  # a file, or - (standard input): one reader for every input
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
