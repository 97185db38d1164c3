"""Reading an RDP curve from CSV (``alpha,rdp``) — pure Python, errors name the line at fault.

The text is read by :mod:`dpcalc.input.text` (UTF-8 with or without a BOM, LF/CRLF/CR line ends,
bounded lines and fields; a file, a pipe or ``-`` for standard input)."""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Iterable

from dpcalc.errors import InputError
from dpcalc.input.opening import binary_stream
from dpcalc.input.text import csv_records, iter_lines, open_lines, read_lines


def load_curve(path: str, source: str | None = None, stdin=None) -> tuple[list[float], list[float]]:
    """:func:`read_curve` of the file ``path`` (``"-"``: standard input, or ``stdin``); a file that
    cannot be read is an :class:`InputError` naming ``source`` (default ``--curve PATH``)."""
    source = source or f"--curve {path}"
    with open_lines(path, source, stdin) as lines:
        return read_curve(lines, source)


def read_curve(
    lines: Iterable, source: str = "--curve", *, single: bool = False
) -> tuple[list[float], list[float]]:
    """Parse a CSV with a header holding ``alpha`` and ``rdp`` columns (others are ignored).

    ``lines``: text lines, or a text or byte stream (read through :func:`dpcalc.input.text.iter_lines`).
    Orders must be numbers > 1 and distinct; RDP values numbers >= 0 (``inf`` allowed: that order
    certifies nothing and is skipped).  Every error is an :class:`InputError` naming ``source`` and
    the line.

    ``single=True``: the text must hold one curve: every other column (the identifying columns of a
    ``--rdp-curve`` CSV: the configuration, the method) keeps the value of the first row, and a
    repeated order is called a second curve.
    """
    if hasattr(lines, "read"):
        lines = iter_lines(binary_stream(lines), source)
    reader = csv_records(lines, source)
    header = None
    header_line = 0
    for line_no, row in reader:
        if row and any(cell.strip() for cell in row) and not row[0].lstrip().startswith("#"):
            header = [c.strip().lower() for c in row]
            header_line = line_no
            break
    if header is None:
        raise InputError(f"{source}: empty curve (expected a CSV header 'alpha,rdp' and at least one row)")
    for col in ("alpha", "rdp"):
        if col not in header:
            raise InputError(
                f"{source} line {header_line}: missing column {col!r} (header must contain alpha,rdp)"
            )
    ia, ir = header.index("alpha"), header.index("rdp")
    alphas: list[float] = []
    rdps: list[float] = []
    seen: dict[float, int] = {}
    ids = [i for i, c in enumerate(header) if i not in (ia, ir)]
    first: tuple[int, list[str]] | None = None
    for line, row in reader:
        if not row or not any(cell.strip() for cell in row) or row[0].lstrip().startswith("#"):
            continue
        if len(row) <= max(ia, ir):
            raise InputError(f"{source} line {line}: expected {len(header)} columns, got {len(row)}")
        if single:
            values = [row[i].strip() if i < len(row) else "" for i in ids]
            if first is None:
                first = (line, values)
            for i, v, v0 in zip(ids, values, first[1]):
                if v != v0:
                    raise InputError(
                        f"{source} line {line}: several curves in one file ({header[i]}={v!r} here, "
                        f"{header[i]}={v0!r} on line {first[0]}): give one curve"
                    )
        a = _cell(row[ia], "alpha", source, line)
        z = _cell(row[ir], "rdp", source, line)
        if not (math.isfinite(a) and a > 1):
            raise InputError(
                f"{source} line {line}: alpha must be a finite number > 1, got {row[ia].strip()!r}"
            )
        if math.isnan(z) or z < 0:
            raise InputError(f"{source} line {line}: rdp must be a number >= 0, got {row[ir].strip()!r}")
        if a in seen:
            more = ": several curves in one file? give one curve" if single else ""
            raise InputError(
                f"{source} line {line}: duplicate order alpha={row[ia].strip()} (first on line {seen[a]}){more}"
            )
        seen[a] = line
        alphas.append(a)
        rdps.append(z)
    if not alphas:
        raise InputError(f"{source}: the curve has a header but no rows")
    return alphas, rdps


def _cell(text: str, column: str, source: str, line: int) -> float:
    try:
        return float(text.strip())
    except ValueError:
        raise InputError(
            f"{source} line {line}: {text.strip()!r} in column {column} is not a number"
        ) from None


def file_curve(params: dict, fail: Callable[[str], None]) -> dict:
    """The parameters of an ``rdp-curve:file=PATH[,sha256=HEX]`` spec with its file read: the orders and values
    (sorted by order; errors name ``file PATH`` and the line), the SHA-256 of its bytes (a ``sha256`` given must
    match it), and the file named by its absolute path, so that a ledger's label pins the contents
    (:mod:`dpcalc.engine.mechanisms.rdp_curve`).  ``fail(message)`` raises the spec's error."""
    path = params["file"]
    if path == "-":
        fail("file=- (standard input) is not read here: give the curve as a file")
    source = f"file {path}"
    try:
        alphas, rdps = read_curve(read_lines(path, source), source, single=True)
    except InputError as exc:
        fail(str(exc))
    order = sorted(range(len(alphas)), key=alphas.__getitem__)
    import hashlib  # lazy: only an rdp-curve spec reads a file (hashlib's OpenSSL costs ~3 ms of every start)

    with open(path, "rb") as fh:  # just read as text: a readable regular file
        digest = hashlib.sha256(fh.read()).hexdigest()
    if params.get("sha256") and params["sha256"].lower() != digest:
        fail(
            f"file {path} is not the curve recorded (its sha256 is {digest}, not {params['sha256']}): the file changed since"
        )
    return {
        **params,
        "file": os.path.abspath(path),
        "sha256": digest,
        "orders": tuple(alphas[i] for i in order),
        "values": tuple(rdps[i] for i in order),
    }
