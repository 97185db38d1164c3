"""Pieces of work on a pool of forked processes of this machine, their results in order.

The workers are forked, so they inherit the command's state (the function and the pieces are not pickled,
only each result); they ignore Ctrl-C (the parent ends the pool: :mod:`dpcalc.interrupt`) and run any work
of their own serially (:data:`dpcalc.execution._IN_WORKER`).
"""

from __future__ import annotations

import contextlib

from dpcalc import execution, interrupt

_STATE: dict = {}


def _start() -> None:
    interrupt.ignore_in_worker()
    execution._IN_WORKER = True
    execution._JOB = None  # the parent's bar is the parent's


def _work(i: int):
    return execution._capture(_STATE["fn"], _STATE["items"][i])


def map_ordered(fn, items: list, processes: int):
    """Yield ``(fn(item), warnings)`` for every item, in order, on ``processes`` forked processes."""
    import multiprocessing  # lazy: 5 ms of start-up that only a pool needs

    _STATE.update(fn=fn, items=items)
    try:
        with contextlib.ExitStack() as stack:
            with interrupt.blocked():  # workers ignore Ctrl-C from their fork on; the parent ends the pool
                pool = stack.enter_context(
                    multiprocessing.get_context("fork").Pool(min(processes, len(items)), initializer=_start)
                )
            yield from pool.imap(_work, range(len(items)))
    finally:
        _STATE.clear()
