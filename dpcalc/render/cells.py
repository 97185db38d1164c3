"""Cells: how one value is written in each format, and the safe-side rounding of tables."""

from __future__ import annotations

import math
from typing import Any

from dpcalc.lazy import lazy_module
from dpcalc.result import _is_sequence, _py, rounding
from dpcalc.wrap import _isatty, for_terminal, wrap_words  # noqa: F401 (re-exported: one wrapping rule)

decimal = lazy_module("decimal")  # only where a rounded cell must move to its safe side


# -- cells ------------------------------------------------------------------------------------
def _missing(v: Any) -> bool:
    """A value that does not apply: None, or a nan."""
    return v is None or (isinstance(v, float) and math.isnan(v))


def csv_cell(v: Any) -> str:
    if v is None:
        return ""
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, float):
        if math.isnan(v):
            return ""
        return repr(v + 0.0)  # -0.0 + 0.0 is 0.0: a zero prints as 0.0, never -0.0
    return str(v)


def _float_cell(v: float) -> str:
    """:func:`csv_cell` (and :func:`tsv_cell`) of a Python float."""
    return repr(v + 0.0) if v == v else ""


def column_cells(result, name: str, cell) -> list[str]:
    """``cell`` (:func:`csv_cell` or :func:`tsv_cell`) of every value of a column of ``result``: what
    ``[cell(v) for v in result.column(name)]`` gives, with the work per row taken out where the column is of
    one type: a value shared by every row is written once, floats by :func:`_float_cell` (each distinct value once
    where they repeat) and whole numbers by ``str`` (what both cells do with them), mapped in C."""
    col = result.columns[name]
    n = len(result)
    if not _is_sequence(col):
        return [cell(_py(col))] * n
    if getattr(col, "dtype", None) is not None:  # a numpy array: its values as Python scalars
        col = col.tolist()
    kinds = set(map(type, col))
    if len(kinds) == 1:
        kind = kinds.pop()
        if kind is not float and issubclass(kind, float):  # numpy's float64 in a list: its Python value
            col, kind = list(map(float, col)), float
        if kind is float:
            seen = dict.fromkeys(col)  # a swept input repeats its few values over many rows: write each once
            if 4 * len(seen) < n:
                written = {v: _float_cell(v) for v in seen}
                return list(map(written.__getitem__, col))
            return list(map(_float_cell, col))
        if col.count(col[0]) == n:  # one value in every row
            return [cell(_py(col[0]))] * n
        if kind is int:
            return list(map(str, col))
    return [cell(_py(v)) for v in col]


def one_line(text: str) -> str:
    """``text`` with every tab, CR and LF replaced by a space (a TSV cell, a ``-q`` label)."""
    return text.replace("\t", " ").replace("\r", " ").replace("\n", " ")


def tsv_cell(v: Any) -> str:
    return one_line(csv_cell(v))


def json_value(v: Any) -> Any:
    """A JSON value: ``"inf"``/``"-inf"`` for an infinite number, ``None`` (null) where nothing applies."""
    if isinstance(v, float) and not math.isfinite(v):
        if math.isnan(v):
            return None
        return "inf" if v > 0 else "-inf"
    if isinstance(v, float) and v == 0:
        return 0.0  # never -0.0
    return v


#: a bound this close (relative) to a shorter decimal on its unsafe side is shown as that decimal,
#: marked (see the module docstring)
MARK_RTOL = 1e-12
MARK_UP, MARK_DOWN = "⁺", "⁻"
#: glues the words of a caption item (``name = value``) so that a line never breaks inside it
GLUE = "\x00"


def _quantum(d: decimal.Decimal, digits: int) -> decimal.Decimal:
    return decimal.Decimal(1).scaleb(d.adjusted() - digits + 1)


def _decimal_text(d: decimal.Decimal, digits: int) -> str:
    # d has at most `digits` significant digits (or is a power of ten): the nearest double prints back as d
    return f"{float(d):.{digits}g}"


def _round_sig(v: float, digits: int, direction: str) -> str:
    """``v`` to ``digits`` significant digits, rounded ``up``, ``down`` or to ``nearest``.  A decimal is
    read as the double it parses to: the nearest decimal is kept when that double lies on the safe side
    of ``v`` (``1e-05`` for the double nearest 1e-5); otherwise the decimal is rounded exactly
    (decimal arithmetic) away from ``v``, so an upper bound never reads below ``v``, a lower bound never
    above."""
    if v == 0 or not math.isfinite(v):
        return "0" if v == 0 else ("inf" if v > 0 else "-inf")
    text = f"{v:.{digits}g}"
    near = float(text)
    if direction not in ("up", "down") or (near >= v if direction == "up" else near <= v):
        return text
    d = decimal.Decimal(v)
    rounding = decimal.ROUND_CEILING if direction == "up" else decimal.ROUND_FLOOR
    return _decimal_text(d.quantize(_quantum(d, digits), rounding=rounding), digits)


def rounded(v: float, direction: str, digits: int = 6) -> str:
    """``v`` shortened to ``digits`` significant digits on its safe side (``direction``: ``"up"`` for an
    upper bound, ``"down"`` for a lower bound, ``"nearest"`` otherwise): for a bound quoted in a note,
    a caption or a plot label, as tables round it."""
    return _round_sig(float(v), digits, direction)


def _marked(v: float, digits: int, direction: str) -> str | None:
    """``x⁺`` (``x⁻``) when the bound ``v`` lies just above (below) the ``digits``-digit decimal ``x``."""
    if v == 0 or not math.isfinite(v):
        return None
    text = f"{v:.{digits}g}"  # the nearest decimal of `digits` digits
    near = float(text)
    if (near < v if direction == "up" else near > v) and abs(v - near) <= MARK_RTOL * abs(v):
        return text + (MARK_UP if direction == "up" else MARK_DOWN)
    return None


#: columns classified by the answer they are in some results (:mod:`dpcalc.result`: the noise a
#: calibration found, rounded up; the sample rate, epochs or per-release ε found as the largest within a
#: target, rounded down) that are inputs in the others: there they round to nearest, as inputs do
#: (256/60000 shows as 0.00426667, not 0.00426666).  Such a column is an answer where the result makes
#: it its headline, names it ``derived``, or says a search ``found`` it in some rows.
INPUT_OR_ANSWER = frozenset(
    {"noise_multiplier", "sigma", "scale", "sample_rate", "epochs", "release_epsilon"}
)


def direction_in(name: str, headline: str = "", derived=(), found=()) -> str:
    """How column ``name`` rounds in a result with that ``headline``, ``derived`` and ``found`` columns
    (:class:`~dpcalc.result.Result`): by its class (:func:`dpcalc.result.rounding`), except that a column
    of :data:`INPUT_OR_ANSWER` the result neither answers with (its headline) nor derives nor found is an
    input, rounded to nearest."""
    if name in INPUT_OR_ANSWER and name != headline and name not in derived and name not in found:
        return "nearest"
    return rounding(name)


def table_cell(
    name: str, v: Any, digits: int = 6, *, marks: bool = False, direction: str | None = None
) -> str:
    """A value as people read it: bounds rounded to the safe side (see the module docstring), the rest
    to nearest; ``direction`` overrides the column's class (:func:`direction_in`); ``marks`` allows
    ``x⁺``/``x⁻`` for a bound just beside a shorter decimal (tables only)."""
    if _missing(v):
        return "—"
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, float):
        if math.isinf(v):
            return "inf" if v > 0 else "-inf"
        if v == 0:
            return "0"  # never -0
        direction = direction or rounding(name)
        if direction == "nearest":
            return f"{v:.{digits}g}"
        return (marks and _marked(v, digits, direction)) or _round_sig(v, digits, direction)
    return str(v)
