"""Writing to stdout fails cleanly: a full disk or a closed stdout is one line and status 1; a reader
that left (``| head -1``) is status 0 and no noise, in every format; an ASCII stdout gets an ASCII
table."""

import os
import shlex
import subprocess
import sys

import pytest

FORMATS = [["-f", "table"], ["-f", "csv"], ["-f", "tsv"], ["-f", "json"], ["-f", "jsonl"], ["-q"]]
SMALL = ["compose", "gaussian:sigma=2,count=10", "laplace:scale=3", "--delta", "1e-5,1e-6", "--method", "all"]
STREAM = [
    "sgd-epsilon",
    "--sigma",
    "1.1",
    "--sample-rate",
    "0.01",
    "--steps",
    "100:3000:100",
    "--delta",
    "1e-5",
]
#: more than a pipe holds (64 KiB) in every format, quickly
BIG = ["convert", "--alpha", "2:100:1", "--rdp", "0.1:1:0.1", "--delta", "1e-5", "--method", "all"]


def _shell(command, env=None):
    return subprocess.run(
        ["bash", "-c", command],
        capture_output=True,
        text=True,
        timeout=300,
        env=dict(os.environ, **(env or {})),
    )


def _dpcalc(args):
    return " ".join(shlex.quote(a) for a in [sys.executable, "-m", "dpcalc", *args])


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="no /dev/full")
@pytest.mark.parametrize("fmt", FORMATS, ids=lambda f: " ".join(f))
@pytest.mark.parametrize("args", [SMALL, STREAM], ids=["result", "stream"])
def test_a_full_disk_is_one_line_and_status_1(args, fmt):
    proc = _shell(_dpcalc([*args, *fmt]) + " > /dev/full")
    assert proc.returncode == 1
    assert proc.stderr.splitlines() == ["Error: cannot write to stdout: No space left on device"]


@pytest.mark.parametrize("fmt", FORMATS, ids=lambda f: " ".join(f))
@pytest.mark.parametrize("args", [SMALL, STREAM], ids=["result", "stream"])
def test_a_closed_stdout_is_one_line_and_status_1(args, fmt):
    proc = _shell(_dpcalc([*args, *fmt]) + " >&-")
    assert proc.returncode == 1
    lines = proc.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: cannot write to stdout:"), proc.stderr


@pytest.mark.parametrize("fmt", FORMATS, ids=lambda f: " ".join(f))
def test_a_reader_that_leaves_is_status_0_in_every_format(fmt):
    proc = _shell("set -o pipefail; " + _dpcalc([*BIG, *fmt]) + " | head -1 > /dev/null")
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == ""


def test_a_streamed_sweep_into_a_reader_that_leaves_is_status_0():
    proc = _shell("set -o pipefail; " + _dpcalc([*STREAM, "-f", "jsonl"]) + " | head -c 1 > /dev/null")
    assert proc.returncode == 0 and proc.stderr == ""


@pytest.mark.parametrize(
    "args",
    [
        SMALL,
        ["compose", "dp:epsilon=1,count=10", "--delta", "1e-5", "--method", "all"],
        ["convert", "--alpha", "10", "--rdp", "0.5", "--delta", "1e-5"],
        ["convert", "--alpha", "2,4", "--rdp", "0.5", "--delta", "1e-5", "--method", "all"],
        [*STREAM[:-2], "--delta", "1e-5"],
    ],
    ids=["compose", "basic", "convert-one", "convert-all", "sgd"],
)
def test_an_ascii_stdout_gets_an_ascii_table(args):
    proc = _shell(_dpcalc([*args, "-f", "table"]), env={"PYTHONIOENCODING": "ascii"})
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.isascii() and "+--" in proc.stdout and proc.stderr == ""
    if args[0] == "convert":
        assert "RDP -> (eps, delta)" in proc.stdout


def test_an_ascii_stdout_for_text_it_cannot_write_is_one_line(monkeypatch):
    # a CSV cell keeps its text exactly: when stdout cannot encode it, say so (one line, status 1)
    import io

    import click

    from dpcalc.cli.common import Output, emit
    from dpcalc.result import Result

    stdout = io.TextIOWrapper(io.BytesIO(), encoding="ascii")
    monkeypatch.setattr(sys, "stdout", stdout)
    result = Result({"method": ["a", "b"], "epsilon": [1.0, 2.0], "note": ["ok", "ε > 1"]})
    with pytest.raises(click.ClickException) as info:
        emit(result, Output(fmt="csv"))
    assert info.value.exit_code == 1
    assert info.value.format_message().startswith(
        "cannot write to stdout: its encoding ascii cannot write 'ε'"
    )
    emit(result, Output(fmt="table"))  # a table falls back to ASCII instead
    emit(result, Output(fmt="json"))  # JSON escapes it
