"""The one renderer: a :class:`~dpcalc.result.Result` as a table, CSV or JSON (and ``-q`` values).

* CSV: one header row, snake_case columns, one row per result, floats as ``repr`` (full precision);
  ``inf`` stays ``inf``; a missing value (a method that does not apply) is an empty cell.
* JSON: an array of objects with the same keys; non-finite numbers and missing values are ``null``.
* table: rich, for people; bounds are rounded to 6 significant digits *to the safe side* (upper
  bounds up, lower bounds down).  rich is imported only here, and only for tables.
* quiet: the headline column only, one value per line (``inf`` for an infinite bound).

CSV and JSON never go through rich.  :class:`RowWriter` streams rows one at a time (``odometer``).
"""

from __future__ import annotations

import csv
import io
import json
import math
import sys
from typing import IO, Any

from dpcalc.result import LOWER_COLUMNS, UPPER_COLUMNS, Result

FORMATS = ("table", "csv", "json")


def resolve_format(fmt: str | None, stream: IO[str] | None = None) -> str:
    """``None`` means: ``table`` on a terminal, ``csv`` otherwise."""
    if fmt:
        return fmt
    stream = stream or sys.stdout
    try:
        return "table" if stream.isatty() else "csv"
    except (AttributeError, ValueError):
        return "csv"


# -- cells ------------------------------------------------------------------------------------
def csv_cell(v: Any) -> str:
    if v is None:
        return ""
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, float):
        if math.isnan(v):
            return ""
        return repr(v)
    return str(v)


def json_value(v: Any) -> Any:
    if isinstance(v, float) and not math.isfinite(v):
        return None
    return v


def _round_sig(v: float, digits: int, direction: str) -> str:
    """Format ``v`` to ``digits`` significant digits, rounding up, down, or to nearest."""
    if v == 0 or not math.isfinite(v):
        return repr(v) if not math.isfinite(v) else "0"
    text = f"{v:.{digits - 1}e}"
    r = float(text)
    if direction == "up" and r < v:
        text = f"{math.nextafter(r, math.inf) + _ulp_at(r, digits):.{digits - 1}e}"
    elif direction == "down" and r > v:
        text = f"{r - _ulp_at(r, digits):.{digits - 1}e}"
    r = float(text)
    return f"{r:.{digits}g}"


def _ulp_at(r: float, digits: int) -> float:
    """One unit in the last printed digit of ``r``."""
    exp = math.floor(math.log10(abs(r)))
    return 10.0 ** (exp - digits + 1)


def table_cell(name: str, v: Any, digits: int = 6) -> str:
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "—"
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, float):
        if math.isinf(v):
            return "inf" if v > 0 else "-inf"
        if name in UPPER_COLUMNS:
            return _round_sig(v, digits, "up")
        if name in LOWER_COLUMNS:
            return _round_sig(v, digits, "down")
        return f"{v:.{digits}g}"
    return str(v)


# -- whole results ----------------------------------------------------------------------------
def render(result: Result, fmt: str, stream: IO[str] | None = None, *, quiet: bool = False) -> None:
    """Write ``result`` to ``stream`` (stdout by default) in ``fmt``."""
    stream = stream or sys.stdout
    if quiet:
        for v in result.column(result.headline):
            stream.write(csv_cell(v) + "\n")
    elif fmt == "csv":
        writer = csv.writer(stream, lineterminator="\n")
        writer.writerow(result.names)
        for row in result.rows():
            writer.writerow([csv_cell(row[n]) for n in result.names])
    elif fmt == "json":
        rows = [{k: json_value(v) for k, v in row.items()} for row in result.rows()]
        stream.write(json.dumps(rows, indent=2, allow_nan=False) + "\n")
    elif fmt == "table":
        _render_table(result, stream)
    else:  # pragma: no cover - click restricts the choices
        raise ValueError(f"unknown format {fmt!r}")
    stream.flush()


def _render_table(result: Result, stream: IO[str]) -> None:
    """A rich table for people.  One row: a vertical ``quantity | value`` table.  Several rows: the
    columns that hold the same value on every row move into the caption, so the table stays narrow.
    Text is never read as rich markup; off a terminal the table is as wide as it needs to be."""
    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

    rows = result.rows()
    if len(rows) == 1:
        header = ["quantity", "value"]
        body = [[name, table_cell(name, rows[0][name])] for name in result.names]
        right = [False, True]
        caption = result.caption
    else:
        keep, fixed = [], []
        for name in result.names:
            values = [r[name] for r in rows]
            constant = all(v == values[0] for v in values)
            if constant and name not in ("method", result.headline):
                if values[0] is not None:
                    fixed.append(f"{name} = {table_cell(name, values[0])}")
            else:
                keep.append(name)
        header = keep
        body = [[table_cell(n, r[n]) for n in keep] for r in rows]
        right = [all(isinstance(r[n], (int, float)) or r[n] is None for r in rows) for n in keep]
        caption = "; ".join(x for x in (", ".join(fixed), result.caption) if x)
    widths = [max(len(str(c)) for c in col) for col in zip(header, *body)]
    needed = sum(w + 3 for w in widths) + 1
    try:
        terminal = stream.isatty()
    except (AttributeError, ValueError):
        terminal = False
    console = Console(
        file=stream, soft_wrap=False, highlight=False, width=None if terminal else max(needed, 100)
    )
    table = Table(title=Text(result.title) if result.title else None, title_justify="left")
    for name, r in zip(header, right):
        table.add_column(Text(name), justify="right" if r else "left", overflow="fold")
    for cells in body:
        table.add_row(*(Text(str(c)) for c in cells))
    console.print(table)
    if caption:  # below the table, wrapped to the console rather than to the table's width
        console.print(Text(caption, style="dim"))


class RowWriter:
    """Write rows one at a time, flushing each (streaming output, e.g. ``odometer``).

    CSV: header then rows.  JSON: a streamed array (``[`` ... ``]``) of objects.  table: aligned
    plain-text columns (a rich table cannot stream).  ``quiet``: the headline column only.
    """

    def __init__(
        self,
        columns: list[str],
        fmt: str,
        stream: IO[str] | None = None,
        *,
        quiet: bool = False,
        headline: str = "epsilon",
        widths: dict[str, int] | None = None,
    ) -> None:
        self.columns = list(columns)
        self.fmt = fmt
        self.stream = stream or sys.stdout
        self.quiet = quiet
        self.headline = headline
        self.count = 0
        self.widths = {c: max(len(c), (widths or {}).get(c, 12)) for c in self.columns}
        self._csv = csv.writer(self.stream, lineterminator="\n") if fmt == "csv" else None
        if quiet:
            pass
        elif fmt == "csv":
            self._csv.writerow(self.columns)
        elif fmt == "json":
            self.stream.write("[")
        elif fmt == "table":
            self.stream.write("  ".join(c.rjust(self.widths[c]) for c in self.columns) + "\n")
        self.stream.flush()

    def write(self, row: dict) -> None:
        if self.quiet:
            self.stream.write(csv_cell(row.get(self.headline)) + "\n")
        elif self.fmt == "csv":
            self._csv.writerow([csv_cell(row.get(c)) for c in self.columns])
        elif self.fmt == "json":
            obj = {c: json_value(row.get(c)) for c in self.columns}
            self.stream.write(("\n  " if self.count == 0 else ",\n  ") + json.dumps(obj, allow_nan=False))
        else:
            self.stream.write(
                "  ".join(table_cell(c, row.get(c)).rjust(self.widths[c]) for c in self.columns) + "\n"
            )
        self.count += 1
        self.stream.flush()

    def close(self) -> None:
        if self.fmt == "json" and not self.quiet:
            self.stream.write("\n]\n" if self.count else "]\n")
        self.stream.flush()


class ChunkWriter:
    """Write a result chunk by chunk (:class:`~dpcalc.result.Stream`), in exactly the CSV, JSON or
    ``-q`` text :func:`render` writes for the whole result; each chunk is flushed as it comes."""

    def __init__(
        self, names: list[str], fmt: str, stream: IO[str] | None = None, *, quiet=False, headline=""
    ):
        if fmt not in ("csv", "json") and not quiet:
            raise ValueError(f"format {fmt!r} cannot stream")
        self.names, self.fmt, self.quiet, self.headline = list(names), fmt, quiet, headline
        self.stream = stream or sys.stdout
        self.count = 0
        self._csv = csv.writer(self.stream, lineterminator="\n")
        if not quiet and fmt == "csv":
            self._csv.writerow(self.names)

    def write(self, chunk: Result) -> None:
        if self.quiet:
            self.stream.write("".join(csv_cell(v) + "\n" for v in chunk.column(self.headline)))
        elif self.fmt == "csv":
            for row in chunk.rows():
                self._csv.writerow([csv_cell(row[n]) for n in self.names])
        else:  # the layout of json.dumps(rows, indent=2), one object at a time
            parts = []
            for row in chunk.rows():
                obj = json.dumps({k: json_value(row[k]) for k in self.names}, indent=2, allow_nan=False)
                parts.append(("[\n" if self.count == 0 else ",\n") + "  " + obj.replace("\n", "\n  "))
                self.count += 1
            self.stream.write("".join(parts))
        self.stream.flush()

    def close(self) -> None:
        if self.fmt == "json" and not self.quiet:
            self.stream.write("\n]\n" if self.count else "[]\n")
        self.stream.flush()


def to_string(result: Result, fmt: str, *, quiet: bool = False) -> str:
    """Render to a string (for tests and the README generator)."""
    buf = io.StringIO()
    render(result, fmt, buf, quiet=quiet)
    return buf.getvalue()
