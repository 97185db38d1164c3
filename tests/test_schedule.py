"""``sgd-epsilon --schedule FILE``: a run in phases (CSV, or an Opacus history as JSON) — one phase equals today's
sgd-epsilon exactly, phases in any order give the same total, the running ε never decreases, two phases equal
compose of the two, bad files are one-line refusals."""

from __future__ import annotations

import csv
import io
import json

import numpy as np
import pytest
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st

from dpcalc import api
from dpcalc.cli import main
from dpcalc.engine.conversion.of_curve import eps_of_curve
from dpcalc.engine.dpsgd.accounting import rdp_total

PHASES = [(1.5, 0.0064, 157), (1.1, 0.0256, 196), (0.9, 0.0256, 79)]


def _run(args, stdin=None):
    return CliRunner().invoke(main, args, input=stdin)


def _rows(args, stdin=None):
    result = _run([*args, "-f", "csv"], stdin)
    assert result.exit_code == 0, result.output
    return list(csv.DictReader(io.StringIO(result.stdout)))


def _csv(phases) -> str:
    return "noise_multiplier,sample_rate,steps\n" + "".join(f"{s!r},{q!r},{t}\n" for s, q, t in phases)


@pytest.mark.parametrize("accountant", ["rdp", "pld"])
def test_one_phase_is_todays_sgd_epsilon_exactly(accountant, tmp_path):
    path = tmp_path / "one.csv"
    path.write_text("sigma,batch_size,dataset_size,epochs\n1.1,256,60000,3\n")
    (row,) = _rows(["sgd-epsilon", "--schedule", str(path), "--delta", "1e-5", "--accountant", accountant])
    (want,) = _rows(
        [
            "sgd-epsilon",
            "--sigma",
            "1.1",
            "--batch-size",
            "256",
            "--dataset-size",
            "60000",
            "--epochs",
            "3",
            "--delta",
            "1e-5",
            "--accountant",
            accountant,
        ]
    )
    assert row["steps"] == want["steps"] and row["epsilon"] == want["epsilon"]
    assert row["epsilon_lower"] == want["epsilon_lower"]


@pytest.mark.parametrize("accountant", ["rdp", "pld"])
def test_the_last_row_is_the_composition_of_the_phases(accountant):
    rows = _rows(
        ["sgd-epsilon", "--schedule", "-", "--delta", "1e-5", "--accountant", accountant], stdin=_csv(PHASES)
    )
    specs = [f"subsampled-gaussian:sigma={s!r},q={q!r},count={t}" for s, q, t in PHASES]
    comp = api.compose(specs, delta=1e-5, method=accountant)
    assert float(rows[-1]["epsilon"]) == pytest.approx(float(comp.value), rel=1e-12)
    eps = [float(r["epsilon"]) for r in rows]
    assert eps == sorted(eps) and [int(r["total_steps"]) for r in rows] == [157, 353, 432]


@settings(max_examples=6, deadline=None)
@given(st.permutations(PHASES))
def test_phases_in_any_order_give_the_same_total(order):
    a = _rows(["sgd-epsilon", "--schedule", "-", "--delta", "1e-5"], stdin=_csv(PHASES))
    b = _rows(["sgd-epsilon", "--schedule", "-", "--delta", "1e-5"], stdin=_csv(order))
    assert float(b[-1]["epsilon"]) == pytest.approx(float(a[-1]["epsilon"]), rel=1e-12)


def test_an_opacus_history_and_an_accountant_state():
    history = [[s, q, t] for s, q, t in PHASES]
    a = _rows(
        ["sgd-epsilon", "--schedule", "-", "--delta", "1e-5", "--accountant", "all"],
        stdin=json.dumps(history),
    )
    b = _rows(
        ["sgd-epsilon", "--schedule", "-", "--delta", "1e-5", "--accountant", "all"],
        stdin=json.dumps({"history": history, "mechanism": "rdp"}),
    )
    c = _rows(
        ["sgd-epsilon", "--schedule", "-", "--delta", "1e-5", "--accountant", "all"], stdin=_csv(PHASES)
    )
    assert a == b == c
    acc = api.Accountant("pld")
    for s, q, t in PHASES:
        acc.step(noise_multiplier=s, sample_rate=q, steps=t)
    d = _rows(
        ["sgd-epsilon", "--schedule", "-", "--delta", "1e-5", "--accountant", "pld"], stdin=acc.to_json()
    )
    assert d[-1]["epsilon"] == repr(acc.get_epsilon(1e-5))


#: Opacus 1.6.0's RDPAccountant on a two-phase history (``acc.history = OPACUS_HISTORY``;
#: ``acc.get_privacy_spent(delta=d)`` -> (ε, best α)), recorded in a venv with ``pip install torch==2.13.0
#: opacus==1.6.0`` (Opacus needs torch, which the test extras do not install).  Its orders are
#: ``[1 + x / 10 for x in range(1, 100)] + list(range(12, 64))`` and its conversion Balle et al. 2020 Thm 21.
OPACUS_HISTORY = [(1.1, 256 / 60000, 2000), (0.8, 512 / 60000, 500)]
OPACUS_ORDERS = [1 + x / 10.0 for x in range(1, 100)] + list(range(12, 64))
OPACUS_EPSILON = {1e-5: 2.785833030006781, 1e-6: 3.3052518375164524}


@pytest.mark.parametrize("delta", sorted(OPACUS_EPSILON))
def test_opacus_own_accountant_on_the_same_history(delta):
    """With Opacus's orders and conversion, dpcalc's Rényi curve of the history gives Opacus's ε (to 1e-10,
    never below it); the command's rdp row (more orders, the optimal conversion) is at most Opacus's ε, and its
    pld row below that."""
    orders = np.array(OPACUS_ORDERS, float)
    sigma, q, steps = (np.array(c, float) for c in zip(*OPACUS_HISTORY))
    curve = rdp_total(q, sigma, steps, orders, neighbors="add-remove").sum(axis=0)
    same = float(np.asarray(eps_of_curve(orders, curve, np.array([delta]), "balle").value).ravel()[0])
    want = OPACUS_EPSILON[delta]
    assert want <= same <= want * (1 + 1e-10)
    rows = _rows(
        ["sgd-epsilon", "--schedule", "-", "--delta", repr(delta), "--accountant", "all"],
        stdin=json.dumps({"history": [list(p) for p in OPACUS_HISTORY]}),
    )
    last = {r["accountant"]: float(r["epsilon"]) for r in rows if r["phase"] == "2"}
    assert last["pld"] < last["rdp"] <= want


@pytest.mark.parametrize(
    "content,words",
    [
        ("noise_multiplier,sample_rate,steps\n1,0.01,-5\n", "line 2: steps"),
        ("noise_multiplier,sample_rate,steps\n1,0.01,10\nnan,0.01,10\n", "line 3: noise_multiplier"),
        ("noise_multiplier,sample_rate,steps,colour\n1,0.01,10,red\n", "unknown column 'colour'"),
        ("noise_multiplier,steps\n1,10\n", "sample_rate"),
        ("noise_multiplier,sample_rate,steps\n1,0.01\n", "line 2: 2 fields"),
        ("noise_multiplier,batch_size,steps\n1,64,10\n", "needs dataset_size"),
        ("noise_multiplier,sample_rate,steps,sampling\n1,0.01,10,shuffle\n", "Poisson sampling only"),
        ("[[1, 0.01]]", "phase 1: must be"),
        ('{"history": "x"}', "a JSON schedule is a list"),
        ("[1, 2", "not JSON"),
    ],
)
def test_bad_schedules_are_one_line(content, words):
    result = _run(["sgd-epsilon", "--schedule", "-", "--delta", "1e-5"], stdin=content)
    assert result.exit_code == 2
    lines = result.output.strip().split("\n")
    assert len(lines) == 1 and words in lines[0], result.output


def test_a_100_mb_schedule_is_refused(tmp_path):
    big = tmp_path / "big.csv"
    with open(big, "wb") as fh:
        fh.truncate(100_000_000)
    result = _run(["sgd-epsilon", "--schedule", str(big), "--delta", "1e-5"])
    assert result.exit_code == 2 and "above the limit" in result.output


@pytest.mark.parametrize("extra", [["--sigma", "1"], ["--steps", "10"], ["--target-epsilon", "3"]])
def test_a_schedule_replaces_the_run_options(extra):
    result = _run(["sgd-epsilon", "--schedule", "-", "--delta", "1e-5", *extra], stdin=_csv(PHASES))
    assert result.exit_code == 2 and "--schedule cannot be used with" in result.output
