"""The ledger as an input: a regular file or exit 2 (never a hang on a FIFO), missing directories
named as such, read-only ledgers refused naming the reason, nothing created by a refused first
``--add``, BOM and CRLF read back, and ``-q`` without notes."""

import errno
import os
import subprocess
import sys

import pytest

from dpcalc.input.text import BOM
from dpcalc.ledger import file as L

ADD = ["--add", "gaussian:sigma=5", "--delta", "1e-6"]


def dpcalc(args, timeout=60):
    """A subprocess with a timeout: a ledger that blocks fails the test instead of stalling the run."""
    return subprocess.run(
        [sys.executable, "-m", "dpcalc", *args], capture_output=True, text=True, timeout=timeout
    )


def one_error(res, *fragments, code=2):
    err = getattr(res, "stderr", "")
    got = getattr(res, "exit_code", getattr(res, "returncode", None))
    assert got == code, err
    assert res.stdout == "", res.stdout
    lines = err.splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: "), err
    assert "internal error" not in err and "Traceback" not in err
    for f in fragments:
        assert f in lines[0], lines[0]


MODES = {
    "report": [],
    "add": ADD,
    "check": ["--add", "gaussian:sigma=5", "--delta", "1e-6", "--check"],
    "repair": ["--repair"],
}


@pytest.mark.parametrize("mode", MODES)
def test_a_fifo_is_refused_at_once(tmp_path, mode):
    fifo = tmp_path / "ci.ledger"
    os.mkfifo(fifo)
    res = dpcalc(["odometer", "--ledger", str(fifo), *MODES[mode]])
    one_error(res, f"--ledger {fifo}: cannot", "a FIFO (named pipe), not a regular file")


@pytest.mark.parametrize("mode", MODES)
def test_a_directory_is_refused(invoke, tmp_path, mode):
    one_error(invoke(["odometer", "--ledger", str(tmp_path), *MODES[mode]]), "directory")
    assert os.listdir(tmp_path) == []


@pytest.mark.skipif(not os.path.exists("/dev/null"), reason="no /dev/null")
@pytest.mark.parametrize("mode", MODES)
def test_a_device_is_refused(tmp_path, mode):
    res = dpcalc(["odometer", "--ledger", "/dev/null", *MODES[mode]])
    one_error(res, "--ledger /dev/null: cannot", "a character device, not a regular file")


@pytest.mark.parametrize("mode", MODES)
def test_a_missing_directory_is_named_as_such(invoke, tmp_path, mode):
    path = tmp_path / "nodir" / "x.ledger"
    one_error(
        invoke(["odometer", "--ledger", str(path), *MODES[mode]]),
        f"--ledger {path}: cannot",
        f"no such directory '{tmp_path / 'nodir'}'",
    )
    assert not (tmp_path / "nodir").exists()


def test_a_missing_ledger_is_exit_2_and_says_add_creates_it(invoke, tmp_path):
    path = tmp_path / "x.ledger"
    one_error(invoke(["odometer", "--ledger", str(path)]), "no such file", "--add creates it")
    one_error(invoke(["odometer", "--ledger", str(path), "--repair"]), "no such file")
    assert not path.exists()


def test_a_dangling_symlink_is_refused_not_followed(invoke, tmp_path):
    link = tmp_path / "ci.ledger"
    os.symlink(tmp_path / "elsewhere" / "real.ledger", link)
    for _ in range(2):
        one_error(
            invoke(["odometer", "--ledger", str(link), *ADD]), "symbolic link to a file that does not exist"
        )
        os.makedirs(tmp_path / "elsewhere", exist_ok=True)
    assert os.listdir(tmp_path / "elsewhere") == []


def test_read_only_ledger_on_add_names_the_file_and_the_reason(invoke, tmp_path):
    path = tmp_path / "ci.ledger"
    assert invoke(["odometer", "--ledger", str(path), *ADD]).exit_code == 0
    before = path.read_bytes()
    path.chmod(0o444)
    try:
        if os.access(path, os.W_OK):
            pytest.skip("permissions are not enforced (running as root)")
        one_error(
            invoke(["odometer", "--ledger", str(path), "--add", "gaussian:sigma=6"]),
            f"--ledger {path}: cannot write: permission denied",
        )
        assert invoke(["odometer", "--ledger", str(path), "-q"]).exit_code == 0  # reading still works
    finally:
        path.chmod(0o644)
    assert path.read_bytes() == before


@pytest.mark.parametrize("code, reason", [(errno.EACCES, "permission denied"), (errno.EROFS, "read-only")])
def test_a_ledger_that_cannot_be_written_is_exit_2_even_as_root(invoke, tmp_path, monkeypatch, code, reason):
    path = tmp_path / "ci.ledger"
    assert invoke(["odometer", "--ledger", str(path), *ADD]).exit_code == 0
    before = path.read_bytes()
    real_open = os.open

    def refuse_writes(p, flags, *a, **kw):
        if os.fspath(p) == str(path) and flags & (os.O_RDWR | os.O_WRONLY):
            raise OSError(code, os.strerror(code), os.fspath(p))
        return real_open(p, flags, *a, **kw)

    monkeypatch.setattr(os, "open", refuse_writes)
    for args in (["--add", "gaussian:sigma=6"], ["--repair"]):
        one_error(
            invoke(["odometer", "--ledger", str(path), *args]), f"--ledger {path}: cannot write: {reason}"
        )
    assert path.read_bytes() == before
    res = invoke(["odometer", "--ledger", str(path), "--add", "gaussian:sigma=6", "--check", "-q"])
    assert res.exit_code == 0  # asking needs no write access


def test_a_directory_that_cannot_be_written_is_exit_2(invoke, tmp_path, monkeypatch):
    real_open = os.open

    def refuse_create(p, flags, *a, **kw):
        if flags & os.O_CREAT:
            raise PermissionError(errno.EACCES, "Permission denied", os.fspath(p))
        return real_open(p, flags, *a, **kw)

    monkeypatch.setattr(os, "open", refuse_create)
    path = tmp_path / "ci.ledger"
    one_error(
        invoke(["odometer", "--ledger", str(path), *ADD]),
        f"--ledger {path}: cannot create: permission denied",
    )
    assert os.listdir(tmp_path) == []


# -- a new ledger ------------------------------------------------------------------------------------
def test_refused_first_add_creates_nothing(invoke, tmp_path):
    path = tmp_path / "ci.ledger"
    res = invoke(
        [
            "odometer",
            "--ledger",
            str(path),
            "--add",
            "gaussian:sigma=0.1",
            "--delta",
            "1e-6",
            "--max-epsilon",
            "1",
        ]
    )
    assert res.exit_code == 3 and "not recorded" in res.stderr
    assert os.listdir(tmp_path) == []  # no 0-byte ledger, no header, no temporary file
    res = invoke(["odometer", "--ledger", str(path), *ADD, "--check"])
    assert res.exit_code == 0 and os.listdir(tmp_path) == []
    res = invoke(["odometer", "--ledger", str(path), *ADD, "-q"])
    assert res.exit_code == 0 and os.listdir(tmp_path) == ["ci.ledger"]
    led = L.read(str(path))
    assert led.mechanisms == ["gaussian:sigma=5"] and led.header.delta == 1e-6


def test_refused_add_on_an_existing_empty_file_leaves_it_empty(invoke, tmp_path):
    path = tmp_path / "ci.ledger"
    path.write_bytes(b"")
    res = invoke(
        [
            "odometer",
            "--ledger",
            str(path),
            "--add",
            "gaussian:sigma=0.1",
            "--delta",
            "1e-6",
            "--max-epsilon",
            "1",
        ]
    )
    assert res.exit_code == 3 and path.read_bytes() == b""
    assert invoke(["odometer", "--ledger", str(path), *ADD]).exit_code == 0
    assert L.read(str(path)).mechanisms == ["gaussian:sigma=5"]


def test_a_writer_that_loses_the_race_to_create_appends_after_the_winner(tmp_path, monkeypatch):
    path = str(tmp_path / "ci.ledger")
    header = L.Header(1e-6, (2.0, 4.0), "paper")
    real_link = os.link

    def someone_else_first(src, dst):
        monkeypatch.setattr(os, "link", real_link)
        L.append(dst, "gaussian:sigma=9", header, time="2026-01-01T00:00:00Z")
        raise FileExistsError(errno.EEXIST, "File exists", dst)

    monkeypatch.setattr(os, "link", someone_else_first)
    seen = []
    led, written = L.append(path, "gaussian:sigma=5", header, lambda h, m: seen.append(list(m)) or True)
    assert written and seen == [["gaussian:sigma=5"], ["gaussian:sigma=9", "gaussian:sigma=5"]]
    assert L.read(path).mechanisms == ["gaussian:sigma=9", "gaussian:sigma=5"]
    assert os.listdir(tmp_path) == ["ci.ledger"]


def test_without_hard_links_a_new_ledger_is_still_whole(tmp_path, monkeypatch):
    def no_links(src, dst):
        raise PermissionError(errno.EPERM, "Operation not permitted", dst)

    monkeypatch.setattr(os, "link", no_links)
    path = str(tmp_path / "ci.ledger")
    header = L.Header(1e-6, (2.0, 4.0), "paper")
    assert L.append(path, "gaussian:sigma=5", header, lambda h, m: False) == (
        L.Ledger(None, (), None, 0),
        False,
    )
    assert os.listdir(tmp_path) == []
    assert L.append(path, "gaussian:sigma=5", header)[1]
    assert L.read(path).mechanisms == ["gaussian:sigma=5"] and os.listdir(tmp_path) == ["ci.ledger"]


# -- notes ---------------------------------------------------------------------------------------------
def test_quiet_add_prints_no_notes(invoke, tmp_path):
    path = str(tmp_path / "ci.ledger")
    loud = invoke(["odometer", "--ledger", path, *ADD])
    notes = [ln for ln in loud.stderr.splitlines() if ln.startswith("Note:")]
    assert notes and len(notes) == len(set(notes))  # each note once
    quiet = invoke(["odometer", "--ledger", path, "--add", "gaussian:sigma=5", "-q"])
    assert quiet.exit_code == 0 and quiet.stderr == "" and len(quiet.stdout.splitlines()) == 1
    check = invoke(["odometer", "--ledger", path, "--add", "gaussian:sigma=5", "--check", "-q"])
    assert check.exit_code == 0 and check.stderr == ""
    report = invoke(["odometer", "--ledger", path, "-q"])
    assert report.exit_code == 0 and report.stderr == "" and len(report.stdout.splitlines()) == 2
    report = invoke(["odometer", "--ledger", path])
    notes = [ln for ln in report.stderr.splitlines() if ln.startswith("Note:")]
    assert notes and len(notes) == len(set(notes))


def test_quiet_report_still_tells_of_a_torn_line(invoke, tmp_path):
    path = tmp_path / "ci.ledger"
    assert invoke(["odometer", "--ledger", str(path), *ADD]).exit_code == 0
    with open(path, "ab") as fh:
        fh.write(b"2026-01-01T00:00:00Z\tgauss")
    res = invoke(["odometer", "--ledger", str(path), "-q"])
    assert res.exit_code == 0 and "incomplete append" in res.stderr and "best order" not in res.stderr


# -- reading back ---------------------------------------------------------------------------------------
def _ledger(tmp_path, invoke, n=2):
    path = tmp_path / "ci.ledger"
    for i in range(n):
        assert (
            invoke(
                ["odometer", "--ledger", str(path), "--add", f"gaussian:sigma={5 + i}", "--delta", "1e-6"]
            ).exit_code
            == 0
        )
    return path


@pytest.mark.parametrize(
    "edit",
    [lambda d: BOM + d, lambda d: d.replace(b"\n", b"\r\n"), lambda d: BOM + d.replace(b"\n", b"\r\n")],
    ids=["bom", "crlf", "bom-crlf"],
)
def test_bom_and_crlf_ledgers_read_back_and_appends_keep_their_line_ends(invoke, tmp_path, edit):
    path = _ledger(tmp_path, invoke)
    want = invoke(["odometer", "--ledger", str(path), "-f", "csv"]).stdout
    data = edit(path.read_bytes())
    path.write_bytes(data)
    got = invoke(["odometer", "--ledger", str(path), "-f", "csv"])
    assert got.exit_code == 0 and got.stdout == want
    assert invoke(["odometer", "--ledger", str(path), "--add", "gaussian:sigma=7", "-q"]).exit_code == 0
    after = path.read_bytes()
    assert after.startswith(data) and after.endswith(b"\r\n" if b"\r\n" in data else b"\n")
    assert after[len(data) :].count(b"\r\n") == (1 if b"\r\n" in data else 0)
    assert L.read(str(path)).mechanisms == ["gaussian:sigma=5", "gaussian:sigma=6", "gaussian:sigma=7"]


def test_mixed_line_ends_are_damage(invoke, tmp_path):
    path = _ledger(tmp_path, invoke, 3)
    data = path.read_bytes()
    second = data.index(b"\n", data.index(b"\n") + 1)
    path.write_bytes(data[:second] + b"\r" + data[second:])  # one CR more: must not pass unseen
    res = invoke(["odometer", "--ledger", str(path)])
    assert res.exit_code == 1 and "line 2: mixed line ends" in res.stderr and "not changed" in res.stderr


def test_bytes_that_are_not_utf8_are_damage_naming_the_byte(invoke, tmp_path):
    path = _ledger(tmp_path, invoke)
    data = bytearray(path.read_bytes())
    at = data.index(b"sigma=6")
    data[at] = 0xFF
    path.write_bytes(bytes(data))
    res = invoke(["odometer", "--ledger", str(path)])
    assert res.exit_code == 1, res.stderr
    assert f"line 3: byte {at} is not UTF-8 (0xff)" in res.stderr and "internal error" not in res.stderr
