"""The inverse DP-SGD searches widen their ranges until the answer is bracketed (docs/math.md §3).

``calibrate_noise`` starts on σ in [1e-3, 1e6] and widens per row up to [1e-150, 1e150]; ``max_steps``
searches T in [1, 2^53].  Answers are checked by recomputing ε (forward accounting) at the answer and one
step past it, and against closed forms: with q = 1 DP-SGD is the Gaussian mechanism composed T times, whose
RDP at order α is αT/(2σ²) (Mironov 2017, arXiv:1702.07476, Table II and Prop. 1) and which is exactly a
Gaussian mechanism of noise σ/√T (Balle & Wang 2018, arXiv:1805.06530, Thm 8 gives its exact (ε, δ)).
"""

import csv
import io
import math
import warnings

import mpmath
import numpy as np
import pytest
from mpmath import mp, mpf

from dpcalc import api
from dpcalc.engine.dpsgd import noise_calibration, step_budget
from dpcalc.engine.dpsgd.accounting import abadi_rho, epsilon
from dpcalc.engine.orders import DEFAULT_ORDERS
from dpcalc.errors import DpcalcWarning

mp.dps = 40  # for the constants computed at import


@pytest.fixture(autouse=True)
def _precision():
    """40 digits for every test here, whatever precision other test modules set globally."""
    with mp.workdps(40):
        yield


# the example of the brief: full batch, 10^7 steps, δ = 1e-15, ε = 0.01 (the old range ended at σ = 1e6)
Q, T, DELTA, TARGET = 1.0, 1e7, 1e-15, 0.01


def _eps(sigma, steps=T, q=Q, delta=DELTA, **kw):
    return float(epsilon(kw.pop("accountant", "rdp"), q, sigma, steps, delta, warn=False, **kw).epsilon)


def _mp_gaussian_delta(eps, s):
    """Exact δ(ε) of the Gaussian mechanism with sensitivity 1 and noise s (Balle & Wang 2018, Thm 8)."""
    eps, s = mpf(eps), mpf(s)
    return mp.ncdf(-eps * s + 1 / (2 * s)) - mp.exp(eps) * mp.ncdf(-eps * s - 1 / (2 * s))


def test_brief_example_is_found_above_the_old_range():
    sigma, e = noise_calibration.calibrate_noise(Q, T, DELTA, TARGET)
    sigma = float(sigma)
    assert 1e6 < sigma < 1e8
    at = _eps(sigma)
    assert at <= TARGET and float(e.epsilon) == at
    assert _eps(sigma * (1 - 1e-3)) > TARGET
    assert _eps(sigma / (1 + 1e-4)) > TARGET  # the search's own tolerance
    # the public API agrees
    assert float(api.sgd_epsilon(Q, sigma, T, DELTA).value) <= TARGET
    assert float(api.sgd_noise_multiplier(Q, T, DELTA, TARGET).value) == sigma
    # the RDP bound is never below the exact Gaussian's δ: at the answer, the composed Gaussian (noise σ/√T)
    # is (target, 1e-15)-DP exactly, and RDP accounting cannot need less noise than the exact analysis
    assert _mp_gaussian_delta(TARGET, sigma / math.sqrt(T)) <= DELTA


def test_full_batch_mironov_matches_the_closed_form_on_the_grid():
    """q = 1, Mironov's conversion: ε = min over the grid of αT/(2σ²) + log(1/δ)/(α−1), so the smallest σ
    meeting ε is min over orders α with log(1/δ)/(α−1) < ε of √(αT / (2(ε − log(1/δ)/(α−1))))."""
    ld = -mp.log(mpf(DELTA))
    best = min(
        mp.sqrt(mpf(a) * T / (2 * (TARGET - ld / (mpf(a) - 1))))
        for a in DEFAULT_ORDERS
        if TARGET > ld / (mpf(a) - 1)
    )
    rtol = 1e-4
    sigma, e = noise_calibration.calibrate_noise(Q, T, DELTA, TARGET, conversion="mironov", rtol=rtol)
    assert float(sigma) > 1e6  # outside the old range
    assert best <= sigma <= best * (1 + rtol) * (1 + 1e-9)
    assert float(e.epsilon) <= TARGET


def test_abadi_closed_form_far_above_the_old_range():
    # ε = ρT + √(4ρT log(1/δ)) solved for ρT, then σ = q/√((1−q)ρ): 6.8e9 here
    q, t, d, target = 0.01, 1e4, 1e-5, 1e-9
    ld = mp.log(1 / mpf(d))
    x = (mp.sqrt(4 * ld + 4 * target) - mp.sqrt(4 * ld)) / 2  # √(ρT)
    exact = q / mp.sqrt((1 - mpf(q)) * x * x / t)
    sigma, e = noise_calibration.calibrate_noise(q, t, d, target, accountant="abadi", rtol=1e-6)
    assert exact <= sigma <= exact * (1 + 2e-6)
    assert float(e.epsilon) <= target


def test_answer_below_the_old_range():
    q, t, d, target = 1e-9, 1.0, 1e-5, 1e7
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DpcalcWarning)  # the best order is the lowest of the grid here
        sigma, e = noise_calibration.calibrate_noise(q, t, d, target)
    sigma = float(sigma)
    assert 1e-150 < sigma < 1e-3
    assert _eps(sigma, t, q, d) <= target and _eps(sigma / (1 + 1e-4), t, q, d) > target


def test_unreachable_target_is_inf_with_a_truthful_warning():
    # Mironov's conversion never certifies ε below log(1/δ)/(α_max − 1) = 0.00345 here (α_max = 10^4)
    with pytest.warns(DpcalcWarning, match=r"no noise multiplier up to 1e\+150.*Mironov"):
        sigma, e = noise_calibration.calibrate_noise(Q, T, DELTA, 0.003, conversion="mironov")
    assert np.isposinf(sigma) and np.isnan(e.epsilon)
    assert _eps(1e150, conversion="mironov") > 0.003  # the warning's claim, at the largest σ evaluated


def test_target_met_at_every_sigma_reports_the_floor():
    # ε ~ 1/σ²: σ = 1e-150 gives ε ~ 5e299 for one full-batch step
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always", DpcalcWarning)
        sigma, e = noise_calibration.calibrate_noise(1.0, 1.0, 1e-5, 1e305)
    assert any("even a noise multiplier of 1e-150" in str(w.message) for w in seen)
    assert float(sigma) == 1e-150 and float(e.epsilon) <= 1e305


def test_rows_inside_above_below_and_impossible_together_match_scalar_calls():
    q = np.array([0.01, 1.0, 1e-9, 1.0])
    t = np.array([1000.0, 1e7, 1.0, 1e7])
    d = np.array([1e-5, 1e-15, 1e-5, 1e-15])
    target = np.array([1.0, 0.01, 1e7, 0.003])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DpcalcWarning)
        sig, e = noise_calibration.calibrate_noise(q, t, d, target, conversion="mironov")
        for i in range(q.size):
            s1, _ = noise_calibration.calibrate_noise(q[i], t[i], d[i], target[i], conversion="mironov")
            assert float(s1) == sig[i] or (np.isinf(s1) and np.isinf(sig[i]))
    assert 1 < sig[0] < 1e6 and sig[1] > 1e6 and sig[2] < 1e-3 and np.isinf(sig[3])
    ok = np.isfinite(sig)
    again = epsilon("rdp", q[ok], sig[ok], t[ok], d[ok], conversion="mironov", warn=False).epsilon
    assert np.all(again <= target[ok])


def test_cli_example_prints_a_finite_noise_multiplier(invoke):
    res = invoke(
        [
            "sgd-epsilon",
            "--target-epsilon",
            "0.01",
            "--sample-rate",
            "1",
            "--steps",
            "10000000",
            "--delta",
            "1e-15",
            "-f",
            "csv",
        ]
    )
    assert res.exit_code == 0, res.stderr
    (row,) = list(csv.DictReader(io.StringIO(res.stdout)))
    sigma = float(row["noise_multiplier"])
    assert math.isfinite(sigma) and sigma > 1e6
    assert _eps(sigma) <= TARGET < _eps(sigma * (1 - 1e-3))
    assert "no noise multiplier" not in res.stderr


# ---------------------------------------------------------------------------------------------- max_steps


def test_max_steps_above_the_old_limit_matches_the_abadi_closed_form():
    """Abadi's closed form inverts exactly: ρT <= (√(log(1/δ) + ε) − √log(1/δ))², ρ = q²/((1−q)σ²);
    2.1e12 steps here, above the old limit of 1e12."""
    q, sigma, d, target = 1e-6, 10.0, 1e-5, 1.0
    ld = mp.log(1 / mpf(d))
    rho = mpf(float(abadi_rho(q, sigma)))  # the engine's ρ (its rounding is not what is tested here)
    exact = int(mp.floor((mp.sqrt(ld + target) - mp.sqrt(ld)) ** 2 / rho))
    assert exact > 1e12
    steps, e = step_budget.max_steps(q, sigma, d, target, accountant="abadi")
    # the closed form's floor, up to the rounding of ε = ρT + √(4ρT log(1/δ)) near the boundary
    assert abs(float(steps) - exact) <= exact * 1e-12 + 1
    assert _eps(sigma, float(steps), q, d, accountant="abadi") <= target


def test_max_steps_rdp_above_the_old_limit():
    q, sigma, d, target = 1e-6, 30.0, 1e-5, 1.0
    steps, e = step_budget.max_steps(q, sigma, d, target)
    steps = float(steps)
    assert 1e12 < steps < 2.0**53
    assert _eps(sigma, steps, q, d) <= target and float(e) <= target
    assert _eps(sigma, math.ceil(steps * (1 + 1e-9)), q, d) > target  # a count 1e-9 larger no longer fits


def test_max_steps_at_the_limit_warns_and_reports_two_to_the_53():
    with pytest.warns(DpcalcWarning, match=r"9007199254740992 steps .*2\^53.*more may fit"):
        steps, e = step_budget.max_steps(1e-9, 100.0, 1e-5, 1.0)
    assert float(steps) == 2.0**53
    assert _eps(100.0, 2.0**53, 1e-9, 1e-5) <= 1.0
    assert mpmath.mpf(float(steps)) == mpf(2) ** 53


def test_boundary_of_a_test_that_levels_off_above_the_target():
    """ε(x) → 2 as x grows, the target 1 is never met: no answer (the secant's line runs beyond double
    range; it used to raise OverflowError)."""
    from dpcalc.engine.pld.search import boundary

    found = boundary(lambda x: (2.0 + 1.0 / x, None), 1.0, 1.0, ok_above=True, lo=1e-6, hi=1e300)
    assert found.x is None
