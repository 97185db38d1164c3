"""ε at δ = 0 (docs/math.md §2.7): the largest privacy loss, Σ ε_i where every release's loss is bounded,
and ∞ (with the reason) where one is not; δ(ε) = 0 from that sum on.  References are independent: exact
rational sums, mpmath (log-odds, quadrature of the Laplace pair's hockey-stick divergence) and brute-force
enumeration of composed randomized response."""

import csv
import io
import json
import math
from fractions import Fraction

import mpmath
import pytest

from dpcalc.engine.composition.pld import compose_pld
from dpcalc.engine.dpsgd.pld_accounting import sgd_epsilon_pld
from dpcalc.engine.mechanisms.catalogue import CATALOGUE, max_loss
from dpcalc.input.spec import parse_mechanism, parse_mechanisms

mpmath.mp.dps = 50

CERTIFYING = ("pld", "rdp", "optimal", "advanced", "basic")


def _rows(res):
    assert res.exit_code == 0, res.stderr
    return list(csv.DictReader(io.StringIO(res.stdout)))


def _by_method(invoke, specs, *args):
    rows = _rows(invoke(["compose", *specs, *args, "--method", "all", "-f", "csv"]))
    return {r["method"]: r for r in rows}


def _smallest_double_at_least(x: Fraction) -> float:
    f = float(x)
    return f if Fraction(f) >= x else math.nextafter(f, math.inf)


# ------------------------------------------------------------------------------ bounded: Σ ε_i, exactly


@pytest.mark.parametrize(
    "specs,exact",
    [
        (["laplace:scale=1,count=3"], Fraction(3)),
        (["laplace:scale=3"], Fraction(1, 3)),  # not a double: the answer is the next double up
        (
            ["laplace:scale=4,sensitivity=2,count=5", "rr:epsilon=0.25,count=4", "dp:epsilon=0.1,count=10"],
            Fraction(9, 2),
        ),
        (["dp:epsilon=0.7,count=7"], Fraction(49, 10)),
        (["rr:eps=0.5,count=20"], Fraction(10)),
    ],
)
def test_bounded_specs_give_the_exact_sum_of_their_pure_epsilons(invoke, specs, exact):
    by = _by_method(invoke, specs, "--delta", "0")
    want = _smallest_double_at_least(exact)
    for m in ("pld", "rdp", "advanced"):
        assert float(by[m]["epsilon"]) == want, (m, by[m])
    # basic keeps its own rounding (Σ rounded up by two ulps): valid, and within 1e-15 of the sum
    assert exact <= Fraction(float(by["basic"]["epsilon"])) <= exact * Fraction(1 + 1e-15)
    if by["optimal"]["epsilon"]:  # identical releases only: kε
        assert float(by["optimal"]["epsilon"]) == want
    # the pld bracket is the sum itself; rdp names the order α = ∞ that gives it
    assert Fraction(float(by["pld"]["epsilon_lower"])) <= exact <= Fraction(float(by["pld"]["epsilon"]))
    assert by["rdp"]["alpha"] == "inf" and "α = ∞" in by["rdp"]["note"]
    best = _rows(invoke(["compose", *specs, "--delta", "0", "-f", "csv"]))
    assert len(best) == 1 and float(best[0]["epsilon"]) == want


def test_randomized_response_given_by_p_is_bracketed_around_its_log_odds(invoke):
    """p = 0.75: ε = log 3 is not a double; the bracket holds 2·log 3 and is a few ulps wide."""
    by = _by_method(invoke, ["rr:p=0.75,count=2"], "--delta", "0")
    truth = 2 * mpmath.log(3)
    lower, upper = mpmath.mpf(by["pld"]["epsilon_lower"]), mpmath.mpf(by["pld"]["epsilon"])
    assert lower <= truth <= upper and upper - lower < 1e-13
    for m in ("rdp", "optimal", "advanced", "basic"):
        v = mpmath.mpf(by[m]["epsilon"])
        assert truth <= v <= truth * (1 + 1e-13), m


def test_max_loss_of_randomized_response_contains_the_log_odds():
    for p in (0.51, 0.75, 0.9, 0.999, 0.5000001):
        (lo, hi), _ = CATALOGUE["randomized-response"].max_loss({"p": p})
        truth = mpmath.log(mpmath.mpf(p) / (1 - mpmath.mpf(p)))
        assert mpmath.mpf(lo.numerator) / lo.denominator <= truth <= mpmath.mpf(hi.numerator) / hi.denominator
    # ε as given is exact, whether read from a spec or a bare parameter dict
    assert CATALOGUE["randomized-response"].max_loss(parse_mechanism("rr:epsilon=1").params)[0] == (1, 1)
    assert CATALOGUE["randomized-response"].max_loss({"epsilon": 0.1})[0] == (Fraction(1, 10),) * 2


def test_zero_zcdp_has_zero_loss_and_positive_zcdp_has_none():
    assert max_loss(parse_mechanisms(["zcdp:rho=0,count=9"]))[0] == 0
    total, reason = max_loss(parse_mechanisms(["laplace:scale=1", "zcdp:rho=0.1"]))
    assert total is None and "zcdp:rho=0.1" in reason and "unbounded" in reason


def test_randomized_response_sum_is_the_largest_loss_brute_force():
    """k releases of randomized response, enumerated: δ(ε) = 0 exactly from kε on, and > 0 just below
    it (so kε is the largest loss, not merely a bound), against the PLD bracket and its δ = 0 path."""
    eps, k = mpmath.mpf(1), 4
    p = mpmath.e / (1 + mpmath.e)

    def delta(e):
        total = mpmath.mpf(0)
        for j in range(k + 1):  # j lies: loss (k − 2j)ε with probability C(k, j) p^(k−j) (1−p)^j
            loss = (k - 2 * j) * eps
            if loss > e:
                total += mpmath.binomial(k, j) * p ** (k - j) * (1 - p) ** j * (1 - mpmath.exp(e - loss))
        return total

    assert delta(k * eps) == 0 and delta(k * eps - mpmath.mpf("1e-9")) > 0
    b = compose_pld([("randomized-response", {"epsilon": 1.0}, k)], delta=0.0)
    assert b.lower == b.upper == 4.0
    d = compose_pld([("randomized-response", {"epsilon": 1.0}, k)], epsilon=[4.0, 3.9])
    assert d.upper[0] == 0 and d.lower[1] <= delta(mpmath.mpf(3.9)) <= d.upper[1]


# ------------------------------------------------------------------------------ δ at ε: 0 from Σ ε on


def test_delta_is_zero_from_the_sum_on(invoke):
    by = _by_method(invoke, ["laplace:scale=1,count=3"], "--epsilon", "3")
    for m in CERTIFYING:
        assert float(by[m]["delta"]) == 0.0, (m, by[m])
    assert float(by["pld"]["delta_lower"]) == 0.0 and "δ = 0" in by["pld"]["note"]
    assert by["rdp"]["alpha"] == "inf"
    assert float(_rows(invoke(["compose", "laplace:scale=1,count=3", "--epsilon", "3"]))[0]["delta"]) == 0.0


def _laplace_delta(e, e0):
    """δ(ε) of Lap(e0, 1) against Lap(0, 1) by mpmath quadrature of (p − e^ε q)_+ (no closed form used)."""

    def p(x):
        return mpmath.exp(-abs(x - e0)) / 2

    def q(x):
        return mpmath.exp(-abs(x)) / 2

    def f(x):
        return max(p(x) - mpmath.exp(e) * q(x), 0)

    return mpmath.quad(f, [-mpmath.inf, 0, e0, mpmath.inf])


def test_delta_just_below_the_sum_is_positive_and_bounded_soundly(invoke):
    """One Laplace release with Δ/b = 1: δ(0.9) > 0 by quadrature, and every method's δ is at least it;
    δ(1) = 0 by quadrature too."""
    with mpmath.workdps(50):
        assert _laplace_delta(mpmath.mpf(1), 1) < mpmath.mpf("1e-40")
        truth = _laplace_delta(mpmath.mpf("0.9"), 1)
    assert truth > 0.04
    by = _by_method(invoke, ["laplace:scale=1"], "--epsilon", "0.9")
    for m in ("pld", "rdp", "optimal", "advanced"):
        assert float(by[m]["delta"]) >= truth, m
    assert by["basic"]["delta"] == "" and "needs --epsilon" in by["basic"]["note"]


# ------------------------------------------------------------------------------ unbounded: inf + why


@pytest.mark.parametrize(
    "specs,why",
    [
        (["gaussian:sigma=10,count=100"], "the Gaussian's privacy loss is unbounded"),
        (
            ["sgm:q=0.01,sigma=1,count=10", "laplace:scale=1"],
            "the subsampled Gaussian's privacy loss is unbounded",
        ),
        (["sgm:q=0.01,sigma=1,sampling=fixed-size"], "the subsampled Gaussian's privacy loss is unbounded"),
        (["zcdp:rho=0.5"], "ρ-zCDP with ρ > 0 allows an unbounded privacy loss"),
        (["dp:epsilon=1,delta=1e-6,count=3"], "infinite privacy loss with probability δ"),
    ],
)
def test_unbounded_loss_gives_inf_with_a_note(invoke, specs, why):
    by = _by_method(invoke, specs, "--delta", "0")
    answered = [m for m, r in by.items() if not r["note"].startswith("does not apply")]
    assert answered  # some method answers, and every one that does says inf and why
    for m in answered:
        assert by[m]["epsilon"] == "inf", (m, by[m])
        assert why in by[m]["note"] and "no finite ε at δ = 0" in by[m]["note"]
    best = invoke(["compose", *specs, "--delta", "0", "-f", "json"])
    assert best.exit_code == 0, best.stderr
    (row,) = json.loads(best.stdout)
    assert row["epsilon"] == "inf" and why in row["note"]


def test_json_writes_inf_as_a_string_and_csv_as_inf(invoke):
    res = invoke(["compose", "gaussian:sigma=1", "--delta", "0", "--method", "pld", "-f", "json"])
    (row,) = json.loads(res.stdout)
    assert row["epsilon"] == row["epsilon_lower"] == row["epsilon_estimate"] == "inf"
    res = invoke(["compose", "gaussian:sigma=1", "--delta", "0", "-q"])
    assert res.exit_code == 0 and res.stdout.strip() == "inf"


def test_a_sweep_mixes_zero_and_positive_delta(invoke):
    rows = _rows(
        invoke(["compose", "gaussian:sigma=2", "--delta", "0,1e-5", "--method", "exact", "-f", "csv"])
    )
    assert rows[0]["epsilon"] == "inf" and 0 < float(rows[1]["epsilon"]) < math.inf
    rows = _rows(
        invoke(["compose", "laplace:scale=2", "--delta", "0,1e-5", "--method", "optimal", "-f", "csv"])
    )
    assert float(rows[0]["epsilon"]) == 0.5 and float(rows[1]["epsilon"]) <= 0.5


# ------------------------------------------------------------------------------ budgets


@pytest.mark.parametrize(
    "args",
    [
        ["compose", "gaussian:sigma=10,count=100", "--delta", "0"],
        ["compose", "dp:epsilon=0.1,delta=1e-9", "--delta", "0", "--method", "basic"],
        ["sgd-epsilon", "--sigma", "1.1", "--sample-rate", "0.01", "--steps", "100", "--delta", "0"],
        ["convert", "--alpha", "10", "--rdp", "0.01", "--delta", "0"],
    ],
)
def test_max_epsilon_treats_inf_as_exceeding(invoke, args):
    res = invoke([*args, "--max-epsilon", "1e300", "-f", "csv"])
    assert res.exit_code == 3 and "budget exceeded: epsilon = inf" in res.stderr


def test_max_epsilon_at_the_exact_sum(invoke):
    assert (
        invoke(["compose", "laplace:scale=1,count=3", "--delta", "0", "--max-epsilon", "3", "-q"]).exit_code
        == 0
    )
    assert (
        invoke(
            ["compose", "laplace:scale=1,count=3", "--delta", "0", "--max-epsilon", "2.99", "-q"]
        ).exit_code
        == 3
    )


# ------------------------------------------------------------------------------ other commands


def test_sgd_epsilon_at_zero_delta_is_inf_for_every_accountant(invoke):
    res = invoke(
        [
            "sgd-epsilon",
            "--sigma",
            "4",
            "--sample-rate",
            "0.04",
            "--steps",
            "100",
            "--delta",
            "0,1e-5",
            "--method",
            "all",
            "-f",
            "csv",
        ]
    )
    rows = _rows(res)
    zero = [r for r in rows if float(r["delta"]) == 0]
    assert {r["accountant"] for r in zero} == {"rdp", "pld", "abadi"}
    assert all(r["epsilon"] == "inf" for r in zero)
    assert all(math.isfinite(float(r["epsilon"])) for r in rows if float(r["delta"]) > 0)
    assert "privacy loss is unbounded" in res.stderr and "δ = 0" in res.stderr
    fixed = _rows(
        invoke(
            [
                "sgd-epsilon",
                "--sigma",
                "2",
                "--batch-size",
                "512",
                "--dataset-size",
                "50000",
                "--steps",
                "10",
                "--delta",
                "0",
                "--sampling",
                "fixed-size",
                "-f",
                "csv",
            ]
        )
    )
    assert fixed[0]["epsilon"] == "inf"


def test_sgd_pld_accountant_at_zero_delta():
    b = sgd_epsilon_pld(0.01, 1.0, 100, [0.0, 1e-5])
    assert b.lower[0] == b.upper[0] == math.inf and math.isfinite(b.upper[1])


def test_sgd_epsilon_refuses_a_target_at_zero_delta(invoke):
    res = invoke(
        ["sgd-epsilon", "--target-epsilon", "3", "--sample-rate", "0.01", "--steps", "100", "--delta", "0"]
    )
    assert res.exit_code == 2 and res.stdout == ""
    assert "--delta" in res.stderr and "unbounded" in res.stderr and len(res.stderr.strip().splitlines()) == 1


def test_convert_at_zero_delta(invoke):
    res = invoke(
        ["convert", "--alpha", "10", "--rdp", "0.5,0", "--delta", "0", "--method", "all", "-f", "csv"]
    )
    rows = _rows(res)
    assert {r["epsilon"] for r in rows if float(r["rdp"]) > 0} == {"inf"}
    assert {float(r["epsilon"]) for r in rows if float(r["rdp"]) == 0} == {0.0}  # ζ = 0: P = Q
    assert "Note: δ = 0" in res.stderr
    res = invoke(
        ["convert", "--curve", "-", "--delta", "0", "-f", "json"], input="alpha,rdp\n2,0.1\n32,0.4\n"
    )
    (row,) = json.loads(res.stdout)
    assert row["epsilon"] == "inf"
    rows = _rows(
        invoke(
            [
                "convert",
                "--from",
                "dp",
                "--alpha",
                "10",
                "--epsilon",
                "1",
                "--delta",
                "0",
                "--method",
                "all",
                "-f",
                "csv",
            ]
        )
    )
    assert {float(r["rdp_certifying"]) for r in rows} == {0.0}


@pytest.mark.parametrize(
    "args",
    [
        ["iterate", "--sigma", "5", "--lipschitz", "1", "--lr", "0.05", "--steps", "100"],
        [
            "langevin",
            "--sigma",
            "0.02",
            "--sensitivity",
            "4",
            "--lr",
            "0.02",
            "--strong-convexity",
            "1",
            "--smoothness",
            "1",
            "--dataset-size",
            "5000",
            "--steps",
            "100",
        ],
        ["odometer", "--event", "gaussian:sigma=10"],
    ],
)
def test_commands_with_renyi_bounds_refuse_zero_delta_and_say_why(invoke, args):
    res = invoke([*args, "--delta", "0"])
    assert res.exit_code == 2 and res.stdout == ""
    assert "'--delta'" in res.stderr and "δ = 0" in res.stderr
    assert len(res.stderr.strip().splitlines()) == 1


def test_calibration_refuses_zero_delta(invoke):
    res = invoke(["compose", "gaussian:count=10", "--epsilon", "1", "--delta", "0"])
    assert res.exit_code == 2 and "'--delta'" in res.stderr and "unbounded" in res.stderr


# ------------------------------------------------------------------------------ still refused


@pytest.mark.parametrize("delta", ["-1e-5", "1", "1.5", "-0.0001,0"])
@pytest.mark.parametrize(
    "args",
    [
        ["compose", "laplace:scale=1"],
        ["sgd-epsilon", "--sigma", "1", "--sample-rate", "0.01", "--steps", "10"],
        ["convert", "--alpha", "10", "--rdp", "0.5"],
    ],
)
def test_delta_outside_zero_one_is_still_refused(invoke, args, delta):
    res = invoke([*args, "--delta", delta])
    assert res.exit_code == 2 and res.stdout == ""
    assert "'--delta'" in res.stderr and "must be in [0, 1)" in res.stderr
