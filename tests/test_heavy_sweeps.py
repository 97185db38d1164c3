"""Heavy sweeps of iterate, langevin, convert and their Rényi curves are estimated, not refused (issue 40): the
old row limits (20,000 rows of iterate and langevin, 200,000 configurations of a curve, 20,000 rows of convert
--from dp) are gone; the work is estimated before anything is computed (``--max-seconds`` refuses it up front,
naming the estimate), the rows stream in chunks formed from the axes (memory bounded by the chunk), and the
chunks give the same rows on one process or several."""

import json
import tracemalloc

import pytest

from dpcalc import execution
from dpcalc.commands import curve
from dpcalc.commands.convert import command as convert
from dpcalc.commands.iterate import command as iterate
from dpcalc.commands.langevin import command as langevin

_LANGEVIN = ["--sigma", "0.02", "--sensitivity", "4", "--lr", "0.02", "--strong-convexity", "1"]
_LANGEVIN += ["--smoothness", "1", "--dataset-size", "5000"]

#: A sweep past each old limit, and the start of its one-line refusal under --max-seconds 0.5.
PAST_THE_OLD_LIMITS = {
    "iterate": (
        ["iterate", "--sigma", "5", "--lipschitz", "1", "--lr", "0.05", "--steps", "1:100000:1"]
        + ["--delta", "1e-5"],
        "300,000 rows of privacy amplification by iteration (--method all)",
    ),
    "langevin": (
        ["langevin", *_LANGEVIN[:2], "--sensitivity", "1:200:1", *_LANGEVIN[4:], "--steps", "1:200:1"]
        + ["--delta", "1e-5"],
        "120,000 rows of Langevin privacy dynamics (--method all)",
    ),
    "convert": (
        ["convert", "--from", "dp", "--alpha", "2:100001:1", "--epsilon", "1", "--delta", "1e-5"],
        "100,000 rows of DP → RDP conversions",
    ),
    "convert-points": (
        ["convert", "--alpha", "1.5:1000:0.5", "--rdp", "0.1:100:0.1", "--delta", "1e-5"],
        "1,998,000 rows of RDP conversions",
    ),
    "rdp-curve": (
        ["iterate", "--sigma", "1:500:1", "--lipschitz", "1", "--lr", "0.05", "--steps", "1:500:1"]
        + ["--rdp-curve", "--alphas", "2,4"],
        "1,000,000 rows of iterate Rényi curves",
    ),
}


def _no_work(monkeypatch):
    def fail(*a, **k):
        raise AssertionError("work started")

    monkeypatch.setattr(execution, "map_ordered", fail)


@pytest.mark.parametrize("name", sorted(PAST_THE_OLD_LIMITS))
def test_a_sweep_past_the_old_limit_is_estimated_and_capped_without_computing(invoke, monkeypatch, name):
    _no_work(monkeypatch)
    args, what = PAST_THE_OLD_LIMITS[name]
    res = invoke([*args, "--max-seconds", "0.5", "--jobs", "1", "-f", "csv"])
    assert res.exit_code == 2 and res.stdout == ""
    (line,) = res.stderr.splitlines()
    assert line.startswith(f"Error: --max-seconds 0.5: {what} on 1 process would take about "), line
    assert line.endswith("above the cap; narrow the work or raise the cap")


def test_the_output_limit_stays(invoke, monkeypatch):
    _no_work(monkeypatch)
    args = ["iterate", "--sigma", "1:100:0.01", "--lipschitz", "1:100:0.01", "--lr", "0.05", "--steps", "10"]
    res = invoke([*args, "--delta", "1e-5"])
    assert res.exit_code == 2 and res.stdout == ""
    assert "more than 100,000,000" in res.stderr and len(res.stderr.splitlines()) == 1


def _rows(invoke, args, jobs):
    res = invoke([*args, "--jobs", str(jobs)])
    assert res.exit_code == 0, res.stderr
    return res.stdout


#: Small sweeps, cut into several chunks below (the chunk sizes monkeypatched), with mixed notes for iterate.
SMALL = {
    "iterate": ["iterate", "--sigma", "0.01,2,5", "--lipschitz", "1", "--lr", "0.05", "--steps", "1,40,300"]
    + ["--alpha", "2,9", "--delta", "1e-5", "--initial-distance", "1", "-f", "jsonl"],
    "langevin": [
        "langevin",
        *_LANGEVIN,
        "--steps",
        "1:40:3",
        "--delta",
        "1e-5",
        "--alpha",
        "2",
        "-f",
        "json",
    ],
    "convert": [
        "convert",
        "--from",
        "dp",
        "--alpha",
        "2:30:1",
        "--epsilon",
        "1",
        "--delta",
        "1e-5",
        "-f",
        "csv",
    ],
    "convert-points": ["convert", "--alpha", "2:20:1", "--rdp", "0.5,1", "--delta", "1e-5", "--method", "all"]
    + ["-f", "jsonl"],
    "rdp-curve": [
        "langevin",
        *_LANGEVIN,
        "--steps",
        "1:20:1",
        "--rdp-curve",
        "--alphas",
        "2,4,8",
        "-f",
        "csv",
    ],
}


@pytest.mark.parametrize("name", sorted(SMALL))
def test_rows_are_the_same_on_one_process_and_two_in_chunks(invoke, monkeypatch, name):
    whole = _rows(invoke, SMALL[name], 1)
    monkeypatch.setattr(iterate, "CHUNK", 4)
    monkeypatch.setattr(iterate, "WHOLE_ROWS", 10)  # stream chunk by chunk
    monkeypatch.setattr(langevin, "CHUNK", 4)
    monkeypatch.setattr(convert, "CHUNK", 4)
    monkeypatch.setattr(curve, "CHUNK_ROWS", 9)
    one = _rows(invoke, SMALL[name], 1)
    two = _rows(invoke, SMALL[name], 2)
    assert one == two
    if name != "iterate":
        assert one == whole  # the chunks change nothing
    else:  # only a note: in JSON, an empty note where the chunk has one and none where it has not
        strip = [{k: v for k, v in json.loads(x).items() if k != "note" or v} for x in whole.splitlines()]
        assert [
            {k: v for k, v in json.loads(x).items() if k != "note" or v} for x in one.splitlines()
        ] == strip
        assert any(json.loads(x)["note"] for x in one.splitlines())


def test_a_sweep_within_the_old_limit_is_one_result_whatever_its_chunks(invoke, monkeypatch):
    # iterate's rows as they always were: a row without a note has an empty note when another row has one
    whole = _rows(invoke, SMALL["iterate"], 1)
    monkeypatch.setattr(iterate, "CHUNK", 2)
    assert _rows(invoke, SMALL["iterate"], 2) == whole
    notes = [json.loads(x)["note"] for x in whole.splitlines()]
    assert "" in notes and any(notes) and None not in notes


def test_a_chunk_forms_only_its_own_combinations(monkeypatch):
    # 27 million combinations: the first chunk of 1,000 is formed from the axes, never the whole product
    monkeypatch.setattr(iterate, "CHUNK", 1000)
    axis = [1.0 + i / 300 for i in range(300)]
    params = iterate.IterateParams(
        sigma=axis, lipschitz=axis, lr=[0.05], steps=list(range(1, 301)), delta=[1e-5], method="composition"
    )
    tracemalloc.start()
    try:
        with execution.using(jobs=1):
            stream = iterate.iterate_stream(params)
            first = next(iter(stream.chunks))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert len(first) == 1000 and first.column("steps")[:3] == [1, 2, 3]
    assert peak < 60e6, peak
