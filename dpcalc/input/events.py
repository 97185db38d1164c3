"""EVENTS: the steps of an adaptive interaction, read row by row as they arrive.

A CSV text with a header row, one row per adaptive step (``dpcalc odometer``; see its man page):

* a ``mechanism`` column holding a mechanism spec (``gaussian:sigma=2``, ``subsampled-gaussian:
  q=0.01,sigma=1,count=98``, ``rdp-curve:file=curve.csv`` for a Rényi curve printed by
  ``--rdp-curve``, ... as in ``dpcalc compose``), or
* the columns ``sample_rate,noise_multiplier`` and optionally ``steps`` (default 1): that many steps
  of the Poisson-subsampled Gaussian (DP-SGD; add/remove neighbours).

Other columns are ignored with one warning naming them (a training log may carry its loss and
accuracy; a typo such as ``step`` for ``steps`` must not pass unseen); blank lines and lines starting
with ``#`` are skipped.  The text is read by :mod:`dpcalc.input.text` (UTF-8 with or without a BOM,
LF/CRLF/CR line ends, bounded lines and fields).  Every error is an
:class:`~dpcalc.errors.InputError` whose message names the line at fault (``EVENTS line 7: ...``).
Rows are parsed lazily, so a growing input (``tail -f train.log | dpcalc odometer -``) is processed
as it arrives.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import IO, Any

from dpcalc.errors import DpcalcWarning, InputError
from dpcalc.input import text as textinput
from dpcalc.input.opening import binary_stream
from dpcalc.input.spec import parse_mechanism
from dpcalc.input.text import csv_records, iter_lines

SGM_COLUMNS = ("sample_rate", "noise_multiplier")
MAX_STEPS = 10**12


@dataclass(frozen=True)
class Event:
    """One row: either a parsed mechanism spec or one subsampled-Gaussian setting (× ``steps``)."""

    line_no: int
    mechanism: str | None = None
    spec: Any = None  # dpcalc.input.spec.MechanismSpec for mechanism rows
    sample_rate: float | None = None
    noise_multiplier: float | None = None
    steps: int = 1
    source: str = "EVENTS"

    @property
    def key(self) -> tuple:
        """A hashable description of the event's RDP curve (for caching curves)."""
        if self.mechanism is not None:
            return ("mechanism", self.mechanism)
        return ("sgm", self.sample_rate, self.noise_multiplier, self.steps)

    def describe(self) -> str:
        if self.mechanism is not None:
            return self.mechanism
        return (
            f"subsampled-gaussian:q={self.sample_rate!r},sigma={self.noise_multiplier!r},count={self.steps}"
        )


def _where(source: str, line_no: int) -> str:
    return f"{source} line {line_no}"


def _number(text: str, name: str, where: str) -> float:
    t = text.strip()
    try:
        v = float(t)
    except ValueError:
        raise InputError(f"{where}: {name} must be a number, got {t!r}") from None
    if not math.isfinite(v):
        raise InputError(f"{where}: {name} must be finite, got {t!r}")
    return v


#: Parsed specs kept by :func:`iter_events` (a long stream repeats a few mechanisms).
SPEC_CACHE = 1024


def parse_row(
    fields: dict[str, str], mode: str, line_no: int, source: str = "EVENTS", cache: dict | None = None
) -> Event:
    """Check one data row (``fields``: column -> text) and build its :class:`Event`.

    ``cache``: specs already parsed, by text (immutable; up to :data:`SPEC_CACHE` are added)."""
    where = _where(source, line_no)
    if mode == "mechanism":
        text = fields["mechanism"].strip()
        if not text:
            raise InputError(f"{where}: the mechanism is empty")
        spec = None if cache is None else cache.get(text)
        if spec is None:
            try:
                spec = parse_mechanism(text)
            except InputError as exc:
                raise InputError(f"{where}: {exc}") from None
            if cache is not None and len(cache) < SPEC_CACHE:
                cache[text] = spec
        return Event(line_no, mechanism=text, spec=spec, source=source)
    q = _number(fields["sample_rate"], "sample_rate", where)
    if not (0.0 < q <= 1.0):
        raise InputError(f"{where}: sample_rate must lie in (0, 1], got {fields['sample_rate'].strip()!r}")
    sigma = _number(fields["noise_multiplier"], "noise_multiplier", where)
    if not sigma > 0.0:
        raise InputError(f"{where}: noise_multiplier must be > 0, got {fields['noise_multiplier'].strip()!r}")
    steps = 1
    if "steps" in fields and fields["steps"].strip():
        s = _number(fields["steps"], "steps", where)
        if s != int(s) or not (1 <= s <= MAX_STEPS):
            raise InputError(
                f"{where}: steps must be a whole number in [1, {MAX_STEPS}], got {fields['steps'].strip()!r}"
            )
        steps = int(s)
    return Event(line_no, sample_rate=q, noise_multiplier=sigma, steps=steps, source=source)


def header_mode(names: list[str], line_no: int, source: str = "EVENTS") -> str:
    """``"mechanism"`` or ``"sgm"`` from the header row's column names (checked)."""
    where = _where(source, line_no)
    if len(set(names)) != len(names):
        raise InputError(f"{where}: a column name repeats in the header {','.join(names)!r}")
    if "alpha" in names and "rdp" in names:  # `dpcalc sgd-epsilon ... --rdp-curve`: a curve is one event
        raise InputError(
            f"{where}: expected a header row with a 'mechanism' column or the columns "
            "'sample_rate,noise_multiplier[,steps]', got a Rényi curve (columns alpha,rdp: one row per order, "
            "not per step); give the curve as one event: --event rdp-curve:file=FILE (with --ledger: "
            "--add rdp-curve:file=FILE), or a 'mechanism' row rdp-curve:file=FILE"
        )
    has_mech = "mechanism" in names
    has_sgm = [c in names for c in SGM_COLUMNS]
    if has_mech and any(has_sgm):
        raise InputError(f"{where}: give either a mechanism column or sample_rate,noise_multiplier, not both")
    if has_mech:
        return "mechanism"
    if all(has_sgm):
        return "sgm"
    raise InputError(
        f"{where}: expected a header row with a 'mechanism' column or the columns "
        f"'sample_rate,noise_multiplier[,steps]', got {','.join(names)[:80]!r}"
    )


def iter_events(lines: Iterable[str], source: str = "EVENTS") -> Iterator[Event]:
    """Parse EVENTS lines lazily: one :class:`Event` per data row, in order (errors name the line).

    A column that neither mode reads gets one :class:`~dpcalc.errors.DpcalcWarning` naming it (a
    typo such as ``step`` for ``steps`` must not pass unseen) and is otherwise ignored."""
    names: list[str] | None = None
    mode = ""
    specs: dict = {}
    records = csv_records(lines, source, skipinitialspace=True, strict=True)
    for line_no, row in records:
        if not row or all(not f.strip() for f in row) or row[0].lstrip().startswith("#"):
            continue
        if any("\x00" in f for f in row):
            raise InputError(f"{_where(source, line_no)}: contains a NUL character")
        if names is None:
            names = [f.strip().lower() for f in row]
            mode = header_mode(names, line_no, source)
            _warn_unknown(names, mode, line_no, source)
            continue
        if names == ["mechanism"]:  # a one-column file: the spec's own commas need no quoting
            row = [",".join(row)]
        if len(row) != len(names):
            raise InputError(
                f"{_where(source, line_no)}: expected {len(names)} fields like the header, got {len(row)}"
            )
        yield parse_row(dict(zip(names, row)), mode, line_no, source, specs)
    if names is None:
        raise InputError(
            f"{source}: no header row (expected 'mechanism' or 'sample_rate,noise_multiplier[,steps]')"
        )


KNOWN_COLUMNS = {"mechanism": ("mechanism",), "sgm": (*SGM_COLUMNS, "steps")}


def unknown_columns(names: list[str], mode: str) -> list[str]:
    """The header's columns that ``mode`` does not read (in order)."""
    return [n for n in names if n not in KNOWN_COLUMNS[mode]]


def _warn_unknown(names: list[str], mode: str, line_no: int, source: str) -> None:
    unknown = unknown_columns(names, mode)
    if unknown:
        listed = ", ".join(repr(n) for n in unknown)
        plural = "s" if len(unknown) > 1 else ""
        warnings.warn(
            f"{_where(source, line_no)}: unknown column{plural} {listed} ignored (dpcalc reads "
            f"{','.join(KNOWN_COLUMNS[mode])})",
            DpcalcWarning,
            stacklevel=3,
        )


# -- reading a stream as it grows ---------------------------------------------------------------
def stream_lines(stream: IO, source: str = "EVENTS") -> Iterator[str]:
    """Lines of ``stream`` (bytes, or text such as ``sys.stdin``) as soon as each is complete
    (:func:`dpcalc.input.text.iter_lines`: UTF-8 with or without a BOM, any line ends, bounded)."""
    return iter_lines(binary_stream(stream), source)


def follow_lines(
    path: str, *, poll: float = 0.2, stop=None, source: str | None = None, idle=None
) -> Iterator[str]:
    """Like ``tail -f``: the lines of a growing file, waiting at its end for more (never returns
    unless ``stop()`` becomes true at the end of the file; Ctrl-C ends it).  A partial last line is
    held back until its newline arrives.  A file that shrinks is an error (it was truncated).
    ``idle()`` is called before each wait (the odometer writes the rows it holds)."""
    return textinput.follow_lines(path, source or path, poll=poll, stop=stop, idle=idle)
