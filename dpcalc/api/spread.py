"""``jobs=`` and ``scheduler=`` on the library's array functions: the values of a broadcast are cut into pieces of
:data:`PIECE` (a number that never depends on the processes, so the results are the same however many there
are) and the pieces computed on this machine's processes or a dask.distributed cluster
(:mod:`dpcalc.execution`), in order.  Without either, the function computes all its values at once, as before.
"""

from __future__ import annotations

import functools
import importlib
import inspect
import math

import numpy as np

from dpcalc import execution
from dpcalc.api.contract import Bound
from dpcalc.errors import InputError

#: The values of one piece.
PIECE = 4096
#: The most values a spread call computes (its pieces are computed in bounded memory; the result is one array).
MAX_SPREAD_VALUES = 100_000_000


def _call(item):
    """One piece: the public function (named by module and name, so that it travels to a worker by reference)."""
    module, name, kwargs = item
    return getattr(importlib.import_module(module), name)(**kwargs)


def _join(parts: list, shape: tuple) -> Bound:
    fields = []
    for i in range(len(Bound._fields)):
        values = [p[i] for p in parts]
        if all(v is None for v in values):
            fields.append(None)
        else:
            fields.append(
                np.concatenate([np.ravel(np.asarray(v, dtype=float)) for v in values]).reshape(shape)
            )
    return Bound(*fields)


def spreadable(*array_names: str):
    """Give a function of broadcast arrays (``array_names``) the keyword arguments ``jobs`` (processes) and
    ``scheduler`` (a dask.distributed address or Client).  Apply it under :func:`~dpcalc.api.contract.contract`
    so that the public function is the one a worker calls."""

    def decorate(fn):
        signature = inspect.signature(fn)

        @functools.wraps(fn)
        def wrapper(*args, jobs: int | None = None, scheduler=None, **kwargs):
            if jobs is None and scheduler is None:
                return fn(*args, **kwargs)
            if jobs is not None and (not isinstance(jobs, int) or isinstance(jobs, bool) or jobs < 1):
                raise InputError(f"jobs: must be a whole number >= 1, got {jobs!r}")
            bound = signature.bind(*args, **kwargs)
            arrays = {k: bound.arguments[k] for k in array_names if bound.arguments.get(k) is not None}
            try:
                shape = np.broadcast_shapes(*(np.shape(v) for v in arrays.values()))
            except ValueError:
                raise InputError(f"{', '.join(arrays)}: the shapes do not broadcast together") from None
            n = math.prod(shape)
            if n > MAX_SPREAD_VALUES:
                raise InputError(f"the arguments broadcast to {n:,} values, more than {MAX_SPREAD_VALUES:,}")
            flat = {k: np.broadcast_to(np.asarray(v), shape).ravel() for k, v in arrays.items()}
            items = [
                (fn.__module__, fn.__name__, {**bound.arguments, **{k: v[lo:hi] for k, v in flat.items()}})
                for lo in range(0, n, PIECE)
                for hi in [min(lo + PIECE, n)]
            ]
            with execution.using(jobs=jobs, scheduler=scheduler):
                parts = list(execution.map_ordered(_call, items, rows=n))
            return _join(parts, shape)

        return wrapper

    return decorate
