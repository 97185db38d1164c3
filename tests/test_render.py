"""The one renderer: CSV, JSON, table, quiet; non-finite and missing values; safe rounding."""

import csv
import io
import json
import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from dpcalc.render import RowWriter, table_cell, to_string
from dpcalc.render.cells import column_cells, csv_cell, tsv_cell
from dpcalc.render.formats import _write_csv
from dpcalc.result import Result


def _result():
    return Result(
        {"method": ["a", "b", "c"], "delta": 1e-5, "epsilon": [1.2345678901234567, math.inf, None]},
        headline="epsilon",
    )


def test_csv_full_precision_and_inf():
    text = to_string(_result(), "csv")
    rows = list(csv.DictReader(io.StringIO(text)))
    assert [r["method"] for r in rows] == ["a", "b", "c"]
    assert float(rows[0]["epsilon"]) == 1.2345678901234567
    assert rows[1]["epsilon"] == "inf"
    assert rows[2]["epsilon"] == ""
    assert rows[0]["delta"] == "1e-05"


def test_json_inf_is_a_string_and_missing_is_null():
    rows = json.loads(to_string(_result(), "json"))
    assert rows[0]["epsilon"] == 1.2345678901234567
    assert rows[1]["epsilon"] == "inf" and rows[2]["epsilon"] is None
    assert rows[0]["delta"] == 1e-5


def test_quiet_prints_the_tightest_value_of_the_one_configuration():
    assert to_string(_result(), "csv", quiet=True) == "1.2345678901234567\n"


def test_table_has_columns_and_values():
    text = to_string(_result(), "table")
    assert "epsilon" in text and "inf" in text and "1.23457" in text


@given(st.floats(min_value=1e-300, max_value=1e300, allow_nan=False, allow_infinity=False))
def test_table_rounds_upper_bounds_up_and_lower_bounds_down(v):
    assert float(table_cell("epsilon", v)) >= v
    assert float(table_cell("delta", v)) >= v
    assert float(table_cell("epsilon_lower", v)) <= v


def test_row_writer_streams_csv_and_json():
    buf = io.StringIO()
    w = RowWriter(["step", "epsilon"], "csv", buf)
    w.write({"step": 1, "epsilon": 0.5})
    assert buf.getvalue() == "step,epsilon\n1,0.5\n"  # flushed row by row
    w.close()
    buf = io.StringIO()
    w = RowWriter(["step", "epsilon"], "json", buf)
    w.write({"step": 1, "epsilon": math.inf})
    w.write({"step": 2, "epsilon": 0.25})
    w.close()
    assert json.loads(buf.getvalue()) == [{"step": 1, "epsilon": "inf"}, {"step": 2, "epsilon": 0.25}]
    buf = io.StringIO()
    w = RowWriter(["step", "epsilon"], "json", buf)
    w.close()
    assert json.loads(buf.getvalue()) == []


def test_table_single_row_is_vertical_and_text_is_not_markup():
    r = Result({"method": "pld", "epsilon": 1.5, "note": "[lower, upper] bracket"}, caption="see [x, y]")
    text = to_string(r, "table")
    assert "quantity" in text and "[lower, upper] bracket" in text and "see [x, y]" in text


def test_table_moves_constant_columns_to_the_caption():
    r = Result({"method": ["a", "b"], "delta": [1e-5, 1e-5], "epsilon": [1.0, 2.0]})
    text = to_string(r, "table")
    header = [ln for ln in text.splitlines() if "method" in ln][0]
    assert "delta" not in header and "delta = 1e-05" in text


# -- column_cells: the column-wise writing of CSV/TSV cells is the per-value one -------------------------------


@pytest.mark.parametrize("cell", [csv_cell, tsv_cell])
def test_column_cells_equal_per_value_cells(cell):
    n = 12
    columns = {
        "constant_str": ["rdp"] * n,
        "tabbed": ["a\tb"] * n,
        "notes": [f"note {i}\twith, comma" for i in range(n)],
        "floats": [0.1 * i for i in range(n - 4)] + [-0.0, math.nan, math.inf, -math.inf],
        "repeated_floats": [0.5, -0.0, 0.0, math.nan] * 3,
        "with_none": [None if i % 3 else 1.5 for i in range(n)],
        "ints": list(range(n)),
        "same_int": [7] * n,
        "bools": [i % 2 == 0 for i in range(n)],
        "mixed_int_bool": [1, True] * 6,
        "nones": [None] * n,
        "array_f": np.linspace(-1, 1, n),
        "array_i": np.arange(n),
        "array_b": np.arange(n) % 2 == 0,
        "scalar": 3.25,
        "scalar_np": np.float64(-0.0),
        "np_floats_in_list": [np.float64(0.25 * i) for i in range(n)],
        "same_np_float_in_list": [np.float64(30.0)] * n,
        "same_np_int_in_list": [np.int64(5000)] * n,
        "np_ints_in_list": [np.int64(i) for i in range(n)],
        "mixed_np_and_py": [np.float64(1.5), 2.5] * 6,
    }
    result = Result(columns)
    for name in columns:
        assert column_cells(result, name, cell) == [cell(v) for v in result.column(name)], name


_CELL = st.text(alphabet=',"\r\n \t\x00a1é.-', max_size=4)


@given(st.integers(1, 4).flatmap(lambda k: st.lists(st.lists(_CELL, min_size=k, max_size=k), max_size=6)))
def test_csv_rows_are_the_csv_modules(rows):
    """ChunkWriter writes CSV cells joined by commas where no cell needs quotes: byte for byte what the csv
    module writes, which it still writes wherever a cell does need them (or a row is one empty cell)."""
    cols = [list(c) for c in zip(*rows)] if rows else []
    ours, ref = io.StringIO(), io.StringIO()
    _write_csv(ours, csv.writer(ours, lineterminator="\n"), cols)
    csv.writer(ref, lineterminator="\n").writerows(rows)
    assert ours.getvalue() == ref.getvalue()
