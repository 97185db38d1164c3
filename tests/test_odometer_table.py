"""``dpcalc odometer``'s tables fit the terminal (issue 39): an input read whole is drawn by the renderer
every command's table goes through, and rows streamed from a pipe keep aligned columns chosen to fit,
the mechanism last (a long one shifts nothing and is cut short with an ellipsis)."""

import fcntl
import os
import pty
import re
import struct
import subprocess
import sys
import termios

import pytest

ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
EVENTS = (
    "mechanism\n"
    "subsampled-gaussian:q=0.01024,sigma=1,count=98\n"
    "gaussian:sigma=3\n"
    '"subsampled-gaussian:q=0.01,sigma=1.1,count=1000,sampling=poisson"\n'
    "laplace:scale=20\n"
)


def on_terminal(args, cols, stdin=None, cwd=None):
    """Run ``dpcalc ARGS`` with its standard output and error on a terminal ``cols`` columns wide and
    ``stdin`` (bytes) on a pipe: (status, text)."""
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 50, cols, 0, 0))
    env = dict(os.environ, COLUMNS=str(cols), TERM="xterm")
    env.pop("NO_COLOR", None)
    proc = subprocess.Popen(
        [sys.executable, "-m", "dpcalc", *args],
        stdin=subprocess.PIPE if stdin is not None else subprocess.DEVNULL,
        stdout=slave,
        stderr=slave,
        env=env,
        cwd=cwd,
    )
    os.close(slave)
    if stdin is not None:
        proc.stdin.write(stdin)
        proc.stdin.close()
    out = b""
    while True:
        try:
            chunk = os.read(master, 1 << 16)
        except OSError:  # EIO: the child closed the terminal
            break
        if not chunk:
            break
        out += chunk
    os.close(master)
    status = proc.wait(timeout=120)
    return status, ANSI.sub("", out.decode("utf-8")).replace("\r\n", "\n")


def widest(text):
    return max(len(line) for line in text.split("\n"))


@pytest.mark.parametrize("cols", [50, 80, 120])
def test_streamed_rows_fit_the_terminal_and_do_not_shift(cols):
    status, text = on_terminal(["odometer", "-", "--delta", "1e-6"], cols, stdin=EVENTS.encode())
    assert status == 0, text
    assert widest(text) <= cols, text
    rows = [ln for ln in text.split("\n") if re.match(r"\s+\d+\s", ln)]
    assert len(rows) == 4, text
    header = next(ln for ln in text.split("\n") if "step" in ln)
    end = header.index("epsilon") + len("epsilon")  # the ε column ends where its header ends
    for row in rows:
        assert row[end - 1] != " " and row[end : end + 2] == "  ", (row, header)
    if cols >= 80:
        assert "gaussian:sigma=3" in text and "…" in text  # the long mechanisms are cut short


def test_streamed_rows_with_a_filter_fit_too():
    status, text = on_terminal(
        ["odometer", "-", "--delta", "1e-6", "--filter", "5"], 60, stdin=EVENTS.encode()
    )
    assert status == 0 and widest(text) <= 60, text
    assert "run" in text and "level" not in text  # the filter's rows have no odometer order or level


@pytest.mark.parametrize("cols", [50, 80])
def test_an_input_read_whole_is_drawn_by_the_renderer_to_fit(tmp_path, cols):
    (tmp_path / "events.csv").write_text(EVENTS)
    status, text = on_terminal(["odometer", "events.csv", "--delta", "1e-6"], cols, cwd=tmp_path)
    assert status == 0, text
    for line in text.split("\n"):  # wider only where one mechanism alone is wider (never folded)
        assert len(line) <= cols or (line.startswith("mech") and " " not in line.split(": ", 1)[1]), text
    assert "subsampled-gaussian:q=0.01024,sigma=1,count=98" in text  # never cut, never folded


def test_a_ledger_report_fits_and_an_empty_one_is_its_note(tmp_path):
    path = "run.ledger"  # the caption names it: a long path is one word, wider than a terminal
    for sigma in (5, 6, 7):
        add = ["odometer", "--ledger", path, "--add", f"subsampled-gaussian:q=0.01,sigma={sigma},count=100"]
        assert (
            subprocess.run(
                [sys.executable, "-m", "dpcalc", *add, "--delta", "1e-6"], capture_output=True, cwd=tmp_path
            ).returncode
            == 0
        )
    status, text = on_terminal(["odometer", "--ledger", path], 80, cwd=tmp_path)
    assert status == 0 and widest(text) <= 80, text
    open(tmp_path / "empty.ledger", "wb").close()
    status, text = on_terminal(["odometer", "--ledger", "empty.ledger"], 80, cwd=tmp_path)
    assert status == 0 and "no entries yet" in text and "internal error" not in text, text
