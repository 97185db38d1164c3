"""Configurations and their tightest certified value: what ``-q`` prints and a budget judges (pure Python).

A *configuration* is the set of rows of a result that share every input column and differ only in
how the answer was computed (``method``, ``accountant``, ``conversion``, ``bound``).  Every certified
row of a configuration bounds the same quantity of the same run, so the configuration's answer is
its tightest certified row: the smallest certified upper bound (ε, δ, a Rényi level, a TPR, the
smallest noise within a target), or the largest where larger is better (the most steps or the largest
sample rate within a target, a certified lower bound).  ``-q`` prints that value, one line per
configuration, and ``--max-epsilon``/``--max-delta``/``--max-tpr`` judge it (:class:`Tightest`).

The input columns (:func:`key_columns`) are every column but the method's (:data:`IDENTITY`), the
headline, the outputs (:data:`NOT_INPUTS`, an ``X`` beside its ``target_X``, a best ``alpha`` after
the headline) and the columns a result names as ``derived`` (a solved parameter, a curve's best
order).  A column not known to be an output counts as an input: a doubt splits configurations (each
then judged on its own rows), never merges two.  A method that answers another question than its
command's other methods (:data:`SEPARATE`: iterate's ``cni``, two runs on the same data started
apart) is a configuration of its own.

A row is *certified* for a column (:func:`certified`) when the column holds a number and the row is a
guarantee: not ``valid=false``, not an asymptotic or reference formula, not the ``lower`` bound of a
command that reports upper ones (``bound=lower``), and not a Monte Carlo row (a ``confidence``, or a
method ending in ``-mc``: an upper bound only with that probability).  A lower-bound column (``epsilon_lower`` of an audit, say)
is what its name says, and certified in every row where ``valid`` is not false.

Memory is bounded: up to :data:`SPILL` configurations are kept in a dictionary, more in a temporary
SQLite file (a sweep of millions of rows is judged in a few MB).
"""

from __future__ import annotations

import math
from ast import literal_eval
from collections.abc import Iterator

from dpcalc.lazy import lazy_module
from dpcalc.render.cells import csv_cell
from dpcalc.result import CONDITIONAL_LOWER_COLUMNS, LOWER_BOUND_COLUMNS

#: SQLite, only for a sweep past SPILL configurations (some 1–2 ms of every start-up)
sqlite3 = lazy_module("sqlite3")

#: the columns that name how a row was computed, never what was asked
IDENTITY = frozenset({"method", "accountant", "conversion", "bound"})
#: columns that are never inputs of a row: bounds beside the headline, estimates, flags and notes
NOT_INPUTS = (
    LOWER_BOUND_COLUMNS
    | CONDITIONAL_LOWER_COLUMNS
    | {
        "epsilon_estimate",
        "delta_estimate",
        "tpr_estimate",
        "valid",
        "note",
        "best_alpha",
        "crossing_steps",
        "recorded",
        "run",
        "level",
        "epsilon_rdp",
        "tpr",
        "tpr_upper",
        "mu",
        "fpr_upper",
        "ratio",
    }
)
#: methods that answer another question than the other methods of their command
SEPARATE = frozenset({"cni"})
#: headlines where a larger certified value is the tighter answer (the rest: smaller)
LARGER_IS_TIGHTER = LOWER_BOUND_COLUMNS | {"steps", "sample_rate", "batch_size", "release_epsilon"}
#: configurations kept in memory before the rest go to a temporary SQLite file
SPILL = 10_000


def key_columns(names, headline: str, derived=()) -> list[str]:
    """The input columns of ``names``: those that name a configuration (see the module docstring)."""
    names = list(names)
    at = names.index(headline) if headline in names else len(names)
    out = []
    for i, c in enumerate(names):
        # an X beside its target_X is the value at the target found; but where δ at ε is asked, ε is the input
        beside_target = f"target_{c}" in names and (c, headline) != ("epsilon", "delta")
        if c == headline or c in IDENTITY or c in NOT_INPUTS or c in derived or beside_target:
            continue
        if c == "alpha" and i > at:
            continue  # the best order found: an output
        out.append(c)
    return out


def sound_row(row: dict) -> bool:
    """Whether a row's ε and δ are sound upper bounds: not a row whose ``valid`` is false, nor a row
    whose ``method`` is ``lower`` or ends in ``-asymptotic``, ``-reference`` or ``-heuristic`` (a formula that is
    not a guarantee), nor a row whose ``bound`` is ``lower``."""
    if row.get("valid") is False or row.get("bound") == "lower":
        return False
    method = row.get("method")
    if isinstance(method, str) and (
        method == "lower" or method.endswith(("-asymptotic", "-reference", "-heuristic"))
    ):
        return False
    return True


def number(v) -> bool:
    """Whether ``v`` is a number (not None, not a bool, not nan)."""
    return (
        isinstance(v, (int, float))
        and not isinstance(v, bool)
        and not (isinstance(v, float) and math.isnan(v))
    )


def certified(row: dict, column: str) -> bool:
    """Whether ``row[column]`` is a certified bound (see the module docstring)."""
    if not number(row.get(column)) or row.get("valid") is False:
        return False
    if column in LOWER_BOUND_COLUMNS:
        return True
    if column in CONDITIONAL_LOWER_COLUMNS:  # a lower bound only under an assumption no row checks
        return False
    method = row.get("method")
    monte_carlo = row.get("confidence") is not None or (isinstance(method, str) and method.endswith("-mc"))
    return sound_row(row) and not monte_carlo


class Tightest:
    """Per configuration, in the order of first appearance, the tightest certified value of each of
    ``columns``, fed whole or chunk by chunk (:meth:`feed`); rows are numbered across chunks from 1.

    :meth:`configs` yields ``(cells, picks)``: the configuration's input cells (:attr:`keys`) and, per
    column, ``(value, cell, method, row, seen)``: the tightest certified value (None if no row
    certifies one), its CSV cell, method and row number, and whether any row had a number there."""

    def __init__(self, names, headline: str, columns, derived=()) -> None:
        self.keys = key_columns(names, headline, derived)
        self.columns = list(columns)
        self.larger = [c in LARGER_IS_TIGHTER for c in self.columns]
        self.rows = 0
        self.first: list[str] | None = None
        self.varies = [False] * len(self.keys)
        self.separate = False  # a SEPARATE method's configuration was seen
        #: per column, the methods (at most 6) of rows with a number that certifies nothing
        self.uncertified: list[list[str]] = [[] for _ in self.columns]
        self._mem: dict[tuple, list] = {}  # key (sep, *cells) -> [seq, cells, sep, picks]
        self._db = None

    # -- feeding ---------------------------------------------------------------------------------
    def feed(self, result) -> None:
        names = set(result.names)
        need = set(self.keys) | set(self.columns) | ({"method", "valid", "bound", "confidence"} & names)
        cols = {n: result.column(n) for n in need if n in names}
        keyed = [cols.get(k, [None] * len(result)) for k in self.keys]
        methods = cols.get("method", [None] * len(result))
        batch = []
        for i in range(len(result)):
            self.rows += 1
            row = {n: cols[n][i] for n in cols}  # the columns certified() reads
            cells = [csv_cell(col[i]) for col in keyed]
            self._track(cells)
            m = methods[i]
            sep = m if m in SEPARATE else ""
            self.separate = self.separate or bool(sep)
            picks = []
            for j, c in enumerate(self.columns):
                v = row.get(c)
                if certified(row, c):
                    picks.append((float(v), csv_cell(v), None if m is None else str(m), self.rows, 1))
                else:
                    if number(v):
                        label = str(m) if m is not None else f"row {self.rows}"
                        if label not in self.uncertified[j] and len(self.uncertified[j]) < 6:
                            self.uncertified[j].append(label)
                    picks.append((None, "", None, None, int(number(v))))
            batch.append(((sep, *cells), self.rows, cells, sep, picks))
        if self._db is None:
            for entry in batch:
                self._keep(*entry)
            if len(self._mem) > SPILL:
                self._spill()
        else:
            self._upsert(batch)

    def _track(self, cells: list[str]) -> None:
        if self.first is None:
            self.first = list(cells)
            return
        for j, x in enumerate(cells):
            if not self.varies[j] and x != self.first[j]:
                self.varies[j] = True

    def _better(self, j: int, new, old) -> bool:
        if new is None:
            return False
        if old is None:
            return True
        return new > old if self.larger[j] else new < old

    def _keep(self, key, seq, cells, sep, picks) -> None:
        entry = self._mem.get(key)
        if entry is None:
            self._mem[key] = [seq, cells, sep, [list(p) for p in picks]]
            return
        for j, p in enumerate(picks):
            old = entry[3][j]
            seen = old[4] or p[4]
            if self._better(j, p[0], old[0]):
                entry[3][j] = list(p)
            entry[3][j][4] = seen

    # -- the SQLite spill ------------------------------------------------------------------------
    def _spill(self) -> None:
        self._db = sqlite3.connect("")  # a private temporary file, deleted when closed
        cols = "".join(
            f", v{j} REAL, c{j} TEXT, m{j} TEXT, r{j} INTEGER, a{j} INTEGER" for j in range(len(self.columns))
        )
        # k: repr of the key tuple (sep, *cells), read back by literal_eval
        self._db.execute(f"CREATE TABLE cfg (k TEXT PRIMARY KEY, seq INTEGER{cols})")
        self._db.execute("CREATE INDEX cfg_seq ON cfg (seq)")
        sets = []
        for j, larger in enumerate(self.larger):
            better = (
                f"excluded.v{j} IS NOT NULL AND (v{j} IS NULL OR excluded.v{j} {'>' if larger else '<'} v{j})"
            )
            sets += [f"{x}{j} = CASE WHEN {better} THEN excluded.{x}{j} ELSE {x}{j} END" for x in "cmr"]
            sets.append(f"v{j} = CASE WHEN {better} THEN excluded.v{j} ELSE v{j} END")
            sets.append(f"a{j} = MAX(a{j}, excluded.a{j})")
        marks = ", ".join("?" * (2 + 5 * len(self.columns)))
        self._insert = f"INSERT INTO cfg VALUES ({marks}) ON CONFLICT(k) DO " + (
            f"UPDATE SET {', '.join(sets)}" if sets else "NOTHING"
        )
        rows = [
            (repr(key), seq, *[x for p in picks for x in p]) for key, (seq, _, _, picks) in self._mem.items()
        ]
        self._db.executemany(self._insert, rows)
        self._mem = {}

    def _upsert(self, batch) -> None:
        self._db.executemany(
            self._insert,
            [(repr(key), seq, *[x for p in picks for x in p]) for key, seq, _, _, picks in batch],
        )

    # -- reading ---------------------------------------------------------------------------------
    @property
    def count(self) -> int:
        """The number of configurations."""
        if self._db is None:
            return len(self._mem)
        return self._db.execute("SELECT count(*) FROM cfg").fetchone()[0]

    def configs(self) -> Iterator[tuple[list[str], str, list[tuple]]]:
        """``(cells, sep, picks)`` per configuration, in the order of first appearance."""
        if self._db is None:
            for _, cells, sep, picks in sorted(self._mem.values(), key=lambda e: e[0]):
                yield cells, sep, [tuple(p) for p in picks]
            return
        width = 5 * len(self.columns)
        fields = "".join(f", v{j}, c{j}, m{j}, r{j}, a{j}" for j in range(len(self.columns)))
        for rec in self._db.execute(f"SELECT k{fields} FROM cfg ORDER BY seq"):
            flat = rec[1 : 1 + width]
            picks = [tuple(flat[5 * j : 5 * j + 5]) for j in range(len(self.columns))]
            sep, *cells = literal_eval(rec[0])
            yield cells, sep, picks

    def label(self, cells: list[str], sep: str) -> str:
        """The configuration's name: its inputs that vary across the configurations, as key=value
        joined by commas; where a :data:`SEPARATE` method answers another question, its configurations
        are named by the method first, the others by ``dp`` (iterate: ``cni`` and ``dp``)."""
        parts = [sep or "dp"] if self.separate else []  # dp: the question of the command's other methods
        parts += [f"{k}={cells[j]}" for j, k in enumerate(self.keys) if self.varies[j]]
        return ",".join(parts)

    def close(self) -> None:
        if self._db is not None:
            self._db.close()
            self._db = None
