"""The library facade (dpcalc.api) answers what the command line answers, as certified bounds."""

import json

import numpy as np
import pytest

from dpcalc import api
from dpcalc.errors import InputError


def test_sgd_epsilon_matches_the_command_line(invoke):
    res = invoke(
        [
            "sgd-epsilon",
            "--sigma",
            "0.8,1.1",
            "--sample-rate",
            "0.01",
            "--steps",
            "3000",
            "--delta",
            "1e-5",
            "-f",
            "json",
        ]
    )
    cli = [r["epsilon"] for r in json.loads(res.stdout)]
    b = api.sgd_epsilon(0.01, np.array([0.8, 1.1]), 3000, 1e-5)
    assert list(b.value) == cli
    assert b.lower is None and b.estimate is None and np.all(b.alpha > 1)


def test_pld_bounds_are_brackets_with_the_upper_end_as_value():
    b = api.sgd_epsilon(0.01, 1.1, 3000, 1e-5, accountant="pld")
    assert b.lower <= b.estimate <= b.value
    rdp = api.sgd_epsilon(0.01, 1.1, 3000, 1e-5)
    assert b.value <= rdp.value
    c = api.compose(["gaussian:sigma=10,count=100"], delta=1e-5)
    exact = api.compose("gaussian:sigma=10,count=100", delta=1e-5, method="exact")
    assert c.lower <= exact.value <= c.value * (1 + 1e-12)


def test_compose_rdp_is_the_conversion_of_the_summed_curve():
    specs = ["gaussian:sigma=4,count=10", "laplace:scale=20,count=5"]
    curve = api.rdp_curve(specs)
    parts = api.rdp_curve(specs[0]) + api.rdp_curve(api.mechanism(specs[1]))
    assert np.all(curve >= parts) and np.allclose(curve, parts, rtol=1e-14)
    b = api.compose(specs, epsilon=1.0, method="rdp")
    assert 0 < b.value < 1 and b.alpha > 1


def test_inverse_questions_are_conservative():
    sigma = api.sgd_noise_multiplier(0.01, 10_000, 1e-5, 3.0).value
    assert api.sgd_epsilon(0.01, sigma, 10_000, 1e-5).value <= 3.0
    assert api.sgd_epsilon(0.01, sigma / (1 + 2e-4), 10_000, 1e-5).value > 3.0
    steps = api.sgd_steps(0.01, 1.1, 1e-5, 3.0).value
    assert (
        api.sgd_epsilon(0.01, 1.1, steps, 1e-5).value
        <= 3.0
        < api.sgd_epsilon(0.01, 1.1, steps + 1, 1e-5).value
    )


def test_conversions_round_trip():
    alphas = np.array([2.0, 4.0, 8.0, 16.0])
    e = api.epsilon_from_rdp(alphas, 0.01 * alphas, 1e-5)
    d = api.delta_from_rdp(alphas, 0.01 * alphas, e.value)
    assert d.value <= 1e-5 * (1 + 1e-9)
    z = api.rdp_from_dp(10.0, 1.0, 1e-5).value
    assert api.epsilon_from_rdp(np.array([10.0]), np.array([z]), 1e-5).value <= 1.0 + 1e-12


def test_bad_input_raises_input_error():
    with pytest.raises(InputError):
        api.compose("gaussian:sigma=1", delta=1e-5, epsilon=1.0)
    with pytest.raises(InputError):
        api.compose("laplace:scale=1", delta=1e-5, method="exact")
    with pytest.raises(InputError, match="unknown kind"):
        api.mechanism("gausian:sigma=1")


def test_inverse_questions_with_the_tight_accountant():
    from dpcalc import api

    q, delta, target = 0.01, 1e-5, 2.0
    sigma = float(api.sgd_noise_multiplier(q, 1000, delta, target, accountant="pld").value)
    assert api.sgd_epsilon(q, sigma, 1000, delta, accountant="pld").value <= target
    assert sigma < float(api.sgd_noise_multiplier(q, 1000, delta, target).value)
    steps = int(api.sgd_steps(q, 1.0, delta, target, accountant="pld").value)
    assert api.sgd_epsilon(q, 1.0, steps, delta, accountant="pld").value <= target
    assert steps > int(api.sgd_steps(q, 1.0, delta, target).value)
    rate = float(api.sgd_sample_rate(1.0, delta, target, steps=1000, accountant="pld").value)
    assert api.sgd_epsilon(rate, 1.0, 1000, delta, accountant="pld").value <= target
    assert rate > float(api.sgd_sample_rate(1.0, delta, target, steps=1000).value)


def test_tpr_functions_agree_with_the_command_line(invoke):
    """api.sgd_tpr / compose_tpr give the numbers of `--fpr` (the same engine functions), the exact
    Gaussian curve matches a 40-digit Φ(Φ⁻¹(α) + μ), and every route bounds it from above."""
    import mpmath

    fpr = np.array([1e-6, 1e-3])
    exact = api.compose_tpr(["gaussian:sigma=10,count=100"], fpr, method="exact")
    assert exact.alpha == pytest.approx(1.0, rel=1e-12)
    with mpmath.workdps(40):
        truth = [float(mpmath.ncdf(mpmath.sqrt(2) * mpmath.erfinv(2 * mpmath.mpf(a) - 1) + 1)) for a in fpr]
    assert np.all(exact.value >= truth) and np.allclose(exact.value, truth, rtol=1e-9)
    rdp = api.compose_tpr(["gaussian:sigma=10,count=100"], fpr, method="rdp")
    assert np.all(rdp.value >= exact.value)
    pld = api.sgd_tpr(0.004267, 1.1, 1000, 1e-3)
    res = invoke(
        ["sgd-epsilon", "--sigma", "1.1", "--sample-rate", "0.004267", "--steps", "1000"]
        + ["--fpr", "1e-3", "--accountant", "pld", "-f", "json"]
    )
    row = json.loads(res.stdout)[0]
    assert float(pld.value[0]) == row["tpr_upper"] and float(pld.lower[0]) == row["tpr_lower"]
    assert (
        float(pld.lower[0])
        <= float(pld.value[0])
        <= float(api.sgd_tpr(0.004267, 1.1, 1000, 1e-3, accountant="rdp").value[0])
    )
    with pytest.raises(InputError, match="^fpr: "):
        api.sgd_tpr(0.01, 1.0, 100, 0.0)
