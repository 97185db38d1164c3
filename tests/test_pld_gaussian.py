"""PLD brackets for compositions of Gaussian mechanisms against the exact profile (docs/math.md §2.6).

k Gaussians with noise σ (sensitivity Δ) compose to one Gaussian with r = Δ√k/σ, whose exact δ(ε) is
Balle & Wang's formula; the reference here is evaluated with mpmath at 50 digits and inverted by
root finding, independently of the engine.
"""

import math

import mpmath as mp
import pytest

from dpcalc.engine.composition.pld import compose_pld

mp.mp.dps = 50


def exact_delta(eps, r):
    eps, r = mp.mpf(eps), mp.mpf(r)
    return mp.ncdf(r / 2 - eps / r) - mp.e**eps * mp.ncdf(-r / 2 - eps / r)


def exact_eps(delta, r):
    """ε(δ) of the Gaussian mechanism by bisection on log δ(ε) (mpmath)."""
    lo, hi = mp.mpf(0), mp.mpf(10)
    while exact_delta(hi, r) > delta:
        hi *= 2
    if exact_delta(lo, r) <= delta:
        return 0.0
    target = mp.log(delta)
    for _ in range(200):
        mid = (lo + hi) / 2
        if mp.log(exact_delta(mid, r)) > target:
            lo = mid
        else:
            hi = mid
    return float((lo + hi) / 2)


CASES = [
    # sigma, sensitivity, k, delta
    (1.0, 1.0, 1, 1e-5),
    (2.0, 1.0, 10, 1e-5),
    (5.0, 1.0, 100, 1e-6),
    (10.0, 1.0, 1000, 1e-5),
    (20.0, 2.0, 5000, 1e-8),
    (0.5, 1.0, 3, 1e-3),
    (1.0, 1.0, 5, 1e-10),
    (50.0, 1.0, 20000, 1e-6),
]


@pytest.mark.parametrize("sigma,sens,k,delta", CASES)
def test_k_gaussians_bracket_holds_exact_epsilon(sigma, sens, k, delta):
    b = compose_pld([("gaussian", {"sigma": sigma, "sensitivity": sens}, k)], delta=delta)
    exact = exact_eps(delta, sens * math.sqrt(k) / sigma)
    assert b.lower <= exact <= b.upper
    assert b.lower <= b.estimate <= b.upper
    # the default tolerance: the whole bracket within 0.5 % of ε
    assert b.upper - b.lower <= 0.005 * exact * 1.05
    # the estimate is far better than the bracket (second-order discretisation bias only)
    assert abs(b.estimate - exact) <= 1e-3 * exact


@pytest.mark.parametrize("eps_error", [0.2, 0.05, 0.01])
def test_user_tolerance_sets_the_width(eps_error):
    b = compose_pld([("gaussian", {"sigma": 4.0}, 200)], delta=1e-6, eps_error=eps_error)
    exact = exact_eps(1e-6, math.sqrt(200) / 4.0)
    assert b.lower <= exact <= b.upper
    assert b.upper - b.lower <= eps_error


@pytest.mark.parametrize(
    "sigma,k,delta",
    [(1.0, 1, 1e-300), (3.0, 100, 1e-100), (1.0, 10, 1e-20), (2.0, 50, 1e-200)],
)
def test_tiny_delta_reach(sigma, k, delta):
    """δ far below FFT round-off (exponential tilting): still inside the exact bracket."""
    b = compose_pld([("gaussian", {"sigma": sigma}, k)], delta=delta)
    exact = exact_eps(delta, math.sqrt(k) / sigma)
    assert math.isfinite(b.upper)
    assert b.lower <= exact <= b.upper
    assert b.upper - b.lower <= 0.005 * exact * 1.05


@pytest.mark.parametrize("sigma,k,eps", [(2.0, 10, 3.0), (1.0, 1, 1.0), (4.4**-1, 1, 1.0), (3.0, 50, 0.5)])
def test_delta_of_epsilon_bracket(sigma, k, eps):
    b = compose_pld([("gaussian", {"sigma": sigma}, k)], epsilon=eps)
    exact = float(exact_delta(eps, math.sqrt(k) / sigma))
    assert b.lower <= exact <= b.upper
    assert b.lower <= b.estimate <= b.upper
    assert b.upper <= exact * 1.01 + 1e-15


def test_formulas_vectors_single_gaussian():
    """docs/math.md §2.6 test vectors: r=1, ε=1 → 0.12693673750664392; r=0.4 → 0.0012998981331268152."""
    b = compose_pld([("gaussian", {"sigma": 1.0}, 1)], epsilon=1.0)
    assert b.lower <= 0.12693673750664392 <= b.upper
    b = compose_pld([("gaussian", {"sigma": 2.5}, 1)], epsilon=1.0)
    assert b.lower <= 0.0012998981331268152 <= b.upper


def test_heterogeneous_gaussians_are_one_gaussian():
    specs = [("gaussian", {"sigma": 2.0}, 30), ("gaussian", {"sigma": 3.0, "sensitivity": 2.0}, 20)]
    r = math.sqrt(30 / 4.0 + 20 * 4.0 / 9.0)
    b = compose_pld(specs, delta=1e-6)
    exact = exact_eps(1e-6, r)
    assert b.lower <= exact <= b.upper
