"""compose --method pld: the PLD bracket wired into compose (issue 5)."""

import csv
import io

import pytest

from dpcalc.engine.mechanisms import gaussian_exact as gaussian


def rows(text):
    return list(csv.DictReader(io.StringIO(text)))


def test_pld_bracket_contains_exact_gaussian(invoke):
    r = invoke(
        ["compose", "gaussian:sigma=10,count=100", "--delta", "1e-5,1e-8", "--method", "all", "-f", "csv"]
    )
    assert r.exit_code == 0, r.stderr
    got = {(row["method"], row["delta"]): row for row in rows(r.stdout)}
    for d in ("1e-05", "1e-08"):
        exact = float(gaussian.eps_gaussian(float(d), 1.0))
        pld = got[("pld", d)]
        # epsilon is the certified upper end; the estimate lies inside the bracket and says so
        assert float(pld["epsilon_lower"]) <= exact <= float(pld["epsilon"])
        assert float(pld["epsilon_lower"]) <= float(pld["epsilon_estimate"]) <= float(pld["epsilon"])
        assert "epsilon_upper" not in pld
        # other methods report no bracket
        assert got[("rdp", d)]["epsilon_lower"] == got[("rdp", d)]["epsilon_estimate"] == ""
        assert float(pld["epsilon"]) <= float(got[("rdp", d)]["epsilon"])


def test_best_picks_the_smallest_upper_bound_and_quiet_prints_it(invoke):
    mix = ["laplace:scale=10,count=100", "subsampled-gaussian:q=0.01,sigma=1,count=1000"]
    r = invoke(["compose", *mix, "--delta", "1e-5", "-f", "csv"])
    (row,) = rows(r.stdout)
    assert row["method"] == "pld"
    q = invoke(["compose", *mix, "--delta", "1e-5", "-q"])
    assert float(q.stdout) == float(row["epsilon"])  # a guarantee, never the estimate
    assert float(row["epsilon_estimate"]) <= float(row["epsilon"])
    every = rows(invoke(["compose", *mix, "--delta", "1e-5", "--method", "all", "-f", "csv"]).stdout)
    uppers = [float(x["epsilon"]) for x in every if x["epsilon"]]
    assert float(row["epsilon"]) == min(uppers)


def test_delta_for_epsilon_bracket(invoke):
    r = invoke(["compose", "gaussian:sigma=2", "--epsilon", "1", "--method", "pld", "-f", "csv"])
    (row,) = rows(r.stdout)
    exact = float(gaussian.delta_gaussian(1.0, 0.5))
    assert float(row["delta_lower"]) <= exact <= float(row["delta"])
    assert float(row["delta_lower"]) <= float(row["delta_estimate"]) <= float(row["delta"])


def test_pld_refusal_is_a_row_in_all_and_an_error_alone(invoke):
    r = invoke(["compose", "zcdp:rho=0.1", "--delta", "1e-5", "--method", "all", "-f", "csv"])
    assert r.exit_code == 0
    pld = [x for x in rows(r.stdout) if x["method"] == "pld"][0]
    assert pld["epsilon"] == "" and pld["note"].startswith("does not apply")
    alone = invoke(["compose", "zcdp:rho=0.1", "--delta", "1e-5", "--method", "pld"])
    assert alone.exit_code == 2 and alone.stdout == "" and "zcdp" in alone.stderr


@pytest.mark.parametrize("bad", ["0", "-1", "abc", "0.1,0.2"])
def test_bad_eps_error(invoke, bad):
    r = invoke(["compose", "gaussian:sigma=2", "--delta", "1e-5", "--method", "pld", "--eps-error", bad])
    assert r.exit_code == 2 and "--eps-error" in r.stderr and r.stdout == ""
