"""``-q``: the headline value of each row, labelled when there are several rows."""

import json
from typing import IO

from dpcalc.render.cells import csv_cell, one_line
from dpcalc.result import Result

# -- -q -----------------------------------------------------------------------------------------
#: columns that are never inputs of a row: bounds beside the headline, estimates, flags and notes
_NOT_INPUTS = {
    "epsilon_lower",
    "delta_lower",
    "rdp_lower",
    "rdp_certifying",
    "tpr_lower",
    "mu_lower",
    "epsilon_gdp",
    "epsilon_estimate",
    "delta_estimate",
    "valid",
    "note",
    "best_alpha",
    "crossing_steps",
    "recorded",
    "tpr",
    "mu",
}


def label_candidates(names: list[str], headline: str) -> list[str]:
    """The columns that may name a row in ``-q`` output (besides ``method``): every column but the
    headline, the columns of :data:`_NOT_INPUTS`, an ``X`` beside its ``target_X`` (the value reached
    for a target), and an ``alpha`` after the headline (the best order found, an output)."""
    at = names.index(headline) if headline in names else len(names)
    out = []
    for i, c in enumerate(names):
        if c in (headline, "method") or c in _NOT_INPUTS or f"target_{c}" in names:
            continue
        if c == "alpha" and i > at:
            continue
        out.append(c)
    return out


class _Quiet:
    """``-q``: the headline value alone (one row) or ``LABEL<TAB>VALUE`` lines (several rows)."""

    def __init__(self, names: list[str], headline: str, stream: IO[str]) -> None:
        self.headline, self.stream = headline, stream
        self.has_value = headline in names
        self.method = "method" in names and headline != "method"
        self.cands = (["method"] if self.method else []) + label_candidates(names, headline)
        self.series = "step" in names  # a running series (odometer): one value per step, as it streams
        self.count = 0
        self.first: tuple[list[str], str] | None = None
        self.spool = None
        self.firsts: list[str] | None = None
        self.varies = [False] * len(self.cands)
        self.by_method: list[dict] = [{} for _ in self.cands]
        self.free = [False] * len(self.cands)  # not determined by the method

    def write(self, chunk: Result) -> None:
        if self.series:
            values = chunk.column(self.headline) if self.has_value else [None] * len(chunk)
            self.stream.write("".join(csv_cell(v) + "\n" for v in values))
            return
        cols = [chunk.column(c) for c in self.cands]
        values = chunk.column(self.headline) if self.has_value else [None] * len(chunk)
        for i, v in enumerate(values):
            self._row([csv_cell(col[i]) for col in cols], csv_cell(v))

    def _row(self, labels: list[str], value: str) -> None:
        self.count += 1
        if self.count == 1:
            self.first = (labels, value)
            return
        if self.count == 2:
            import tempfile

            self.spool = tempfile.SpooledTemporaryFile(max_size=1 << 22, mode="w+", encoding="utf-8")
            self._keep(*self.first)
        self._keep(labels, value)

    def _keep(self, labels: list[str], value: str) -> None:
        if self.firsts is None:
            self.firsts = list(labels)
        m = labels[0] if self.method else None
        for j, x in enumerate(labels):
            if x != self.firsts[j]:
                self.varies[j] = True
            if self.by_method[j].setdefault(m, x) != x:
                self.free[j] = True
        self.spool.write(json.dumps([labels, value]) + "\n")

    def close(self) -> None:
        if self.count == 1:
            self.stream.write(self.first[1] + "\n")
        elif self.count > 1:
            method_shown = self.method and self.varies[0]
            shown = []
            for j, c in enumerate(self.cands):
                if not self.varies[j] or (c != "method" and method_shown and not self.free[j]):
                    continue  # the same on every row, or determined by the method
                shown.append(j)
            self.spool.seek(0)
            out: list[str] = []
            for i, line in enumerate(self.spool, start=1):
                labels, value = json.loads(line)
                if value == "":
                    continue  # the value does not apply to this row
                parts = [
                    labels[j] if self.cands[j] == "method" else f"{self.cands[j]}={labels[j]}" for j in shown
                ]
                out.append(one_line(",".join(parts) or f"row={i}") + "\t" + value + "\n")
                if len(out) >= 1024:
                    self.stream.write("".join(out))
                    out.clear()
            self.stream.write("".join(out))
            self.spool.close()
        self.stream.flush()
