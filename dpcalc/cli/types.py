"""click parameter types for dpcalc's value syntax (pure Python: no numpy here).

Every numeric option takes ``V``, a list ``V1,V2,...``, an arithmetic range ``START:STOP:STEP``
(STOP included when it lies on the grid) or a geometric range ``START:STOP:xFACTOR``.
A value is parsed to a tuple of floats (or ints), checked against the option's domain, and a bad
value becomes one error line naming the option (click's ``BadParameter``, exit status 2).
"""

from __future__ import annotations

import math

import click

from dpcalc.lazy import lazy_module

#: exact decimal arithmetic: only for ranges and numbers whose exactness needs it (one query types none)
decimal = lazy_module("decimal")

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
            items = parse_items(text, max_values=self.max_values, integer=self.integer)
            return tuple(self._check(v, shown) for v, shown in items)
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

    def _check(self, v: float, shown: str | None = None):
        """``v`` checked against the domain; an error quotes ``shown`` (the text as typed), else ``v``."""
        shown = shown or _fmt(v)
        if math.isnan(v) or math.isinf(v):
            raise ValueError(f"{shown} is not a finite number")
        bad = False
        if self.lo is not None and (v < self.lo or (self.lo_open and v == self.lo)):
            bad = True
        if self.hi is not None and (v > self.hi or (self.hi_open and v == self.hi)):
            bad = True
        if self.integer and v != math.floor(v):
            bad = True
        if bad:
            why = f" ({self.why})" if self.why and v == self.lo else ""
            raise ValueError(f"{shown} is out of range: must be {self.describe_domain()}{why}")
        return int(v) if self.integer else v


def _fmt(v: float) -> str:
    if isinstance(v, float) and v.is_integer() and abs(v) < 1e16:
        return str(int(v))
    return repr(v) if isinstance(v, float) else str(v)


def _exact(tok: str, v: float) -> bool:
    """Whether the decimal ``tok`` is exactly the double ``v`` (``1e6`` is; ``2^53 + 1`` is not)."""
    digits = tok.strip().replace("_", "")
    if digits.isascii() and digits.isdigit() and v < 2.0**53:
        return True  # a whole number below 2^53 is a double, and float() rounds it to itself
    try:
        return decimal.Decimal(digits) == decimal.Decimal(v)
    except decimal.InvalidOperation:
        return False


def _decimal(tok: str) -> decimal.Decimal | None:
    """The decimal number ``tok`` names exactly (``None``: not a finite decimal, e.g. ``inf``)."""
    try:
        d = decimal.Decimal(tok.strip().replace("_", ""))
    except decimal.InvalidOperation:
        return None
    return d if d.is_finite() else None


def _number(tok: str, what: str) -> float:
    """The double nearest the decimal ``tok`` (``-0`` read as 0).  A number that underflows to 0 or
    overflows to infinity is refused, quoting ``tok`` as typed: it would silently be another value."""
    tok = tok.strip()
    if not tok:
        raise ValueError(f"empty {what}")
    try:
        v = float(tok)
    except ValueError:
        raise ValueError(f"{tok!r} is not a number") from None
    if v == 0 or math.isinf(v):
        d = _decimal(tok)
        if d is not None and v == 0 and d != 0:
            raise ValueError(
                f"{tok} is too small to represent: it would be read as 0 "
                "(the smallest positive number is about 4.9e-324)"
            )
        if d is not None and math.isinf(v):
            raise ValueError(
                f"{tok} is too large to represent: it would be read as {'-' if v < 0 else ''}inf "
                "(the largest number is about 1.8e308)"
            )
    return v + 0.0  # -0.0 + 0.0 is 0.0: "-0" is 0


def parse_values(text: str, *, max_values: int = MAX_VALUES, integer: bool = False) -> list[float]:
    """Expand ``V``, ``V1,V2,...``, ``START:STOP:STEP`` or ``START:STOP:xFACTOR`` into floats.

    Every value is the double nearest the decimal number the text means: a range's points are computed
    in decimal arithmetic (``START + k·STEP``, ``START·FACTOR^k``) and only then rounded to a double, so
    each prints as its shortest decimal (``1e-05``, not ``9.999999999999999e-06``) and STOP is included
    exactly when it lies on the grid.  With ``integer=True`` a geometric range is rounded to whole
    numbers (duplicates dropped), so ``--steps 100:100000:x1.5`` works; everything else must already be
    whole.

    >>> parse_values("1:2:0.5")
    [1.0, 1.5, 2.0]
    >>> parse_values("1e-8:1e-4:x10")
    [1e-08, 1e-07, 1e-06, 1e-05, 0.0001]
    >>> parse_values("0.1:0.3:0.1")
    [0.1, 0.2, 0.3]
    """
    return [v for v, _ in parse_items(text, max_values=max_values, integer=integer)]


def parse_items(
    text: str, *, max_values: int = MAX_VALUES, integer: bool = False
) -> list[tuple[float, str | None]]:
    """:func:`parse_values` with, beside each value, the text that named it (a list item as typed;
    ``None`` for a range's point), for error messages that quote what the user typed."""
    if not text:
        raise ValueError("empty value")
    out: list[tuple[float, str | None]] = []
    for part in text.split(","):
        part = part.strip()
        if not part:
            raise ValueError(f"empty item in list {text!r}")
        if ":" in part:
            out.extend((v, None) for v in _parse_range(part, max_values, integer))
        else:
            v = _number(part, "value")
            if integer and math.isfinite(v) and v == math.floor(v) and not _exact(part, v):
                raise ValueError(
                    f"{part} cannot be represented exactly (whole numbers are exact up to 2^53 = 9007199254740992)"
                )
            out.append((v, part))
        if len(out) > max_values:
            raise ValueError(f"{text!r} expands to more than {max_values} values")
    return out


#: significant digits, beyond those typed, of the decimal arithmetic that computes a range's points (each
#: point is then rounded once to a double, which needs 17): a geometric range's powers are rounded to
#: this many; an arithmetic range's points are exact (the digits typed, plus the ~650 decimal places
#: between the largest and the smallest double, plus those of the count)
_PRECISION = 40
_EXACT_SUM = 700


def _double(d: decimal.Decimal, part: str, integer: bool) -> float:
    """The double nearest the decimal ``d`` (0, never -0); a whole ``d`` a double cannot hold exactly
    is refused for an ``integer`` option, as a typed one is."""
    v = float(d) + 0.0
    if integer and d == d.to_integral_value() and decimal.Decimal(v) != d:
        raise ValueError(
            f"range {part!r} reaches {d}, which cannot be represented exactly "
            "(whole numbers are exact up to 2^53 = 9007199254740992)"
        )
    return v


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
    # the ends as the decimals typed (a finite end parses as a decimal; the double is a fallback)
    d_start = _decimal(pieces[0]) or decimal.Decimal(start)
    d_stop = _decimal(pieces[1]) or decimal.Decimal(stop)
    typed = sum(len(p) for p in pieces)  # at least the significant digits typed
    with decimal.localcontext(decimal.Context(prec=_PRECISION + typed)) as ctx:
        if step_text[:1] in ("x", "X", "*"):
            factor = _number(step_text[1:], "range factor")
            if not factor > 1 or not math.isfinite(factor):
                raise ValueError(f"range {part!r}: the factor must be > 1")
            if start <= 0:
                raise ValueError(f"range {part!r}: a geometric range needs START > 0")
            d_factor = _decimal(step_text[1:]) or decimal.Decimal(factor)
            if (math.log(stop) - math.log(start)) / math.log(factor) > max_values + 1:
                raise ValueError(f"range {part!r} expands to more than {max_values} values")
            points = []
            point = d_start
            while point <= d_stop:  # START·FACTOR^k, exact to _PRECISION digits
                points.append(point)
                if len(points) > max_values:
                    raise ValueError(f"range {part!r} expands to more than {max_values} values")
                point *= d_factor
            if integer:
                whole = [p.to_integral_value(rounding=decimal.ROUND_HALF_EVEN) for p in points]
                points = [p for i, p in enumerate(whole) if i == 0 or p != whole[i - 1]]
            return [_double(p, part, integer) for p in points]
        step = _number(step_text, "range step")
        if not step > 0 or not math.isfinite(step):
            raise ValueError(f"range {part!r}: the step must be > 0")
        d_step = _decimal(step_text) or decimal.Decimal(step)
        ctx.prec = _EXACT_SUM + typed  # START + k·STEP exactly
        n = int(((d_stop - d_start) / d_step).to_integral_value(rounding=decimal.ROUND_FLOOR)) + 1
        while n > 1 and d_start + (n - 1) * d_step > d_stop:  # a quotient rounded up to a whole number
            n -= 1
        if n > max_values:
            raise ValueError(f"range {part!r} expands to more than {max_values} values")
        return [_double(d_start + k * d_step, part, integer) for k in range(n)]


class Refusing(click.Choice):
    """A choice that also knows the names users try and no theorem supports: each is refused with its reason
    (one line, naming the option), not with click's bare list.  Help and completion offer the choices only."""

    def __init__(self, choices, refused: dict[str, str]):
        super().__init__(choices)
        self.refused = dict(refused)

    def convert(self, value, param, ctx):
        if isinstance(value, str) and value.lower() in self.refused:
            offered = ", ".join(self.choices)
            self.fail(f"{value!r}: {self.refused[value.lower()]}; use one of {offered}", param, ctx)
        return super().convert(value, param, ctx)
