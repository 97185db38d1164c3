"""``--jobs``, ``--scheduler``, ``--progress/--no-progress`` and ``--max-seconds``: where a command's heavy
work runs, whether its progress is shown, and the cap a CI job sets (:mod:`dpcalc.execution`).

``@work_options`` adds them and runs the command inside :func:`dpcalc.execution.using` with them.  The bar is
shown by default when stderr is a terminal, ``CI`` is not ``true`` and the rows are not streamed to the same
terminal (a table is drawn after the bar is gone); the estimate of long work is one line on stderr.
Pure click and :mod:`dpcalc.execution` (the standard library): ``--help`` imports nothing more.
"""

from __future__ import annotations

import functools
import os
import sys

import click

from dpcalc import execution

#: Dask's own way of naming the scheduler (read when --scheduler is not given).
SCHEDULER_ENV = "DASK_SCHEDULER_ADDRESS"


def _max_seconds(ctx, param, value):
    if value is None:
        text = os.environ.get(execution.MAX_SECONDS_ENV)
        if text is None or not text.strip():
            return None
        try:
            value = float(text)
        except ValueError:
            value = None
        if value is None or not value > 0 or value != value:
            raise click.BadParameter(
                f"{execution.MAX_SECONDS_ENV}={text!r}: not a number of seconds > 0", ctx, param
            )
    return float(value)


def _announce(line: str) -> None:
    click.echo(f"dpcalc: {line} (--max-seconds caps it)", err=True)


def _isatty(stream) -> bool:
    try:
        return stream is not None and stream.isatty()
    except (ValueError, OSError):
        return False


def show_progress(flag: bool | None, fmt: str | None, quiet: bool, plot: str | None) -> bool:
    """Whether the bar is shown: ``flag`` when given; else on a terminal's stderr, not under ``CI=true``, and
    not while rows stream to the same terminal."""
    if flag is not None:
        return flag
    if not _isatty(sys.stderr) or os.environ.get("CI", "").lower() in ("true", "1", "yes"):
        return False
    streams = not plot and (quiet or (fmt is not None and fmt != "table"))
    return not (streams and _isatty(sys.stdout))


def work_options(func):
    """Add the options of heavy work; the command runs with them in force."""

    @click.option(
        "--jobs",
        type=click.IntRange(min=1),
        default=None,
        metavar="N",
        help="Processes on this machine for sweeps, tables of searches and Monte Carlo samples "
        "[default: one per core when the work takes more than about half a second].",
    )
    @click.option(
        "--scheduler",
        default=None,
        metavar="ADDRESS",
        help="Run the work on a running dask.distributed cluster (started with 'dask scheduler' and "
        "'dask worker ADDRESS'; needs the 'dask' extra) [default: $DASK_SCHEDULER_ADDRESS, else this machine]. "
        "The rows are the same as on this machine.",
    )
    @click.option(
        "--progress/--no-progress",
        "progress",
        default=None,
        help="Show a progress bar on stderr for work longer than about a second [default: when stderr is a "
        "terminal, CI is not true and the rows do not stream to the same terminal].",
    )
    @click.option(
        "--max-seconds",
        type=click.FloatRange(min=0, min_open=True),
        callback=_max_seconds,
        default=None,
        metavar="S",
        help=f"Refuse up front (exit 2, nothing computed) work estimated to take longer than S seconds "
        f"[default: ${execution.MAX_SECONDS_ENV}, else no cap]. Work estimated above 3 s is announced on stderr.",
    )
    @functools.wraps(func)
    def wrapper(*args, jobs, scheduler, progress, max_seconds, **kwargs):
        if scheduler is None:
            scheduler = os.environ.get(SCHEDULER_ENV) or None
        shown = show_progress(progress, kwargs.get("fmt"), kwargs.get("quiet", False), kwargs.get("plot"))
        with execution.using(
            jobs=jobs, scheduler=scheduler, progress=shown, max_seconds=max_seconds, announce=_announce
        ):
            return func(*args, **kwargs)

    return wrapper


__all__ = ["show_progress", "work_options"]
