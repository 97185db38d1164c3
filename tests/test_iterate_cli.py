"""``dpcalc iterate`` end to end (docs/math.md §4 table through the CLI, errors, contract)."""

from __future__ import annotations

import csv
import io
import subprocess
import sys

import pytest
from click.testing import CliRunner

from dpcalc.cli import main

BASE = ["iterate", "--sigma", "5", "--lipschitz", "1", "--lr", "0.05", "--steps", "100"]


def _rows(args):
    res = CliRunner().invoke(main, [*args, "-f", "csv"])
    assert res.exit_code == 0, res.stderr
    return list(csv.DictReader(io.StringIO(res.stdout))), res


def test_table_43_through_the_cli():
    rows, _ = _rows([*BASE, "--delta", "1e-5"])
    by = {r["method"]: r for r in rows}
    assert float(by["asoodeh"]["epsilon"]) == pytest.approx(1.384608, rel=1e-6)
    assert float(by["feldman"]["epsilon"]) == pytest.approx(2.530711, rel=1e-6)
    assert float(by["feldman"]["alpha"]) == pytest.approx(4.070714214, rel=1e-9)
    rows, _ = _rows([*BASE, "--epsilon", "1", "--method", "asoodeh"])
    assert float(rows[0]["delta"]) == pytest.approx(2.892540e-04, rel=1e-6)
    rows, _ = _rows([*BASE, "--delta", "1e-5", "--method", "feldman", "--conversion", "mironov"])
    assert float(rows[0]["epsilon"]) == pytest.approx(3.779260, rel=1e-6)


def test_alpha_beyond_alpha_star_gives_a_reason_not_a_number():
    rows, _ = _rows([*BASE, "--alpha", "2,5", "--method", "feldman"])
    assert rows[0]["rdp"] != "" and rows[0]["note"] == ""
    assert rows[1]["rdp"] == ""
    assert "α*" in rows[1]["note"]


def test_asoodeh_cannot_answer_alpha_and_says_so():
    rows, _ = _rows([*BASE, "--alpha", "2", "--method", "asoodeh"])
    assert rows[0]["rdp"] == "" and "no Rényi bound" in rows[0]["note"]


def test_vacuous_delta_clipped_with_a_note():
    rows, res = _rows(
        [
            "iterate",
            "--sigma",
            "0.01",
            "--lipschitz",
            "1",
            "--lr",
            "0.1",
            "--steps",
            "2",
            "--epsilon",
            "0.1",
            "--method",
            "asoodeh",
        ]
    )
    assert float(rows[0]["delta"]) == 1.0
    assert "vacuous" in rows[0]["note"]
    assert "vacuous" in res.stderr


def test_sweep_over_steps_gives_a_decreasing_curve():
    rows, _ = _rows([*BASE[:-1], "10:100000:x10", "--delta", "1e-5", "--method", "asoodeh"])
    eps = [float(r["epsilon"]) for r in rows]
    assert len(eps) == 5
    assert all(b < a for a, b in zip(eps, eps[1:]))


def test_T1_warns_and_is_not_zero():
    res = CliRunner().invoke(main, [*BASE[:-1], "1", "--alpha", "2", "--method", "feldman", "-f", "csv"])
    assert res.exit_code == 0
    assert "T < 37" in res.stderr
    row = list(csv.DictReader(io.StringIO(res.stdout)))[0]
    assert float(row["rdp"]) >= 2 * 2 / 25  # one Gaussian step: 2αL²/σ²


@pytest.mark.parametrize(
    "args,needle",
    [
        ([*BASE], "or --alpha with one of the others"),  # --alpha beside --delta is a row with both now
        ([*BASE, "--delta", "1e-5", "--epsilon", "2"], "exactly one of"),
        ([*BASE, "--delta", "1.5"], "--delta"),
        (
            [
                "iterate",
                "--sigma",
                "0",
                "--lipschitz",
                "1",
                "--lr",
                "0.1",
                "--steps",
                "10",
                "--delta",
                "1e-5",
            ],
            "--sigma",
        ),
        ([*BASE[:-1], "0", "--delta", "1e-5"], "--steps"),
        ([*BASE, "--delta", "1e-5", "--smoothness", "100"], "η <= 2/β"),
        ([*BASE, "--alpha", "1"], "--alpha"),
    ],
)
def test_bad_input_exits_2_naming_it(args, needle):
    res = CliRunner().invoke(main, args)
    assert res.exit_code == 2
    assert needle in res.stderr
    assert res.stdout == ""


def test_quiet_and_budget():
    res = CliRunner().invoke(main, [*BASE, "--delta", "1e-5", "--method", "asoodeh", "-q"])
    assert res.exit_code == 0 and float(res.stdout) == pytest.approx(1.384608, rel=1e-6)
    res = CliRunner().invoke(main, [*BASE, "--delta", "1e-5", "--max-epsilon", "2", "-f", "csv"])
    assert res.exit_code == 0  # feldman's 2.53 exceeds 2, but asoodeh certifies 1.38 for the same run
    res = CliRunner().invoke(main, [*BASE, "--delta", "1e-5", "--max-epsilon", "1.3", "-f", "csv"])
    assert res.exit_code == 3 and "method asoodeh" in res.stderr  # the tightest, 1.38, exceeds 1.3


def test_help_loads_no_numpy():
    code = (
        "import sys; from click.testing import CliRunner; from dpcalc.cli import main; "
        "r = CliRunner().invoke(main, ['iterate', '--help']); assert r.exit_code == 0, r.output; "
        "assert not {'numpy', 'scipy', 'rich'} & set(sys.modules), sorted(sys.modules)"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_cni_row_is_the_contractive_iteration_bound():
    rows, _ = _rows([*BASE, "--alpha", "2", "--initial-distance", "1"])
    cni = [r for r in rows if r["method"] == "cni"]
    assert len(cni) == 1 and len(rows) == 4
    # α R²/(2 (ησ)² T) with noise std ησ = 0.25
    assert float(cni[0]["rdp"]) == pytest.approx(2 * 1 / (2 * 0.25**2 * 100), rel=1e-14)
    res = CliRunner().invoke(main, [*BASE, "--alpha", "2", "--method", "cni"])
    assert res.exit_code == 2 and "--initial-distance" in res.stderr


@pytest.mark.parametrize(
    "query", [["--epsilon", "0,1e-10,1e10"], ["--alpha", "1.0000001,1e10"], ["--delta", "1e-300,0.999999"]]
)
def test_extreme_inputs_give_numbers_not_nan(query):
    """σ, L, η, R at 1e±300 and T up to 1e9: every row is a number, inf or an explained blank (no NaN)."""
    ext = "1e-300,1e300"
    args = ["iterate", "--sigma", ext, "--lipschitz", ext, "--lr", ext, "--steps", "1,1000000000"]
    rows, _ = _rows([*args, *query, "--initial-distance", ext])
    assert len(rows) == 4 * 2**5 * len(query[1].split(","))
    answer = {"--epsilon": "delta", "--alpha": "rdp", "--delta": "epsilon"}[query[0]]
    for r in rows:
        assert "nan" not in ",".join(r.values()).lower()
        assert r[answer] != "" or r.get("note")


def test_sweep_above_the_old_row_limit_is_estimated_not_refused(invoke, monkeypatch):
    # issue 40: the 20,000-row limit (rows held together) is gone: the rows stream in chunks; the work is
    # estimated and capped by --max-seconds before anything is computed
    from dpcalc import execution

    def fail(*a, **k):
        raise AssertionError("work started")

    monkeypatch.setattr(execution, "map_ordered", fail)
    args = ["iterate", "--sigma", "5", "--lipschitz", "1", "--lr", "0.05", "--steps", "1:100000:1"]
    res = invoke([*args, "--delta", "1e-5", "--max-seconds", "1", "--jobs", "1"])
    assert res.exit_code == 2 and res.stdout == "" and len(res.stderr.strip().splitlines()) == 1
    assert res.stderr.startswith(
        "Error: --max-seconds 1: 300,000 rows of privacy amplification by iteration (--method all) on 1 process"
    )
