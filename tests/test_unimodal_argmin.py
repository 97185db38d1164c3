"""The grid search for the minimum of a unimodal function (used to choose Chernoff tilts in the PLD
accountant): the same index as a full scan, with fewer evaluations."""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from dpcalc.engine._numerics import gauss_legendre, sorted_unique, unimodal_argmin


def _counting(f):
    calls = []

    def g(x):
        calls.append(np.size(x))
        return f(x)

    return g, calls


@given(
    st.integers(min_value=1, max_value=200),
    st.floats(min_value=-3, max_value=3),
    st.floats(min_value=0.01, max_value=10),
    st.integers(min_value=1, max_value=8),
)
def test_same_minimum_as_a_full_scan(n, centre, curvature, stride):
    x = np.linspace(-5, 5, n)

    def f(t):
        return curvature * (t - centre) ** 2 + np.abs(t - centre)  # convex

    i, v = unimodal_argmin(f, x, stride)
    full = f(x)
    assert v == full.min()
    assert full[i] == full.min()


@given(st.integers(min_value=20, max_value=300), st.floats(min_value=0.5, max_value=20))
def test_quasi_convex_with_infinite_ends(n, centre):
    """Values outside a window are inf (a cumulant that diverges): still the grid minimum."""
    x = np.geomspace(1e-3, 1e3, n)
    lo, hi = centre / 4, centre * 4

    def f(t):
        with np.errstate(divide="ignore"):
            v = np.log(t / centre) ** 2 - 1.0 / (1.0 + t)  # unimodal in log t
        return np.where((t > lo) & (t < hi), v, np.inf)

    full = f(x)
    i, v = unimodal_argmin(f, x)
    if np.isfinite(full).any():
        assert v == full.min() and full[i] == full.min()
    else:
        assert v == np.inf


def test_fewer_evaluations_than_a_full_scan():
    x = np.geomspace(1e-4, 3e3, 49)
    g, calls = _counting(lambda t: (np.log(t) - 1.0) ** 2)
    i, _ = unimodal_argmin(g, x)
    assert i == int(np.argmin((np.log(x) - 1.0) ** 2))
    assert sum(calls) <= 49 // 4 + 2 + 9  # coarse pass, then between the coarse neighbours


@pytest.mark.parametrize("n", [0, 1, 2, 7, 200])
def test_sorted_unique_is_np_unique(n):
    """sorted_unique (np.unique without its numpy.ma import) on random draws with many repeats."""
    x = np.random.default_rng(n).integers(0, max(n // 3, 1), size=n).astype(float) / 4.0
    assert np.array_equal(sorted_unique(x.reshape(-1, 1) if n else x), np.unique(x))


@pytest.mark.parametrize("n", [4, 8, 5])
def test_gauss_legendre_is_numpys_rule_to_the_bit(n):
    """The engine's stored rules are leggauss's doubles exactly (other n: computed by numpy)."""
    x, w = gauss_legendre(n)
    ref_x, ref_w = np.polynomial.legendre.leggauss(n)
    assert np.array_equal(x, ref_x) and np.array_equal(w, ref_w)
    assert not x.flags.writeable and not w.flags.writeable
