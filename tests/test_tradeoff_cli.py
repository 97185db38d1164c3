"""``--fpr`` / ``--max-tpr`` on compose and sgd-epsilon: the columns, the budget check (exit 3), bad input
(exit 2 naming the option), -q, and the numbers against the exact μ-GDP curve."""

from __future__ import annotations

import csv
import io
import math

import pytest
from scipy import stats

from dpcalc.commands.attack_schema import tradeoff_names


def _rows(result):
    return list(csv.DictReader(io.StringIO(result.stdout)))


def test_compose_gaussian_all_methods_columns_and_exact_values(invoke):
    r = invoke(
        ["compose", "gaussian:sigma=10,count=100", "--fpr", "1e-6,1e-2", "--method", "all", "-f", "csv"]
    )
    assert r.exit_code == 0, r.stderr
    rows = _rows(r)
    assert list(rows[0]) == tradeoff_names("compose")
    by = {(row["method"], float(row["fpr"])): row for row in rows}
    for a in (1e-6, 1e-2):
        ref = stats.norm.cdf(stats.norm.ppf(a) + 1.0)  # μ = Δ/σ·√k = 1
        exact = by[("exact", a)]
        assert float(exact["mu"]) == pytest.approx(1.0, rel=1e-12)
        assert float(exact["tpr_upper"]) == pytest.approx(ref, rel=1e-6) and float(
            exact["tpr_upper"]
        ) >= ref * (1 - 1e-9)
        pld = by[("pld", a)]
        assert float(pld["tpr_lower"]) <= ref * (1 + 1e-9) <= float(pld["tpr_upper"]) * (1 + 1e-9)
        assert float(by[("rdp", a)]["tpr_upper"]) >= ref
    assert "clt-asymptotic" not in {row["method"] for row in rows}  # exact already, and exactly


def test_compose_best_picks_the_smallest_certified_bound_and_q_prints_it(invoke):
    r = invoke(["compose", "gaussian:sigma=5,count=4", "--fpr", "1e-3", "-q"])
    assert r.exit_code == 0, r.stderr
    ref = stats.norm.cdf(stats.norm.ppf(1e-3) + 0.4)
    assert float(r.stdout) == pytest.approx(ref, rel=1e-6) and float(r.stdout) >= ref * (1 - 1e-12)


@pytest.mark.parametrize("limit,code", [("0.01", 3), ("0.5", 0)])
def test_max_tpr_budget(invoke, limit, code):
    r = invoke(
        ["compose", "gaussian:sigma=10,count=100", "--fpr", "1e-3", "--method", "exact", "--max-tpr", limit]
    )
    assert r.exit_code == code
    if code == 3:
        assert "tpr_upper" in r.stderr and "budget exceeded" in r.stderr


def test_clt_rows_are_never_judged(invoke):
    r = invoke(
        [
            "sgd-epsilon",
            "--sigma",
            "1",
            "--sample-rate",
            "0.01",
            "--steps",
            "50",
            "--fpr",
            "0.01",
            "--method",
            "all",
            "-f",
            "csv",
            "--max-tpr",
            "1",
        ]
    )
    assert r.exit_code == 0, r.stderr
    rows = _rows(r)
    assert list(rows[0]) == tradeoff_names("sgd-epsilon")
    clt = [row for row in rows if row["method"] == "clt-asymptotic"]
    # the approximation is never in the bound columns: tpr and tpr_upper stay empty, the value is an estimate
    assert clt and all(
        row["tpr"] == row["tpr_upper"] == "" and row["tpr_estimate"] and row["mu"] for row in clt
    )
    pld = next(row for row in rows if row["method"] == "pld")
    rdp = next(row for row in rows if row["method"] == "rdp")
    # tpr is the certified upper end, as epsilon is: the estimate sits inside the bracket
    assert pld["tpr"] == pld["tpr_upper"] and rdp["tpr"] == rdp["tpr_upper"]
    assert (
        float(pld["tpr_lower"])
        <= float(pld["tpr_estimate"])
        <= float(pld["tpr"])
        <= float(rdp["tpr"]) * (1 + 1e-9)
    )
    assert all(float(row["tpr"] or row["tpr_estimate"]) >= 0.01 for row in rows)


def test_sgd_full_batch_is_exact_gdp(invoke):
    r = invoke(
        [
            "sgd-epsilon",
            "--sigma",
            "2",
            "--sample-rate",
            "1",
            "--steps",
            "10",
            "--fpr",
            "1e-4",
            "--method",
            "all",
            "-f",
            "csv",
        ]
    )
    assert r.exit_code == 0, r.stderr
    exact = next(row for row in _rows(r) if row["method"] == "exact")
    mu = 10**0.5 / 2
    assert float(exact["mu"]) == pytest.approx(mu, rel=1e-12)
    assert float(exact["tpr_upper"]) == pytest.approx(stats.norm.cdf(stats.norm.ppf(1e-4) + mu), rel=1e-6)


@pytest.mark.parametrize("bad", ["0", "1", "-1", "text", "0.5,1.5"])
@pytest.mark.parametrize(
    "cmd",
    [
        ["compose", "gaussian:sigma=3"],
        ["sgd-epsilon", "--sigma", "1", "--sample-rate", "0.01", "--steps", "10"],
    ],
)
def test_bad_fpr_is_exit_2_naming_the_option(invoke, cmd, bad):
    r = invoke([*cmd, "--fpr", bad])
    assert r.exit_code == 2
    assert "--fpr" in r.stderr and "Traceback" not in r.stderr


@pytest.mark.parametrize(
    "args",
    [
        ["compose", "gaussian:sigma=3", "--fpr", "0.1", "--delta", "1e-5"],
        ["compose", "gaussian:sigma=3", "--fpr", "0.1", "--method", "basic"],
        ["compose", "gaussian:sigma=3", "--delta", "1e-5", "--max-tpr", "0.5"],
        [
            "sgd-epsilon",
            "--sigma",
            "1",
            "--sample-rate",
            "0.01",
            "--steps",
            "10",
            "--fpr",
            "0.1",
            "--delta",
            "1e-5",
        ],
    ],
)
def test_usage_errors(invoke, args):
    r = invoke(args)
    assert r.exit_code == 2, r.stdout
    assert "Traceback" not in r.stderr


@pytest.mark.parametrize("alpha", [2.0, 8.0, 32.0])
def test_convert_one_rdp_level_never_below_the_gaussian_it_comes_from(invoke, alpha):
    """A Gaussian with μ = 1 is (α, α/2)-RDP at every α: the bound from one order holds for it, so it is never
    below its exact curve Φ(Φ⁻¹(FPR) + 1), and never below FPR."""
    r = invoke(
        ["convert", "--alpha", str(alpha), "--rdp", str(alpha / 2), "--fpr", "1e-9,1e-4,0.1", "-f", "csv"]
    )
    assert r.exit_code == 0, r.stderr
    rows = _rows(r)
    assert list(rows[0]) == tradeoff_names("convert")
    for row in rows:
        a = float(row["fpr"])
        assert (
            float(row["tpr_upper"]) >= stats.norm.cdf(stats.norm.ppf(a) + 1.0)
            and float(row["tpr_upper"]) >= a
        )


def test_convert_curve_of_a_gaussian_composition_is_close_to_exact(invoke, tmp_path):
    curve = invoke(["compose", "gaussian:sigma=10,count=100", "--rdp-curve", "-f", "csv"])
    assert curve.exit_code == 0
    r = invoke(["convert", "--curve", "-", "--fpr", "1e-3", "-q"], input=curve.stdout)
    assert r.exit_code == 0, r.stderr
    ref = stats.norm.cdf(stats.norm.ppf(1e-3) + 1.0)
    assert ref <= float(r.stdout) <= 1.5 * ref


@pytest.mark.parametrize(
    "args",
    [
        ["convert", "--alpha", "2", "--rdp", "0.5", "--fpr", "0"],
        ["convert", "--alpha", "2", "--rdp", "0.5", "--fpr", "abc"],
        ["convert", "--alpha", "2", "--rdp", "0.5", "--fpr", "0.1", "--delta", "1e-5"],
        ["convert", "--alpha", "2", "--rdp", "0.5", "--fpr", "0.1", "--method", "balle"],
    ],
)
def test_convert_bad_input(invoke, args):
    r = invoke(args)
    assert r.exit_code == 2 and "Traceback" not in r.stderr


def test_compose_pld_of_one_dp_release_brackets_its_exact_curve(invoke):
    """One (1, 1e-5)-DP release: the best test has TPR = min(e·α + δ, 1 − e^(−1)(1 − δ − α)) (Kairouz, Oh &
    Viswanath 2015, Thm 2.1); its δ(ε) never falls below δ, so the ε range is found from a larger δ."""
    r = invoke(["compose", "dp:epsilon=1,delta=1e-5", "--fpr", "1e-3,0.1", "--method", "pld", "-f", "csv"])
    assert r.exit_code == 0, r.stderr
    for row in _rows(r):
        a = float(row["fpr"])
        exact = min(math.e * a + 1e-5, 1 - math.exp(-1) * (1 - 1e-5 - a))
        assert float(row["tpr_lower"]) <= exact <= float(row["tpr_upper"]) <= 1.02 * exact


@pytest.mark.parametrize(
    "args",
    [
        [
            "sgd-epsilon",
            "--sigma",
            "1",
            "--sample-rate",
            "0.01",
            "--steps",
            "100",
            "--fpr",
            "1e-3",
            "--max-epsilon",
            "1",
        ],
        ["convert", "--rdp", "1", "--alpha", "10", "--fpr", "0.01", "--max-delta", "1e-5"],
    ],
)
def test_a_budget_on_a_quantity_not_reported_is_refused_before_any_row(invoke, args):
    """--fpr rows have no epsilon or delta: the budget is bad usage (exit 2), decided before stdout is written."""
    r = invoke([*args, "-f", "csv"])
    assert r.exit_code == 2 and r.stdout == "" and "reports no" in r.stderr


@pytest.mark.parametrize(
    "args",
    [
        ["sgd-epsilon", "--sigma", "1.1", "--sample-rate", "0.01", "--steps", "1000", "--method", "pld"],
        ["compose", "gaussian:sigma=3"],
        ["convert", "--alpha", "2", "--rdp", "0.5"],
    ],
)
def test_fpr_below_the_floor_is_refused_up_front(invoke, args):
    # issue 27: the pld profile at --fpr 1e-300 did not end; rates below 1e-12 are refused everywhere
    from dpcalc.cli.tradeoff import FPR_MIN

    res = invoke([*args, "--fpr", "1e-300"])
    assert res.exit_code == 2 and res.stdout == "" and len(res.stderr.strip().splitlines()) == 1
    assert "--fpr" in res.stderr and f"{FPR_MIN:g}" in res.stderr
    assert invoke([*args, "--fpr", f"{FPR_MIN:g}", "-f", "csv"]).exit_code == 0
