"""click parameter types for dpcalc's value syntax (pure Python: no numpy here).

Every numeric option takes ``V``, a list ``V1,V2,...``, an arithmetic range ``START:STOP:STEP``
(STOP included when it lies on the grid) or a geometric range ``START:STOP:xFACTOR``.
A value is parsed to a tuple of floats (or ints), checked against the option's domain, and a bad
value becomes one error line naming the option (click's ``BadParameter``, exit status 2).
"""

from __future__ import annotations

import math
from decimal import Decimal, InvalidOperation

import click

#: The largest --seed: numpy's generators take seeds >= 0; 2^63 − 1 keeps every seed a signed 64-bit integer.
SEED_MAX = 2**63 - 1

#: The most values one option may expand to (guards memory against a typo like 1:1e9:1).
MAX_VALUES = 1_000_000


class Grid(click.ParamType):
    """A numeric option in dpcalc's value syntax, checked against a domain.

    ``lo``/``hi`` bound the domain (``None``: unbounded); ``lo_open``/``hi_open`` say whether the
    bound itself is excluded; ``integer`` requires whole numbers (returned as ``int``); ``why``, if
    given, ends the error for the excluded lower end itself (why it is excluded).
    """

    name = "value"

    def __init__(
        self,
        lo: float | None = None,
        hi: float | None = None,
        *,
        lo_open: bool = True,
        hi_open: bool = False,
        integer: bool = False,
        max_values: int = MAX_VALUES,
        why: str | None = None,
    ) -> None:
        self.lo = lo
        self.hi = hi
        self.lo_open = lo_open
        self.hi_open = hi_open
        self.integer = integer
        self.max_values = max_values
        self.why = why
        self.name = "int" if integer else "float"

    # -- click interface -------------------------------------------------------------------
    def get_metavar(self, param, ctx=None):  # click >= 8.2 passes ctx
        return "INT[,..|A:B:S]" if self.integer else "X[,..|A:B:S|A:B:xF]"

    def convert(self, value, param, ctx):
        if isinstance(value, tuple):
            return value
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            value = repr(value)
        text = str(value).strip()
        try:
            values = parse_values(text, max_values=self.max_values, integer=self.integer)
            return tuple(self._check(v) for v in values)
        except ValueError as exc:
            self.fail(str(exc), param, ctx)

    # -- domain checks ---------------------------------------------------------------------
    def describe_domain(self) -> str:
        if self.lo is not None and self.hi is not None:
            left = "(" if self.lo_open else "["
            right = ")" if self.hi_open else "]"
            dom = f"in {left}{_fmt(self.lo)}, {_fmt(self.hi)}{right}"
        elif self.lo is not None:
            dom = f"{'>' if self.lo_open else '>='} {_fmt(self.lo)}"
        elif self.hi is not None:
            dom = f"{'<' if self.hi_open else '<='} {_fmt(self.hi)}"
        else:
            dom = "finite"
        return ("a whole number " if self.integer else "") + dom

    def _check(self, v: float):
        if math.isnan(v) or math.isinf(v):
            raise ValueError(f"{_fmt(v)} is not a finite number")
        bad = False
        if self.lo is not None and (v < self.lo or (self.lo_open and v == self.lo)):
            bad = True
        if self.hi is not None and (v > self.hi or (self.hi_open and v == self.hi)):
            bad = True
        if self.integer and v != math.floor(v):
            bad = True
        if bad:
            why = f" ({self.why})" if self.why and v == self.lo else ""
            raise ValueError(f"{_fmt(v)} is out of range: must be {self.describe_domain()}{why}")
        return int(v) if self.integer else v


def _fmt(v: float) -> str:
    if isinstance(v, float) and v.is_integer() and abs(v) < 1e16:
        return str(int(v))
    return repr(v) if isinstance(v, float) else str(v)


def _exact(tok: str, v: float) -> bool:
    """Whether the decimal ``tok`` is exactly the double ``v`` (``1e6`` is; ``2^53 + 1`` is not)."""
    try:
        return Decimal(tok.strip().replace("_", "")) == Decimal(v)
    except InvalidOperation:
        return False


def _number(tok: str, what: str) -> float:
    tok = tok.strip()
    if not tok:
        raise ValueError(f"empty {what}")
    try:
        return float(tok)
    except ValueError:
        raise ValueError(f"{tok!r} is not a number") from None


def parse_values(text: str, *, max_values: int = MAX_VALUES, integer: bool = False) -> list[float]:
    """Expand ``V``, ``V1,V2,...``, ``START:STOP:STEP`` or ``START:STOP:xFACTOR`` into floats.

    With ``integer=True`` a geometric range is rounded to whole numbers (duplicates dropped), so
    ``--steps 100:100000:x1.5`` works; everything else must already be whole.

    >>> parse_values("1:2:0.5")
    [1.0, 1.5, 2.0]
    >>> parse_values("1e-8:1e-4:x10")
    [1e-08, 1e-07, 1e-06, 1e-05, 0.0001]
    """
    if not text:
        raise ValueError("empty value")
    out: list[float] = []
    for part in text.split(","):
        part = part.strip()
        if not part:
            raise ValueError(f"empty item in list {text!r}")
        if ":" in part:
            out.extend(_parse_range(part, max_values, integer))
        else:
            v = _number(part, "value")
            if integer and math.isfinite(v) and v == math.floor(v) and not _exact(part, v):
                raise ValueError(
                    f"{part} cannot be represented exactly (whole numbers are exact up to 2^53 = 9007199254740992)"
                )
            out.append(v)
        if len(out) > max_values:
            raise ValueError(f"{text!r} expands to more than {max_values} values")
    return out


def _parse_range(part: str, max_values: int, integer: bool = False) -> list[float]:
    pieces = part.split(":")
    if len(pieces) != 3:
        raise ValueError(f"range {part!r} must be START:STOP:STEP or START:STOP:xFACTOR")
    start = _number(pieces[0], "range start")
    stop = _number(pieces[1], "range stop")
    step_text = pieces[2].strip()
    for v in (start, stop):
        if not math.isfinite(v):
            raise ValueError(f"range {part!r} has a non-finite end")
    if stop < start:
        raise ValueError(f"range {part!r} is descending (STOP < START)")
    if step_text[:1] in ("x", "X", "*"):
        factor = _number(step_text[1:], "range factor")
        if not factor > 1 or not math.isfinite(factor):
            raise ValueError(f"range {part!r}: the factor must be > 1")
        if start <= 0:
            raise ValueError(f"range {part!r}: a geometric range needs START > 0")
        n = int(math.floor(math.log(stop / start) / math.log(factor) * (1 + 1e-12) + 1e-9)) + 1
        if n > max_values:
            raise ValueError(f"range {part!r} expands to more than {max_values} values")
        values = [start * factor**i for i in range(n)]
        # land exactly on STOP when it lies on the grid (avoid 1e-4 printing as 0.00010000000000000002)
        if math.isclose(values[-1], stop, rel_tol=1e-9):
            values[-1] = stop
        if integer:
            rounded = [float(round(v)) for v in values]
            values = [v for i, v in enumerate(rounded) if i == 0 or v != rounded[i - 1]]
        return values
    step = _number(step_text, "range step")
    if not step > 0 or not math.isfinite(step):
        raise ValueError(f"range {part!r}: the step must be > 0")
    n = int(math.floor((stop - start) / step * (1 + 1e-12) + 1e-9)) + 1
    if n > max_values:
        raise ValueError(f"range {part!r} expands to more than {max_values} values")
    values = [start + i * step for i in range(n)]
    values = [round(v, 12) if abs(v) < 1e6 else v for v in values]
    if math.isclose(values[-1], stop, rel_tol=1e-12, abs_tol=1e-12):
        values[-1] = stop
    return values
