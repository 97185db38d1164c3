"""Engine tests for ``iterate`` (docs/math.md §4): reference vectors, mpmath quadrature, properties."""

from __future__ import annotations

import math
import warnings

import mpmath
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dpcalc.engine.hidden_state import iteration as it
from dpcalc.errors import DpcalcWarning, InputError

# docs/math.md §4.3 test-vector table (diam(K) = 1): η, L, σ, T and the reported columns
TABLE_43 = [
    # eta, L, sigma, T, theta_1(2L/s), theta_1((1+2eta L)/(eta s)), delta(eps=1), eps ADC, FMTT+Mironov, FMTT+Asoodeh
    (0.05, 1.0, 5.0, 100, 1.299898e-03, 9.550603e-01, 2.892540e-04, 1.384608, 3.779260, 2.530711),
    (0.1, 1.0, 3.0, 100, 3.094575e-02, 9.267113e-01, 4.222444e-03, 2.320101, 6.910020, 4.876094),
]


def _rel(a, b):
    return abs(a - b) / abs(b)


@pytest.mark.parametrize("eta,lip,sigma,steps,th1,th2,d1,e_adc,e_mir,e_aso", TABLE_43)
def test_formulas_table_43(eta, lip, sigma, steps, th1, th2, d1, e_adc, e_mir, e_aso):
    r1 = 2 * lip / sigma
    r2 = (1 + 2 * eta * lip) / (eta * sigma)
    assert _rel(math.exp(it.log_theta(1.0, r1)), th1) < 1e-6
    assert _rel(-math.expm1(it.log_one_minus_theta(1.0, r2)), th2) < 1e-6
    assert _rel(float(it.delta_asoodeh(1.0, sigma, lip, eta, steps)), d1) < 1e-6
    assert _rel(float(it.eps_asoodeh(1e-5, sigma, lip, eta, steps)), e_adc) < 1e-6
    eps_m, a_m = it.eps_feldman(1e-5, sigma, lip, steps, conversion="mironov")
    eps_a, a_a = it.eps_feldman(1e-5, sigma, lip, steps, conversion="asoodeh")
    assert _rel(float(eps_m), e_mir) < 1e-6
    assert _rel(float(eps_a), e_aso) < 1e-6
    # "the optimum is at α* in both rows"
    assert float(a_m) == pytest.approx(float(it.alpha_star(sigma, lip)), rel=1e-12)
    assert float(a_a) == pytest.approx(float(it.alpha_star(sigma, lip)), rel=1e-12)


def test_alpha_star_vectors_and_definition():
    assert float(it.alpha_star(5.0, 1.0)) == pytest.approx(4.070714214, rel=1e-9)
    assert float(it.alpha_star(3.0, 1.0)) == pytest.approx(2.679449472, rel=1e-9)


@settings(max_examples=60, deadline=None)
@given(st.floats(1e-3, 1e3), st.floats(1e-3, 1e3))
def test_alpha_star_is_the_largest_order_of_the_condition(sigma, lip):
    a = float(it.alpha_star(sigma, lip))
    assert a > 1
    # σ² ≥ 2α(α−1)L² holds at α* (rounded down) and fails just above it
    assert sigma**2 >= 2 * a * (a - 1) * lip**2 * (1 - 1e-12)
    b = a * (1 + 1e-9) + 1e-12
    assert sigma**2 < 2 * b * (b - 1) * lip**2


def _theta_quadrature(eps, r):
    """E_{e^ε}(N(0,1) ‖ N(r,1)) by mpmath quadrature of (p − e^ε q)_+ (independent of the closed form)."""
    mpmath.mp.dps = 40
    eps, r = mpmath.mpf(eps), mpmath.mpf(r)
    # p > e^ε q  <=>  x < r/2 − ε/r
    x0 = r / 2 - eps / r
    p = lambda x: mpmath.npdf(x, 0, 1)  # noqa: E731
    q = lambda x: mpmath.npdf(x, r, 1)  # noqa: E731
    val = mpmath.quad(lambda x: p(x) - mpmath.exp(eps) * q(x), [-mpmath.inf, x0 - 10, x0])
    return float(val)


@pytest.mark.parametrize("eps,r", [(1.0, 0.4), (1.0, 1.0), (1.0, 4.4), (0.5, 2.0), (3.0, 0.7), (0.1, 0.05)])
def test_theta_is_the_gaussian_hockey_stick_divergence(eps, r):
    assert _rel(math.exp(it.log_theta(eps, r)), _theta_quadrature(eps, r)) < 1e-9


def test_theta_matches_gaussian_mechanism_vectors():
    # docs/math.md §2.6, confirmed there against dp_accounting's PLD Gaussian
    for r, want in [(1.0, 0.12693673750664392), (4.4, 0.9550603191374223), (0.4, 0.0012998981331268152)]:
        assert _rel(math.exp(it.log_theta(1.0, r)), want) < 1e-9


@pytest.mark.parametrize("delta,r", [(1e-5, 0.5), (1e-5, 1.0), (1e-3, 3.0), (1e-8, 0.2), (0.1, 8.0)])
def test_theta_equals_exact_gaussian_delta_dp_accounting(delta, r):
    """θ_ε(r) is the Gaussian mechanism's exact δ(ε): at dp_accounting's analytic ε(δ) it gives back δ."""
    from dp_accounting import get_epsilon_gaussian

    eps = get_epsilon_gaussian(1.0 / r, delta, tol=1e-14)
    assert _rel(math.exp(it.log_theta(eps, r)), delta) < 1e-6


def test_one_minus_theta_direct_against_mpmath():
    mpmath.mp.dps = 450  # 1 − θ is computed as a plain difference here: enough digits for e^-800
    for eps, r in [(1.0, 4.4), (1.0, 22.0), (0.2, 80.0), (5.0, 40.0)]:
        e, rr = mpmath.mpf(eps), mpmath.mpf(r)
        theta = mpmath.ncdf(rr / 2 - e / rr) - mpmath.exp(e) * mpmath.ncdf(-rr / 2 - e / rr)
        want = float(mpmath.log(1 - theta))
        got = float(it.log_one_minus_theta(eps, r))
        assert got <= want  # rounded down
        assert abs(got - want) <= 1e-12 * max(1.0, abs(want))


@settings(max_examples=40, deadline=None)
@given(
    st.floats(0.05, 10.0),
    st.floats(0.1, 10.0),
    st.floats(1e-3, 1.0),
    st.integers(1, 10**6),
    st.floats(0.1, 5.0),
)
def test_contraction_bound_decreases_in_T(eps, sigma, lr, steps, diam):
    d1 = float(it.delta_asoodeh(eps, sigma, 1.0, lr, steps, diam))
    d2 = float(it.delta_asoodeh(eps, sigma, 1.0, lr, steps + 1, diam))
    d3 = float(it.delta_asoodeh(eps, sigma, 1.0, lr, 10 * steps, diam))
    assert d2 <= d1
    assert d3 <= d2
    e1 = float(it.eps_asoodeh(1e-5, sigma, 1.0, lr, steps, diam))
    e2 = float(it.eps_asoodeh(1e-5, sigma, 1.0, lr, 10 * steps, diam))
    assert e2 <= e1


@settings(max_examples=40, deadline=None)
@given(st.floats(1e-8, 0.5), st.floats(0.3, 20.0), st.floats(1e-3, 1.0), st.integers(1, 10**5))
def test_eps_asoodeh_inverts_delta(delta, sigma, lr, steps):
    e = float(it.eps_asoodeh(delta, sigma, 1.0, lr, steps))
    assert math.isfinite(e)
    assert float(it.delta_asoodeh(e, sigma, 1.0, lr, steps)) <= delta * (1 + 1e-12)
    if e > 1e-9:
        assert float(it.log_delta_asoodeh(e * (1 - 1e-6), sigma, 1.0, lr, steps)) > math.log(delta)


def test_vacuous_delta_is_clipped_to_one():
    # tiny noise: θ ≈ 1 everywhere, the corollary's δ exceeds 1
    d = float(it.delta_asoodeh(0.1, 0.01, 1.0, 0.1, 2))
    assert d == 1.0
    assert float(it.log_delta_asoodeh(0.1, 0.01, 1.0, 0.1, 2)) > 0


def test_feldman_rdp_formula_and_alpha_star_cut():
    # T ≥ 37: the 4αL² ln T/(Tσ²) of Feldman et al.'s bound as stated in Asoodeh's talk "Privacy Analysis of
    # Iterative Algorithms via f-divergences", rounded up by a few ulps
    z = float(it.rdp_feldman(2.0, 5.0, 1.0, 100))
    want = 4 * 2.0 * math.log(100) / (100 * 25.0)
    assert want <= z <= want * (1 + 1e-14)
    assert math.isinf(float(it.rdp_feldman(4.08, 5.0, 1.0, 100)))  # α > α* = 4.0707: no bound
    zh = float(it.rdp_feldman(2.0, 5.0, 1.0, 100, log_form="harmonic"))
    assert zh == pytest.approx(4 * 2.0 * (1 + math.log(100)) / (100 * 25.0), rel=1e-14)


def test_feldman_T1_is_not_zero_and_warns():
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        z = float(it.rdp_feldman(2.0, 5.0, 1.0, 1))
    assert any(issubclass(w.category, DpcalcWarning) for w in caught)
    # one step releases one Gaussian step of the record: exactly 2αL²/σ² ≤ the bound
    assert z >= 2 * 2.0 / 25.0
    assert z == pytest.approx(2 * (math.e - 1) * 2.0 / 25.0, rel=1e-13)


def _mixture_bound(alpha, sigma, lip, steps):
    """The derivation of docs/math.md §4.2 before its last two inequalities (brute force over k ≤ T)."""
    mpmath.mp.dps = 30
    s = mpmath.fsum(
        mpmath.expm1(2 * alpha * (alpha - 1) * lip**2 / (sigma**2 * k)) for k in range(1, steps + 1)
    )
    return float(mpmath.log1p(s / steps) / (alpha - 1))


@settings(max_examples=40, deadline=None)
@given(st.floats(0.5, 20.0), st.integers(1, 400), st.floats(0.01, 1.0))
def test_feldman_dominates_the_mixture_derivation(sigma, steps, frac):
    """Both log forms bound the stopping-time mixture for every α ≤ α* and every T (incl. T < 37)."""
    a_star = float(it.alpha_star(sigma, 1.0))
    alpha = 1 + frac * (a_star - 1)
    ref = _mixture_bound(alpha, sigma, 1.0, steps)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DpcalcWarning)
        for form in it.LOG_FORMS:
            assert float(it.rdp_feldman(alpha, sigma, 1.0, steps, log_form=form)) >= ref


@settings(max_examples=40, deadline=None)
@given(st.integers(1, 10**9))
def test_feldman_rdp_decreases_in_T(steps):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DpcalcWarning)
        for form in it.LOG_FORMS:
            a = float(it.rdp_feldman(1.5, 3.0, 1.0, steps, log_form=form))
            b = float(it.rdp_feldman(1.5, 3.0, 1.0, steps + 1, log_form=form))
            assert b <= a


@settings(max_examples=40, deadline=None)
@given(st.floats(0.5, 50.0), st.integers(37, 10**7), st.floats(1e-10, 1e-2))
def test_feldman_mironov_matches_the_closed_form(sigma, steps, delta):
    """ε(α) = αc + log(1/δ)/(α−1) is convex: the constrained optimum is at min(1 + √(log(1/δ)/c), α*)."""
    c = 4 * math.log(steps) / (steps * sigma**2)
    a = min(1 + math.sqrt(math.log(1 / delta) / c), float(it.alpha_star(sigma, 1.0)))
    want = a * c + math.log(1 / delta) / (a - 1)
    got, _ = it.eps_feldman(delta, sigma, 1.0, steps, conversion="mironov")
    assert float(got) >= want * (1 - 1e-12)
    assert float(got) == pytest.approx(want, rel=1e-9)


def test_feldman_delta_direction_consistent_with_eps():
    e, _ = it.eps_feldman(1e-5, 5.0, 1.0, 100, conversion="asoodeh")
    d, _ = it.delta_feldman(float(e), 5.0, 1.0, 100, conversion="asoodeh")
    assert float(d) <= 1e-5 * (1 + 1e-9)
    d2, _ = it.delta_feldman(float(e) * 0.99, 5.0, 1.0, 100, conversion="asoodeh")
    assert float(d2) > 1e-5


def test_contractive_iteration_is_the_even_shift_sum():
    # shift-reduction: D_α ≤ Σ_t α a_t²/(2σ²) with a_t = d/T
    alpha, d, sigma, steps = 3.0, 2.5, 1.7, 13
    ref = sum(alpha * (d / steps) ** 2 / (2 * sigma**2) for _ in range(steps))
    assert float(it.rdp_contractive_iteration(alpha, d, sigma, steps)) == pytest.approx(ref, rel=1e-13)


def test_composition_baseline_is_one_gaussian_step():
    assert float(it.rdp_composition(2.0, 4.0, 1.0)) == pytest.approx(2 * 2.0 * 1 / 16.0, rel=1e-14)
    assert _rel(float(it.delta_composition(1.0, 5.0, 1.0)), 1.299898e-03) < 1e-6
    e = float(it.eps_composition(1e-5, 5.0, 1.0))
    assert float(it.delta_composition(e, 5.0, 1.0)) <= 1e-5 * (1 + 1e-12)


EXTREMES = [
    (1e-9, 1.0, 1e-3, 1),
    (1e-9, 1.0, 1.0, 10**9),
    (1e9, 1.0, 1e-3, 1),
    (1e9, 1.0, 1.0, 10**9),
    (1.0, 1e-9, 1e-6, 10**9),
    (1.0, 1e6, 10.0, 2),
]


@pytest.mark.parametrize("sigma,lip,lr,steps", EXTREMES)
def test_no_nan_for_extreme_inputs(sigma, lip, lr, steps):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DpcalcWarning)
        warnings.simplefilter("error", RuntimeWarning)
        vals = [
            it.delta_asoodeh(1.0, sigma, lip, lr, steps),
            it.eps_asoodeh(1e-6, sigma, lip, lr, steps),
            it.rdp_feldman(1.0 + 1e-9, sigma, lip, steps),
            *it.eps_feldman(1e-6, sigma, lip, steps, conversion="asoodeh"),
            *it.delta_feldman(1.0, sigma, lip, steps, conversion="mironov"),
            it.eps_composition(1e-6, sigma, lip),
            it.delta_composition(1.0, sigma, lip),
            it.rdp_composition(2.0, sigma, lip),
        ]
    for v in vals:
        assert not np.any(np.isnan(v))
    d = float(vals[0])
    assert 0.0 <= d <= 1.0


def test_vectorised_over_rows():
    sig = np.array([3.0, 5.0])
    e = it.eps_asoodeh(1e-5, sig[:, None], 1.0, np.array([0.1, 0.05])[:, None], np.array([10, 100, 1000]))
    assert e.shape == (2, 3)
    assert e[1, 1] == pytest.approx(1.384608, rel=1e-6)
    eps, a = it.eps_feldman(np.array([1e-5, 1e-6]), np.array([[5.0], [3.0]]), 1.0, 100, conversion="asoodeh")
    assert eps.shape == (2, 2) and a.shape == (2, 2)
    assert eps[0, 0] == pytest.approx(2.530711, rel=1e-6)
    assert eps[1, 0] == pytest.approx(4.876094, rel=1e-6)


@pytest.mark.parametrize(
    "call,name",
    [
        (lambda: it.eps_asoodeh(1.5, 1.0, 1.0, 0.1, 10), "--delta"),
        (lambda: it.delta_asoodeh(1.0, 0.0, 1.0, 0.1, 10), "--sigma"),
        (lambda: it.delta_asoodeh(1.0, 1.0, 1.0, 0.1, 0), "--steps"),
        (lambda: it.delta_asoodeh(1.0, 1.0, 1.0, 0.1, 10, diameter=-1), "--diameter"),
        (lambda: it.rdp_feldman(1.0, 1.0, 1.0, 10), "--alpha"),
        (lambda: it.rdp_feldman(2.0, 1.0, -1.0, 10), "--lipschitz"),
        (lambda: it.eps_feldman(1e-5, 1.0, 1.0, 10, conversion="nope"), "--conversion"),
        (lambda: it.feldman_log_factor(10, "nope"), "--feldman-log"),
    ],
)
def test_bad_inputs_name_the_option(call, name):
    with pytest.raises(InputError, match=name):
        call()
