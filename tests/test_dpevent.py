"""DpEvents in and out (``compose --dp-event``, ``--write-dp-event``; ``sgd-epsilon --write-dp-event``): round trips
through dp-accounting (a test-only dependency), the same numbers as the run given as options, and refusals that
name the class and its place in the tree."""

from __future__ import annotations

import collections
import csv
import io
import json
import math

import pytest
from click.testing import CliRunner

from dpcalc.cli import main

dp_accounting = pytest.importorskip("dp_accounting")
from dp_accounting import dp_event  # noqa: E402
from dp_accounting.pld import pld_privacy_accountant  # noqa: E402
from dp_accounting.rdp import rdp_privacy_accountant  # noqa: E402


def _run(args, stdin=None):
    return CliRunner().invoke(main, args, input=stdin)


def _rows(args, stdin=None):
    result = _run([*args, "-f", "csv"], stdin)
    assert result.exit_code == 0, result.output
    return list(csv.DictReader(io.StringIO(result.stdout)))


def _to_named_tuple(obj):
    """The JSON object as dp-accounting's named tuples (what to_named_tuple() makes), recursively."""
    if isinstance(obj, dict):
        fields = {k: _to_named_tuple(v) for k, v in obj.items()}
        fields.setdefault("module_name", "dp_accounting.dp_event")
        cls = collections.namedtuple(f"_{fields['class_name']}", list(fields))
        return cls(**fields)
    if isinstance(obj, list):
        return [_to_named_tuple(v) for v in obj]
    return obj


def _to_json(nt):
    """dp-accounting's named tuple as the JSON object dpcalc reads."""
    if hasattr(nt, "_asdict"):
        return {k: _to_json(v) for k, v in nt._asdict().items()}
    if isinstance(nt, (list, tuple)):
        return [_to_json(v) for v in nt]
    return nt


SPECS = [
    ["subsampled-gaussian:sigma=1.1,q=0.01,count=500"],
    ["gaussian:sigma=3,count=10", "laplace:scale=20,count=5"],
    ["subsampled-gaussian:sigma=1,q=0.02,count=200", "discrete-laplace:scale=10,count=3"],
    ["mixture-gaussian:sigma=1,group=3,q=0.01,count=100"],
]


@pytest.mark.parametrize("specs", SPECS, ids=[s[0][:30] for s in SPECS])
def test_written_events_give_dp_accountings_epsilon_inside_our_bracket(specs, tmp_path):
    text = _run(["compose", *specs, "--write-dp-event"])
    assert text.exit_code == 0, text.output
    event = dp_event.DpEvent.from_named_tuple(_to_named_tuple(json.loads(text.stdout)))
    (ours,) = _rows(["compose", *specs, "--delta", "1e-5", "--method", "pld"])
    lo, up = float(ours["epsilon_lower"]), float(ours["epsilon"])
    if "mixture" not in " ".join(
        specs
    ):  # the mixture against dp-accounting: tests/test_group_compose.py (slow)
        acc = pld_privacy_accountant.PLDAccountant(value_discretization_interval=1e-4)
        acc.compose(event)
        theirs = acc.get_epsilon(1e-5)
        assert lo <= theirs <= up * (1 + 5e-3)  # theirs: pessimistic, within its discretisation
    if "mixture" not in " ".join(specs) and "discrete" not in " ".join(specs):
        rdp = rdp_privacy_accountant.RdpAccountant()
        rdp.compose(event)
        (ours_rdp,) = _rows(["compose", *specs, "--delta", "1e-5", "--method", "rdp"])
        assert float(ours_rdp["epsilon"]) <= rdp.get_epsilon(1e-5) * (
            1 + 1e-6
        )  # ours: the optimal conversion
    # and read back: the same numbers as the specs themselves
    path = tmp_path / "ev.json"
    path.write_text(text.stdout)
    (back,) = _rows(["compose", "--dp-event", str(path), "--delta", "1e-5", "--method", "pld"])
    assert back == ours


def test_dp_accountings_own_events_read_as_the_same_run():
    event = dp_event.ComposedDpEvent(
        [
            dp_event.SelfComposedDpEvent(
                dp_event.PoissonSampledDpEvent(0.01, dp_event.GaussianDpEvent(1.1)), 500
            ),
            dp_event.SelfComposedDpEvent(dp_event.LaplaceDpEvent(20.0), 5),
            dp_event.NoOpDpEvent(),
        ]
    )
    text = json.dumps(_to_json(event.to_named_tuple()))
    got = _rows(["compose", "--dp-event", "-", "--delta", "1e-5", "--method", "all"], stdin=text)
    want = _rows(
        [
            "compose",
            "subsampled-gaussian:sigma=1.1,q=0.01,count=500",
            "laplace:scale=20,count=5",
            "--delta",
            "1e-5",
            "--method",
            "all",
        ]
    )
    assert got == want


def test_a_dp_sgd_run_as_an_event_is_the_same_run():
    run = ["--sigma", "1.1", "--sample-rate", "0.01", "--steps", "1000"]
    text = _run(["sgd-epsilon", *run, "--write-dp-event"])
    assert text.exit_code == 0, text.output
    (a,) = _rows(["compose", "--dp-event", "-", "--delta", "1e-5", "--method", "pld"], stdin=text.stdout)
    (b,) = _rows(["sgd-epsilon", *run, "--delta", "1e-5", "--accountant", "pld"])
    assert (a["epsilon"], a["epsilon_lower"]) == (b["epsilon"], b["epsilon_lower"])
    event = dp_event.DpEvent.from_named_tuple(_to_named_tuple(json.loads(text.stdout)))
    acc = pld_privacy_accountant.PLDAccountant(value_discretization_interval=1e-4)
    acc.compose(event)
    assert float(b["epsilon_lower"]) <= acc.get_epsilon(1e-5) <= float(b["epsilon"]) * (1 + 5e-3)


def test_the_odometer_reads_a_composition_step_by_step(tmp_path):
    """odometer --dp-event: a ComposedDpEvent's events are the adaptive steps, in order, before --event; the
    rows equal the same steps given as --event; the final plain RDP ε is dp-accounting's RDP accountant on
    the same event at the odometer's orders (Mironov's conversion there; ours is at most it)."""
    event = dp_event.ComposedDpEvent(
        [
            dp_event.GaussianDpEvent(5.0),
            dp_event.SelfComposedDpEvent(
                dp_event.PoissonSampledDpEvent(0.02, dp_event.GaussianDpEvent(1.2)), 300
            ),
            dp_event.LaplaceDpEvent(3.0),
        ]
    )
    path = tmp_path / "run.json"
    path.write_text(json.dumps(_to_json(event.to_named_tuple())), encoding="utf-8")
    got = _rows(["odometer", "--dp-event", str(path), "--event", "gaussian:sigma=4", "--delta", "1e-6"])
    want = _rows(
        [
            "odometer",
            *("--event", "gaussian:sigma=5"),
            *("--event", "subsampled-gaussian:sigma=1.2,q=0.02,count=300"),
            *("--event", "laplace:scale=3"),
            *("--event", "gaussian:sigma=4"),
            *("--delta", "1e-6"),
        ]
    )
    assert [r["step"] for r in got] == ["1", "2", "3", "4"]
    keys = ("epsilon", "alpha", "level", "epsilon_rdp")
    assert [[r[k] for k in keys] for r in got] == [[r[k] for k in keys] for r in want]
    orders = [1.25 + 0.25 * i for i in range(36)] + [16, 32]
    acc = rdp_privacy_accountant.RdpAccountant(orders)
    acc.compose(event)
    three = float(got[2]["epsilon_rdp"])
    assert three <= acc.get_epsilon(1e-6) * (1 + 1e-9)
    stdin = _run(["odometer", "--dp-event", "-", "-", "--delta", "1e-6"], stdin="")
    assert stdin.exit_code == 2 and "both read standard input" in stdin.output
    ledger = _run(["odometer", "--ledger", str(tmp_path / "l"), "--dp-event", str(path)])
    assert ledger.exit_code == 2 and "cannot be used with --ledger" in ledger.output


def test_k_ary_randomized_response_and_trees():
    rr = {"class_name": "RandomizedResponseDpEvent", "noise_parameter": 0.5, "num_buckets": 4}
    (row,) = _rows(["compose", "--dp-event", "-", "--delta", "0"], stdin=json.dumps(rr))
    assert float(row["epsilon"]) >= math.log1p(4 * 0.5 / 0.5) and float(row["epsilon"]) == pytest.approx(
        math.log(5)
    )
    tree = {
        "class_name": "SingleEpochTreeAggregationDpEvent",
        "noise_multiplier": 2.0,
        "step_counts": [4, 16, 8],
    }
    a = _rows(["compose", "--dp-event", "-", "--delta", "1e-5"], stdin=json.dumps(tree))
    b = _rows(["compose", "tree-aggregation:sigma=2,steps=16", "--delta", "1e-5"])
    assert a == b


@pytest.mark.parametrize(
    "event,words",
    [
        ({"class_name": "FooDpEvent"}, "event (FooDpEvent): an unknown DpEvent class"),
        (
            {
                "class_name": "ComposedDpEvent",
                "events": [
                    {"class_name": "GaussianDpEvent", "noise_multiplier": 1.0},
                    {"class_name": "NonPrivateDpEvent"},
                ],
            },
            "event.events[1] (NonPrivateDpEvent)",
        ),
        ({"class_name": "GaussianDpEvent"}, "missing field 'noise_multiplier'"),
        (
            {
                "class_name": "SelfComposedDpEvent",
                "count": -3,
                "event": {"class_name": "GaussianDpEvent", "noise_multiplier": 1.0},
            },
            "count must be",
        ),
        ({"class_name": "GaussianDpEvent", "noise_multiplier": float("nan")}, "finite number"),
        (
            {
                "class_name": "PoissonSampledDpEvent",
                "sampling_probability": 0.1,
                "event": {
                    "class_name": "SelfComposedDpEvent",
                    "count": 3,
                    "event": {"class_name": "GaussianDpEvent", "noise_multiplier": 1.0},
                },
            },
            "not their composition",
        ),
        ({"class_name": "RepeatAndSelectDpEvent", "mean": 3, "shape": 1}, "--tuning-runs"),
        ({"class_name": "ZCDpEvent", "rho": 0.1, "xi": 0.2}, "xi"),
    ],
)
def test_bad_events_are_one_line(event, words):
    result = _run(["compose", "--dp-event", "-", "--delta", "1e-5"], stdin=json.dumps(event))
    assert result.exit_code == 2
    lines = result.output.strip().split("\n")
    assert len(lines) == 1 and words in lines[0], result.output


def test_big_and_broken_files_are_refused(tmp_path):
    big = tmp_path / "big.json"
    with open(big, "wb") as fh:
        fh.truncate(100_000_000)  # 100 MB (sparse)
    result = _run(["compose", "--dp-event", str(big), "--delta", "1e-5"])
    assert result.exit_code == 2 and "above the limit" in result.output
    broken = tmp_path / "broken.json"
    broken.write_text("{class_name")
    result = _run(["compose", "--dp-event", str(broken), "--delta", "1e-5"])
    assert (
        result.exit_code == 2 and "not JSON" in result.output and len(result.output.strip().split("\n")) == 1
    )


def test_kinds_without_an_event_are_refused_when_writing():
    result = _run(["compose", "exponential:epsilon=0.1", "--write-dp-event"])
    assert result.exit_code == 2 and "exponential" in result.output
    result = _run(
        [
            "sgd-epsilon",
            "--sigma",
            "1",
            "--sample-rate",
            "0.01",
            "--steps",
            "10",
            "--sampling",
            "balls-in-bins",
            "--write-dp-event",
        ]
    )
    assert result.exit_code == 2 and "balls-in-bins" in result.output
