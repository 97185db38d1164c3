"""The table for people, drawn with rich: the layout of :mod:`dpcalc.render.table` rendered to a string, then
written.  Imported only when a table is drawn (``-f table``, or a terminal): csv, tsv, json and jsonl never
load rich."""

from typing import IO

from rich import box
from rich.box import Box
from rich.cells import cell_len
from rich.console import Console
from rich.table import Table
from rich.text import Text

from dpcalc.render.cells import _isatty
from dpcalc.render.table import _encodes, _Table, _wrap, to_ascii
from dpcalc.result import Result

#: A compact table's rule in ASCII: dashes under the header, nothing else.
_ASCII_RULE = Box("    \n    \n -- \n    \n    \n    \n    \n    \n", ascii=True)


def render_table(result: Result, stream: IO[str]) -> None:
    """Draw ``result`` as a table for people (rules in :mod:`dpcalc.render`).  rich renders into a
    string that is then written to ``stream``, so that a failed write raises here like any other."""
    terminal = _isatty(stream)
    plain = not _encodes(stream)
    tx = to_ascii if plain else (lambda s: s)
    limit = Console(file=stream).width if terminal else None
    layout = _Table(result, tx, cell_len)
    plan = layout.plan(limit)
    width = limit if limit is not None else max(plan.width, 100)
    console = Console(file=stream, width=width, highlight=False, soft_wrap=False, emoji=False, markup=False)
    with console.capture() as capture:
        if result.title:
            for line in _wrap("prose", tx(result.title), width):
                console.print(Text(line, style="table.title"), soft_wrap=True)
        if plan.kind == "lines":
            for i, ((q, v), prose) in enumerate(zip(plan.body, plan.prose)):
                text = f"{q}: {v}"
                lines = _wrap("note", text, width) if prose else [text]
                for line in lines:
                    console.print(Text(line), soft_wrap=True)
                if i in plan.sections and i != len(plan.body) - 1:
                    console.print()
        else:
            if plan.compact:  # no borders: a rule under the header, one space between columns
                table = Table(
                    box=_ASCII_RULE if plain else box.SIMPLE_HEAD,
                    show_edge=False,
                    pad_edge=False,
                    padding=(0, 0),
                )
            else:
                table = Table(box=box.ASCII if plain else box.HEAVY_HEAD, safe_box=plain)
            if plan.kind == "rows":
                for h, right in zip(plan.headers, plan.right):
                    table.add_column(Text(h), justify="right" if right else "left", no_wrap=True)
                for cells in plan.body:
                    table.add_row(*(Text(c) for c in cells))
            else:  # one block per row: only prose may wrap, between words
                table.add_column(Text(plan.headers[0]), no_wrap=True)
                table.add_column(Text(plan.headers[1]), justify="right", overflow="ellipsis")
                for i, ((q, v), prose) in enumerate(zip(plan.body, plan.prose)):
                    value = Text(v, justify="left") if prose else Text(v, no_wrap=True)
                    table.add_row(Text(q), value, end_section=i in plan.sections)
            console.print(table)
        for kind, text in plan.caption:  # below the table, wrapped to the console's width
            for line in _wrap(kind, text, width):
                console.print(Text(line, style="dim"), soft_wrap=True)
    stream.write(capture.get())
