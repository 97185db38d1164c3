"""Cartesian products of parameter values, as flat broadcast arrays.

``product(q=(0.01, 0.02), sigma=(1.0, 2.0, 3.0))`` gives ``{"q": array of 6, "sigma": array of 6}``
with the first parameter varying slowest, so one engine call evaluates every combination.
"""

from __future__ import annotations

import numpy as np


def product(**values) -> dict[str, np.ndarray]:
    """Flattened cartesian product of the given 1-D value lists (first name varies slowest)."""
    names = list(values)
    arrays = [np.asarray(values[n]).reshape(-1) for n in names]
    if not arrays:
        return {}
    mesh = np.meshgrid(*arrays, indexing="ij")
    return {n: m.reshape(-1) for n, m in zip(names, mesh)}
