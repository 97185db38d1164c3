"""The exact Gaussian mechanism (Balle & Wang 2018, Thm 8; docs/math.md §2.6) against its vectors, mpmath and peers."""

import math

import mpmath
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dpcalc.engine.mechanisms.gaussian_exact import (
    delta_gaussian,
    eps_gaussian,
    log_delta_gaussian,
    log_one_minus_delta_gaussian,
    sigma_gaussian,
)
from dpcalc.errors import InputError

mpmath.mp.dps = 60


def _mp_delta(eps, r):
    eps, r = mpmath.mpf(eps), mpmath.mpf(r)
    return mpmath.ncdf(r / 2 - eps / r) - mpmath.exp(eps) * mpmath.ncdf(-r / 2 - eps / r)


@pytest.mark.parametrize(
    ("r", "expected"), [(1.0, 0.12693673750664392), (4.4, 0.9550603191374223), (0.4, 0.0012998981331268152)]
)
def test_formulas_vectors(r, expected):
    d = delta_gaussian(1.0, r)
    assert d >= expected * (1 - 1e-11)
    assert d == pytest.approx(expected, rel=1e-11)


def test_edge_cases():
    assert log_delta_gaussian(1.0, 0.0) == -np.inf
    assert log_delta_gaussian(np.inf, 1.0) == -np.inf
    assert log_delta_gaussian(1.0, np.inf) == 0.0
    # ε = 0: the total variation distance 2Φ(r/2) − 1
    assert delta_gaussian(0.0, 1.3) == pytest.approx(float(2 * mpmath.ncdf(0.65) - 1), rel=1e-14)
    assert eps_gaussian(0.5, 0.1) == 0.0  # δ(0) = 2Φ(0.05) − 1 ≈ 0.04 < 0.5
    assert eps_gaussian(1e-5, 0.0) == 0.0
    assert eps_gaussian(1e-5, np.inf) == np.inf
    with pytest.raises(InputError):
        eps_gaussian(0.0, 1.0)
    with pytest.raises(InputError):
        eps_gaussian(1e-5, -1.0)


@settings(max_examples=60, deadline=None)
@given(eps=st.floats(0.0, 60.0), log_r=st.floats(-4.0, 1.5))
def test_delta_is_an_upper_bound_close_to_mpmath(eps, log_r):
    r = 10.0**log_r
    exact = _mp_delta(eps, r)
    got = mpmath.mpf(float(delta_gaussian(eps, r)))
    assert got >= exact
    if exact > mpmath.mpf("1e-250"):
        # the deliberate safe-side margin (rounding of log_ndtr amplified by the cancellation of the
        # two terms, up to ~ε/r² ≈ 1e3 here) stays below 1e-8 relative
        assert got <= exact * (1 + mpmath.mpf("1e-8"))


@settings(max_examples=40, deadline=None)
@given(eps=st.floats(0.0, 30.0), log_r=st.floats(-2.0, 1.5))
def test_log_one_minus_delta_matches_mpmath(eps, log_r):
    r = 10.0**log_r
    with mpmath.workdps(400):  # 1 − δ by subtraction needs the extra digits where δ is close to 1
        exact = mpmath.log(1 - _mp_delta(eps, r))
    got = float(log_one_minus_delta_gaussian(eps, r))
    assert got == pytest.approx(float(exact), rel=1e-10, abs=1e-300)


@settings(max_examples=40, deadline=None)
@given(log_delta=st.floats(-30.0, -1.0), log_r=st.floats(-3.0, 1.3))
def test_eps_inversion_is_safe_and_tight(log_delta, log_r):
    delta, r = 10.0**log_delta, 10.0**log_r
    e = float(eps_gaussian(delta, r))
    if e == 0.0:
        assert _mp_delta(0.0, r) <= delta
        return
    assert _mp_delta(e, r) <= delta  # safe: the reported ε really achieves δ
    assert _mp_delta(e * (1 - 1e-9), r) > delta  # tight to 1e-9 relative


def test_vectorised_shapes():
    e = eps_gaussian(np.array([1e-5, 1e-6])[:, None], np.array([0.5, 1.0, 2.0]))
    assert e.shape == (2, 3)
    assert np.all(np.diff(e, axis=0) > 0) and np.all(np.diff(e, axis=1) > 0)


def test_against_dp_accounting_analytic_gaussian():
    import dp_accounting

    for eps, delta in [(0.1, 1e-5), (1.0, 1e-5), (10.0, 1e-8), (50.0, 1e-12)]:
        s = float(sigma_gaussian(eps, delta))
        assert s == pytest.approx(dp_accounting.get_sigma_gaussian(eps, delta), rel=1e-9)
        assert _mp_delta(eps, 1.0 / s) <= delta  # our σ is large enough
    for sigma, delta in [(0.5, 1e-5), (3.0, 1e-6), (30.0, 1e-10)]:
        e = float(eps_gaussian(delta, 1.0 / sigma))
        assert e == pytest.approx(dp_accounting.get_epsilon_gaussian(sigma, delta), rel=1e-9)


def test_calibration_with_sensitivity_and_both_ways():
    s = sigma_gaussian(np.array([0.5, 2.0, 8.0]), 1e-6, sensitivity=3.0)
    e = eps_gaussian(1e-6, 3.0 / s)
    assert np.all(e <= np.array([0.5, 2.0, 8.0]) * (1 + 1e-12))
    assert np.allclose(e, [0.5, 2.0, 8.0], rtol=1e-9)


def test_classical_calibration_fails_beyond_eps_1():
    """docs/math.md §2.6: σ = sqrt(2 log(1.25/δ))/ε at δ = 1e-5, ε = 10 gives exact δ ≈ 2.27e-5 > 1e-5."""
    sigma = math.sqrt(2 * math.log(1.25 / 1e-5)) / 10.0
    assert float(delta_gaussian(10.0, 1 / sigma)) == pytest.approx(2.27e-5, rel=1e-2)
    assert float(sigma_gaussian(10.0, 1e-5)) > sigma


def test_huge_epsilon_gives_zero_delta_not_nan():
    import warnings

    import numpy as np

    from dpcalc.engine.mechanisms.gaussian_exact import delta_gaussian, log_delta_gaussian

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert np.isneginf(log_delta_gaussian(1e300, 1.0))
        d = delta_gaussian(np.array([1e300, 1e6]), 1.0)
        assert d[0] == 0.0 and 0.0 <= d[1] <= 1e-300  # upper bounds, rounded up at most one ulp
