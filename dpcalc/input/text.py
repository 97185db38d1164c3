"""Reading the text a user hands dpcalc: EVENTS, ``--curve`` files, ledgers read back, spec files.

Pure Python, one reader for every text input, so that they all behave alike:

* the bytes are UTF-8, with or without a byte-order mark (Excel, ``pandas.to_csv(encoding="utf-8-sig")``);
  line ends may be LF, CRLF or CR (each is read as one ``\\n``);
* bytes that are not UTF-8, or a NUL byte, are an :class:`~dpcalc.errors.InputError` (exit 2) naming
  the input and the byte offset from the start of the input, e.g.
  ``--curve data.csv: byte 1234 is not UTF-8 (0xff)``;
* a missing file, a missing directory, a directory, an unreadable file: one-line ``InputError``
  (``--curve x.csv: cannot read: no such directory 'nodir'``; :mod:`dpcalc.input.opening` opens them);
* lines are at most :data:`MAX_LINE_BYTES` bytes and CSV fields at most :data:`MAX_FIELD_CHARS`
  characters, checked as the bytes arrive: ``/dev/zero`` or a runaway field fails fast;
* reading streams: a line is handed on as soon as its end arrives (one ``read`` per chunk, no
  read-ahead beyond what is available), so pipes, ``-`` (standard input), process substitution
  (``--curve <(cmd)``) and ``tail -f`` work, and :func:`follow_lines` follows a growing file.
"""

from __future__ import annotations

import contextlib
import csv
import errno
import itertools
import json
import os
import re
import time
from collections.abc import Iterable, Iterator
from typing import IO

from dpcalc.errors import InputError
from dpcalc.input.opening import open_binary, open_error, stdin_stream

MAX_LINE_BYTES = 1 << 20  # 1 MiB per line
MAX_FIELD_CHARS = 100_000  # characters per CSV field
CHUNK = 1 << 16
BOM = b"\xef\xbb\xbf"
_LINE_END = re.compile(rb"[\r\n]")


# -- lines ---------------------------------------------------------------------------------------
class LineSplitter:
    """Bytes in, lines out: decodes UTF-8, drops a leading BOM, reads CRLF and CR as ``\\n``, and
    bounds the line length, all incrementally (a line is out as soon as its end is in).

    :meth:`feed` returns the complete lines (each ending in ``\\n``); :meth:`finish`, at the end of
    the input, the last line if it has no line end ("" if none).  ``offset`` counts the bytes read."""

    def __init__(self, name: str, max_line: int = MAX_LINE_BYTES) -> None:
        self.name = name
        self.max_line = max_line
        self.offset = 0  # bytes fed so far
        self.lines = 0  # complete lines handed out
        self._buf = bytearray()
        self._start = 0  # offset of _buf[0] in the input
        self._bom_checked = False
        self._skip_lf = False  # the last line ended in CR: a LF right after it is part of that end
        self._error: InputError | None = None  # found after lines that are still to be handed out

    def check(self) -> None:
        """Raise the error found in the data fed so far (after the good lines before it were out)."""
        if self._error is not None:
            raise self._error

    def feed(self, data: bytes) -> list[str]:
        """The lines completed by ``data``; an error in it is raised by :meth:`check` (or the next
        call), so that the good lines before it still come out first."""
        self.check()
        nul = data.find(b"\x00")
        if nul >= 0:  # the lines before it still come out
            at = self.offset + nul
            data = data[:nul]
        self.offset += len(data)
        self._buf += data
        if not self._bom_checked and nul < 0:
            if len(self._buf) < len(BOM) and BOM.startswith(bytes(self._buf)):
                return []  # maybe a BOM: wait for its other bytes
        if not self._bom_checked:
            self._check_bom()
        lines = self._split()
        if nul >= 0 and self._error is None:
            self._error = InputError(
                f"{self.name}: byte {at} is a NUL byte on line {self.lines + 1} (not a text file?)"
            )
        return lines

    def finish(self) -> str:
        self.check()
        if not self._bom_checked:
            self._check_bom()
        self._split()  # nothing complete is left: feed handed it out (only a BOM's start waits)
        if not self._buf:
            return ""
        last = self._decode(bytes(self._buf), self._start)
        self._start += len(self._buf)
        self._buf.clear()
        return last

    def _check_bom(self) -> None:
        self._bom_checked = True
        if self._buf.startswith(BOM):
            del self._buf[: len(BOM)]
            self._start += len(BOM)

    def _split(self) -> list[str]:
        buf = self._buf
        out: list[str] = []
        pos = 0
        if self._skip_lf and buf[:1] == b"\n":
            pos = 1
        if buf:
            self._skip_lf = False
        bulk = self._split_bulk(pos)
        if bulk is not None:
            out, pos = bulk
        while True:
            m = _LINE_END.search(buf, pos)
            if m is None:
                break
            end = m.start()
            try:
                if end - pos > self.max_line:
                    self._too_long()
                line = self._decode(bytes(buf[pos:end]), self._start + pos)
            except InputError as exc:
                self._error = exc
                del buf[:]
                return out
            nxt = end + 1
            if buf[end] == 0x0D:  # CR: CRLF is one line end; a CR at the end of the data may be too
                if nxt < len(buf):
                    if buf[nxt] == 0x0A:
                        nxt += 1
                else:
                    self._skip_lf = True
            out.append(line + "\n")
            self.lines += 1
            pos = nxt
        del buf[:pos]
        self._start += pos
        if len(buf) > self.max_line:
            self._too_long()
        return out

    def _split_bulk(self, pos: int):
        """``(lines, next position)`` of the complete lines from ``pos`` at once (one decode, one split) where
        they are plain — LF ends only, valid UTF-8, none too long — else None: the line-by-line loop then
        finds the same lines, or the fault and its line."""
        buf = self._buf
        last = buf.rfind(b"\n", pos)
        if last < pos or buf.find(b"\r", pos, last) >= 0:
            return None
        try:
            parts = bytes(buf[pos:last]).decode("utf-8").split("\n")
        except UnicodeDecodeError:
            return None
        quarter = self.max_line // 4  # a line of at most this many characters has at most max_line bytes
        if max(map(len, parts)) > quarter and any(
            len(p.encode("utf-8")) > self.max_line for p in parts if len(p) > quarter
        ):
            return None
        self.lines += len(parts)
        return [p + "\n" for p in parts], last + 1

    def _too_long(self) -> None:
        raise InputError(
            f"{self.name} line {self.lines + 1}: the line is longer than {self.max_line} bytes "
            "(is this a text file?)"
        )

    def _decode(self, raw: bytes, offset: int) -> str:
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise InputError(utf8_message(self.name, raw, exc, offset, self.lines + 1)) from None


def utf8_message(name: str, raw: bytes, exc: UnicodeDecodeError, offset: int = 0, line: int = 0) -> str:
    """``NAME: byte N is not UTF-8 (0xff) on line L``: N counts from the start of the input (from 0)."""
    where = f" on line {line}" if line else ""
    return f"{name}: byte {offset + exc.start} is not UTF-8 (0x{raw[exc.start]:02x}){where}"


def read_error(exc: OSError, name: str) -> InputError:
    """The one-line :class:`InputError` for an ``OSError`` raised reading an open input."""
    if exc.errno == errno.EBADF:  # e.g. standard input open for writing only (`0>file`)
        why = "it is not open for reading"
    elif exc.errno == errno.EISDIR:  # `< directory`
        why = "it is a directory"
    else:
        why = (exc.strerror or str(exc)).lower()
    return InputError(f"{name}: cannot read: {why}")


def _read_chunk(read, name: str):
    """``read(CHUNK)``, its faults one-line :class:`InputError` naming ``name``."""
    try:
        return read(CHUNK)
    except OSError as exc:
        raise read_error(exc, name) from None
    except ValueError:  # a closed stream (io raises ValueError on a closed file)
        raise InputError(f"{name}: cannot read: the input is closed") from None


def iter_lines(stream: IO[bytes], name: str, *, max_line: int = MAX_LINE_BYTES) -> Iterator[str]:
    """The lines of a byte stream as they arrive (see :class:`LineSplitter`); read errors are
    one-line :class:`InputError`."""
    splitter = LineSplitter(name, max_line)
    read = getattr(stream, "read1", None) or stream.read
    while True:
        data = _read_chunk(read, name)
        if not data:
            break
        yield from splitter.feed(data)
        splitter.check()
    last = splitter.finish()
    if last:
        yield last


@contextlib.contextmanager
def open_lines(path: str, name: str, stdin=None) -> Iterator[Iterator[str]]:
    """The lines of ``path`` (``"-"``: ``stdin``, a text or byte stream), as :func:`iter_lines`."""
    if path == "-":
        yield iter_lines(stdin_stream(name, stdin), name)
        return
    with open_binary(path, name) as fh:
        yield iter_lines(fh, name)


def read_bounded(path: str, name: str, limit: int, stdin=None) -> str:
    """A whole text input (a DpEvent, a schedule) of at most ``limit`` bytes: a file, or ``"-"`` for
    standard input (``stdin``: a stream standing for it; a closed standard input is refused).  Refused
    above ``limit`` before it is read where the size is known (a file), else once ``limit`` bytes have
    arrived (a pipe).  UTF-8, a leading byte-order mark dropped; every fault one :class:`InputError`
    naming ``name``."""
    if path == "-":
        raw = _read_at_most(stdin_stream(name, stdin), name, limit)
    else:
        try:
            size = os.path.getsize(path)
        except OSError as exc:
            raise open_error(exc, path, name) from None
        if size > limit:
            raise InputError(f"{name}: {size} bytes, above the limit of {limit}")
        with open_binary(path, name) as fh:
            raw = _read_at_most(fh, name, limit)
    start = len(BOM) if raw.startswith(BOM) else 0
    try:
        return raw[start:].decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(utf8_message(name, raw[start:], exc, start)) from None


def _read_at_most(stream, name: str, limit: int) -> bytes:
    """The bytes of ``stream`` to its end; :class:`InputError` once more than ``limit`` have arrived."""
    read = getattr(stream, "read1", None) or stream.read
    chunks, total = [], 0
    while total <= limit:
        data = _read_chunk(read, name)
        if not data:
            break
        if isinstance(data, str):  # a text stream without a byte buffer (tests)
            data = data.encode("utf-8", "surrogatepass")
        chunks.append(data)
        total += len(data)
    if total > limit:
        raise InputError(f"{name}: more than {limit} bytes")
    return b"".join(chunks)


# -- JSON ----------------------------------------------------------------------------------------
#: The deepest nesting of arrays and objects a JSON input may have (unless its reader says otherwise).
MAX_JSON_DEPTH = 64
_JSON_STRING = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"', re.S)
_NOT_BRACKET = re.compile(r"[^\[\]{}]+")
_BRACKET_STEP = [0] * 256
_BRACKET_STEP[ord("[")] = _BRACKET_STEP[ord("{")] = 1
_BRACKET_STEP[ord("]")] = _BRACKET_STEP[ord("}")] = -1


def json_depth(text: str) -> int:
    """How deeply ``text``'s arrays and objects nest (brackets inside strings not counted), found
    without recursion, so that a hostile nesting cannot exhaust the interpreter's stack."""
    brackets = _NOT_BRACKET.sub("", _JSON_STRING.sub("", text))
    if not brackets:
        return 0
    return max(0, max(itertools.accumulate(map(_BRACKET_STEP.__getitem__, brackets.encode("ascii")))))


def load_json(text: str, name: str, max_depth: int = MAX_JSON_DEPTH, too_deep: str | None = None):
    """The value of a JSON text; one-line :class:`InputError` naming ``name`` if it is not JSON, or if
    it nests deeper than ``max_depth`` arrays and objects (``too_deep``: what to say then, default
    ``JSON nested deeper than N levels``), checked before it is parsed."""
    why = too_deep or f"JSON nested deeper than {max_depth} levels"
    if json_depth(text) > max_depth:
        raise InputError(f"{name}: {why}")
    try:
        return json.loads(text)
    except RecursionError:  # not reached after the check above; never a traceback all the same
        raise InputError(f"{name}: {why}") from None
    except ValueError as exc:
        raise InputError(f"{name}: not JSON ({exc})") from None


def read_lines(path: str, name: str, stdin=None) -> list[str]:
    """All lines of a text input (a spec file, a curve): :func:`open_lines`, read to its end."""
    with open_lines(path, name, stdin) as lines:
        return list(lines)


def follow_lines(
    path: str, name: str | None = None, *, poll: float = 0.2, stop=None, idle=None
) -> Iterator[str]:
    """Like ``tail -f``: the lines of a growing file, waiting at its end for more (never returns
    unless ``stop()`` becomes true at the end of the file; Ctrl-C ends it).  A partial last line is
    held back until its line end arrives.  A file that shrinks is an error (it was truncated).
    ``idle()``, if given, is called (with no argument) each time before waiting at the end."""
    name = name or path
    with open_binary(path, name) as fh:
        splitter = LineSplitter(name)
        while True:
            try:
                data = fh.read(CHUNK)
            except OSError as exc:
                raise read_error(exc, name) from None
            if data:
                yield from splitter.feed(data)
                splitter.check()
                continue
            if stop is not None and stop():
                last = splitter.finish()
                if last:
                    yield last
                return
            try:
                size = os.stat(path).st_size
            except OSError:
                size = splitter.offset
            if size < splitter.offset:
                raise InputError(f"{name}: the file was truncated while being followed")
            if idle is not None:
                idle()
            time.sleep(poll)


# -- CSV -----------------------------------------------------------------------------------------
class _LineCounter:
    """Feeds csv.reader and remembers which physical line a record started on."""

    def __init__(self, lines: Iterable[str]) -> None:
        self._it = iter(lines)
        self.count = 0
        self.first_of_record = 1
        self._in_record = False

    def __iter__(self):
        return self

    def __next__(self) -> str:
        line = next(self._it)
        self.count += 1
        if not self._in_record:
            self.first_of_record = self.count
        # a record continues while a quoted field is open (odd number of quotes so far)
        self._in_record = (line.count('"') % 2 == 1) != self._in_record
        return line


def csv_records(
    lines: Iterable[str], name: str, *, max_field: int = MAX_FIELD_CHARS, **fmtparams
) -> Iterator[tuple[int, list[str]]]:
    """``(line number of the record's first line, fields)`` for each CSV record, read lazily.

    Malformed CSV and a field longer than ``max_field`` characters are :class:`InputError` naming
    the line (``NAME line 7: ...``)."""
    counter = _LineCounter(lines)
    reader = csv.reader(counter, **fmtparams)
    while True:
        try:
            row = next(reader)
        except StopIteration:
            return
        except csv.Error as exc:
            if "field larger than field limit" in str(exc):
                raise InputError(
                    f"{name} line {counter.first_of_record}: a field is longer than {max_field} characters"
                ) from None
            raise InputError(f"{name} line {counter.count}: malformed CSV ({exc})") from None
        line_no = counter.first_of_record
        if any(len(f) > max_field for f in row):
            raise InputError(f"{name} line {line_no}: a field is longer than {max_field} characters")
        yield line_no, row
