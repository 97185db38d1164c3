"""Input from real tools through the command line: ``convert --curve`` and ``odometer EVENTS`` read
BOMs and CRLF, refuse bytes that are not text with exit 2 naming the byte, and never hang on FIFOs,
``/dev/zero`` or endless lines; events files are checked whole before the first row is written."""

import contextlib
import errno
import os
import shutil
import subprocess
import sys
import threading

import pytest

BOM = b"\xef\xbb\xbf"
CURVE = b"alpha,rdp\n2,0.5\n4,1\n8,2\n"
EVENTS_SGM = b"sample_rate,noise_multiplier,steps\n0.01,1,100\n0.02,1.1,50\n"
EVENTS_MECH = b"mechanism\ngaussian:sigma=2\nlaplace:scale=3\n"
CONVERT = ["convert", "--delta", "1e-5", "-f", "csv"]
ODOMETER = ["--delta", "1e-6", "-f", "csv", "--conversion", "mironov"]


def dpcalc(args, *, input=None, timeout=60, **kw):
    """``python -m dpcalc ARGS`` in a subprocess: a hang fails the test instead of stalling the run."""
    return subprocess.run(
        [sys.executable, "-m", "dpcalc", *args], input=input, capture_output=True, timeout=timeout, **kw
    )


def one_error(res, *fragments, code=2):
    """Exit ``code``, nothing on stdout, exactly one stderr line: the error, holding ``fragments``."""
    err = res.stderr if isinstance(res.stderr, str) else res.stderr.decode()
    out = res.stdout if isinstance(res.stdout, str) else res.stdout.decode()
    code_got = getattr(res, "exit_code", getattr(res, "returncode", None))
    assert code_got == code, err
    assert out == "", out
    lines = err.splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: "), err
    assert "internal error" not in err and "Traceback" not in err
    for f in fragments:
        assert f in lines[0], lines[0]
    return lines[0]


def crlf(data: bytes) -> bytes:
    return data.replace(b"\n", b"\r\n")


# -- --curve ----------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "variant",
    [
        lambda d: BOM + d,
        crlf,
        lambda d: BOM + crlf(d),
        lambda d: d.replace(b"\n", b"\r"),
        lambda d: d.rstrip(b"\n"),
    ],
    ids=["bom", "crlf", "bom-crlf", "cr", "no-final-newline"],
)
def test_curve_from_excel_or_pandas_reads_like_plain_csv(invoke, tmp_path, variant):
    want = invoke(["convert", "--curve", "-", *CONVERT[1:]], input=CURVE)
    assert want.exit_code == 0, want.stderr
    path = tmp_path / "curve.csv"
    path.write_bytes(variant(CURVE))
    got = invoke(["convert", "--curve", str(path), *CONVERT[1:]])
    assert (got.exit_code, got.stdout, got.stderr) == (0, want.stdout, want.stderr)
    piped = invoke(["convert", "--curve", "-", *CONVERT[1:]], input=variant(CURVE))
    assert (piped.exit_code, piped.stdout) == (0, want.stdout)


def test_curve_not_utf8_names_the_byte(invoke, tmp_path):
    path = tmp_path / "data.csv"
    path.write_bytes(b"alpha,rdp\n2,0.5\n4,\xff1\n")
    one_error(
        invoke(["convert", "--curve", str(path), *CONVERT[1:]]),
        f"--curve {path}: byte 18 is not UTF-8 (0xff)",
    )
    one_error(
        invoke(["convert", "--curve", "-", *CONVERT[1:]], input=b"\xef\xbb\xbfalpha,rdp\r\n\x80"),
        "--curve -: byte 14 is not UTF-8 (0x80)",
    )


def test_curve_that_cannot_be_read_exits_2(invoke, tmp_path):
    one_error(invoke(["convert", "--curve", str(tmp_path / "nope.csv"), *CONVERT[1:]]), "no such file")
    one_error(
        invoke(["convert", "--curve", str(tmp_path / "nodir" / "c.csv"), *CONVERT[1:]]),
        "no such directory",
        "nodir",
    )
    one_error(invoke(["convert", "--curve", str(tmp_path), *CONVERT[1:]]), "is a directory")


def test_unreadable_curve_exits_2(invoke, tmp_path):
    path = tmp_path / "c.csv"
    path.write_bytes(CURVE)
    path.chmod(0)
    try:
        if os.access(path, os.R_OK):
            pytest.skip("permissions are not enforced (running as root)")
        one_error(invoke(["convert", "--curve", str(path), *CONVERT[1:]]), "permission denied")
    finally:
        path.chmod(0o600)


def test_permission_denied_is_exit_2_even_as_root(invoke, tmp_path, monkeypatch):
    path = tmp_path / "c.csv"
    path.write_bytes(CURVE)
    real_open = os.open

    def deny(p, *a, **kw):
        if os.fspath(p) == str(path):
            raise PermissionError(errno.EACCES, "Permission denied", os.fspath(p))
        return real_open(p, *a, **kw)

    monkeypatch.setattr(os, "open", deny)
    one_error(
        invoke(["convert", "--curve", str(path), *CONVERT[1:]]),
        f"--curve {path}: cannot read: permission denied",
    )
    one_error(invoke(["odometer", str(path), *ODOMETER]), "permission denied")


@pytest.mark.skipif(not os.path.exists("/dev/zero"), reason="no /dev/zero")
def test_dev_zero_fails_fast_never_hangs():
    res = dpcalc(["convert", "--curve", "/dev/zero", *CONVERT[1:]], timeout=60, text=True)
    one_error(res, "--curve /dev/zero: byte 0 is a NUL byte")
    res = dpcalc(["odometer", "/dev/zero", *ODOMETER], timeout=60, text=True)
    one_error(res, "/dev/zero: byte 0 is a NUL byte")


def test_an_endless_line_on_stdin_fails_fast():
    """``yes | tr -d '\\n' | dpcalc ...``: the line bound stops it, the writer sees a closed pipe."""
    for args in (["convert", "--curve", "-", *CONVERT[1:]], ["odometer", "-", *ODOMETER]):
        proc = subprocess.Popen(
            [sys.executable, "-m", "dpcalc", *args],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )

        def feed(proc=proc):
            try:
                while True:
                    proc.stdin.write(b"y" * 65536)
            except (BrokenPipeError, OSError, ValueError):
                pass

        t = threading.Thread(target=feed, daemon=True)
        t.start()
        try:
            proc.wait(timeout=60)  # stdin stays open: only the bound can end it
        except subprocess.TimeoutExpired:
            proc.kill()
            pytest.fail("an endless line was read without bound")
        finally:
            t.join(timeout=10)
        out, err = proc.stdout.read(), proc.stderr.read()
        proc.stdout.close(), proc.stderr.close()
        with contextlib.suppress(OSError):
            proc.stdin.close()
        assert proc.returncode == 2 and out == b""
        assert b"line 1: the line is longer than 1048576 bytes" in err, err


def test_a_200000_character_field_is_exit_2(invoke, tmp_path):
    big = "1" * 200_000
    one_error(
        invoke(["convert", "--curve", "-", *CONVERT[1:]], input=f"alpha,rdp\n2,{big}\n"),
        "--curve - line 2: a field is longer than 100000 characters",
    )
    path = tmp_path / "e.csv"
    path.write_text(f"mechanism,note\ngaussian:sigma=2,{big}\n")
    one_error(invoke(["odometer", str(path), *ODOMETER]), "line 2: a field is longer than 100000 characters")


def test_curve_through_a_fifo(invoke, tmp_path):
    want = invoke(["convert", "--curve", "-", *CONVERT[1:]], input=CURVE)
    fifo = tmp_path / "curve.fifo"
    os.mkfifo(fifo)

    def writer():
        with open(fifo, "wb") as fh:
            fh.write(BOM + crlf(CURVE))

    t = threading.Thread(target=writer, daemon=True)
    t.start()
    try:
        res = dpcalc(["convert", "--curve", str(fifo), *CONVERT[1:]], timeout=60, text=True)
    finally:
        if t.is_alive():  # the reader never opened the FIFO: unblock the writer
            with open(fifo, "rb") as fh:
                fh.read()
        t.join(timeout=10)
    assert res.returncode == 0, res.stderr
    assert res.stdout == want.stdout


@pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash for <(cmd)")
def test_process_substitution_and_stdin():
    script = (
        f"{sys.executable} -m dpcalc convert --curve <(printf 'alpha,rdp\\r\\n2,0.5\\r\\n') --delta 1e-5 -q"
        f" && printf 'mechanism\\ngaussian:sigma=2\\n' | {sys.executable} -m dpcalc odometer - --delta 1e-6 -q"
        f" && {sys.executable} -m dpcalc odometer <(printf 'mechanism\\ngaussian:sigma=2\\n') --delta 1e-6 -q"
    )
    res = subprocess.run(["bash", "-c", script], capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr
    assert len(res.stdout.split()) == 3


# -- EVENTS ----------------------------------------------------------------------------------------
@pytest.mark.parametrize("data", [EVENTS_SGM, EVENTS_MECH], ids=["sgm", "mechanism"])
@pytest.mark.parametrize(
    "variant",
    [lambda d: BOM + d, lambda d: BOM + crlf(d), lambda d: d.replace(b"\n", b"\r")],
    ids=["bom", "bom-crlf", "cr"],
)
def test_events_with_bom_and_crlf_read_like_plain(invoke, tmp_path, data, variant):
    plain, odd = tmp_path / "plain.csv", tmp_path / "odd.csv"
    plain.write_bytes(data)
    odd.write_bytes(variant(data))
    want = invoke(["odometer", str(plain), *ODOMETER])
    got = invoke(["odometer", str(odd), *ODOMETER])
    assert want.exit_code == 0 and (got.exit_code, got.stdout) == (0, want.stdout), got.stderr
    piped = invoke(["odometer", "-", *ODOMETER], input=variant(data))
    assert (piped.exit_code, piped.stdout) == (0, want.stdout)


def test_events_not_utf8_on_stdin_is_exit_2_not_internal_error(invoke):
    res = invoke(["odometer", "-", *ODOMETER], input=b"mechanism\ngaussian:sigma=2\n\xc3(\n")
    assert res.exit_code == 2 and "internal error" not in res.stderr
    assert res.stderr.splitlines()[-1] == (
        "Error: EVENTS: byte 27 is not UTF-8 (0xc3) on line 3 (1 row was written before it)"
    )
    assert len(res.stdout.splitlines()) == 2  # the header and the row before the bad byte


def test_events_not_utf8_in_a_file_writes_nothing(invoke, tmp_path):
    path = tmp_path / "e.csv"
    path.write_bytes(EVENTS_MECH + b"gaussian:sigma=\xe9\n")
    one_error(invoke(["odometer", str(path), *ODOMETER]), f"{path}: byte ", "is not UTF-8 (0xe9)")


@pytest.mark.parametrize(
    "header, unknown",
    [
        ("epoch,sample_rate,noise_multiplier,loss", "unknown columns 'epoch', 'loss' ignored"),
        ("sample_rate,noise_multiplier,step", "unknown column 'step' ignored"),  # a typo for steps
        ("mechanism,steps", "unknown column 'steps' ignored"),  # mechanism rows carry their own count
    ],
)
def test_unknown_column_gets_one_warning_and_is_ignored(invoke, tmp_path, header, unknown):
    names = header.split(",")
    values = {"sample_rate": "0.01", "noise_multiplier": "1", "mechanism": "gaussian:sigma=3"}
    row = ",".join(values.get(n, "7") for n in names)
    known = [n for n in names if n in values]
    path, plain = tmp_path / "e.csv", tmp_path / "plain.csv"
    path.write_text(f"{header}\n{row}\n{row}\n")
    plain.write_text(",".join(known) + "\n" + (",".join(values[n] for n in known) + "\n") * 2)
    want = invoke(["odometer", str(plain), *ODOMETER])
    for args, stdin in (([str(path)], None), (["-"], path.read_bytes())):
        res = invoke(["odometer", *args, *ODOMETER], input=stdin)
        assert res.exit_code == 0 and res.stdout == want.stdout
        warnings = [ln for ln in res.stderr.splitlines() if "unknown column" in ln]
        assert len(warnings) == 1 and warnings[0].startswith("Warning: ") and unknown in warnings[0]


def test_typo_row_in_a_file_writes_nothing_and_the_error_comes_first(invoke, tmp_path):
    path = tmp_path / "events.csv"
    path.write_text(
        "mechanism\ngaussian:sigma=2\ngaussian:sigma=3\n" + "gaussian:sigma=4\n" * 4 + "gausian:sigma=1\n"
    )
    # --alphas 2,3 puts the best order at the edge: the good rows would warn
    res = invoke(["odometer", str(path), "--delta", "1e-6", "--alphas", "2,3", "-f", "csv"])
    one_error(res, f"{path} line 8:", "unknown kind 'gausian'")
    res = invoke(["odometer", str(path), "--delta", "1e-6", "-f", "json"])
    one_error(res, f"{path} line 8:")


def test_a_row_without_an_rdp_curve_in_a_file_writes_nothing(invoke, tmp_path):
    path = tmp_path / "events.csv"
    path.write_text("mechanism\ngaussian:sigma=2\ndp:epsilon=1,delta=1e-6\n")
    one_error(invoke(["odometer", str(path), *ODOMETER]), f"{path} line 3:")
    one_error(
        invoke(["odometer", "--event", "gaussian:sigma=2", "--event", "dp:epsilon=1,delta=1e-6", *ODOMETER])
    )


def test_bad_row_on_stdin_says_where_the_stream_stopped(invoke):
    text = "sample_rate,noise_multiplier\n" + "0.01,1\n" * 5 + "0.01,one\n0.01,1\n"
    res = invoke(["odometer", "-", *ODOMETER], input=text)
    assert res.exit_code == 2 and len(res.stdout.splitlines()) == 1 + 5
    assert res.stderr.splitlines()[-1] == (
        "Error: EVENTS line 7: noise_multiplier must be a number, got 'one' (5 rows were written before it)"
    )
    res = invoke(["odometer", "-", *ODOMETER], input="sample_rate,noise_multiplier\n0.01,1\n0.01\n")
    assert res.stderr.splitlines()[-1].endswith("(1 row was written before it)")


def test_bad_row_when_following_says_where_the_stream_stopped(tmp_path):
    path = tmp_path / "train.csv"
    path.write_bytes(BOM + crlf(b"sample_rate,noise_multiplier\n0.01,1\n0.01,1\n2,1\n"))
    res = dpcalc(["odometer", str(path), "--follow", *ODOMETER], timeout=60, text=True)
    assert res.returncode == 2 and len(res.stdout.splitlines()) == 3
    assert res.stderr.splitlines()[-1].startswith(f"Error: {path} line 4: sample_rate must lie in (0, 1]")
    assert res.stderr.splitlines()[-1].endswith("(2 rows were written before it)")


def test_events_that_cannot_be_read_exit_2(invoke, tmp_path):
    one_error(invoke(["odometer", str(tmp_path / "nope.csv"), *ODOMETER]), "no such file")
    one_error(invoke(["odometer", str(tmp_path / "nodir" / "e.csv"), *ODOMETER]), "no such directory")
    one_error(invoke(["odometer", str(tmp_path), *ODOMETER]), "is a directory")
    path = tmp_path / "e.csv"
    path.write_bytes(EVENTS_MECH)
    path.chmod(0)
    try:
        if not os.access(path, os.R_OK):
            one_error(invoke(["odometer", str(path), *ODOMETER]), "permission denied")
    finally:
        path.chmod(0o600)


def test_events_through_a_fifo_stream(tmp_path):
    fifo = tmp_path / "events.fifo"
    os.mkfifo(fifo)

    def writer():
        with open(fifo, "wb") as fh:
            fh.write(BOM + crlf(EVENTS_MECH))

    t = threading.Thread(target=writer, daemon=True)
    t.start()
    try:
        res = dpcalc(["odometer", str(fifo), *ODOMETER], timeout=60, text=True)
    finally:
        if t.is_alive():
            with open(fifo, "rb") as fh:
                fh.read()
        t.join(timeout=10)
    assert res.returncode == 0, res.stderr
    assert len(res.stdout.splitlines()) == 3


def test_nul_bytes_are_refused(invoke, tmp_path):
    path = tmp_path / "e.csv"
    path.write_bytes(b"mechanism\ngaussian:sigma=2\x00\n")
    one_error(invoke(["odometer", str(path), *ODOMETER]), "byte 26 is a NUL byte")
    one_error(
        invoke(["convert", "--curve", "-", *CONVERT[1:]], input=b"alpha,rdp\n\x002,1\n"), "byte 10 is a NUL"
    )
