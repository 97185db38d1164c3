"""The progress bar of long work, on stderr (rich's progress): done out of the total, the rate, the time left.

It is transient: gone before anything else is drawn (a table on a terminal comes after it).  It is opened only
when a bar is wanted (by default on a terminal; ``--progress`` asks for it anywhere), so it is always drawn.
"""

from __future__ import annotations

import sys

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    ProgressColumn,
    TextColumn,
    TimeRemainingColumn,
)
from rich.text import Text


class _Rate(ProgressColumn):
    """Units per second."""

    def __init__(self, unit: str):
        super().__init__()
        self.unit = unit

    def render(self, task) -> Text:
        speed = task.finished_speed or task.speed
        if not speed:
            return Text(f"? {self.unit}/s")
        shown = f"{speed:,.0f}" if speed >= 10 else f"{speed:.2g}"
        return Text(f"{shown} {self.unit}/s")


class Bar:
    """A live bar of ``total`` ``unit`` on stderr."""

    def __init__(self, total: float, unit: str):
        self._progress = Progress(
            TextColumn("dpcalc"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn(unit),
            _Rate(unit),
            TimeRemainingColumn(),
            console=Console(file=sys.stderr, force_terminal=True, force_interactive=True),  # asked for: drawn
            transient=True,
            redirect_stdout=False,
            redirect_stderr=False,
        )
        self._task = self._progress.add_task("work", total=total)
        self._progress.start()

    def advance(self, amount: float) -> None:
        self._progress.advance(self._task, amount)

    def close(self) -> None:
        self._progress.stop()
