"""``python -m dpcalc`` (and the ``dpcalc`` script, whose entry point is :func:`run`) runs the
command line.  Ctrl-C at any moment exits 130 quietly: the handler is set before click or any
command module is imported (:mod:`dpcalc.interrupt` loads nothing the interpreter has not)."""

from dpcalc import interrupt


def run() -> None:
    interrupt.install()
    from dpcalc.cli import main  # lazy: Ctrl-C's handler is installed before click or a command loads

    main()


if __name__ == "__main__":  # pragma: no cover - exercised through a subprocess test
    run()
