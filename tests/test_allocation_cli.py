"""``sgd-epsilon --sampling balls-in-bins | random-allocation`` and ``--method mc``, end to end
(docs/math.md §3.8, §3.9): the rows equal the engine's bounds for the run's rounds, the inverse questions
round-trip, the Monte Carlo rows carry their confidence, and what does not apply is refused."""

from __future__ import annotations

import csv
import io
import math

import numpy as np
import pytest
from click.testing import CliRunner

from dpcalc.cli import main
from dpcalc.engine.dpsgd import accounting as sgd
from dpcalc.engine.dpsgd.balls_in_bins_mc import epsilon_balls_in_bins_mc
from dpcalc.engine.dpsgd.pld_accounting import sgd_epsilon_pld
from dpcalc.engine.samplers.allocation import epoch_steps, epsilon_random_allocation, participations
from dpcalc.engine.samplers.catalogue import CATALOGUE

RUN = ["sgd-epsilon", "--sigma", "1.1", "--batch-size", "256", "--dataset-size", "60000", "--delta", "1e-5"]


def _rows(args):
    r = CliRunner().invoke(main, [*args, "-f", "csv"])
    assert r.exit_code == 0, r.stderr
    return list(csv.DictReader(io.StringIO(r.stdout)))


def test_run_maps_onto_rounds():
    """Balls-in-bins: floor(N/B) steps an epoch, ceil(T/m) epochs; random allocation: k = E for E epochs."""
    q = 256 / 60000
    assert epoch_steps(q, 60000) == 234 and epoch_steps(250 / 60000, 60000) == 240  # N/B whole: exact
    t, k, r = CATALOGUE["balls-in-bins"].rounds(q, 14040, 60000)
    assert (t, k, r) == (234, 1, 60)
    assert CATALOGUE["balls-in-bins"].rounds(q, 14041, 60000)[2] == 61  # a partial epoch costs a whole one
    for epochs in (1, 7, 60, 100):
        steps = math.ceil(epochs / q)
        assert participations(q, steps) == epochs
    assert participations(0.01, 1050) == 11  # rounded up


def test_rows_equal_the_engine():
    both = _rows([*RUN, "--epochs", "2,60", "--sampling", "balls-in-bins", "--method", "all"])
    assert [(r["method"], r["steps"]) for r in both] == [
        ("rdp", "468"),
        ("rdp", "14040"),
        ("pld", "468"),
        ("pld", "14040"),
    ]
    for r, epochs in zip(both[2:], (2, 60)):  # the certified PLD: an upper end, no lower end
        ref = sgd_epsilon_pld(
            256 / 60000, 1.1, 234 * epochs, 1e-5, sampling="balls-in-bins", dataset_size=60000
        )
        assert float(r["epsilon"]) == float(ref.upper) and r["epsilon_lower"] == ""
        assert "certified upper bound" in r["note"] and "§3.10" in r["note"]
    bb = both[:2]
    for r, epochs in zip(bb, (2, 60)):
        ref = epsilon_random_allocation(1.1, 234, 1, epochs, 1e-5)
        assert float(r["epsilon"]) == pytest.approx(float(ref), rel=1e-12)
        assert r["confidence"] == "" and r["samples"] == "" and "Feldman & Shenfeld" in r["note"]
    ra = _rows([*RUN, "--epochs", "60", "--sampling", "random-allocation"])
    steps = int(ra[0]["steps"])
    assert steps == math.ceil(60 * 60000 / 256)
    ref = epsilon_random_allocation(1.1, steps, 60, 1, 1e-5)
    assert float(ra[0]["epsilon"]) == pytest.approx(float(ref), rel=1e-12)
    # both stay within the unamplified Gaussian composition (each example is in 60 steps)
    gauss = float(sgd.epsilon_rdp(1.0, 1.1, 60, 1e-5).epsilon)
    assert float(ra[0]["epsilon"]) <= gauss and float(bb[1]["epsilon"]) <= gauss


def test_inverse_questions_round_trip():
    r = _rows(
        ["sgd-epsilon", "--batch-size", "256", "--dataset-size", "60000", "--delta", "1e-5", "--epochs", "10"]
        + ["--target-epsilon", "2", "--sampling", "balls-in-bins"]
    )[0]
    s = float(r["noise_multiplier"])
    eps = [float(epsilon_random_allocation(x, 234, 1, 10, 1e-5)) for x in (s, s / (1 + 1e-4))]
    assert eps[0] <= 2 < eps[1]
    r = _rows([*RUN, "--target-epsilon", "2", "--sampling", "balls-in-bins"])[0]
    t = int(r["steps"])
    assert float(r["epochs"]) == t // 234
    eps = [
        float(
            sgd.epsilon_rdp(256 / 60000, 1.1, x, 1e-5, sampling="balls-in-bins", dataset_size=60000).epsilon
        )
        for x in (t, t + 1)
    ]
    assert eps[0] <= 2 < eps[1]
    assert t % 234 == 0  # ε grows by whole epochs: the largest run ends at an epoch's end


def test_pld_caption_says_upper_bound_only():
    r = CliRunner().invoke(
        main, [*RUN, "--epochs", "2", "--sampling", "balls-in-bins", "--method", "pld", "-f", "table"]
    )
    assert r.exit_code == 0, r.stderr
    text = " ".join(r.stdout.split())
    assert "pld: epsilon is a certified upper bound (no lower end or estimate" in text
    assert "is the certified bracket" not in text


def test_pld_inverse_questions_round_trip():
    """σ for a target by the allocation PLD: ε at σ is within the target, at σ/(1 + rtol) above it."""
    r = _rows(
        ["sgd-epsilon", "--batch-size", "256", "--dataset-size", "60000", "--delta", "1e-5", "--epochs", "10"]
        + ["--target-epsilon", "2", "--sampling", "random-allocation", "--method", "pld"]
    )[0]
    s, steps = float(r["noise_multiplier"]), int(r["steps"])
    eps = [
        float(sgd_epsilon_pld(256 / 60000, x, steps, 1e-5, sampling="random-allocation").upper)
        for x in (s, s / (1 + 1e-4))
    ]
    assert eps[0] <= 2 < eps[1] and float(r["epsilon"]) == pytest.approx(eps[0], rel=1e-9)
    assert r["epsilon_lower"] == ""


def test_monte_carlo_rows():
    rows = _rows(
        ["sgd-epsilon", "--sigma", "0.8", "--sample-rate", "0.25", "--steps", "4", "--delta", "1e-3"]
        + ["--sampling", "balls-in-bins", "--method", "mc", "--mc-samples", "20000", "--seed", "3"]
    )
    (r,) = rows
    up, est = epsilon_balls_in_bins_mc(0.8, 4, 1, 1e-3, samples=20000, confidence=0.95, seed=3)
    assert float(r["epsilon"]) == up and float(r["epsilon_estimate"]) == est
    assert r["method"] == "balls-in-bins-mc" and r["confidence"] == "0.95" and r["samples"] == "20000"
    assert "not a deterministic bound" in r["note"]
    again = _rows(
        ["sgd-epsilon", "--sigma", "0.8", "--sample-rate", "0.25", "--steps", "4", "--delta", "1e-3"]
        + ["--sampling", "balls-in-bins", "--method", "mc", "--mc-samples", "20000", "--seed", "3"]
    )
    assert again == rows  # a fixed seed: reproducible
    rdp = _rows(
        ["sgd-epsilon", "--sigma", "0.8", "--sample-rate", "0.25", "--steps", "4", "--delta", "1e-3"]
        + ["--sampling", "balls-in-bins"]
    )
    assert 0 < est <= up and np.isfinite(up)
    assert up <= float(rdp[0]["epsilon"]) * 1.5  # the same mechanism, two accountants: not far apart


def test_monte_carlo_too_few_samples_says_so():
    (r,) = _rows(
        [*RUN, "--epochs", "1", "--sampling", "balls-in-bins", "--method", "mc", "--mc-samples", "2000"]
    )
    assert r["epsilon"] == "inf" and "raise --mc-samples" in r["note"]


@pytest.mark.parametrize(
    "extra,message",
    [
        (["--sampling", "balls-in-bins", "--neighbors", "replace-one"], "--neighbors"),
        (["--sampling", "shuffle", "--method", "pld"], "--method pld"),
        (["--sampling", "poisson", "--method", "mc"], "--method mc"),
        (["--sampling", "balls-in-bins", "--mc-samples", "5000"], "--mc-samples"),
        (["--sampling", "balls-in-bins", "--seed", "1"], "--seed"),
        (["--sampling", "balls-in-bins", "--fpr", "0.01"], "--fpr"),
        (["--sampling", "balls-in-bins", "--method", "mc", "--confidence", "1"], "--confidence"),
    ],
)
def test_refusals(extra, message):
    r = CliRunner().invoke(main, [*RUN, "--epochs", "1", *extra, "-f", "csv"])
    assert r.exit_code == 2, r.stdout
    assert message in r.stderr and "Traceback" not in r.stderr and r.stdout == ""
    assert len(r.stderr.strip().splitlines()) == 1


def test_monte_carlo_refuses_the_inverse_question():
    r = CliRunner().invoke(
        main,
        ["sgd-epsilon", "--batch-size", "256", "--dataset-size", "60000", "--delta", "1e-5", "--epochs", "1"]
        + ["--target-epsilon", "1", "--sampling", "balls-in-bins", "--method", "mc"],
    )
    assert r.exit_code == 2 and "--target-epsilon" in r.stderr


@pytest.mark.parametrize("sampling", ["balls-in-bins", "random-allocation"])
def test_rdp_curve_converts_to_the_rdp_row(tmp_path, sampling):
    base = [*RUN[:-2], "--epochs", "3"]  # (a Rényi curve takes no --delta)
    r = CliRunner().invoke(main, [*base, "--sampling", sampling, "--rdp-curve", "-f", "csv"])
    assert r.exit_code == 0, r.stderr
    path = tmp_path / "curve.csv"
    path.write_text(r.stdout)
    conv = _rows(["convert", "--curve", str(path), "--delta", "1e-5", "--method", "balle"])
    row = _rows([*base, "--delta", "1e-5", "--sampling", sampling, "--conversion", "balle"])
    assert float(conv[0]["epsilon"]) == float(row[0]["epsilon"])


def test_fpr_rows_for_the_new_samplers():
    """--fpr: the rdp row is the privacy profile of the run's Rényi curve (rdp_total); for PLD samplers the
    certified lower end stays below the rdp upper bound; what has no profile is refused."""
    from dpcalc.engine import tradeoff
    from dpcalc.engine.dpsgd.accounting import rdp_total
    from dpcalc.engine.orders import DEFAULT_ORDERS

    fpr = np.array([0.001, 0.05])
    q = 256 / 60000
    cases = [
        (["--sampling", "balls-in-bins"], dict(sampling="balls-in-bins", dataset_size=60000), 234 * 5),
        (["--sampling", "random-allocation"], dict(sampling="random-allocation"), math.ceil(5 / q)),
        (
            ["--sampling", "truncated-poisson", "--max-batch-size", "280"],
            dict(sampling="truncated-poisson", dataset_size=60000, max_batch_size=280),
            math.ceil(5 / q),
        ),
        (["--neighbors", "replace-one"], dict(neighbors="replace-one"), math.ceil(5 / q)),
    ]
    for extra, kw, steps in cases:
        rows = _rows([*RUN[:-2], "--epochs", "5", "--fpr", "0.001,0.05", "--method", "all", *extra])
        rdp = [r for r in rows if r["method"] == "rdp"]
        curve = rdp_total(q, 1.1, steps, DEFAULT_ORDERS, **kw)
        ref = tradeoff.rdp_tpr(DEFAULT_ORDERS, curve, fpr)
        assert [float(r["tpr"]) for r in rdp] == pytest.approx(list(ref), rel=1e-12)
        pld = [r for r in rows if r["method"] == "pld"]
        assert len(pld) == 2
        # the allocation rounds' models and truncated Poisson's revealed mixture dominate the run: an upper end only
        upper_only = kw.get("sampling") in ("balls-in-bins", "random-allocation", "truncated-poisson")
        for p_row, r_row in zip(pld, rdp):
            assert float(p_row["tpr"]) >= float(p_row["fpr"])
            if upper_only:  # an upper end only, and tighter than the Rényi curve's profile
                assert p_row["tpr_lower"] == p_row["tpr_estimate"] == ""
                assert float(p_row["tpr"]) <= float(r_row["tpr"])
                continue
            assert float(p_row["tpr_lower"]) <= float(r_row["tpr"])
            assert float(p_row["tpr_lower"]) <= float(p_row["tpr"])
        assert not any(r["method"] == "clt-asymptotic" for r in rows)  # the CLT row is Poisson add/remove's


@pytest.mark.parametrize(
    "extra,word",
    [
        (["--sampling", "shuffle"], "--sampling shuffle"),
        (["--sampling", "truncated-poisson", "--max-batch-size", "280,300"], "one --max-batch-size"),
        (["--sampling", "fixed-size", "--method", "pld"], "--sampling fixed-size"),
    ],
)
def test_fpr_refusals(extra, word):
    r = CliRunner().invoke(main, [*RUN[:-2], "--epochs", "1", "--fpr", "0.01", *extra, "-f", "csv"])
    assert r.exit_code == 2 and word in r.stderr and r.stdout == ""


@pytest.mark.parametrize("extra", [["--epochs", "1", "--mc-samples", "1000000000000"], ["--steps", "14040"]])
def test_monte_carlo_work_is_estimated_and_capped_up_front(invoke, extra, monkeypatch):
    # issue 27: --mc-samples 1e12 asked numpy for 7 TiB (internal error: MemoryError); issue 40: a Monte Carlo
    # run is computed in batches in bounded memory, not refused by its work — but --max-seconds (here from its
    # environment variable) refuses it up front, in one line, before any draw
    monkeypatch.setenv("DPCALC_MAX_SECONDS", "5")
    res = invoke([*RUN, *extra, "--sampling", "balls-in-bins", "--method", "mc"])
    assert res.exit_code == 2 and res.stdout == "" and len(res.stderr.strip().splitlines()) == 1
    assert "--max-seconds 5" in res.stderr and "samples" in res.stderr
