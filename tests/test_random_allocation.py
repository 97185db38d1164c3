"""Random allocation (balls-in-bins) RDP bounds: dpcalc/engine/mechanisms/random_allocation/rdp.py (docs/math.md §3.8).

References used here are independent of the module: brute-force multinomial enumeration in mpmath,
Gauss–Hermite quadrature of the true divergences for t = 2, 3, closed forms (t = 1, k = t, α = 2), dpcalc's
Poisson RDP (Mironov, Talwar & Zhang 2019) and the exact Gaussian profile (Balle & Wang 2018).
"""

from __future__ import annotations

import itertools
import math

import mpmath
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from numpy.polynomial.hermite_e import hermegauss
from scipy import integrate
from scipy.special import gammaln

from dpcalc.engine.dpsgd.accounting import eps_of_curve
from dpcalc.engine.mechanisms.gaussian_exact import eps_gaussian
from dpcalc.engine.mechanisms.random_allocation import rdp as ra
from dpcalc.engine.mechanisms.sgm.poisson import rdp_poisson
from dpcalc.engine.orders import DEFAULT_ORDERS
from dpcalc.engine.samplers.allocation import epsilon_random_allocation
from dpcalc.errors import InputError


def brute_remove(sigma, t, alpha):
    """D_α(P‖Q), P = (1/t) Σ N(e_i/σ, I), Q = N(0, I): E_Q[(P/Q)^α] summed over every a ∈ ℕ^t, |a| = α."""
    with mpmath.workdps(40):
        s2 = mpmath.mpf(sigma) ** 2
        total = mpmath.mpf(0)
        for a in itertools.product(range(alpha + 1), repeat=t):
            if sum(a) != alpha:
                continue
            coef = mpmath.factorial(alpha) / mpmath.fprod(mpmath.factorial(x) for x in a)
            total += coef * mpmath.exp(sum(x * (x - 1) for x in a) / (2 * s2))
        return float(mpmath.log(total / mpmath.mpf(t) ** alpha) / (alpha - 1))


def quad_divergences(sigma, t, alpha, n):
    """(D_α(P‖Q), D_α(Q‖P)) for the 1-of-t pair by n-point Gauss–Hermite quadrature over ℝ^t."""
    x, w = hermegauss(n)
    w = w / math.sqrt(2 * math.pi)
    grids = np.meshgrid(*([x] * t), indexing="ij")
    weights = np.prod(np.meshgrid(*([w] * t), indexing="ij"), axis=0)
    mu = 1.0 / sigma
    ratio = np.mean([np.exp(mu * g - mu * mu / 2) for g in grids], axis=0)  # P/Q
    rem = math.log(np.sum(weights * ratio**alpha)) / (alpha - 1)
    add = math.log(np.sum(weights * ratio ** (1 - alpha))) / (alpha - 1)
    return rem, add


@pytest.mark.parametrize("t", [1, 2, 3, 4])
@pytest.mark.parametrize("sigma", [0.7, 1.5])
def test_remove_equals_bruteforce(t, sigma):
    alphas = [2, 3, 4, 5]
    got = ra.rdp_random_allocation_remove(sigma, t, 1, np.array(alphas, dtype=float))
    for g, a in zip(got, alphas):
        exact = brute_remove(sigma, t, a)
        assert g >= exact  # an upper bound ...
        assert g <= exact + 1e-9 * (1 + exact)  # ... equal to the exact divergence up to rounding


@pytest.mark.parametrize("sigma", [0.8, 2.0])
@pytest.mark.parametrize("t", [2, 3])
def test_both_directions_against_quadrature(sigma, t):
    """The multinomial closed form is the true remove divergence; the add bound is above the true one."""
    for alpha in [1.5, 2.0, 3.0, 6.0]:
        r1, a1 = quad_divergences(sigma, t, alpha, 70)
        r2, a2 = quad_divergences(sigma, t, alpha, 90)
        assert abs(r1 - r2) < 1e-9 * (1 + r1) and abs(a1 - a2) < 1e-9 * (1 + a1)  # quadrature converged
        rem = ra.rdp_random_allocation_remove(sigma, t, 1, [alpha])[0]
        add = ra.rdp_random_allocation_add(sigma, t, 1, [alpha])[0]
        assert rem >= r2 - 1e-9 * (1 + r2)
        assert add >= a2 - 1e-9 * (1 + a2)
        if alpha == int(alpha):
            assert rem <= r2 + 1e-8 * (1 + r2)  # exact at integer orders


def test_alpha2_closed_form():
    # M_2 = 1 + (e^{1/σ²} − 1)/t: t ways to put both factors on one coordinate, t(t−1) on two
    for sigma in [0.5, 1.0, 3.0]:
        for t in [5, 100, 10_000]:
            got = ra.rdp_random_allocation_remove(sigma, t, 1, [2.0])[0]
            exact = math.log1p(math.expm1(1 / sigma**2) / t)
            # the module adds its rounding-error bound, ~1e-14·t·(deg+4) nats of log M at deg = 2
            assert exact <= got <= exact * (1 + 1e-12) + 1e-12 * (t + 1)


@pytest.mark.parametrize("sigma", [0.3, 1.0, 7.0])
def test_t1_and_k_equals_t_are_the_plain_gaussian(sigma):
    alphas = DEFAULT_ORDERS
    np.testing.assert_allclose(
        ra.rdp_random_allocation(sigma, 1, 1, alphas), alphas / (2 * sigma**2), rtol=1e-14
    )
    for t in [2, 7, 50]:
        got = ra.rdp_random_allocation(sigma, t, t, alphas)
        np.testing.assert_allclose(got, t * alphas / (2 * sigma**2), rtol=1e-12)


def test_k_reduction_sums_the_blocks():
    """Lemma 3.2 (Feldman & Shenfeld 2025): k-of-t <= blocks of ⌊t/k⌋ and ⌊t/k⌋+1 steps, composed."""
    a = np.array([2.0, 3.5, 10.0])
    for t, k in [(10, 2), (11, 2), (100, 7)]:
        m, r = divmod(t, k)
        for fn in (ra.rdp_random_allocation_remove, ra.rdp_random_allocation_add):
            want = (k - r) * fn(1.3, m, 1, a) + r * fn(1.3, m + 1, 1, a)
            np.testing.assert_allclose(fn(1.3, t, k, a), want, rtol=1e-14)
            assert np.all(fn(1.3, t, k, a) <= k * fn(1.3, m, 1, a) * (1 + 1e-14))


def test_never_above_unamplified_and_poisson_comparison():
    """Feldman & Shenfeld 2025 (arXiv:2502.08202): random allocation is at least as private as Poisson
    subsampling at rate (1+o(1))k/t.  The exact remove divergence of one 1-of-t allocation therefore
    matches t Poisson steps at q = 1/t to first order as t grows (checked at fixed orders: ratio -> 1);
    every bound is at most the unamplified Gaussian k·α/(2σ²)."""
    a = np.array([2.0, 3.0, 5.0])
    for sigma in [1.0, 2.0]:
        ratios = []
        for t in [100, 1000, 10_000]:
            alloc = ra.rdp_random_allocation_remove(sigma, t, 1, a)
            pois = t * rdp_poisson(1.0 / t, sigma, a)
            ratios.append(alloc / pois)
        ratios = np.array(ratios)
        assert np.all(np.abs(ratios[-1] - 1) < 0.01)
        assert np.all(np.abs(ratios[-1] - 1) <= np.abs(ratios[0] - 1))
    r = ra.rdp_random_allocation(0.9, [3, 30, 3000], [1, 2, 3], DEFAULT_ORDERS)
    assert np.all(r <= np.array([1, 2, 3])[:, None] * DEFAULT_ORDERS / (2 * 0.9**2) * (1 + 1e-14))


@settings(max_examples=12, deadline=None)
@given(
    s1=st.floats(0.4, 20.0),
    s2=st.floats(0.4, 20.0),
    t1=st.integers(1, 2000),
    t2=st.integers(1, 2000),
)
def test_monotone_in_sigma_and_t(s1, s2, t1, t2):
    a = np.array([1.5, 2.0, 3.0, 8.0, 32.0])
    lo, hi = sorted((s1, s2))
    assert np.all(ra.rdp_random_allocation(lo, t1, 1, a) >= ra.rdp_random_allocation(hi, t1, 1, a))
    tl, th = sorted((t1, t2))
    assert np.all(ra.rdp_random_allocation(s1, tl, 1, a) >= ra.rdp_random_allocation(s1, th, 1, a))


def test_extremes_never_nan():
    sig = np.array([0.3, 1.0, 100.0])[:, None]
    t = np.array([1.0, 2.0, 1e3, 1e5])[None, :]
    for k in [1.0, 1.0 + 0 * t]:
        r = ra.rdp_random_allocation(sig, t, k, DEFAULT_ORDERS)
        assert r.shape == (3, 4, DEFAULT_ORDERS.size)
        assert not np.any(np.isnan(r)) and np.all(r > 0)
    r = ra.rdp_random_allocation(sig, 1e5, 1e5, [2.0, np.inf])
    assert not np.any(np.isnan(r)) and np.all(np.isinf(r[..., 1]))
    e = epsilon_random_allocation(sig, t, 1, 10, 1e-6)
    assert e.shape == (3, 4) and not np.any(np.isnan(e)) and np.all(e > 0)


def test_epsilon_k_equals_t_is_gaussian_composition():
    """k = t: every step uses the example; ``rounds`` rounds are rounds·t Gaussian steps.  The ε must be the
    RDP conversion of the Gaussian curve and at least the exact Gaussian ε (Balle & Wang 2018, Thm 8)."""
    sigma, t, rounds, delta = 4.0, 5, 3, 1e-6
    got = epsilon_random_allocation(sigma, t, t, rounds, delta)
    curve = rounds * t * DEFAULT_ORDERS / (2 * sigma**2)
    ref = eps_of_curve(DEFAULT_ORDERS, curve, delta).value
    np.testing.assert_allclose(got, ref, rtol=1e-12)
    assert got >= float(eps_gaussian(delta, math.sqrt(rounds * t) / sigma))


def test_epsilon_monotone_and_broadcast():
    e = epsilon_random_allocation([0.8, 1.5, 3.0], 1000, 1, 10, 1e-5)
    assert e.shape == (3,) and np.all(np.diff(e) < 0)
    e2 = epsilon_random_allocation(1.5, 1000, 1, [1, 10, 100], 1e-5)
    assert np.all(np.diff(e2) > 0)


@pytest.mark.parametrize(
    "kw",
    [
        dict(sigma=0.0, t=10, k=1),
        dict(sigma=1.0, t=0, k=1),
        dict(sigma=1.0, t=2.5, k=1),
        dict(sigma=1.0, t=10, k=11),
        dict(sigma=np.nan, t=10, k=1),
    ],
)
def test_bad_inputs(kw):
    with pytest.raises(InputError):
        ra.rdp_random_allocation(alphas=[2.0], **kw)
    with pytest.raises(InputError):
        ra.rdp_random_allocation(1.0, 10, 1, [1.0])
    with pytest.raises(InputError):
        epsilon_random_allocation(1.0, 10, 1, 2.5, 1e-5)
    with pytest.raises(InputError):
        epsilon_random_allocation(1.0, 10, 1, 2, 0.0)


def add_exact_gamma(sigma, t, alpha):
    """D_α(Q‖P) for the 1-of-t pair, any t, from E_Q[W^{−β}] = (1/Γ(β)) ∫_0^∞ s^{β−1} L(s/t)^t ds (β = α−1),
    L the lognormal Laplace transform (160-point Gauss–Hermite, via expm1/log1p), written as
    E_Q[W^{−β}] − 1 = (1/Γ(β)) ∫_0^∞ s^{β−1} (L(s/t)^t − e^{−s}) ds to avoid cancellation, by adaptive
    quadrature (s = u^{1/β} on [0, 1] for the endpoint singularity).  Its relative accuracy is ~1e-9 (the
    difference L^t − e^{−s} is formed from t·log L ≈ −s with double rounding)."""
    x, w = hermegauss(160)
    w = w / math.sqrt(2 * math.pi)
    mu, beta = 1.0 / sigma, alpha - 1.0
    y = np.exp(mu * x - mu * mu / 2)
    lg = gammaln(beta)

    def term(s, lpre):  # e^{lpre}·(L(s/t)^t − e^{−s})
        z = t * math.log1p(np.sum(w * np.expm1(-s / t * y)))
        if z + s < 1.0:
            return math.exp(lpre - s) * math.expm1(z + s)
        return math.exp(lpre + z) - math.exp(lpre - s)

    def f(s):
        return term(s, (beta - 1) * math.log(s) - lg)

    def g(u):  # ∫_0^1 s^{β−1} h(s) ds = (1/β) ∫_0^1 h(u^{1/β}) du
        return term(u ** (1.0 / beta), -lg - math.log(beta)) if u > 0 else 0.0

    v1, _ = integrate.quad(g, 0, 1, limit=500, epsabs=0, epsrel=1e-10)
    v2, _ = integrate.quad(f, 1, np.inf, limit=500, epsabs=0, epsrel=1e-10)
    return math.log1p(v1 + v2) / beta


def test_add_bound_above_exact_for_larger_t():
    # the reference agrees with the t-dimensional quadrature where both run
    for alpha in [1.5, 4.0, 8.0]:
        assert abs(add_exact_gamma(0.9, 3, alpha) - quad_divergences(0.9, 3, alpha, 90)[1]) < 1e-9
    al = np.array([1.2, 1.5, 2.0, 5.0, 10.0, 20.0])
    for sigma, t in [(0.5, 100), (1.0, 10), (1.0, 100), (1.0, 1000), (2.0, 1000), (3.0, 30_000)]:
        exact = np.array([add_exact_gamma(sigma, t, a) for a in al])
        bound = ra.rdp_random_allocation_add(sigma, t, 1, al)
        assert np.all(bound >= exact * (1 - 1e-8))  # 1e-8: the reference's own accuracy (docstring)
    # nearly tight with many steps (the Jensen bound alone is off by orders of magnitude there)
    exact = np.array([add_exact_gamma(2.0, 1000, a) for a in al[:5]])
    assert np.all(ra.rdp_random_allocation_add(2.0, 1000, 1, al[:5]) <= 1.001 * exact)


def test_central_moments_of_w_against_mpmath():
    """The add bound's moments of W = mean of t lognormals: decimal arithmetic vs an mpmath expansion of
    E(W − 1)^n = t^{−n} Σ over compositions (multinomial), for t = 3 (direct sum over ℕ^3)."""
    with mpmath.workdps(50):
        _check_moments_mp()


def _check_moments_mp():
    for mu2 in [0.01, 1.0, 4.0]:
        lo, hi = ra._central_moments_w(mu2, 3, 12)
        for n in range(2, 13):
            # E(W−1)^n = Σ_j C(n,j) (−1)^{n−j} E W^j, E W^j = 3^{−j} Σ_{|a|=j} (j; a) Π e^{a_i(a_i−1)μ²/2}
            total = mpmath.mpf(0)
            for j in range(n + 1):
                ew = mpmath.mpf(0)
                for a in itertools.product(range(j + 1), repeat=3):
                    if sum(a) == j:
                        coef = mpmath.factorial(j) / mpmath.fprod(mpmath.factorial(x) for x in a)
                        ew += coef * mpmath.exp(sum(x * (x - 1) for x in a) * mpmath.mpf(mu2) / 2)
                total += mpmath.binomial(n, j) * (-1) ** (n - j) * ew / mpmath.mpf(3) ** j
            assert lo[n] <= float(total) <= hi[n]
