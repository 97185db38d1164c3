"""DP-SGD (Poisson-subsampled Gaussian, add/remove) PLD brackets against the peer libraries.

References (test-only dependencies): prv-accountant 0.2.0 (Gopi, Lee & Wutschitz 2021) returns a
certified [lower, upper]; dp-accounting 0.6.0's PLD accountant (pessimistic, value discretisation
interval 1e-4) returns a tight upper estimate.  The configurations include the peers' configs A and
B (the peer measurements) and the 1e7-step row of the edge-case probe.
"""

import math

import pytest

from dpcalc.engine.dpsgd.pld_accounting import sgd_delta_pld, sgd_epsilon_pld

dp_accounting = pytest.importorskip("dp_accounting")
prv_accountant = pytest.importorskip("prv_accountant")

from dp_accounting.pld import pld_privacy_accountant  # noqa: E402
from prv_accountant import PRVAccountant  # noqa: E402
from prv_accountant.privacy_random_variables import PoissonSubsampledGaussianMechanism  # noqa: E402

CONFIGS = [
    # q, sigma, steps, delta
    (256 / 60000, 1.1, 14063, 1e-5),  # config A
    (0.01, 1.0, 10000, 1e-6),  # config B
    (0.01, 1.0, 1000, 1e-5),  # the peers' edge-case baseline
    (0.02, 2.0, 200, 1e-5),
    (0.001, 0.8, 5000, 1e-5),
    (0.05, 1.5, 500, 1e-6),
    (0.1, 3.0, 300, 1e-5),
    (0.004, 0.6, 2000, 1e-7),
    (512 / 50000, 1.0, 4900, 1e-6),
    (0.2, 5.0, 100, 1e-5),
    (1.0, 10.0, 50, 1e-5),  # q = 1: the plain Gaussian
    (0.01, 1.0, 1, 1e-5),  # a single step
    (0.05, 0.7, 3, 1e-6),
]


def dp_accounting_pld(q, sigma, steps, delta):
    acc = pld_privacy_accountant.PLDAccountant()
    event = dp_accounting.GaussianDpEvent(sigma)
    if q < 1:
        event = dp_accounting.PoissonSampledDpEvent(q, event)
    acc.compose(event, steps)
    return acc.get_epsilon(delta)


def prv_bracket(q, sigma, steps, delta, eps_error=0.02):
    prv = PoissonSubsampledGaussianMechanism(noise_multiplier=sigma, sampling_probability=q)
    acc = PRVAccountant(
        prvs=[prv], max_self_compositions=[steps], eps_error=eps_error, delta_error=delta * 1e-4
    )
    return acc.compute_epsilon(delta=delta, num_self_compositions=[steps])


@pytest.mark.filterwarnings("ignore:The integral is probably divergent")
@pytest.mark.parametrize("q,sigma,steps,delta", CONFIGS)
def test_dpsgd_inside_prv_bracket_and_near_dp_accounting(q, sigma, steps, delta):
    b = sgd_epsilon_pld(q, sigma, steps, delta)
    lo, est, up = float(b.lower), float(b.estimate), float(b.upper)
    assert lo <= est <= up
    assert up - lo <= 0.005 * est * 1.0001
    p_lo, _, p_up = prv_bracket(q, sigma, steps, delta)
    assert p_lo <= est <= p_up
    # our certified bracket and prv's must overlap (both contain the true ε)
    assert lo <= p_up and p_lo <= up
    ref = dp_accounting_pld(q, sigma, steps, delta)
    assert abs(est - ref) <= 0.005 * ref
    assert abs(up - ref) <= 0.005 * ref


def test_peer_values_configs_a_and_b():
    """peer measurements: PLD/PRV estimates 2.3818/2.3817 (A) and 6.9074 (B); prv eps_error=0.01 brackets
    [2.3715, 2.3918] and [6.8971, 6.9177]."""
    a = sgd_epsilon_pld(256 / 60000, 1.1, 14063, 1e-5)
    assert abs(float(a.estimate) - 2.3817) <= 5e-4
    assert float(a.lower) <= 2.3918 and float(a.upper) >= 2.3715
    b = sgd_epsilon_pld(0.01, 1.0, 10000, 1e-6)
    assert abs(float(b.estimate) - 6.9074) <= 5e-4
    assert float(b.lower) <= 6.9177 and float(b.upper) >= 6.8971


def test_delta_of_epsilon_matches_dp_accounting():
    acc = pld_privacy_accountant.PLDAccountant()
    acc.compose(dp_accounting.PoissonSampledDpEvent(0.01, dp_accounting.GaussianDpEvent(1.0)), 1000)
    ref = acc.get_delta(1.5)
    b = sgd_delta_pld(0.01, 1.0, 1000, 1.5)
    assert float(b.lower) <= float(b.estimate) <= float(b.upper)
    assert abs(float(b.estimate) - ref) <= 0.02 * ref
    assert float(b.lower) <= ref * (1 + 1e-6)


def test_vectorised_over_configurations():
    b = sgd_epsilon_pld([0.01, 0.02], 1.0, [[500], [1000]], 1e-5)
    assert b.upper.shape == (2, 2)
    for i, steps in enumerate((500, 1000)):
        for j, q in enumerate((0.01, 0.02)):
            one = sgd_epsilon_pld(q, 1.0, steps, 1e-5)
            assert float(b.upper[i, j]) == float(one.upper)
    # more steps, larger ε
    assert (b.lower[1] <= b.upper[1]).all() and (b.estimate[1] > b.estimate[0]).all()


def test_ten_million_steps():
    """the peer edge-case probe: T=1e7, q=1e-4, σ=1, δ=1e-5; prv (eps_error 0.1) 1.52/1.62/1.72, opacus'
    PRV upper 1.6297.  The bracket must overlap both certified ranges."""
    b = sgd_epsilon_pld(1e-4, 1.0, 10**7, 1e-5, eps_error=0.05)
    lo, up = float(b.lower), float(b.upper)
    assert up - lo <= 0.05
    assert lo <= 1.6297 and up >= 1.52
    assert math.isfinite(up)
