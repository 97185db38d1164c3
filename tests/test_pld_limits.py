"""Reach and refusals of the PLD accountant: the peers' failure cases (the peer measurements and edge-case probe).

* σ = 0, q > 1, δ ∉ (0, 1), steps = 0: clear input errors, never a hang (prv hangs at σ = 0).
* high ε (σ = 0.3, q = 0.01, T = 1e5; prv reaches 11 GB, dp-accounting's PLD takes 9 s): a finite
  bracket, below the RDP value (opacus' exact RDP gives 2204.0; dp-accounting's pessimistic PLD
  1959.1 is an upper bound, so our lower end must not exceed it).
* δ = 1e-20 (dp-accounting's PLD returns inf; RDP gives 6.8127).
* a memory cap below the need: an InputError naming --eps-error with a suggested value.
"""

import json
import math
import time

import pytest

from dpcalc.engine.composition.pld import compose_pld
from dpcalc.engine.dpsgd.pld_accounting import sgd_delta_pld, sgd_epsilon_pld
from dpcalc.errors import InputError


@pytest.mark.parametrize(
    "args,match",
    [
        ((0.01, 0.0, 1000, 1e-5), "--noise-multiplier"),
        ((1.5, 1.0, 1000, 1e-5), "--sample-rate"),
        ((0.0, 1.0, 1000, 1e-5), "--sample-rate"),
        ((0.01, 1.0, 0, 1e-5), "--steps"),
        ((0.01, 1.0, 10.5, 1e-5), "--steps"),
        ((0.01, 1.0, 1000, -1e-5), "--delta"),  # δ = 0 is answered: ε = inf (test_delta_zero.py)
        ((0.01, 1.0, 1000, 1.0), "--delta"),
        ((0.01, float("nan"), 1000, 1e-5), "--noise-multiplier"),
    ],
)
def test_bad_inputs_are_refused_quickly(args, match):
    t = time.perf_counter()
    with pytest.raises(InputError, match=match):
        sgd_epsilon_pld(*args)
    assert time.perf_counter() - t < 1.0


def test_bad_epsilon_and_tolerance():
    with pytest.raises(InputError, match="--epsilon"):
        sgd_delta_pld(0.01, 1.0, 100, -1.0)
    with pytest.raises(InputError, match="--eps-error"):
        sgd_epsilon_pld(0.01, 1.0, 100, 1e-5, eps_error=0.0)


def test_high_epsilon_is_finite_and_fast():
    t = time.perf_counter()
    b = sgd_epsilon_pld(0.01, 0.3, 100_000, 1e-5)
    assert time.perf_counter() - t < 20.0
    lo, est, up = float(b.lower), float(b.estimate), float(b.upper)
    assert math.isfinite(up)
    assert lo <= est <= up <= 2204.0
    assert lo <= 1959.1
    assert up - lo <= 0.005 * est


def test_delta_1e_minus_20():
    b = sgd_epsilon_pld(0.01, 1.0, 1000, 1e-20)
    assert math.isfinite(float(b.upper))
    assert float(b.upper) < 6.8127  # tighter than RDP
    assert float(b.upper) - float(b.lower) <= 0.005 * float(b.estimate)


def test_delta_1e_minus_300_dpsgd():
    b = sgd_epsilon_pld(0.01, 1.0, 100, 1e-300)
    assert math.isfinite(float(b.upper)) and float(b.lower) > 0


def test_memory_cap_refusal_names_the_option():
    with pytest.raises(InputError, match=r"--eps-error: .*relax --eps-error to at least"):
        sgd_epsilon_pld(256 / 60000, 1.1, 14063, 1e-5, memory_cap=4 * 2**20)
    with pytest.raises(InputError, match="--eps-error"):
        compose_pld([("gaussian", {"sigma": 1.0}, 10)], delta=1e-5, eps_error=1e-9)


def test_refusal_suggestion_is_feasible():
    """The suggested tolerance actually runs under the same cap."""
    cap = 16 * 2**20
    with pytest.raises(InputError) as exc:
        sgd_epsilon_pld(256 / 60000, 1.1, 14063, 1e-5, eps_error=1e-3, memory_cap=cap)
    suggested = float(str(exc.value).split("at least ")[1].split(",")[0])
    b = sgd_epsilon_pld(256 / 60000, 1.1, 14063, 1e-5, eps_error=suggested, memory_cap=cap)
    assert float(b.upper) - float(b.lower) <= suggested


def test_pure_dp_release_and_no_privacy():
    """(ε, 0)-DP once: ε(δ) is just below ε (kink of the profile); a dp mechanism with ε = inf is
    never private."""
    b = compose_pld([("dp", {"epsilon": 1.0}, 1)], delta=1e-5)
    assert b.lower <= 1.0 <= b.upper * (1 + 1e-12) + 1e-4
    b = compose_pld([("dp", {"epsilon": float("inf")}, 1)], delta=0.5)
    assert b.lower == math.inf


def test_delta_far_below_double_range():
    """δ(60) of one Gaussian with σ=1 is Q(59.5)-ish ≈ e^{-1775}: the bracket is [0, tiny] and the
    upper end is never rounded to 0."""
    b = compose_pld([("gaussian", {"sigma": 1.0}, 1)], epsilon=60.0)
    assert b.lower == 0.0 and 0.0 < b.upper <= 1e-300


def test_delta_where_epsilon_is_far_below_the_loss():
    """ε = 0 with r = Δ√k/σ = 8.49: δ(0) is the total variation 2Φ(r/2) − 1 (docs/math.md §2.6)."""
    from scipy import special

    r = math.sqrt(18) / 0.5
    tv = 2 * special.ndtr(r / 2) - 1
    b = compose_pld([("gaussian", {"sigma": 0.5}, 18)], epsilon=0.0)
    assert b.lower <= tv <= b.upper


@pytest.mark.parametrize(
    "args,hint",
    [
        (
            [
                "sgd-epsilon",
                "--sigma",
                "1e-300",
                "--sample-rate",
                "0.01",
                "--steps",
                "100",
                "--delta",
                "1e-5",
                "--method",
                "pld",
            ],
            "--method rdp",
        ),
        (
            [
                "sgd-epsilon",
                "--sigma",
                "0.01",
                "--sample-rate",
                "0.01",
                "--steps",
                "100",
                "--delta",
                "1e-5",
                "--method",
                "pld",
            ],
            "--method rdp",
        ),
        (["compose", "gaussian:sigma=1e-300", "--delta", "1e-5", "--method", "pld"], "--method rdp"),
        (
            [
                "sgd-epsilon",
                "--sigma",
                "0.5863",
                "--sample-rate",
                "0.0006997",
                "--steps",
                "2609",
                "--delta",
                "0.01",
                "--method",
                "pld",
                "--eps-error",
                "1e-7",
            ],
            "--eps-error",
        ),
    ],
)
def test_extreme_inputs_are_refused_in_one_line_naming_an_option_of_the_command(invoke, args, hint):
    res = invoke(args)
    assert res.exit_code == 2 and res.stdout == ""
    assert res.stderr.count("\n") == 1 and hint in res.stderr and "internal error" not in res.stderr
    assert "memory cap of" not in res.stderr or "raise the memory cap" not in res.stderr


def test_one_accountant_that_cannot_compute_does_not_sink_the_others(invoke):
    res = invoke(
        [
            "sgd-epsilon",
            "--sigma",
            "0.5863",
            "--sample-rate",
            "0.0006997",
            "--steps",
            "2609",
            "--delta",
            "0.01",
            "--method",
            "all",
            "--eps-error",
            "1e-7",
            "-f",
            "json",
        ]
    )
    assert res.exit_code == 0, res.stderr
    rows = {r["accountant"]: r for r in json.loads(res.stdout)}
    assert rows["rdp"]["epsilon"] is not None and rows["pld"]["epsilon"] is None
    assert rows["pld"]["note"].startswith("does not apply") and "--eps-error" in rows["pld"]["note"]
    assert rows["pld"]["valid"] is None


@pytest.mark.parametrize("spec", ["gaussian:sigma=1e-300", "laplace:scale=1e-300"])
def test_compose_all_survives_extreme_mechanisms(invoke, spec):
    res = invoke(["compose", spec, "--delta", "1e-5", "--method", "all", "-f", "json"])
    assert res.exit_code == 0, res.stderr
    rows = {r["method"]: r for r in json.loads(res.stdout)}
    assert rows["pld"]["epsilon"] is None and "--method rdp" in rows["pld"]["note"]
    assert "GiB" not in rows["pld"]["note"] or len(rows["pld"]["note"]) < 300
