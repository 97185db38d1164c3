"""Strategy matrices and Toeplitz coefficients read from files (docs/math.md §12.1), every fault named (the file,
the line or entry)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from dpcalc.errors import InputError

#: The most steps of a strategy given densely (n² doubles: 4096 steps are 134 MB).
MAX_DENSE_STEPS = 4096
#: The largest file read.
MAX_FILE_BYTES = 200_000_000
#: The most Toeplitz coefficients read from a file.
MAX_COEFFICIENTS = 1_000_000


def _size(path: str, what: str) -> Path:
    """The path of a regular file of at most :data:`MAX_FILE_BYTES` (a device, a pipe or a directory refused)."""
    p = Path(path)
    try:
        st = p.stat()
    except OSError as exc:
        raise InputError(f"--strategy {what} {path!r}: cannot read it ({exc.strerror})") from None
    if not p.is_file():
        raise InputError(f"--strategy {what} {path!r}: not a regular file")
    if st.st_size > MAX_FILE_BYTES:
        raise InputError(
            f"--strategy {what} {path!r}: {st.st_size} bytes, above the limit of {MAX_FILE_BYTES}"
        )
    return p


def _npy(p: Path, path: str, what: str) -> np.ndarray:
    """A ``.npy`` array of real numbers, as floats (no pickles)."""
    try:
        a = np.load(p, allow_pickle=False)
    except (ValueError, OSError) as exc:
        raise InputError(f"--strategy {what} {path!r}: not a readable .npy array ({exc})") from None
    if not np.issubdtype(a.dtype, np.number) or np.iscomplexobj(a):
        raise InputError(f"--strategy {what} {path!r}: must hold an array of real numbers")
    return a.astype(float)


def _lines(p: Path, path: str, what: str) -> list[str]:
    """The file's text lines, read whole (it is a regular file within the size limit)."""
    try:
        data = p.read_bytes()[: MAX_FILE_BYTES + 1]
    except OSError as exc:
        raise InputError(f"--strategy {what} {path!r}: cannot read it ({exc.strerror})") from None
    if len(data) > MAX_FILE_BYTES:
        raise InputError(f"--strategy {what} {path!r}: above the limit of {MAX_FILE_BYTES} bytes")
    return data.decode("utf-8", errors="replace").splitlines()


def read_coefficients(path: str) -> np.ndarray:
    """Toeplitz coefficients c_0, c_1, … from a ``.npy`` file (a 1-D array, or one row or column) or a text
    file (numbers separated by commas, semicolons, spaces or new lines): finite, at most
    :data:`MAX_COEFFICIENTS`, each fault named."""
    p = _size(path, "coefficients")
    if p.suffix == ".npy":
        c = _npy(p, path, "coefficients")
        if c.ndim == 2 and 1 in c.shape:
            c = c.reshape(-1)
        if c.ndim != 1:
            raise InputError(f"--strategy coefficients {path!r}: must hold a 1-D array of real numbers")
    else:
        values: list[float] = []
        for line_no, line in enumerate(_lines(p, path, "coefficients"), start=1):
            for word in line.replace(";", " ").replace(",", " ").split():
                try:
                    values.append(float(word))
                except ValueError:
                    raise InputError(
                        f"--strategy coefficients {path!r}, line {line_no}: {word[:40]!r} is not a number"
                    ) from None
            if len(values) > MAX_COEFFICIENTS:
                raise InputError(f"--strategy coefficients {path!r}: more than {MAX_COEFFICIENTS} values")
        c = np.array(values, dtype=float)
    if c.size == 0:
        raise InputError(f"--strategy coefficients {path!r}: empty")
    if c.size > MAX_COEFFICIENTS:
        raise InputError(f"--strategy coefficients {path!r}: more than {MAX_COEFFICIENTS} values")
    bad = np.flatnonzero(~np.isfinite(c))
    if bad.size:
        raise InputError(
            f"--strategy coefficients {path!r}: value {bad[0] + 1} is {float(c[bad[0]])!r}, not a finite number"
        )
    return c


def read_matrix(path: str) -> np.ndarray:
    """A square lower-triangular finite matrix from a CSV or ``.npy`` file, every fault named (file, entry)."""
    p = _size(path, "file")
    if p.suffix == ".npy":
        C = _npy(p, path, "file")
        if C.ndim != 2:
            raise InputError(f"--strategy file {path!r}: must hold a 2-D array of real numbers")
    else:
        rows = []
        for line_no, line in enumerate(_lines(p, path, "file"), start=1):
            if not line.strip():
                continue
            try:
                rows.append([float(x) for x in line.replace(";", ",").split(",")])
            except ValueError:
                raise InputError(
                    f"--strategy file {path!r}, line {line_no}: not numbers separated by commas"
                ) from None
            if len(rows) > MAX_DENSE_STEPS:
                raise InputError(f"--strategy file {path!r}: more than {MAX_DENSE_STEPS} rows")
        if not rows:
            raise InputError(f"--strategy file {path!r}: empty")
        widths = {len(r) for r in rows}
        if len(widths) != 1:
            bad = next(i for i, r in enumerate(rows, start=1) if len(r) != len(rows[0]))
            raise InputError(
                f"--strategy file {path!r}, row {bad}: {len(rows[bad - 1])} entries, row 1 has {len(rows[0])}"
            )
        C = np.array(rows, dtype=float)
    n, m = C.shape
    if n != m:
        raise InputError(f"--strategy file {path!r}: the matrix is {n}×{m}, not square")
    if n > MAX_DENSE_STEPS:
        raise InputError(f"--strategy file {path!r}: {n} steps, above the limit of {MAX_DENSE_STEPS}")
    bad = np.argwhere(~np.isfinite(C))
    if bad.size:
        i, j = bad[0]
        raise InputError(
            f"--strategy file {path!r}: entry ({i + 1}, {j + 1}) is {float(C[i, j])!r}, not a finite number"
        )
    upper = np.argwhere(np.triu(C, 1) != 0)
    if upper.size:
        i, j = upper[0]
        raise InputError(
            f"--strategy file {path!r}: entry ({i + 1}, {j + 1}) is {float(C[i, j])!r} above the diagonal: C must be lower "
            "triangular (step i's noise cannot depend on later steps)"
        )
    zero = np.argwhere(np.diag(C) == 0)
    if zero.size:
        raise InputError(
            f"--strategy file {path!r}: diagonal entry ({zero[0][0] + 1}, {zero[0][0] + 1}) is 0 (C invertible)"
        )
    return C
