"""Values echo what the user meant (issue 39): a range's points are the doubles nearest the decimals the
range names, so each prints as its shortest decimal and the row computes with the value it prints; a
number that underflows or overflows when read is refused as typed; a zero is never ``-0.0``; an input
shown in a table rounds to nearest."""

import csv
import io
import json
import math
import re
from decimal import Decimal

import click
import pytest

from dpcalc.cli.types import Grid, parse_values
from dpcalc.render import render
from dpcalc.render.cells import csv_cell, json_value, table_cell
from dpcalc.result import Result

ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


def _csv(text):
    return list(csv.DictReader(io.StringIO(text)))


# -- ranges: the double nearest each decimal point ---------------------------------------------------
def test_a_geometric_delta_sweep_echoes_the_shortest_decimals(invoke):
    res = invoke(
        "sgd-epsilon --sigma 1 --sample-rate 0.01 --steps 100 --delta 1e-6:1e-1:x10 -f csv --columns delta".split()
    )
    assert res.exit_code == 0, res.stderr
    assert res.stdout.split() == ["delta", "1e-06", "1e-05", "0.0001", "0.001", "0.01", "0.1"]


def _exact_points(start, stop, step=None, factor=None):
    """The decimal points of a range, computed exactly (Decimal with the typed texts)."""
    a, b = Decimal(start), Decimal(stop)
    out = []
    k = 0
    while True:
        p = a + k * Decimal(step) if step is not None else a * Decimal(factor) ** k
        if p > b:
            return out
        out.append(p)
        k += 1


@pytest.mark.parametrize(
    "start,stop,step,factor",
    [
        ("1e-6", "1e-1", None, "10"),
        ("1e-8", "1e-4", None, "10"),
        ("0.3", "0.9", None, "1.5"),
        ("0.001", "1", None, "3"),
        ("2e-5", "2", None, "10"),
        ("0.1", "0.3", "0.1", None),
        ("0.05", "1", "0.05", None),
        ("1e-13", "5e-13", "1e-13", None),  # was rounded to 12 decimals: every point but STOP read as 0
        ("1e6", "1.0000005e6", "0.1", None),
        ("1", "2", "0.1", None),
        ("-0.3", "0.3", "0.1", None),
    ],
)
def test_every_range_point_is_the_double_nearest_its_decimal(start, stop, step, factor):
    text = f"{start}:{stop}:{step}" if step is not None else f"{start}:{stop}:x{factor}"
    got = parse_values(text)
    want = _exact_points(start, stop, step, factor)
    assert len(got) == len(want), (got, want)
    for g, w in zip(got, want):
        assert g == float(w), (text, g, w)
        assert Decimal(repr(g)) == w, (text, repr(g))  # prints as the decimal meant (<= 15 digits)


def test_stop_is_included_exactly_when_it_lies_on_the_grid():
    assert parse_values("1:10:4") == [1.0, 5.0, 9.0]
    assert parse_values("0.1:0.3:0.1")[-1] == 0.3
    assert parse_values("1e-8:1e-4:x10")[-1] == 1e-4
    assert parse_values("0.001:1:x3")[-1] == 0.729  # 0.001·3^6 (3^7·0.001 = 2.187 > 1)


def test_a_step_typed_with_many_digits_is_exact():
    """3·STEP is just above STOP (50 digits): the range stops before it, as exact arithmetic says."""
    assert len(parse_values("0:1:0.333333333333333333333333333333333333333333333333334")) == 3
    assert len(parse_values("0:1:0.333333333333333333333333333333333333333333333333333")) == 4


def test_an_integer_geometric_range_rounds_the_exact_points():
    assert parse_values("100:1000:x1.5", integer=True) == [100.0, 150.0, 225.0, 338.0, 506.0, 759.0]


def test_each_row_is_computed_with_the_value_it_prints(invoke):
    """The δ a row prints, typed back as a list, gives the same ε bit for bit: the row computed with it."""
    base = "convert --alpha 8 --rdp 0.7 -f csv --columns delta,epsilon".split()
    swept = invoke([*base, "--delta", "1e-7:1e-1:x10"])
    assert swept.exit_code == 0, swept.stderr
    rows = _csv(swept.stdout)
    typed = invoke([*base, "--delta", ",".join(r["delta"] for r in rows)])
    assert _csv(typed.stdout) == rows


# -- underflow and overflow are refused, quoting the text as typed -----------------------------------
SGD = ["sgd-epsilon", "--sample-rate", "0.01", "--steps", "100"]


@pytest.mark.parametrize(
    "args,option,typed",
    [
        ([*SGD, "--sigma", "1", "--delta", "1e-400"], "--delta", "1e-400"),
        ([*SGD, "--sigma", "1e-400", "--delta", "1e-5"], "--sigma", "1e-400"),
        ([*SGD, "--sigma", "1e400", "--delta", "1e-5"], "--sigma", "1e400"),
        ([*SGD, "--sigma", "1", "--delta", "1e-5,1e-400"], "--delta", "1e-400"),
        ([*SGD, "--sigma", "1", "--delta", "1e-400:1e-5:x10"], "--delta", "1e-400"),
        ([*SGD, "--sigma", "1", "--delta", "1e-5:1e-4:1e-999"], "--delta", "1e-999"),
        (["convert", "--alpha", "2", "--rdp", "2e308", "--delta", "1e-5"], "--rdp", "2e308"),
        (["convert", "--alpha", "2", "--rdp", "0.5", "--epsilon", "-1e-330"], "--epsilon", "-1e-330"),
    ],
)
def test_a_value_that_underflows_or_overflows_is_refused_as_typed(invoke, args, option, typed):
    res = invoke(args)
    assert res.exit_code == 2 and res.stdout == ""
    lines = res.stderr.strip("\n").split("\n")
    assert len(lines) == 1 and lines[0].startswith("Error:"), res.stderr
    assert option in lines[0] and typed in lines[0], lines[0]
    assert "Traceback" not in res.stderr and "Warning" not in res.stderr


def test_subnormal_values_are_read_not_refused():
    assert parse_values("1e-320") == [float("1e-320")] and parse_values("1e-320")[0] > 0


def test_an_out_of_range_value_is_quoted_as_typed():
    with pytest.raises(click.BadParameter, match=r"-0\.10 is out of range"):
        Grid(lo=0).convert("-0.10", None, None)
    with pytest.raises(click.BadParameter, match=r"1\.50 is out of range"):
        Grid(lo=0, hi=1).convert("0.5,1.50", None, None)


# -- zero is 0 ---------------------------------------------------------------------------------------
def test_minus_zero_is_read_as_zero_and_echoed_as_zero(invoke):
    args = "convert --alpha 2 --rdp -0 --delta 1e-5 --columns rdp".split()
    assert invoke([*args, "-f", "csv"]).stdout.split() == ["rdp", "0.0"]
    assert json.loads(invoke([*args, "-f", "json"]).stdout) == [{"rdp": 0.0}]
    assert "-0" not in invoke([*args, "-f", "json"]).stdout
    assert parse_values("-0,-0:1:1") == [0.0, 0.0, 1.0]
    assert all(math.copysign(1, v) == 1 for v in parse_values("-0,-0:1:1"))


def test_a_computed_minus_zero_prints_as_zero():
    assert csv_cell(-0.0) == "0.0"
    assert json.dumps(json_value(-0.0)) == "0.0"
    for name in ("epsilon", "epsilon_lower", "alpha"):
        assert table_cell(name, -0.0) == "0"


# -- an input shown in a table rounds to nearest ------------------------------------------------------
def _terminal(cols, monkeypatch):
    monkeypatch.setenv("COLUMNS", str(cols))
    monkeypatch.setenv("NO_COLOR", "1")

    class Terminal(io.TextIOWrapper):
        def isatty(self):
            return True

    return Terminal(io.BytesIO(), encoding="utf-8", newline="\n")


def _table(result, cols, monkeypatch):
    stream = _terminal(cols, monkeypatch)
    render(result, "table", stream)
    stream.flush()
    return ANSI.sub("", stream.buffer.getvalue().decode("utf-8"))


Q = 256 / 60000  # 0.0042666...667: the 6-digit decimals beside it are 0.00426666 and 0.00426667


def test_an_input_sample_rate_rounds_to_nearest_in_a_table(monkeypatch):
    given = Result({"method": "rdp", "sample_rate": Q, "noise_multiplier": 1.1, "epsilon": 2.5966}, title="t")
    text = _table(given, 80, monkeypatch)
    assert "0.00426667" in text and "0.00426666" not in text, text


def test_a_sample_rate_found_by_a_search_rounds_down(monkeypatch):
    found = Result(
        {"method": "rdp", "sample_rate": Q, "noise_multiplier": 1.1, "epsilon": 3.0},
        headline="sample_rate",
        title="t",
    )
    assert "0.00426666" in _table(found, 80, monkeypatch)
    derived = Result(
        {"method": ["rdp", "pld"], "batch_size": [256, 256], "sample_rate": [Q, Q], "epsilon": [3.0, 2.9]},
        headline="batch_size",
        derived=("sample_rate",),
    )
    assert "0.00426666" in _table(derived, 80, monkeypatch)


def test_noise_found_by_a_search_rounds_up_and_given_noise_to_nearest(monkeypatch):
    s = 1.00000049  # 6 digits: 1 to nearest, 1.00001 up
    given = Result({"method": "rdp", "noise_multiplier": s, "epsilon": 2.0})
    assert re.search(r"noise_multiplier\s*│\s*1 │", _table(given, 80, monkeypatch))
    found = Result({"method": "rdp", "noise_multiplier": s, "epsilon": 2.0}, headline="noise_multiplier")
    assert "1.00001" in _table(found, 80, monkeypatch)


def test_the_quick_start_shows_the_sample_rate_of_256_over_60000_to_nearest(invoke):
    args = (
        "sgd-epsilon --noise-multiplier 1.1 --batch-size 256 --dataset-size 60000 --epochs 60 --delta 1e-5 "
        "-f table"
    ).split()
    res = invoke(args)
    assert res.exit_code == 0
    assert "0.00426667" in res.stdout and "0.00426666" not in res.stdout


def test_a_column_found_in_some_rows_rounds_to_its_safe_side_in_every_row(monkeypatch):
    """A schedule's noise multiplier: given for some phases, found for one (``Result.found``): rounded up."""
    cols = {"phase": [1, 2], "noise_multiplier": [1.5, 0.853516257807223], "epsilon": [0.2, 2.9]}
    assert "0.853516" in _table(Result(dict(cols)), 80, monkeypatch)  # as an input: to nearest
    text = _table(Result(dict(cols), found=("noise_multiplier",)), 80, monkeypatch)
    assert "0.853517" in text and "0.853516" not in text, text


def test_the_noise_a_schedule_found_is_shown_rounded_up(invoke):
    args = (
        "sgd-epsilon --schedule docs/examples/schedule-find.csv --delta 1e-5 --target-epsilon 3 --method all"
    )
    csv_rows = _csv(invoke([*args.split(), "-f", "csv"]).stdout)
    table = invoke([*args.split(), "-f", "table"]).stdout
    found = [float(r["noise_multiplier"]) for r in csv_rows if r["note"]]
    assert found
    for v in found:
        shown = table_cell("noise_multiplier", v)  # the class of the column: up
        assert float(shown) >= v and shown in table, (v, shown, table)
