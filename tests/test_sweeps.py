"""Large sweeps: written chunk by chunk (same bytes as the whole result), by one or several processes,
and refused up front when their output would be absurd."""

import io
import json

import pytest

from dpcalc.commands import sweep
from dpcalc.commands.sgd.epsilon import sgd_epsilon, sgd_epsilon_stream
from dpcalc.commands.sgd.params import SgdEpsilonParams
from dpcalc.errors import InputError
from dpcalc.render import ChunkWriter, render

PARAMS = SgdEpsilonParams(
    delta=[1e-5, 1e-7], sigma=[0.7, 1.1, 2.0], sample_rate=[0.001, 0.01, 0.05], steps=[10, 1000, 100000]
)
#: every accountant (pld costs a grid and an FFT per row: few rows)
PARAMS_ALL = SgdEpsilonParams(
    delta=[1e-5], sigma=[0.9, 1.3], sample_rate=[0.01], steps=[100, 1000], accountant="all"
)


@pytest.fixture
def scipy_throughout(monkeypatch):
    """The whole result computed as a sweep of several chunks computes it: scipy for every array."""
    import contextlib

    from dpcalc.engine.mechanisms import sgm

    monkeypatch.setattr(sgm, "light_start", lambda full=False: contextlib.nullcontext())


def _write(stream, fmt, quiet=False):
    buf = io.StringIO()
    w = ChunkWriter(stream.names, fmt, buf, quiet=quiet, headline=stream.headline)
    for chunk in stream.chunks:
        w.write(chunk)
    w.close()
    return buf.getvalue()


@pytest.mark.parametrize("fmt,quiet", [("csv", False), ("json", False), ("csv", True)])
@pytest.mark.parametrize("params", [PARAMS, PARAMS_ALL], ids=["rdp", "all"])
@pytest.mark.parametrize("chunk", [1, 7])
def test_chunks_write_the_bytes_of_the_whole_result(scipy_throughout, fmt, quiet, params, chunk):
    whole = io.StringIO()
    render(sgd_epsilon(params), fmt, whole, quiet=quiet)
    assert _write(sgd_epsilon_stream(params, chunk=chunk), fmt, quiet) == whole.getvalue()


def test_one_chunk_is_the_whole_result():
    whole = io.StringIO()
    render(sgd_epsilon(PARAMS), "csv", whole)
    assert _write(sgd_epsilon_stream(PARAMS, chunk=1000), "csv") == whole.getvalue()


def test_an_empty_json_stream_is_an_empty_array():
    buf = io.StringIO()
    ChunkWriter(["a"], "json", buf).close()
    assert json.loads(buf.getvalue()) == []


def test_worker_processes_give_the_same_rows_in_the_same_order():
    one = _write(sgd_epsilon_stream(PARAMS, chunk=5, jobs=1), "csv")
    two = _write(sgd_epsilon_stream(PARAMS, chunk=5, jobs=2), "csv")
    assert one == two and one.count("\n") == 1 + 54


def test_the_command_line_streams_and_judges_the_budget_after_every_row(invoke, monkeypatch):
    from dpcalc.commands.sgd import epsilon as command

    monkeypatch.setattr(command, "CHUNK", 7)  # several chunks, and a pool of two processes
    args = [
        "sgd-epsilon",
        "--sigma",
        "0.7,1.1,2",
        "--sample-rate",
        "0.001,0.01,0.05",
        "--steps",
        "10,1000,100000",
    ]
    args += ["--delta", "1e-5,1e-7", "-f", "csv"]
    whole = invoke([*args, "--jobs", "1"])
    pooled = invoke([*args, "--jobs", "2"])
    assert whole.exit_code == pooled.exit_code == 0 and whole.stdout == pooled.stdout
    over = invoke([*args, "--max-epsilon", "1"])
    assert over.exit_code == 3 and over.stdout == whole.stdout
    import csv

    eps = [float(r["epsilon"]) for r in csv.DictReader(io.StringIO(whole.stdout))]
    first = next(i for i, e in enumerate(eps, 1) if e > 1)
    over_count = sum(e > 1 for e in eps)  # one rdp row per configuration: the first past the budget is named
    assert (
        f"(tightest certified row {first}, method rdp; {over_count} of {len(eps)} configurations"
        in over.stderr
    )


def test_absurd_sweeps_are_refused_before_any_work(invoke):
    res = invoke(
        [
            "sgd-epsilon",
            "--sample-rate",
            "0.0001:1:x1.001",
            "--noise-multiplier",
            "0.5:50:0.001",
            "--steps",
            "100:1000:10",
            "--delta",
            "1e-5",
        ]
    )
    assert res.exit_code == 2 and res.stdout == ""
    assert "would make 41,509,806,065 rows" in res.stderr and "--noise-multiplier (49,501)" in res.stderr
    with pytest.raises(InputError, match="more than 100,000,000"):
        sweep.check_rows({"--a": 100_000, "--b": 1001})


def test_pool_only_for_big_work():
    from dpcalc import execution

    assert execution.processes(seconds=0.1) == 1 and execution.processes(parallel=1) == 1
    assert execution.processes(seconds=10, parallel=3) == min(execution.cpu_count(), 3)
    assert sweep.chunk_rows(2048, 0.1, 1000) == 2048  # light work: the chunks as asked
    assert sweep.chunk_rows(2048, 50.0, 500) == int(
        sweep.CHUNK_SECONDS / 0.1
    )  # 0.1 s a row: CHUNK_SECONDS each
    assert sweep.chunk_rows(2048, 50.0, 500) == 5
    assert sweep.slices(10, 4) == [(0, 4), (4, 8), (8, 10)] and sweep.slices(10, None) == [(0, 10)]


@pytest.mark.parametrize("fmt", ["csv", "json"])
def test_convert_sweeps_stream_the_bytes_of_the_whole_result(fmt):
    from dpcalc.commands.convert.command import ConvertParams, convert, convert_stream

    params = ConvertParams(alpha=[1.5, 2, 10, 100], rdp=[0.001, 0.1, 1, 10], delta=[1e-5, 1e-9], method="all")
    whole = io.StringIO()
    render(convert(params), fmt, whole)
    assert _write(convert_stream(params, chunk=5), fmt) == whole.getvalue()


def test_convert_refuses_absurd_sweeps(invoke):
    res = invoke(["convert", "--alpha", "1.001:1000:0.001", "--rdp", "0.001:1000:0.001", "--delta", "1e-5"])
    assert res.exit_code == 2 and "rows, more than 100,000,000" in res.stderr and res.stdout == ""
