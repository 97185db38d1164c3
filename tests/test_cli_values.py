"""The shared value syntax (scalars, lists, ranges) and its errors."""

import math

import click
import pytest

from dpcalc.cli.types import Grid, parse_values


@pytest.mark.parametrize(
    "text,expected",
    [
        ("0.5", [0.5]),
        ("1,2,4", [1.0, 2.0, 4.0]),
        ("1:2:0.5", [1.0, 1.5, 2.0]),
        ("0.1:0.3:0.1", [0.1, 0.2, 0.3]),
        ("1:10:4", [1.0, 5.0, 9.0]),  # STOP not on the grid: not included
        ("1e-8:1e-4:x10", [1e-8, 1e-7, 1e-6, 1e-5, 1e-4]),
        ("1:100:x2", [1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0]),
        ("1,3:5:1", [1.0, 3.0, 4.0, 5.0]),
        ("2:2:1", [2.0]),
    ],
)
def test_parse_values(text, expected):
    got = parse_values(text)
    assert len(got) == len(expected)
    for g, e in zip(got, expected):
        assert math.isclose(g, e, rel_tol=1e-12)


@pytest.mark.parametrize(
    "text,fragment",
    [
        ("", "empty"),
        ("abc", "not a number"),
        ("1,,2", "empty item"),
        ("5:1:1", "descending"),
        ("1:5:0", "step must be > 0"),
        ("1:5:-1", "step must be > 0"),
        ("1:5", "START:STOP:STEP"),
        ("0:1:x2", "START > 0"),
        ("1:10:x1", "factor must be > 1"),
        ("1:1e9:1", "more than"),
    ],
)
def test_parse_values_errors(text, fragment):
    with pytest.raises(ValueError, match=fragment):
        parse_values(text)


@pytest.mark.parametrize(
    "grid,text,fragment",
    [
        (Grid(lo=0, hi=1, hi_open=True), "1", "out of range: must be in (0, 1)"),
        (Grid(lo=0, hi=1, hi_open=True), "0", "out of range"),
        (Grid(lo=0, hi=1, hi_open=True), "-0.5", "out of range"),
        (Grid(lo=0, hi=1, hi_open=True), "nan", "not a finite number"),
        (Grid(lo=0), "inf", "not a finite number"),
        (Grid(lo=1, lo_open=False, integer=True), "2.5", "whole number"),
        (Grid(lo=1), "1", "must be > 1"),
    ],
)
def test_grid_domain(grid, text, fragment):
    with pytest.raises(click.BadParameter, match=fragment.replace("(", r"\(").replace(")", r"\)")):
        grid.convert(text, None, None)


def test_grid_integer_returns_ints():
    assert Grid(lo=1, lo_open=False, integer=True).convert("1:3:1", None, None) == (1, 2, 3)


def test_integer_geometric_range_is_rounded():
    got = Grid(lo=1, lo_open=False, integer=True).convert("1:20:x1.5", None, None)
    assert got == (1, 2, 3, 5, 8, 11, 17)
    assert all(isinstance(v, int) for v in got)


def test_integer_arithmetic_range_must_be_whole():
    with pytest.raises(click.BadParameter, match="whole number"):
        Grid(lo=1, lo_open=False, integer=True).convert("1:3:0.5", None, None)


def test_a_single_value_option_given_twice_is_refused(invoke):
    res = invoke(["convert", "--alpha", "10", "--alpha", "20", "--rdp", "1", "--delta", "1e-5"])
    assert res.exit_code == 2 and res.stdout == ""
    assert (
        res.stderr == "Error: --alpha given twice: give it once, with a list or a range for several values "
        "(e.g. 10,20 or 1:10:1)\n"
    )
    both = invoke(
        [
            "sgd-epsilon",
            "--noise-multiplier",
            "1",
            "--sigma=2",
            "--sample-rate",
            "0.01",
            "--steps",
            "10",
            "--delta",
            "1e-5",
        ]
    )
    assert both.exit_code == 2 and "(as --noise-multiplier and --sigma)" in both.stderr
    # repeatable options stay repeatable
    ok = invoke(
        ["odometer", "--event", "gaussian:sigma=2", "--event", "gaussian:sigma=3", "--delta", "1e-6", "-q"]
    )
    assert ok.exit_code == 0 and len(ok.stdout.split()) == 2


@pytest.mark.parametrize("text", ["99999999999999999999999", "9007199254740993", "1e23"])
def test_integers_that_a_double_cannot_hold_are_refused(invoke, text):
    res = invoke(["sgd-epsilon", "--sigma", "1", "--sample-rate", "0.01", "--steps", text, "--delta", "1e-5"])
    assert res.exit_code == 2 and "cannot be represented exactly" in res.stderr


@pytest.mark.parametrize("text,value", [("1e6", 1000000), ("1_000", 1000), ("9007199254740992", 2**53)])
def test_exact_integers_in_any_notation_are_accepted(text, value):
    assert Grid(lo=0, integer=True).convert(text, None, None) == (value,)
