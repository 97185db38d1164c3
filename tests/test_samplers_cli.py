"""``dpcalc sgd-epsilon --sampling shuffle`` and ``--neighbors replace-one`` with Poisson sampling, end to
end (docs/math.md §3.5, §3.6)."""

from __future__ import annotations

import csv
import io
import math

import pytest
from click.testing import CliRunner

from dpcalc.cli import main

RUN = ["sgd-epsilon", "--sigma", "1", "--sample-rate", "0.2", "--steps", "1", "--delta", "1e-5"]
SHUFFLE = [
    "sgd-epsilon",
    "--sigma",
    "1.1",
    "--batch-size",
    "256",
    "--dataset-size",
    "60000",
    "--delta",
    "1e-5",
]


def _rows(args):
    r = CliRunner().invoke(main, [*args, "-f", "csv"])
    assert r.exit_code == 0, r.stderr
    return list(csv.DictReader(io.StringIO(r.stdout)))


def test_poisson_replace_one_rows_contain_dp_accounting():
    import dp_accounting as dpa
    from dp_accounting.pld import pld_privacy_accountant

    rows = _rows([*RUN, "--neighbors", "replace-one", "--method", "all"])
    by = {r["accountant"]: r for r in rows}
    assert set(by) == {"rdp", "pld"}  # abadi is for add/remove only
    acc = pld_privacy_accountant.PLDAccountant(dpa.NeighboringRelation.REPLACE_ONE, 1e-4)
    acc.compose(dpa.PoissonSampledDpEvent(0.2, dpa.GaussianDpEvent(1.0)), 1)
    ref = acc.get_epsilon(1e-5)  # pessimistic: an upper bound on the true ε
    assert float(by["pld"]["epsilon_lower"]) <= ref <= float(by["pld"]["epsilon"]) + 1e-4
    assert float(by["rdp"]["epsilon"]) >= float(by["pld"]["epsilon_lower"])
    for r in rows:
        assert r["neighbors"] == "replace-one" and "replace-one" in r["note"]
    assert "Mironov 2017 Prop. 11" in by["rdp"]["note"] and "REPLACE_ONE" in by["pld"]["note"]


def test_poisson_replace_one_rdp_answers_target():
    rows = _rows(
        [
            "sgd-epsilon",
            "--sample-rate",
            "0.01",
            "--steps",
            "100",
            "--delta",
            "1e-5",
            "--neighbors",
            "replace-one",
            "--target-epsilon",
            "3",
        ]
    )
    assert float(rows[0]["epsilon"]) <= 3.0
    assert 0 < float(rows[0]["noise_multiplier"]) < 5


def test_shuffle_rows():
    from dpcalc.engine.mechanisms.gaussian_exact import eps_gaussian

    rows = _rows([*SHUFFLE, "--epochs", "1,60", "--sampling", "shuffle"])
    assert [int(r["steps"]) for r in rows] == [234, 14040]  # whole epochs of floor(60000/256) steps
    for r, epochs in zip(rows, (1, 60)):
        up, lo = float(r["epsilon"]), float(r["epsilon_lower"])
        assert math.isclose(up, float(eps_gaussian(1e-5, 2 * math.sqrt(epochs) / 1.1)), rel_tol=1e-12)
        assert 0 < lo < up
        assert r["neighbors"] == "replace-one" and "LOWER bound of Chua et al. 2024" in r["note"]
    # the shuffled run's lower bound exceeds the Poisson number people report for the same run
    pois = _rows([*SHUFFLE, "--epochs", "60", "--method", "pld"])
    assert float(rows[1]["epsilon_lower"]) > float(pois[0]["epsilon"])


@pytest.mark.parametrize(
    "extra,word",
    [
        (["--sampling", "shuffle", "--neighbors", "add-remove", "--epochs", "1"], "--neighbors"),
        (["--sampling", "shuffle", "--target-epsilon", "3"], "--target-epsilon"),
        (["--sampling", "shuffle", "--epochs", "1", "--method", "pld"], "--method"),
    ],
)
def test_refusals_exit_2(extra, word):
    r = CliRunner().invoke(main, [*SHUFFLE, *extra, "-f", "csv"])
    assert r.exit_code == 2, r.stdout
    assert word in r.stderr and r.stderr.count("\n") == 1


def test_shuffle_rdp_curve_is_refused_naming_the_sampler():
    r = CliRunner().invoke(main, [*SHUFFLE, "--epochs", "1", "--sampling", "shuffle", "--rdp-curve"])
    assert r.exit_code == 2 and "--sampling shuffle" in r.stderr and r.stdout == ""
