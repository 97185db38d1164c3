"""`dpcalc convert` end to end: formats, sweeps, curves, budgets, and every bad input a user can type."""

import csv
import io
import json
import math

import pytest

from dpcalc.engine.conversion import methods as conversions


def rows(text):
    return list(csv.DictReader(io.StringIO(text)))


def test_point_all_methods_csv(invoke):
    r = invoke(
        ["convert", "--alpha", "10", "--rdp", "0.5", "--delta", "1e-5", "--method", "all", "-f", "csv"]
    )
    assert r.exit_code == 0, r.stderr
    got = {row["method"]: float(row["epsilon"]) for row in rows(r.stdout)}
    assert set(got) == {"optimal", "asoodeh", "balle", "mironov"}
    assert got["mironov"] == pytest.approx(1.7792139405522476, rel=1e-12)
    assert got["balle"] == pytest.approx(1.4180106367839718, rel=1e-12)
    assert got["optimal"] <= got["asoodeh"] <= got["balle"] <= got["mironov"]


def test_sweep_is_cartesian_product(invoke):
    r = invoke(["convert", "--alpha", "2:8:2", "--rdp", "0.1,0.2", "--delta", "1e-5,1e-6", "-f", "csv"])
    assert r.exit_code == 0
    got = rows(r.stdout)
    assert len(got) == 4 * 2 * 2
    expected = conversions.eps_optimal(float(got[5]["alpha"]), float(got[5]["rdp"]), float(got[5]["delta"]))
    assert float(got[5]["epsilon"]) == pytest.approx(float(expected), rel=1e-12)


def test_epsilon_gives_delta_and_quiet(invoke):
    r = invoke(["convert", "--alpha", "10", "--rdp", "0.5", "--epsilon", "1.5", "--method", "balle", "-q"])
    assert r.exit_code == 0
    assert float(r.stdout) == pytest.approx(4.781148664665559e-6, rel=1e-9)


def test_json_output(invoke):
    r = invoke(["convert", "--alpha", "10", "--rdp", "0.5", "--delta", "1e-5", "-f", "json"])
    data = json.loads(r.stdout)
    assert data[0]["method"] == "optimal" and data[0]["epsilon"] > 0


def test_budget_exit_3_still_prints(invoke):
    r = invoke(["convert", "--alpha", "10", "--rdp", "0.5", "--delta", "1e-5", "-q", "--max-epsilon", "1"])
    assert r.exit_code == 3
    assert float(r.stdout) > 1
    assert "budget exceeded" in r.stderr
    ok = invoke(["convert", "--alpha", "10", "--rdp", "0.5", "--delta", "1e-5", "-q", "--max-epsilon", "2"])
    assert ok.exit_code == 0


def test_curve_from_stdin_and_edge_warning(invoke):
    curve = "alpha,rdp\n2,0.1\n4,0.3\n8,0.9\n"
    r = invoke(
        ["convert", "--curve", "-", "--delta", "1e-5", "-f", "csv", "--method", "mironov"], input=curve
    )
    assert r.exit_code == 0
    (row,) = rows(r.stdout)
    best = min(z + math.log(1e5) / (a - 1) for a, z in [(2, 0.1), (4, 0.3), (8, 0.9)])
    assert float(row["epsilon"]) == pytest.approx(best, rel=1e-12)
    assert float(row["alpha"]) == 8.0
    assert "edge" in r.stderr


def test_from_dp(invoke):
    r = invoke(
        ["convert", "--from", "dp", "--alpha", "10", "--epsilon", "1", "--delta", "1e-5", "--method", "all"]
    )
    assert r.exit_code == 0
    got = {row["method"]: float(row["rdp_certifying"]) for row in rows(r.stdout)}
    assert got["mironov"] == 0.0  # ε − log(1/δ)/(α−1) < 0, clipped
    assert got["balle"] == pytest.approx(0.0819893632, rel=1e-9)
    assert got["mironov"] <= got["balle"] <= got["asoodeh"] <= got["optimal"] * (1 + 1e-12)


BAD = [
    (["--alpha", "-1", "--rdp", "0.5", "--delta", "1e-5"], "--alpha"),
    (["--alpha", "0", "--rdp", "0.5", "--delta", "1e-5"], "--alpha"),
    (["--alpha", "1", "--rdp", "0.5", "--delta", "1e-5"], "--alpha"),
    (["--alpha", "nan", "--rdp", "0.5", "--delta", "1e-5"], "--alpha"),
    (["--alpha", "inf", "--rdp", "0.5", "--delta", "1e-5"], "--alpha"),
    (["--alpha", "ten", "--rdp", "0.5", "--delta", "1e-5"], "--alpha"),
    (["--alpha", "10", "--rdp", "-0.5", "--delta", "1e-5"], "--rdp"),
    (["--alpha", "10", "--rdp", "nan", "--delta", "1e-5"], "--rdp"),
    (["--alpha", "10", "--rdp", "0.5", "--delta", "1"], "--delta"),
    (["--alpha", "10", "--rdp", "0.5", "--delta", "1.5"], "--delta"),
    (["--alpha", "10", "--rdp", "0.5", "--delta", "-1e-5"], "--delta"),
    (["--alpha", "10", "--rdp", "0.5", "--epsilon", "-1"], "--epsilon"),
    (["--alpha", "10:2:1", "--rdp", "0.5", "--delta", "1e-5"], "--alpha"),
    (["--alpha", "10", "--rdp", "0.5"], "--delta"),
    (["--alpha", "10", "--rdp", "0.5", "--delta", "1e-5", "--epsilon", "1"], "--delta"),
    (["--rdp", "0.5", "--delta", "1e-5"], "--alpha"),
    (["--alpha", "10", "--delta", "1e-5"], "--rdp"),
    (["--alpha", "10", "--rdp", "0.5", "--delta", "1e-5", "--method", "best"], "--method"),
    (["--alpha", "10", "--rdp", "0.5", "--delta", "1e-5", "--max-epsilon", "1,2"], "--max-epsilon"),
    (["--alpha", "10", "--rdp", "0.5", "--delta", "1e-5", "--plot", "x.gif"], "--plot"),
    (["--from", "dp", "--alpha", "10", "--epsilon", "1"], "--delta"),
    (["--from", "dp", "--alpha", "10", "--epsilon", "1", "--delta", "1e-5", "--rdp", "1"], "--rdp"),
]


@pytest.mark.parametrize("args,culprit", BAD, ids=[" ".join(a) for a, _ in BAD])
def test_bad_input_exits_2_naming_the_option(invoke, args, culprit):
    r = invoke(["convert", *args])
    assert r.exit_code == 2
    assert r.stdout == ""
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error:")
    assert culprit in lines[0]


BAD_CURVES = [
    ("", "empty"),
    ("alpha\n2\n", "missing column 'rdp'"),
    ("alpha,rdp\n", "no rows"),
    ("alpha,rdp\n2,abc\n", "line 2"),
    ("alpha,rdp\n2,0.1\nx,0.2\n", "line 3"),
    ("alpha,rdp\n2,0.1\n2,0.2\n", "duplicate"),
    ("alpha,rdp\n1,0.1\n", "alpha must be"),
    ("alpha,rdp\n2,-0.1\n", "rdp must be"),
    ("alpha,rdp\n2,nan\n", "rdp must be"),
    ("alpha,rdp\n2\n", "columns"),
]


@pytest.mark.parametrize("text,fragment", BAD_CURVES, ids=[t for _, t in BAD_CURVES])
def test_bad_curve_exits_2_naming_the_line(invoke, text, fragment):
    r = invoke(["convert", "--curve", "-", "--delta", "1e-5"], input=text)
    assert r.exit_code == 2
    assert r.stdout == ""
    assert len(r.stderr.strip().splitlines()) == 1
    assert fragment in r.stderr and "--curve" in r.stderr


def test_missing_curve_file_exits_2(invoke, tmp_path):
    r = invoke(["convert", "--curve", str(tmp_path / "nope.csv"), "--delta", "1e-5"])
    assert r.exit_code == 2
    assert "cannot read" in r.stderr and r.stdout == ""
