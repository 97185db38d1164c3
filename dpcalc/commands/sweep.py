"""Sweeps in bounded memory: chunks of combinations, computed in order by one or several processes.

A command splits its grid of combinations into chunks (:func:`slices`) and hands a ``compute(task)``
function and the list of tasks to :func:`run`, which yields the results in task order: in this
process, or (``jobs`` > 1) in a pool of forked worker processes that inherit the command's state.
Warnings raised in a worker are raised again here, in order.  :func:`check_rows` refuses a sweep whose
output would be absurd before anything is computed.
"""

from __future__ import annotations

import contextlib
import math
import multiprocessing
import os
import warnings

from dpcalc import interrupt
from dpcalc.errors import InputError

#: The largest number of rows a sweep may produce.
MAX_ROWS = 10_000_000
#: Below this many rows a sweep runs in one process (a pool's start-up would cost more than it saves).
POOL_MIN_ROWS = 8192

_STATE: dict = {}


def check_rows(
    sizes: dict[str, int],
    per_combination: int = 1,
    limit: int = MAX_ROWS,
    per: str = "accountants",
    unit: str = "rows",
    why: str = "",
) -> int:
    """The number of rows ``sizes`` (option -> number of values) make, times ``per_combination`` (of ``per``);
    :class:`InputError` naming the options, the count and ``limit`` (and ``why``, what the limit is for)
    when it is above ``limit``."""
    rows = math.prod(sizes.values()) * per_combination
    if rows > limit:
        swept = " × ".join(f"{k} ({v:,})" for k, v in sizes.items() if v > 1)
        extra = f" × {per_combination} {per}" if per_combination > 1 else ""
        raise InputError(
            f"{swept}{extra}: the sweep would make {rows:,} {unit}, more than {limit:,}{why}; "
            "narrow a range or split the sweep"
        )
    return rows


#: The CPU seconds a sweep may be estimated to take: each command's limits are this budget divided by
#: its measured cost per row (benchmarks/; a margin of about two below the 10 s a run should take).
WORK_SECONDS = 5.0
#: The budget of a sweep of inverse questions (--target-epsilon): each configuration is a search whose
#: cost the estimate bounds loosely, so a sweep of a few dozen targets stays possible.
SEARCH_WORK_SECONDS = 30.0


def work_limit(seconds_each: float, budget: float = WORK_SECONDS) -> int:
    """The most rows of ``seconds_each`` CPU seconds each that fit ``budget`` seconds (at least 1)."""
    return max(1, math.floor(budget / seconds_each * (1 + 1e-9)))


def check_work(
    sizes: dict[str, int],
    seconds_each: float,
    what: str,
    per_combination: int = 1,
    per: str = "accountants",
    unit: str = "rows",
    budget: float = WORK_SECONDS,
) -> int:
    """:func:`check_rows` with the limit :func:`work_limit` gives for rows of ``seconds_each`` CPU
    seconds (``what`` names the kind of row in the refusal, e.g. ``--method optimal``): every sweep a
    command accepts finishes in about ``budget`` seconds (:data:`WORK_SECONDS` by default)."""
    limit = work_limit(seconds_each, budget)
    return check_rows(sizes, per_combination, limit, per, unit, why=f" for {what} (bounded work)")


def slices(n: int, chunk: int | None):
    """``[(lo, hi), ...]`` covering ``range(n)`` in pieces of at most ``chunk`` (``None``: one piece)."""
    if chunk is None or n <= chunk:
        return [(0, n)]
    return [(lo, min(lo + chunk, n)) for lo in range(0, n, chunk)]


def cpu_count() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # pragma: no cover - not Linux
        return os.cpu_count() or 1


def auto_jobs(rows: int, tasks: int) -> int:
    """Processes for ``rows`` rows in ``tasks`` chunks: 1 for small work, else one per core (at most
    one per chunk)."""
    if rows < POOL_MIN_ROWS or tasks < 2:
        return 1
    return max(1, min(cpu_count(), tasks))


def _work(i: int):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = _STATE["compute"](_STATE["tasks"][i])
    return result, [(str(w.message), w.category) for w in caught]


def run(compute, tasks: list, jobs: int | None = 1, rows: int | None = None):
    """Yield ``compute(task)`` for every task, in order, with ``jobs`` processes (``None``: automatic)."""
    if jobs is None:
        jobs = auto_jobs(rows if rows is not None else len(tasks), len(tasks))
    if jobs <= 1 or len(tasks) < 2:
        for task in tasks:
            yield compute(task)
        return

    _STATE.update(compute=compute, tasks=tasks)
    try:
        with contextlib.ExitStack() as stack:
            with interrupt.blocked():  # workers ignore Ctrl-C from their fork on; the parent ends the pool
                pool = stack.enter_context(
                    multiprocessing.get_context("fork").Pool(
                        min(jobs, len(tasks)), initializer=interrupt.ignore_in_worker
                    )
                )
            for result, caught in pool.imap(_work, range(len(tasks))):
                for message, category in caught:
                    warnings.warn(message, category, stacklevel=2)
                yield result
    finally:
        _STATE.clear()
