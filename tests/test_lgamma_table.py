"""The log Γ table at whole numbers (dpcalc.engine._special._lgamma_int): the same values as math.lgamma
whether an entry comes from the grown table or, for a few entries far beyond it, from math.lgamma directly,
and +inf at the poles (whole numbers <= 0)."""

import math

import numpy as np
import pytest

from dpcalc.engine import _special


@pytest.fixture
def fresh_table(monkeypatch):
    monkeypatch.setattr(_special, "_LGAMMA_TABLE", np.array([np.inf]))


def _reference(x):
    return np.array([math.inf if v <= 0 else math.lgamma(v) for v in np.ravel(x)]).reshape(np.shape(x))


def test_sparse_then_dense_requests_agree_with_math_lgamma(fresh_table):
    sparse = np.array([[3.0, 10001.0, 9000.0], [2.0, 5000.0, 0.0]])  # few entries, far beyond the table
    assert np.array_equal(_special._lgamma_int(sparse), _reference(sparse))
    assert _special._LGAMMA_TABLE.size == 1  # answered without growing the table
    dense = np.arange(-2.0, 3000.0)
    assert np.array_equal(_special._lgamma_int(dense), _reference(dense))
    assert _special._LGAMMA_TABLE.size >= 3000  # grown
    mixed = np.array([1.0, 2999.0, 120000.0, 7.0])  # inside the table and far beyond it
    assert np.array_equal(_special._lgamma_int(mixed), _reference(mixed))


def test_beyond_the_table_limit_uses_gammaln(fresh_table):
    x = np.array([float(1 << 17), float(1 << 18)])
    assert np.allclose(_special._lgamma_int(x), _reference(x), rtol=1e-14, atol=0)
