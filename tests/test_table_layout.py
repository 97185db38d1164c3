"""Tables and text for people (issue 39): a one-configuration table leaves out what does not apply and
says so once; notes follow the table on every command; a verdict wraps to the terminal as notes do; every
command's table fits an 80-column terminal (odometer's streamed table is not this renderer's).

The terminal tests run ``python -m dpcalc`` in a real pseudo-terminal, stdout and stderr both on it."""

import csv
import fcntl
import io
import json
import os
import pty
import re
import struct
import sys
import termios

import pytest
from rich.cells import cell_len

from dpcalc.render import render
from dpcalc.result import Result

ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
QUICK_START = "sgd-epsilon --noise-multiplier 1.1 --batch-size 256 --dataset-size 60000 --epochs 60 --delta 1e-5".split()
FAILED_AUDIT = "audit --tp 600 --fn 400 --fp 18 --tn 982 --delta 1e-5 --claimed-epsilon 1".split()


def in_terminal(args, cols=80, rows=60):
    """Run ``python -m dpcalc ARGS`` in a pseudo-terminal of ``cols`` columns: (status, text)."""
    pid, fd = pty.fork()
    if pid == 0:  # the child: its stdin/stdout/stderr are the terminal
        try:
            fcntl.ioctl(1, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))
            env = dict(os.environ, COLUMNS=str(cols), LINES=str(rows), TERM="xterm")
            env.pop("NO_COLOR", None)
            os.execvpe(sys.executable, [sys.executable, "-m", "dpcalc", *args], env)
        finally:
            os._exit(127)
    fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))
    out = b""
    while True:
        try:
            chunk = os.read(fd, 1 << 16)
        except OSError:  # EIO: the child closed the terminal
            break
        if not chunk:
            break
        out += chunk
    os.close(fd)
    _, status = os.waitpid(pid, 0)
    text = ANSI.sub("", out.decode("utf-8")).replace("\r\n", "\n")
    return os.waitstatus_to_exitcode(status), text


def _fake_terminal(cols, monkeypatch):
    monkeypatch.setenv("COLUMNS", str(cols))
    monkeypatch.setenv("NO_COLOR", "1")

    class Terminal(io.TextIOWrapper):
        def isatty(self):
            return True

    return Terminal(io.BytesIO(), encoding="utf-8", newline="\n")


def _table(result, cols, monkeypatch):
    stream = _fake_terminal(cols, monkeypatch)
    render(result, "table", stream)
    stream.flush()
    return ANSI.sub("", stream.buffer.getvalue().decode("utf-8"))


# -- a one-configuration table ------------------------------------------------------------------------
def test_the_quick_start_table_leaves_out_the_rows_that_do_not_apply():
    status, text = in_terminal(QUICK_START)
    assert status == 0, text
    assert "—" not in text, text
    for name in (
        "target_epsilon",
        "epsilon_lower",
        "epsilon_estimate",
        "delta_lower",
        "delta_estimate",
        "confidence",
        "samples",
        "group_size",
    ):
        assert name not in text, (name, text)
    for name in ("sample_rate", "noise_multiplier", "steps", "epsilon", "alpha", "valid"):
        assert re.search(rf"│ {name} +│", text), (name, text)
    assert len(re.findall(r"\d+ columns? not shown: none apply", text)) == 1, text
    assert "10 columns not shown: none apply" in text


def test_csv_and_json_keep_every_column(invoke):
    table = invoke([*QUICK_START, "-f", "table"]).stdout
    header = next(csv.reader(io.StringIO(invoke([*QUICK_START, "-f", "csv"]).stdout)))
    (obj,) = json.loads(invoke([*QUICK_START, "-f", "json"]).stdout)
    assert list(obj) == header
    assert {"target_epsilon", "epsilon_lower", "confidence", "note"} <= set(header)
    assert "target_epsilon" not in table


def test_a_one_row_table_keeps_its_headline_even_where_it_does_not_apply(monkeypatch):
    result = Result({"method": "pld", "epsilon": None, "epsilon_lower": None, "note": "does not apply: why"})
    text = _table(result, 80, monkeypatch)
    assert re.search(r"│ epsilon +│ +— │", text), text
    assert "epsilon_lower" not in text
    assert "1 column not shown: none apply" in text


def test_a_one_row_table_with_every_column_applying_says_nothing(monkeypatch):
    text = _table(Result({"method": "rdp", "epsilon": 1.5}), 80, monkeypatch)
    assert "not shown" not in text


# -- notes and verdicts -------------------------------------------------------------------------------
def _table_end(lines):
    return max(i for i, ln in enumerate(lines) if ln.startswith(("└", "+-")))


def test_audit_notes_follow_the_table_and_its_verdict_wraps():
    status, text = in_terminal(FAILED_AUDIT)
    assert status == 3, text
    lines = text.rstrip("\n").split("\n")
    end = _table_end(lines)
    notes = [i for i, ln in enumerate(lines) if ln.startswith("Note:")]
    assert notes and min(notes) > end, text
    verdict = next(i for i, ln in enumerate(lines) if ln.startswith("Error: AUDIT FAILED"))
    assert verdict > max(notes), text
    assert verdict < len(lines) - 1 and lines[verdict + 1].startswith("    "), text  # wrapped, indented
    assert max(cell_len(ln) for ln in lines) <= 80, text


def test_in_a_pipe_the_verdict_and_notes_stay_one_line_each(invoke):
    res = invoke([*FAILED_AUDIT, "-f", "csv"])
    assert res.exit_code == 3
    lines = res.stderr.strip("\n").split("\n")
    assert all(ln.startswith(("Note:", "Error: AUDIT FAILED")) for ln in lines), res.stderr
    assert sum(ln.startswith("Error:") for ln in lines) == 1


def test_a_budget_verdict_wraps_on_a_terminal():
    args = (
        "sgd-epsilon --sigma 1.1 --sample-rate 0.004,0.005 --steps 10000 --delta 1e-5 --max-epsilon 1".split()
    )
    status, text = in_terminal(args, cols=60)
    assert status == 3, text
    lines = text.rstrip("\n").split("\n")
    verdict = next(i for i, ln in enumerate(lines) if ln.startswith("Error: budget exceeded"))
    assert lines[verdict + 1].startswith("    "), text
    assert max(cell_len(ln) for ln in lines) <= 60, text


def test_langevin_notes_follow_the_table():
    args = (
        "langevin --sigma 0.02 --sensitivity 4 --lr 0.02 --strong-convexity 1 --smoothness 1 --dataset-size 5000 "
        "--steps 100 --alpha 1000 --delta 1e-5"
    ).split()
    status, text = in_terminal(args)
    assert status == 0, text
    lines = text.rstrip("\n").split("\n")
    notes = [i for i, ln in enumerate(lines) if ln.startswith("Note:")]
    assert notes and min(notes) > _table_end(lines), text


# -- every command's table fits 80 columns --------------------------------------------------------------
EVERY_COMMAND = [
    QUICK_START,
    FAILED_AUDIT,
    "sgd-epsilon --sigma 1.1 --batch-size 256 --dataset-size 60000 --epochs 60 --delta 1e-5 --sampling "
    "truncated-poisson --max-batch-size 300 --method pld",
    "sgd-epsilon --sigma 1.1 --sample-rate 0.004267 --steps 1000:14000:1000 --delta 1e-5 --method all",
    "sgd-epsilon --target-epsilon 3 --sigma 1.1 --dataset-size 60000 --epochs 60 --delta 1e-5 --method all",
    "sgd-epsilon --sigma 1.1 --sample-rate 0.01 --steps 1000 --prior 0.01,0.5 --method all",
    "sgd-epsilon --schedule docs/examples/schedule.csv --delta 1e-5 --method all",
    "convert --alpha 2,4,8 --rdp 0.5,1 --delta 1e-5,1e-8 --method all",
    "convert --from dp --alpha 10 --epsilon 1 --delta 1e-5 --method all",
    "convert --curve docs/examples/curve.csv --delta 1e-8:1e-5:x10",
    "compose laplace:scale=10,count=100 --delta 1e-10:1e-2:x10 --method all",
    "compose subsampled-gaussian:sigma=1,q=0.0064,count=3907 --delta 1e-5 --group-size 3 --method all",
    "compose gaussian:sigma=10,count=100 --fpr 1e-6,1e-3 --method all",
    "iterate --sigma 5 --lipschitz 1 --lr 0.05 --steps 100 --delta 1e-5 --method all",
    "langevin --sigma 0.02 --sensitivity 4 --lr 0.02 --strong-convexity 1 --smoothness 1 --dataset-size 5000 "
    "--steps 1,10,100,159,500,1000 --alpha 30",
    "audit --input docs/examples/audits.csv --delta 1e-5 --claimed-epsilon 0.87",
    "audit --canaries 1000 --guesses 200 --correct 190 --delta 1e-5",
    "matrix --strategy identity --strategy sqrt:bands=16 --steps 1000 --noise-multiplier 5 --delta 1e-6",
]


def test_a_caption_word_longer_than_the_terminal_breaks_after_a_separator():
    args = (
        "compose subsampled-gaussian:sigma=1,q=0.01,count=100 gaussian:sigma=4 --prior 0.1,0.5 --method all"
    )
    status, text = in_terminal(args.split(), cols=60)
    assert status == 0, text
    assert max(cell_len(ln) for ln in text.split("\n")) <= 60, text
    assert "subsampled-gaussian:q=0.01," in text  # the spec, broken after a comma


@pytest.mark.parametrize(
    "args",
    [a if isinstance(a, list) else a.split() for a in EVERY_COMMAND],
    ids=[" ".join((a if isinstance(a, list) else a.split())[:3]) for a in EVERY_COMMAND],
)
def test_every_command_fits_an_80_column_terminal(args):
    status, text = in_terminal(args, cols=80)
    assert status in (0, 3), text
    assert any(ch in text for ch in "┃│─") and "Traceback" not in text, text  # a table: boxed, or compact
    wide = [ln for ln in text.split("\n") if cell_len(ln) > 80]
    assert not wide, "\n".join(wide)
