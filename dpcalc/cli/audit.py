"""``dpcalc audit``: the options of an empirical lower bound on ε from an attack's outcome
(docs/math.md §11); the work is :func:`dpcalc.commands.audit.command.audit`."""

from __future__ import annotations

import functools

import click

from dpcalc.cli.common import BudgetExceeded, common_options, run, single
from dpcalc.cli.run_options import CLIP_NORM_WORDS, NOISE_STD_WORDS, noise_multiplier, run_options
from dpcalc.cli.spec_complete import complete_mechanism
from dpcalc.cli.types import SEED_MAX, Grid
from dpcalc.input.opening import open_error

#: The confidence's distance from 0 and 1: closer to 1, the level 1 − (1 − c)/2 of each one-sided
#: Clopper–Pearson interval rounds to 1 (an interval with no end).
CONFIDENCE_MIN = 1e-12

MAN_EXAMPLES = [
    (
        "A membership-inference attack called 412 of 1000 members and 9 of 1000 non-members members:",
        "dpcalc audit --tp 412 --fn 588 --fp 9 --tn 991 --delta 1e-5",
    ),
    (
        "The same, beside the accountant's claim (exit 3 if the attack proves more than the claim):",
        "dpcalc audit --tp 412 --fn 588 --fp 9 --tn 991 --delta 1e-5 --claimed-epsilon 8",
    ),
    (
        "Beside the ε that the PLD accountant gives the DP-SGD run (as sgd-epsilon takes it):",
        "dpcalc audit --tp 412 --fn 588 --fp 9 --tn 991 --delta 1e-5 --noise-multiplier 0.8 --sample-rate 0.004267 "
        "--steps 14063",
    ),
    (
        "Beside the ε of the run a DpEvent describes (compose's best, as compose --dp-event takes it):",
        "dpcalc audit --tp 412 --fn 588 --fp 9 --tn 991 --delta 1e-5 --dp-event run.json",
    ),
    (
        "Beside the ε of a run in phases after its last phase (as sgd-epsilon --schedule takes it):",
        "dpcalc audit --tp 412 --fn 588 --fp 9 --tn 991 --delta 1e-5 --schedule phases.csv",
    ),
    (
        "Beside the ε of a matrix-mechanism run (as matrix takes it; the smallest certified row):",
        "dpcalc audit --tp 412 --fn 588 --fp 9 --tn 991 --delta 1e-5 --strategy sqrt:bands=4 "
        "--participation cyclic-poisson:b=4,q=0.25 --steps 1000 --noise-multiplier 1",
    ),
    (
        "The attack's point and confidence box over the claimed trade-off curve, drawn to a file:",
        "dpcalc audit --tp 412 --fn 588 --fp 9 --tn 991 --delta 1e-5 --claimed-epsilon 8 --plot audit.png",
    ),
    (
        "One audit per row of a CSV file with columns tp,fp,fn,tn:",
        "dpcalc audit --input audits.csv --delta 1e-5",
    ),
    (
        "One-run auditing: 1000 canaries, 200 guesses, 190 right (Steinke, Nasr & Jagielski 2023):",
        "dpcalc audit --canaries 1000 --guesses 200 --correct 190 --delta 1e-5",
    ),
    (
        "From attack scores (CSV with columns member,score): threshold chosen on a random half:",
        "dpcalc audit --scores scores.csv --delta 1e-5 --seed 0",
    ),
]

MAN_NOTES = """\
Counts (--tp --fp --fn --tn, or --input FILE): members are the positives.  One-sided
Clopper–Pearson bounds tpr_lower on TPR and fpr_upper on FPR, each at level 1 − (1 − c)/2 (a union
bound over the two rates, so both hold with probability >= c), give
epsilon_lower = max(0, log((tpr_lower − δ)/fpr_upper), log((1 − fpr_upper − δ)/(1 − tpr_lower))),
the hypothesis-testing inequalities TPR <= e^ε·FPR + δ and TNR <= e^ε·FNR + δ.  The trials must be
independent (separate training runs, or canaries under the one-run theorem).  mu_lower =
Φ⁻¹(tpr_lower) − Φ⁻¹(fpr_upper) bounds μ of any μ-GDP description; epsilon_gdp is the ε at δ of that
Gaussian curve, a lower bound only if the mechanism's curve is Gaussian.
One-run (--canaries m --guesses r --correct v): Steinke, Nasr & Jagielski 2023 (arXiv 2305.08846):
the largest ε whose p-value f(v) + 2mδ·max_i (f(v − i) − f(v))/i, f(u) = P[Binomial(r, e^ε/(1+e^ε)) >= u],
stays below 1 − c.  Beside it, mu_lower is the f-DP one-run audit of Mahloujifar, Melis & Chaudhuri
2024 (arXiv 2410.22235): the largest μ whose μ-GDP claim the same guesses reject at level 1 − c, and
epsilon_gdp the ε at δ of that Gaussian curve (a lower bound only if the curve is Gaussian).
Scores (--scores FILE, columns member,score): the rule is member if score >= t (--score-direction
lower: score <= t, for losses); t is chosen on a random half of the rows (--seed) and the counts of
the other half alone are used.
--claimed-epsilon E adds epsilon_claimed and ratio = epsilon_lower/E; a lower bound above E prints
the verdict AUDIT FAILED on stderr after the rows and their notes (one line in a pipe or a file,
wrapped to a terminal's width) and exits 3.  Instead of E, the claim can be a DP-SGD
run given as for sgd-epsilon (--noise-multiplier, or --noise-std with --clip-norm, --sample-rate or
--batch-size with --dataset-size, --steps or --epochs; Poisson sampling, add/remove neighbours):
epsilon_claimed is then its ε at each row's δ by the PLD accountant, the certified upper end that
sgd-epsilon --method pld prints, and a note names the run (and S / C, given so).  The claim can also be a run as the other commands describe it, with their
options and files, its ε at each row's δ the smallest certified upper bound of that command's methods
(never an estimate, a bound with a confidence or a lower end), the method named in the note: a
composition, --claimed-mechanism MECHANISM (repeatable) and --dp-event FILE (repeatable, - for
standard input; a DpEvent's named-tuple JSON, read as compose --dp-event reads it), the two joining as
on compose: compose's best; a run in phases, --schedule FILE (- for standard input; with
--dataset-size for its batch_size column), the file sgd-epsilon --schedule reads: ε after the last
phase, the smaller of its rdp and pld rows (pld where it applies; neighbours as sgd-epsilon takes
them: replace-one if a phase is fixed-size); a matrix-mechanism run, --strategy S [--participation
P] --steps T --noise-multiplier S, meaning what they mean on matrix (one strategy and one pattern;
--steps and --noise-multiplier are the matrix run's when --strategy is given): the smallest of its
gaussian, bandmf-rdp, bandmf-pld and mmcc rows that apply, never mc (a bound with a confidence), inf
at δ = 0 (a row past a limit of its own, as mmcc's of steps, is left out: the note says so); or a setting of iterate or langevin (--claimed-iterate, --claimed-langevin, key=value):
the smallest of its upper bounds.  One claim at a time: two (say --dp-event and --schedule, or
--strategy with --sample-rate) are refused in one line naming both.
--plot FILE (counts and scores, not one-run): each audit's point (FPR, TPR) with its box, the
Clopper–Pearson bounds at level 1 − (1 − c)/2 on both rates (tpr_lower, fpr_upper and the other
ends), over the claimed curve min(e^ε·α + δ, 1 − e^(−ε)(1 − δ − α)), the DP-SGD run's certified PLD
profile curve (a run given by its options), the curve of the proved epsilon_lower and the diagonal of guessing, on log axes down
to 1e-6.  A box above a claimed curve contradicts the claim.
Formulas: docs/math.md §11."""


#: The words of the DP-SGD run options (declared in dpcalc.cli.run_options) in audit's help: the run is the claim.
RUN_HELP = {
    "--noise-multiplier": "Claim from DP-SGD (as for sgd-epsilon): its noise multiplier; with the sample rate and "
    "the length.  With --strategy: the matrix run's (as for matrix).",
    "--noise-std": f"Claim from DP-SGD or --strategy, instead of --noise-multiplier, with --clip-norm: "
    f"{NOISE_STD_WORDS} (> 0); the noise multiplier is S/C, named in the claim's note.",
    "--clip-norm": f"With --noise-std: {CLIP_NORM_WORDS}.",
    "--sample-rate": "Claim from DP-SGD: Poisson rate q in (0, 1].",
    "--batch-size": "Claim from DP-SGD: batch size B (q = B/N, with --dataset-size).",
    "--dataset-size": "Claim from DP-SGD: dataset size N (with --schedule: for its batch_size column, as for "
    "sgd-epsilon).",
    "--steps": "Claim from DP-SGD: steps T.  With --strategy: the matrix run's steps n (as for matrix).",
    "--epochs": "Claim from DP-SGD: epochs E (steps = ceil(E / q)).",
}
RUN_METAVAR = {
    "--noise-multiplier": "S",
    "--noise-std": "S",
    "--clip-norm": "C",
    "--sample-rate": "Q",
    "--batch-size": "B",
    "--dataset-size": "N",
    "--steps": "T",
    "--epochs": "E",
}


def _without_budget(cmd: click.Command) -> click.Command:
    """Drop ``--max-epsilon``/``--max-delta`` from audit: it reports lower bounds on ε (and δ is an
    input), so there is no upper bound for a budget to judge; ``--claimed-epsilon`` is audit's check."""
    cmd.params = [p for p in cmd.params if p.name not in ("max_epsilon", "max_delta")]
    inner = cmd.callback

    @functools.wraps(inner)
    def callback(**kwargs):
        return inner(max_epsilon=None, max_delta=None, **kwargs)

    cmd.callback = callback
    return cmd


@_without_budget
@click.command("audit")
@click.option(
    "--tp", type=Grid(lo=0, lo_open=False, integer=True), help="True positives: members called members."
)
@click.option(
    "--fp", type=Grid(lo=0, lo_open=False, integer=True), help="False positives: non-members called members."
)
@click.option(
    "--fn", type=Grid(lo=0, lo_open=False, integer=True), help="False negatives: members called non-members."
)
@click.option(
    "--tn",
    type=Grid(lo=0, lo_open=False, integer=True),
    help="True negatives: non-members called non-members.",
)
@click.option(
    "--input",
    "input_",
    type=str,
    default=None,
    metavar="FILE",
    help="A CSV file with columns tp,fp,fn,tn, one audit per row ('-' reads stdin).",
)
@click.option(
    "--canaries", type=Grid(lo=1, lo_open=False, integer=True), help="One-run: the number m of canaries."
)
@click.option(
    "--guesses", type=Grid(lo=0, lo_open=False, integer=True), help="One-run: the number r of guesses made."
)
@click.option(
    "--correct", type=Grid(lo=0, lo_open=False, integer=True), help="One-run: the number v of right guesses."
)
@click.option(
    "--scores",
    type=str,
    default=None,
    metavar="FILE",
    help="A CSV file with columns member (0/1),score (higher: more likely a member, unless --score-direction "
    "lower); '-' reads stdin.",
)
@click.option(
    "--score-direction",
    type=click.Choice(["higher", "lower"]),
    default=None,
    help="--scores: which scores mean member: higher (member if score >= t; the default) or lower (member "
    "if score <= t, e.g. losses).",
)
@click.option(
    "--seed",
    type=click.IntRange(0, SEED_MAX),
    default=0,
    show_default=True,
    help="--scores: the seed of the random half split.",
)
@click.option(
    "--delta",
    type=Grid(lo=0, lo_open=False, hi=1, hi_open=True),
    help="The δ in [0, 1) at which ε is bounded (0: pure ε-DP).",
)
@click.option(
    "--confidence",
    type=Grid(lo=CONFIDENCE_MIN, hi=1 - CONFIDENCE_MIN, lo_open=False),
    default="0.95",
    show_default=True,
    help="The probability with which the lower bounds hold, in [1e-12, 1 - 1e-12] (closer to 1, the "
    "two-sided level 1 - (1 - c)/2 rounds to 1).",
)
@click.option(
    "--claimed-epsilon",
    type=Grid(lo=0, lo_open=False),
    default=None,
    metavar="E",
    help="The accountant's ε: adds epsilon_claimed and ratio; exit 3 if a lower bound exceeds it.",
)
@click.option(
    "--claimed-iterate",
    default=None,
    metavar="KEY=VALUE,...",
    help="The claim as a dpcalc iterate setting (sigma, lipschitz, lr, steps[, diameter, smoothness]): the "
    "smallest of its bounds at each row's δ.",
)
@click.option(
    "--claimed-langevin",
    default=None,
    metavar="KEY=VALUE,...",
    help="The claim as a dpcalc langevin setting (sigma, lr, strong_convexity, smoothness, dataset_size, steps, "
    "sensitivity or lipschitz): the smallest of its upper bounds at each row's δ.",
)
@click.option(
    "--claimed-mechanism",
    "claimed_mechanisms",
    multiple=True,
    metavar="MECHANISM",
    shell_complete=complete_mechanism,
    help="The claim as a composition (repeatable; specs as for compose, e.g. laplace:scale=1,count=100): "
    "its ε at each row's δ by compose's best method.",
)
@click.option(
    "--dp-event",
    "dp_events",
    multiple=True,
    metavar="FILE",
    type=click.Path(dir_okay=False, allow_dash=True),
    help="The claim as a DpEvent of dp-accounting / jax_privacy in its named-tuple JSON form (repeatable; - reads "
    "standard input), read as compose --dp-event reads it, its mechanisms joining any --claimed-mechanism: "
    "compose's best ε at each row's δ.",
)
@click.option(
    "--schedule",
    type=click.Path(dir_okay=False, allow_dash=True),
    default=None,
    metavar="FILE",
    help="The claim as a DP-SGD run in phases, the file sgd-epsilon --schedule reads (CSV, one phase a line, or an "
    "Opacus history as JSON; - reads standard input): ε after its last phase at each row's δ, the smaller of "
    "the rdp and pld accountants'.",
)
@run_options(RUN_HELP, RUN_METAVAR)
@click.option(
    "--strategy",
    "strategies",
    multiple=True,
    metavar="STRATEGY",
    help="The claim as a matrix-mechanism run (as for matrix, with --participation, --steps and "
    "--noise-multiplier): its strategy C, e.g. identity, sqrt:bands=B, toeplitz:coef=c0|c1|..., blt:..., tree, "
    "file:path=FILE; the smallest certified ε of matrix's rows.",
)
@click.option(
    "--participation",
    "participations",
    multiple=True,
    metavar="PATTERN",
    help="With --strategy (as for matrix): single (the default), min-sep:k=K,b=B, cyclic-poisson:b=B,q=Q, "
    "poisson:q=Q or balls-in-bins:b=B.",
)
@common_options
def command(
    tp,
    fp,
    fn,
    tn,
    input_,
    canaries,
    guesses,
    correct,
    scores,
    score_direction,
    seed,
    delta,
    confidence,
    claimed_epsilon,
    claimed_mechanisms,
    claimed_iterate,
    claimed_langevin,
    dp_events,
    schedule,
    sigma,
    noise_std,
    clip_norm,
    sample_rate,
    batch_size,
    dataset_size,
    steps,
    epochs,
    strategies,
    participations,
    out,
):
    """An empirical lower bound on ε from what an attack achieved.

    Give the counts of a membership test (--tp --fp --fn --tn, or --input FILE), a one-run canary
    audit (--canaries --guesses --correct) or attack scores (--scores FILE), and --delta.  Every bound
    holds with probability >= --confidence.  One claim puts the accountant's upper bound beside it:
    --claimed-epsilon; a composition (--claimed-mechanism, --dp-event FILE); a DP-SGD run
    (--noise-multiplier, --sample-rate/--batch-size, --steps/--epochs: its PLD ε) or a run in phases
    (--schedule FILE); a matrix-mechanism run (--strategy, --participation, --steps,
    --noise-multiplier); or an iterate or langevin setting (--claimed-iterate, --claimed-langevin).
    """
    claimed = single(claimed_epsilon, "--claimed-epsilon")
    others = {
        "--claimed-epsilon": claimed_epsilon,
        "--claimed-mechanism": claimed_mechanisms or None,
        "--dp-event": dp_events or None,
        "--schedule": schedule,
        "--claimed-iterate": claimed_iterate,
        "--claimed-langevin": claimed_langevin,
    }
    why = "one claim at a time: the noise is that of a DP-SGD or --strategy run"
    sigma, noise = noise_multiplier(sigma, noise_std, clip_norm, refused=others, why=why, one=True)
    sgd = {
        "sigma": single(sigma, "--noise-multiplier"),
        "sample_rate": single(sample_rate, "--sample-rate"),
        "batch_size": single(batch_size, "--batch-size"),
        "dataset_size": single(dataset_size, "--dataset-size"),
        "steps": single(steps, "--steps"),
        "epochs": single(epochs, "--epochs"),
    }
    # lazy: the command's work (numpy, the engine) loads when it runs, never for --help or completion
    from dpcalc.commands.audit import command as cmd

    params = cmd.AuditParams(
        tp=tp,
        fp=fp,
        fn=fn,
        tn=tn,
        input=input_,
        canaries=canaries,
        guesses=guesses,
        correct=correct,
        scores=scores,
        score_direction=score_direction,
        seed=seed,
        delta=delta,
        confidence=confidence,
        claimed_epsilon=claimed,
        claimed_sgd=sgd,
        claimed_mechanisms=tuple(claimed_mechanisms) or None,
        claimed_iterate=claimed_iterate,
        claimed_langevin=claimed_langevin,
        claimed_dp_events=tuple(dp_events) or None,
        claimed_schedule=schedule,
        claimed_strategy=tuple(strategies) or None,
        claimed_participation=tuple(participations) or None,
        claimed_noise_std=noise,
        plot=bool(out.plot),
    )
    done = []
    run(out, lambda: _audit(cmd.audit, params, done))
    verdict = cmd.exceeded(done[0]) if done else None
    if verdict:
        raise BudgetExceeded(verdict)


def _audit(audit, params, done):
    """``audit(params)``, kept in ``done``; an --input or --scores file that cannot be read is bad input
    (exit 2, naming the option and the file)."""
    path = params.input if params.input is not None else params.scores
    try:
        result = audit(params)
    except OSError as exc:
        if path is None or exc.filename != path:
            raise
        raise open_error(
            exc, path, f"{'--input' if params.input is not None else '--scores'} {path}"
        ) from None
    done.append(result)
    return result
