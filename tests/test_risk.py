"""Membership-inference risk (issue 32): ``--advantage``, ``--prior``, ``--max-advantage``,
``--target-advantage`` on compose, sgd-epsilon and convert, and convert's guarantees (--from dp, gdp, zcdp).
References: 40-digit mpmath for Gaussian compositions (the Bayes attacker's success by its own likelihood-ratio
test, not through the profile), dp-accounting's PLD for DP-SGD, riskcal's published values."""

from __future__ import annotations

import csv
import io
import math

import mpmath as mp
import pytest
from click.testing import CliRunner

from dpcalc.cli import main
from dpcalc.engine import risk

mp.mp.dps = 40


def _run(args):
    return CliRunner().invoke(main, args)


def _rows(args):
    result = _run([*args, "-f", "csv"])
    assert result.exit_code == 0, result.output
    return list(csv.DictReader(io.StringIO(result.stdout)))


def _f(x):
    return float(x) if x not in ("", None) else None


def _mp_advantage(mu):
    """2Φ(μ/2) − 1 at 40 digits."""
    return mp.erf(mp.mpf(mu) / (2 * mp.sqrt(2)))


def _mp_success(mu, prior):
    """The Bayes attacker's success against N(μ, 1) (member) vs N(0, 1): say "member" where π·p(x) >
    (1 − π)·q(x), i.e. x > t = (log((1 − π)/π) + μ²/2)/μ; success = π·P(x > t) + (1 − π)·Q(x <= t)."""
    mu, pi = mp.mpf(mu), mp.mpf(prior)
    t = (mp.log((1 - pi) / pi) + mu**2 / 2) / mu
    return pi * mp.ncdf(mu - t) + (1 - pi) * mp.ncdf(t)


# ------------------------------------------------------------------------------ Gaussian compositions


@pytest.mark.parametrize("sigma,count", [(4.0, 1), (10.0, 100), (1.0, 3), (30.0, 2)])
def test_gaussian_advantage_and_success_are_exact_and_never_below_mpmath(sigma, count):
    priors = [0.01, 0.1, 0.3, 0.5, 0.7, 0.95]
    rows = _rows(
        [
            "compose",
            f"gaussian:sigma={sigma},count={count}",
            "--prior",
            ",".join(map(str, priors)),
            "--method",
            "exact",
        ]
    )
    mu = math.sqrt(count) / sigma
    adv = _mp_advantage(mu)
    assert len(rows) == len(priors)
    for row, p in zip(rows, priors):
        assert _f(row["advantage_lower"]) <= adv <= _f(row["advantage"])
        assert _f(row["advantage"]) <= float(adv) * (1 + 1e-12) + 1e-300
        want = _mp_success(mu, p)
        assert _f(row["success_lower"]) <= want <= _f(row["success"]), (p, row)
        assert _f(row["success"]) - _f(row["success_lower"]) <= 1e-13
    pld = _rows(["compose", f"gaussian:sigma={sigma},count={count}", "--advantage", "--method", "pld"])[0]
    assert _f(pld["advantage_lower"]) <= adv <= _f(pld["advantage"])


def test_engine_formulas_against_mpmath():
    for mu in (0.01, 0.5, 1.0, 2.0, 6.0):
        assert risk.gaussian_advantage(mu) == pytest.approx(float(_mp_advantage(mu)), rel=1e-14)
        assert float(risk.gaussian_delta(0.0, mu)) == pytest.approx(float(_mp_advantage(mu)), rel=1e-9)
    # (ε, δ)-DP's own advantage: (e^ε − 1 + 2δ)/(e^ε + 1)
    assert float(risk.dp_delta(0.0, 1.0, 1e-3)) == pytest.approx(
        (math.e - 1 + 2e-3) / (math.e + 1), rel=1e-14
    )
    assert float(risk.dp_delta(2.0, 1.0, 1e-3)) == 1e-3


# ------------------------------------------------------------------------------ DP-SGD


@pytest.mark.parametrize("q,sigma,steps", [(0.01, 1.1, 1000), (0.05, 2.0, 200)])
def test_dp_sgd_risk_brackets_dp_accountings_profile(q, sigma, steps):
    """Our upper ends are never below dp-accounting's optimistic PLD (interval 1e-4), our lower ends never
    above its pessimistic one: at ε = 0 (the advantage) and at |logit π| (the success)."""
    pld_lib = pytest.importorskip("dp_accounting.pld.privacy_loss_distribution")
    priors = [0.05, 0.5, 0.8]
    rows = _rows(
        ["sgd-epsilon", "--sigma", str(sigma), "--sample-rate", str(q), "--steps", str(steps)]
        + ["--prior", ",".join(map(str, priors)), "--method", "all"]
    )
    by = {(r["method"], r["prior"]): r for r in rows}

    def theirs(pessimistic):
        pl = pld_lib.from_gaussian_mechanism(
            sigma, sampling_prob=q, value_discretization_interval=1e-4, pessimistic_estimate=pessimistic
        ).self_compose(steps)
        return lambda e: pl.get_delta_for_epsilon(e)

    hi, lo = theirs(True), theirs(False)
    for p in priors:
        e = abs(math.log(p / (1 - p)))
        for method in ("pld", "rdp"):
            r = by[(method, str(p))]
            assert _f(r["advantage"]) >= lo(0.0) and _f(r["success"]) >= max(p, 1 - p) + min(p, 1 - p) * lo(e)
        r = by[("pld", str(p))]
        assert _f(r["advantage_lower"]) <= hi(0.0)
        assert _f(r["success_lower"]) <= max(p, 1 - p) + min(p, 1 - p) * hi(e)
        # orderings: guessing <= success <= guessing + min(π, 1 − π)·advantage; pld <= rdp
        for method in ("pld", "rdp"):
            r = by[(method, str(p))]
            base = max(p, 1 - p)
            assert base <= _f(r["success"]) <= base + min(p, 1 - p) * _f(r["advantage"]) + 1e-15
        assert _f(by[("pld", str(p))]["success"]) <= _f(by[("rdp", str(p))]["success"])


def test_risk_is_monotone_in_noise_and_steps():
    def adv(sigma, steps):
        rows = _rows(
            ["sgd-epsilon", "--sigma", str(sigma), "--sample-rate", "0.02", "--steps", str(steps)]
            + ["--advantage", "--method", "pld"]
        )
        return _f(rows[0]["advantage"])

    assert adv(0.8, 300) > adv(1.2, 300) > adv(2.0, 300)
    assert adv(1.2, 100) < adv(1.2, 300) < adv(1.2, 900)


# ------------------------------------------------------------------------------ calibration to risk


@pytest.mark.parametrize("accountant", ["pld", "rdp"])
def test_target_advantage_meets_the_target_and_a_little_less_noise_misses(accountant):
    target = 0.1
    (row,) = _rows(
        ["sgd-epsilon", "--sample-rate", "0.01", "--steps", "1000", "--target-advantage", str(target)]
        + ["--delta", "1e-5", "--method", accountant]
    )
    sigma = _f(row["noise_multiplier"])
    assert _f(row["advantage"]) <= target
    for s, ok in ((sigma, True), (sigma / (1 + 1e-4), False)):
        (again,) = _rows(
            ["sgd-epsilon", "--sigma", repr(s), "--sample-rate", "0.01", "--steps", "1000", "--advantage"]
            + ["--method", accountant]
        )
        assert (_f(again["advantage"]) <= target) is ok
    # the ε of that noise at δ, beside it, is sgd-epsilon's own
    (eps,) = _rows(
        ["sgd-epsilon", "--sigma", repr(sigma), "--sample-rate", "0.01", "--steps", "1000", "--delta", "1e-5"]
        + ["--method", accountant]
    )
    assert _f(row["epsilon"]) == pytest.approx(_f(eps["epsilon"]), rel=1e-9)


@pytest.mark.parametrize("left_out", ["steps", "sample_rate"])
def test_target_advantage_finds_the_most_steps_or_the_largest_rate(left_out):
    """With the length or the rate left out instead: the answer meets the target, one more step (or a rate
    1e-4 larger) misses it, each as --advantage prints it (pld)."""
    given = {"steps": ["--steps", "1000"], "sample_rate": ["--sample-rate", "0.01"]}
    run = ["--sigma", "1.1", *given["sample_rate" if left_out == "steps" else "steps"]]
    (row,) = _rows(["sgd-epsilon", *run, "--target-advantage", "0.1", "--delta", "1e-5", "--method", "pld"])
    assert _f(row["advantage"]) <= 0.1
    x = _f(row[left_out])
    for value, ok in ((x, True), (x + 1 if left_out == "steps" else x * (1 + 1e-4), False)):
        option = "--steps" if left_out == "steps" else "--sample-rate"
        text = str(int(value)) if left_out == "steps" else repr(value)
        (again,) = _rows(["sgd-epsilon", *run, option, text, "--advantage", "--method", "pld"])
        assert (_f(again["advantage"]) <= 0.1) is ok


@pytest.mark.parametrize(
    "run,column,tightest",
    [
        (["--sample-rate", "0.01", "--steps", "1000"], "noise_multiplier", min),
        (["--sample-rate", "0.01", "--sigma", "1.5"], "steps", max),
        (["--steps", "1000", "--sigma", "1.5"], "sample_rate", max),
    ],
)
def test_quiet_prints_what_the_calibration_found(run, column, tightest):
    """-q of a risk calibration prints the input it found (the least noise; the most steps or the largest rate)
    of the tightest accountant — not the advantage it reached."""
    args = ["sgd-epsilon", *run, "--target-advantage", "0.1", "--delta", "1e-5", "--method", "all"]
    rows = [r for r in _rows(args) if r[column]]
    quiet = CliRunner().invoke(main, [*args, "-q"])
    assert quiet.exit_code == 0, quiet.output
    assert _f(quiet.stdout.strip()) == tightest(_f(r[column]) for r in rows)


def test_target_tpr_meets_the_target_and_a_little_less_noise_misses():
    """--target-tpr T --fpr F (pld): the noise found has certified TPR at F within T, 1e-4 less noise does not,
    each as ``--fpr`` prints it."""
    (row,) = _rows(
        ["sgd-epsilon", "--sample-rate", "0.01", "--steps", "1000", "--fpr", "1e-3", "--target-tpr", "0.003"]
        + ["--delta", "1e-5", "--method", "pld"]
    )
    sigma = _f(row["noise_multiplier"])
    assert _f(row["tpr"]) <= 0.003 and row["fpr"] == "0.001" and _f(row["tpr_lower"]) <= _f(row["tpr"])
    for s, ok in ((sigma, True), (sigma / (1 + 1e-4), False)):
        (again,) = _rows(
            ["sgd-epsilon", "--sigma", repr(s), "--sample-rate", "0.01", "--steps", "1000", "--fpr", "1e-3"]
            + ["--method", "pld"]
        )
        assert (_f(again["tpr"]) <= 0.003) is ok


def test_risk_calibrated_noise_is_below_epsilon_calibrated_noise_at_the_same_risk():
    """The guide's example (docs/guide/risk.md): advantage <= 0.1 asked as an ε (the ε whose (ε, δ)-DP implies it) needs about
    3.7 times the noise that calibrating to the advantage itself needs (pld both)."""
    d, target = 1e-5, 0.1
    eps = math.log((1 + target - 2 * d) / (1 - target))
    (by_eps,) = _rows(
        ["sgd-epsilon", "--sample-rate", "0.01", "--steps", "1000", "--target-epsilon", repr(eps)]
        + ["--delta", repr(d), "--method", "pld"]
    )
    (by_risk,) = _rows(
        ["sgd-epsilon", "--sample-rate", "0.01", "--steps", "1000", "--target-advantage", repr(target)]
        + ["--delta", repr(d), "--method", "pld"]
    )
    (implied,) = _rows(["convert", "--from", "dp", "--epsilon", repr(eps), "--delta", repr(d), "--advantage"])
    assert _f(implied["advantage"]) <= target * (1 + 1e-12)
    assert _f(by_risk["noise_multiplier"]) * 3 < _f(by_eps["noise_multiplier"])


# ------------------------------------------------------------------------------ convert and riskcal


def test_riskcal_published_values():
    # riskcal.conversions.get_beta_for_epsilon_delta(1.0, 0.001, 0.8) -> 0.073 (its doctest)
    (row,) = _rows(["convert", "--from", "dp", "--epsilon", "1", "--delta", "1e-3", "--fpr", "0.8"])
    assert round(1 - _f(row["tpr"]), 3) == 0.073
    # riskcal's tests: μ = 2, β at α = 0.1, 0.2, 0.3 is Φ(Φ⁻¹(1 − α) − μ), the advantage Φ(μ/2) − Φ(−μ/2)
    rows = _rows(["convert", "--from", "gdp", "--mu", "2", "--fpr", "0.1,0.2,0.3"])
    for r in rows:
        a = mp.mpf(r["fpr"])
        beta = mp.ncdf(mp.sqrt(2) * mp.erfinv(2 * (1 - a) - 1) - 2)
        assert 1 - _f(r["tpr"]) == pytest.approx(float(beta), rel=1e-12) and 1 - _f(r["tpr"]) <= beta
    (adv,) = _rows(["convert", "--from", "gdp", "--mu", "2", "--advantage"])
    assert _f(adv["advantage"]) >= mp.ncdf(1) - mp.ncdf(-1) >= _f(adv["advantage_lower"])


def test_convert_guarantees_order_and_agree():
    """μ-GDP implies (μ²/2)-zCDP, whose Rényi bound gives a larger advantage; a Rényi level (α, ζ) and its
    curve agree; μ-GDP's ε at δ equals compose's exact Gaussian."""
    g = _f(_rows(["convert", "--from", "gdp", "--mu", "1", "--advantage"])[0]["advantage"])
    z = _f(_rows(["convert", "--from", "zcdp", "--rho", "0.5", "--advantage"])[0]["advantage"])
    assert g < z
    (e,) = _rows(["convert", "--from", "gdp", "--mu", "0.5", "--delta", "1e-5"])
    (c,) = _rows(["compose", "gaussian:sigma=2", "--delta", "1e-5", "--method", "exact"])
    # compose rounds Δ²/σ² up before the same inversion; μ given is taken as it is
    assert _f(e["epsilon"]) <= _f(c["epsilon"]) <= _f(e["epsilon"]) * (1 + 1e-14)


# ------------------------------------------------------------------------------ budgets and refusals


def test_max_advantage_exits_3_and_passes_below():
    args = ["compose", "gaussian:sigma=4", "--advantage", "-q"]
    assert _run([*args, "--max-advantage", "0.05"]).exit_code == 3
    assert _run([*args, "--max-advantage", "0.2"]).exit_code == 0


@pytest.mark.parametrize(
    "args,words",
    [
        (["compose", "gaussian:sigma=4", "--prior", "0"], "--prior"),
        (["compose", "gaussian:sigma=4", "--prior", "1"], "--prior"),
        (["compose", "gaussian:sigma=4", "--advantage", "--fpr", "0.1"], "--fpr and --advantage"),
        (
            ["compose", "gaussian:sigma=4", "--delta", "1e-5", "--max-advantage", "0.1"],
            "--max-advantage needs",
        ),
        (["compose", "gaussian:sigma=4", "--advantage", "--delta", "1e-5"], "replace --delta"),
        (
            ["sgd-epsilon", "--sample-rate", "0.01", "--steps", "10", "--target-advantage", "0.1"],
            "one --delta",
        ),
        (["sgd-epsilon", "--sample-rate", "0.01", "--steps", "10", "--target-tpr", "0.1"], "needs --fpr"),
        (
            [
                "sgd-epsilon",
                "--sigma",
                "1",
                "--sample-rate",
                "0.01",
                "--steps",
                "10",
                "--target-advantage",
                "0.1",
            ]
            + ["--delta", "1e-5"],
            "leave out exactly one",
        ),
        (
            ["sgd-epsilon", "--sample-rate", "0.01", "--steps", "10", "--fpr", "0.2", "--target-tpr", "0.1"],
            "above --fpr",
        ),
        (
            [
                "sgd-epsilon",
                "--sigma",
                "1",
                "--sample-rate",
                "0.01",
                "--steps",
                "10",
                "--advantage",
                "--sampling",
                "shuffle",
            ],
            "--advantage",
        ),
        (["convert", "--from", "gdp", "--advantage"], "--mu"),
        (["convert", "--from", "zcdp", "--rho", "1", "--delta", "1e-5"], "compose zcdp"),
    ],
)
def test_bad_risk_questions_are_one_line_exit_2(args, words):
    result = _run(args)
    assert result.exit_code == 2, result.output
    lines = result.output.strip().split("\n")
    assert len(lines) == 1 and words in lines[0], result.output


def test_priors_are_checked_in_the_engine_too():
    with pytest.raises(ValueError):
        risk.check_priors([0.5, 1.0])
    assert risk.profile_epsilons([0.5, 0.1]) == pytest.approx([0.0, 0.0, math.log(9)], rel=1e-15)


@pytest.mark.parametrize(
    "args,column",
    [
        (
            ["sgd-epsilon", "--sample-rate", "0.01", "--steps", "1000", "--sigma", "1", "--advantage"],
            "advantage",
        ),
        (
            ["sgd-epsilon", "--sample-rate", "0.01", "--steps", "1000", "--sigma", "1", "--prior", "0.5"],
            "success",
        ),
        (["compose", "gaussian:sigma=2,count=10", "--advantage", "--method", "all"], "advantage"),
        (["compose", "gaussian:sigma=2,count=10", "--prior", "0.3", "--method", "all"], "success"),
    ],
)
def test_quiet_takes_one_configuration_whatever_the_methods_report(args, column):
    """-q of a risk question: one configuration (the methods' lower ends and estimates are outputs, not keys),
    its smallest certified upper bound."""
    full = args + (["--method", "all"] if args[0] == "sgd-epsilon" else [])
    rows = [r for r in _rows(full) if r[column]]
    quiet = CliRunner().invoke(main, [*full, "-q"])
    assert quiet.exit_code == 0 and "\t" not in quiet.stdout, quiet.output
    assert _f(quiet.stdout.strip()) == min(_f(r[column]) for r in rows)


def test_compose_target_advantage_of_plain_gaussians_is_the_closed_form():
    """compose --target-advantage on plain Gaussians (exact): advantage erf(μ/(2√2)) = A at μ = √100/σ, so σ* =
    10/(2√2·erfinv(A)); the search's σ is at or above it, within its step."""
    from scipy import special

    target = 0.1
    rows = _rows(["compose", "gaussian:count=100", "--target-advantage", str(target), "--method", "all"])
    by = {r["method"]: r for r in rows}
    exact = 10.0 / (2.0 * math.sqrt(2.0) * float(special.erfinv(target)))
    assert exact <= _f(by["exact"]["sigma"]) <= exact * (1 + 1e-4)
    assert exact * (1 - 1e-4) <= _f(by["pld"]["sigma"]) <= exact * (1 + 2e-4)  # within its discretisation
    assert _f(by["rdp"]["sigma"]) > _f(by["exact"]["sigma"])  # the Rényi profile is looser
    quiet = CliRunner().invoke(
        main, ["compose", "gaussian:count=100", "--target-advantage", str(target), "-q"]
    )
    assert quiet.exit_code == 0 and _f(quiet.stdout.strip()) == _f(by["exact"]["sigma"])


@pytest.mark.parametrize(
    "spec,key,method,less_private",
    [
        ("subsampled-gaussian:q=0.01,count=1000", "sigma", "pld", lambda x: x / (1 + 1e-4)),
        ("subsampled-gaussian:q=0.01,count=1000", "sigma", "rdp", lambda x: x / (1 + 1e-4)),
        ("laplace:count=10", "scale", "pld", lambda x: x / (1 + 1e-4)),
        ("randomized-response:count=10", "epsilon", "pld", lambda x: x * (1 + 1e-4)),
    ],
)
def test_compose_target_advantage_round_trip(spec, key, method, less_private):
    """The value found meets the target as ``compose --advantage`` prints it; one search step to the less
    private side misses it."""
    target = 0.2
    (row,) = _rows(["compose", spec, "--target-advantage", str(target), "--method", method])
    column = {"epsilon": "release_epsilon"}.get(key, key)
    x = _f(row[column])
    assert _f(row["advantage"]) <= target
    for value, ok in ((x, True), (less_private(x), False)):
        (again,) = _rows(["compose", f"{spec},{key}={value!r}", "--advantage", "--method", method])
        assert (_f(again["advantage"]) <= target) is ok


@pytest.mark.parametrize(
    "args,words",
    [
        (["gaussian:sigma=2,count=10", "--target-advantage", "0.1"], "leave it out of a spec"),
        (["gaussian:count=10", "--target-advantage", "0.1", "--advantage"], "without --advantage"),
        (["gaussian:count=10", "--target-advantage", "0.1", "--group-size", "2"], "--group-size"),
        (["gaussian:count=10", "--target-advantage", "0.1", "--delta", "1e-5"], "--delta"),
        (["gaussian:count=10", "laplace:count=2", "--target-advantage", "0.1"], "leaves scale out"),
        (["laplace:count=10", "--target-advantage", "0.1", "--method", "exact"], "plain gaussian"),
    ],
)
def test_compose_target_advantage_refusals_are_one_line(args, words):
    result = CliRunner().invoke(main, ["compose", *args])
    assert result.exit_code == 2
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and words in lines[0], result.output
