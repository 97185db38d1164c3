"""Ctrl-C ends a command with the shell's status 130, quietly (no traceback, no "Error: aborted"):
while the modules load, while a command runs, in a worker process, and at the end."""

import os
import re
import signal
import subprocess
import sys
import time

import pytest

SWEEP = [
    sys.executable,
    "-m",
    "dpcalc",
    "sgd-epsilon",
    "--sample-rate",
    "0.001:0.2:x1.2",
    "--noise-multiplier",
    "0.5:5:0.115",
    "--steps",
    "100,300,1000,3000,10000,30000,100000,300000",
    "--delta",
    "1e-5",
    "-f",
    "csv",
]


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_ctrl_c_exits_130_quietly(jobs):
    proc = subprocess.Popen([*SWEEP, "--jobs", jobs], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    time.sleep(1.5)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 130
    assert b"Traceback" not in err and b"Error" not in err
    _says_how_far(out, err)


def _no_dpcalc_traceback(err: bytes) -> None:
    """No traceback through dpcalc's code.  A SIGINT before the interpreter ran a line of dpcalc (its
    own start-up: 'Could not import runpy module', 'init_sys_streams') is Python's, not ours."""
    if b"Traceback" in err or b"Fatal Python error" in err:
        assert b"dpcalc" not in err, err.decode(errors="replace")
    else:
        assert err.count(b"\n") <= 1, err.decode(errors="replace")  # one line at most


# A command that imports numpy/scipy and computes for about half a second: the delays cover the
# interpreter's start, the imports (click, then the command's modules), the work and the exit.
DELAYS = [i * 0.025 for i in range(25)]


@pytest.mark.parametrize("delay", DELAYS)
def test_ctrl_c_at_any_moment_is_quiet(delay):
    cmd = [sys.executable, "-m", "dpcalc", "sgd-epsilon", "--sigma", "1", "--sample-rate", "0.01"]
    cmd += ["--steps", "1000", "--delta", "1e-5", "--method", "pld", "-f", "csv"]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    time.sleep(delay)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=60)
    _no_dpcalc_traceback(err)
    if proc.returncode == 0:  # it had finished: its whole answer is out
        assert out.startswith(b"method,") and err == b""
    else:  # ended by the signal (a shell shows -SIGINT as 130 too), or Python's own start-up failed
        assert proc.returncode in (130, -signal.SIGINT) or b"dpcalc" not in err
        if proc.returncode == 130:
            assert err in (b"", b"\n")  # click ends the ^C line on a terminal


def _children(pid: int, timeout: float = 30.0) -> list[int]:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        try:
            with open(f"/proc/{pid}/task/{pid}/children") as fh:
                kids = [int(x) for x in fh.read().split()]
        except OSError:
            kids = []
        if len(kids) >= 2:
            return kids
        time.sleep(0.01)
    pytest.fail("the pool's workers did not start")


@pytest.mark.skipif(not os.path.exists("/proc/self/task"), reason="needs Linux /proc")
def test_sigint_to_a_worker_is_ignored_and_ctrl_c_of_the_group_ends_quietly():
    # a terminal's Ctrl-C goes to the whole process group: the parent and its workers
    proc = subprocess.Popen(
        [*SWEEP, "--jobs", "2"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True
    )
    try:
        kids = _children(proc.pid)
        os.kill(kids[0], signal.SIGINT)  # a worker alone: ignored (the parent owns Ctrl-C)
        time.sleep(0.5)
        assert proc.poll() is None, "the run ended on a SIGINT sent to a worker alone"
        os.kill(kids[0], 0)  # the worker is still alive
        os.killpg(proc.pid, signal.SIGINT)
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    assert proc.returncode == 130
    _says_how_far(out, err)


def _says_how_far(out: bytes, err: bytes) -> None:
    """Ctrl-C in a sweep: one line on stderr says how far it got (after click's end of the ^C line); every
    row printed is whole and within that count."""
    announced = rb"(dpcalc: 9,600 rows of [^\n]* about [^\n]*\n)?"  # with one process: above 3 s
    m = re.fullmatch(announced + rb"\n?dpcalc: interrupted after ([\d,]+) of 9,600 rows\n", err)
    assert m, err.decode(errors="replace")
    rows = out.count(b"\n") - 1 if out else 0
    assert out == b"" or out.endswith(b"\n")
    assert rows <= int(m.group(2).replace(b",", b""))
