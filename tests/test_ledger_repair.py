"""``dpcalc odometer --ledger FILE --repair`` removes only what it can prove is an interrupted append
(issue 39): a file that is not a ledger (text, binary, empty) is refused with one line (exit 2) and left
byte for byte as it was; a report on such a file does not call it an empty ledger; no advice suggests
``truncate``."""

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from dpcalc.ledger import file as L

ROOT = Path(__file__).resolve().parents[1]
HEADER = L.Header(1e-6, (1.5, 2.0, 4.0, 8.0, 32.0), "paper")


def dpcalc(*args, **kw):
    return subprocess.run(
        [sys.executable, "-m", "dpcalc", "odometer", *args], capture_output=True, text=True, timeout=120, **kw
    )


def not_ledgers(tmp_path) -> dict[str, bytes]:
    """Files that are not ledgers: one line of text without a final newline, the first 4 KB of a binary
    (a program, as /bin/ls), text with lines, and an empty file."""
    binary = Path("/bin/ls").read_bytes()[:4096] if Path("/bin/ls").exists() else bytes(range(256)) * 16
    return {
        "notes.txt": b"hello world, my notes",
        "program.bin": binary,
        "lines.txt": b"first line\nsecond line without end",
        "empty.txt": b"",
    }


@pytest.mark.parametrize("name", ["notes.txt", "program.bin", "lines.txt", "empty.txt"])
def test_repair_refuses_a_file_that_is_not_a_ledger_and_leaves_it_as_it_was(tmp_path, name):
    data = not_ledgers(tmp_path)[name]
    path = tmp_path / name
    path.write_bytes(data)
    before = os.stat(path)
    res = dpcalc("--ledger", str(path), "--repair")
    assert res.returncode == 2, res.stderr
    assert res.stdout == ""
    lines = res.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: "), res.stderr
    assert str(path) in lines[0]
    assert ("not a dpcalc ledger" in lines[0]) or ("empty" in lines[0] and name == "empty.txt")
    assert path.read_bytes() == data  # byte for byte
    assert os.stat(path).st_size == before.st_size
    with pytest.raises(L.NotALedger):  # the library refuses too, and is an InputError (exit 2)
        L.repair(str(path))
    assert path.read_bytes() == data


@pytest.mark.parametrize("name", ["notes.txt", "program.bin", "lines.txt"])
def test_a_report_or_an_add_on_a_non_ledger_is_refused_not_an_empty_ledger(tmp_path, name):
    data = not_ledgers(tmp_path)[name]
    path = tmp_path / name
    path.write_bytes(data)
    report = dpcalc("--ledger", str(path), "-f", "csv")
    assert report.returncode == 2 and report.stdout == ""
    assert "no entries" not in report.stderr and "incomplete" not in report.stderr
    assert report.stderr.count("\n") == 1 and "not a dpcalc ledger" in report.stderr
    add = dpcalc("--ledger", str(path), "--add", "gaussian:sigma=5", "--delta", "1e-6")
    assert add.returncode == 2 and "not a dpcalc ledger" in add.stderr and add.stderr.count("\n") == 1
    assert path.read_bytes() == data


def test_an_empty_file_reports_as_an_empty_ledger_and_takes_its_first_entry(tmp_path):
    path = tmp_path / "empty.ledger"
    path.write_bytes(b"")
    report = dpcalc("--ledger", str(path), "-f", "csv")
    assert report.returncode == 0 and "no entries yet" in report.stderr
    assert dpcalc("--ledger", str(path), "--add", "gaussian:sigma=5", "--delta", "1e-6").returncode == 0
    assert L.read(str(path)).mechanisms == ["gaussian:sigma=5"]


def _ledger(tmp_path, n=3, newline="\n") -> Path:
    path = tmp_path / "budget.ledger"
    for i in range(n):
        L.append(str(path), f"gaussian:sigma={10 + i}", HEADER, time=f"2026-11-21T20:00:0{i}Z")
    if newline != "\n":
        path.write_bytes(path.read_bytes().replace(b"\n", newline.encode()))
    return path


@pytest.mark.parametrize("newline", ["\n", "\r\n"])
@pytest.mark.parametrize(
    "cut",
    [
        b"2",  # the first byte of the next entry
        b"2026-11-21T20:00:09",
        b"2026-11-21T20:00:09Z\t",
        b"2026-11-21T20:00:09Z\tgaussian:sig",
        "2026-11-21T20:00:09Z\tgaussian:sigma=1,note=\u03c3".encode()[:-1],  # inside a UTF-8 character
        b"2026-11-21T20:00:09Z\tgaussian:sigma=3\tsha2",
        b"2026-11-21T20:00:09Z\tgaussian:sigma=3\tsha256:0123456789",
    ],
)
def test_repair_removes_the_torn_entry_and_nothing_else(tmp_path, cut, newline):
    path = _ledger(tmp_path, newline=newline)
    intact = path.read_bytes()
    path.write_bytes(intact + cut)
    report = dpcalc("--ledger", str(path), "-f", "csv")
    assert report.returncode == 0 and report.stdout.count("\n") == 4  # the header and 3 entries
    assert "incomplete append" in report.stderr and "--repair" in report.stderr
    res = dpcalc("--ledger", str(path), "--repair")
    assert res.returncode == 0, res.stderr
    assert res.stderr.startswith("Note: ") and "removed the incomplete line 5" in res.stderr
    assert path.read_bytes() == intact  # exactly the torn bytes went
    again = dpcalc("--ledger", str(path), "--repair")
    assert again.returncode == 0 and "nothing to repair" in again.stderr
    assert path.read_bytes() == intact


def test_a_whole_last_entry_without_its_line_end_is_removed_only_if_its_checksum_is_right(tmp_path):
    path = _ledger(tmp_path)
    intact = path.read_bytes()
    led = L.read(str(path))
    summ = L.checksum(led.entries[-1].checksum, "2026-11-21T20:00:09Z", "gaussian:sigma=3")
    whole = f"2026-11-21T20:00:09Z\tgaussian:sigma=3\t{summ}".encode()
    path.write_bytes(intact + whole)
    assert dpcalc("--ledger", str(path), "--repair").returncode == 0
    assert path.read_bytes() == intact
    wrong = whole[:-1] + (b"0" if whole[-1:] != b"0" else b"1")
    path.write_bytes(intact + wrong)
    res = dpcalc("--ledger", str(path), "--repair")
    assert res.returncode == 1 and "not a ledger entry" in res.stderr and res.stderr.count("\n") == 1
    assert path.read_bytes() == intact + wrong


@pytest.mark.parametrize(
    "tail",
    [
        b"hello",  # text appended to a ledger, not an entry
        b"2026-11-21T20:00:09Z\tgaussian:sigma=3\tmd5:0123",
        b"2026-11-21T20:00:09Z\tgauss\x01ian",  # a control character
        b"\xff\xfe",  # not UTF-8
        b"2026-11-21 20:00:09",
    ],
)
def test_a_last_line_that_is_not_the_start_of_an_entry_is_damage_and_never_cut(tmp_path, tail):
    path = _ledger(tmp_path)
    data = path.read_bytes() + tail
    path.write_bytes(data)
    for args in (["--repair"], ["-f", "csv"], ["--add", "gaussian:sigma=3"]):
        res = dpcalc("--ledger", str(path), *args)
        assert res.returncode == 1, (args, res.stderr)
        assert res.stderr.count("\n") == 1 and "line 5" in res.stderr and "not changed" in res.stderr
    assert path.read_bytes() == data


def test_the_torn_first_append_of_a_new_ledger_is_repaired(tmp_path):
    path = tmp_path / "new.ledger"
    path.write_bytes(HEADER.line().encode()[:30])
    res = dpcalc("--ledger", str(path), "--repair")
    assert res.returncode == 0 and "removed the incomplete line 1" in res.stderr
    assert path.read_bytes() == b""


def test_a_file_that_merely_starts_like_the_magic_is_not_a_ledger(tmp_path):
    path = tmp_path / "notes.md"
    path.write_bytes(b"# dpc")  # too short to be the ledger's header
    res = dpcalc("--ledger", str(path), "--repair")
    assert res.returncode == 2 and "not a dpcalc ledger" in res.stderr
    assert path.read_bytes() == b"# dpc"


def _advice_files():
    files = list((ROOT / "dpcalc").rglob("*.py")) + list((ROOT / "man").glob("*.1"))
    files += [ROOT / "README.md", *(ROOT / "docs").glob("*.md"), *(ROOT / "docs" / "guide").glob("*.md")]
    return files


def test_no_advice_anywhere_suggests_truncate():
    pattern = re.compile(r"\btruncate\s+-s\b|`truncate[ `]|\(or: truncate|truncate the (?:file|ledger)")
    found = []
    for path in _advice_files():
        text = path.read_text(encoding="utf-8", errors="replace")
        found += [f"{path.relative_to(ROOT)}: {m.group(0)}" for m in pattern.finditer(text)]
    assert not found, found


def test_the_torn_message_advises_only_repair(tmp_path):
    path = _ledger(tmp_path)
    path.write_bytes(path.read_bytes() + b"2026")
    message = L.read(str(path)).torn.message(str(path))
    assert "--repair" in message and "truncate" not in message
