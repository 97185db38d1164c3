"""The sgd-epsilon columns are built from arrays in one pass each: whole numbers as Python ints (None where a
row has none), floats as Python floats — the values the per-row conversions gave."""

from __future__ import annotations

import math

import numpy as np

from dpcalc.commands.sgd.columns import _numbers, _whole


def test_whole_numbers_are_the_ints_of_each_value():
    x = np.array([100.0, np.nan, 3e6, 0.0, 2.0**53 - 1, 7.9])
    got = _whole(x)
    assert got == [100, None, 3_000_000, 0, 2**53 - 1, 7]
    assert all(type(v) is int for v in got if v is not None)


def test_whole_numbers_beyond_int64_keep_int_semantics():
    x = np.array([1e30, np.nan, 5.0])
    assert _whole(x) == [int(1e30), None, 5]


def test_numbers_are_floats_with_none_where_missing():
    x = np.array([[0.5, np.nan], [math.inf, -0.0]])
    got = _numbers(x)
    assert got[0] == 0.5 and got[1] is None and got[2] == math.inf
    assert math.copysign(1.0, got[3]) == -1.0
    assert all(type(v) is float for v in got if v is not None)
