"""What ``dpcalc odometer`` does once its options are checked (:mod:`dpcalc.cli.odometer`): events read as
they arrive and their rows written as they are accounted (a file, a pipe, ``--follow``), or a ledger
reported, added to or repaired.  Loaded by the command's callback only: it imports the command's work,
:mod:`dpcalc.commands.odometer.command` (numpy, the engine)."""

from __future__ import annotations

import dataclasses
import itertools
import os
import select
import sys
import warnings

import click

from dpcalc.cli import _quiet_broken_pipe
from dpcalc.cli.common import BudgetExceeded, emit, run
from dpcalc.cli.odometer_tables import ADAPTIVE_DROPPED, DROPPED, StreamedTable, WholeTable
from dpcalc.commands.dp_events import sourced_event_specs
from dpcalc.commands.odometer import adaptive
from dpcalc.commands.odometer import command as session
from dpcalc.errors import DpcalcWarning, InputError
from dpcalc.exitcodes import ExitCode
from dpcalc.input import opening
from dpcalc.input.events import Event, follow_lines, iter_events, stream_lines
from dpcalc.ledger import file as L
from dpcalc.ledger import head as H
from dpcalc.render import RowWriter
from dpcalc.render.cells import for_terminal
from dpcalc.result import Result

# -- streaming --------------------------------------------------------------------------------
#: Events computed together (the numbers do not depend on it; rows are written as each batch is done).
BATCH = 2048
#: Steps computed together at most under --method gdp|dp (an event with count=K is K steps).
BATCH_STEPS = 1 << 16


class _Waiter:
    """Calls ``idle()`` before the input would make the reader wait, so that the events already read
    are computed and written first (a stream's rows come out as its rows arrive, and a fast stream is
    still computed in batches).  Wraps a byte stream (:meth:`read`), or is passed to --follow."""

    def __init__(self, stream=None) -> None:
        self.idle = None
        self._stream = stream
        self._read = None if stream is None else (getattr(stream, "read1", None) or stream.read)
        try:
            self._fd = None if stream is None else stream.fileno()
        except (AttributeError, OSError, ValueError):  # in memory (tests): never waits
            self._fd = None

    def __call__(self) -> None:
        if self.idle is not None:
            self.idle()

    def read(self, n: int = -1) -> bytes:
        if self._fd is not None and self.idle is not None:
            try:
                ready = select.select([self._fd], [], [], 0)[0]
            except (OSError, ValueError):
                ready = True  # the read below reports the problem
            if not ready:
                self.idle()
        return self._read(n)


def _event_source(events, inline, follow, curves, dp_events=()):
    """(events, streaming, waiter): the --dp-event files' events first (a composition's events one by one, in
    order), then the --event options, then EVENTS' rows.

    A regular file (without --follow) is read and checked whole, curves included, before anything
    is written: an error anywhere leaves stdout empty.  Standard input, a pipe (``<(cmd)``) and
    --follow are streams: each row is checked as it arrives (``streaming`` is True), and ``waiter``
    (a :class:`_Waiter`) calls its ``idle`` before the input would block."""
    named = [(f"--dp-event {src!r}", text) for src, text in sourced_event_specs(dp_events)]
    named += [("--event", text) for text in inline]
    given = [
        Event(i, mechanism=text, spec=session.parse_spec(text, f"{where} #{i}"), source=where)
        for i, (where, text) in enumerate(named, start=1)
    ]
    for ev in given:  # all checked before any output
        curves.of_event(ev)
    if events is None:
        return iter(given), False, None
    if events == "-":
        waiter = _Waiter(opening.stdin_stream("EVENTS"))
        return itertools.chain(given, iter_events(stream_lines(waiter, "EVENTS"), "EVENTS")), True, waiter
    fd = opening.open_fd(events, f"EVENTS {events}")
    if follow and opening.is_regular(fd):
        os.close(fd)
        waiter = _Waiter()
        return itertools.chain(given, iter_events(follow_lines(events, idle=waiter), events)), True, waiter
    fh = open(fd, "rb", buffering=0)
    if not opening.is_regular(fd):  # a FIFO, a device, /dev/fd/N: a stream
        waiter = _Waiter(fh)
        lines = stream_lines(waiter, events)
        return itertools.chain(given, _closing(fh, iter_events(lines, events))), True, waiter
    with fh:
        rows = list(iter_events(stream_lines(fh, events), events))
    for ev in rows:
        curves.of_event(ev)  # a row without a Rényi-DP curve is refused before any output, too
    return itertools.chain(given, rows), False, None


def _closing(fh, iterator):
    with fh:
        yield from iterator


def stream_events(
    events, inline, follow, delta, orders, gamma_kind, conversion, filter_eps, filter_rule, out, dp_events=()
) -> None:
    stream = session.Stream(
        orders, delta, gamma_kind, conversion, filter_eps, filter_rule, keep_rows=bool(out.plot)
    )
    filtering = stream.filtering
    never = ("recorded", "alpha", "level") if filtering else ("recorded", "run")
    layout = (orders, delta, never, DROPPED[filtering])
    _run_stream(stream, layout, events, inline, follow, out, dp_events)


def stream_adaptive(
    events, inline, follow, method, delta, filter_eps, filter_mu, target, out, dp_events=()
) -> None:
    """``--method gdp|dp`` on EVENTS (:mod:`dpcalc.commands.odometer.adaptive`): the same streaming as
    :func:`stream_events`, one row per step."""
    setup = adaptive.Setup(method, delta, filter_eps, filter_mu)
    if not setup.filtering:
        params = adaptive.odometer_params(
            method, delta, adaptive.DEFAULT_TARGET if target is None else target
        )
        setup = dataclasses.replace(setup, params=params)
    stream = adaptive.AdaptiveStream(setup, keep_rows=bool(out.plot))
    unused = {
        "gdp": ("epsilon_step", "delta_step"),
        "dp": ("mu_step", "mu", "mu_budget", "level"),
    }[method]
    never = ("recorded", "method", *unused, *(("level",) if setup.filtering else ("run",)))
    layout = ((), delta, never, ADAPTIVE_DROPPED[setup.filtering])
    _run_stream(stream, layout, events, inline, follow, out, dp_events)


def _run_stream(stream, layout, events, inline, follow, out, dp_events) -> None:
    """Read the events, write each batch's rows as it is computed (see :func:`stream_events`)."""
    filtering = stream.filtering
    writer = None  # created at the first good row: an input error before it leaves stdout empty
    fmt = out.resolved_format()
    weight = getattr(stream, "weight", None)  # gdp, dp: an event is `count` steps (rows)

    def open_writer():
        if fmt == "table" and not out.quiet:
            if not streaming:  # an input read whole: one table, laid out by the renderer to fit
                return WholeTable(stream.columns, out.columns)
            return StreamedTable(stream.columns, *layout, out.columns)
        return RowWriter(
            stream.columns,
            fmt,
            sys.stdout,
            quiet=out.quiet,
            headline="run" if filtering else "epsilon",  # -q with --filter: true/false per step
            widths={"step": 6, "run": 5, "level": 5},
            select=out.columns,
        )

    worst = None
    said: set[str] = set()
    written = 0
    streaming = False  # an error before the source is open (a file checked whole) stays unchanged
    pending: list = []  # events read, not yet computed and written

    def say(caught):
        for w in caught:
            msg = " ".join(str(w.message).split())
            if issubclass(w.category, DpcalcWarning) and msg not in said:
                said.add(msg)
                click.echo(f"Warning: {msg}", err=True)
        caught.clear()

    def flush():
        nonlocal writer, written, worst
        if not pending:
            return
        batch = pending[:]
        pending.clear()
        rows, error = stream.add_many(batch)
        for row in rows:
            writer = writer or open_writer()
            writer.write(row)
            written += 1
            stream.keep(row)
            eps = row["epsilon"]
            if out.max_epsilon is not None and eps is not None and eps > out.max_epsilon and worst is None:
                worst = (row["step"], row["epsilon"])
        if rows:
            sys.stdout.flush()
        say(caught)
        for note in stream.new_notes():
            if not out.quiet:  # -q: the values alone (as a ledger's notes on its orders)
                click.echo(for_terminal(f"Note: {note}", sys.stderr), err=True)
        if error is not None:
            raise error

    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", DpcalcWarning)
            try:
                source, streaming, waiter = _event_source(events, inline, follow, stream.curves, dp_events)
                if waiter is not None:
                    waiter.idle = flush
                steps = 0
                for ev in source:
                    pending.append(ev)
                    steps += 1 if weight is None else weight(ev)
                    if len(pending) >= BATCH or steps >= BATCH_STEPS:
                        flush()
                        steps = 0
                flush()
            except InputError as exc:
                if not streaming:
                    raise  # nothing was written: the error is the first line on stderr
                pending_error = exc
                try:
                    flush()  # the rows read before the error
                except InputError as first:
                    pending_error = first
                say(caught)  # a stream: the warnings about what came before it, then where it stopped
                if not written:
                    raise pending_error from None
                rows = "1 row was" if written == 1 else f"{written} rows were"
                raise InputError(f"{pending_error} ({rows} written before it)") from None
            say(caught)
        writer = writer or open_writer()  # no rows: still a CSV header / an empty JSON array
    except BrokenPipeError:  # `dpcalc odometer ... | head`: the reader left; stop quietly
        _broken_pipe()
    finally:
        if writer is not None:
            try:
                writer.close()
            except BrokenPipeError:
                _broken_pipe()
    if stream.rows:
        stream.draw(out.plot)
    if worst is not None:
        raise BudgetExceeded(
            f"budget exceeded: epsilon = {worst[1]!r} > {out.max_epsilon!r} (step {worst[0]})"
        )


def _broken_pipe():
    _quiet_broken_pipe()
    raise click.exceptions.Exit(ExitCode.OK)


def _say_waiting(line: str) -> None:
    click.echo(f"dpcalc: {line}", err=True)


def use_ledger(
    path,
    add,
    check,
    repair,
    delta,
    orders,
    gamma_kind,
    conversion,
    expect,
    pins,
    print_head,
    out,
    odometer=(None, None),
) -> None:
    """--ledger: report, --add (--check) or --repair.  A ledger that is not a regular file, a
    missing directory, an unreadable or read-only file are bad input (exit 2, one line naming
    --ledger PATH); damage, and a ledger that does not extend a pinned head, are exit 1 and the
    file is never changed.  ``odometer``: (--method, --odometer-target) as given (None: the ledger's
    own; a new ledger's, rdp and the default target)."""
    method, target = odometer
    L.on_wait = _say_waiting
    try:
        if repair:
            torn = L.repair(path)
            if torn is None:
                click.echo(f"Note: {path}: nothing to repair (no incomplete last line)", err=True)
            else:
                click.echo(
                    f"Note: {path}: removed the incomplete line {torn.line_no} ({torn.length} bytes: "
                    f"{torn.preview!r})",
                    err=True,
                )
            return
        if add is None:
            ledger = L.read(path, pins)
            if ledger.header is not None:
                L.check_header(ledger.header, _expect_params(expect, ledger.header, target))
            if print_head:
                if ledger.torn is not None:
                    click.echo(f"Warning: {ledger.torn.message(path)}", err=True)
                click.echo(str(pins.head))
                return
            report = session.report
            if ledger.header is not None and ledger.header.method != "rdp":
                report = _adaptive_report
            if not ledger.entries and _table_alone(out):
                _notes_alone(report, path, ledger, conversion)  # no rows, no table
                return
            run(out, lambda: report(path, ledger, conversion, quiet=out.quiet))
            return
        spec = session.parse_spec(add, "--add")
        if spec.kind == "rdp-curve":  # recorded by absolute path and contents (see its module)
            add = spec.label()
        exists = L.exists(path, "read" if check else "write")  # a directory, a FIFO, no directory: exit 2
        if pins is not None and not exists:
            pins.check_missing(path)  # a deleted ledger is a rollback (exit 1), before the missing --delta
        if delta is None and not exists:
            raise click.UsageError("missing option --delta (needed to start a new ledger)")
        # the accountant: as given, else the ledger's own (its first line, which never changes), else rdp
        found = L.first_header(path) if exists else None
        if method is None:
            method = found.method if found is not None else "rdp"
        if found is not None:
            expect = _expect_params(expect, found, target)
        elif target is not None and method == "rdp":
            raise click.UsageError(
                "--odometer-target needs --method gdp or dp (rdp's odometer is set by --gamma)"
            )
        header = None
        if delta is not None and method == "rdp":
            header = L.Header(delta, tuple(orders), gamma_kind)
        elif delta is not None:
            aim = adaptive.DEFAULT_TARGET if target is None else target
            header = adaptive.header_of(
                adaptive.Setup(method, delta, params=adaptive.odometer_params(method, delta, aim))
            )
        curves = session.Curves(orders)
        if method == "rdp":
            curves.of_spec(spec)  # a mechanism with no RDP curve is refused before the lock (exit 2)
        else:
            try:
                adaptive.step_values(spec, method)  # refused before the lock too
            except InputError as exc:
                raise InputError(f"--add: {exc}") from None
        verdict: dict = {}

        def admit(h, mechanisms):
            if h.method == "rdp":
                rows = session.account(h, mechanisms, conversion, curves, last_only=True)
            else:
                rows = adaptive.account(h, mechanisms, session.parse_spec, last_only=True)
            verdict["row"] = rows[-1]
            verdict["header"] = h
            verdict["ok"] = out.max_epsilon is None or rows[-1]["epsilon"] <= out.max_epsilon
            return verdict["ok"] or check  # --check: judged below, never written

        ledger, written = L.append(path, add, header, admit, expect=expect, dry_run=check, pins=pins)
    except L.NotALedger as exc:  # the wrong file named: bad input (exit 2), left as it was
        raise InputError(f"{exc}; the file was not changed") from None
    except L.LedgerDamaged as exc:
        raise click.ClickException(f"ledger {path}: {exc}; the file was not changed") from None
    except (H.LedgerRolledBack, H.HeadNotWritten) as exc:
        raise click.ClickException(str(exc)) from None
    except L.LedgerTorn as exc:
        raise click.ClickException(f"ledger {exc}") from None
    except L.LedgerLocked as exc:
        raise click.ClickException(str(exc)) from None
    except OSError as exc:  # not the input's fault (a failing disk, a full file system): exit 1
        raise click.ClickException(f"ledger {path}: {(exc.strerror or str(exc)).lower()}") from None
    row = verdict["row"]
    row["recorded"] = bool(written and not check)
    if print_head:
        click.echo(str(pins.head))
        if not verdict["ok"]:
            raise _refused(row, out)
        return
    h = verdict["header"]
    if h.method == "rdp":
        result = session.added_result(path, row, h.alphas, quiet=out.quiet)
    else:
        result = adaptive.ledger_result(path, h, [row], quiet=out.quiet, plot=False)
    if not verdict["ok"]:
        if not out.quiet:  # -q prints the value spent: a refused event spent nothing, so nothing is printed
            emit(result, _no_budget(out))
        raise _refused(row, out)
    run(out, lambda: result)


def _expect_params(expect: dict, header, target) -> dict:
    """``expect`` with the odometer ``--odometer-target`` fixes under ``header``'s accountant and δ (to be
    compared with the ledger's first line)."""
    if target is None:
        return expect
    if header.method == "rdp":
        raise InputError("--odometer-target: this ledger is accounted under --method rdp (its first line)")
    return {**expect, "params": adaptive.odometer_params(header.method, header.delta, target)}


def _adaptive_report(path, ledger, conversion, quiet=False) -> Result:
    """The report of a gdp or dp ledger: one row per step of its entries."""
    rows = adaptive.account(ledger.header, ledger.mechanisms, session.parse_spec)
    result = adaptive.ledger_result(path, ledger.header, rows, quiet=quiet)
    if ledger.torn is not None:
        warnings.warn(ledger.torn.message(path), DpcalcWarning, stacklevel=2)
    return result


def _table_alone(out) -> bool:
    """A table (not -q) that nothing else is asked of: no budget to judge, no figure."""
    return (
        out.resolved_format() == "table"
        and not out.quiet
        and out.max_epsilon is None
        and out.max_delta is None
        and not out.plot
    )


def _notes_alone(report, *args) -> None:
    """A report without rows, as a table: its warnings and notes on stderr, no table on stdout (the
    renderer lays out rows; a table of none is nothing to read)."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", DpcalcWarning)
        result = report(*args)
    for w in caught:
        if issubclass(w.category, DpcalcWarning):
            click.echo(for_terminal(f"Warning: {' '.join(str(w.message).split())}", sys.stderr), err=True)
    for note in result.notes:
        click.echo(for_terminal(f"Note: {note}", sys.stderr), err=True)


def _refused(row, out) -> BudgetExceeded:
    return BudgetExceeded(
        f"budget exceeded: epsilon would be {row['epsilon']!r} > {out.max_epsilon!r}; the event was not recorded"
    )


def _no_budget(out):
    return dataclasses.replace(out, max_epsilon=None, max_delta=None, plot=None)
