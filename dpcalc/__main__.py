"""``python -m dpcalc`` (and the ``dpcalc`` script, whose entry point is :func:`run`) runs the
command line.  Ctrl-C at any moment exits 130 quietly: the handler is set before click or any
command module is imported (:mod:`dpcalc.interrupt` loads nothing the interpreter has not)."""

# Before anything else loads (even dpcalc.interrupt): Ctrl-C while the modules below are imported exits 130
# silently too (only the interpreter's own C modules are used; run() then installs dpcalc.interrupt's handler).
import _signal  # noqa: I001 - first, on purpose
import os

try:
    _signal.signal(_signal.SIGINT, lambda signum, frame: os._exit(130))
except ValueError:  # pragma: no cover - not the main thread
    pass

from dpcalc import interrupt  # noqa: E402


def run() -> None:
    interrupt.install()
    # dpcalc calls no BLAS routine (numpy's FFT and ufuncs do not use it): numpy's OpenBLAS need not start a
    # thread pool at import, which costs tens of milliseconds when the other cores are busy.  A value the
    # user set is kept.
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    from dpcalc.cli import main  # lazy: Ctrl-C's handler is installed before click or a command loads

    main()


if __name__ == "__main__":  # pragma: no cover - exercised through a subprocess test
    run()
