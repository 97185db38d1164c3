"""``--fpr`` and ``--max-tpr`` (compose, sgd-epsilon, convert): what ε means for an attacker, the largest
true-positive rate of any membership test at a false-positive rate (docs/math.md §10).  Pure click: the
computation is :mod:`dpcalc.commands.tradeoff` and each command's own."""

from __future__ import annotations

import dataclasses

import click

from dpcalc.cli.common import single
from dpcalc.cli.types import Grid

#: The smallest --fpr: the PLD's profile at ε about log(1/α) took seconds per decade below it (1e-300 did not
#: end), and no attack is evaluated at smaller rates.
FPR_MIN = 1e-12

FPR_HELP = (
    "False-positive rate(s) α in [1e-12, 1) of a membership test: report tpr_upper, the largest true-positive "
    "rate any test can reach at α (a certified bound), instead of ε or δ; with mu where the composition is "
    "μ-GDP.  Replaces --delta/--epsilon as the question."
)


def tradeoff_options(func):
    """Add ``--fpr X[,...]`` and ``--max-tpr T``; the command receives ``fpr`` and ``max_tpr``."""
    func = click.option(
        "--max-tpr",
        type=Grid(lo=0, hi=1, lo_open=False),
        default=None,
        metavar="T",
        help="Budget check (with --fpr): exit 3 if the tightest certified tpr_upper of some configuration "
        "exceeds T (clt-asymptotic rows are not judged).",
    )(func)
    fpr = Grid(lo=FPR_MIN, lo_open=False, hi=1, hi_open=True)
    return click.option("--fpr", type=fpr, default=None, help=FPR_HELP)(func)


def with_max_tpr(out, fpr, max_tpr):
    """``out`` with ``--max-tpr`` set (a usage error without ``--fpr``)."""
    if max_tpr is None:
        return out
    if fpr is None:
        raise click.UsageError("--max-tpr needs --fpr (the false-positive rate the bound is at)")
    return dataclasses.replace(out, max_tpr=single(max_tpr, "--max-tpr"))


def refuse_with(fpr, **given) -> None:
    """A usage error naming the first option in ``given`` (option -> value) that cannot go with ``--fpr``."""
    if fpr is None:
        return
    for option, value in given.items():
        if value not in (None, False):
            raise click.UsageError(f"--fpr replaces {option} as the question: give one of them")


PRIOR_HELP = (
    "Prior(s) π in (0, 1) that the target is a member: report success, a certified upper bound on the "
    "probability that the best attacker with this prior guesses membership right (and the advantage)."
)


def risk_options(
    target: bool = False, tpr: bool = True, what: str | None = None, tpr_what: str | None = None
):
    """Add ``--advantage``, ``--prior P`` and ``--max-advantage A`` (and with ``target``,
    ``--target-advantage A``, and with ``tpr`` too ``--target-tpr T``): membership-inference risk instead of ε or
    δ (docs/math.md §10.4); ``what`` and ``tpr_what``: the targets' help (default: sgd-epsilon's)."""

    def decorate(func):
        if target and tpr:
            func = click.option(
                "--target-tpr",
                type=Grid(lo=0, hi=1, lo_open=True, hi_open=True),
                default=None,
                metavar="T",
                help=tpr_what
                or "With --fpr F, leave out the noise (or the steps, or the sample rate): the least noise "
                "multiplier (the most steps, the largest rate) whose certified TPR at F is at most T, per accountant, "
                "with its ε at --delta.",
            )(func)
        if target:
            func = click.option(
                "--target-advantage",
                type=Grid(lo=0, hi=1, lo_open=True, hi_open=True),
                default=None,
                metavar="A",
                help=what
                or "Leave out the noise (or the steps, or the sample rate): the least noise multiplier (the most "
                "steps, the largest rate) whose certified advantage is at most A, per accountant, with its ε at "
                "--delta.",
            )(func)
        func = click.option(
            "--max-advantage",
            type=Grid(lo=0, hi=1),
            default=None,
            metavar="A",
            help="Budget check (with --advantage or --prior): exit 3 if the tightest certified advantage of some "
            "configuration exceeds A.",
        )(func)
        func = click.option(
            "--prior", type=Grid(lo=0, hi=1, lo_open=True, hi_open=True), default=None, help=PRIOR_HELP
        )(func)
        return click.option(
            "--advantage",
            is_flag=True,
            help="Report advantage: a certified upper bound on TPR − FPR of every membership test (δ at ε = 0), "
            "instead of ε or δ.",
        )(func)

    return decorate


def risk_question(out, fpr, advantage, prior, max_advantage, target=None, target_tpr=None):
    """``(out, asked)``: whether the options ask the risk question, ``out`` with ``--max-advantage`` set;
    usage errors for what cannot go together (``--fpr`` goes with a risk question only as ``--target-tpr``'s
    false-positive rate)."""
    asked = bool(advantage) or prior is not None or target is not None or target_tpr is not None
    if max_advantage is not None and not asked:
        raise click.UsageError("--max-advantage needs --advantage, --prior or --target-advantage")
    if target is not None and target_tpr is not None:
        raise click.UsageError("--target-advantage and --target-tpr: give one target")
    if target_tpr is not None and fpr is None:
        raise click.UsageError("--target-tpr needs --fpr (the false-positive rate the TPR is at)")
    if target_tpr is not None and len(fpr) != 1:
        raise click.UsageError("--target-tpr: --fpr takes a single value here")
    if target_tpr is not None and single(target_tpr, "--target-tpr") <= fpr[0]:
        raise click.UsageError(
            "--target-tpr: must be above --fpr (every test has TPR >= FPR at some decision rule: no noise "
            "brings the bound to the FPR itself)"
        )
    if asked and fpr is not None and target_tpr is None:
        raise click.UsageError("--fpr and --advantage/--prior ask different questions: give one of them")
    if prior is not None and len(prior) > 100:
        raise click.UsageError("--prior: at most 100 values")
    if max_advantage is not None:
        out = dataclasses.replace(out, max_advantage=single(max_advantage, "--max-advantage"))
    return out, asked
