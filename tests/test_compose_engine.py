"""Composition theorems and mechanism curves (docs/math.md §2): vectors, brute force, quadrature, peers."""

import itertools
import math

import mpmath
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dpcalc.engine.composition import theorems as comp
from dpcalc.engine.conversion import methods as conversions
from dpcalc.engine.mechanisms.approx_dp import rdp_pure_dp
from dpcalc.engine.mechanisms.catalogue import gaussian_r2, per_release_dp, rdp_curve, total_rdp
from dpcalc.engine.mechanisms.gaussian_exact import eps_gaussian
from dpcalc.engine.orders import DEFAULT_ORDERS
from dpcalc.errors import InputError
from dpcalc.input.spec import parse_mechanism as P

mpmath.mp.dps = 40

# ---------------------------------------------------------------------------------------------- §2.1, §2.2


def test_basic_sums_and_rounds_up():
    e, d = comp.basic([0.1, 0.2], [1e-6, 0.0], [10, 5])
    assert e >= 2.0 and e == pytest.approx(2.0, rel=1e-15)
    assert d >= 1e-5 and d == pytest.approx(1e-5, rel=1e-15)


@pytest.mark.parametrize(
    ("eps", "k", "dprime", "expected"),
    [(0.1, 100, 1e-5, 5.8502350929445575), (0.01, 1000, 1e-6, 1.7627598071107906)],
)
def test_drv_homogeneous_vectors(eps, k, dprime, expected):
    got = float(comp.drv_eps(eps, k, dprime))
    assert expected <= got <= expected * (1 + 1e-14)
    assert float(comp.advanced_eps(eps, 0.0, k, dprime)) == got  # below basic kε here


def test_drv_heterogeneous_vector_and_min_with_basic():
    got = float(comp.drv_eps([0.1, 0.2, 0.5, 0.05], 1, 1e-6))
    assert 3.2728088069747767 <= got <= 3.2728088069747767 * (1 + 1e-14)
    # basic composition (0.85) is smaller here: the reported advanced ε is the minimum
    assert float(comp.advanced_eps([0.1, 0.2, 0.5, 0.05], 0.0, 1, 1e-6)) == pytest.approx(0.85, rel=1e-14)


def test_heterogeneous_with_equal_eps_is_homogeneous():
    a = float(comp.drv_eps([0.1, 0.1, 0.1], [30, 50, 20], 1e-5))
    assert a == pytest.approx(5.8502350929445575, rel=1e-14)


def test_advanced_needs_delta_above_the_mechanisms_delta():
    # Σδ = 1e-4: at 2e-4 DRV runs with δ̂ = 1e-4; below 1e-4 nothing is certified
    assert float(comp.advanced_eps(0.1, 1e-6, 100, 2e-4)) == pytest.approx(
        float(comp.drv_eps(0.1, 100, 1e-4)), rel=1e-12
    )
    assert comp.advanced_eps(0.1, 1e-6, 100, 1e-4 * 0.99) == math.inf
    assert comp.advanced_eps(0.1, 1e-6, 100, 5e-5) == math.inf


@settings(max_examples=40, deadline=None)
@given(eps=st.floats(1e-3, 2.0), k=st.integers(1, 5000), log_d=st.floats(-12, -2))
def test_advanced_delta_inverts_advanced_eps(eps, k, log_d):
    target = 10.0**log_d
    e = float(comp.advanced_eps(eps, 0.0, k, target))
    d = float(comp.advanced_delta(eps, 0.0, k, e))
    assert d <= target * (1 + 1e-9)


# ---------------------------------------------------------------------------------------------- §2.3 KOV


@pytest.mark.parametrize(
    ("eps", "delta", "k", "target", "expected"),
    [(0.1, 0.0, 100, 1e-5, 4.3067913725), (0.01, 0.0, 1000, 1e-6, 1.3654467100)],
)
def test_kov_vectors(eps, delta, k, target, expected):
    got = float(comp.kov_eps(eps, delta, k, target))
    assert got == pytest.approx(expected, abs=2e-10)


def test_kov_grid_point_vector():
    got = float(comp.kov_delta(0.1, 1e-6, 10, 0.8))
    assert got == pytest.approx(2.982309302935e-4, rel=1e-11)


def _brute_force_delta(eps, delta, k, eps_g):
    """Hockey-stick divergence E_{e^ε_g}(P^k ‖ Q^k) of the dominating pair of (ε, δ)-DP, by enumeration."""
    e = mpmath.e ** mpmath.mpf(eps)
    d = mpmath.mpf(delta)
    p = [d, (1 - d) * e / (1 + e), (1 - d) / (1 + e), mpmath.mpf(0)]
    q = [mpmath.mpf(0), (1 - d) / (1 + e), (1 - d) * e / (1 + e), d]
    gamma = mpmath.e ** mpmath.mpf(eps_g)
    total = mpmath.mpf(0)
    for outcome in itertools.product(range(4), repeat=k):
        pp = mpmath.fprod(p[i] for i in outcome)
        qq = mpmath.fprod(q[i] for i in outcome)
        total += max(pp - gamma * qq, 0)
    return total


@pytest.mark.parametrize(
    ("eps", "delta", "k", "eps_g"),
    [(0.5, 0.0, 5, 0.7), (1.0, 1e-3, 4, 1.3), (0.2, 1e-2, 6, 0.0), (2.0, 0.05, 3, 2.5), (0.3, 1e-4, 5, 1.2)],
)
def test_kov_equals_brute_force_hockey_stick(eps, delta, k, eps_g):
    exact = _brute_force_delta(eps, delta, k, eps_g)
    got = float(comp.kov_delta(eps, delta, k, eps_g))
    assert got >= exact
    assert got == pytest.approx(float(exact), rel=1e-9)


@settings(max_examples=30, deadline=None)
@given(eps=st.floats(1e-3, 3.0), k=st.integers(1, 3000), log_d=st.floats(-12, -2))
def test_kov_never_above_advanced_or_basic(eps, k, log_d):
    target = 10.0**log_d
    kov = float(comp.kov_eps(eps, 0.0, k, target))
    assert kov <= float(comp.advanced_eps(eps, 0.0, k, target)) * (1 + 1e-12)
    assert kov <= k * eps * (1 + 1e-12)
    assert float(comp.kov_delta(eps, 0.0, k, kov)) <= target  # the inversion is safe


def test_kov_large_count_is_vectorised_and_below_drv():
    targets = np.array([1e-5, 1e-8, 1e-12])
    got = comp.kov_eps(0.01, 0.0, 10**6, targets)
    assert got.shape == (3,) and np.all(np.diff(got) > 0)
    assert np.all(got < comp.advanced_eps(0.01, 0.0, 10**6, targets))
    assert np.all(comp.kov_delta(0.01, 0.0, 10**6, got) <= targets)


def test_kov_unreachable_target_and_limits():
    assert comp.kov_eps(0.1, 1e-3, 10, 1e-3) == math.inf  # 1 − (1 − δ)^k ≈ 1e-2 > 1e-3
    with pytest.raises(InputError, match="count"):
        comp.kov_eps(0.1, 0.0, 10**6 + 1, 1e-5)


# ---------------------------------------------------------------------------------------------- §2.5 curves


def _mp_renyi_laplace(b, sens, alpha):
    b, sens, alpha = mpmath.mpf(b), mpmath.mpf(sens), mpmath.mpf(alpha)

    def p(x):
        return mpmath.exp(-abs(x) / b) / (2 * b)

    def q(x):
        return mpmath.exp(-abs(x - sens) / b) / (2 * b)

    pts = [-mpmath.inf, 0, sens, mpmath.inf]
    if alpha == 1:
        return mpmath.quad(lambda x: p(x) * mpmath.log(p(x) / q(x)), pts)
    integral = mpmath.quad(lambda x: p(x) ** alpha * q(x) ** (1 - alpha), pts)
    return mpmath.log(integral) / (alpha - 1)


@pytest.mark.parametrize(("b", "sens"), [(1.0, 1.0), (0.5, 1.0), (3.0, 2.0), (10.0, 1.0)])
def test_laplace_against_quadrature(b, sens):
    alphas = [1.0, 1.01, 1.5, 2.0, 7.5, 32.0]
    got = rdp_curve(P(f"laplace:scale={b},sensitivity={sens}"), alphas)
    for a, g in zip(alphas, got):
        exact = _mp_renyi_laplace(b, sens, a)
        assert g >= exact * (1 - 1e-15)
        assert g == pytest.approx(float(exact), rel=1e-11)


def test_laplace_vectors_and_dp_accounting():
    from dp_accounting.rdp.rdp_privacy_accountant import _laplace_rdp

    got = rdp_curve(P("laplace:scale=1"), [2.0, 1.5, 1.0, np.inf])
    assert got[:3] == pytest.approx([0.6191236299985928, 0.5128835112945086, 0.36787944117144233], rel=1e-14)
    assert got[3] == 1.0
    for a in [1.2, 3.0, 50.0]:
        assert rdp_curve(P("laplace:scale=2,sensitivity=3"), [a])[0] == pytest.approx(
            _laplace_rdp(1.5, a), rel=1e-12
        )


def _mp_renyi_rr(p, alpha):
    p, alpha = mpmath.mpf(p), mpmath.mpf(alpha)
    q = 1 - p
    if alpha == 1:
        return p * mpmath.log(p / q) + q * mpmath.log(q / p)
    return mpmath.log(p**alpha * q ** (1 - alpha) + q**alpha * p ** (1 - alpha)) / (alpha - 1)


@pytest.mark.parametrize("p", [0.51, 0.75, 0.9, 0.999])
def test_randomized_response_against_mpmath(p):
    alphas = [1.0, 1.05, 2.0, 10.0, 300.0]
    got = rdp_curve(P(f"randomized-response:p={p}"), alphas)
    for a, g in zip(alphas, got):
        exact = _mp_renyi_rr(p, a)
        assert g >= exact * (1 - 1e-15)
        assert g == pytest.approx(float(exact), rel=1e-11)


def test_randomized_response_vectors():
    got = rdp_curve(P("randomized-response:p=0.75"), [2.0, 10.0])
    assert got == pytest.approx([0.8472978603872037, 1.0666476140468442], rel=1e-14)


def test_pure_dp_curve():
    assert rdp_curve(P("dp:epsilon=1"), [2.0])[0] == pytest.approx(0.7353256641, rel=1e-10)
    for eps in [0.01, 0.5, 1.0, 4.0]:
        z = rdp_pure_dp(eps, DEFAULT_ORDERS)
        assert np.all(z <= eps * (1 + 1e-14))
        assert np.all(z <= DEFAULT_ORDERS * eps * eps / 2 * (1 + 1e-12))
    with pytest.raises(InputError, match="no Rényi-DP curve"):
        rdp_curve(P("dp:epsilon=1,delta=1e-6"), [2.0])


def test_gaussian_zcdp_and_composition_add():
    a = np.array([1.5, 2.0, 10.0])
    assert rdp_curve(P("gaussian:sigma=0.7,sensitivity=2"), [1.5])[0] == pytest.approx(
        6.122448979591837, rel=1e-14
    )
    assert rdp_curve(P("zcdp:rho=0.1,count=3"), a) == pytest.approx(0.3 * a, rel=1e-14)
    specs = [P("gaussian:sigma=2,count=10"), P("laplace:scale=3,count=4"), P("zcdp:rho=0.01")]
    total = total_rdp(specs, a)
    parts = sum(rdp_curve(s, a) for s in specs)
    assert np.all(total >= parts) and total == pytest.approx(parts, rel=1e-14)


def test_subsampled_gaussian_at_q_one_is_the_gaussian():
    a = np.array([2.0, 5.0, 20.0])
    sub = rdp_curve(P("subsampled-gaussian:q=1,sigma=1.3,count=7"), a)
    assert sub == pytest.approx(rdp_curve(P("gaussian:sigma=1.3,count=7"), a), rel=1e-9)


def test_per_release_dp_and_gaussian_r2():
    assert per_release_dp(P("laplace:scale=2,sensitivity=3"))[0] == (1.5, 0.0)
    assert per_release_dp(P("rr:p=0.75"))[0] == pytest.approx((math.log(3), 0.0))
    assert per_release_dp(P("dp:epsilon=1,delta=1e-6"))[0] == (1.0, 1e-6)
    pair, reason = per_release_dp(P("gaussian:sigma=1"))
    assert pair is None and "gaussian" in reason
    assert gaussian_r2([P("gaussian:sigma=2,count=4"), P("gaussian:sigma=1,sensitivity=2")]) == pytest.approx(
        5.0
    )
    assert gaussian_r2([P("gaussian:sigma=2"), P("laplace:scale=1")]) is None


# ---------------------------------------------------------------------------------------------- §2.6 vs RDP


@settings(max_examples=30, deadline=None)
@given(sigma=st.floats(0.3, 50.0), count=st.integers(1, 10_000), log_d=st.floats(-12, -3))
def test_rdp_never_below_exact_gaussian(sigma, count, log_d):
    delta = 10.0**log_d
    spec = P(f"gaussian:sigma={sigma!r},count={count}")
    rdp = conversions.eps_from_curve(DEFAULT_ORDERS, rdp_curve(spec, DEFAULT_ORDERS), delta).value
    exact = eps_gaussian(delta, math.sqrt(gaussian_r2([spec])))
    assert float(rdp) >= float(exact)


def test_tiny_epsilons_do_not_underflow_to_unsound_values():
    # ε² underflows in double: the DRV term must still be ~sqrt(2 log(1/δ))·ε, never 0
    drv = float(comp.drv_eps(1e-300, 1, 1e-5))
    assert drv == pytest.approx(math.sqrt(2 * math.log(1e5)) * 1e-300, rel=1e-12)
    assert float(comp.advanced_eps(1e-300, 0.0, 1, 1e-5)) >= 1e-300
    assert float(comp.advanced_delta(1e-300, 0.0, 1, 1e-300 * 0.999)) == pytest.approx(
        math.exp(-(0.999**2) / 2), rel=1e-9
    )
    # randomized response with p rounding to 1/2: a tiny, non-negative curve from the log-odds
    z = rdp_curve(P("randomized-response:epsilon=1e-300"), DEFAULT_ORDERS)
    assert np.all(z >= 0) and np.all(z <= 1e-300 * (1 + 1e-12))
