"""Pinned heads of a privacy ledger: truncation and rollback detected (``dpcalc odometer --head``).

The chained checksums of :mod:`dpcalc.ledger.file` catch any change to a ledger except the removal of its
last entries: a truncated ledger, or an older copy restored from a cache, is itself a valid ledger
that reports less spent budget.  No file can tell that alone.  As a Certificate Transparency monitor
keeps the last signed tree head and checks that the log is consistent with it (RFC 6962 §2.1.2), a
*head* pins what was spent: the number of entries N and a SHA-256 digest of the ledger's first N
entries.  A ledger *extends* a head iff it has at least N entries and its first N entries (with its
header) hash to the head's digest; the whole file is at hand, so no proof is needed, only the hash.

Head text: ``N:HEX``, the count and the 64 lowercase hex digits of SHA-256 over the ledger's header
line and its first N entry lines, each followed by ``\\n`` (UTF-8, without a byte-order mark, LF
line ends whatever the file's: so for an LF ledger it is ``head -n N+1 FILE | sha256sum``).  The
head of 0 entries is the digest of nothing and pins nothing.  The full 256 bits are kept: rewriting a
pinned prefix means a second preimage of SHA-256, not of the 64-bit checksums of the lines.

:class:`Pins` is what a command pinned (``--expect-head``, ``--head-file``): :mod:`dpcalc.ledger.file`
checks it under the ledger's lock, before anything is written, and records the ledger's head after
the command, still under the lock.  A head file is replaced atomically (a temporary file in the same
directory, fsync'd and renamed), and only under the ledger's lock, with the head of the ledger as it
is then: the ledger only grows, so the head in the file never goes back.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import secrets
from dataclasses import dataclass

from dpcalc.errors import DpcalcError, InputError
from dpcalc.input.opening import open_error, open_fd

EMPTY = hashlib.sha256(b"").hexdigest()
_HEAD_RE = re.compile(r"(0|[1-9][0-9]{0,15}):([0-9a-f]{64})")
_MAX_HEAD_FILE = 4096


class LedgerRolledBack(DpcalcError):
    """The ledger does not extend a pinned head: truncated, rolled back, replaced or rewritten (exit 1)."""


class HeadNotWritten(DpcalcError):
    """The head file could not be replaced (after the ledger was read or appended to; exit 1)."""


@dataclass(frozen=True)
class Head:
    """``count`` entries whose SHA-256 (header line and entry lines, LF-terminated) is ``digest``."""

    count: int
    digest: str

    def __str__(self) -> str:
        return f"{self.count}:{self.digest}"


def parse_head(text: str, name: str) -> Head:
    """A head as printed by ``--head`` (``COUNT:SHA256``); :class:`InputError` naming ``name`` if not."""
    m = _HEAD_RE.fullmatch(text.strip())
    if not m:
        shown = text.strip()
        shown = shown if len(shown) <= 40 else shown[:40] + "..."
        raise InputError(
            f"{name}: not a ledger head (COUNT:SHA256 as printed by --head, 64 lowercase hex digits), "
            f"got {shown!r}"
        )
    return Head(int(m.group(1)), m.group(2))


def _entry_line(entry) -> str:
    return f"{entry.time}\t{entry.mechanism}\t{entry.checksum}\n"


def digests(ledger, counts) -> dict[int, str]:
    """The digests of the ledger's first ``count`` entries, for each of ``counts`` it has."""
    n = len(ledger.entries)
    want = {c for c in counts if 0 <= c <= n}
    out = {0: EMPTY} if 0 in want else {}
    if ledger.header is None or not want - {0}:
        return out
    h = hashlib.sha256((ledger.header.line() + "\n").encode())
    last = max(want)
    for k, entry in enumerate(ledger.entries[:last], start=1):
        h.update(_entry_line(entry).encode())
        if k in want:
            out[k] = h.hexdigest()
    return out


def head(ledger) -> Head:
    """The head of the whole ledger (its intact entries; a torn last line is not one)."""
    n = len(ledger.entries)
    return Head(n, digests(ledger, {n})[n])


def extends(ledger, pinned: Head) -> bool:
    """Whether the ledger's first ``pinned.count`` entries are those ``pinned`` pinned."""
    return digests(ledger, {pinned.count}).get(pinned.count) == pinned.digest


def read_head_file(path: str) -> Head | None:
    """The head kept in ``path`` (None if it does not exist yet); :class:`InputError` if unreadable,
    not a regular file, in a missing directory, or not a head."""
    name = f"--head-file {path}"
    fd = open_fd(path, name, os.O_RDONLY, regular=True, missing_ok=True)
    if fd is None:
        return None
    try:
        data = os.read(fd, _MAX_HEAD_FILE + 1)
    except OSError as exc:
        raise open_error(exc, path, name, "read") from None
    finally:
        os.close(fd)
    if len(data) > _MAX_HEAD_FILE:
        raise InputError(f"{name}: not a ledger head (over {_MAX_HEAD_FILE} bytes)")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise InputError(f"{name}: not a ledger head (bytes that are not UTF-8)") from None
    return parse_head(text, name)


def check_head_file(path: str) -> None:
    """Before anything is spent: the head file, if it exists, is a readable head, and its directory
    exists and is writable (:class:`InputError` naming ``--head-file PATH``), so that the head can be
    recorded after an append."""
    read_head_file(path)
    directory = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(directory):
        raise InputError(f"--head-file {path}: cannot write: no such directory")
    if not os.access(directory, os.W_OK | os.X_OK):
        raise InputError(f"--head-file {path}: cannot write: permission denied (its directory)")


def write_head_file(path: str, value: Head) -> None:
    """Replace ``path`` with ``value`` atomically (temporary file, fsync, rename, fsync of the directory)."""
    directory = os.path.dirname(os.path.abspath(path))
    tmp = os.path.join(directory, f".{os.path.basename(path)}.{os.getpid()}.{secrets.token_hex(4)}.new")
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o644)
        try:
            os.write(fd, f"{value}\n".encode())
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, path)
    except OSError as exc:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        reason = os.strerror(exc.errno).lower() if exc.errno else str(exc)
        raise HeadNotWritten(
            f"--head-file {path}: cannot write the ledger's head {value} ({reason}); "
            "the ledger itself was read or appended to as asked"
        ) from None
    try:
        dfd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(dfd)
    except OSError:
        pass  # the rename stands; some file systems cannot fsync a directory
    finally:
        os.close(dfd)


@dataclass
class Pins:
    """What a command pinned, checked under the ledger's lock; ``head`` is set, under the same lock, to
    the ledger's head after the command.

    ``expect``: a head the ledger must extend (``--expect-head``).  ``head_file``: a file holding one
    (``--head-file``; a missing file pins nothing), replaced by the new head after the command unless
    ``write`` is False (``--check``)."""

    expect: Head | None = None
    head_file: str | None = None
    write: bool = True
    head: Head | None = None

    def _pinned(self) -> list[tuple[Head, str]]:
        pinned = [(self.expect, f"--expect-head {self.expect}")] if self.expect is not None else []
        if self.head_file is not None:
            kept = read_head_file(self.head_file)
            if kept is not None:
                pinned.append((kept, f"the head in --head-file {self.head_file} ({kept})"))
        return pinned

    def check(self, ledger, path: str) -> None:
        """Raise :class:`LedgerRolledBack` unless the ledger extends every pinned head."""
        n = len(ledger.entries)
        for pinned, source in self._pinned():
            if pinned.count > n:
                torn = " (not counting its incomplete last line)" if ledger.torn is not None else ""
                raise LedgerRolledBack(
                    f"ledger {path} has {n} entries{torn}, fewer than the {pinned.count} of {source}: "
                    "it was truncated or rolled back to an older copy; the file was not changed"
                )
            if not extends(ledger, pinned):
                raise LedgerRolledBack(
                    f"ledger {path}: its first {pinned.count} entries are not those of {source}: it was "
                    "replaced, rewritten or spliced, or rolled back and added to; the file was not changed"
                )

    def check_missing(self, path: str) -> None:
        """A ledger that does not exist extends only heads of 0 entries."""
        for pinned, source in self._pinned():
            if pinned.count > 0:
                raise LedgerRolledBack(
                    f"ledger {path} does not exist, but {source} pins {pinned.count} entries: "
                    "it was deleted or moved"
                )

    def record(self, ledger) -> None:
        """Remember the ledger's head and, unless ``write`` is False, replace the head file with it."""
        self.head = head(ledger)
        if self.write and self.head_file is not None:
            write_head_file(self.head_file, self.head)
