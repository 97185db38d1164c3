"""Default grids of Rényi orders α (docs/math.md §1.6)."""

from __future__ import annotations

import numpy as np

from dpcalc.engine._numerics import sorted_unique

#: the largest finite Rényi order any curve is computed at: below 2^53, where α and α + 1 are still
#: distinct floats (the integer-order expansions and the chord between ⌊α⌋ and ⌊α⌋ + 1 need them)
ORDER_MAX = 1e15

#: dp_accounting 0.6.0's ``DEFAULT_RDP_ORDERS``: 1.1..10.9 by 0.1, 11..63, 128, 256, 512, 1024.
DP_ACCOUNTING_ORDERS = np.array(
    [1.0 + x / 10.0 for x in range(1, 100)] + list(range(11, 64)) + [128, 256, 512, 1024], dtype=float
)

#: dpcalc's default: dp_accounting's grid refined (1.01..1.09, 64..127 geometric steps, up to 1e4).
#: A finer grid can only lower the minimum over orders, so it is never less tight than the peers'.
DEFAULT_ORDERS = sorted_unique(
    np.concatenate(
        [1.0 + np.arange(1, 10) / 100.0, DP_ACCOUNTING_ORDERS, np.round(np.geomspace(64, 10_000, 60), 1)]
    )
)
