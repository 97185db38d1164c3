"""Pieces of work on a running dask.distributed cluster, their results in order (the ``dask`` extra).

The user starts the cluster with ``dask scheduler`` and ``dask worker ADDRESS`` (commands of the
``distributed`` package) and gives its address (``--scheduler``, or Dask's own ``DASK_SCHEDULER_ADDRESS``);
a library caller may pass a ``distributed.Client``.  Dask schedules, moves and retries the pieces: a piece
lost with its worker is computed again (``retries``), and its result is the same, since a piece's result
depends on the piece alone.  At most a few pieces per thread are in flight, so that the memory of a long
sweep stays bounded.
"""

from __future__ import annotations

from dpcalc import execution
from dpcalc.errors import InputError

#: How long a scheduler may take to answer.
CONNECT_SECONDS = 5.0
#: How many times a piece is tried again after a failure of its worker.
RETRIES = 3
#: Pieces in flight per cluster thread.
IN_FLIGHT = 4

_OWNED: dict = {}  # address -> the Client this process opened


def _distributed():
    try:
        import distributed  # lazy: an optional extra
    except ImportError:
        raise InputError(
            "--scheduler: a dask cluster needs the 'dask' extra (pip install 'dpcalc[dask]')"
        ) from None
    return distributed


def client(scheduler):
    """The ``distributed.Client`` of ``scheduler`` (an address, or a Client already): connected within
    :data:`CONNECT_SECONDS`, or an :class:`InputError` naming the address."""
    if not isinstance(scheduler, str):
        return scheduler
    if scheduler in _OWNED:
        return _OWNED[scheduler]
    distributed = _distributed()
    try:
        c = distributed.Client(scheduler, timeout=CONNECT_SECONDS, set_as_default=False)
    except (OSError, TimeoutError, ValueError) as exc:
        raise InputError(
            f"--scheduler {scheduler}: no dask scheduler answered within {CONNECT_SECONDS:g} s ({_reason(exc)})"
        ) from None
    _OWNED[scheduler] = c
    return c


def _reason(exc: Exception) -> str:
    return " ".join(str(exc).split())[:160] or type(exc).__name__


def threads(c) -> int:
    """The threads of the cluster's workers (at least 1)."""
    return max(1, sum(c.nthreads().values()))


def owned() -> set:
    """The addresses of the clients this process opened."""
    return set(_OWNED)


def close_owned(keep=frozenset()) -> None:
    """Close the clients this process opened, but those of the addresses ``keep``."""
    for address in [a for a in _OWNED if a not in keep]:
        c = _OWNED.pop(address)
        try:
            c.close()
        except Exception:  # noqa: BLE001 - closing a connection that is already gone
            pass


def _piece(fn, item):
    """One piece on a worker: its own work serial, and freed blocks kept as the command line keeps them (the
    PLD accountant's arrays: without it a piece took twice the time on a dask worker)."""
    from dpcalc.execution import allocator  # lazy: ctypes, only on a cluster's worker

    allocator.keep_freed_blocks()
    execution._IN_WORKER = True  # a piece's own work runs serially on its worker
    execution._JOB = None
    return execution._capture(fn, item)


def map_ordered(c, fn, items: list):
    """Yield ``(fn(item), warnings)`` for every item, in order, computed on the cluster of client ``c``."""
    window = max(2, IN_FLIGHT * threads(c))
    futures = []
    nxt = 0
    try:
        for i in range(len(items)):
            while nxt < len(items) and nxt < i + window:
                futures.append(c.submit(_piece, fn, items[nxt], pure=False, retries=RETRIES))
                nxt += 1
            yield futures[i].result()
            futures[i] = None  # its result is out: the cluster may forget it
    finally:
        pending = [f for f in futures if f is not None]
        if pending:
            c.cancel(pending)
