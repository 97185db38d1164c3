"""Whole results and streams in every format: :func:`render`, :class:`ChunkWriter`, :class:`RowWriter`."""

import csv
import io
import sys
from typing import IO

from dpcalc.errors import InputError
from dpcalc.lazy import lazy_module
from dpcalc.render.cells import _isatty, column_cells, csv_cell, json_value, one_line, table_cell, tsv_cell
from dpcalc.render.quiet import _Quiet
from dpcalc.result import Result

json = lazy_module("json")  # only for -f json and jsonl
table = lazy_module("dpcalc.render.table")  # only for -f table

FORMATS = ("table", "csv", "tsv", "json", "jsonl")
#: the formats written row by row (chunk by chunk for a stream)
STREAM_FORMATS = ("csv", "tsv", "json", "jsonl")


def resolve_format(fmt: str | None, stream: IO[str] | None = None) -> str:
    """``None`` means: ``table`` on a terminal, ``csv`` otherwise."""
    if fmt:
        return fmt
    stream = stream or sys.stdout
    return "table" if _isatty(stream) else "csv"


def pick_columns(available: list[str], wanted) -> list[str]:
    """The columns ``wanted`` (``--columns``), in that order and each once; an
    :class:`~dpcalc.errors.InputError` naming any unknown one and listing ``available``."""
    names: list[str] = []
    for w in wanted:
        if w not in names:
            names.append(w)
    if not names:
        raise InputError(f"--columns: name at least one column; available: {', '.join(available)}")
    unknown = [w for w in names if w not in available]
    if unknown:
        s = "s" if len(unknown) > 1 else ""
        raise InputError(
            f"--columns: unknown column{s} {', '.join(repr(u) for u in unknown)}; "
            f"available: {', '.join(available)}"
        )
    return names


# -- whole results ----------------------------------------------------------------------------
def render(
    result: Result,
    fmt: str,
    stream: IO[str] | None = None,
    *,
    quiet: bool = False,
    columns: list[str] | tuple[str, ...] | None = None,
) -> None:
    """Write ``result`` to ``stream`` (stdout by default) in ``fmt`` (``columns``: ``--columns``)."""
    stream = stream or sys.stdout
    if fmt == "table" and not quiet:
        if columns:
            result = result.select(pick_columns(result.names, columns))
        # lazy: rich, only for a table: csv, tsv, json and jsonl must not import it
        from dpcalc.render.rich_table import render_table

        render_table(result, stream)
        stream.flush()
        return
    if fmt not in FORMATS:  # pragma: no cover - click restricts the choices
        raise ValueError(f"unknown format {fmt!r}")
    writer = ChunkWriter(result.names, fmt, stream, quiet=quiet, headline=result.headline, columns=columns)
    writer.write(result)
    writer.close()


#: The characters for which the csv module (excel dialect, QUOTE_MINIMAL) quotes a cell.
_CSV_SPECIAL = (",", '"', "\r", "\n")


def _needs_quotes(cells: list[str]) -> bool:
    """Whether any cell of a column holds a character the csv module would quote it for (scans in C)."""
    text = "\x00".join(cells)
    return any(ch in text for ch in _CSV_SPECIAL)


def _write_csv(stream, writer, cols: list[list[str]]) -> None:
    """The rows of the columns ``cols`` (cells) as ``writer`` (a csv writer on ``stream``, lines ending in
    "\\n") writes them: where no cell needs quotes (nor is a lone empty cell), the cells joined by commas,
    without the csv module's scan of every cell."""
    if len(cols) > 1 and not any(map(_needs_quotes, cols)):
        stream.write("".join(",".join(row) + "\n" for row in zip(*cols)))
    else:
        writer.writerows(zip(*cols))


class ChunkWriter:
    """Write a result chunk by chunk (:class:`~dpcalc.result.Stream`), in exactly the CSV, TSV, JSON,
    JSON Lines or ``-q`` text :func:`render` writes for the whole result; each chunk is flushed as it
    comes (``-q`` on several rows: once the stream has ended, see the module docstring)."""

    def __init__(
        self,
        names: list[str],
        fmt: str,
        stream: IO[str] | None = None,
        *,
        quiet=False,
        headline="",
        columns: list[str] | tuple[str, ...] | None = None,
    ):
        if fmt not in STREAM_FORMATS and not quiet:
            raise ValueError(f"format {fmt!r} cannot stream")
        self.fmt, self.quiet, self.headline = fmt, quiet, headline
        self.names = pick_columns(list(names), columns) if columns and not quiet else list(names)
        self.stream = stream or sys.stdout
        self.count = 0
        self._quiet = _Quiet(list(names), headline, self.stream) if quiet else None
        self._csv = csv.writer(self.stream, lineterminator="\n")
        if quiet:
            return
        if fmt == "csv":
            self._csv.writerow(self.names)
        elif fmt == "tsv":
            self.stream.write("\t".join(one_line(n) for n in self.names) + "\n")

    def write(self, chunk: Result) -> None:
        if self._quiet is not None:
            self._quiet.write(chunk)
            return
        if self.fmt in ("csv", "tsv"):  # column by column: a row costs its values' writing only
            cell = csv_cell if self.fmt == "csv" else tsv_cell
            cols = [column_cells(chunk, n, cell) for n in self.names]
            if self.fmt == "tsv":
                self.stream.write("".join("\t".join(row) + "\n" for row in zip(*cols)))
            else:
                _write_csv(self.stream, self._csv, cols)
            self.stream.flush()
            return
        cols = [chunk.column(n) for n in self.names]
        rows = list(zip(*cols)) if cols else []
        if self.fmt == "jsonl":
            self.stream.write(
                "".join(
                    json.dumps({k: json_value(v) for k, v in zip(self.names, row)}, allow_nan=False) + "\n"
                    for row in rows
                )
            )
        else:  # the layout of json.dumps(rows, indent=2), one object at a time
            parts = []
            for row in rows:
                obj = json.dumps(
                    {k: json_value(v) for k, v in zip(self.names, row)}, indent=2, allow_nan=False
                )
                parts.append(("[\n" if self.count == 0 else ",\n") + "  " + obj.replace("\n", "\n  "))
                self.count += 1
            self.stream.write("".join(parts))
        self.stream.flush()

    def close(self) -> None:
        if self._quiet is not None:
            self._quiet.close()
        elif self.fmt == "json":
            self.stream.write("\n]\n" if self.count else "[]\n")
        self.stream.flush()


class RowWriter:
    """Write rows one at a time, flushing each (streaming output, e.g. ``odometer``).

    CSV and TSV: header then rows.  JSON: a streamed array (``[`` ... ``]``) of objects.  JSON Lines:
    one object per line.  table: aligned plain-text columns (a rich table cannot stream).  ``quiet``:
    the headline column only, one value per row as it comes.  ``select`` (``--columns``) chooses and
    orders the columns.
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
        select: list[str] | tuple[str, ...] | None = None,
    ) -> None:
        self.columns = pick_columns(list(columns), select) if select and not quiet else list(columns)
        self.fmt = fmt
        self.stream = stream or sys.stdout
        self.quiet = quiet
        self.headline = headline
        self.count = 0
        self.widths = {c: max(len(c), (widths or {}).get(c, 12)) for c in self.columns}
        self.tx = (lambda s: s) if fmt != "table" or table._encodes(self.stream, "—εδ") else table.to_ascii
        self._csv = csv.writer(self.stream, lineterminator="\n") if fmt == "csv" else None
        if quiet:
            pass
        elif fmt == "csv":
            self._csv.writerow(self.columns)
        elif fmt == "tsv":
            self.stream.write("\t".join(self.columns) + "\n")
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
        elif self.fmt == "tsv":
            self.stream.write("\t".join(tsv_cell(row.get(c)) for c in self.columns) + "\n")
        elif self.fmt == "json":
            obj = {c: json_value(row.get(c)) for c in self.columns}
            self.stream.write(("\n  " if self.count == 0 else ",\n  ") + json.dumps(obj, allow_nan=False))
        elif self.fmt == "jsonl":
            obj = {c: json_value(row.get(c)) for c in self.columns}
            self.stream.write(json.dumps(obj, allow_nan=False) + "\n")
        else:
            self.stream.write(
                "  ".join(self.tx(table_cell(c, row.get(c))).rjust(self.widths[c]) for c in self.columns)
                + "\n"
            )
        self.count += 1
        self.stream.flush()

    def close(self) -> None:
        if self.fmt == "json" and not self.quiet:
            self.stream.write("\n]\n" if self.count else "]\n")
        self.stream.flush()


def to_string(
    result: Result, fmt: str, *, quiet: bool = False, columns: list[str] | tuple[str, ...] | None = None
) -> str:
    """Render to a string (for tests and the README generator)."""
    buf = io.StringIO()
    render(result, fmt, buf, quiet=quiet, columns=columns)
    return buf.getvalue()
