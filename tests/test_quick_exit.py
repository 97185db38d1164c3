"""The ``dpcalc`` program ends with os._exit once the command is done (dpcalc.__main__._leave): its output is
flushed and every atexit function runs first, the status is the command's, and it keeps the usual exit where
another non-daemon thread runs or the status is a message."""

from __future__ import annotations

import subprocess
import sys
import threading

import pytest

from dpcalc.__main__ import _leave

_SCRIPT = """
import atexit, sys
atexit.register(lambda: sys.stderr.write("atexit ran\\n"))
sys.argv = ["dpcalc", *sys.argv[1:]]
from dpcalc.__main__ import run
run()
"""


def _dpcalc(*args):
    return subprocess.run([sys.executable, "-c", _SCRIPT, *args], capture_output=True, text=True, timeout=120)


def test_output_is_whole_and_atexit_runs():
    grid = ["--sample-rate", "0.001:0.2:x1.32", "--noise-multiplier", "0.5:2.95:0.05", "--steps", "100,1000"]
    done = _dpcalc("sgd-epsilon", *grid, "--delta", "1e-5", "-f", "csv", "--conversion", "balle")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert len(lines) == 1 + 20 * 50 * 2 and lines[-1].count(",") == lines[0].count(",")
    assert done.stderr.endswith("atexit ran\n")


@pytest.mark.parametrize(
    ("args", "status"),
    [
        ("--version", 0),
        ("sgd-epsilon --sigma -1 --sample-rate 0.01 --steps 10", 2),
        ("sgd-epsilon --sigma 1 --sample-rate 0.01 --steps 1000 --delta 1e-5 --max-epsilon 0.01", 3),
    ],
)
def test_the_status_is_the_commands(args, status):
    done = _dpcalc(*args.split())
    assert done.returncode == status, done.stderr
    assert done.stderr.endswith("atexit ran\n")


def test_a_running_thread_or_a_message_keeps_the_usual_exit():
    release = threading.Event()
    worker = threading.Thread(target=release.wait)
    worker.start()
    try:
        assert _leave(SystemExit(0)) is None  # returned: the interpreter will wait for the thread
    finally:
        release.set()
        worker.join()
    assert _leave(SystemExit("a message")) is None
