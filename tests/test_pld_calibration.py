"""Noise calibration with the tight accountant (sgd-epsilon --method pld --target-epsilon)."""

import json
import math

import pytest

from dpcalc.engine.dpsgd.pld_accounting import sgd_epsilon_pld
from dpcalc.engine.dpsgd.pld_calibration import calibrate_noise_pld

CASES = [
    (0.04, math.ceil(90 / 0.04), 1e-5, 8.0),  # Opacus's PRV calibration test: σ = 1.34766
    (256 / 60000, 14063, 1e-5, 3.0),
    (0.1, 1, 1e-5, 1.0),
    (0.01, 100_000, 1e-6, 2.0),
]


@pytest.mark.parametrize("q,steps,delta,target", CASES)
def test_sigma_is_certified_and_tight(q, steps, delta, target):
    rtol = 1e-3
    sigma, (lower, est, upper) = calibrate_noise_pld(q, steps, delta, target, rtol=rtol)
    sigma = float(sigma)
    assert lower <= est <= upper <= target  # certified at σ: the upper end of the bracket meets the target
    assert float(sgd_epsilon_pld(q, sigma, steps, delta).upper) == pytest.approx(float(upper), rel=1e-12)
    below = float(sgd_epsilon_pld(q, sigma / (1 + rtol), steps, delta).upper)
    assert below > target  # and within rtol of the smallest such σ


def test_less_noise_than_rdp_and_than_opacus_prv(invoke):
    args = [
        "sgd-epsilon",
        "--target-epsilon",
        "8",
        "--sample-rate",
        "0.04",
        "--epochs",
        "90",
        "--delta",
        "1e-5",
    ]
    rows = {r["accountant"]: r for r in json.loads(invoke([*args, "--method", "all", "-f", "json"]).stdout)}
    pld, rdp = rows["pld"], rows["rdp"]
    assert pld["noise_multiplier"] < rdp["noise_multiplier"] * 0.96  # 5 % less noise than RDP's answer
    assert pld["noise_multiplier"] <= 1.34766  # Opacus's PRV calibration (an estimate, not certified)
    assert pld["epsilon_lower"] <= pld["epsilon_estimate"] <= pld["epsilon"] <= 8.0
