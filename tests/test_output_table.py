"""Tables for people: fit the terminal, never fold a number or a name, round to the safe side.

The terminal tests run ``python -m dpcalc`` in a real pseudo-terminal of 60, 80 and 120 columns."""

import csv
import fcntl
import io
import math
import os
import pty
import re
import struct
import subprocess
import sys
import termios

import pytest
from hypothesis import given
from hypothesis import strategies as st

from dpcalc.render import MARK_RTOL, render, table_cell, to_string
from dpcalc.result import Result

ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
BORDERS = "│┃|"

SGD = (
    "sgd-epsilon --noise-multiplier 1.1 --batch-size 256 --dataset-size 60000 --epochs 10:60:10 "
    "--delta 1e-5 --method all"
).split()
COMPOSE = "compose gaussian:sigma=2,count=10 laplace:scale=3 --delta 1e-5,1e-6 --method all".split()
CONVERT = "convert --alpha 2,4,8 --rdp 0.5,1 --delta 1e-5,1e-8 --method all".split()
DP = "compose dp:epsilon=1,count=10 --delta 1e-5 --method all".split()


def in_terminal(args, cols, rows=60):
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


def csv_rows(args):
    proc = subprocess.run(
        [sys.executable, "-m", "dpcalc", *args, "-f", "csv"], capture_output=True, text=True, timeout=300
    )
    assert proc.returncode == 0, proc.stderr
    return list(csv.DictReader(io.StringIO(proc.stdout)))


def renderings(name, text):
    """Every way the table may show the CSV value ``text`` of column ``name`` (3 to 6 digits)."""
    if text == "":
        return {"—", "-"}
    try:
        v = float(text)
    except ValueError:
        return {text}
    return {table_cell(name, v, d, marks=True) for d in (3, 4, 5, 6)}


def units(text, n_rows):
    """The table's body as one unit per result row: a line (one line per row) or a block of lines."""
    lines = text.split("\n")
    if any("quantity" in ln for ln in lines):  # one block per row: sections split by a rule
        start = next(i for i, ln in enumerate(lines) if ln.startswith(("┡", "|-", "+-"))) + 1
        blocks, current = [], []
        for ln in lines[start:]:
            if ln.startswith(("├", "└", "+-", "|-")):
                blocks.append(current)
                current = []
                if ln.startswith(("└", "+-")):
                    break
            else:
                current.append(ln)
        return [" ".join(b) for b in blocks]
    rule = next(i for i, ln in enumerate(lines) if set(ln.strip()) <= set("─━┡╇┩-+| ") and ln.strip())
    return lines[rule + 1 : rule + 1 + n_rows]


def tokens(line):
    for ch in BORDERS:
        line = line.replace(ch, " ")
    return line.split()


@pytest.mark.parametrize("cols", [60, 80, 120])
@pytest.mark.parametrize("args", [SGD, COMPOSE, CONVERT], ids=["sgd-epsilon", "compose", "convert"])
def test_a_terminal_table_fits_and_never_folds(args, cols):
    rows = csv_rows(args)
    status, text = in_terminal(args, cols)
    assert status == 0, text
    lines = text.rstrip("\n").split("\n")
    assert max(len(ln.rstrip()) for ln in lines) <= cols, text
    body = units(text, len(rows))
    assert len(body) == len(rows), text
    for unit, row in zip(body, rows):  # each row on one line (or in one block), whole
        words = tokens(unit)
        assert row["method"] in words, (row, unit)
        headline = "epsilon"
        assert renderings(headline, row[headline]) & set(words), (row[headline], unit)
        for word in words:  # every number is whole: 3 significant digits at least
            digits = re.sub(r"[^0-9]", "", word.split("e")[0].rstrip("⁺⁻")).lstrip("0")
            if re.fullmatch(r"-?\d+(\.\d+)?(e[-+]\d+)?[⁺⁻]?", word) and "." in word:
                assert len(digits) >= 3 or float(word.rstrip("⁺⁻")) in {
                    float(r[k]) for r in rows for k in r if re.fullmatch(r"-?[\d.]+(e-?\d+)?", r[k] or "x")
                }, word
    names = set(rows[0]) | {r["method"] for r in rows}
    for a, b in zip(lines, lines[1:]):  # no name split at the end of a line
        ta, tb = tokens(a), tokens(b)
        if ta and tb:
            assert ta[-1] + tb[0] not in names, (a, b)


def test_the_sgd_sweep_keeps_one_line_per_row_at_80_columns():
    status, text = in_terminal(SGD, 80)
    assert status == 0
    body = units(text, 18)
    assert all("quantity" not in ln for ln in text.split("\n"))
    assert len(body) == 18 and all(len(ln) <= 80 for ln in body)
    assert "accountant" not in text.split("\n")[1]  # it repeats method: dropped
    assert "ε = epsilon" in text and "ε est. = epsilon_estimate" in text  # the legend, in one piece


def test_a_terminal_too_narrow_for_a_row_gets_one_block_per_row():
    status, text = in_terminal(SGD, 40)
    assert status == 0 and "quantity" in text
    assert text.count("abadi-asymptotic") == 6


def test_columns_set_by_the_method_move_to_the_caption_to_keep_one_line_per_row():
    status, text = in_terminal(SGD, 60)
    assert status == 0 and "quantity" not in text
    body = units(text, 18)
    assert len(body) == 18 and all(len(ln) <= 60 for ln in body)
    assert "conversion by method: rdp = optimal, abadi-asymptotic = classic" in " ".join(text.split("\n"))
    assert "note of abadi-asymptotic: asymptotic closed form" in text


#: 16 targets by 3 accountants (the issue's 697-line table at 80 columns)
TARGETS = (
    "sgd-epsilon --target-epsilon 1:8.5:0.5 --sigma 1.1 --dataset-size 60000 --epochs 60 --delta 1e-5 "
    "--method all"
).split()


def test_a_48_row_inverse_sweep_keeps_one_line_per_row_at_80_columns():
    rows = csv_rows(TARGETS)
    assert len(rows) == 48
    status, text = in_terminal(TARGETS, 80)
    assert status == 0 and "quantity" not in text
    # the estimate of the work ("dpcalc: ...") and the progress bar ("dpcalc ━━..." frames, cleared by escape
    # codes that ANSI stripping removes) share the terminal's stderr; the table's own lines fit the width
    lines = [ln for ln in text.rstrip("\n").split("\n") if not ln.startswith("dpcalc")]
    assert len(lines) < 48 + 25 and max(len(ln) for ln in lines) <= 80, text
    for unit, row in zip(units(text, 48), rows):
        assert renderings("batch_size", row["batch_size"]) & set(tokens(unit)), (row, unit)


def test_basic_composition_shows_ten_plus_not_ten_point_0001():
    status, text = in_terminal(DP, 100)
    assert status == 0
    assert "10⁺" in text and "10.0001" not in text and "just above" in text


def _fake_terminal(cols, monkeypatch, encoding="utf-8"):
    monkeypatch.setenv("COLUMNS", str(cols))
    monkeypatch.setenv("NO_COLOR", "1")

    class Terminal(io.TextIOWrapper):
        def isatty(self):
            return True

    return Terminal(io.BytesIO(), encoding=encoding, newline="\n")


def _draw(result, stream):
    render(result, "table", stream)
    stream.flush()
    return ANSI.sub("", stream.buffer.getvalue().decode(stream.encoding))


def _wide_result():
    n = 8
    return Result(
        {
            "method": ["rdp", "pld", "abadi-asymptotic", "bassily-reference"] * 2,
            "accountant": ["rdp", "pld", "abadi", "bassily"] * 2,
            "noise_multiplier": [0.5 + i / 7 for i in range(n)],
            "sample_rate": 0.004266666666666667,
            "epsilon": [math.pi * (i + 1) for i in range(n)],
            "epsilon_lower": [math.e * (i + 1) for i in range(n)],
            "epsilon_estimate": [3.0 * (i + 1) for i in range(n)],
            "note": [
                f"note {i % 2}, with commas and words that would not fit on a narrow terminal"
                for i in range(n)
            ],
        },
        title="A title",
        caption="a caption; ε and δ",
    )


@pytest.mark.parametrize("cols", [30, 44, 60, 72, 90, 200])
def test_every_width_fits_without_folding(cols, monkeypatch):
    text = _draw(_wide_result(), _fake_terminal(cols, monkeypatch))
    assert max(len(ln) for ln in text.split("\n")) <= cols, text
    notes = " ".join(ln for ln in text.split("\n") if ln.startswith(("note of", "    ")))
    for m in ("abadi-asymptotic", "bassily-reference"):  # once per row (and maybe in a method's note)
        assert text.count(m) - notes.count(m) == 2, text
    for i in range(8):  # every ε whole, rounded up, with 3 digits at least
        v = math.pi * (i + 1)
        assert {table_cell("epsilon", v, d) for d in (3, 4, 5, 6)} & set(tokens(text)), (v, text)


def test_long_headers_are_abbreviated_with_a_legend(monkeypatch):
    text = _draw(_wide_result(), _fake_terminal(72, monkeypatch))
    header = next(ln for ln in text.split("\n") if "method" in ln)
    assert "σ" in header and "noise_multiplier" not in header
    assert "σ = noise_multiplier" in text and "q" not in header  # sample_rate is constant: caption
    assert "sample_rate = 0.00426667" in text  # a sample rate given rounds to nearest (an input)
    assert "[1] note 0, with commas" in text and "[2] note 1" in text  # long text: footnotes


def test_a_table_off_a_terminal_is_as_wide_as_it_needs():
    text = to_string(_wide_result(), "table")
    lines = text.split("\n")
    assert "note 1, with commas and words that would not fit on a narrow terminal" in text
    assert len([ln for ln in lines if "abadi-asymptotic" in ln]) == 2  # one line per row
    assert "noise_multiplier" in text and "accountant" not in text  # accountant repeats method


def test_repeating_columns_are_dropped_only_when_they_add_nothing():
    r = Result(
        {
            "method": ["rdp", "pld", "abadi-asymptotic"],
            "accountant": ["rdp", "pld", "abadi"],
            "conversion": ["optimal", "", "classic"],  # a function of method, but information
            "steps": [10, 20, 30],
            "steps_again": [10, 20, 30],
            "tenth": [1, 2, 3],  # one-to-one with steps, but not the same numbers
            "epsilon": [1.0, 2.0, 3.0],
        }
    )
    header = next(ln for ln in to_string(r, "table").split("\n") if "method" in ln)
    assert "accountant" not in header and "steps_again" not in header
    assert "conversion" in header and "tenth" in header and "steps" in header


def test_ascii_stream_gets_ascii_borders_and_text(monkeypatch):
    r = Result(
        {"method": ["a", "b"], "epsilon": [10.000000000000004, None]}, title="RDP → (ε, δ)", caption="ζ ≤ 1"
    )
    stream = io.TextIOWrapper(io.BytesIO(), encoding="ascii", newline="\n")
    text = _draw(r, stream)
    assert text.isascii()
    assert "RDP -> (eps, delta)" in text and "zeta <= 1" in text and "10+" in text and "+--" in text
    text = _draw(_wide_result(), _fake_terminal(60, monkeypatch, encoding="ascii"))
    assert text.isascii() and max(len(ln) for ln in text.split("\n")) <= 60
    assert "sigma = noise_multiplier" in text and "eps est. = epsilon_estimate" in text  # never broken


def test_marks_for_a_bound_just_beside_a_short_decimal():
    assert table_cell("epsilon", 10.000000000000004) == "10.0001"  # plots and -q keep plain numbers
    assert table_cell("epsilon", 10.000000000000004, marks=True) == "10⁺"
    assert table_cell("epsilon_lower", 9.999999999999998, marks=True) == "10⁻"
    assert table_cell("epsilon", 10.0, marks=True) == "10"
    assert table_cell("delta", 1e-5, marks=True) == "1e-05"  # the double nearest 1e-5 reads as 1e-05
    assert table_cell("epsilon", 10.00001, marks=True) == "10.0001"  # not within 1e-12: rounded up
    assert table_cell("alpha", 10.000000000000004, marks=True) == "10"  # not a bound: to nearest


@given(
    st.floats(min_value=1e-300, max_value=1e300, allow_nan=False, allow_infinity=False),
    st.integers(min_value=3, max_value=6),
)
def test_table_cells_are_sound(v, digits):
    up = table_cell("epsilon", v, digits, marks=True)
    down = table_cell("epsilon_lower", v, digits, marks=True)
    if up.endswith("⁺"):
        assert v * (1 - MARK_RTOL) <= float(up[:-1]) < v
    else:
        assert float(up) >= v
    if down.endswith("⁻"):
        assert v < float(down[:-1]) <= v * (1 + MARK_RTOL)
    else:
        assert float(down) <= v
    assert len(re.sub(r"[^0-9]", "", up.split("e")[0]).strip("0")) <= digits + 1


@given(st.integers(min_value=-10, max_value=10), st.integers(min_value=1, max_value=999999))
def test_near_powers_and_decimals_stay_sound(exp, mantissa):
    v = mantissa * 10.0**exp
    for w in (math.nextafter(v, math.inf), math.nextafter(v, 0), v):
        assert float(table_cell("epsilon", w).rstrip("⁺")) >= w
        assert float(table_cell("epsilon_lower", w)) <= w


def test_notes_wrap_to_the_terminal_between_words_and_stay_one_line_in_a_pipe(invoke):
    args = "audit --tp 60 --fn 940 --fp 18 --tn 982 --delta 1e-5 --columns epsilon_lower".split()
    status, text = in_terminal(args, 60)
    assert status == 0
    lines = text.rstrip("\n").split("\n")
    assert max(len(ln) for ln in lines) <= 60, text
    notes = [i for i, ln in enumerate(lines) if ln.startswith("Note: ")]
    assert len(notes) == 2 and lines[notes[0] + 1].startswith("    "), text  # continued, indented
    piped = invoke([*args, "-f", "table"]).stderr.rstrip("\n").split("\n")
    assert notes[0] > max(i for i, ln in enumerate(lines) if ln.startswith("└"))  # after the table
    joined = " ".join(ln.strip() for ln in lines[notes[1] :])
    assert joined in piped  # the same words, in one line when stderr is not a terminal


def test_a_table_of_no_rows_is_its_header():
    """A result with columns but no rows (an empty ledger's report) draws the header, not an IndexError."""
    from dpcalc.render.formats import to_string
    from dpcalc.result import Result

    text = to_string(Result({"method": [], "epsilon": []}, headline="epsilon", title="t"), "table")
    assert "method" in text and "epsilon" in text
