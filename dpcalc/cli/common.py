"""Options every command has, and the one path from a computed result to stdout and an exit status.

``@common_options`` adds ``-f/--format``, ``-q/--quiet``, ``--max-epsilon``, ``--max-delta`` and
``--plot`` and hands the command an :class:`Output`.  :func:`run` is the only place that

1. calls the command's ``compute()`` (which imports the engine: numpy/scipy load here, never at
   ``--help``), mapping :class:`~dpcalc.errors.InputError` to exit 2 and
   :class:`~dpcalc.errors.UncertifiedError` to exit 1, *before anything is written to stdout*;
2. prints the engine's warnings once each on stderr;
3. renders the result (table/CSV/JSON, or ``-q`` headline values) to stdout;
4. draws ``--plot``;
5. judges ``--max-epsilon``/``--max-delta`` on the upper ends of the reported bounds (exit 3, the
   rows already printed).
"""

from __future__ import annotations

import functools
import math
import sys
import warnings
from dataclasses import dataclass

import click

from dpcalc.cli.types import Grid
from dpcalc.errors import DpcalcWarning
from dpcalc.exitcodes import ExitCode


@dataclass(frozen=True)
class Output:
    """How a command's result is written and judged."""

    fmt: str | None = None  # None: table on a terminal, CSV otherwise
    quiet: bool = False
    max_epsilon: float | None = None
    max_delta: float | None = None
    plot: str | None = None

    def resolved_format(self) -> str:
        from dpcalc.render import resolve_format

        return resolve_format(self.fmt)


class BudgetExceeded(click.ClickException):
    """``--max-epsilon``/``--max-delta`` failed (exit status 3)."""

    exit_code = ExitCode.BUDGET_EXCEEDED


def _plot_path(ctx, param, value):
    if value is None:
        return None
    suffix = value.rsplit(".", 1)[-1].lower() if "." in value else ""
    if suffix not in ("png", "svg", "pdf"):
        raise click.BadParameter(f"{value!r}: the file name must end in .png, .svg or .pdf", ctx, param)
    return value


def common_options(func):
    """Add the options every command has; the command receives ``out: Output``."""

    @click.option(
        "-f",
        "--format",
        "fmt",
        type=click.Choice(["table", "csv", "json"]),
        default=None,
        help="Output format [default: table on a terminal, csv otherwise]. JSON writes null for inf.",
    )
    @click.option(
        "-q", "--quiet", is_flag=True, help="Print only the headline value of each row, one per line."
    )
    @click.option(
        "--max-epsilon",
        type=Grid(lo=0, lo_open=False),
        default=None,
        metavar="X",
        help="Budget check: exit 3 if any reported ε (a certified upper bound) exceeds X.",
    )
    @click.option(
        "--max-delta",
        type=Grid(lo=0, hi=1, lo_open=False),
        default=None,
        metavar="X",
        help="Budget check: exit 3 if any reported δ exceeds X.",
    )
    @click.option(
        "--plot",
        type=click.Path(dir_okay=False, writable=True),
        callback=_plot_path,
        default=None,
        metavar="FILE",
        help="Also draw the result to FILE (.png, .svg or .pdf); needs the 'plot' extra (matplotlib).",
    )
    @functools.wraps(func)
    def wrapper(*args, fmt, quiet, max_epsilon, max_delta, plot, **kwargs):
        out = Output(
            fmt=fmt,
            quiet=quiet,
            max_epsilon=single(max_epsilon, "--max-epsilon"),
            max_delta=single(max_delta, "--max-delta"),
            plot=plot,
        )
        return func(*args, out=out, **kwargs)

    return wrapper


def eps_error_option(func):
    """``--eps-error X``: the width of the PLD bracket (shared by ``compose`` and ``sgd-epsilon``)."""
    return click.option(
        "--eps-error",
        type=Grid(lo=0),
        default=None,
        metavar="X",
        help="pld: the largest width of the bracket [lower, upper] [default: 0.5% of ε].",
    )(func)


def single(values, option: str):
    """The one value of a Grid option that does not take sweeps (error naming the option otherwise)."""
    if values is None:
        return None
    if len(values) != 1:
        raise click.BadParameter("takes a single value, not a list or range", param_hint=f"'{option}'")
    return values[0]


def warn_lines(caught) -> list[str]:
    """Unique warning messages (engine DpcalcWarnings and the command's own) in order of appearance."""
    seen: list[str] = []
    for w in caught:
        msg = " ".join(str(w.message).split())
        if msg not in seen:
            seen.append(msg)
    return seen


def run(out: Output, compute) -> None:
    """Compute, render, plot and judge; see the module docstring.  Ends the process's command.

    A :class:`~dpcalc.result.Stream` (a large sweep) is written chunk by chunk in CSV, JSON and ``-q``
    output; its first chunk is computed before anything is written, so an error there leaves stdout
    empty.  A table or a plot needs every row, so the chunks are joined first."""
    from dpcalc.result import Stream

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", DpcalcWarning)
        result = compute()  # InputError / UncertifiedError propagate to the group: nothing printed yet
        if isinstance(result, Stream):
            if out.plot or (out.resolved_format() == "table" and not out.quiet):
                result = result.collect()
            else:
                _stream(result, out, caught)
                return
    _warn(caught)
    for note in result.notes:
        click.echo(f"Note: {note}", err=True)
    emit(result, out)


def _warn(caught) -> None:
    for msg in warn_lines(w for w in caught if issubclass(w.category, DpcalcWarning)):
        click.echo(f"Warning: {msg}", err=True)


def _stream(stream, out: Output, caught) -> None:
    """Write a Stream as it is computed; warnings and the budget verdict follow the rows."""
    from dpcalc.render import ChunkWriter

    chunks = iter(stream.chunks)
    first = next(chunks, None)
    writer = None
    verdict = None
    row = 0
    try:
        writer = ChunkWriter(
            stream.names, out.resolved_format(), sys.stdout, quiet=out.quiet, headline=stream.headline
        )
        chunk = first
        while chunk is not None:
            writer.write(chunk)
            if verdict is None:
                verdict = _budget_verdict(chunk, out, row)
            row += len(chunk)
            chunk = next(chunks, None)
        writer.close()
    except BrokenPipeError:
        from dpcalc.cli import _quiet_broken_pipe

        _quiet_broken_pipe()
        raise click.exceptions.Exit(ExitCode.OK) from None
    _warn(caught)
    for note in stream.notes:
        click.echo(f"Note: {note}", err=True)
    if verdict is not None:
        raise verdict


def emit(result, out: Output) -> None:
    """Render ``result`` to stdout, draw ``--plot``, then apply the budget checks."""
    from dpcalc.render import render

    fmt = out.resolved_format()
    if out.plot:
        from dpcalc.plot import draw  # raises a one-line error when matplotlib is missing

        draw(result, out.plot)
    try:
        render(result, fmt, sys.stdout, quiet=out.quiet)
    except BrokenPipeError:
        from dpcalc.cli import _quiet_broken_pipe

        _quiet_broken_pipe()
        raise click.exceptions.Exit(ExitCode.OK) from None
    check_budget(result, out)


def check_budget(result, out: Output) -> None:
    """Exit 3 (after printing) if a reported ε or δ exceeds ``--max-epsilon``/``--max-delta``."""
    verdict = _budget_verdict(result, out)
    if verdict is not None:
        raise verdict


def _budget_verdict(result, out: Output, offset: int = 0):
    """The :class:`BudgetExceeded` for the first row (numbered from ``offset`` + 1) past a budget, or None."""
    for quantity, limit in (("epsilon", out.max_epsilon), ("delta", out.max_delta)):
        if limit is None:
            continue
        name = result.budget_column(quantity)
        if name is None:
            raise click.UsageError(f"--max-{quantity}: this command reports no {quantity}")
        for i, v in enumerate(result.column(name), start=offset + 1):
            if v is None or (isinstance(v, float) and math.isnan(v)):
                continue  # a method that does not apply reports no number
            if v > limit:
                return BudgetExceeded(f"budget exceeded: {name} = {v!r} > {limit!r} (row {i})")
    return None
