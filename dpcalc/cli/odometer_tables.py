"""The tables of ``dpcalc odometer`` (:mod:`dpcalc.cli.odometer_io`): an input read whole is one table laid out
by the renderer; a stream's rows are written one at a time, in columns chosen to fit the terminal."""

from __future__ import annotations

import shutil
import sys

from dpcalc.render import RowWriter, render
from dpcalc.render.cells import table_cell
from dpcalc.result import Result


class WholeTable:
    """The table of an input read whole (a file, --event, --dp-event): its rows are drawn at the end by
    the renderer, which fits them to the terminal as every command's table (:mod:`dpcalc.render`)."""

    def __init__(self, columns, select) -> None:
        self.columns, self.select, self.rows = list(columns), select, []

    def write(self, row: dict) -> None:
        self.rows.append(row)

    def close(self) -> None:
        if not self.rows:  # no rows, no table (a CSV header or an empty JSON array are for programs)
            return
        result = Result({c: [r.get(c) for r in self.rows] for c in self.columns}, title="odometer")
        render(result, "table", sys.stdout, columns=self.select)


#: Streamed table rows (standard input, a pipe, --follow), in the order shown: the mechanism last, so that
#: a long one shifts no other column.  On a terminal, the columns that never apply in the mode are left
#: out (``recorded`` in a stream; ``run`` without --filter, the odometer's ``alpha`` and ``level`` with it),
#: and where the rest are too wide they go in the order of ``DROPPED`` until the others fit.
STREAM_ORDER = (
    "step",
    "run",
    "epsilon",
    "alpha",
    "level",
    "epsilon_rdp",
    "mu_step",
    "epsilon_step",
    "delta_step",
    "mu",
    "mu_budget",
    "epsilon_fixed",
    "delta",
    "recorded",
    "method",
    "mechanism",
)
DROPPED = {
    False: ("recorded", "run", "delta", "level", "alpha", "epsilon_rdp", "mechanism"),
    True: ("recorded", "alpha", "level", "delta", "epsilon", "mechanism", "epsilon_rdp"),
}
#: The same under --method gdp|dp (the per-step inputs first, the running values last).
ADAPTIVE_DROPPED = {
    False: (
        "recorded",
        "run",
        "delta",
        "level",
        "mu_budget",
        "delta_step",
        "mu_step",
        "epsilon_step",
        "mu",
        "mechanism",
    ),
    True: (
        "recorded",
        "level",
        "delta",
        "mu_budget",
        "delta_step",
        "mu_step",
        "epsilon_step",
        "epsilon",
        "mechanism",
    ),
}
_NUMBER_WIDTH = 12  # a table cell of a float: 6 significant digits, an exponent and a mark
_MIN_MECHANISM = 12  # the least room worth giving the mechanism on a narrow terminal


def _terminal_width(stream) -> int | None:
    try:
        if not stream.isatty():
            return None
    except (AttributeError, OSError, ValueError):
        return None
    return shutil.get_terminal_size().columns


class StreamedTable:
    """Table rows written one at a time as they come (a stream cannot wait for the renderer's whole
    table): :class:`~dpcalc.render.RowWriter`'s aligned columns, chosen to fit a terminal's width
    (:data:`DROPPED`), the mechanism last and cut short with an ellipsis where it would not fit.  Off
    a terminal every column is shown, as wide as it needs.  ``select`` (--columns): those columns, as
    given."""

    def __init__(self, columns, orders, delta, never, dropped, select) -> None:
        widths = {c: _NUMBER_WIDTH for c in columns}
        widths.update({"step": 6, "run": 5, "level": 5, "recorded": 8, "mechanism": len("mechanism")})
        widths["method"] = 6
        widths["alpha"] = max([5] + [len(table_cell("alpha", float(a))) for a in orders])
        widths["delta"] = max(5, len(table_cell("delta", float(delta))) if delta is not None else 0)
        self.width = _terminal_width(sys.stdout)
        if select:
            shown = list(select)
        else:
            shown = [c for c in STREAM_ORDER if c in columns] + [c for c in columns if c not in STREAM_ORDER]
            if self.width is not None:  # on a terminal: not the columns that never apply in this mode
                shown = self._fit([c for c in shown if c not in never], widths, dropped)
        self.room = None  # the mechanism's room on a terminal (it is the last column there)
        if self.width is not None and shown and shown[-1] == "mechanism":
            used = sum(widths[c] + 2 for c in shown[:-1])
            self.room = max(self.width - used, widths["mechanism"])
        self.writer = RowWriter(columns, "table", sys.stdout, widths=widths, select=shown)

    def _fit(self, shown, widths, dropped):
        def needs(cols):
            return (
                sum(widths[c] for c in cols)
                + 2 * (len(cols) - 1)
                + (_MIN_MECHANISM - widths["mechanism"] if "mechanism" in cols else 0)
            )

        for name in dropped:
            if needs(shown) <= self.width or len(shown) <= 2:
                break
            if name in shown:
                shown.remove(name)
        return shown

    def write(self, row: dict) -> None:
        text = row.get("mechanism")
        if self.room is not None and isinstance(text, str) and len(self.writer.tx(text)) > self.room:
            cut = self.writer.tx("…")
            text = self.writer.tx(text)[: max(self.room - len(cut), 1)] + cut
            row = {**row, "mechanism": text}
        self.writer.write(row)

    def close(self) -> None:
        self.writer.close()
