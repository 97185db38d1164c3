"""``python -m dpcalc`` (and the ``dpcalc`` script, whose entry point is :func:`run`) runs the
command line.  Ctrl-C at any moment exits 130 quietly: the handler is set before click or any
command module is imported (:mod:`dpcalc.interrupt` loads nothing the interpreter has not)."""

import os

from dpcalc import interrupt


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
