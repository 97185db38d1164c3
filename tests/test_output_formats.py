"""The machine formats scripts build on: csv, tsv, json, jsonl; --columns; infinity vs "does not
apply"; -q labels; streaming chunk by chunk."""

import csv
import io
import json
import math

import pytest

from dpcalc.commands.sgd.epsilon import sgd_epsilon, sgd_epsilon_stream
from dpcalc.commands.sgd.params import SgdEpsilonParams
from dpcalc.errors import InputError
from dpcalc.render import ChunkWriter, RowWriter, render, to_string
from dpcalc.result import Result, Stream

COMPOSE = [
    "compose",
    "gaussian:sigma=2,count=10",
    "laplace:scale=3",
    "--delta",
    "1e-5,1e-6",
    "--method",
    "all",
]
SGD = [
    "sgd-epsilon",
    "--noise-multiplier",
    "1.1",
    "--batch-size",
    "256",
    "--dataset-size",
    "60000",
    "--epochs",
    "10:30:10",
    "--delta",
    "1e-5",
]
PARAMS_ALL = SgdEpsilonParams(
    delta=[1e-5], sigma=[0.9, 1.3], sample_rate=[0.01], steps=[100, 1000], accountant="all"
)


def _odd():
    """Infinity, minus infinity, nan, a missing value, and text that would break a row."""
    return Result(
        {
            "method": ["a", "b", "c", "d"],
            "epsilon": [math.inf, -math.inf, math.nan, None],
            "delta": [1e-5, 0.5, 1.0, 2.5e-300],
            "note": ["x, y", 'say "hi", twice', "tab\there", "line\nbreak\r\nand cr"],
        }
    )


def test_json_tells_infinity_from_does_not_apply():
    rows = json.loads(to_string(_odd(), "json"))
    assert [r["epsilon"] for r in rows] == ["inf", "-inf", None, None]
    assert rows[3]["delta"] == 2.5e-300 and rows[0]["note"] == "x, y"


def test_jsonl_is_one_object_per_line_with_the_json_values():
    text = to_string(_odd(), "jsonl")
    lines = text.splitlines()
    assert len(lines) == 4 and text.endswith("\n")
    assert [json.loads(ln) for ln in lines] == json.loads(to_string(_odd(), "json"))
    assert all(ln.startswith("{") and ln.endswith("}") for ln in lines)


def test_csv_quotes_commas_and_tells_infinity_from_empty():
    rows = list(csv.reader(io.StringIO(to_string(_odd(), "csv"))))
    assert rows[0] == ["method", "epsilon", "delta", "note"]
    assert all(len(r) == 4 for r in rows)
    assert [r[1] for r in rows[1:]] == ["inf", "-inf", "", ""]
    assert rows[1][3] == "x, y" and rows[2][3] == 'say "hi", twice'


def test_tsv_never_breaks_a_row():
    text = to_string(_odd(), "tsv")
    lines = text.split("\n")
    assert lines[-1] == "" and len(lines) == 1 + 4 + 1
    cells = [ln.split("\t") for ln in lines[:-1]]
    assert cells[0] == ["method", "epsilon", "delta", "note"] and all(len(c) == 4 for c in cells)
    assert [c[1] for c in cells[1:]] == ["inf", "-inf", "", ""]
    assert cells[3][3] == "tab here" and cells[4][3] == "line break  and cr" and "\r" not in text
    assert cells[1][3] == "x, y"


def test_compose_notes_with_commas_stay_in_their_row(invoke):
    for fmt, split in (("csv", lambda t: list(csv.reader(io.StringIO(t)))), ("tsv", None)):
        res = invoke([*COMPOSE, "-f", fmt])
        assert res.exit_code == 0
        rows = split(res.stdout) if split else [ln.split("\t") for ln in res.stdout.splitlines()]
        assert len(rows) == 1 + 12 and len({len(r) for r in rows}) == 1
        assert any("(epsilon, delta)" in r[-1] for r in rows)  # a note with a comma


def test_cli_json_and_jsonl_agree(invoke):
    whole = json.loads(invoke([*COMPOSE, "-f", "json"]).stdout)
    lines = invoke([*COMPOSE, "-f", "jsonl"]).stdout.splitlines()
    assert [json.loads(ln) for ln in lines] == whole and len(whole) == 12
    assert whole[0]["epsilon"] is None  # exact does not apply: null


@pytest.mark.parametrize("fmt", ["csv", "tsv", "json", "jsonl", "table"])
def test_columns_choose_and_order(invoke, fmt):
    res = invoke([*COMPOSE, "-f", fmt, "--columns", "epsilon, method,epsilon"])
    assert res.exit_code == 0, res.stderr
    out = res.stdout
    if fmt == "csv":
        assert out.splitlines()[0] == "epsilon,method" and out.splitlines()[3].endswith(",pld")
    elif fmt == "tsv":
        assert out.splitlines()[0] == "epsilon\tmethod"
    elif fmt == "json":
        assert [list(o) for o in json.loads(out)] == [["epsilon", "method"]] * 12
    elif fmt == "jsonl":
        assert [list(json.loads(ln)) for ln in out.splitlines()] == [["epsilon", "method"]] * 12
    else:
        header = next(ln for ln in out.splitlines() if "method" in ln)
        assert header.index("epsilon") < header.index("method") and "note" not in out


@pytest.mark.parametrize("fmt", ["csv", "tsv", "json", "jsonl", "table"])
def test_an_unknown_column_is_one_line_exit_2(invoke, fmt):
    res = invoke([*COMPOSE, "-f", fmt, "--columns", "method,bogus"])
    assert res.exit_code == 2 and res.stdout == ""
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and "'bogus'" in lines[0] and "available: method, delta, epsilon" in lines[0]


def test_an_unknown_column_of_a_stream_is_refused_before_any_row(invoke):
    res = invoke([*SGD, "-f", "csv", "--columns", "epochs,sigma"])
    assert res.exit_code == 2 and res.stdout == "" and "'sigma'" in res.stderr
    assert "noise_multiplier" in res.stderr  # the available ones are listed
    res = invoke([*SGD, "-f", "jsonl", "--columns", "epochs,epsilon"])
    assert res.exit_code == 0
    assert [list(json.loads(ln)) for ln in res.stdout.splitlines()] == [["epochs", "epsilon"]] * 3


def test_no_column_named_is_a_usage_error(invoke):
    res = invoke([*COMPOSE, "--columns", " , "])
    assert res.exit_code == 2 and "--columns" in res.stderr


def test_pick_columns_names_unknown_ones():
    with pytest.raises(InputError, match="unknown columns 'x', 'y'; available: method, epsilon"):
        to_string(Result({"method": "a", "epsilon": 1.0}), "csv", columns=["x", "epsilon", "y"])


def test_format_help_tells_infinity_from_null(invoke):
    text = " ".join(invoke(["compose", "--help"]).stdout.split())
    assert "[table|csv|tsv|json|jsonl]" in text and '"inf"/"-inf"' in text and "null where" in text
    assert "--columns" in text and "CONFIGURATION<TAB>VALUE" in text and "tightest certified" in text


# -- streaming --------------------------------------------------------------------------------
def _write(stream, fmt, quiet=False, columns=None, out=None):
    out = out or io.StringIO()
    w = ChunkWriter(stream.names, fmt, out, quiet=quiet, headline=stream.headline, columns=columns)
    for chunk in stream.chunks:
        w.write(chunk)
    w.close()
    return out.getvalue()


@pytest.mark.parametrize("fmt", ["tsv", "jsonl", "json", "csv"])
@pytest.mark.parametrize("columns", [None, ["epsilon", "method", "steps"]])
def test_chunks_write_the_bytes_of_the_whole_result(fmt, columns):
    whole = io.StringIO()
    render(sgd_epsilon(PARAMS_ALL), fmt, whole, columns=columns)
    assert _write(sgd_epsilon_stream(PARAMS_ALL, chunk=1), fmt, columns=columns) == whole.getvalue()


def test_small_work_takes_the_same_path_however_it_is_cut():
    """Work estimated below LIGHT_SECONDS evaluates every array with the math module (no scipy import), in one
    chunk or in many: the rows are the same bytes either way."""
    small = SgdEpsilonParams(
        delta=[1e-5], sigma=[0.9, 1.3], sample_rate=[0.01, 0.02], steps=[100, 1000], accountant="rdp"
    )
    whole = io.StringIO()
    render(sgd_epsilon(small), "csv", whole)
    assert _write(sgd_epsilon_stream(small, chunk=1), "csv") == whole.getvalue()


def test_jsonl_flushes_every_chunk():
    class Spy(io.StringIO):
        def __init__(self):
            super().__init__()
            self.seen = []

        def flush(self):
            self.seen.append(self.getvalue().count("\n"))

    chunks = [Result({"a": [1, 2]}), Result({"a": [3]}), Result({"a": [4, 5, 6]})]
    spy = Spy()
    w = ChunkWriter(["a"], "jsonl", spy)
    for c in chunks:
        w.write(c)
        assert spy.seen[-1] == sum(len(x) for x in chunks[: chunks.index(c) + 1])
    w.close()
    assert [json.loads(ln)["a"] for ln in spy.getvalue().splitlines()] == [1, 2, 3, 4, 5, 6]


def test_row_writer_writes_tsv_jsonl_and_columns():
    buf = io.StringIO()
    w = RowWriter(["step", "epsilon", "note"], "tsv", buf, select=["note", "step"])
    w.write({"step": 1, "epsilon": math.inf, "note": "a\tb"})
    w.close()
    assert buf.getvalue() == "note\tstep\na b\t1\n"
    buf = io.StringIO()
    w = RowWriter(["step", "epsilon"], "jsonl", buf)
    w.write({"step": 1, "epsilon": math.inf})
    w.write({"step": 2, "epsilon": None})
    w.close()
    assert [json.loads(ln) for ln in buf.getvalue().splitlines()] == [
        {"step": 1, "epsilon": "inf"},
        {"step": 2, "epsilon": None},
    ]
    buf = io.StringIO()
    w = RowWriter(["step", "epsilon"], "json", buf)
    w.write({"step": 1, "epsilon": -math.inf})
    w.close()
    assert json.loads(buf.getvalue()) == [{"step": 1, "epsilon": "-inf"}]
    with pytest.raises(InputError, match="'x'"):
        RowWriter(["step", "epsilon"], "csv", io.StringIO(), select=["x"])


def test_odometer_streams_jsonl_tsv_and_columns(invoke, tmp_path):
    events = tmp_path / "events.csv"
    events.write_text("mechanism\ngaussian:sigma=5\ngaussian:sigma=6\n", encoding="utf-8")
    res = invoke(["odometer", str(events), "--delta", "1e-6", "-f", "jsonl", "--columns", "step,epsilon"])
    assert res.exit_code == 0, res.stderr
    assert [list(json.loads(ln)) for ln in res.stdout.splitlines()] == [["step", "epsilon"]] * 2
    res = invoke(["odometer", str(events), "--delta", "1e-6", "-f", "tsv"])
    assert res.exit_code == 0 and res.stdout.splitlines()[0].split("\t")[0] == "step"
    res = invoke(["odometer", str(events), "--delta", "1e-6", "--columns", "nope"])
    assert res.exit_code == 2 and "'nope'" in res.stderr and res.stdout == ""


# -- -q ---------------------------------------------------------------------------------------
def test_quiet_one_row_is_the_value_alone():
    assert to_string(Result({"method": "a", "epsilon": 1.5}), "csv", quiet=True) == "1.5\n"
    assert to_string(Result({"method": "a", "epsilon": None}), "csv", quiet=True) == "\n"  # unchanged


def test_quiet_prints_the_tightest_certified_value_per_configuration(invoke):
    res = invoke([*COMPOSE, "-q"])
    assert res.exit_code == 0
    lines = [ln.split("\t") for ln in res.stdout.splitlines()]
    assert [label for label, _ in lines] == ["delta=1e-05", "delta=1e-06"]
    csv_rows = list(csv.DictReader(io.StringIO(invoke([*COMPOSE, "-f", "csv"]).stdout)))
    for label, value in lines:
        delta = label.split("=")[1]
        bounds = [float(r["epsilon"]) for r in csv_rows if r["delta"] == delta and r["epsilon"]]
        assert len(bounds) >= 2 and float(value) == min(bounds)


def test_quiet_labels_name_the_configuration_and_never_print_a_non_bound():
    r = Result(
        {
            "method": ["rdp", "rdp", "abadi-asymptotic", "abadi-asymptotic"],
            "accountant": ["rdp", "rdp", "abadi", "abadi"],
            "sample_rate": 0.01,
            "steps": [10, 20, 10, 20],
            "epsilon": [1.0, math.inf, 0.5, None],
            "epsilon_lower": [0.5, 0.6, 0.7, 0.8],
            "alpha": [2.0, 3.0, 4.0, 5.0],
        }
    )
    # abadi-asymptotic's 0.5 is below rdp's 1.0 but not a bound: never printed, never chosen
    assert to_string(r, "csv", quiet=True).splitlines() == ["steps=10\t1.0", "steps=20\tinf"]


def test_quiet_of_one_configuration_is_its_tightest_value_alone():
    r = Result({"method": ["a", "b", "c"], "epsilon": [2.0, 1.0, 3.0]})
    assert to_string(r, "csv", quiet=True) == "1.0\n"
    r = Result({"method": ["a", "b"], "valid": [True, False], "epsilon": [2.0, 1.0]})
    assert to_string(r, "csv", quiet=True) == "2.0\n"


def test_quiet_of_a_sweep_names_the_swept_input(invoke):
    res = invoke([*SGD, "-q"])
    assert res.exit_code == 0
    assert [ln.split("\t")[0] for ln in res.stdout.splitlines()] == [
        "steps=2344,epochs=10.0",
        "steps=4688,epochs=20.0",
        "steps=7032,epochs=30.0",
    ]


@pytest.mark.parametrize("chunk", [1, 2, 100])
def test_quiet_of_a_stream_is_the_quiet_of_the_whole(chunk):
    whole = to_string(sgd_epsilon(PARAMS_ALL), "csv", quiet=True)
    assert _write(sgd_epsilon_stream(PARAMS_ALL, chunk=chunk), "csv", quiet=True) == whole
    assert [ln.split("\t")[0] for ln in whole.splitlines()] == [
        "noise_multiplier=0.9,steps=100",
        "noise_multiplier=0.9,steps=1000",
        "noise_multiplier=1.3,steps=100",
        "noise_multiplier=1.3,steps=1000",
    ]


def _stream(*chunks):
    return Stream(["method", "x", "epsilon"], iter(chunks))


def test_quiet_stream_of_one_row_or_one_row_per_chunk():
    one = Result({"method": ["a"], "x": [1], "epsilon": [0.5]})
    two = Result({"method": ["a"], "x": [2], "epsilon": [0.25]})
    assert _write(_stream(one), "csv", quiet=True) == "0.5\n"
    assert _write(_stream(one, two), "csv", quiet=True) == "x=1\t0.5\nx=2\t0.25\n"
    assert _write(_stream(), "csv", quiet=True) == ""


def test_quiet_of_odometer_steps_is_one_value_per_step():
    r = Result({"step": [1, 2], "mechanism": ["g", "h"], "epsilon": [0.5, 0.75]})
    assert to_string(r, "csv", quiet=True) == "0.5\n0.75\n"
