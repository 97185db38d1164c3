"""A Rényi level that underflows is never reported as 0 (which would read as identical distributions)."""

import numpy as np
import pytest

from dpcalc import api
from dpcalc.engine.mechanisms.sgm.fixed_size import rdp_without_replacement
from dpcalc.engine.mechanisms.sgm.poisson import rdp_poisson

ORDERS = np.array([1.01, 2.0, 10.0, 1e4])


@pytest.mark.parametrize("rdp", [rdp_poisson, rdp_without_replacement])
@pytest.mark.parametrize("q, sigma", [(1e-300, 1e300), (0.01, 1e300), (1.0, 1e300), (0.5, 1e200)])
def test_a_positive_level_stays_positive(rdp, q, sigma):
    assert np.all(rdp(q, sigma, ORDERS) > 0)


@pytest.mark.parametrize("rdp", [rdp_poisson, rdp_without_replacement])
def test_exact_zeros_stay_zero(rdp):
    assert np.all(rdp(0.0, 1.0, ORDERS) == 0)  # nothing sampled
    assert np.all(rdp(0.3, np.inf, ORDERS) == 0)  # infinite noise


@pytest.mark.parametrize("sigma", [1e140, 1e155])
def test_a_lost_level_is_bounded_by_the_unsubsampled_gaussian(sigma):
    # where the subsampled level underflows, the Gaussian's α/(2σ²) (still representable) bounds it
    got = rdp_poisson(1e-200, sigma, ORDERS)
    assert np.all(got >= ORDERS / 2 / sigma / sigma)


@pytest.mark.parametrize("q, sigma", [(1e-300, 1e300), (0.01, 1e300)])
def test_delta_zero_is_never_a_finite_epsilon_for_the_gaussian(q, sigma):
    bound = api.sgd_epsilon(noise_multiplier=sigma, sample_rate=q, steps=1, delta=0.0)
    assert np.all(np.isinf(bound.value))
