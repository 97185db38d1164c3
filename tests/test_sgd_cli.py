"""``dpcalc sgd-epsilon`` end to end (click's CliRunner)."""

from __future__ import annotations

import csv
import io
import json
import math

import numpy as np
import pytest
from click.testing import CliRunner

from dpcalc.cli import main

BASE = ["sgd-epsilon", "--sigma", "1.1", "--sample-rate", "0.01", "--steps", "1000", "--delta", "1e-5"]


def _run(args):
    return CliRunner().invoke(main, args)


def _rows(result):
    assert result.exit_code == 0, result.stderr
    return list(csv.DictReader(io.StringIO(result.stdout)))


def test_csv_columns_and_value():
    from dpcalc.engine.dpsgd import accounting as sgd

    rows = _rows(_run([*BASE, "-f", "csv"]))
    assert len(rows) == 1
    r = rows[0]
    for col in (
        "method",
        "accountant",
        "conversion",
        "sampling",
        "neighbors",
        "sample_rate",
        "noise_multiplier",
        "steps",
        "delta",
        "epsilon",
        "alpha",
    ):
        assert col in r
    assert (r["accountant"], r["conversion"], r["sampling"], r["neighbors"]) == (
        "rdp",
        "optimal",
        "poisson",
        "add-remove",
    )
    # the command line evaluates small queries with the math module (no scipy import): same value to 1e-12
    assert float(r["epsilon"]) == pytest.approx(
        float(sgd.epsilon_rdp(0.01, 1.1, 1000, 1e-5).epsilon), rel=1e-12
    )


def test_epochs_become_steps_and_sweep_is_one_row_per_epoch():
    rows = _rows(
        _run(
            [
                "sgd-epsilon",
                "--sigma",
                "1.1",
                "--batch-size",
                "256",
                "--dataset-size",
                "60000",
                "--epochs",
                "1:5:1",
                "--delta",
                "1e-5",
                "-f",
                "csv",
            ]
        )
    )
    assert [int(r["steps"]) for r in rows] == [math.ceil(e * 60000 / 256) for e in range(1, 6)]
    assert [float(r["epochs"]) for r in rows] == [1.0, 2.0, 3.0, 4.0, 5.0]
    eps = [float(r["epsilon"]) for r in rows]
    assert eps == sorted(eps)


def test_cartesian_product_rows():
    rows = _rows(
        _run(
            [
                "sgd-epsilon",
                "--sigma",
                "0.8,1.6",
                "--sample-rate",
                "0.01,0.02,0.04",
                "--steps",
                "100",
                "--delta",
                "1e-5,1e-6",
                "-f",
                "csv",
            ]
        )
    )
    assert len(rows) == 12


def test_accountant_all_fixed_size():
    rows = _rows(
        _run(
            [
                "sgd-epsilon",
                "--sigma",
                "2",
                "--batch-size",
                "512",
                "--dataset-size",
                "50000",
                "--steps",
                "4900",
                "--delta",
                "1e-5",
                "--sampling",
                "fixed-size",
                "--method",
                "all",
                "-f",
                "csv",
            ]
        )
    )
    assert [r["accountant"] for r in rows] == ["rdp", "bassily"]
    assert rows[0]["neighbors"] == "replace-one"
    assert float(rows[0]["epsilon"]) == pytest.approx(8.9602, abs=1e-4)  # docs/math.md §3.3 (σ/2 = 1)
    assert rows[1]["valid"] == "false"


def test_accountant_all_poisson_has_abadi_flagged():
    rows = _rows(
        _run(
            [
                "sgd-epsilon",
                "--sigma",
                "4",
                "--sample-rate",
                "0.04",
                "--steps",
                "1000",
                "--delta",
                "1e-5",
                "--method",
                "all",
                "-f",
                "csv",
            ]
        )
    )
    by = {r["accountant"]: r for r in rows}
    assert float(by["abadi"]["epsilon"]) == pytest.approx(2.294384070732055, rel=1e-12)
    assert by["abadi"]["valid"] == "false" and by["abadi"]["method"] == "abadi-asymptotic"
    assert float(by["rdp"]["epsilon"]) < float(by["abadi"]["epsilon"])


@pytest.mark.parametrize(
    "args,option",
    [
        (["--sigma", "1", "--sample-rate", "1.5", "--steps", "10", "--delta", "1e-5"], "--sample-rate"),
        (["--sigma", "1", "--sample-rate", "0", "--steps", "10", "--delta", "1e-5"], "--sample-rate"),
        (["--sigma", "0", "--sample-rate", "0.5", "--steps", "10", "--delta", "1e-5"], "--sigma"),
        (["--sigma", "-1", "--sample-rate", "0.5", "--steps", "10", "--delta", "1e-5"], "--sigma"),
        (["--sigma", "1", "--sample-rate", "0.5", "--steps", "0", "--delta", "1e-5"], "--steps"),
        (["--sigma", "1", "--sample-rate", "0.5", "--steps", "2.5", "--delta", "1e-5"], "--steps"),
        (["--sigma", "1", "--sample-rate", "0.5", "--steps", "10", "--delta", "1"], "--delta"),
        (["--sigma", "1", "--sample-rate", "0.5", "--steps", "10", "--delta", "-1e-5"], "--delta"),
        (
            [
                "--sigma",
                "1",
                "--batch-size",
                "2.5",
                "--dataset-size",
                "100",
                "--steps",
                "10",
                "--delta",
                "1e-5",
            ],
            "--batch-size",
        ),
        (
            [
                "--sigma",
                "1",
                "--batch-size",
                "200",
                "--dataset-size",
                "100",
                "--steps",
                "10",
                "--delta",
                "1e-5",
            ],
            "--dataset-size",
        ),
        (
            [
                "--sigma",
                "1",
                "--sample-rate",
                "0.01",
                "--steps",
                "10",
                "--delta",
                "1e-5",
                "--sampling",
                "fixed-size",
                "--neighbors",
                "add-remove",
            ],
            "--sampling",
        ),
    ],
)
def test_bad_values_exit_2_naming_the_option(args, option):
    r = _run(["sgd-epsilon", *args, "-f", "csv"])
    assert r.exit_code == 2
    assert r.stdout == ""
    assert option in r.stderr
    assert r.stderr.count("\n") == 1 and r.stderr.startswith("Error:")


def test_delta_above_one_over_n_warns():
    r = _run(
        [
            "sgd-epsilon",
            "--sigma",
            "1",
            "--batch-size",
            "10",
            "--dataset-size",
            "1000",
            "--steps",
            "10",
            "--delta",
            "0.01",
            "-f",
            "csv",
        ]
    )
    assert r.exit_code == 0
    assert "1/dataset size" in r.stderr


def test_target_epsilon_noise_round_trip():
    from dpcalc.engine.dpsgd import accounting as sgd

    rows = _rows(
        _run(
            [
                "sgd-epsilon",
                "--target-epsilon",
                "1,3",
                "--sample-rate",
                "0.004267",
                "--steps",
                "14063",
                "--delta",
                "1e-5",
                "-f",
                "csv",
            ]
        )
    )
    assert len(rows) == 2
    for r in rows:
        sigma, target = float(r["noise_multiplier"]), float(r["target_epsilon"])
        assert float(r["epsilon"]) <= target
        assert sgd.epsilon_rdp(0.004267, sigma, 14063, 1e-5, warn=False).epsilon <= target
        assert sgd.epsilon_rdp(0.004267, sigma / 1.0001, 14063, 1e-5, warn=False).epsilon > target


def test_target_epsilon_steps_and_quiet():
    r = _run(
        [
            "sgd-epsilon",
            "--target-epsilon",
            "2",
            "--sigma",
            "4",
            "--sample-rate",
            "0.04",
            "--delta",
            "1e-5",
            "-q",
        ]
    )
    assert r.exit_code == 0
    steps = int(r.stdout.strip())
    from dpcalc.engine.dpsgd import accounting as sgd

    assert sgd.epsilon_rdp(0.04, 4.0, steps, 1e-5, warn=False).epsilon <= 2.0
    assert sgd.epsilon_rdp(0.04, 4.0, steps + 1, 1e-5, warn=False).epsilon > 2.0


def test_target_needs_one_thing_left_out():
    r = _run([*BASE, "--target-epsilon", "1"])
    assert r.exit_code == 2 and "leave out" in r.stderr


def test_json_and_max_epsilon():
    r = _run([*BASE, "-f", "json", "--max-epsilon", "0.1"])
    assert r.exit_code == 3
    data = json.loads(r.stdout)
    assert data[0]["epsilon"] > 0.1


def test_sigma_tiny_gives_finite_or_inf_never_nan():
    r = _run(
        [
            "sgd-epsilon",
            "--sigma",
            "0.01",
            "--sample-rate",
            "1",
            "--steps",
            "1000000000000",
            "--delta",
            "1e-10",
            "-f",
            "csv",
        ]
    )
    rows = _rows(r)
    v = float(rows[0]["epsilon"])
    assert not np.isnan(v) and v > 1e6


@pytest.mark.parametrize("accountant", ["rdp", "pld", "all"])
@pytest.mark.parametrize(
    "left_out", [["--sample-rate", "0.01", "--steps", "1000"], ["--sigma", "1", "--steps", "1000"]]
)
def test_tiny_target_is_refused_up_front_when_solving_for_sigma_or_rate(invoke, accountant, left_out):
    # issue 27: --target-epsilon 1e-300 --method pld ran for more than 300 s
    from dpcalc.commands.sgd.epsilon import TARGET_MIN

    args = ["sgd-epsilon", *left_out, "--delta", "1e-5", "--method", accountant]
    res = invoke([*args, "--target-epsilon", "1e-300"])
    assert res.exit_code == 2 and res.stdout == "" and len(res.stderr.strip().splitlines()) == 1
    assert "--target-epsilon" in res.stderr and f"{TARGET_MIN:g}" in res.stderr


def test_tiny_target_for_the_steps_is_answered(invoke):
    # solving for the steps needs no ε near 0: even one step exceeds the target, answered at once
    res = invoke(
        [
            "sgd-epsilon",
            "--sigma",
            "1",
            "--sample-rate",
            "0.01",
            "--delta",
            "1e-5",
            "--target-epsilon",
            "1e-300",
        ]
    )
    assert res.exit_code == 0 and "even one step exceeds the target" in res.stderr


@pytest.mark.parametrize("accountant, rows", [("pld", "86,450"), ("all", "259,350")])
def test_a_pld_sweep_of_a_day_is_estimated_and_capped_not_refused(invoke, accountant, rows):
    # issue 27 refused 86,450 configurations of the pld accountant; issue 40 runs what is asked, and a CI job caps it
    grid = ["--sigma", "0.5:5:0.05", "--sample-rate", "0.001:0.1:x1.05", "--steps", "100:1000:100"]
    res = invoke(["sgd-epsilon", *grid, "--delta", "1e-5", "--method", accountant, "--max-seconds", "3600"])
    assert res.exit_code == 2 and res.stdout == "" and len(res.stderr.strip().splitlines()) == 1
    assert "--max-seconds 3600" in res.stderr and f"{rows} rows" in res.stderr and " h " in res.stderr
    # the rdp accountant streams a sweep of 910 configurations
    rdp = ["sgd-epsilon", *grid[:2], "--sample-rate", "0.01", *grid[4:], "--delta", "1e-5", "-f", "csv"]
    res = invoke(rdp)
    assert res.exit_code == 0 and res.stdout.count("\n") == 1 + 910
