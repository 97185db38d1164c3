"""Heavy questions answered, not refused (issue 40), for ``dpcalc matrix``: a sweep past the old limits (10,000 rows,
100 searches of the steps, 100 step counts, the risk rows' 10,000) is estimated from measured costs before anything
is computed, capped by ``--max-seconds``, and computed otherwise, its runs spread over processes (the same rows, in
the same order); the Monte Carlo row gives the same bits on one process or two, and its cap refuses up front."""

from __future__ import annotations

import numpy as np
import pytest

from dpcalc import execution
from dpcalc.commands.matrix import command as cmd
from dpcalc.commands.matrix import params, plan
from dpcalc.commands.matrix import risk as matrix_risk

#: 2 strategies × 101 step counts × 60 noise multipliers: 12,120 rows (the old limit was 10,000), all gaussian.
BIG = ["matrix", "--strategy", "identity", "--strategy", "sqrt:bands=4", "--steps", "100:10100:100"]
BIG += ["--noise-multiplier", "1:6.9:0.1", "--delta", "1e-6", "--method", "gaussian", "-f", "csv"]


def _no_work(monkeypatch):
    """Any computation of rows fails the test: the pieces, the ε rows, the risk profiles, the samples."""

    def fail(*a, **k):
        raise AssertionError("work started")

    monkeypatch.setattr(execution, "map_ordered", fail)
    monkeypatch.setattr(cmd, "_rows", fail)
    monkeypatch.setattr(cmd, "_steps_rows", fail)
    monkeypatch.setattr(matrix_risk, "_row", fail)


def _refused(res, *words):
    assert res.exit_code == 2 and res.stdout == ""
    (line,) = res.stderr.splitlines()
    assert line.startswith("Error: --max-seconds ") and "would take about" in line and "above the cap" in line
    for w in words:
        assert w in line, line
    return line


def test_a_sweep_past_the_old_limit_is_estimated_and_capped_before_any_work(invoke, monkeypatch):
    _no_work(monkeypatch)
    # 101 × 2 runs of 60 rows each: their strategies and sensitivities (0.05 s a run) and 2 ms a gaussian row
    runs, seconds, samples = plan.work(
        params.MatrixParams(
            strategies=["identity", "sqrt:bands=4"], steps=list(range(100, 10101, 100)), delta=[1e-6]
        ),
        list(range(100, 10101, 100)),
        [params.participation("single")],
        ["gaussian"],
        False,
        None,
        {"delta": np.full(60, 1e-6)},
    )
    assert len(runs) == 202 and samples == 0 and 202 * 0.05 < seconds < 202 * (0.05 + 60 * 0.002 + 0.01)
    _refused(
        invoke([*BIG, "--max-seconds", "0.5", "--jobs", "1"]), "12,120 rows of matrix accounting on 1 process"
    )
    monkeypatch.setenv("DPCALC_MAX_SECONDS", "0.5")
    _refused(invoke(BIG), "12,120 rows of matrix accounting")


def test_the_steps_search_and_the_risk_rows_past_their_old_limits_are_estimated(invoke, monkeypatch):
    _no_work(monkeypatch)
    # 101 searches of the largest steps (the old limit: 100), each about 0.3 s
    args = ["matrix", "--strategy", "identity", "--noise-multiplier", "1:11:0.1", "--target-epsilon", "3"]
    _refused(invoke([*args, "--delta", "1e-6", "--max-seconds", "5", "--jobs", "1"]), "101 rows")
    # 2 × 101 × 50 advantage rows (the old limit: 10,000) of bandmf-pld, 0.6 s each
    args = ["matrix", "--strategy", "identity", "--strategy", "sqrt:bands=2", "--steps", "100:10100:100"]
    args += ["--participation", "cyclic-poisson:b=2,q=0.1", "--noise-multiplier", "1:5.9:0.1", "--advantage"]
    line = _refused(invoke([*args, "--method", "bandmf-pld", "--max-seconds", "60", "--jobs", "2"]))
    assert "on 2 processes" in line


def test_a_sweep_of_many_step_counts_is_computed_the_same_on_one_process_and_two(invoke):
    # 105 step counts (the old limit: 100), gaussian rows: a few ms each
    args = ["matrix", "--strategy", "identity", "--steps", "10:1050:10", "--noise-multiplier", "2"]
    args += ["--delta", "1e-5", "-f", "csv", "--columns", "steps,epsilon"]
    one = invoke([*args, "--jobs", "1"])
    two = invoke([*args, "--jobs", "2"])
    assert one.exit_code == 0 and one.stdout.count("\n") == 1 + 105
    assert two.exit_code == 0 and two.stdout == one.stdout
    assert [int(line.split(",")[0]) for line in one.stdout.splitlines()[1:]] == list(range(10, 1051, 10))


def test_runs_spread_over_processes_give_the_rows_of_one_process():
    p = params.MatrixParams(
        strategies=["identity", "sqrt:bands=2"],
        steps=[20, 40],
        delta=[1e-5, 1e-6],
        sigma=[1.5, 3.0],
        participation=["single", "cyclic-poisson:b=2,q=0.2"],
        method="bandmf-rdp",
    )
    with execution.using(jobs=1):
        one = cmd.matrix(p)
    with execution.using(jobs=2):
        two = cmd.matrix(p)
    assert (
        one.columns == two.columns and len(one) == 2 * 2 * 4
    )  # bandmf-rdp applies to the cyclic pattern only
    # the runs (step count, strategy, pattern, method) are the pieces, in the order of the rows
    assert one.columns["steps"] == [20] * 8 + [40] * 8


MC = ["matrix", "--strategy", "sqrt:bands=2", "--steps", "8", "--participation", "balls-in-bins:b=2"]
MC += [
    "--noise-multiplier",
    "1,2",
    "--delta",
    "1e-3",
    "--method",
    "mc",
    "--mc-samples",
    "3000",
    "--seed",
    "7",
]


def test_the_monte_carlo_row_is_the_same_on_one_process_and_two(invoke):
    one = invoke([*MC, "-f", "json", "--jobs", "1"])
    two = invoke([*MC, "-f", "json", "--jobs", "2"])
    assert one.exit_code == 0 and two.exit_code == 0
    assert one.stdout == two.stdout and '"samples": 3000' in one.stdout and '"method": "mc"' in one.stdout


def test_the_monte_carlo_row_is_capped_up_front(invoke, monkeypatch):
    _no_work(monkeypatch)
    args = [*MC[:-4], "--mc-samples", "100000000", "--seed", "7"]
    line = _refused(invoke([*args, "--max-seconds", "10", "--jobs", "2"]), "4e+08 samples of Monte Carlo")
    assert "on 2 processes" in line
    # the risk rows' samples too (--advantage: one draw of both directions a noise multiplier)
    args = [*MC[:7], "--noise-multiplier", "1,2", "--advantage", "--mc-samples", "100000000"]
    _refused(invoke([*args, "--max-seconds", "10"]), "samples of Monte Carlo")


def test_work_above_three_seconds_is_announced(invoke, monkeypatch):
    monkeypatch.delenv("DPCALC_MAX_SECONDS")
    monkeypatch.setitem(plan.SECONDS_ROW[None], "gaussian", 100.0)  # the cost made absurd: said, then run
    res = invoke(
        [
            "matrix",
            "--strategy",
            "identity",
            "--steps",
            "10",
            "--sigma",
            "1,2",
            "--delta",
            "1e-5",
            "--jobs",
            "1",
        ]
    )
    assert res.exit_code == 0 and res.stdout.count("\n") == 3
    assert res.stderr.splitlines()[0].startswith(
        "dpcalc: 2 rows of matrix accounting on 1 process: about 3 min"
    )


@pytest.mark.parametrize(
    "args,words",
    [
        # kept: what a single run cannot do, named before any work
        (["--strategy", "tree", "--steps", "5000"], "4096"),
        (
            ["--strategy", "identity", "--steps", "10", "--participation", "balls-in-bins:b=20"],
            "more than the 10 steps",
        ),
    ],
)
def test_refusals_of_a_single_run_stay(invoke, args, words):
    res = invoke(["matrix", *args, "--sigma", "1", "--delta", "1e-5"])
    assert (
        res.exit_code == 2 and res.stdout == "" and words in res.stderr and len(res.stderr.splitlines()) == 1
    )
