"""``python -m dpcalc`` (and the ``dpcalc`` script, whose entry point is :func:`run`) runs the
command line.  Ctrl-C at any moment exits 130 quietly: the handler is set before click or any
command module is imported (:mod:`dpcalc.interrupt` loads nothing the interpreter has not)."""

# Before anything else loads (even dpcalc.interrupt): Ctrl-C while the modules below are imported exits 130
# silently too (only the interpreter's own C modules are used; run() then installs dpcalc.interrupt's handler).
import _signal  # noqa: I001 - first, on purpose
import atexit
import os
import sys

try:
    _signal.signal(_signal.SIGINT, lambda signum, frame: os._exit(130))
except ValueError:  # pragma: no cover - not the main thread
    pass

import threading  # noqa: E402

from dpcalc import interrupt  # noqa: E402


def run() -> None:
    interrupt.install()
    # dpcalc calls no BLAS routine (numpy's FFT and ufuncs do not use it): numpy's OpenBLAS need not start a
    # thread pool at import, which costs tens of milliseconds when the other cores are busy.  A value the
    # user set is kept.
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    from dpcalc.cli import main  # lazy: Ctrl-C's handler is installed before click or a command loads

    try:
        main()
    except SystemExit as done:
        _leave(done)
        raise


def _leave(done: SystemExit) -> None:
    """End the process at once with ``done``'s status, once the command has finished: its output flushed
    and every ``atexit`` function run (the pool's, a cluster client's, logging's, temporary files'), so
    that only the interpreter's tear-down of its modules is skipped — 25–90 ms, a sixth of a one-shot
    query.  Returns (for the usual exit) where a flush fails (the reader went away), another non-daemon
    thread still runs (the interpreter would wait for it), or a profiler or tracer watches the process
    (``python -m cProfile -m dpcalc`` writes its report after the program; coverage.py)."""
    code = done.code
    if (
        not (code is None or isinstance(code, int))
        or sys.gettrace() is not None
        or sys.getprofile() is not None
    ):
        return
    if any(t.is_alive() and not t.daemon for t in threading.enumerate() if t is not threading.main_thread()):
        return
    atexit._run_exitfuncs()  # (it empties the registry: the usual exit, if it follows, does not run them again)
    if _flushed():
        os._exit(code or 0)


def _flushed() -> bool:
    """Flush standard output and error; False where that fails (closed, gone, or replaced by nothing)."""
    try:
        for stream in (sys.stdout, sys.stderr):
            if stream is not None:
                stream.flush()
    except Exception:  # the usual exit reports it as it always has
        return False
    return True


if __name__ == "__main__":  # pragma: no cover - exercised through a subprocess test
    run()
