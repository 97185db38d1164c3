"""The privacy ledger's format (:mod:`dpcalc.ledger.file` reads and appends the file): a header, then one line
per event, each with a checksum chained to the line before.  Pure functions on text and bytes; no file access.

Format (UTF-8 text, one record per line, every line ends with ``\\n``)::

    # dpcalc-ledger v1 delta=1e-06 alphas=1.25,1.5,...,32.0 gamma=paper
    2026-11-21T20:00:00Z<TAB>subsampled-gaussian:q=0.01,sigma=1,count=98<TAB>sha256:3f2a...

The header fixes δ, the orders Λ and the odometer's γ before any budget is spent (the odometer's
ladder must not depend on the data).  A ledger under another accountant (``odometer --method gdp|dp``) has a
``v2`` header naming it and fixing its odometer instead of Λ and γ::

    # dpcalc-ledger v2 delta=1e-06 method=gdp first_mu=0.23121 ratio=2.0
    # dpcalc-ledger v2 delta=1e-06 method=dp rho=0.0123 tail=0.5

(the GDP ladder's first rung and ratio; the normal mixture's ρ and the share of δ for its tail).  Its
entries are the same lines.  A v1 header (no ``method``) is the Rényi accountant's, as it always was, so
every earlier ledger reads unchanged; an earlier dpcalc refuses a v2 ledger ("format v2 is not
supported") rather than account Gaussian or (ε, δ) steps under another accountant's header.  Each entry carries a checksum chained to the previous line:
the first 16 hex digits of ``sha256(previous_checksum_or_header + "\\n" + time + "\\t" + mechanism)``,
so an edited, inserted, removed, duplicated or reordered line is detected (:func:`parse`, which raises
:class:`LedgerDamaged` naming the first bad line).  A UTF-8 byte-order mark at the start and CRLF line
ends are accepted; *mixed* line ends are damage.  A last line without its newline is a torn append
(:class:`Torn`), reported by :func:`parse`, not counted.
"""

from __future__ import annotations

import codecs
import hashlib
import math
import re
from dataclasses import dataclass
from datetime import datetime, timezone

from dpcalc.errors import DpcalcError, InputError
from dpcalc.input.text import BOM, utf8_message

MAGIC = "dpcalc-ledger"
VERSION = 1
#: The header's version for the accountants other than Rényi DP (``method=gdp|dp``, their odometers' parameters).
VERSION_METHOD = 2
GAMMAS = ("paper", "code")
#: The parameters each accountant's header fixes, in the order written (besides δ).
METHOD_PARAMS = {"gdp": ("first_mu", "ratio"), "dp": ("rho", "tail")}
MAX_MECHANISM_LENGTH = 4000
_HEADER_RE = re.compile(r"^# dpcalc-ledger v(\d+)((?: [a-z_]+=[!-~]*)*)$")
_TIME_RE = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z$")
_SUM_RE = re.compile(r"^sha256:[0-9a-f]{16}$")


class LedgerDamaged(DpcalcError):
    """The ledger file is damaged (other than a torn last line); nothing was changed (exit 1)."""


class NotALedger(LedgerDamaged, InputError):
    """The file is not a dpcalc ledger at all (it does not begin with the ledger header): the wrong file
    was named; nothing was changed (exit 2).  A :class:`LedgerDamaged` too, for callers that refuse both."""


@dataclass(frozen=True)
class Header:
    """What the ledger fixes before any budget is spent."""

    delta: float
    alphas: tuple[float, ...] = ()
    gamma: str = "paper"
    #: the accountant: ``rdp`` (orders and γ), or ``gdp``/``dp`` with their odometer's ``params``
    method: str = "rdp"
    #: gdp: ``(("first_mu", μ_1), ("ratio", r))``; dp: ``(("rho", ρ), ("tail", f))``; rdp: empty
    params: tuple[tuple[str, float], ...] = ()

    def line(self) -> str:
        if self.method != "rdp":
            fields = " ".join(f"{k}={float(v)!r}" for k, v in self.params)
            return f"# {MAGIC} v{VERSION_METHOD} delta={float(self.delta)!r} method={self.method} {fields}"
        alphas = ",".join(repr(float(a)) for a in self.alphas)
        return f"# {MAGIC} v{VERSION} delta={float(self.delta)!r} alphas={alphas} gamma={self.gamma}"

    def param(self, name: str) -> float:
        """The odometer parameter ``name`` of a gdp or dp ledger."""
        return dict(self.params)[name]


@dataclass(frozen=True)
class Entry:
    """One spent event: its line number in the file, UTC time, mechanism text and checksum."""

    line_no: int
    time: str
    mechanism: str
    checksum: str


@dataclass(frozen=True)
class Torn:
    """An incomplete last line: where the intact part of the file ends, and the stray bytes."""

    line_no: int
    offset: int
    length: int
    preview: str

    def message(self, path: str) -> str:
        if self.offset == 0:  # the first append (the header with the first entry) was cut short
            what = "the ledger's header, an incomplete append"
        else:
            what = "an incomplete append"
        return (
            f"{path}: line {self.line_no} is {what} ({self.length} bytes without a line end: a writer was "
            f"interrupted); it is not counted. Remove it with: dpcalc odometer --ledger {path} --repair"
        )


@dataclass(frozen=True)
class Ledger:
    header: Header | None
    entries: tuple[Entry, ...]
    torn: Torn | None
    size: int  # bytes of the intact part
    newline: str = "\n"  # the file's line end ("\r\n" for a ledger with CRLF line ends)

    @property
    def mechanisms(self) -> list[str]:
        return [e.mechanism for e in self.entries]


# -- checksums and lines ------------------------------------------------------------------------
def checksum(previous: str, time: str, mechanism: str) -> str:
    """``sha256:`` + 16 hex digits of ``sha256(previous + "\\n" + time + "\\t" + mechanism)``."""
    digest = hashlib.sha256(f"{previous}\n{time}\t{mechanism}".encode()).hexdigest()
    return f"sha256:{digest[:16]}"


def check_mechanism_text(text: str) -> str:
    """A mechanism as stored: stripped, non-empty, printable, one line, no tabs."""
    t = str(text).strip()
    if not t:
        raise InputError("--add: the mechanism is empty")
    if len(t) > MAX_MECHANISM_LENGTH:
        raise InputError(f"--add: the mechanism is longer than {MAX_MECHANISM_LENGTH} characters")
    if any(not ch.isprintable() for ch in t):
        raise InputError("--add: the mechanism must be one line of printable characters (no tabs)")
    return t


def now_utc() -> str:
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def parse_header(line: str, line_no: int = 1) -> Header:
    m = _HEADER_RE.fullmatch(line)
    if not m:
        raise LedgerDamaged(
            f"line {line_no}: not a dpcalc ledger header (expected '# {MAGIC} v{VERSION} ...')"
        )
    if int(m.group(1)) not in (VERSION, VERSION_METHOD):
        raise LedgerDamaged(
            f"line {line_no}: ledger format v{m.group(1)} is not supported (this dpcalc reads v1 and v2)"
        )
    fields = dict(part.split("=", 1) for part in m.group(2).split())
    if int(m.group(1)) == VERSION_METHOD:
        header = _method_header(fields, line_no)
        if header.line() != line:
            raise LedgerDamaged(f"line {line_no}: the header is not in canonical form (was it edited?)")
        return header
    try:
        delta = float(fields["delta"])
        alphas = tuple(float(a) for a in fields["alphas"].split(","))
        gamma = fields.get("gamma", "paper")
    except (KeyError, ValueError) as exc:
        raise LedgerDamaged(f"line {line_no}: the header's delta or alphas is missing or malformed") from exc
    if not (0.0 < delta < 1.0) or not alphas or any(not (1.0 < a < float("inf")) for a in alphas):
        raise LedgerDamaged(f"line {line_no}: the header's delta must lie in (0, 1) and its alphas be > 1")
    if len(set(alphas)) != len(alphas) or gamma not in GAMMAS:
        raise LedgerDamaged(f"line {line_no}: the header's alphas repeat or its gamma is unknown")
    header = Header(delta, alphas, gamma)
    if header.line() != line:
        raise LedgerDamaged(f"line {line_no}: the header is not in canonical form (was it edited?)")
    return header


def _method_header(fields: dict, line_no: int) -> Header:
    """The header of a gdp or dp ledger (v2): δ, the accountant and its odometer's parameters."""
    method = fields.get("method")
    if method not in METHOD_PARAMS:
        raise LedgerDamaged(f"line {line_no}: the header's method is missing or unknown (gdp or dp)")
    try:
        delta = float(fields["delta"])
        params = tuple((k, float(fields[k])) for k in METHOD_PARAMS[method])
    except (KeyError, ValueError) as exc:
        raise LedgerDamaged(
            f"line {line_no}: the header's delta or {', '.join(METHOD_PARAMS[method])} is missing or malformed"
        ) from exc
    if not (0.0 < delta < 1.0):
        raise LedgerDamaged(f"line {line_no}: the header's delta must lie in (0, 1)")
    values = dict(params)
    ok = all(math.isfinite(v) and v > 0 for v in values.values())
    ok = ok and (values["ratio"] > 1.0 if method == "gdp" else values["tail"] <= 1.0)
    if not ok:
        raise LedgerDamaged(f"line {line_no}: the header's odometer parameters are out of range")
    return Header(delta, method=method, params=params)


#: How every ledger begins (after an optional byte-order mark): a file that does not is not a ledger.
MAGIC_BYTES = f"# {MAGIC} v".encode()
_TIME_SHAPE = "0000-00-00T00:00:00Z"  # an entry's time: 0 stands for a digit
_SUM_PREFIX = "sha256:"
_SUM_DIGITS = 16


def _is_time_prefix(text: str) -> bool:
    return len(text) <= len(_TIME_SHAPE) and all(
        (c.isascii() and c.isdigit()) if s == "0" else c == s for c, s in zip(text, _TIME_SHAPE)
    )


def _is_checksum_prefix(text: str, newline: str) -> bool:
    if len(text) <= len(_SUM_PREFIX):
        return _SUM_PREFIX.startswith(text)
    if not text.startswith(_SUM_PREFIX):
        return False
    digits = text[len(_SUM_PREFIX) :]
    if newline == "\r\n" and len(digits) == _SUM_DIGITS + 1 and digits.endswith("\r"):
        digits = digits[:-1]  # a CRLF ledger's line cut between its CR and its LF
    return len(digits) <= _SUM_DIGITS and all(c in "0123456789abcdef" for c in digits)


def _mechanism_ok(text: str, whole: bool) -> bool:
    if len(text) > MAX_MECHANISM_LENGTH or any(not ch.isprintable() for ch in text):
        return False
    return not whole or (bool(text) and text == text.strip())


def torn_entry(tail: bytes, previous: str, newline: str = "\n") -> bool:
    """Whether ``tail`` (a last line without its line end) can be the beginning of the entry an
    append writes after the line whose checksum (or header) is ``previous``: the bytes of
    ``TIME<TAB>MECHANISM<TAB>sha256:HEX`` cut anywhere (inside a UTF-8 character too), and if the
    checksum is whole, the right one.  Only such a line is an interrupted append."""
    decoder = codecs.getincrementaldecoder("utf-8")()
    try:
        text = decoder.decode(tail, final=False)  # an incomplete last character is held back: a cut
    except UnicodeDecodeError:
        return False
    parts = text.split("\t")
    if len(parts) == 1:
        return _is_time_prefix(parts[0]) and not decoder.getstate()[0]
    if len(parts) > 3 or not _TIME_RE.match(parts[0]):
        return False
    if len(parts) == 2:
        return _mechanism_ok(parts[1], whole=False)
    time, mech, summ = parts
    if decoder.getstate()[0] or not _mechanism_ok(mech, whole=True) or not _is_checksum_prefix(summ, newline):
        return False
    whole = summ.rstrip("\r")
    return len(whole) < len(_SUM_PREFIX) + _SUM_DIGITS or checksum(previous, time, mech) == whole


def torn_header(data: bytes) -> bool:
    """Whether ``data`` (a whole file without a line end) can be the beginning of a new ledger's first
    append: the ledger's magic, then the rest of a header line (printable ASCII)."""
    if not data.startswith(MAGIC_BYTES):
        return False
    rest = data[len(MAGIC_BYTES) :]
    return all(0x20 <= b < 0x7F for b in rest)


def not_a_ledger(data: bytes, name: str) -> NotALedger:
    """The refusal of a file that does not begin with the ledger header (``data``: its bytes)."""
    shown = data[:24].decode("utf-8", "replace")
    more = "..." if len(data) > 24 else ""
    return NotALedger(
        f"{name}: not a dpcalc ledger (line 1 is not a ledger header '# {MAGIC} v{VERSION} ...'; the file "
        f"begins {shown!r}{more})"
    )


def parse(data: bytes, name: str = "the file") -> Ledger:
    """Check a whole ledger file's bytes; raises :class:`LedgerDamaged` naming the first bad line, and
    :class:`NotALedger` (naming ``name``) for a file that does not begin with the ledger header.

    An empty file is an empty ledger.  A last line without its line end is a torn append (:class:`Torn`)
    only where it can be one: the beginning of the next entry (or, in a file of one line, of the header);
    anything else there is damage."""
    if not data:
        return Ledger(None, (), None, 0)
    start = len(BOM) if data.startswith(BOM) else 0
    if start == len(data):  # a byte-order mark alone: empty too
        return Ledger(None, (), None, start)
    if not data.startswith(MAGIC_BYTES, start):
        raise not_a_ledger(data[start:], name)
    end = data.rfind(b"\n") + 1  # bytes up to and including the last newline
    torn = None
    if end < len(data):
        tail = data[max(end, start) :]
        preview = tail[:60].decode("utf-8", "replace")
        torn = Torn(data.count(b"\n", 0, end) + 1, end, len(data) - end, preview)
    body = data[start:end] if end > start else b""
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError as exc:
        line_no = body.count(b"\n", 0, exc.start) + 1
        raise LedgerDamaged(utf8_message(f"line {line_no}", body, exc, start)) from exc
    lines = text.split("\n")[:-1] if text else []
    if not lines:
        if not torn_header(data[start:]):
            raise LedgerDamaged("line 1: not a ledger header, and without a line end")
        return Ledger(None, (), torn, end)
    newline = "\r\n" if lines[0].endswith("\r") else "\n"
    if newline == "\r\n":
        for i, line in enumerate(lines, start=1):
            if not line.endswith("\r"):
                raise LedgerDamaged(f"line {i}: mixed line ends (LF here, CRLF on line 1)")
        lines = [line[:-1] for line in lines]
    else:
        for i, line in enumerate(lines, start=1):
            if line.endswith("\r"):
                raise LedgerDamaged(f"line {i}: mixed line ends (CRLF here, LF on line 1)")
    header = parse_header(lines[0], 1)
    previous = lines[0]
    entries = []
    for i, line in enumerate(lines[1:], start=2):
        parts = line.split("\t")
        if len(parts) != 3:
            raise LedgerDamaged(f"line {i}: expected 3 tab-separated fields (time, mechanism, checksum)")
        time, mech, summ = parts
        if not _TIME_RE.match(time) or not _SUM_RE.match(summ):
            raise LedgerDamaged(f"line {i}: malformed time or checksum field")
        if mech != mech.strip() or not mech or any(not ch.isprintable() for ch in mech):
            raise LedgerDamaged(f"line {i}: malformed mechanism field")
        if checksum(previous, time, mech) != summ:
            raise LedgerDamaged(f"line {i}: checksum mismatch (the line, or one before it, was changed)")
        entries.append(Entry(i, time, mech, summ))
        previous = summ
    if torn is not None and not torn_entry(data[end:], previous, newline):
        raise LedgerDamaged(
            f"line {torn.line_no}: not a ledger entry, and without a line end (not an interrupted append)"
        )
    return Ledger(header, tuple(entries), torn, end, newline)


def check_header(found: Header, expect: dict | None) -> None:
    """Refuse to account under another δ, Λ, γ, accountant or odometer than the ledger was started with
    (exit 2).

    ``expect`` maps ``delta``/``alphas``/``gamma``/``method``/``params`` to what the caller asked for
    (None or absent: whatever the ledger says)."""
    expect = expect or {}
    method = expect.get("method")
    if method is not None and found.method != method:
        raise InputError(f"--method: this ledger was started with --method {found.method}, got {method}")
    if found.method != "rdp":
        for option in ("alphas", "gamma"):
            if expect.get(option) is not None:
                raise InputError(
                    f"--{option}: this ledger is accounted under --method {found.method} (its first line), "
                    "which has no Rényi orders or γ"
                )
        params = expect.get("params")
        if params is not None and tuple(found.params) != tuple(params):
            fixed = " ".join(f"{k}={v!r}" for k, v in found.params)
            raise InputError(
                f"--odometer-target: this ledger's odometer was fixed by its first line ({fixed}), "
                "not by the target given"
            )
    if expect.get("delta") is not None and found.delta != float(expect["delta"]):
        raise InputError(
            f"--delta: this ledger was started with delta={found.delta!r}, got {expect['delta']!r}"
        )
    if expect.get("alphas") is not None and tuple(found.alphas) != tuple(float(a) for a in expect["alphas"]):
        raise InputError("--alphas: this ledger was started with other orders (see its first line)")
    if expect.get("gamma") is not None and found.gamma != expect["gamma"]:
        raise InputError(f"--gamma: this ledger was started with gamma={found.gamma}, got {expect['gamma']}")


def lines(header: Header | None, previous: str | None, stamp: str, mech: str, newline: str) -> bytes:
    """The bytes to append: ``header``'s line first (a new ledger), then the entry chained to ``previous``."""
    lines = []
    if header is not None:
        lines.append(header.line())
        previous = header.line()
    lines.append(f"{stamp}\t{mech}\t{checksum(previous, stamp, mech)}")
    return "".join(line + newline for line in lines).encode("utf-8")
