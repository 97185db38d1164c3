"""Options every command has, and the one path from a computed result to stdout and an exit status.

``@common_options`` adds ``-f/--format``, ``--columns``, ``-q/--quiet``, ``--max-epsilon``,
``--max-delta`` and ``--plot`` and hands the command an :class:`Output`.  :func:`run` is the only
place that

1. calls the command's ``compute()`` (which imports the engine: numpy/scipy load here, never at
   ``--help``), mapping :class:`~dpcalc.errors.InputError` to exit 2 and
   :class:`~dpcalc.errors.UncertifiedError` to exit 1, *before anything is written to stdout*;
2. prints the engine's warnings once each on stderr;
3. renders the result (table, CSV, TSV, JSON, JSON Lines, or ``-q`` headline values; the formats
   are described in :mod:`dpcalc.render`) to stdout;
4. draws ``--plot``;
5. judges ``--max-epsilon``/``--max-delta`` on the rows that are sound upper bounds (exit 3, the
   rows already printed; see :func:`sound_row`).

Writing to stdout fails in one way only: a reader that went away (``dpcalc ... | head -1``) ends the
command quietly with status 0, in every format; any other failure (a full disk, a closed stdout) is
one line ``Error: cannot write to stdout: REASON`` and status 1 (:func:`writing`).
"""

from __future__ import annotations

import contextlib
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
    columns: tuple[str, ...] | None = None  # --columns: the columns shown, in order
    max_epsilon: float | None = None
    max_delta: float | None = None
    plot: str | None = None
    max_tpr: float | None = None  # --max-tpr (compose, sgd-epsilon, convert with --fpr): judges tpr_upper

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


def _columns(ctx, param, value):
    if value is None:
        return None
    names = tuple(n.strip() for n in value.split(",") if n.strip())
    if not names:
        raise click.BadParameter("name at least one column, e.g. --columns method,epsilon", ctx, param)
    return names


#: the choices of -f (dpcalc.render.FORMATS, repeated here so that --help imports nothing more)
FORMATS = ("table", "csv", "tsv", "json", "jsonl")


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
        help="Print only the headline value. One row: the value alone. Several rows (a stream: a first "
        "chunk of several rows, or more chunks): LABEL<TAB>VALUE per line, LABEL being the method when "
        "it varies and the swept inputs that vary as key=value, joined by commas; rows where the value "
        "does not apply are skipped. The odometer's steps: one value per step.",
    )
    @click.option(
        "--max-epsilon",
        type=Grid(lo=0, lo_open=False),
        default=None,
        metavar="X",
        help="Budget check: exit 3 if a reported ε that is a sound upper bound exceeds X (rows with "
        "valid=false, lower bounds, asymptotic and reference formulas are not judged).",
    )
    @click.option(
        "--max-delta",
        type=Grid(lo=0, hi=1, lo_open=False),
        default=None,
        metavar="X",
        help="Budget check: exit 3 if a reported δ that is a sound upper bound exceeds X.",
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
    from dpcalc.cli.allocator import keep_freed_blocks
    from dpcalc.result import Stream

    keep_freed_blocks()
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
    _notes(result.notes, out)
    emit(result, out)


def _notes(notes, out: Output) -> None:
    """The result's notes on stderr, unless ``-q`` asked for the values alone."""
    from dpcalc.render.cells import for_terminal

    for note in [] if out.quiet else notes:
        click.echo(for_terminal(f"Note: {note}", sys.stderr), err=True)


def _warn(caught) -> None:
    from dpcalc.render.cells import for_terminal

    for msg in warn_lines(w for w in caught if issubclass(w.category, DpcalcWarning)):
        click.echo(for_terminal(f"Warning: {msg}", sys.stderr), err=True)


def _stream(stream, out: Output, caught) -> None:
    """Write a Stream as it is computed; warnings and the budget verdict follow the rows."""
    from dpcalc.render import ChunkWriter

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
        _discard_stdout()
        raise click.exceptions.Exit(ExitCode.OK) from None
    except OSError as exc:
        _discard_stdout()
        raise click.ClickException(f"cannot write to stdout: {exc.strerror or exc}") from None
    except UnicodeEncodeError as exc:
        _discard_stdout()
        bad = exc.object[exc.start : exc.end]
        raise click.ClickException(
            f"cannot write to stdout: its encoding {exc.encoding} cannot write {bad!r} "
            "(-f table writes ASCII; or set PYTHONIOENCODING=utf-8)"
        ) from None


def _discard_stdout() -> None:
    from dpcalc.cli import _quiet_broken_pipe

    _quiet_broken_pipe()


def emit(result, out: Output) -> None:
    """Render ``result`` to stdout, draw ``--plot``, then apply the budget checks."""
    from dpcalc.render import pick_columns, render

    fmt = out.resolved_format()
    if out.columns and not out.quiet:
        pick_columns(result.names, out.columns)  # an unknown name: exit 2 before anything is written
    BudgetJudge(out).refuse_unjudgeable(result.names)  # likewise a budget on a quantity not reported
    if out.plot:
        from dpcalc.plot import draw  # raises a one-line error when matplotlib is missing

        draw(result, out.plot)
    with writing():
        render(result, fmt, sys.stdout, quiet=out.quiet, columns=out.columns)
    check_budget(result, out)


def check_budget(result, out: Output) -> None:
    """Exit 3 (after printing) if a sound row's ε or δ exceeds ``--max-epsilon``/``--max-delta``."""
    judge = BudgetJudge(out)
    judge.feed(result)
    judge.check()


def sound_row(row: dict) -> bool:
    """Whether a row's ε and δ are sound upper bounds, the only rows a budget judges: not a row whose
    ``valid`` is false, nor a row whose ``method`` is ``lower`` or ends in ``-asymptotic`` or
    ``-reference`` (a formula that is not a guarantee), nor a row whose ``bound`` is ``lower``."""
    if row.get("valid") is False or row.get("bound") == "lower":
        return False
    method = row.get("method")
    if isinstance(method, str) and (
        method == "lower" or method.endswith("-asymptotic") or method.endswith("-reference")
    ):
        return False
    return True


class BudgetJudge:
    """``--max-epsilon``/``--max-delta`` over the rows of a result, fed whole or chunk by chunk.

    Only sound rows (:func:`sound_row`) with a number are judged; the first one past a budget is
    reported as ``budget exceeded: epsilon = X > L (row I, method M)`` (exit 3).  When rows were given
    but none could be judged (every row a lower bound, an asymptotic formula, or not applicable), the
    budget cannot be certified: a usage error (exit 2), never a pass."""

    def __init__(self, out: Output) -> None:
        self.limits = [
            (q, lim)
            for q, lim in (("epsilon", out.max_epsilon), ("delta", out.max_delta), ("tpr", out.max_tpr))
            if lim is not None
        ]
        self.rows = 0
        self.judged = {q: 0 for q, _ in self.limits}
        self.skipped: dict[str, list[str]] = {q: [] for q, _ in self.limits}
        self.verdict: BudgetExceeded | None = None

    def refuse_unjudgeable(self, names) -> None:
        """A usage error (exit 2) for a budget on a quantity the output has no column for, decided from
        the column names before anything is written."""
        from dpcalc.result import budget_column

        for quantity, _ in self.limits:
            if budget_column(quantity, names) is None:
                raise click.UsageError(f"--max-{quantity}: this command reports no {quantity}")

    def feed(self, result) -> None:
        offset, self.rows = self.rows, self.rows + len(result)
        if not self.limits:
            return
        self.refuse_unjudgeable(result.names)
        rows = result.rows()
        for quantity, limit in self.limits:
            name = result.budget_column(quantity)
            for i, row in enumerate(rows, start=offset + 1):
                v = row[name]
                if v is None or (isinstance(v, float) and math.isnan(v)):
                    continue  # a method that does not apply reports no number
                if not sound_row(row):
                    label = str(row.get("method", f"row {i}"))
                    if label not in self.skipped[quantity]:
                        self.skipped[quantity].append(label)
                    continue
                self.judged[quantity] += 1
                if v > limit and self.verdict is None:
                    method = f", method {row['method']}" if row.get("method") is not None else ""
                    self.verdict = BudgetExceeded(
                        f"budget exceeded: {name} = {v!r} > {limit!r} (row {i}{method})"
                    )

    def check(self) -> None:
        """Raise the verdict, if any (the first row past a budget, or a budget nothing could judge)."""
        if self.verdict is not None:
            raise self.verdict
        for quantity, _ in self.limits:
            if self.rows and not self.judged[quantity]:
                what = f" (rows: {', '.join(self.skipped[quantity])})" if self.skipped[quantity] else ""
                raise click.UsageError(
                    f"--max-{quantity}: this command reports no {quantity} that is a sound upper bound"
                    f"{what}; the budget cannot be judged"
                )
