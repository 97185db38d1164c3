"""Column values from arrays: Python floats and ints, None where a row has no value (a nan), converted by one
``tolist`` per column instead of a Python conversion per row."""

from __future__ import annotations

import numpy as np


def floats(x) -> list:
    """Floats, None where nan (a value the row does not have)."""
    x = np.asarray(x, float).reshape(-1)
    return _none_where(x.tolist(), np.isnan(x))


def whole(x) -> list:
    """Whole numbers (Python ints, as ``int(t)`` gives them), None where nan."""
    x = np.asarray(x, float).reshape(-1)
    nan = np.isnan(x)
    if np.all(nan | (np.abs(x) < 2.0**53)):  # exact in int64: the same ints as int(t), in one pass
        return _none_where(np.where(nan, 0.0, x).astype(np.int64).tolist(), nan)
    return [None if t else int(v) for v, t in zip(x.tolist(), nan.tolist())]


def _none_where(values: list, missing) -> list:
    """``values`` with None at the positions where ``missing`` (bool array) is true."""
    for i in np.flatnonzero(missing).tolist():
        values[i] = None
    return values
