"""Where and how heavy work runs: processes or a cluster, the estimate said up front, the cap, the progress.

A command (or a library caller) describes its work once with :func:`plan` — the estimated CPU seconds on one
core and the number of rows or samples — and runs its pieces through :func:`map_ordered`, which yields each
piece's result in the order of the pieces: in this process, in a pool of forked processes (``jobs``), or on a
running dask.distributed cluster (``scheduler``).  A result never depends on where its piece ran: the pieces
are fixed by the work, never by the number of processes, and a piece that samples draws from its own random
stream (a ``numpy.random.SeedSequence`` keyed by the piece's index).

The settings (:class:`Settings`) are set for a block by :func:`using`; the command line sets them from
``--jobs``, ``--scheduler``, ``--progress`` and ``--max-seconds``.  Nothing here writes to stdout: the
estimate goes to ``Settings.announce`` (the command line: one stderr line) and the bar to stderr.
"""

from __future__ import annotations

import contextlib
import os
import threading
import warnings
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, replace

from dpcalc.errors import InputError
from dpcalc.execution import cluster, pool

#: Above this estimated wall time the estimate is said before the work starts.
ANNOUNCE_SECONDS = 3.0
#: From this estimated wall time on a progress bar is shown (where one is wanted).
PROGRESS_SECONDS = 1.0
#: From this much work on one core (seconds) the automatic choice uses every core.
POOL_MIN_SECONDS = 0.5
#: Without a plan: from this many rows the automatic choice uses every core.
POOL_MIN_ROWS = 8192
#: The environment variable that sets --max-seconds.
MAX_SECONDS_ENV = "DPCALC_MAX_SECONDS"


class WorkCapExceeded(InputError):
    """The estimate is above ``--max-seconds``: refused before any work (exit status 2)."""


@dataclass(frozen=True)
class Settings:
    """How heavy work runs.

    ``jobs``: processes on this machine (None: one per core when the work is worth it, else 1);
    ``scheduler``: a dask.distributed scheduler's address or a ``distributed.Client`` (None: this machine);
    ``progress``: show a bar on stderr (None: no bar; the command line decides from the terminal);
    ``max_seconds``: refuse work estimated to take longer (None: no cap);
    ``announce``: where the one-line estimate of long work goes (None: nowhere)."""

    jobs: int | None = None
    scheduler: object = None
    progress: bool | None = None
    max_seconds: float | None = None
    announce: Callable[[str], None] | None = None


_DEFAULT = Settings()
#: The blocks of settings in force, per thread (``stack``: the innermost last).  Not a ContextVar: a block of :func:`using` often sits in a generator
#: (:func:`dpcalc.commands.sweep.run`) that a reader may drop half-read, so the block can end in the garbage
#: collector; resetting a ContextVar there can corrupt the context's HAMT on CPython < 3.12 (a segfault in
#: the next ``numpy.errstate``: python/cpython#148891).  A plain attribute is safe to restore anywhere.
_LOCAL = threading.local()
#: Set in a worker (a forked process or a dask task): work inside a piece runs serially.
_IN_WORKER = False


def current() -> Settings:
    """The settings in force."""
    stack = getattr(_LOCAL, "stack", None)
    return stack[-1] if stack else _DEFAULT


@contextlib.contextmanager
def using(**changes):
    """A block with these settings changed (fields of :class:`Settings`).  The job planned in the block (its
    progress bar) ends with it, and so do the cluster clients it connected to."""

    mine = replace(current(), **changes)
    stack = _LOCAL.__dict__.setdefault("stack", [])
    stack.append(mine)
    job, clients = _JOB, cluster.owned()
    try:
        yield mine
    finally:
        if _JOB is not job:
            finish()
        # this block's own entry: a block that ends out of order (collected later) leaves the newer ones
        for i in range(len(stack) - 1, -1, -1):
            if stack[i] is mine:
                del stack[i]
                break
        cluster.close_owned(keep=clients)


def cpu_count() -> int:
    """The cores this process may use."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # pragma: no cover - not Linux
        return os.cpu_count() or 1


# ---------------------------------------------------------------------------------------------------- the plan


@dataclass
class Job:
    """The work of one command: its estimate, its progress (``done`` of ``total`` ``unit``)."""

    seconds: float  # CPU seconds on one core (estimate)
    total: float
    unit: str
    processes: int
    done: float = 0.0
    bar: object = None  # a dpcalc.execution.progress.Bar while shown

    @property
    def wall(self) -> float:
        return self.seconds / max(1, self.processes)

    def advance(self, amount: float) -> None:
        self.done += amount
        if self.bar is not None:
            self.bar.advance(amount)


_JOB: Job | None = None
_LAST: Job | None = None


def last_job() -> Job | None:
    """The current or most recent job (for a message on Ctrl-C: how far it got)."""
    return _JOB or _LAST


def finish() -> None:
    """End the current job: its progress bar is gone (before a table or a note is written)."""
    global _JOB, _LAST
    if _JOB is not None:
        if _JOB.bar is not None:
            _JOB.bar.close()
            _JOB.bar = None
        _LAST, _JOB = _JOB, None


def duration(seconds: float) -> str:
    """A duration for a person: 4.2 s, 3 min 10 s, 2 h 5 min, 3.1 days."""
    if seconds < 60:
        return f"{seconds:.2g} s" if seconds < 10 else f"{seconds:.0f} s"
    if seconds < 3600:
        return f"{int(seconds // 60)} min {int(seconds % 60)} s"
    if seconds < 86400 * 2:
        return f"{int(seconds // 3600)} h {int(seconds % 3600 // 60)} min"
    return f"{seconds / 86400:.3g} days"


def processes(parallel: int | None = None, seconds: float | None = None) -> int:
    """The processes (or cluster threads) the work would use: ``parallel`` caps it (the pieces there are);
    ``seconds`` (the work on one core) below :data:`POOL_MIN_SECONDS` keeps an automatic choice at 1."""
    s = current()
    if _IN_WORKER:
        return 1
    if s.scheduler is not None:
        n = cluster.threads(cluster.client(s.scheduler))
    elif s.jobs is not None:
        n = s.jobs
    elif seconds is not None and seconds < POOL_MIN_SECONDS:
        n = 1
    else:
        n = cpu_count()
    if parallel is not None:
        n = min(n, max(1, parallel))
    return max(1, n)


def plan(
    seconds: float, total: float, unit: str = "rows", parallel: int | None = None, what: str = ""
) -> Job:
    """Describe the work about to run: ``seconds`` of CPU on one core for ``total`` ``unit`` (rows, samples),
    in at most ``parallel`` pieces at a time.  Refuses (:class:`WorkCapExceeded`) when the estimated wall time
    is above ``max_seconds``; says the estimate when it is above :data:`ANNOUNCE_SECONDS`; opens the progress
    bar when one is wanted and the work is long enough.  ``what`` names the work in those lines."""
    global _JOB
    finish()
    s = current()
    job = Job(seconds=float(seconds), total=float(total), unit=unit, processes=processes(parallel, seconds))
    where = _where(job.processes, s)
    named = unit[:-1] if total == 1 and unit.endswith("s") else unit  # 1 row, 2 rows
    count = f"{_count(total)} {named}" + (f" of {what}" if what else "")
    if s.max_seconds is not None and job.wall > s.max_seconds and not _IN_WORKER:
        raise WorkCapExceeded(
            f"--max-seconds {s.max_seconds:g}: {count} on {where} would take about {duration(job.wall)}, "
            f"above the cap; narrow the work or raise the cap"
        )
    if not _IN_WORKER:
        if job.wall > ANNOUNCE_SECONDS and s.announce is not None:
            s.announce(f"{count} on {where}: about {duration(job.wall)}")
        if s.progress and job.wall >= PROGRESS_SECONDS:
            from dpcalc.execution import progress  # lazy: rich loads only for a bar

            job.bar = progress.Bar(total, unit)
        _JOB = job
    return job


def _count(x: float) -> str:
    return f"{x:,.0f}" if x < 1e7 else f"{x:.3g}"


def _where(n: int, s: Settings) -> str:
    if s.scheduler is not None:
        return f"a dask cluster of {n} threads"
    return f"{n} process" + ("es" if n != 1 else "")


# ------------------------------------------------------------------------------------------------ the pieces


def _capture(fn, item):
    """``fn(item)`` and the warnings it raised, as (message, category) pairs (re-raised by the caller)."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = fn(item)
    return result, [(str(w.message), w.category) for w in caught]


def map_ordered(
    fn: Callable,
    items: Sequence,
    weights: Iterable[float] | None = None,
    rows: int | None = None,
) -> Iterator:
    """Yield ``fn(item)`` for every item, in order, on the processes or cluster of the settings in force.

    ``weights``: each item's share of the job's progress (default 1); ``rows``: without a :func:`plan`, the
    rows the items make (the automatic choice of processes uses it).  Warnings raised in a piece are raised
    again here, in order.  Inside a worker the items run serially."""
    items = list(items)
    weights = [1.0] * len(items) if weights is None else [float(w) for w in weights]
    job = _JOB
    n = _choose(len(items), job, rows)
    s = current()
    if n <= 1 and (s.scheduler is None or _IN_WORKER):
        for item, w in zip(items, weights):
            before = job.done if job is not None else 0.0
            result = fn(item)
            if job is not None:  # the share of the item its own work (a nested map) has not shown yet
                job.advance(max(0.0, w - (job.done - before)))
            yield result
        return
    if s.scheduler is not None and not _IN_WORKER:
        results = cluster.map_ordered(cluster.client(s.scheduler), fn, items)
    else:
        results = pool.map_ordered(fn, items, n)
    for (result, caught), w in zip(results, weights):
        for message, category in caught:
            warnings.warn(message, category, stacklevel=2)
        if job is not None:
            job.advance(w)
        yield result


def _choose(pieces: int, job: Job | None, rows: int | None) -> int:
    """The processes for ``pieces`` pieces (1: this process)."""
    if _IN_WORKER or pieces < 2:
        return 1
    s = current()
    if s.scheduler is not None:
        return 2
    if s.jobs is not None:
        return min(s.jobs, pieces)
    if job is not None:
        return min(job.processes, pieces)
    if rows is not None and rows < POOL_MIN_ROWS:
        return 1
    return min(cpu_count(), pieces)


def mapper() -> Callable[[Callable, Sequence], Iterator]:
    """:func:`map_ordered` as a plain ``mapper(fn, items)`` for an engine function that takes one (the Monte
    Carlo accountants): the settings in force, the progress advanced per item."""
    return lambda fn, items, weights=None: map_ordered(fn, items, weights)


__all__ = [
    "Job",
    "Settings",
    "WorkCapExceeded",
    "cpu_count",
    "current",
    "duration",
    "last_job",
    "map_ordered",
    "mapper",
    "plan",
    "processes",
    "using",
]
