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
    from rich.console import Console
    from rich.table import Table

    table = Table(title=result.title or None, caption=result.caption or None, caption_justify="left")
    numeric = {}
    rows = result.rows()
    for name in result.names:
        values = [r[name] for r in rows]
        numeric[name] = all(isinstance(v, (int, float)) or v is None for v in values)
        table.add_column(name, justify="right" if numeric[name] else "left", overflow="fold")
    for r in rows:
        table.add_row(*(table_cell(n, r[n]) for n in result.names))
    console = Console(file=stream, soft_wrap=False, highlight=False)
    console.print(table)


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


def to_string(result: Result, fmt: str, *, quiet: bool = False) -> str:
    """Render to a string (for tests and the README generator)."""
    buf = io.StringIO()
    render(result, fmt, buf, quiet=quiet)
    return buf.getvalue()
