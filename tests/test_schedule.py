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
    (row,) = _rows(["sgd-epsilon", "--schedule", str(path), "--delta", "1e-5", "--method", accountant])
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
            "--method",
            accountant,
        ]
    )
    assert row["steps"] == want["steps"] and row["epsilon"] == want["epsilon"]
    assert row["epsilon_lower"] == want["epsilon_lower"]


@pytest.mark.parametrize("accountant", ["rdp", "pld"])
def test_the_last_row_is_the_composition_of_the_phases(accountant):
    rows = _rows(
        ["sgd-epsilon", "--schedule", "-", "--delta", "1e-5", "--method", accountant], stdin=_csv(PHASES)
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
        ["sgd-epsilon", "--schedule", "-", "--delta", "1e-5", "--method", "all"],
        stdin=json.dumps(history),
    )
    b = _rows(
        ["sgd-epsilon", "--schedule", "-", "--delta", "1e-5", "--method", "all"],
        stdin=json.dumps({"history": history, "mechanism": "rdp"}),
    )
    c = _rows(["sgd-epsilon", "--schedule", "-", "--delta", "1e-5", "--method", "all"], stdin=_csv(PHASES))
    assert a == b == c
    acc = api.Accountant("pld")
    for s, q, t in PHASES:
        acc.step(noise_multiplier=s, sample_rate=q, steps=t)
    d = _rows(["sgd-epsilon", "--schedule", "-", "--delta", "1e-5", "--method", "pld"], stdin=acc.to_json())
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
        ["sgd-epsilon", "--schedule", "-", "--delta", repr(delta), "--method", "all"],
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
        ("noise_multiplier,sample_rate,steps,sampling\n1,0.01,10,shuffle\n", "line 2: sampling 'shuffle'"),
        (
            "noise_multiplier,sample_rate,steps,sampling\n1,0.01,10,truncated-poisson\n",
            "line 2: sampling truncated-poisson needs dataset_size and max_batch_size",
        ),
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


@pytest.mark.parametrize("extra", [["--sigma", "1"], ["--steps", "10"], ["--sample-rate", "0.1"]])
def test_a_schedule_replaces_the_run_options(extra):
    result = _run(["sgd-epsilon", "--schedule", "-", "--delta", "1e-5", *extra], stdin=_csv(PHASES))
    assert result.exit_code == 2 and "--schedule cannot be used with" in result.output


# ------------------------------------------------------------------------------ the noise of one phase


def _free_csv(phases, free) -> str:
    return "noise_multiplier,sample_rate,steps\n" + "".join(
        f"{'?' if i == free else repr(s)},{q!r},{t}\n" for i, (s, q, t) in enumerate(phases)
    )


def test_one_free_phase_is_sgd_epsilons_calibration():
    """A schedule of one phase with its noise left out answers as ``sgd-epsilon --target-epsilon``: the pld
    row's noise and ε exactly, the rdp row's noise the library's (rounded up, so at most 1e-12 above)."""
    (s, q, t) = PHASES[1]
    got = _rows(
        ["sgd-epsilon", "--schedule", "-", "--delta", "1e-5", "--target-epsilon", "3", "--method", "all"],
        stdin=_free_csv([PHASES[1]], 0),
    )
    want = _rows(
        [
            "sgd-epsilon",
            "--sample-rate",
            repr(q),
            "--steps",
            str(t),
            "--delta",
            "1e-5",
            "--target-epsilon",
            "3",
        ]
        + ["--method", "all"]
    )
    g = {r["accountant"]: r for r in got}
    w = {r["method"]: r for r in want}
    assert [g["pld"][k] for k in ("noise_multiplier", "epsilon", "epsilon_lower")] == [
        w["pld"][k] for k in ("noise_multiplier", "epsilon", "epsilon_lower")
    ]
    a, b = float(g["rdp"]["noise_multiplier"]), float(w["rdp"]["noise_multiplier"])
    assert b <= a <= b * (1 + 1e-12)
    assert float(g["rdp"]["epsilon"]) <= 3.0


@pytest.mark.parametrize("free,names", [(0, ("rdp",)), (1, ("rdp", "pld")), (2, ("rdp",))])
def test_the_noise_found_meets_the_target_and_a_little_less_misses_it(free, names):
    """Several phases, one left out: the run with the noise found ends within the target, and with the
    noise one search step (1 + 1e-4) smaller it ends above it (each by the same accountant, as printed);
    the running ε never decreases."""
    target = 3.5
    rows = _rows(
        [
            "sgd-epsilon",
            "--schedule",
            "-",
            "--delta",
            "1e-5",
            "--target-epsilon",
            repr(target),
            "--method",
            "all",
        ],
        stdin=_free_csv(PHASES, free),
    )
    for name in ("rdp", "pld"):
        mine = [r for r in rows if r["accountant"] == name]
        eps = [float(r["epsilon"]) for r in mine]
        assert eps == sorted(eps) and eps[-1] <= target
        assert "noise multiplier found" in mine[free]["note"]
        sigma = float(mine[free]["noise_multiplier"])
        below = [(sigma / (1 + 1e-4) if i == free else s, q, t) for i, (s, q, t) in enumerate(PHASES)]
        again = _rows(
            ["sgd-epsilon", "--schedule", "-", "--delta", "1e-5", "--method", name], stdin=_csv(below)
        )
        assert float(again[-1]["epsilon"]) > target
        same = [(sigma if i == free else s, q, t) for i, (s, q, t) in enumerate(PHASES)]
        again = _rows(
            ["sgd-epsilon", "--schedule", "-", "--delta", "1e-5", "--method", name], stdin=_csv(same)
        )
        assert again[-1]["epsilon"] == mine[-1]["epsilon"]


def test_an_unreachable_target_says_so():
    """The other phases alone are above the target: no noise meets it; the free phase and those after it get
    no finite bound, the phases before it their own ε."""
    rows = _rows(
        ["sgd-epsilon", "--schedule", "-", "--delta", "1e-5", "--target-epsilon", "1", "--method", "all"],
        stdin=json.dumps([[0.5, 0.1, 1000], [None, 0.01, 10]]),
    )
    for name in ("rdp", "pld"):
        first, second = [r for r in rows if r["accountant"] == name]
        assert float(first["epsilon"]) > 1 and second["epsilon"] == "inf"
        assert second["noise_multiplier"] == "inf" and "no noise multiplier" in second["note"]


@pytest.mark.parametrize(
    "content,extra,words",
    [
        (
            "noise_multiplier,sample_rate,steps\n?,0.01,10\n?,0.01,10\n",
            ["--target-epsilon", "3"],
            "both leave",
        ),
        ("noise_multiplier,sample_rate,steps\n?,0.01,10\n", [], "give --target-epsilon"),
        ("noise_multiplier,sample_rate,steps\n1,0.01,10\n", ["--target-epsilon", "3"], "write ? as"),
        (
            "noise_multiplier,sample_rate,steps\n?,0.01,10\n",
            ["--target-epsilon", "3", "--delta", "1e-6,1e-5"],
            "single --delta",
        ),
        ("noise_multiplier,sample_rate,steps\n?,0.01,10\n", ["--target-epsilon", "1,3"], "single value"),
    ],
)
def test_bad_free_phases_are_one_line(content, extra, words):
    delta = [] if "--delta" in extra else ["--delta", "1e-5"]
    result = _run(["sgd-epsilon", "--schedule", "-", *delta, *extra], stdin=content)
    assert result.exit_code == 2, result.output
    lines = result.output.strip().split("\n")
    assert len(lines) == 1 and words in lines[0], result.output


# ------------------------------------------------------------------------------ phases of other samplers

SAMPLED = [
    ("fixed-size", ["--batch-size", "64", "--dataset-size", "10000", "--epochs", "1"], "64,10000,1,", ""),
    (
        "truncated-poisson",
        ["--batch-size", "256", "--dataset-size", "10000", "--epochs", "2", "--max-batch-size", "300"],
        "256,10000,2,",
        "300",
    ),
]


@pytest.mark.parametrize("sampling,options,cells,bmax", SAMPLED, ids=[s[0] for s in SAMPLED])
def test_one_phase_of_another_sampler_is_sgd_epsilon_exactly(sampling, options, cells, bmax):
    """A phase names its sampler (the column, or --sampling for all): one phase is ``sgd-epsilon --sampling``'s
    rdp row exactly (fixed-size: replace-one neighbours, as there), the noise found for it within the target."""
    head = "noise_multiplier,batch_size,dataset_size,epochs,sampling,max_batch_size\n"
    (a,) = _rows(
        ["sgd-epsilon", "--schedule", "-", "--delta", "1e-5"], stdin=head + f"1.3,{cells}{sampling},{bmax}\n"
    )
    (b,) = _rows(["sgd-epsilon", "--sigma", "1.3", *options, "--sampling", sampling, "--delta", "1e-5"])
    assert (a["steps"], a["epsilon"]) == (b["steps"], b["epsilon"])
    (c,) = _rows(
        ["sgd-epsilon", "--schedule", "-", "--delta", "1e-5", "--target-epsilon", a["epsilon"]],
        stdin=head + f"?,{cells}{sampling},{bmax}\n",
    )
    assert float(c["epsilon"]) <= float(a["epsilon"]) and float(c["noise_multiplier"]) <= 1.3 * (1 + 1e-4)


def test_phases_of_several_samplers_compose_by_their_curves():
    """A fixed-size warm-up, then Poisson phases (replace-one, the relation fixed-size needs): the running ε
    never decreases, any order gives the same total, and the pld accountant (Poisson phases only) refuses,
    naming the line; fixed-size with add/remove neighbours is refused, naming the line."""
    head = "noise_multiplier,batch_size,dataset_size,epochs,sampling\n"
    lines = ["1.5,64,10000,1,fixed-size\n", "1.1,256,10000,5,poisson\n", "0.9,256,10000,2,poisson\n"]
    rows = _rows(["sgd-epsilon", "--schedule", "-", "--delta", "1e-5"], stdin=head + "".join(lines))
    eps = [float(r["epsilon"]) for r in rows]
    assert eps == sorted(eps) and len(eps) == 3
    back = _rows(["sgd-epsilon", "--schedule", "-", "--delta", "1e-5"], stdin=head + "".join(lines[::-1]))
    assert float(back[-1]["epsilon"]) == pytest.approx(eps[-1], rel=1e-12)
    pld = _run(
        ["sgd-epsilon", "--schedule", "-", "--delta", "1e-5", "--method", "pld"],
        stdin=head + "".join(lines),
    )
    assert pld.exit_code == 2 and "line 2: sampling fixed-size: the pld accountant" in pld.output
    add = _run(
        ["sgd-epsilon", "--schedule", "-", "--delta", "1e-5", "--neighbors", "add-remove"],
        stdin=head + "".join(lines),
    )
    assert add.exit_code == 2 and "line 2:" in add.output and "replace-one" in add.output
