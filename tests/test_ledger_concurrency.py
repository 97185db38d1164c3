"""Concurrent CI jobs on one ledger, and a writer killed mid-append (real processes)."""

import multiprocessing
import os
import signal
import subprocess
import sys
import textwrap

import pytest

from dpcalc.ledger import file as L

WORKERS, APPENDS = 8, 50


def _mech(worker: int, i: int) -> str:
    return f"gaussian:sigma={100 + worker}.{i:02d}"


def _worker(path: str, worker: int, barrier) -> None:
    from click.testing import CliRunner

    from dpcalc.cli import main

    runner = CliRunner()
    barrier.wait()
    for i in range(APPENDS):
        res = runner.invoke(
            main,
            # -q prints the odometer's ε, which no conversion enters; Mironov's is the cheap one for the plain
            # column each append also computes (the optimal one costs 60 ms an append)
            [
                "odometer",
                "--ledger",
                path,
                "--add",
                _mech(worker, i),
                "--delta",
                "1e-6",
                "-q",
                "--conversion",
                "mironov",
            ],
        )
        if res.exit_code != 0:
            raise SystemExit(f"worker {worker} append {i}: exit {res.exit_code}: {res.stderr}")


def _run(args, **kw):
    return subprocess.run([sys.executable, "-m", "dpcalc", *args], capture_output=True, text=True, **kw)


def test_8_processes_x_50_appends_lose_nothing_and_match_streaming(tmp_path):
    path = str(tmp_path / "ci.ledger")
    ctx = multiprocessing.get_context("fork")
    barrier = ctx.Barrier(WORKERS)
    procs = [ctx.Process(target=_worker, args=(path, w, barrier)) for w in range(WORKERS)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(timeout=300)
    assert [p.exitcode for p in procs] == [0] * WORKERS

    led = L.read(path)  # every checksum verified
    assert led.torn is None and len(led.entries) == WORKERS * APPENDS
    assert sorted(led.mechanisms) == sorted(_mech(w, i) for w in range(WORKERS) for i in range(APPENDS))
    for w in range(WORKERS):  # each job's own appends are in its order
        mine = [m for m in led.mechanisms if m.startswith(f"gaussian:sigma={100 + w}.")]
        assert mine == [_mech(w, i) for i in range(APPENDS)]

    events = tmp_path / "events.csv"
    events.write_text("mechanism\n" + "".join(f'"{m}"\n' for m in led.mechanisms), encoding="utf-8")
    streamed = _run(["odometer", str(events), "--delta", "1e-6", "-q", "--conversion", "mironov"])
    reported = _run(["odometer", "--ledger", path, "-q"])
    assert streamed.returncode == 0 and reported.returncode == 0, streamed.stderr + reported.stderr
    s_lines, r_lines = streamed.stdout.split(), reported.stdout.split()
    assert len(s_lines) == len(r_lines) == WORKERS * APPENDS
    assert s_lines == r_lines  # the same 400 running values, to the last digit


HEAD_WORKERS, HEAD_APPENDS = 6, 20


def _head_worker(path: str, head_file: str, worker: int, barrier, out: str) -> None:
    from click.testing import CliRunner

    from dpcalc.cli import main

    runner = CliRunner()
    barrier.wait()
    heads = []
    for i in range(HEAD_APPENDS):
        args = [
            "odometer",
            "--ledger",
            path,
            "--add",
            _mech(worker, i),
            "--delta",
            "1e-6",
            "--conversion",
            "mironov",
        ]
        res = runner.invoke(main, [*args, "--head-file", head_file, "--head"])
        if res.exit_code != 0:
            raise SystemExit(f"worker {worker} append {i}: exit {res.exit_code}: {res.stderr}")
        heads.append(res.stdout.strip())
    with open(out, "w") as fh:
        fh.write("\n".join(heads) + "\n")


def test_concurrent_jobs_sharing_a_head_file_never_refuse_each_other_and_it_ends_at_the_head(tmp_path):
    """Every job reads, checks and replaces the head file under the ledger's lock (the first ones race
    to create the ledger): no job sees a false rollback, every printed head is extended by the final
    ledger, and the head file ends at the ledger's head."""
    from dpcalc.ledger import head as H

    path, head_file = str(tmp_path / "ci.ledger"), str(tmp_path / "ci.head")
    ctx = multiprocessing.get_context("fork")
    barrier = ctx.Barrier(HEAD_WORKERS)
    outs = [str(tmp_path / f"heads.{w}") for w in range(HEAD_WORKERS)]
    procs = [
        ctx.Process(target=_head_worker, args=(path, head_file, w, barrier, outs[w]))
        for w in range(HEAD_WORKERS)
    ]
    for p in procs:
        p.start()
    for p in procs:
        p.join(timeout=300)
    assert [p.exitcode for p in procs] == [0] * HEAD_WORKERS

    led = L.read(path)
    assert len(led.entries) == HEAD_WORKERS * HEAD_APPENDS
    final = H.head(led)
    assert open(head_file).read() == f"{final}\n"
    for out in outs:
        heads = [H.parse_head(line, "heads") for line in open(out).read().split()]
        counts = [h.count for h in heads]
        assert counts == sorted(set(counts)) and len(counts) == HEAD_APPENDS  # each job's heads grow
        assert all(H.extends(led, h) for h in heads)
    assert sorted(os.listdir(tmp_path)) == sorted(
        ["ci.head", "ci.ledger", *(os.path.basename(o) for o in outs)]
    )


TEAR = textwrap.dedent(
    """
    import os, sys, time
    from dpcalc.ledger import file as L

    def half_then_hang(fd, payload):
        os.write(fd, payload[: len(payload) // 2])
        os.fsync(fd)
        print("torn", flush=True)
        time.sleep(120)

    L._write_all = half_then_hang
    L.append(sys.argv[1], "gaussian:sigma=7,count=3", None)
    """
)


def test_writer_killed_mid_append_loses_only_its_entry(tmp_path):
    path = str(tmp_path / "ci.ledger")
    for i in range(3):
        assert (
            _run(
                ["odometer", "--ledger", path, "--add", f"gaussian:sigma={5 + i}", "--delta", "1e-6"]
            ).returncode
            == 0
        )
    intact = open(path, "rb").read()
    proc = subprocess.Popen([sys.executable, "-c", TEAR, path], stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout.readline().strip() == "torn"
        # a concurrent writer waits on the lock held by the hung writer ...
        waiting = subprocess.Popen(
            [sys.executable, "-m", "dpcalc", "odometer", "--ledger", path, "--add", "gaussian:sigma=9"],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        with pytest.raises(subprocess.TimeoutExpired):
            waiting.wait(timeout=1.5)
    finally:
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        proc.stdout.close()
    # ... and, once the writer is dead, refuses to write on top of the torn line
    _, err = waiting.communicate(timeout=60)
    assert waiting.returncode == 1 and "incomplete append" in err and "--repair" in err

    led = L.read(path)
    assert led.mechanisms == ["gaussian:sigma=5", "gaussian:sigma=6", "gaussian:sigma=7"]
    assert led.torn is not None and led.torn.offset == len(intact)

    report = _run(["odometer", "--ledger", path, "-f", "csv"])
    assert report.returncode == 0
    assert report.stdout.count("\n") == 4  # header + the three intact entries
    assert "line 5 is an incomplete append" in report.stderr and "--repair" in report.stderr
    assert "truncate" not in report.stderr  # the one repair that removes only the torn line
    assert "Traceback" not in report.stderr

    fixed = _run(["odometer", "--ledger", path, "--repair"])
    assert fixed.returncode == 0 and "removed the incomplete line 5" in fixed.stderr
    assert fixed.stderr.count("\n") == 1 and fixed.stderr.startswith("Note: "), fixed.stderr
    assert open(path, "rb").read() == intact
    assert _run(["odometer", "--ledger", path, "--add", "gaussian:sigma=9"]).returncode == 0
    assert L.read(path).mechanisms[-1] == "gaussian:sigma=9"


def test_a_held_lock_is_waited_for_a_bounded_time_then_exit_1(tmp_path, monkeypatch):
    """A ledger locked by another process: the wait is bounded (LOCK_TIMEOUT), then one line, exit 1."""
    import fcntl

    from click.testing import CliRunner

    from dpcalc.cli import main
    from dpcalc.ledger import file as L

    path = tmp_path / "run.ledger"
    runner = CliRunner()
    first = runner.invoke(
        main, ["odometer", "--ledger", str(path), "--add", "gaussian:sigma=5", "--delta", "1e-6"]
    )
    assert first.exit_code == 0, first.output
    before = path.read_bytes()
    monkeypatch.setattr(L, "LOCK_TIMEOUT", 0.3)
    fd = os.open(path, os.O_RDWR)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        for args in (["--add", "gaussian:sigma=6"], []):
            res = runner.invoke(main, ["odometer", "--ledger", str(path), *args])
            assert res.exit_code == 1, res.output
            lines = res.stderr.strip().splitlines()
            assert len(lines) == 1 and lines[0].startswith("Error: "), res.stderr
            assert str(path) in lines[0] and "locked by another process" in lines[0]
    finally:
        os.close(fd)
    assert path.read_bytes() == before
    again = runner.invoke(main, ["odometer", "--ledger", str(path), "--add", "gaussian:sigma=6"])
    assert again.exit_code == 0, again.output


def test_flock_waits_for_a_lock_released_within_the_timeout(tmp_path):
    import fcntl
    import threading

    from dpcalc.ledger import file as L

    path = tmp_path / "f"
    path.write_text("x")
    holder = os.open(path, os.O_RDWR)
    fcntl.flock(holder, fcntl.LOCK_EX)
    threading.Timer(0.2, os.close, (holder,)).start()
    fd = os.open(path, os.O_RDWR)
    try:
        L._flock(fd, fcntl.LOCK_EX, str(path), timeout=10.0)  # returns once the holder lets go
        with pytest.raises(L.LedgerLocked):
            other = os.open(path, os.O_RDWR)
            try:
                L._flock(other, fcntl.LOCK_EX, str(path), timeout=0.1)
            finally:
                os.close(other)
    finally:
        os.close(fd)


def test_a_long_wait_for_the_lock_is_said_on_stderr(tmp_path, monkeypatch):
    """Waiting for another process's lock longer than a second is said once, naming the ledger and why."""
    import fcntl

    from click.testing import CliRunner

    from dpcalc.cli import main
    from dpcalc.ledger import file as L

    path = tmp_path / "run.ledger"
    runner = CliRunner()
    first = runner.invoke(
        main, ["odometer", "--ledger", str(path), "--add", "gaussian:sigma=5", "--delta", "1e-6"]
    )
    assert first.exit_code == 0, first.output
    monkeypatch.setattr(L, "LOCK_TIMEOUT", 0.4)
    monkeypatch.setattr(L, "WAIT_NOTICE_SECONDS", 0.05)
    fd = os.open(path, os.O_RDWR)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        res = runner.invoke(main, ["odometer", "--ledger", str(path), "--add", "gaussian:sigma=6"])
    finally:
        os.close(fd)
    said, last = res.stderr.strip().splitlines()
    assert (
        said == f"dpcalc: ledger {path}: waiting for another process's lock, to write (at most 0.4 s in all)"
    )
    assert res.exit_code == 1 and "locked by another process" in last
