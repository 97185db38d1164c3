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
