"""Exit statuses of the ``dpcalc`` command (documented in the README and man pages)."""

import enum


class ExitCode(enum.IntEnum):
    OK = 0
    ERROR = 1  # a runtime failure the input did not cause, or an uncertifiable result
    USAGE = 2  # bad usage or bad input
    BUDGET_EXCEEDED = 3  # --max-epsilon / --max-delta check failed (rows still printed)
    INTERRUPTED = 130  # Ctrl-C (128 + SIGINT, the shell's convention; dpcalc.interrupt.STATUS)
