"""Sweeps in bounded memory: chunks of combinations, and the one limit on their size.

A command splits its grid of combinations into chunks (:func:`slices`) and hands a ``compute(task)``
function and the list of tasks to :func:`dpcalc.execution.map_ordered`, which yields the results in task
order on this machine's cores or a cluster.  :func:`check_rows` refuses a sweep whose output would be absurd
(more than :data:`MAX_ROWS` rows) before anything is computed; its work is estimated, said and capped
(:func:`dpcalc.execution.plan`), never refused.
"""

from __future__ import annotations

import math

from dpcalc import execution
from dpcalc.errors import InputError

#: The largest number of rows a sweep may produce (10⁸: beyond it the output itself is the problem).
MAX_ROWS = 100_000_000


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


def run(
    compute,
    tasks: list,
    *,
    seconds: float,
    unit: str = "rows",
    what: str = "",
    weights=None,
    total=None,
    parallel=None,
    settings=None,
):
    """Yield ``compute(task)`` for every task, in order (:func:`dpcalc.execution.map_ordered`), after telling
    :func:`dpcalc.execution.plan` the work: ``seconds`` of CPU on one core for ``total`` ``unit`` (default: one
    per task, or the sum of ``weights``).  A generator: the plan (its estimate line, its cap) runs when the
    first result is asked for, before anything is written.  ``settings``: execution settings for this work
    (e.g. a library caller's ``jobs``), else those in force."""
    weights = [1.0] * len(tasks) if weights is None else list(weights)
    total = sum(weights) if total is None else total
    with execution.using(**(settings or {})):
        execution.plan(seconds, total, unit, parallel=len(tasks) if parallel is None else parallel, what=what)
        yield from execution.map_ordered(compute, tasks, weights=weights)


#: The CPU seconds (estimated) a chunk of an expensive sweep is cut to, so that the cores share a sweep of few
#: rows; not less, as every chunk has a fixed cost (the vectorised steps of its curves and conversions, its
#: pickled result: some 25 ms): at 0.25 the 10,000-row DP-SGD sweep ran 16 chunks and took 10% longer.
CHUNK_SECONDS = 0.5


def chunk_rows(chunk: int | None, seconds: float, rows: int) -> int | None:
    """The combinations per chunk of a sweep of ``rows`` rows and ``seconds`` of work (estimated, one core):
    ``chunk`` (None: one chunk), or fewer where rows are expensive, so that a chunk is about
    :data:`CHUNK_SECONDS` of work — when the whole is worth spreading (:data:`dpcalc.execution.POOL_MIN_SECONDS`).
    It depends on the work only, never on the processes, so the rows are the same however they run."""
    if chunk is None or seconds < execution.POOL_MIN_SECONDS or rows == 0:
        return chunk
    return max(1, min(chunk, int(CHUNK_SECONDS / (seconds / rows))))


def by_method(
    compute, methods, n: int, chunk: int | None, *, seconds: float, what: str, per_row: float = 1.0
):
    """Yield ``compute((method, lo, hi))`` for every method and every piece ``lo:hi`` of ``n`` combinations
    (method first, then the pieces), in order, through :func:`run`: the pieces are ``chunk`` combinations, or
    fewer where rows are expensive (:func:`chunk_rows`: they depend on the work, never on the processes); each
    piece's share of the progress is its rows (``per_row`` rows a combination)."""
    tasks = [(m, lo, hi) for m in methods for lo, hi in pieces(n, chunk, seconds, n * len(methods))]
    return run(
        compute, tasks, seconds=seconds, what=what, weights=[(hi - lo) * per_row for _, lo, hi in tasks]
    )


def pieces(n: int, chunk: int | None, seconds: float, rows: int):
    """:func:`slices` of ``n`` combinations into chunks of :func:`chunk_rows` (``chunk``, or fewer where the
    ``rows`` of the sweep are expensive for its ``seconds`` of work)."""
    return slices(n, chunk_rows(chunk, seconds, rows))


def slices(n: int, chunk: int | None):
    """``[(lo, hi), ...]`` covering ``range(n)`` in pieces of at most ``chunk`` (``None``: one piece)."""
    if chunk is None or n <= chunk:
        return [(0, n)]
    return [(lo, min(lo + chunk, n)) for lo in range(0, n, chunk)]
