"""Opening what a user hands dpcalc, for :mod:`dpcalc.input.text` and the ledger: a file (or a FIFO, a device,
``/dev/fd/N``) or standard input, unbuffered, as bytes.  Pure Python.

* a missing file, a missing directory, a directory, an unreadable file: one-line
  :class:`~dpcalc.errors.InputError` (``--curve x.csv: cannot read: no such directory 'nodir'``);
* a closed standard input (``dpcalc ... - <&-``) is refused by name; a text stream is read through its bytes.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import io
import os
import stat
import sys
from collections.abc import Iterator
from typing import IO

from dpcalc.errors import InputError


# -- opening ------------------------------------------------------------------------------------
def describe_mode(mode: int) -> str:
    """What kind of file ``mode`` (``st_mode``) is, in words."""
    if stat.S_ISREG(mode):
        return "a regular file"
    if stat.S_ISDIR(mode):
        return "a directory"
    if stat.S_ISFIFO(mode):
        return "a FIFO (named pipe)"
    if stat.S_ISCHR(mode):
        return "a character device"
    if stat.S_ISBLK(mode):
        return "a block device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "not a regular file"


def open_error(exc: OSError, path: str, name: str, action: str = "read") -> InputError:
    """The one-line :class:`InputError` for an ``OSError`` raised opening or reading ``path``."""
    code = exc.errno
    if code == errno.ENOENT:
        parent = os.path.dirname(path)
        if parent and not os.path.isdir(parent):
            if os.path.lexists(parent):
                why = f"{parent!r} is not a directory"
            else:
                why = f"no such directory {parent!r}"
        elif os.path.islink(path):
            why = "it is a symbolic link to a file that does not exist"
        else:
            why = "no such file"
    elif code in (errno.EACCES, errno.EPERM):
        why = "permission denied"
    elif code == errno.EISDIR:
        why = "it is a directory"
    elif code == errno.ENOTDIR:
        why = "a part of the path is not a directory"
    elif code == errno.EROFS:
        why = "read-only file system"
    elif code == errno.ENXIO:
        why = "no such device (a socket, or a FIFO nobody reads?)"
    elif code == errno.ELOOP:
        why = "too many levels of symbolic links"
    elif code == errno.ENAMETOOLONG:
        why = "the file name is too long"
    else:
        why = (exc.strerror or str(exc)).lower()
    return InputError(f"{name}: cannot {action}: {why}")


def open_fd(
    path: str,
    name: str,
    flags: int = os.O_RDONLY,
    *,
    regular: bool = False,
    action: str = "read",
    missing_ok: bool = False,
) -> int | None:
    """``os.open`` with one-line errors; refuses a directory (and, with ``regular``, anything but a
    regular file: a FIFO or a device is refused without blocking).  ``missing_ok``: return None when
    the file (not its directory) does not exist.  The caller closes the descriptor."""
    extra = os.O_NONBLOCK if regular else 0  # opening a FIFO must not wait for a writer
    try:
        fd = os.open(path, flags | extra | getattr(os, "O_CLOEXEC", 0), 0o644)
    except OSError as exc:
        if (
            missing_ok
            and exc.errno == errno.ENOENT
            and os.path.isdir(os.path.dirname(path) or ".")
            and not os.path.islink(path)
        ):
            return None
        raise open_error(exc, path, name, action) from None
    try:
        mode = os.fstat(fd).st_mode
        if stat.S_ISDIR(mode):
            raise InputError(f"{name}: cannot {action}: it is a directory")
        if regular:
            if not stat.S_ISREG(mode):
                raise InputError(f"{name}: cannot {action}: it is {describe_mode(mode)}, not a regular file")
            fcntl.fcntl(fd, fcntl.F_SETFL, fcntl.fcntl(fd, fcntl.F_GETFL) & ~os.O_NONBLOCK)
    except BaseException:
        os.close(fd)
        raise
    return fd


def is_regular(fd: int) -> bool:
    try:
        return stat.S_ISREG(os.fstat(fd).st_mode)
    except OSError:
        return False


@contextlib.contextmanager
def open_binary(path: str, name: str) -> Iterator[IO[bytes]]:
    """A file (or FIFO, device, ``/dev/fd/N``) opened for reading, unbuffered: every ``read`` is one
    system call that returns what is available.  Errors are one-line :class:`InputError`."""
    fd = open_fd(path, name)
    with open(fd, "rb", buffering=0) as fh:
        yield fh


def stdin_stream(name: str, stdin=None) -> IO[bytes]:
    """The bytes of standard input (``stdin``: a text or byte stream standing for it; default
    ``sys.stdin``).  A closed standard input (``dpcalc ... - <&-``: Python then has no ``sys.stdin``)
    is a one-line :class:`InputError` naming the input."""
    if stdin is None:
        stdin = sys.stdin
    if stdin is None or getattr(stdin, "closed", False):
        raise InputError(f"{name}: cannot read standard input: it is closed")
    return binary_stream(stdin)


def binary_stream(stream) -> IO[bytes]:
    """The byte stream under a text stream such as ``sys.stdin`` (or the stream itself)."""
    if isinstance(stream, io.TextIOBase) or hasattr(stream, "encoding"):
        buffer = getattr(stream, "buffer", None)
        if buffer is not None:
            return buffer
        return _EncodedText(stream)
    return stream


class _EncodedText:
    """A text stream without a byte buffer (``io.StringIO``), read as UTF-8 bytes."""

    def __init__(self, stream) -> None:
        self._stream = stream

    def read(self, n: int = -1) -> bytes:
        line = self._stream.readline()
        return line.encode("utf-8", "surrogatepass")
