"""Let freed large blocks stay in the process's heap while a command computes (glibc only).

The PLD accountant allocates and frees arrays of a few to tens of MB many times per question (an FFT
window per evaluation, the per-mechanism grids).  By default glibc hands every block above 128 kB back to
the kernel when it is freed (``mmap``/``munmap``), so the next one is faulted in page by page: measured
at 0.15–0.2 s of system time in a 0.6 s ``sgd-epsilon --target-epsilon 3 --method pld``.  Raising the
mmap threshold (to 32 MiB, glibc's upper limit) and the trim threshold (to 512 MiB) keeps those blocks for
reuse: the same peak memory, a tenth of the system time.  Done by the command line and in the pieces a dask
worker runs (:mod:`dpcalc.execution.cluster`) only (a library user's own process is left alone), and only
where glibc's ``mallopt`` exists; anything else is a silent no-op.
"""

from __future__ import annotations

import ctypes
import sys

#: glibc's ``mallopt`` parameters (malloc.h).
M_TRIM_THRESHOLD = -1
M_MMAP_THRESHOLD = -3
MMAP_THRESHOLD = 32 * 1024 * 1024
TRIM_THRESHOLD = 512 * 1024 * 1024


def keep_freed_blocks() -> bool:
    """Raise glibc's mmap and trim thresholds; ``True`` if both calls succeeded."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):  # not glibc (musl has no mallopt) or no libc handle
        return False
    mallopt.argtypes = (ctypes.c_int, ctypes.c_int)
    return bool(mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD)) and bool(mallopt(M_TRIM_THRESHOLD, TRIM_THRESHOLD))
