"""The inverse questions with the tight accountant: the largest number of steps and the largest sample
rate / batch size within a target (sgd-epsilon --method pld --target-epsilon), the search they share,
and the RDP rate budget beside them."""

import json
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dpcalc.engine.dpsgd import accounting as sgd
from dpcalc.engine.dpsgd.pld_accounting import sgd_epsilon_pld
from dpcalc.engine.dpsgd.pld_calibration import calibrate_noise_pld, max_sample_rate_pld, max_steps_pld
from dpcalc.engine.dpsgd.rate_budget import max_sample_rate
from dpcalc.engine.dpsgd.step_budget import max_steps
from dpcalc.engine.pld.search import boundary
from dpcalc.errors import DpcalcWarning


def up(q, sigma, steps, delta):
    return float(sgd_epsilon_pld(q, sigma, steps, delta).upper)


# ----------------------------------------------------------------------------------------- the search


@pytest.mark.parametrize("power", [0.5, 1.0, 2.0])
@pytest.mark.parametrize("ok_above", [False, True])
@pytest.mark.parametrize("integer", [False, True])
def test_boundary_finds_the_extreme_point_with_few_evaluations(power, ok_above, integer):
    # value = c·x^±power: the exact boundary is known; a small ripple keeps interpolation honest
    target = 3.0
    sign = -1.0 if ok_above else 1.0
    c = target / 1234.5 ** (sign * power)  # the boundary lies near x = 1234.5

    def value(x):
        return c * x ** (sign * power) * (1.0 + 1e-6 * math.sin(x))

    res = boundary(lambda x: (value(x), x), target, 7.0, ok_above=ok_above, lo=1e-9, hi=1e12, integer=integer)
    x = res.x
    assert value(x) <= target
    if integer:
        assert value(x + (-1 if ok_above else 1)) > target
    else:
        assert value(x * (1 + 1e-4) ** (-1 if ok_above else 1)) > target
    assert res.evaluations <= 30


def test_boundary_ends_of_the_range():
    # met everywhere: the favourable end; met nowhere: None
    assert boundary(lambda x: (0.0, None), 1.0, 5.0, ok_above=False, lo=1.0, hi=100.0).x == 100.0
    assert boundary(lambda x: (2.0, None), 1.0, 5.0, ok_above=False, lo=1.0, hi=100.0).x is None
    assert boundary(lambda x: (math.inf, None), 1.0, 5.0, ok_above=True, lo=1.0, hi=100.0).x is None


# ------------------------------------------------------------------------------------ steps with PLD

STEP_CASES = [
    (256 / 60000, 1.1, 1e-5, 3.0),
    (0.01, 1.0, 1e-6, 1.0),
    (0.04, 4.0, 1e-5, 2.0),
    (1.0, 20.0, 1e-5, 1.0),  # full batch: the Gaussian mechanism
]


@pytest.mark.parametrize("q,sigma,delta,target", STEP_CASES)
def test_pld_steps_certified_and_largest(q, sigma, delta, target):
    t, (lower, est, upper) = max_steps_pld(q, sigma, delta, target)
    t = int(t)
    assert t >= 1
    assert lower <= est <= upper <= target
    assert up(q, sigma, t, delta) <= target  # recomputed independently of the search
    assert up(q, sigma, t + 1, delta) > target  # one more step is not certified
    rdp_t, _ = max_steps(q, sigma, delta, target)
    assert t >= int(rdp_t)  # the tight accountant never allows fewer steps than RDP


def test_pld_steps_zero_when_one_step_is_too_much():
    with pytest.warns(DpcalcWarning, match="even one step exceeds the target"):  # and the row says so
        t, (lower, _, upper) = max_steps_pld(0.5, 0.3, 1e-5, 0.1)
    assert float(t) == 0.0 and math.isnan(float(upper))


def test_pld_steps_monotone_in_the_target():
    q, sigma, delta = 0.01, 1.0, 1e-5
    ts = [float(max_steps_pld(q, sigma, delta, e)[0]) for e in (0.5, 1.0, 2.0, 4.0)]
    assert ts == sorted(ts) and ts[0] < ts[-1]


# ------------------------------------------------------------------------------- sample rate with PLD


@pytest.mark.parametrize("sigma,steps,delta,target", [(1.1, 14063, 1e-5, 3.0), (2.0, 1000, 1e-6, 1.0)])
def test_pld_sample_rate_certified_and_largest(sigma, steps, delta, target):
    rtol = 1e-4
    q, (lower, est, upper) = max_sample_rate_pld(sigma, steps, delta, target, rtol=rtol)
    q = float(q)
    assert 0 < q < 1 and upper <= target
    assert up(q, sigma, steps, delta) <= target
    assert up(min(q * (1 + rtol), 1.0), sigma, steps, delta) > target
    rdp_q, _ = max_sample_rate(sigma, steps, delta, target)
    assert q >= float(rdp_q)


def test_pld_batch_size_by_epochs_certified_and_largest():
    sigma, n, epochs, delta, target = 1.1, 60000, 60, 1e-5, 3.0
    q, (_, _, upper) = max_sample_rate_pld(sigma, None, delta, target, dataset_size=n, epochs=epochs)
    b = round(float(q) * n)
    assert float(q) * n == pytest.approx(b, abs=1e-9)

    def steps(b):
        return math.ceil(epochs * n / b)

    assert up(b / n, sigma, steps(b), delta) == pytest.approx(upper, rel=1e-12) and upper <= target
    assert up((b + 1) / n, sigma, steps(b + 1), delta) > target


def test_pld_sample_rate_whole_range_fits():
    q, (_, _, upper) = max_sample_rate_pld(50.0, 10, 1e-5, 1.0)
    assert float(q) == 1.0 and upper <= 1.0


# ------------------------------------------------------------------------------------- RDP rate budget


def test_rdp_batch_size_matches_brute_force():
    # every batch size of a small dataset, forward accounting, largest within the target
    sigma, n, steps, delta, target = 1.0, 2000, 500, 1e-5, 2.0
    b_all = np.arange(1, n + 1, dtype=float)
    eps = sgd.epsilon("rdp", b_all / n, sigma, steps, delta).epsilon
    want = int(b_all[eps <= target].max())
    q, e = max_sample_rate(sigma, steps, delta, target, dataset_size=n)
    assert round(float(q) * n) == want and float(e) <= target


def test_rdp_sample_rate_by_epochs_round_trip():
    sigma, epochs, delta, target, rtol = 1.1, 30, 1e-5, 2.0, 1e-4
    q, e = max_sample_rate(sigma, None, delta, target, epochs=epochs, rtol=rtol)
    q = float(q)

    def eps(q):
        return float(sgd.epsilon("rdp", q, sigma, max(math.ceil(epochs / q), 1), delta).epsilon)

    assert eps(q) <= target == pytest.approx(target) and eps(q * (1 + rtol)) > target


@settings(max_examples=6, deadline=None)
@given(
    q=st.floats(1e-3, 0.05),
    sigma=st.floats(0.8, 3.0),
    target=st.floats(0.5, 8.0),
)
def test_pld_answers_are_never_worse_than_rdp(q, sigma, target):
    delta = 1e-5
    t_pld, _ = max_steps_pld(q, sigma, delta, target)
    t_rdp, _ = max_steps(q, sigma, delta, target)
    assert float(t_pld) >= float(t_rdp)
    steps = max(int(t_rdp), 1)
    s_pld, _ = calibrate_noise_pld(q, steps, delta, target, rtol=1e-3)
    from dpcalc.engine.dpsgd.noise_calibration import calibrate_noise

    s_rdp, _ = calibrate_noise(q, steps, delta, target, rtol=1e-3)
    assert float(s_pld) <= float(s_rdp) * (1 + 1e-3)


# ------------------------------------------------------------------------------------------------ CLI


def test_cli_steps_and_whole_epochs_with_pld(invoke):
    args = ["sgd-epsilon", "--target-epsilon", "3", "--sigma", "1.1", "--batch-size", "256"]
    args += ["--dataset-size", "60000", "--delta", "1e-5", "--method", "all", "-f", "json"]
    res = invoke(args)
    assert res.exit_code == 0, res.stderr
    rows = {r["accountant"]: r for r in json.loads(res.stdout)}
    pld, rdp = rows["pld"], rows["rdp"]
    assert pld["steps"] > rdp["steps"]
    assert pld["epsilon_lower"] <= pld["epsilon_estimate"] <= pld["epsilon"] <= 3.0
    # whole epochs within the steps: ceil(E·N/B) <= steps < ceil((E+1)·N/B)
    e = pld["epochs"]
    assert math.ceil(e * 60000 / 256) <= pld["steps"] < math.ceil((e + 1) * 60000 / 256)


def test_cli_batch_size_is_solved_when_left_out(invoke):
    args = ["sgd-epsilon", "--target-epsilon", "3", "--sigma", "1.1", "--dataset-size", "60000"]
    args += ["--epochs", "60", "--delta", "1e-5", "--method", "all", "-f", "json"]
    res = invoke(args)
    assert res.exit_code == 0, res.stderr
    rows = {r["accountant"]: r for r in json.loads(res.stdout)}
    for name in ("rdp", "pld"):
        r = rows[name]
        assert r["sample_rate"] == r["batch_size"] / 60000
        assert r["steps"] == math.ceil(60 * 60000 / r["batch_size"])
        assert r["epsilon"] <= 3.0
    assert rows["pld"]["batch_size"] > rows["rdp"]["batch_size"]
    q = invoke([*args[:-4], "--method", "pld", "-q"])
    assert q.stdout.strip() == str(rows["pld"]["batch_size"])


def test_cli_leave_out_exactly_one(invoke):
    base = ["sgd-epsilon", "--target-epsilon", "3", "--delta", "1e-5"]
    for extra in (["--steps", "100"], ["--sigma", "1", "--sample-rate", "0.01", "--steps", "10"]):
        res = invoke([*base, *extra])
        assert res.exit_code == 2 and "leave out exactly one" in res.stderr and res.stdout == ""


# ------------------------------------------------------------------------------ compose --method pld


def test_compose_pld_calibrates_the_spec_that_left_sigma_out(invoke):
    from dpcalc.engine.composition.pld import compose_pld

    res = invoke(
        [
            "compose",
            "subsampled-gaussian:q=0.01,count=1000",
            "laplace:scale=10",
            "--epsilon",
            "2",
            "--delta",
            "1e-5",
            "--method",
            "pld",
            "-f",
            "json",
        ]
    )
    assert res.exit_code == 0, res.stderr
    (row,) = json.loads(res.stdout)
    sigma = row["sigma"]

    def upper(s):
        specs = [("subsampled-gaussian", {"q": 0.01, "sigma": s}, 1000), ("laplace", {"scale": 10.0}, 1)]
        return float(compose_pld(specs, delta=1e-5).upper)

    assert upper(sigma) <= 2.0 < upper(sigma / (1 + 1e-4))
    assert row["epsilon_lower"] <= row["epsilon_estimate"] <= 2.0


def test_compose_pld_calibration_of_gaussians_is_at_most_a_hair_above_the_exact_sigma(invoke):
    args = ["compose", "gaussian:count=10", "--epsilon", "1", "--delta", "1e-5", "-f", "json"]
    exact = json.loads(invoke(args).stdout)[0]["sigma"]
    pld = json.loads(invoke([*args, "--method", "pld"]).stdout)[0]["sigma"]
    # the exact profile is the truth; a certified upper end can only ask for more noise, and little more
    assert exact <= pld <= exact * 1.001


def test_compose_calibration_needs_a_spec_without_sigma(invoke):
    res = invoke(["compose", "gaussian:sigma=1", "--epsilon", "1", "--delta", "1e-5", "--method", "pld"])
    assert res.exit_code == 2 and "leave it out of a spec" in res.stderr and res.stdout == ""


@settings(max_examples=5, deadline=None)
@given(
    q=st.floats(2e-3, 0.03),
    steps=st.integers(100, 5000),
    target=st.floats(0.5, 6.0),
)
def test_pld_sigma_monotone_in_target_rate_and_steps(q, steps, target):
    # more privacy asked (a smaller target), a larger rate or more steps never need less noise; the
    # moves are large beside the search's tolerance (1e-3) and the bracket's jitter
    delta, rtol = 1e-5, 1e-3

    def sigma(q, steps, target):
        return float(calibrate_noise_pld(q, steps, delta, target, rtol=rtol)[0])

    base = sigma(q, steps, target)
    assert sigma(q, steps, target / 1.5) >= base
    assert sigma(q * 1.5, steps, target) >= base
    assert sigma(q, steps * 2, target) >= base
