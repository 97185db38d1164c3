"""Options every command has, and the one path from a computed result to stdout and an exit status.

``@common_options`` adds ``-f/--format``, ``--columns``, ``-q/--quiet``, ``--max-epsilon``,
``--max-delta`` and ``--plot`` and hands the command an :class:`Output`.  :func:`run` is the only
place that

1. calls the command's ``compute()``, mapping :class:`~dpcalc.errors.InputError` to exit 2 and
   :class:`~dpcalc.errors.UncertifiedError` to exit 1, *before anything is written to stdout*;
2. prints the engine's warnings once each on stderr;
3. renders the result (table, CSV, TSV, JSON, JSON Lines, or ``-q`` headline values; the formats
   are described in :mod:`dpcalc.render`) to stdout;
4. draws ``--plot``;
5. judges ``--max-epsilon``/``--max-delta``/``--max-tpr`` per configuration, on its tightest
   certified row (exit 3, the rows already printed; see :class:`BudgetJudge` and :mod:`dpcalc.render.configs`).

Writing to stdout fails in one way only: a reader that went away (``dpcalc ... | head -1``) ends the
command quietly with status 0, in every format; any other failure (a full disk, a closed stdout) is
one line ``Error: cannot write to stdout: REASON`` and status 1 (:func:`writing`).
"""

from __future__ import annotations

import contextlib
import functools
import os
import sys
import warnings
from dataclasses import dataclass

import click

from dpcalc import execution
from dpcalc.cli import _quiet_broken_pipe
from dpcalc.cli.types import SEED_MAX, Grid
from dpcalc.errors import DpcalcWarning
from dpcalc.execution import allocator
from dpcalc.exitcodes import ExitCode
from dpcalc.lazy import lazy_module
from dpcalc.render import FORMATS, ChunkWriter, pick_columns, render, resolve_format
from dpcalc.render.cells import for_terminal
from dpcalc.render.configs import Tightest, sound_row  # noqa: F401  (sound_row: re-exported)
from dpcalc.result import Stream, budget_column

#: --plot's drawing (matplotlib behind it), loaded when a picture is asked for
drawing = lazy_module("dpcalc.plot.draw")


@dataclass(frozen=True)
class Output:
    """How a command's result is written and judged."""

    fmt: str | None = None  # None: table on a terminal, CSV otherwise
    quiet: bool = False
    columns: tuple[str, ...] | None = None  # --columns: the columns shown, in order
    max_epsilon: float | None = None
    max_delta: float | None = None
    plot: str | None = None
    max_tpr: float | None = None  # --max-tpr (compose, sgd-epsilon, convert with --fpr): judges tpr_upper
    max_advantage: float | None = None  # --max-advantage (with --advantage/--prior): judges advantage

    def resolved_format(self) -> str:
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
    # checked before any work, so that a figure that cannot be written is one error line, not a
    # warning about the computation followed by the error at the end
    folder = os.path.dirname(value) or "."
    why = None
    if not os.path.isdir(folder):
        why = "No such file or directory"
    elif not os.access(folder, os.W_OK | os.X_OK):
        why = "Permission denied (its directory)"
    elif os.path.isdir(value):
        why = "Is a directory"
    if why is not None:  # the message plot.draw gives when the write itself fails
        raise click.UsageError(f"--plot: cannot write {value!r}: {why}", ctx)
    return value


def _columns(ctx, param, value):
    if value is None:
        return None
    names = tuple(n.strip() for n in value.split(",") if n.strip())
    if not names:
        raise click.BadParameter("name at least one column, e.g. --columns method,epsilon", ctx, param)
    return names


def common_options(func):
    """Add the options every command has; the command receives ``out: Output``."""

    @click.option(
        "-f",
        "--format",
        "fmt",
        type=click.Choice(FORMATS),
        default=None,
        help="Output format [default: table on a terminal, csv otherwise]. csv, tsv: inf for an "
        "infinite value, an empty cell where a value does not apply; json, jsonl (one object per "
        'line): "inf"/"-inf" for an infinite value, null where a value does not apply.',
    )
    @click.option(
        "--columns",
        callback=_columns,
        default=None,
        metavar="A,B,..",
        help="Show only these columns, in this order (every format but -q); an unknown name is an "
        "error that lists the available ones.",
    )
    @click.option(
        "-q",
        "--quiet",
        is_flag=True,
        help="Print only the headline value: per configuration (the rows that share every input and "
        "differ only by method, accountant or conversion), the tightest certified one (the smallest upper "
        "bound; the smallest noise or the most steps found within a target). One configuration: the value "
        "alone. Several: CONFIGURATION<TAB>VALUE per line, CONFIGURATION being the swept inputs that vary, "
        "as key=value joined by commas. A row that is not a certified bound (an estimate, an asymptotic or "
        "reference formula, valid=false, a Monte Carlo bound) is never printed; when no row is one, -q is "
        "an error (-f csv shows every row). The odometer's steps: one value per step.",
    )
    @click.option(
        "--max-epsilon",
        type=Grid(lo=0, lo_open=False),
        default=None,
        metavar="X",
        help="Budget check: after printing, exit 3 if the tightest certified ε of some configuration "
        "exceeds X (a run that one method certifies within X passes, whatever a looser method says; rows "
        "with valid=false, lower bounds, estimates, asymptotic, reference and Monte Carlo rows are never "
        "judged; a configuration no row certifies is an error, never a pass).",
    )
    @click.option(
        "--max-delta",
        type=Grid(lo=0, hi=1, lo_open=False),
        default=None,
        metavar="X",
        help="Budget check: exit 3 if the tightest certified δ of some configuration exceeds X (as "
        "--max-epsilon).",
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
    def wrapper(*args, fmt, columns, quiet, max_epsilon, max_delta, plot, **kwargs):
        out = Output(
            fmt=fmt,
            quiet=quiet,
            columns=columns,
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


def monte_carlo_options(row: str, cost: str):
    """``--mc-samples``, ``--confidence``, ``--seed``: the Monte Carlo row ``row`` (``sgd-epsilon`` and
    ``matrix``); ``cost`` says what a million samples cost and what is refused."""

    def decorate(func):
        for option in reversed(
            (
                click.option(
                    "--mc-samples",
                    type=click.IntRange(min=1000),
                    default=None,
                    metavar="N",
                    help=f"{row}: Monte Carlo samples per direction [default: 1000000]; more samples certify "
                    f"smaller δ ({cost}).",
                ),
                click.option(
                    "--confidence",
                    type=click.FloatRange(min=0.5, max=1.0, min_open=False, max_open=True),
                    default=None,
                    help=f"{row}: the probability, over the sampling, with which its ε is an upper bound "
                    "[default: 0.95].",
                ),
                click.option(
                    "--seed",
                    type=click.IntRange(0, SEED_MAX),
                    default=None,
                    help=f"{row}: the seed of the sampling [default: 0; fixed, so reproducible].",
                ),
            )
        ):
            func = option(func)
        return func

    return decorate


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

    A :class:`~dpcalc.result.Stream` (a large sweep) is written chunk by chunk in CSV, TSV, JSON,
    JSON Lines and ``-q`` output; its first chunk is computed before anything is written, so an error
    there leaves stdout empty.  A table or a plot needs every row, so the chunks are joined first."""
    allocator.keep_freed_blocks()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", DpcalcWarning)
        result = compute()  # InputError / UncertifiedError propagate to the group: nothing printed yet
        if isinstance(result, Stream):
            if out.plot or (out.resolved_format() == "table" and not out.quiet):
                result = result.collect()
            else:
                _stream(result, out, caught)
                return
    execution.finish()  # the progress bar is gone before the table and the notes
    emit(result, out, after=lambda: (_warn(caught), _notes(result.notes, out)))


def _notes(notes, out: Output) -> None:
    """The result's notes on stderr, unless ``-q`` asked for the values alone."""
    for note in [] if out.quiet else notes:
        click.echo(for_terminal(f"Note: {note}", sys.stderr), err=True)


def _warn(caught) -> None:
    for msg in warn_lines(w for w in caught if issubclass(w.category, DpcalcWarning)):
        click.echo(for_terminal(f"Warning: {msg}", sys.stderr), err=True)


def _stream(stream, out: Output, caught) -> None:
    """Write a Stream as it is computed; warnings and the budget verdict follow the rows."""
    chunks = iter(stream.chunks)
    chunk = next(chunks, None)  # computed before anything is written: an error here leaves stdout empty
    judge = BudgetJudge(out)
    judge.refuse_unjudgeable(stream.names)  # before the first row is written
    with writing():
        writer = ChunkWriter(
            stream.names,
            out.resolved_format(),
            sys.stdout,
            quiet=out.quiet,
            headline=stream.headline,
            columns=out.columns,
        )
        while chunk is not None:
            writer.write(chunk)
            judge.feed(chunk)
            chunk = next(chunks, None)
        writer.close()
    execution.finish()
    _warn(caught)
    _notes(stream.notes, out)
    judge.check()


@contextlib.contextmanager
def writing():
    """Around every write to stdout: a reader that went away ends the command quietly (status 0); any
    other failure to write is one ``Error: cannot write to stdout: ...`` line and status 1.  Either way
    stdout is pointed at the null device, so that nothing is left to fail at exit."""
    if sys.stdout is None:  # started with stdout closed (`dpcalc ... >&-`)
        raise click.ClickException("cannot write to stdout: Bad file descriptor")
    try:
        yield
    except BrokenPipeError:
        _quiet_broken_pipe()
        raise click.exceptions.Exit(ExitCode.OK) from None
    except OSError as exc:
        _quiet_broken_pipe()
        raise click.ClickException(f"cannot write to stdout: {exc.strerror or exc}") from None
    except UnicodeEncodeError as exc:
        _quiet_broken_pipe()
        bad = exc.object[exc.start : exc.end]
        raise click.ClickException(
            f"cannot write to stdout: its encoding {exc.encoding} cannot write {bad!r} "
            "(-f table writes ASCII; or set PYTHONIOENCODING=utf-8)"
        ) from None


def emit(result, out: Output, after=None) -> None:
    """Render ``result`` to stdout, draw ``--plot``, then apply the budget checks.  ``after`` (the
    warnings and notes) runs once the rows are written, as a stream's do: on every command the notes
    follow the table (and every check that can refuse the command has passed before anything is
    written, so that a refusal, exit 2, is the one line on stderr)."""
    fmt = out.resolved_format()
    if out.columns and not out.quiet:
        pick_columns(result.names, out.columns)  # an unknown name: exit 2 before anything is written
    BudgetJudge(out).refuse_unjudgeable(result.names)  # likewise a budget on a quantity not reported
    verdict = None
    try:
        check_budget(result, out)  # a budget no row can judge: exit 2 before anything is written
    except BudgetExceeded as exc:
        verdict = exc  # exit 3 after the rows are printed
    if out.plot:
        drawing.draw(result, out.plot)  # raises a one-line error when matplotlib is missing
    with warnings.catch_warnings(record=True) as caught:  # -q's warning about configurations left out
        warnings.simplefilter("always", DpcalcWarning)
        with writing():
            render(result, fmt, sys.stdout, quiet=out.quiet, columns=out.columns)
    if after is not None:
        after()
    _warn(caught)
    if verdict is not None:
        raise verdict


def check_budget(result, out: Output) -> None:
    """Exit 3 (after printing) if a sound row's ε or δ exceeds ``--max-epsilon``/``--max-delta``."""
    judge = BudgetJudge(out)
    judge.feed(result)
    judge.check()


class BudgetJudge:
    """``--max-epsilon``/``--max-delta``/``--max-tpr`` over the rows of a result, fed whole or chunk by
    chunk, per configuration (:mod:`dpcalc.render.configs`): each configuration is judged by its tightest
    certified row (the smallest certified upper bound: a run that one method certifies within the
    budget is within it, whatever a looser method says).  The first configuration past a budget is
    reported as ``budget exceeded: epsilon = X > L (tightest certified row I, method M)``, with ``at
    CONFIGURATION`` and how many configurations exceed it when there are several (exit 3).  Rows that
    certify nothing (estimates, asymptotic and reference formulas, ``valid=false``, lower bounds,
    Monte Carlo bounds) are never judged.  A configuration with no certified row cannot be judged: a
    usage error (exit 2), never a pass; so is a budget no row can judge."""

    def __init__(self, out: Output) -> None:
        self.limits = [
            (q, lim)
            for q, lim in (
                ("epsilon", out.max_epsilon),
                ("delta", out.max_delta),
                ("tpr", out.max_tpr),
                ("advantage", out.max_advantage),
            )
            if lim is not None
        ]
        self.rows = 0
        self.tight = None
        self.names: list[str] = []

    def refuse_unjudgeable(self, names) -> None:
        """A usage error (exit 2) for a budget on a quantity the output has no column for, decided from
        the column names before anything is written."""
        for quantity, _ in self.limits:
            if budget_column(quantity, names) is None:
                raise click.UsageError(f"--max-{quantity}: this command reports no {quantity}")

    def feed(self, result) -> None:
        self.rows += len(result)
        if not self.limits:
            return
        self.refuse_unjudgeable(result.names)
        if self.tight is None:
            self.names = [budget_column(q, result.names) for q, _ in self.limits]
            self.tight = Tightest(result.names, result.headline, self.names, getattr(result, "derived", ()))
        self.tight.feed(result)

    def check(self) -> None:
        """Raise the verdict, if any: the first configuration past a budget (exit 3), else the first
        configuration, or the whole result, that no certified row can judge (exit 2)."""
        tight = self.tight
        if tight is None:
            return
        try:
            self._check(tight)
        finally:
            tight.close()

    def _check(self, tight) -> None:
        n = tight.count
        several = n > 1
        unjudged: list = [None] * len(self.limits)
        for j, (quantity, limit) in enumerate(self.limits):
            name = self.names[j]
            first, exceed, judged = None, 0, 0
            for cells, sep, picks in tight.configs():
                value, _cell, method, row, _seen = picks[j]
                if value is None:
                    if unjudged[j] is None:
                        unjudged[j] = tight.label(cells, sep)
                    continue
                judged += 1
                if value > limit:
                    exceed += 1
                    if first is None:
                        first = (value, method, row, tight.label(cells, sep))
            if first is not None:
                value, method, row, label = first
                where = f" at {label}" if several and label else ""
                by = f"tightest certified row {row}" + (f", method {method}" if method is not None else "")
                more = f"; {exceed} of {n} configurations exceed it" if several else ""
                raise BudgetExceeded(f"budget exceeded: {name} = {value!r} > {limit!r}{where} ({by}{more})")
            if not judged:
                skipped = tight.uncertified[j]
                what = f" (rows: {', '.join(skipped)})" if skipped else ""
                raise click.UsageError(
                    f"--max-{quantity}: this command reports no {quantity} that is a sound upper bound"
                    f"{what}; the budget cannot be judged"
                )
        for j, (quantity, _) in enumerate(self.limits):
            if unjudged[j] is not None:
                where = f" at {unjudged[j]}" if unjudged[j] else ""
                raise click.UsageError(
                    f"--max-{quantity}: no row certifies {self.names[j]}{where}, so the budget cannot be "
                    "judged there"
                )
