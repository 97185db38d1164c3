"""The batch samplers beyond the classic pairs (docs/math.md §3.5, §3.6): engine values against
independent references (dp_accounting, mpmath quadrature, closed forms)."""

from __future__ import annotations

import math

import mpmath
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dpcalc.engine.dpsgd.accounting import epsilon_rdp
from dpcalc.engine.dpsgd.pld_accounting import sgd_delta_pld, sgd_epsilon_pld
from dpcalc.engine.mechanisms.sgm.replace import rdp_poisson_replace
from dpcalc.engine.mechanisms.sgm_replace_loss import sgm_replace_loss

RO = "replace-one"


def _dpa_replace(q, sigma, steps):
    """dp_accounting's PLD of Poisson-subsampled Gaussian steps under REPLACE_ONE: (pessimistic, optimistic)."""
    from dp_accounting.pld import privacy_loss_distribution as pld

    rel = __import__("dp_accounting").NeighboringRelation.REPLACE_ONE
    out = []
    for pess in (True, False):
        p = pld.from_gaussian_mechanism(
            standard_deviation=sigma,
            sampling_prob=q,
            neighboring_relation=rel,
            pessimistic_estimate=pess,
            value_discretization_interval=1e-4,
        )
        out.append(p.self_compose(steps) if steps > 1 else p)
    return out


def test_issue_value_delta_at_eps_1():
    """The issue's (and dp_accounting's) value: δ(ε = 1) = 0.004734828 for σ = 1, q = 0.2, one step."""
    b = sgd_delta_pld(0.2, 1.0, 1, 1.0, neighbors=RO)
    assert float(b.lower) <= 0.004734828 <= float(b.upper) * (1 + 1e-6)
    assert float(b.upper) - float(b.lower) < 1e-4


@pytest.mark.parametrize("q,sigma,steps", [(0.2, 1.0, 1), (0.01, 1.0, 100), (0.05, 0.8, 50), (1.0, 2.0, 3)])
def test_pld_bracket_contains_dp_accounting(q, sigma, steps):
    pess, opt = _dpa_replace(q, sigma, steps)
    for eps in (0.5, 1.0, 2.0):
        b = sgd_delta_pld(q, sigma, steps, eps, neighbors=RO)
        # dp_accounting's pessimistic value is an upper bound, its optimistic one a lower bound
        assert float(b.lower) <= pess.get_delta_for_epsilon(eps) * (1 + 1e-9)
        assert opt.get_delta_for_epsilon(eps) <= float(b.upper) * (1 + 1e-9)
    d = 1e-5
    e = sgd_epsilon_pld(q, sigma, steps, d, neighbors=RO)
    assert float(e.lower) <= pess.get_epsilon_for_delta(d) + 1e-9
    assert opt.get_epsilon_for_delta(d) <= float(e.upper) + 1e-9


def test_one_step_delta_against_mpmath():
    """δ(ε) = ∫ (p − e^ε q)_+ of the pair (1−q)N(0,σ²)+qN(±1,σ²), by mpmath quadrature."""
    q, sigma, eps = 0.3, 0.9, 0.7
    mpmath.mp.dps = 30
    npdf = lambda x, m: mpmath.npdf(x, m, sigma)  # noqa: E731
    p = lambda x: (1 - q) * npdf(x, 0) + q * npdf(x, 1)  # noqa: E731
    r = lambda x: (1 - q) * npdf(x, 0) + q * npdf(x, -1)  # noqa: E731
    x0 = mpmath.findroot(lambda x: mpmath.log(p(x)) - mpmath.log(r(x)) - eps, 1.0)
    ref = mpmath.quad(lambda x: p(x) - mpmath.e**eps * r(x), [x0, x0 + 2, mpmath.inf])
    b = sgd_delta_pld(q, sigma, 1, eps, neighbors=RO)
    assert float(b.lower) <= float(ref) <= float(b.upper)


def test_loss_model_inverse_and_increments():
    m = sgm_replace_loss(0.05, 0.7).piece
    x = np.linspace(-20, 20, 81)
    assert np.all(np.diff(m.loss(x)) > 0)
    assert np.allclose(m.x_of_loss(m.loss(x)), x, rtol=1e-10, atol=1e-10)
    assert np.allclose(m.dloss(x, 0.01), m.loss(x + 0.01) - m.loss(x), rtol=1e-8, atol=1e-13)
    # far out in the tails the inverse stays finite (no overflow of sinh)
    assert np.all(np.isfinite(m.x_of_loss(np.array([-3000.0, 3000.0]))))


def _renyi_mp(q, sigma, alpha):
    """D_α(P ‖ Q) of the replace-one pair, by mpmath quadrature (integer α)."""
    mpmath.mp.dps = 30
    npdf = lambda x, m: mpmath.npdf(x, m, sigma)  # noqa: E731
    p = lambda x: (1 - q) * npdf(x, 0) + q * npdf(x, 1)  # noqa: E731
    r = lambda x: (1 - q) * npdf(x, 0) + q * npdf(x, -1)  # noqa: E731
    a = mpmath.quad(lambda x: p(x) ** alpha * r(x) ** (1 - alpha), [-mpmath.inf, -1, 0, 1, mpmath.inf])
    return float(mpmath.log(a) / (alpha - 1))


@pytest.mark.parametrize("q,sigma", [(0.1, 1.0), (0.01, 0.8), (0.3, 2.0)])
def test_rdp_bound_is_above_the_true_renyi_divergence(q, sigma):
    alphas = np.array([2.0, 3.0, 5.0, 8.0])
    bound = rdp_poisson_replace(q, sigma, alphas)
    for a, b in zip(alphas, bound):
        assert b >= _renyi_mp(q, sigma, a)


def test_rdp_at_q_one_is_the_gaussian_of_sensitivity_two():
    alphas = np.array([1.5, 2.0, 10.0])
    assert np.allclose(rdp_poisson_replace(1.0, 3.0, alphas), 2 * alphas / 9.0)


@pytest.mark.parametrize("q,sigma,steps", [(0.2, 1.0, 1), (0.01, 1.0, 100), (0.004, 1.1, 1000)])
def test_rdp_never_below_pld_lower_end(q, sigma, steps):
    e = float(epsilon_rdp(q, sigma, steps, 1e-5, neighbors=RO).epsilon)
    assert e >= float(sgd_epsilon_pld(q, sigma, steps, 1e-5, neighbors=RO).lower)
    # and replace-one costs more than add/remove
    assert e >= float(epsilon_rdp(q, sigma, steps, 1e-5).epsilon)


@settings(max_examples=15)
@given(
    q=st.floats(1e-3, 1.0),
    sigma=st.floats(0.5, 20.0),
    factor=st.floats(1.01, 3.0),
)
def test_rdp_replace_monotone_and_finite(q, sigma, factor):
    alphas = np.array([1.5, 2.0, 4.0, 32.0, 256.0])
    r = rdp_poisson_replace(q, sigma, alphas)
    assert not np.any(np.isnan(r)) and np.all(r >= 0)
    assert np.all(rdp_poisson_replace(q, sigma * factor, alphas) <= r * (1 + 1e-12))  # more noise
    assert np.all(rdp_poisson_replace(min(q * factor, 1.0), sigma, alphas) >= r * (1 - 1e-12))  # larger q
    assert math.isfinite(float(epsilon_rdp(q, sigma, 10, 1e-5, neighbors=RO, warn=False).epsilon))


# -- shuffled batches (docs/math.md §3.6) -------------------------------------------------------------------


def _gauss_delta(eps, mu):
    """Exact δ(ε) of the μ-Gaussian (Balle & Wang 2018, Thm 8), in mpmath."""
    mpmath.mp.dps = 40
    eps, mu = mpmath.mpf(eps), mpmath.mpf(mu)
    return mpmath.ncdf(mu / 2 - eps / mu) - mpmath.e**eps * mpmath.ncdf(-mu / 2 - eps / mu)


@pytest.mark.parametrize(
    "sigma,n,b,epochs", [(1.1, 60000, 256, 60), (2.0, 50000, 500, 10), (0.8, 1000, 10, 3)]
)
def test_shuffle_upper_is_the_exact_composed_gaussian(sigma, n, b, epochs):
    from dpcalc.engine.samplers.shuffle import epsilon_shuffle_upper, steps_per_epoch

    m = steps_per_epoch(b / n, n, b)
    assert m == n // b
    steps = epochs * (n // b)
    up, k = epsilon_shuffle_upper(sigma, steps, 1e-5, m)
    assert k == epochs
    mu = 2 * math.sqrt(epochs) / sigma
    # ε is the smallest with δ(ε) <= 1e-5: δ(up) <= 1e-5 < δ(up − 1e-6)
    assert _gauss_delta(float(up), mu) <= 1e-5 < _gauss_delta(float(up) - 1e-6, mu)
    # one more step starts another epoch
    assert epsilon_shuffle_upper(sigma, steps + 1, 1e-5, m)[1] == epochs + 1


def test_shuffle_lower_meets_upper_with_one_batch_per_epoch():
    from dpcalc.engine.samplers.shuffle import epsilon_shuffle_lower, epsilon_shuffle_upper

    up, _ = epsilon_shuffle_upper(1.0, 1, 1e-5, 1)
    lo = epsilon_shuffle_lower(1.0, 1, 1e-5, 1)
    assert float(lo) <= float(up) <= float(lo) * 1.001


def test_shuffle_lower_bound_event_probabilities_against_mpmath():
    """P(max ≥ τ) under the mixture and under N(0, I_m), by mpmath, as the module computes them."""
    from scipy import special

    m, mu, tau = 7, 1.3, 1.1
    mpmath.mp.dps = 30
    p0 = 1 - mpmath.ncdf(tau) ** m
    p1 = 1 - mpmath.ncdf(tau - mu) * mpmath.ncdf(tau) ** (m - 1)
    lphi = special.log_ndtr(tau)
    assert math.isclose(-math.expm1(m * lphi), float(p0), rel_tol=1e-13)
    assert math.isclose(-math.expm1(special.log_ndtr(tau - mu) + (m - 1) * lphi), float(p1), rel_tol=1e-13)


def test_shuffle_lower_bound_against_monte_carlo():
    """The event's probabilities, by simulation of the two epochs' outputs (10^5 draws, 5 sigma)."""
    from scipy import special

    rng = np.random.default_rng(1)
    m, mu, tau, draws = 5, 2.0, 2.2, 100_000
    y = rng.standard_normal((draws, m))
    q_hat = np.mean(y.max(axis=1) >= tau)
    y[np.arange(draws), rng.integers(0, m, draws)] += mu
    p_hat = np.mean(y.max(axis=1) >= tau)
    lphi = special.log_ndtr(tau)
    p1 = -math.expm1(special.log_ndtr(tau - mu) + (m - 1) * lphi)
    p0 = -math.expm1(m * lphi)
    for hat, exact in ((p_hat, p1), (q_hat, p0)):
        assert abs(hat - exact) < 5 * math.sqrt(exact * (1 - exact) / draws)


@settings(max_examples=15)
@given(
    sigma=st.floats(0.5, 8.0),
    m=st.integers(1, 400),
    epochs=st.integers(1, 30),
    factor=st.floats(1.05, 3.0),
)
def test_shuffle_bounds_ordered_monotone_finite(sigma, m, epochs, factor):
    from dpcalc.engine.samplers.shuffle import epsilon_shuffle_lower, epsilon_shuffle_upper

    steps = m * epochs
    up = float(epsilon_shuffle_upper(sigma, steps, 1e-5, m)[0])
    lo = float(epsilon_shuffle_lower(sigma, steps, 1e-5, m))
    assert math.isfinite(up) and math.isfinite(lo)
    assert 0 <= lo <= up
    assert float(epsilon_shuffle_upper(sigma * factor, steps, 1e-5, m)[0]) <= up  # more noise
    assert float(epsilon_shuffle_lower(sigma * factor, steps, 1e-5, m)) <= lo + 1e-12
    assert float(epsilon_shuffle_upper(sigma, steps + m, 1e-5, m)[0]) >= up  # more epochs
    # a larger batch (fewer steps per epoch), the same epochs: the upper bound does not change
    m2 = max(1, int(m / factor))
    assert math.isclose(float(epsilon_shuffle_upper(sigma, m2 * epochs, 1e-5, m2)[0]), up)


def test_shuffle_delta_zero_is_infinite():
    from dpcalc.engine.samplers.shuffle import epsilon_shuffle_lower, epsilon_shuffle_upper

    up, _ = epsilon_shuffle_upper(1.0, [10, 10], [0.0, 1e-5], 5)
    assert up[0] == math.inf and math.isfinite(up[1])
    assert epsilon_shuffle_lower(1.0, 10, 0.0, 5) == math.inf  # the Gaussian's loss is unbounded
