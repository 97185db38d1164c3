"""The one renderer: a :class:`~dpcalc.result.Result` as a table, CSV, TSV, JSON or JSON Lines (and ``-q``).

The machine formats are a contract scripts can build on:

* ``csv``: one header row of snake_case column names, then one row per result.  Floats are written as
  ``repr`` (full precision), booleans as ``true``/``false``.  An infinite value is ``inf`` (``-inf``);
  a value that does not apply (a method that does not apply to the input, a quantity a row has not)
  is an empty cell, and so is a nan.  CSV quoting keeps a value holding a comma, a quote or a line
  break in one field.
* ``tsv``: the same header and cells separated by tabs; a tab, CR or LF inside a value is replaced by
  a space, so that every row is exactly one line.
* ``json``: an array of objects with the same keys, in column order.  A non-finite number is the
  string ``"inf"`` (or ``"-inf"``); ``null`` means only "does not apply" (a nan counts as that).
* ``jsonl``: the same objects, one per line (JSON Lines), written and flushed chunk by chunk.
* ``--columns a,b,c`` chooses and orders the columns of every format (:func:`pick_columns`: an
  unknown name is an :class:`~dpcalc.errors.InputError` that lists the available ones).
* quiet (``-q``): the headline column, per configuration (the rows that share every input and differ
  only by method, accountant or conversion: :mod:`dpcalc.render.configs`), the tightest certified value
  (:mod:`dpcalc.render.quiet`).  One configuration prints its value alone (an empty line where no row
  has one).  Several print ``LABEL<TAB>VALUE`` per line, LABEL being ``key=value`` for every input
  that varies across the configurations, joined by commas.  A row that is not a certified bound is
  never printed; a configuration without a certified value prints no line (a warning), and a result
  without any is an :class:`~dpcalc.errors.InputError`.  As the labels depend on every row, a stream's
  ``-q`` lines are written once it has ended (the configurations held in bounded memory meanwhile).
  A result with a ``step`` column is a running series (the odometer's steps): its ``-q`` prints one
  value per step, unlabelled, exactly as the streaming odometer does.
  ``--columns`` does not apply to ``-q``.

``table`` is for people (rich; imported only for tables, by :mod:`dpcalc.render.rich_table`).  Its rules:

* one row: a vertical ``quantity | value`` table of the quantities that apply to it (a column with no
  value, or an empty text, is left out, except the headline, and one caption line says how many:
  ``8 columns not shown: none apply``; CSV and JSON keep every column); several rows: one line per row, where a column
  holding the same value on every row moves to the caption (``name = value``) and a column that
  repeats another is dropped (one-to-one with an earlier column, each value equal to or contained in
  the other's: ``accountant`` ``abadi`` beside ``method`` ``abadi-asymptotic``).  An alias column
  (:data:`~dpcalc.result.TABLE_ALIASES`: ``tpr_upper``, the same value as ``tpr``) is left out where
  it holds the same values as the column it repeats.
* numbers show 6 significant digits, rounded *to the safe side*: every column of every schema is
  classified in :mod:`dpcalc.result` (:func:`~dpcalc.result.rounding`): upper bounds
  (:data:`~dpcalc.result.UPPER_COLUMNS`, with the noise a calibration found) up, lower bounds
  (:data:`~dpcalc.result.LOWER_COLUMNS`, with a sample rate or per-release ε found as the largest
  within a target) down, estimates, exact values and inputs to nearest (a decimal is read as the double it
  parses to: the double nearest 1e-5 shows as ``1e-05``).  A column classified by what it is when a
  search finds it (the noise, a sample rate, epochs, a per-release ε:
  :data:`~dpcalc.render.cells.INPUT_OR_ANSWER`) rounds to its safe side only where the result answers
  with it (its headline, or a column it names ``derived``); given, it is an input, to nearest
  (256/60000 shows as ``0.00426667``).  Zero shows as ``0`` (never ``-0``).  A bound that lies within 1e-12 (relative)
  of the shorter decimal ``x`` on its unsafe side is shown as ``x⁺`` ("just above x") or ``x⁻``
  ("just below x"); so the basic composition of ten ε = 1 releases, computed as 10.000000000000004,
  shows as ``10⁺`` rather than as ``10.0001``, and never as the unsound ``10``.  The caption explains
  a mark when one is shown.  A bound quoted in a note, a caption or a plot label is rounded the same
  way (:func:`~dpcalc.render.cells.rounded`).
* a cell is never folded: no number or name is split across lines.  On a terminal the table fits
  the terminal's width; when it does not, the renderer in turn moves long text (notes) to numbered
  footnotes below the table, abbreviates long headers (``noise_multiplier`` -> ``σ``, with a legend
  in the caption), says once per method in the caption a text or flag column that holds one value
  per method (``conversion by method: rdp = optimal, abadi-asymptotic = classic``; a note as
  ``note of METHOD, ...: ...``, methods with the same text on one line), drops the borders (a rule
  under the header, one space between columns), shows fewer digits (never fewer than 3), and finally
  draws one ``quantity | value`` block per row (where only prose wraps, between words; on a terminal
  too narrow even for that, plain ``quantity: value`` lines).  Captions wrap between words, never inside a ``name = value`` item.
* the ``Note:`` and ``Warning:`` lines on stderr follow the table (the rows) on every command, and they
  and a verdict (``Error: AUDIT FAILED ...``, ``Error: budget exceeded ...``, exit 3) wrap between words
  to a terminal's width (continuation lines indented; a word longer than the width breaks after a ``,``
  ``;`` or ``:``); into a pipe or a file each stays one line.
* off a terminal (``-f table`` into a pipe or a file) the table is as wide as it needs (at least 100
  columns), with the same cells.
* a stream whose encoding cannot write the box characters (``PYTHONIOENCODING=ascii``) gets ASCII
  borders and ASCII text (``ε`` -> ``eps``).

:class:`ChunkWriter` writes a :class:`~dpcalc.result.Stream` chunk by chunk in exactly the bytes
:func:`render` writes for the whole result; :class:`RowWriter` streams single rows (``odometer``).
"""

from __future__ import annotations

from dpcalc.render.cells import MARK_RTOL, csv_cell, json_value, table_cell, tsv_cell
from dpcalc.render.formats import (
    FORMATS,
    STREAM_FORMATS,
    ChunkWriter,
    RowWriter,
    pick_columns,
    render,
    resolve_format,
    to_string,
)

__all__ = [
    "FORMATS",
    "MARK_RTOL",
    "STREAM_FORMATS",
    "ChunkWriter",
    "RowWriter",
    "csv_cell",
    "json_value",
    "pick_columns",
    "render",
    "resolve_format",
    "table_cell",
    "to_string",
    "tsv_cell",
]
