"""The group size of person-level questions (``--group-size K``): its range and its check (pure Python, so that a
question without a group loads none of :mod:`dpcalc.input.group`'s person-level forms)."""

from __future__ import annotations

import math
import operator

from dpcalc.errors import InputError

#: The largest group size answered (the command line's --group-size offers the same range:
#: :data:`dpcalc.commands.choices.GROUP_SIZE_MAX`, checked equal by the tests).
MAX_GROUP_SIZE = 10_000


def check_group_size(k, name: str = "--group-size") -> int:
    """``k`` as an int in ``[1, MAX_GROUP_SIZE]``, else an :class:`InputError` naming ``name``."""
    value = None
    if not isinstance(k, bool):
        try:
            value = operator.index(k)
        except TypeError:
            if isinstance(k, float) and math.isfinite(k) and k.is_integer():
                value = int(k)
    if value is None or not 1 <= value <= MAX_GROUP_SIZE:
        raise InputError(f"{name}: must be a whole number in [1, {MAX_GROUP_SIZE}], got {k!r}")
    return value
