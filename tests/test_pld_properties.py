"""Property tests of the PLD brackets (hypothesis, modest example counts).

* ``lower <= estimate <= upper`` always;
* where an exact value is known (compositions of Gaussians, docs/math.md §2.6, evaluated here with
  scipy's ``log_ndtr`` in log space and bisection), ``lower <= exact <= upper``;
* monotone in the number of compositions: the bracket for k never lies above the one for k' > k.
"""

import math

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import special

from dpcalc.engine.composition.pld import compose_pld
from dpcalc.engine.dpsgd.pld_accounting import sgd_epsilon_pld


def gaussian_log_delta(eps, r):
    a = special.log_ndtr(r / 2 - eps / r)
    b = eps + special.log_ndtr(-r / 2 - eps / r)
    return a + np.log1p(-np.exp(b - a))


def gaussian_eps(delta, r):
    lo, hi = 0.0, 1.0
    while gaussian_log_delta(hi, r) > math.log(delta):
        hi *= 2
    if gaussian_log_delta(0.0, r) <= math.log(delta):
        return 0.0
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        if gaussian_log_delta(mid, r) > math.log(delta):
            lo = mid
        else:
            hi = mid
    return hi


@settings(max_examples=25, deadline=None)
@given(
    sigma=st.floats(0.3, 30.0),
    k=st.integers(1, 3000),
    log10_delta=st.floats(-12.0, -2.0),
)
def test_gaussian_bracket_contains_exact(sigma, k, log10_delta):
    delta = 10.0**log10_delta
    b = compose_pld([("gaussian", {"sigma": sigma}, k)], delta=delta)
    exact = gaussian_eps(delta, math.sqrt(k) / sigma)
    assert b.lower <= b.estimate <= b.upper
    # the exact value is a root to 1e-15; allow its bisection tolerance only
    assert b.lower <= exact * (1 + 1e-12) + 1e-12
    assert b.upper >= exact * (1 - 1e-12) - 1e-12


@settings(max_examples=12, deadline=None)
@given(
    q=st.floats(0.001, 0.2),
    sigma=st.floats(0.6, 4.0),
    steps=st.integers(1, 3000),
    extra=st.integers(1, 3000),
)
def test_dpsgd_monotone_in_steps(q, sigma, steps, extra):
    b = sgd_epsilon_pld(q, sigma, [steps, steps + extra], 1e-5, eps_error=0.05)
    assert (b.lower <= b.estimate).all() and (b.estimate <= b.upper).all()
    # soundness of both brackets implies lower(k) <= true(k) <= true(k') <= upper(k')
    assert b.lower[0] <= b.upper[1]
    assert b.estimate[0] <= b.estimate[1] + 1e-9


@settings(max_examples=15, deadline=None)
@given(
    eps=st.floats(0.0, 5.0),
    sigma=st.floats(0.5, 5.0),
    k=st.integers(1, 200),
)
def test_gaussian_delta_bracket_contains_exact(eps, sigma, k):
    b = compose_pld([("gaussian", {"sigma": sigma}, k)], epsilon=eps)
    exact = math.exp(gaussian_log_delta(eps, math.sqrt(k) / sigma))
    assert b.lower <= b.estimate <= b.upper
    assert b.lower <= exact * (1 + 1e-9) and b.upper >= exact * (1 - 1e-9)
