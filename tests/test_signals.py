"""Ctrl-C ends a command with the shell's status 130, quietly (no traceback, no "Error: aborted")."""

import signal
import subprocess
import sys
import time

import pytest


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_ctrl_c_exits_130_quietly(jobs):
    cmd = [
        sys.executable,
        "-m",
        "dpcalc",
        "sgd-epsilon",
        "--sample-rate",
        "0.001:0.2:x1.06",
        "--noise-multiplier",
        "0.5:5:0.045",
        "--steps",
        "100,1000,10000",
        "--delta",
        "1e-5",
        "-f",
        "csv",
        "--jobs",
        jobs,
    ]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    time.sleep(1.5)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 130
    assert b"Traceback" not in err and b"Error" not in err
