"""``--rdp-curve`` and ``--alphas``: the options with which ``sgd-epsilon``, ``compose``, ``iterate`` and
``langevin`` print their Rényi curve instead of ε (the work is :mod:`dpcalc.commands.curve`).

Pure Python and click only: ``--help`` and completion import nothing more.
"""

from __future__ import annotations

import click

from dpcalc.cli.types import parse_values

#: The help of ``--rdp-curve`` (the same in every command).
CURVE_HELP = (
    "Print the Rényi-DP curve instead of ε: columns alpha,rdp (one row per order; inf where there is no "
    "bound), with the inputs (and method) naming each curve. --delta is not needed. The CSV of one curve "
    "is read as it is by 'dpcalc convert --curve -'."
)
ALPHAS_HELP = (
    "With --rdp-curve: the orders α > 1, at most 1e15 (a list or ranges, e.g. 2,4,8 or 1.5:64:x2; 'paper' or 'code': "
    "the orders of 'dpcalc odometer') [default: the 225 orders from 1.01 to 10^4 that ε is minimised over]."
)

_PAPER = tuple(1.0 + 0.25 * k for k in range(1, 37)) + (16.0, 32.0)
_CODE = tuple(2.0 + x / 4.0 for x in range(1, 33)) + (16.0, 32.0)


class Orders(click.ParamType):
    """Rényi orders: dpcalc's value syntax (lists, ranges), or ``paper``/``code`` (the odometer's);
    every order finite and > 1, no order twice."""

    name = "orders"

    def get_metavar(self, param, ctx=None):  # click >= 8.2 passes ctx
        return "LIST"

    def convert(self, value, param, ctx):
        if isinstance(value, tuple):
            return value

        text = str(value).strip()
        if text.lower() == "paper":
            return _PAPER
        if text.lower() == "code":
            return _CODE
        try:
            values = parse_values(text, max_values=100_000)
        except ValueError as exc:
            self.fail(str(exc), param, ctx)
        bad = [v for v in values if not (1.0 < v < float("inf"))]
        if bad:
            self.fail(f"{bad[0]!r} is out of range: every order must be a finite number > 1", param, ctx)
        if len(set(values)) != len(values):
            self.fail("the orders must be distinct", param, ctx)
        return tuple(values)


def curve_options(func):
    """Add ``--rdp-curve`` and ``--alphas`` (the command receives ``rdp_curve`` and ``alphas``)."""
    func = click.option("--alphas", type=Orders(), default=None, help=ALPHAS_HELP)(func)
    return click.option("--rdp-curve", "rdp_curve", is_flag=True, help=CURVE_HELP)(func)


def wanted(rdp_curve: bool, alphas, out=None) -> bool:
    """Whether the curve was asked for; ``--alphas`` without ``--rdp-curve`` is a usage error, and so is
    a budget check (``out``: the command's :class:`~dpcalc.cli.common.Output`) with it: a curve has no ε
    or δ to judge, and nothing is printed then."""
    if alphas is not None and not rdp_curve:
        raise click.UsageError("--alphas needs --rdp-curve (it chooses the orders of the curve)")
    if rdp_curve and out is not None:
        for option, limit in (("--max-epsilon", out.max_epsilon), ("--max-delta", out.max_delta)):
            if limit is not None:
                raise click.UsageError(
                    f"{option} cannot be used with --rdp-curve (a curve has no ε or δ to judge: convert it "
                    "with 'dpcalc convert --curve -' and check that)"
                )
    return rdp_curve
