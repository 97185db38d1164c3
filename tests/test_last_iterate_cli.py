"""``sgd-epsilon --release last-iterate``: the last-iterate heuristic of Steinke et al. 2025 as a row of its own,
beside the full-release bounds: its value an estimate, never read by -q, --max-epsilon or a plot's bound."""

from __future__ import annotations

import csv
import io
import json

import pytest

from dpcalc.engine.dpsgd.last_iterate import last_iterate_delta, last_iterate_epsilon

RUN = ["sgd-epsilon", "--sigma", "1", "--sample-rate", "0.01", "--steps", "1000"]
LAST = ["--release", "last-iterate"]


def _rows(res):
    assert res.exit_code == 0, res.stderr
    return list(csv.DictReader(io.StringIO(res.stdout)))


def test_the_heuristic_row_is_an_estimate_beside_the_bound(invoke):
    rows = _rows(invoke([*RUN, "--delta", "1e-5", "--method", "pld", *LAST, "-f", "csv"]))
    pld, last = rows
    assert pld["method"] == "pld" and float(pld["epsilon"]) > 1.8
    assert last["method"] == "last-iterate-heuristic" and last["accountant"] == "last-iterate"
    assert last["epsilon"] == "" and last["valid"] == "" and "NOT a bound" in last["note"]
    value = float(last["epsilon_estimate"])
    assert value == float(last_iterate_epsilon(1e-5, 1.0, 0.01, 1000))
    assert value == pytest.approx(1.27776, abs=1e-5)  # the reference value (mpmath, both directions)
    assert value < float(pld["epsilon_lower"])  # releasing the last model only: less than the full release


def test_quiet_and_budgets_read_the_bounds_only(invoke):
    quiet = invoke([*RUN, "--delta", "1e-5", "--method", "pld", *LAST, "-q"])
    full = invoke([*RUN, "--delta", "1e-5", "--method", "pld", "-q"])
    assert quiet.exit_code == 0 and quiet.stdout == full.stdout
    # a budget between the heuristic (1.28) and the bound (1.83): the bound decides, exit 3
    over = invoke([*RUN, "--delta", "1e-5", "--method", "pld", *LAST, "--max-epsilon", "1.5", "-f", "csv"])
    assert over.exit_code == 3 and "method pld" in over.stderr


def test_delta_at_epsilon(invoke):
    rows = _rows(invoke([*RUN, "--epsilon", "1", *LAST, "-f", "csv"]))
    last = rows[-1]
    assert last["method"] == "last-iterate-heuristic" and last["delta"] == ""
    assert float(last["delta_estimate"]) == float(last_iterate_delta(1.0, 1.0, 0.01, 1000))


@pytest.mark.parametrize("fmt", ["table", "csv", "tsv", "json", "jsonl"])
def test_every_format_carries_the_row(invoke, fmt):
    res = invoke([*RUN, "--delta", "1e-5", *LAST, "-f", fmt])
    assert res.exit_code == 0, res.stderr
    assert "last-iterate-heuristic" in res.stdout
    if fmt == "json":
        rows = json.loads(res.stdout)
        assert rows[-1]["epsilon"] is None and rows[-1]["epsilon_estimate"] > 1.0


@pytest.mark.parametrize(
    "extra, words",
    [
        (["--sampling", "fixed-size"], "Poisson sampling"),
        (["--neighbors", "replace-one"], "Poisson sampling"),
        (["--group-size", "2"], "one example"),
    ],
)
def test_refused_outside_its_setting(invoke, extra, words):
    res = invoke([*RUN, "--delta", "1e-5", *LAST, *extra])
    assert res.exit_code == 2 and words in res.stderr and len(res.stderr.strip().splitlines()) == 1


def test_refused_with_a_target(invoke):
    res = invoke(
        ["sgd-epsilon", "--sample-rate", "0.01", "--steps", "1000", "--delta", "1e-5"]
        + LAST
        + ["--target-epsilon", "2"]
    )
    assert res.exit_code == 2 and "--target-epsilon" in res.stderr
