"""Engine tests for ``langevin`` (docs/math.md §5): the table at the setting of Chourasia, Ye & Shokri's talk
(NeurIPS 2021, arXiv 2102.05855), brute force, properties."""

from __future__ import annotations

import math
import warnings

import mpmath
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dpcalc.engine.hidden_state import langevin as lg
from dpcalc.errors import InputError

# the setting of Chourasia, Ye & Shokri's talk (NeurIPS 2021, arXiv 2102.05855): α=30, σ=0.02, S_g=4, η=0.02,
# λ=1, n=5000
SEED = dict(sigma=0.02, sensitivity=4.0, lr=0.02, dataset_size=5000)
ALPHA = 30.0
# docs/math.md §5 table: K, dynamics UB, lower bound, exact (squared loss), composition
TABLE_5 = [
    (1, 4.776080e-04, 2.376159e-04, 2.400000e-04, 2.400000e-04),
    (10, 4.567804e-03, 2.175231e-03, 2.391952e-03, 2.400000e-03),
    (100, 3.034179e-02, 1.037598e-02, 1.819584e-02, 2.400000e-02),
    (159, 3.821157e-02, 1.150097e-02, 2.192059e-02, 3.816000e-02),
    (500, 4.767658e-02, 1.199946e-02, 2.375805e-02, 1.200000e-01),
    (1000, 4.799782e-02, 1.200000e-02, 2.376000e-02, 2.400000e-01),
]


def _rel(a, b):
    return abs(a - b) / abs(b)


@pytest.mark.parametrize("k,dyn,low,exact,comp", TABLE_5)
def test_formulas_table_5(k, dyn, low, exact, comp):
    assert _rel(float(lg.rdp(ALPHA, lg.coef_dynamics(strong_convexity=1.0, steps=k, **SEED))), dyn) < 1e-6
    assert _rel(ALPHA * float(lg.coef_lower(steps=k, **SEED)), low) < 1e-6
    assert _rel(ALPHA * float(lg.coef_exact_squared(steps=k, **SEED)), exact) < 1e-6
    assert _rel(float(lg.rdp(ALPHA, lg.coef_composition(steps=k, **SEED))), comp) < 1e-6


def test_paper_setting_asymptotes_and_crossing():
    big = 10**9
    assert float(lg.rdp(ALPHA, lg.coef_dynamics(strong_convexity=1.0, steps=big, **SEED))) == pytest.approx(
        0.048, rel=1e-12
    )
    assert ALPHA * float(lg.coef_lower(steps=big, **SEED)) == pytest.approx(0.012, rel=1e-12)
    assert float(lg.rdp(ALPHA, lg.coef_composition(steps=1, **SEED))) == pytest.approx(2.4e-4, rel=1e-12)
    k_star = float(lg.crossing_steps(0.02, 1.0))
    assert k_star == pytest.approx(159.36, abs=0.005)
    # composition is the smaller bound before K*, the dynamics bound after it
    for k, comp_better in [(159, True), (160, False)]:
        dyn = float(lg.coef_dynamics(strong_convexity=1.0, steps=k, **SEED))
        comp = float(lg.coef_composition(steps=k, **SEED))
        assert (comp < dyn) is comp_better


def test_crossing_constant_against_mpmath():
    mpmath.mp.dps = 30
    u = mpmath.findroot(lambda u: u - 2 * (1 - mpmath.exp(-u)), 1.6)
    assert lg.CROSSING_U == pytest.approx(float(u), rel=1e-14)


@settings(max_examples=50, deadline=None)
@given(st.floats(1e-3, 1.0), st.floats(1e-3, 10.0), st.integers(1, 10**6))
def test_crossing_is_where_the_bounds_meet(lr, lam, _):
    k = float(lg.crossing_steps(lr, lam))
    # at K*, (1 − e^{−ληK/2})/λ = Kη/4 (continuous K)
    assert -math.expm1(-lam * lr * k / 2) / lam == pytest.approx(k * lr / 4, rel=1e-12)


@settings(max_examples=60, deadline=None)
@given(st.floats(1e-4, 1.0), st.floats(1e-3, 1.0), st.integers(0, 10**8), st.integers(1, 10**6))
def test_dynamics_increases_in_K_and_saturates(lr, lam, k, n):
    args = dict(sigma=0.5, sensitivity=2.0, lr=lr, strong_convexity=lam, dataset_size=n)
    a = float(lg.coef_dynamics(steps=k, **args))
    b = float(lg.coef_dynamics(steps=k + 1, **args))
    c = float(lg.coef_dynamics(steps=10 * k + 10, **args))
    limit = (2.0 / (0.5 * n)) ** 2 / lam
    assert a <= b <= c
    assert c <= limit * (1 + 1e-12)
    assert (
        float(lg.coef_dynamics(steps=10**12, **args)) == pytest.approx(limit, rel=1e-9)
        or lam * lr * 1e12 < 80
    )


def _exact_squared_brute(sigma, sens, lr, n, k):
    """θ_{k+1} = (1−η)θ_k + (η/n)Σx_i + N(0, 2ησ²): the two runs' means differ by Σ_j (1−η)^j (η/n)S_g."""
    mean, var = 0.0, 0.0
    for _ in range(k):
        mean = (1 - lr) * mean + lr / n * sens
        var = (1 - lr) ** 2 * var + 2 * lr * sigma**2
    return mean**2 / (2 * var)  # D_α = α·(Δm)²/(2s²)


@settings(max_examples=40, deadline=None)
@given(st.floats(1e-3, 1.0), st.integers(1, 2000), st.floats(0.05, 5.0), st.integers(1, 10**4))
def test_lower_le_exact_le_dynamics_squared_loss(lr, k, sigma, n):
    """For ℓ = ‖θ−x‖²/2 (λ = β = 1, η ≤ 1): lower ≤ exact (brute force) ≤ dynamics upper bound."""
    args = dict(sigma=sigma, sensitivity=3.0, lr=lr, dataset_size=n, steps=k)
    exact = _exact_squared_brute(sigma, 3.0, lr, n, k)
    assert float(lg.coef_exact_squared(**args)) == pytest.approx(exact, rel=1e-9)
    assert float(lg.coef_lower(**args)) <= exact * (1 + 1e-12)
    assert exact <= float(lg.coef_dynamics(strong_convexity=1.0, **args))


def test_eps_linear_curve_mironov_closed_form():
    # docs/math.md §1.1: ε = c + 2√(c log(1/δ)) for a linear curve, at α = 1 + √(log(1/δ)/c)
    for c, delta in [(0.048 / 30, 1e-5), (1e-6, 1e-8), (0.3, 1e-3)]:
        want = c + 2 * math.sqrt(c * math.log(1 / delta))
        got, a = lg.eps_linear_curve(delta, c, conversion="mironov")
        assert float(got) == pytest.approx(want, rel=1e-9)
        assert float(a) == pytest.approx(1 + math.sqrt(math.log(1 / delta) / c), rel=1e-3)


def test_eps_linear_curve_beats_the_grid_of_the_conversion_engine():
    from dpcalc.engine.conversion import methods as conversions
    from dpcalc.engine.orders import DEFAULT_ORDERS

    for c in [1e-5, 0.048 / 30, 0.1]:
        for method in ("asoodeh", "balle"):
            grid = conversions.eps_from_curve(DEFAULT_ORDERS, c * DEFAULT_ORDERS, 1e-5, method=method).value
            got, _ = lg.eps_linear_curve(1e-5, c, conversion=method)
            assert float(got) <= float(grid)
            assert float(got) >= float(grid) * (1 - 2e-3)


@pytest.mark.parametrize("c,delta", [(1e-3, 1e-5), (0.5, 1e-6), (2.0, 0.01), (1e-7, 1e-5)])
def test_composition_eps_is_the_exact_gaussian(c, delta):
    """α·c at every order from K Gaussian steps = one Gaussian with r = √(2c) (dp_accounting's analytic ε)."""
    from dp_accounting import get_epsilon_gaussian

    want = get_epsilon_gaussian(1.0 / math.sqrt(2 * c), delta, tol=1e-14)
    got = float(lg.eps_gaussian_coef(delta, c))
    assert got >= want * (1 - 1e-9)
    assert got == pytest.approx(want, rel=1e-6)
    low = float(lg.eps_gaussian_coef_lower(delta, c))
    assert low <= got
    assert low == pytest.approx(want, rel=1e-6)


def test_lower_eps_never_exceeds_the_upper_conversions():
    for k in (1, 100, 10**6):
        cl = lg.coef_lower(steps=k, **SEED)
        cd = lg.coef_dynamics(strong_convexity=1.0, steps=k, **SEED)
        low = float(lg.eps_gaussian_coef_lower(1e-5, cl))
        up, _ = lg.eps_linear_curve(1e-5, cd)
        assert low <= float(up)


@pytest.mark.parametrize(
    "kwargs,option",
    [
        (dict(lr=0.5, strong_convexity=1.0, smoothness=4.0, dataset_size=10), "--lr"),
        (dict(lr=0.1, strong_convexity=2.0, smoothness=1.0, dataset_size=10), "--strong-convexity"),
        (dict(lr=0.1, strong_convexity=0.0, smoothness=1.0, dataset_size=10), "--strong-convexity"),
        (dict(lr=0.1, strong_convexity=1.0, smoothness=1.0, dataset_size=0), "--dataset-size"),
        (dict(lr=0.1, strong_convexity=1.0, smoothness=1.0, dataset_size=2.5), "--dataset-size"),
        (dict(lr=-1.0, strong_convexity=1.0, smoothness=1.0, dataset_size=3), "--lr"),
    ],
)
def test_conditions_name_the_violated_one(kwargs, option):
    with pytest.raises(InputError, match=option):
        lg.check_conditions(**kwargs)


def test_conditions_pass_on_the_boundary():
    lg.check_conditions(lr=0.5, strong_convexity=2.0, smoothness=2.0, dataset_size=1)  # η = 1/β, λ = β


@pytest.mark.parametrize("sigma", [1e-12, 1e12])
@pytest.mark.parametrize("steps", [1, 10**9])
def test_no_nan_for_extreme_inputs(sigma, steps):
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        args = dict(sigma=sigma, sensitivity=4.0, lr=0.02, dataset_size=5000, steps=steps)
        cs = [
            lg.coef_dynamics(strong_convexity=1.0, **args),
            lg.coef_lower(**args),
            lg.coef_composition(**args),
            lg.coef_exact_squared(**args),
        ]
        vals = [*cs, lg.rdp(30.0, cs[0])]
        vals += list(lg.eps_linear_curve(1e-5, cs[0]))[:1]
        vals += [lg.eps_gaussian_coef(1e-5, cs[2]), lg.eps_gaussian_coef_lower(1e-5, cs[1])]
    for v in vals:
        assert not np.any(np.isnan(v))
        assert np.all(np.asarray(v) >= 0)


def test_vectorised():
    k = np.array([1, 10, 100, 159, 500, 1000])
    c = lg.coef_dynamics(
        sigma=0.02, sensitivity=4.0, lr=0.02, strong_convexity=1.0, dataset_size=5000, steps=k
    )
    eps, a = lg.eps_linear_curve(np.array([[1e-5], [1e-6]]), c)
    assert eps.shape == (2, 6) and a.shape == (2, 6)
    assert np.all(np.diff(eps, axis=1) > 0)


@settings(max_examples=40, deadline=None)
@given(st.floats(1e-5, 2.0), st.floats(0.0, 20.0))
def test_delta_linear_curve_mironov_closed_form(c, eps):
    """min over α > 1 of exp((α−1)(αc − ε)) is at α = max(1, (ε + c)/(2c)) (clipped at 1)."""
    a = max(1.0, (eps + c) / (2 * c))
    want = min(1.0, math.exp((a - 1) * (a * c - eps)))
    got, _ = lg.delta_linear_curve(eps, c, conversion="mironov")
    assert float(got) >= want * (1 - 1e-12)
    assert float(got) == pytest.approx(want, rel=1e-9, abs=1e-300)


def test_dynamics_coefficient_never_zero_from_underflow():
    # issue 27: an infinite base times (1 − e^{−ληK/2}) rounding to 0 gave NaN, printed as ε = 0
    from dpcalc.engine.hidden_state import langevin as lv

    c = lv.coef_dynamics(1e-300, 1e300, 1e-300, 1e-300, 1e15, 1e15)
    assert c == np.inf
    # λη underflows but ηK/2 does not: c = base·ηK/2 (the x → 0 limit), not 0
    c = lv.coef_dynamics(1.0, 1.0, 1e-300, 1e-300, 1, 1e15)
    assert c >= 1e-300 * 1e15 / 2 and c <= 1e-300 * 1e15 / 2 * (1 + 1e-12)
    assert lv.coef_dynamics(1e-300, 1e300, 0.02, 1.0, 10, 0) < 1e-300  # no step, no loss (a few ulps up)
    # ordinary inputs: the closed form (1 − e^{−ληK/2})/λ · S²/(σn)², rounded up
    for lam, lr, k in [(1.0, 0.02, 100), (0.5, 0.1, 3), (1e-3, 0.5, 1e6)]:
        ref = 16.0 / (0.02 * 5000) ** 2 / lam * -math.expm1(-lam * lr * k / 2)
        got = lv.coef_dynamics(0.02, 4.0, lr, lam, 5000, k)
        assert ref <= got <= ref * (1 + 1e-13)
    assert lv.coef_composition(1e-300, 1e300, 0.02, 10, 0) < 1e-300
    assert lv.coef_lower(1e-300, 1e300, 0.02, 10, 0) == 0.0
