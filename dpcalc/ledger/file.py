"""The privacy ledger: an append-only, human-readable file of spent budget shared by CI jobs.

Pure Python (no numpy): reading, checking and appending lines of the format of
:mod:`dpcalc.ledger.lines` (a header fixing δ, Λ and γ, then entries with chained checksums).  What the
entries cost is computed by the caller (``dpcalc odometer --ledger``), which passes an ``admit`` callback
to :func:`append`.

An edited, inserted, removed, duplicated or reordered line is detected by its checksums.  The removal of the
*last* entries (a truncated file, an older copy restored) leaves a valid ledger and cannot be seen
from the file alone: :mod:`dpcalc.ledger.head` pins a head (count and SHA-256 of the entries) that a
later ledger must extend, checked by :func:`read` and :func:`append` under the lock (``pins``).

Concurrency: :func:`append` opens the file with ``O_APPEND``, takes an exclusive ``flock`` on it,
reads and checks the whole file, asks ``admit``, writes the line with one ``write`` and ``fsync``s
before unlocking, so concurrent writers never interleave or lose entries.  (``flock`` is advisory
and may not work on some network file systems.)  Readers take a shared lock.  A lock held by another
process is waited for at most :data:`LOCK_TIMEOUT` seconds (30), then :class:`LedgerLocked` (exit 1).

Reading back (:mod:`dpcalc.input.text`): a UTF-8 byte-order mark at the start and CRLF line ends (a
ledger checked out by git on Windows) are accepted, and appends keep the file's line end; *mixed*
line ends are damage (a single inserted CR must not pass unseen).  The ledger must be a regular file:
a directory, a FIFO or a device is refused (:class:`~dpcalc.errors.InputError`, exit 2) without
blocking, as are a missing directory and a file that cannot be read or written.  A new ledger is
created only when its first entry is admitted, whole (header and entry) and atomically: written to a
temporary file in the same directory, fsync'd and hard-linked into place, so a refused first
``--add`` creates nothing and no reader ever sees an empty or half-written new ledger.

Damage: a last line without its newline that is the beginning of an entry is a *torn* append (a
writer killed mid-write): readers ignore it and say so (:attr:`Ledger.torn`), writers refuse until it
is removed with :func:`repair` (``dpcalc odometer --ledger FILE --repair``), which cuts exactly those
bytes off and nothing else.  Any other damage raises :class:`LedgerDamaged` naming the line, and a
file that does not begin with the ledger header is not a ledger (:class:`NotALedger`: the wrong file
was named, exit 2); either way the file is never modified.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import secrets
import stat
import time
from collections.abc import Callable, Iterator

from dpcalc.errors import DpcalcError, InputError
from dpcalc.input.opening import describe_mode, open_error, open_fd
from dpcalc.input.text import BOM
from dpcalc.ledger.head import Pins
from dpcalc.ledger.head import head as head_of
from dpcalc.ledger.lines import (  # noqa: F401  (LedgerDamaged: raised by read, append and repair)
    Entry,
    Header,
    Ledger,
    LedgerDamaged,
    NotALedger,
    Torn,
    check_header,
    check_mechanism_text,
    checksum,
    lines,
    now_utc,
    parse,
    parse_header,
)


class LedgerLocked(DpcalcError):
    """Another process held the ledger's lock for :data:`LOCK_TIMEOUT` seconds; nothing was changed (exit 1)."""


class LedgerTorn(DpcalcError):
    """An append was refused because the last line is torn; :func:`repair` removes it (exit 1)."""


# -- file access --------------------------------------------------------------------------------
def _read_fd(fd: int) -> bytes:
    chunks = []
    offset = 0
    while True:
        chunk = os.pread(fd, 1 << 20, offset)
        if not chunk:
            return b"".join(chunks)
        chunks.append(chunk)
        offset += len(chunk)


def _write_all(fd: int, payload: bytes) -> None:
    view = memoryview(payload)
    while view:
        n = os.write(fd, view)
        view = view[n:]


def _name(path: str) -> str:
    return f"--ledger {path}"


def _open(path: str, flags: int, action: str, missing_ok: bool = False) -> int | None:
    """Open the ledger (a regular file: a FIFO or a device is refused without blocking)."""
    return open_fd(path, _name(path), flags, regular=True, action=action, missing_ok=missing_ok)


#: Seconds to wait for another process's lock on the ledger before giving up (exit 1).  An append
#: holds the lock for one read, one write and one fsync (milliseconds); the wait is generous so that
#: many CI jobs appending at once queue up instead of failing.
LOCK_TIMEOUT = 30.0
_LOCK_POLL = (0.001, 0.05)  # first and longest sleep between attempts (doubling)
#: A wait longer than this is said (through :data:`on_wait`), once: what is waited for, and for how long at most.
WAIT_NOTICE_SECONDS = 1.0
#: Called with one line when a lock is waited for longer than :data:`WAIT_NOTICE_SECONDS` (the command line
#: writes it on stderr; None, a library's default: nothing is said).
on_wait: Callable[[str], None] | None = None


def _flock(fd: int, lock: int, path: str, timeout: float | None = None) -> None:
    """``flock`` with a bounded wait: non-blocking attempts with growing sleeps for ``timeout``
    seconds (default :data:`LOCK_TIMEOUT`), then :class:`LedgerLocked` naming the ledger."""
    timeout = LOCK_TIMEOUT if timeout is None else timeout
    start = time.monotonic()
    deadline = start + timeout
    pause = _LOCK_POLL[0]
    said = False
    while True:
        try:
            fcntl.flock(fd, lock | fcntl.LOCK_NB)
            return
        except BlockingIOError:
            pass
        except OSError as exc:
            if exc.errno not in (errno.EAGAIN, errno.EACCES):
                raise
        left = deadline - time.monotonic()
        if left <= 0:
            raise LedgerLocked(
                f"ledger {path}: locked by another process (waited {timeout:g} s); nothing was changed"
            )
        if not said and on_wait is not None and time.monotonic() - start >= WAIT_NOTICE_SECONDS:
            said = True
            purpose = "to write" if lock & fcntl.LOCK_EX else "to read"
            on_wait(
                f"ledger {path}: waiting for another process's lock, {purpose} (at most {timeout:g} s in all)"
            )
        time.sleep(min(pause, left))
        pause = min(2 * pause, _LOCK_POLL[1])


@contextlib.contextmanager
def _locked_fd(fd: int, lock: int, path: str) -> Iterator[int]:
    try:
        _flock(fd, lock, path)
        yield fd
    finally:
        os.close(fd)  # closing releases the lock


@contextlib.contextmanager
def _locked(path: str, flags: int, lock: int, action: str = "read") -> Iterator[int]:
    with _locked_fd(_open(path, flags, action), lock, path) as fd:
        yield fd


def exists(path: str, action: str = "read") -> bool:
    """Whether the ledger file exists.  Raises :class:`InputError` (one line naming ``--ledger PATH``)
    for a directory, a FIFO, a device, a missing directory or a dangling symbolic link."""
    try:
        mode = os.stat(path).st_mode
    except OSError as exc:
        missing = exc.errno == errno.ENOENT and os.path.isdir(os.path.dirname(path) or ".")
        if missing and not os.path.islink(path):
            return False
        raise open_error(exc, path, _name(path), action) from None
    if not stat.S_ISREG(mode):
        raise InputError(f"{_name(path)}: cannot {action}: it is {describe_mode(mode)}, not a regular file")
    return True


def read(path: str, pins: Pins | None = None) -> Ledger:
    """Read and check a ledger under a shared lock (the file must exist: :class:`InputError` if not).

    ``pins``: under the same lock, the ledger must extend the pinned heads
    (:class:`~dpcalc.ledger.head.LedgerRolledBack`, also for a missing ledger when a head pins
    entries), and its head is then recorded (:meth:`~dpcalc.ledger.head.Pins.record`)."""
    fd = _open(path, os.O_RDONLY, "read", missing_ok=True)
    if fd is None:
        if pins is not None:
            pins.check_missing(path)
        raise InputError(f"{_name(path)}: cannot read: no such file (--add creates it)")
    with _locked_fd(fd, fcntl.LOCK_SH, path):
        ledger = parse(_read_fd(fd), _name(path))
        if pins is not None:
            pins.check(ledger, path)
            pins.record(ledger)
        return ledger


def first_header(path: str) -> Header | None:
    """The header of an existing ledger, from its first line alone (None where there is no whole, valid
    first line: an empty or damaged file, reported by :func:`read` or :func:`append`).  A header never changes,
    so this is read without a lock: it says which accountant the ledger is under before its entries are."""
    fd = _open(path, os.O_RDONLY, "read", missing_ok=True)
    if fd is None:
        return None
    try:
        data = b""
        while b"\n" not in data and len(data) < (1 << 22):
            chunk = os.pread(fd, 1 << 16, len(data))
            if not chunk:
                return None
            data += chunk
    finally:
        os.close(fd)
    line = data.split(b"\n", 1)[0].removeprefix(BOM).removesuffix(b"\r")
    try:
        return parse_header(line.decode("utf-8"))
    except (UnicodeDecodeError, LedgerDamaged):
        return None


def append(
    path: str,
    mechanism: str,
    header: Header | None,
    admit: Callable[[Header, list[str]], bool] | None = None,
    *,
    expect: dict | None = None,
    time: str | None = None,
    dry_run: bool = False,
    pins: Pins | None = None,
) -> tuple[Ledger, bool]:
    """Append one event atomically; returns (the ledger as read under the lock, whether written).

    Under an exclusive lock: read and check the file (:class:`LedgerDamaged`, :class:`LedgerTorn`),
    check its header against ``expect`` and ``header`` (:func:`check_header`), call
    ``admit(header, mechanisms + [mechanism])`` (False: nothing is written), write the line with a
    single ``write`` and ``fsync``.  ``dry_run`` asks without writing.  A missing file is created
    (with ``header``) only once ``admit`` says yes, whole and atomically (see the module docstring);
    an empty file gets the header with the first entry.  A file that cannot be opened or written is
    an :class:`InputError` naming ``--ledger PATH``.

    ``pins``: checked right after the file is (before its header, before ``admit``): the ledger must
    extend every pinned head (:class:`~dpcalc.ledger.head.LedgerRolledBack`; a missing ledger
    extends only heads of 0 entries); the head after the append (or of the unchanged ledger) is
    recorded under the same lock.
    """
    mech = check_mechanism_text(mechanism)
    stamp = time or now_utc()
    flags = os.O_RDONLY if dry_run else os.O_RDWR | os.O_APPEND
    for _ in range(100):
        fd = _open(path, flags, "read" if dry_run else "write", missing_ok=True)
        if fd is None:  # a new ledger: judged first, created only if admitted
            if pins is not None:
                pins.check_missing(path)
            if header is None:
                raise InputError("--delta: needed to start a new ledger")
            empty = Ledger(None, (), None, 0)
            ok = admit is None or bool(admit(header, [mech]))
            if dry_run or not ok:
                if pins is not None:
                    pins.head = head_of(empty)  # nothing to record: no ledger, no head file
                return empty, ok
            made = _create(path, lines(header, None, stamp, mech, "\n"))
            if made is True:
                _fsync_dir(path)
                if pins is not None:  # the head file is written under the ledger's lock, as always
                    with _locked(path, os.O_RDONLY, fcntl.LOCK_SH) as rfd:
                        pins.record(parse(_read_fd(rfd), _name(path)))
                return empty, True
            if made is False:
                continue  # another writer created it meanwhile: judge again, under its lock
            fd = made  # no hard links here: the new empty file, written below like any other
        with _locked_fd(fd, fcntl.LOCK_SH if dry_run else fcntl.LOCK_EX, path):
            ledger, written = _append_locked(fd, path, mech, header, admit, expect, stamp, dry_run, pins)
        if written and not dry_run and ledger.size == 0:
            _fsync_dir(path)
        return ledger, written
    raise InputError(f"{_name(path)}: cannot create: the file keeps appearing and disappearing")


def _append_locked(fd, path, mech, header, admit, expect, stamp, dry_run, pins) -> tuple[Ledger, bool]:
    ledger = parse(_read_fd(fd), _name(path))
    if pins is not None:
        pins.check(ledger, path)
    if ledger.torn is not None:
        raise LedgerTorn(ledger.torn.message(path))
    if ledger.header is not None:
        check_header(ledger.header, expect)
        if header is not None and header.method == ledger.header.method:
            check_header(
                ledger.header,
                {"delta": header.delta, "alphas": header.alphas or None, "gamma": header.gamma}
                if header.method == "rdp"
                else {"delta": header.delta},
            )
        header = ledger.header
    elif header is None:
        raise InputError("--delta: needed to start a new ledger")
    mechanisms = ledger.mechanisms + [mech]
    if admit is not None and not admit(header, mechanisms):
        if pins is not None:
            pins.record(ledger)
        return ledger, False
    if dry_run:
        if pins is not None:
            pins.record(ledger)
        return ledger, True
    previous = ledger.entries[-1].checksum if ledger.entries else None
    new_header = header if ledger.header is None else None
    _write_all(fd, lines(new_header, previous or header.line(), stamp, mech, ledger.newline))
    os.fsync(fd)
    if pins is not None:  # the ledger as it now is, still under the lock
        summ = checksum(previous or header.line(), stamp, mech)
        entry = Entry(len(ledger.entries) + 2, stamp, mech, summ)
        pins.record(Ledger(header, ledger.entries + (entry,), None, 0, ledger.newline))
    return ledger, True


_NO_LINKS = {errno.EPERM, errno.EXDEV, errno.EMLINK, errno.ENOSYS, errno.EOPNOTSUPP, errno.ENOTSUP}


def _create(path: str, payload: bytes) -> bool | int:
    """Create the ledger ``path`` holding ``payload``, atomically: True if created; False if another
    writer created it first; where hard links are not supported, the descriptor of a new, empty
    file created exclusively (the caller locks it and writes)."""
    directory = os.path.dirname(os.path.abspath(path))
    tmp = os.path.join(directory, f".{os.path.basename(path)}.{os.getpid()}.{secrets.token_hex(4)}.new")
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o644)
    except OSError as exc:
        raise open_error(exc, path, _name(path), "create") from None
    try:
        try:
            _write_all(fd, payload)
            os.fsync(fd)
        finally:
            os.close(fd)
        try:
            os.link(tmp, path)
            return True
        except FileExistsError:
            return False
        except OSError as exc:
            if exc.errno not in _NO_LINKS:
                raise open_error(exc, path, _name(path), "create") from None
    finally:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
    try:
        return os.open(path, os.O_RDWR | os.O_APPEND | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o644)
    except FileExistsError:
        return False
    except OSError as exc:
        raise open_error(exc, path, _name(path), "create") from None


def repair(path: str) -> Torn | None:
    """Remove a torn last entry (and nothing else) under an exclusive lock; returns what was removed
    (None: the ledger has none).

    Only what can be shown to be an interrupted append is removed: the file must begin with the ledger
    header and its last line, without a line end, must be the beginning of the next entry (or, in a file
    of that one line, of the header: the first append).  A file that does not begin with the header
    (text, binary, empty) is refused (:class:`NotALedger`, exit 2), any other damage too
    (:class:`LedgerDamaged`); a refused file is left byte for byte as it was."""
    with _locked(path, os.O_RDWR, fcntl.LOCK_EX, "write") as fd:
        data = _read_fd(fd)
        if not data.removeprefix(BOM):
            raise NotALedger(
                f"{_name(path)}: nothing to repair: the file is empty (not a dpcalc ledger yet; --add starts one)"
            )
        ledger = parse(data, _name(path))
        if ledger.torn is None:
            return None
        os.ftruncate(fd, ledger.torn.offset)
        os.fsync(fd)
        return ledger.torn


def _fsync_dir(path: str) -> None:
    try:
        dfd = os.open(os.path.dirname(os.path.abspath(path)), os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(dfd)
    except OSError:
        pass
    finally:
        os.close(dfd)
