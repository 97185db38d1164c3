"""accounting.tv_lower: the one-step total variation that lets a pld query skip the Rényi check for ε = 0 — never
above the exact q·erf(1/(2√2σ)) (mpmath), within rounding of it, and never above the run's own δ(0) as PLD
brackets it."""

import mpmath
import numpy as np
import pytest

from dpcalc.engine.dpsgd import accounting
from dpcalc.engine.dpsgd.pld_accounting import sgd_delta_pld

mpmath.mp.dps = 40


@pytest.mark.parametrize("q", [1e-6, 0.004, 0.3, 1.0])
@pytest.mark.parametrize("sigma", [0.05, 0.7, 1.1, 30.0, 1e6])
def test_below_the_exact_one_step_total_variation(q, sigma):
    exact = mpmath.mpf(q) * mpmath.erf(1 / (2 * mpmath.sqrt(2) * mpmath.mpf(sigma)))
    got = float(accounting.tv_lower(q, sigma))
    assert got <= exact and got >= exact * (1 - 1e-14)


def test_below_the_runs_delta_at_zero_and_shapes():
    q, sigma = np.array([0.01, 0.2]), np.array([0.8, 2.0])
    low = accounting.tv_lower(q, sigma)
    for i in range(2):
        b = sgd_delta_pld(q[i], sigma[i], 50, np.array([0.0]), 1e-2)
        assert low[i] <= float(np.asarray(b.upper).ravel()[0])
    assert accounting.tv_lower(0.5, np.inf) == 0.0 and accounting.tv_lower(q[:, None], sigma).shape == (2, 2)


def test_zero_where_delta_reaches_the_total_variation_and_a_bracket_below_it(invoke):
    """δ above the run's total variation: the Rényi bound is checked and certifies ε = 0; δ below it: the
    check is skipped and the PLD bracket is positive."""
    for delta in ("0.999", "1e-5"):
        args = ["sgd-epsilon", "--sigma", "1.1", "--sample-rate", "0.004", "--steps", "100", "--delta", delta]
        out = invoke(
            [*args, "--method", "pld", "-f", "csv", "--columns", "epsilon,epsilon_lower,note"]
        ).stdout
        if delta == "0.999":
            assert out.splitlines()[1].startswith("0.0,0.0,")
        else:
            assert float(out.splitlines()[1].split(",")[0]) > 0
