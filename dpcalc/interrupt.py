"""Ctrl-C (SIGINT) ends the ``dpcalc`` program quietly with the shell's status 130, at any moment.

The program's first line (:func:`dpcalc.__main__.run`) calls :func:`install`, before click, numpy or
a command module loads, so that an interrupt while they load is not a traceback from an import.
This module therefore imports only what the interpreter has loaded before running any of dpcalc:
``os`` and ``_signal``, the C module under :mod:`signal` (importing :mod:`signal` itself loads
:mod:`enum`, long enough for a Ctrl-C to land in it).

While a command runs (:class:`raising`), Ctrl-C raises :class:`KeyboardInterrupt` as usual, so that
the command's ``finally`` blocks run (a ledger's lock, a partial output file) before the command line
turns it into status 130.  Worker processes ignore SIGINT (:func:`ignore_in_worker`): a terminal's
Ctrl-C reaches the whole process group, and the parent alone stops the pool.

A library caller's (or a test runner's) own SIGINT handler is never replaced: :class:`raising` acts
only in the program that called :func:`install`.
"""

import _signal
import os

STATUS = 130  # 128 + SIGINT, what a shell reports for a command ended by Ctrl-C


def _exit_quietly(signum, frame) -> None:  # pragma: no cover - runs in a subprocess
    os._exit(STATUS)


def install() -> None:
    """From now on, until :class:`raising` takes over, Ctrl-C exits 130 at once and silently (the
    program's start-up and shut-down: nothing is written yet, or everything already is)."""
    try:
        _signal.signal(_signal.SIGINT, _exit_quietly)
    except ValueError:  # not the main thread: signals are the main thread's business
        pass


def installed() -> bool:
    """Whether :func:`install` is in force (the ``dpcalc`` program, not a library caller)."""
    return _signal.getsignal(_signal.SIGINT) is _exit_quietly


class raising:  # noqa: N801 - used as a context manager, like contextlib's
    """Within the block Ctrl-C raises :class:`KeyboardInterrupt` (cleanup runs); after it, the quiet
    exit of :func:`install` again.  Does nothing where :func:`install` was not called."""

    def __enter__(self) -> None:
        self._active = installed()
        if self._active:
            _signal.signal(_signal.SIGINT, _signal.default_int_handler)

    def __exit__(self, *exc) -> None:
        if self._active:
            _signal.signal(_signal.SIGINT, _exit_quietly)


def ignore_in_worker() -> None:
    """A pool's initializer: the worker ignores SIGINT (the parent handles Ctrl-C and ends the
    pool), then unblocks the SIGINT that :class:`blocked` held while it was forked."""
    _signal.signal(_signal.SIGINT, _signal.SIG_IGN)
    _signal.pthread_sigmask(_signal.SIG_UNBLOCK, {_signal.SIGINT})


class blocked:  # noqa: N801 - a context manager
    """SIGINT held back (not lost) while worker processes are forked: a child forked in the block
    starts with it blocked, so it cannot be interrupted before :func:`ignore_in_worker` runs; the
    parent receives a Ctrl-C of that moment when the block ends."""

    def __enter__(self) -> None:
        self._old = _signal.pthread_sigmask(_signal.SIG_BLOCK, {_signal.SIGINT})

    def __exit__(self, *exc) -> None:
        _signal.pthread_sigmask(_signal.SIG_SETMASK, self._old)
