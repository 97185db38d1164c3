"""``dpcalc langevin`` end to end (docs/math.md §5 table through the CLI, conditions, the lower bound)."""

from __future__ import annotations

import csv
import io
import subprocess
import sys

import pytest
from click.testing import CliRunner

from dpcalc.cli import main

# the setting of Chourasia, Ye & Shokri's talk (NeurIPS 2021, arXiv 2102.05855)
PAPER_SETTING = [
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
]
TABLE = {  # K: dynamics, lower, composition (α = 30), docs/math.md §5
    1: (4.776080e-04, 2.376159e-04, 2.400000e-04),
    100: (3.034179e-02, 1.037598e-02, 2.400000e-02),
    159: (3.821157e-02, 1.150097e-02, 3.816000e-02),
    1000: (4.799782e-02, 1.200000e-02, 2.400000e-01),
}


def _invoke(args):
    return CliRunner().invoke(main, [*args, "-f", "csv"])


def _rows(args):
    res = _invoke(args)
    assert res.exit_code == 0, res.stderr
    return list(csv.DictReader(io.StringIO(res.stdout))), res


def test_table_5_through_the_cli():
    rows, res = _rows([*PAPER_SETTING, "--steps", "1,100,159,1000", "--alpha", "30"])
    for r in rows:
        dyn, low, comp = TABLE[int(r["steps"])]
        if r["method"] == "dynamics":
            assert float(r["rdp"]) == pytest.approx(dyn, rel=1e-6)
        elif r["method"] == "lower":
            assert r["bound"] == "lower" and r["rdp"] == ""
            assert float(r["rdp_lower"]) == pytest.approx(low, rel=1e-6)
        else:
            assert float(r["rdp"]) == pytest.approx(comp, rel=1e-6)
        assert float(r["crossing_steps"]) == pytest.approx(159.36, abs=0.005)
    assert "159.362" in res.stderr


def test_lipschitz_means_twice_the_sensitivity():
    a, _ = _rows([*PAPER_SETTING, "--steps", "100", "--alpha", "30"])
    args = list(PAPER_SETTING)
    i = args.index("--sensitivity")
    args[i : i + 2] = ["--lipschitz", "2"]
    b, _ = _rows([*args, "--steps", "100", "--alpha", "30"])
    assert [r["rdp"] for r in a] == [r["rdp"] for r in b]


def test_lower_bound_is_never_judged():
    # the lower rows are below the budget only when the upper ones are: a budget between them must fail
    rows, _ = _rows([*PAPER_SETTING, "--steps", "1000", "--delta", "1e-5"])
    up = max(float(r["epsilon"]) for r in rows if r["epsilon"])
    low = float(next(r["epsilon_lower"] for r in rows if r["method"] == "lower"))
    assert low < up
    res = _invoke(
        [*PAPER_SETTING, "--steps", "1000", "--delta", "1e-5", "--method", "lower", "--max-epsilon", "0"]
    )
    # only a lower bound reported: no ε to judge, which is a usage error, never a pass
    assert res.exit_code == 2 and "reports no epsilon" in res.stderr
    res = _invoke([*PAPER_SETTING, "--steps", "1000", "--delta", "1e-5", "--max-epsilon", str(low)])
    assert res.exit_code == 3


@pytest.mark.parametrize(
    "change,needle",
    [
        (("--lr", "2"), "η <= 1/β"),
        (("--strong-convexity", "3"), "λ <= β"),
        (("--dataset-size", "0"), "--dataset-size"),
        (("--sigma", "-1"), "--sigma"),
    ],
)
def test_out_of_theorem_inputs_exit_2(change, needle):
    args = list(PAPER_SETTING)
    i = args.index(change[0])
    args[i + 1] = change[1]
    res = _invoke([*args, "--steps", "10", "--alpha", "30"])
    assert res.exit_code == 2
    assert needle in res.stderr
    assert res.stdout == ""


def test_usage_errors():
    assert _invoke([*PAPER_SETTING, "--steps", "10"]).exit_code == 2  # neither --alpha nor --delta
    args = [*PAPER_SETTING, "--lipschitz", "1", "--steps", "10", "--alpha", "2"]
    res = _invoke(args)
    assert res.exit_code == 2 and "exactly one of --sensitivity" in res.stderr


def test_help_states_the_convention_and_loads_no_numpy():
    res = CliRunner().invoke(main, ["langevin", "--help"])
    assert "S_g = 2L" in res.stdout
    code = (
        "import sys; from click.testing import CliRunner; from dpcalc.cli import main; "
        "r = CliRunner().invoke(main, ['langevin', '--help']); assert r.exit_code == 0, r.output; "
        "assert not {'numpy', 'scipy', 'rich'} & set(sys.modules), sorted(sys.modules)"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_sweeps_of_every_condition_parameter():
    args = ["langevin", "--sigma", "0.02", "--sensitivity", "4", "--lr", "0.01,0.02,0.03"]
    args += ["--strong-convexity", "0.5,1", "--smoothness", "1,2,3,4", "--dataset-size", "100,5000"]
    rows, res = _rows([*args, "--steps", "10,100", "--alpha", "30"])
    assert len(rows) == 3 * 3 * 2 * 4 * 2 * 2
    assert "more (λ, η) pairs" in res.stderr
    bad = [*args[:6], "0.01,0.5", *args[7:]]
    res = _invoke([*bad, "--steps", "10", "--alpha", "30"])
    assert res.exit_code == 2 and "η <= 1/β" in res.stderr


@pytest.mark.parametrize("sigma", ["1e-300", "1e300"])
def test_extreme_inputs_give_numbers_not_nan(sigma):
    args = [
        "langevin",
        "--sigma",
        sigma,
        "--sensitivity",
        "1e-300,4,1e300",
        "--lr",
        "0.02",
        "--strong-convexity",
    ]
    args += ["1", "--smoothness", "1", "--dataset-size", "1,1000000000", "--steps", "1,1000000000"]
    rows, _ = _rows([*args, "--alpha", "30", "--delta", "1e-5"])
    assert len(rows) == 3 * 3 * 2 * 2
    for r in rows:
        assert "nan" not in ",".join(r.values()).lower()
        up = r["method"] != "lower"
        assert r["epsilon" if up else "epsilon_lower"] != ""
        assert r["rdp" if up else "rdp_lower"] != ""


def test_sweep_above_the_old_row_limit_is_estimated_not_refused(invoke, monkeypatch):
    # issue 40: the 20,000-row limit (rows held together) is gone: the rows stream in chunks; the work is
    # estimated and capped by --max-seconds before anything is computed
    from dpcalc import execution

    def fail(*a, **k):
        raise AssertionError("work started")

    monkeypatch.setattr(execution, "map_ordered", fail)
    args = [
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
    ]
    res = invoke(
        ["langevin", *args, "--dataset-size", "5000", "--steps", "1:200000:1", "--delta", "1e-5"]
        + ["--max-seconds", "1", "--jobs", "1"]
    )
    assert res.exit_code == 2 and res.stdout == "" and len(res.stderr.strip().splitlines()) == 1
    assert res.stderr.startswith(
        "Error: --max-seconds 1: 600,000 rows of Langevin privacy dynamics (--method all) on 1 process"
    )
