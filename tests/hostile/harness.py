"""Replay the hostile-input corpus (cases.txt) as real subprocesses, each bounded in time and memory.

A case is one line: dpcalc invocations joined by `` && `` that share a fresh working directory
holding a copy of tests/corpus/data.  An invocation is ``ARGS`` (``python -m dpcalc ARGS``), with an
optional last word for its standard input: ``<FILE``, ``<CLOSED`` (no standard input at all, as
``<&-`` in a shell) or ``<WRITEONLY`` (standard input open for writing only).  Without it, standard
input is empty (``/dev/null``).  A step may instead be a setup action (not a dpcalc run), written
``:ACTION ARGS``:

* ``:gen FILE KIND N`` writes a generated file (see :data:`GENERATORS`): e.g. 10,000 distinct specs;
* ``:write FILE TEXT`` / ``:append FILE TEXT``: TEXT with Python escapes (``\\n``, ``\\r``,
  ``\\xff``, ``\\ufeff`` ...), encoded as UTF-8 except that ``\\xNN`` escapes are raw bytes;
* ``:truncate FILE N`` (N < 0: drop the last -N bytes), ``:dropline FILE I``, ``:dupline FILE I``,
  ``:swaplines FILE I J`` (line indices from 0; negative from the end), ``:chmod FILE MODE`` (octal),
  ``:mkdir DIR``, ``:symlink TARGET NAME``;
* ``:lock FILE SECONDS``: hold an exclusive ``flock`` on FILE for SECONDS (in a thread) while the
  following steps run;
* ``:snapshot`` remembers every file of the working directory (its bytes and mode), and ``:unchanged``
  is a problem of the case unless every file is still there, byte for byte, and no file was added: the
  runs between them must change no file (a refused input is left as it was).

Each dpcalc run must end within :data:`TIME_LIMIT` seconds of CPU time (it is killed after that; CPU
time, so that a loaded machine running cases side by side does not fail a case; :data:`WALL_LIMIT`
seconds of wall time catch a run that waits forever), stay under
:data:`RSS_LIMIT_KIB` of peak resident memory (``ru_maxrss`` from ``os.wait4``; a run passing
:data:`RSS_KILL_KIB` is killed at once so that a runaway case cannot take the machine down), exit with
0, 1, 2, 3 or 130 (Ctrl-C), and print no traceback and no "internal error".  Its standard error must be
made of one-line messages: for exit 1 or 2, exactly one line ``Error: ...``; for exit 0 and 130, only
``Note: ...`` and ``Warning: ...`` lines; for exit 3, such lines and then one ``Error: ...`` line; besides
them, any status may have ``dpcalc: ...`` lines about long work (an estimate, a wait for a lock, how far an
interrupted job got).  Every run has ``DPCALC_MAX_SECONDS`` set to :data:`MAX_SECONDS` (a CI job's cap).
"""

from __future__ import annotations

import ast
import fcntl
import json
import os
import random
import re
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
CASES = HERE / "cases.txt"
DATA = HERE.parent / "corpus" / "data"

TIME_LIMIT = 10.0  # seconds of CPU time (user + system) per dpcalc run
#: The cap on a run's estimated work (DPCALC_MAX_SECONDS, wall seconds on every core): work the user asks for is
#: computed, not refused (issue 40), so a case asking for hours is refused by the cap a CI job would set
MAX_SECONDS = "4"
#: The lines dpcalc writes on stderr about long work, beside its one-line messages
NOTICE = "dpcalc: "
WALL_LIMIT = 60.0  # seconds of wall time: a run waiting on nothing (a lock, a pipe) is a hang
RSS_LIMIT_KIB = 500 * 1024  # 500 MB (MiB: a little more generous than 500e6 bytes)
RSS_KILL_KIB = 1500 * 1024  # a run above this is killed at once (the machine is shared)
OUTPUT_LIMIT = 200 << 20  # bytes of standard output: a flood is a failure too
POLL = 0.02
OK_STATUSES = (0, 1, 2, 3, 130)
#: Sections replayed whole by the test suite (their headings name the issue that reported their inputs).
WHOLE_SECTIONS = ("issue 27", "issue 39")


def cases(path: Path = CASES, share: int = 1) -> list[str]:
    """The corpus lines (comments and blank lines dropped).  ``share`` = k > 1 keeps every case of a
    section whose heading names an issue of :data:`WHOLE_SECTIONS` (the inputs the issue reported) and
    every k-th case of the others: the replay the test suite runs by default (see tests/test_hostile.py)."""
    out = []
    whole = True
    i = 0
    for line in path.read_text(encoding="utf-8").splitlines():
        line = line.strip()
        if line.startswith("# ----"):
            whole = any(issue in line for issue in WHOLE_SECTIONS)
            continue
        if line and not line.startswith("#"):
            if share <= 1 or whole or i % share == 0:
                out.append(line)
            i += 0 if whole else 1
    return out


# -- generated files -------------------------------------------------------------------------------
def _gaussians(n: int) -> str:  # n distinct Gaussian specs
    return "".join(f"gaussian:sigma={10 + i / 1000:.4f}\n" for i in range(n))


def _same(n: int) -> str:  # n identical specs
    return "gaussian:sigma=10\n" * n


def _mixed(n: int) -> str:  # n distinct specs of several kinds
    kinds = ["gaussian:sigma={:.4f}", "laplace:scale={:.4f}", "sgm:q=0.01,sigma={:.4f}", "rr:epsilon={:.4f}"]
    return "".join(kinds[i % 4].format(1 + i / 997) + "\n" for i in range(n))


def _curve(n: int) -> str:  # an RDP curve with n orders
    return "alpha,rdp\n" + "".join(f"{1 + (i + 1) / 10},{0.01 * (1 + (i + 1) / 10)}\n" for i in range(n))


def _events(n: int) -> str:  # n odometer events
    return "mechanism\n" + "".join(f"gaussian:sigma={20 + i % 7}\n" for i in range(n))


def _counts(n: int) -> str:  # n audit rows
    return "tp,fp,fn,tn\n" + "".join(
        f"{900 - i % 50},{10 + i % 9},{100 + i % 50},{990 - i % 9}\n" for i in range(n)
    )


def _scores(n: int) -> str:  # n attack scores
    rng = random.Random(n)
    return "member,score\n" + "".join(f"{i % 2},{rng.random() + 0.1 * (i % 2):.6f}\n" for i in range(n))


def _binary(n: int) -> bytes:  # n random bytes
    return random.Random(n).randbytes(n)


def _longline(n: int) -> str:  # one line of n characters
    return "a" * n + "\n"


def _manylines(n: int) -> str:  # n blank/comment lines
    return "# nothing\n\n" * (n // 2)


def _commas(n: int) -> str:  # a CSV header with n columns
    return ",".join(f"c{i}" for i in range(n)) + ",alpha,rdp\n"


_GAUSS = '{"class_name": "GaussianDpEvent", "noise_multiplier": 1.0}'


def _deepcomposed(n: int) -> str:  # a DpEvent of n ComposedDpEvents, one inside the other
    return '{"class_name": "ComposedDpEvent", "events": [' * n + _GAUSS + "]}" * n


def _deepself(n: int) -> str:  # a DpEvent of n SelfComposedDpEvents, one inside the other
    return '{"class_name": "SelfComposedDpEvent", "count": 1, "event": ' * n + _GAUSS + "}" * n


def _deeplist(n: int) -> str:  # n JSON arrays, one inside the other
    return "[" * n + "]" * n


def _deephistory(n: int) -> str:  # an Opacus-like state whose history nests n arrays deep
    return '{"history": ' + "[" * n + "]" * n + "}"


def _unclosed(n: int) -> str:  # n opening brackets and nothing else
    return "[" * n


def _longfield(n: int) -> str:  # a schedule whose first phase has a field of n characters
    return "noise_multiplier,sample_rate,steps\n" + "1" * n + ",0.01,100\n"


def _longquoted(n: int) -> str:  # a quoted CSV field of n characters over many lines
    return 'noise_multiplier,sample_rate,steps\n1,0.01,"' + ("x" * 99 + "\n") * (n // 100) + '"\n'


def _longevent(n: int) -> str:  # EVENTS whose mechanism is n characters
    return "mechanism\n" + '"gaussian:sigma=' + "1" * n + '"\n'


GENERATORS = {
    "gaussians": _gaussians,
    "same": _same,
    "mixed": _mixed,
    "curve": _curve,
    "events": _events,
    "counts": _counts,
    "scores": _scores,
    "binary": _binary,
    "longline": _longline,
    "manylines": _manylines,
    "commas": _commas,
    "deepcomposed": _deepcomposed,
    "deepself": _deepself,
    "deeplist": _deeplist,
    "deephistory": _deephistory,
    "unclosed": _unclosed,
    "longfield": _longfield,
    "longquoted": _longquoted,
    "longevent": _longevent,
}


def _text_bytes(text: str) -> bytes:
    """``:write`` text: Python escapes; ``\\xNN`` are raw bytes, everything else UTF-8."""
    out = bytearray()
    for i, part in enumerate(re.split(r"\\x([0-9a-fA-F]{2})", text)):
        if i % 2:
            out.append(int(part, 16))
        elif part:
            out += ast.literal_eval('"""' + part.replace('"', '\\"') + ' """')[:-1].encode(
                "utf-8", "surrogatepass"
            )
    return bytes(out)


class _Lock:
    """An exclusive flock on a file, released after ``seconds`` or at :meth:`release`."""

    def __init__(self, path: Path, seconds: float) -> None:
        self._fd: int | None = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        self._mutex = threading.Lock()
        fcntl.flock(self._fd, fcntl.LOCK_EX)
        self._timer = threading.Timer(seconds, self.release)
        self._timer.start()

    def release(self) -> None:
        self._timer.cancel()
        with self._mutex:
            if self._fd is not None:
                os.close(self._fd)
                self._fd = None


def _lines(path: Path) -> list[bytes]:
    return path.read_bytes().splitlines(keepends=True)


#: The harness's own files in a case's directory (the runs' outputs and the write-only standard input).
_OWN = {".stdout", ".stderr", ".stdin-writeonly"}


def _files(cwd: Path) -> dict[str, tuple[bytes, int]]:
    """Every file under ``cwd`` but the harness's own: relative path -> (bytes, mode)."""
    out = {}
    for path in sorted(cwd.rglob("*")):
        rel = path.relative_to(cwd).as_posix()
        if rel in _OWN or path.is_dir():
            continue
        st = path.lstat()
        try:
            data = os.readlink(path).encode() if path.is_symlink() else path.read_bytes()
        except OSError:  # unreadable to the harness (chmod 000 when not root): its size and time, then
            data = f"{st.st_size} bytes, modified {st.st_mtime_ns}".encode()
        out[rel] = (data, st.st_mode)
    return out


def changed_files(before: dict, after: dict) -> list[str]:
    """What differs between two :func:`_files` snapshots, in words (empty: nothing)."""
    out = [f"{name} was removed" for name in before if name not in after]
    out += [f"{name} was created" for name in after if name not in before]
    for name in before.keys() & after.keys():
        if before[name][0] != after[name][0]:
            out.append(f"{name} was changed ({len(before[name][0])} -> {len(after[name][0])} bytes)")
        elif before[name][1] != after[name][1]:
            out.append(f"{name}: its mode was changed")
    return sorted(out)


def _action(words: list[str], cwd: Path, held: list, snap: dict | None = None) -> list[str]:
    """Run one setup action; returns its problems (``:unchanged`` only)."""
    op, args = words[0], words[1:]
    p = cwd / args[0] if args else cwd
    if op == ":snapshot":
        snap.clear()
        snap.update(_files(cwd))
        return []
    if op == ":unchanged":
        return [f"files: {what}" for what in changed_files(snap, _files(cwd))]
    if op == ":gen":
        data = GENERATORS[args[1]](int(args[2]))
        p.write_bytes(data if isinstance(data, bytes) else data.encode())
    elif op == ":write":
        p.write_bytes(_text_bytes(" ".join(args[1:])))
    elif op == ":append":
        with open(p, "ab") as fh:
            fh.write(_text_bytes(" ".join(args[1:])))
    elif op == ":truncate":
        n = int(args[1])
        os.truncate(p, n if n >= 0 else max(0, p.stat().st_size + n))
    elif op in (":dropline", ":dupline", ":swaplines"):
        lines = _lines(p)
        i = int(args[1])
        if op == ":dropline":
            del lines[i]
        elif op == ":dupline":
            lines.insert(i, lines[i])
        else:
            j = int(args[2])
            lines[i], lines[j] = lines[j], lines[i]
        p.write_bytes(b"".join(lines))
    elif op == ":chmod":
        os.chmod(p, int(args[1], 8))
    elif op == ":mkdir":
        p.mkdir(parents=True, exist_ok=True)
    elif op == ":symlink":
        os.symlink(args[0], cwd / args[1])
    elif op == ":lock":
        held.append(_Lock(p, float(args[1])))
    else:
        raise ValueError(f"unknown action {op}")
    return []


# -- one run ---------------------------------------------------------------------------------------
@dataclass
class Run:
    args: list[str]
    status: int | None = None  # exit status (negative: killed by that signal)
    seconds: float = 0.0  # CPU time, user + system
    wall: float = 0.0
    rss_kib: int = 0
    stderr: str = ""
    stdout_bytes: int = 0
    killed: str = ""  # why the watchdog killed it ("time", "memory", "output")
    problems: list[str] = field(default_factory=list)


_PAGE_KIB = os.sysconf("SC_PAGE_SIZE") // 1024
_TICKS = os.sysconf("SC_CLK_TCK")


def _usage(pid: int) -> tuple[int, float]:
    """``(resident KiB, CPU seconds)`` of a running process (0 when it cannot be read)."""
    try:
        with open(f"/proc/{pid}/statm") as fh:
            rss = int(fh.read().split()[1]) * _PAGE_KIB
        with open(f"/proc/{pid}/stat") as fh:
            fields = fh.read().rsplit(")", 1)[1].split()
        return rss, sum(int(f) for f in fields[11:15]) / _TICKS  # utime, stime, and its reaped workers
    except (OSError, ValueError, IndexError):
        return 0, 0.0


def _command(args: list[str], stdin_mode: str) -> list[str]:
    base = [sys.executable, "-m", "dpcalc", *args]
    if stdin_mode == "closed":  # close fd 0, then become dpcalc (same pid: wait4 sees its usage)
        code = "import os, sys; os.close(0); os.execv(sys.executable, sys.argv[1:])"
        return [sys.executable, "-c", code, *base]
    return base


def run_dpcalc(args: list[str], cwd: Path, stdin_word: str | None) -> Run:
    run = Run(args)
    mode = "null"
    stdin = subprocess.DEVNULL
    opened = []
    if stdin_word == "CLOSED":
        mode, stdin = "closed", subprocess.DEVNULL
    elif stdin_word == "WRITEONLY":
        fh = open(cwd / ".stdin-writeonly", "wb")  # noqa: SIM115 - closed below
        opened.append(fh)
        stdin = fh
    elif stdin_word is not None:
        fh = open(cwd / stdin_word, "rb")  # noqa: SIM115 - closed below
        opened.append(fh)
        stdin = fh
    out_path, err_path = cwd / ".stdout", cwd / ".stderr"
    env = dict(os.environ, COLUMNS="100", DPCALC_MAX_SECONDS=MAX_SECONDS)
    env.pop("DPCALC_DEBUG", None)
    with open(out_path, "wb") as out, open(err_path, "wb") as err:
        start = time.monotonic()
        proc = subprocess.Popen(_command(args, mode), cwd=cwd, stdin=stdin, stdout=out, stderr=err, env=env)
        for fh in opened:
            fh.close()
        peak = 0
        while True:
            pid, wstatus, usage = os.wait4(proc.pid, os.WNOHANG)
            if pid:
                break
            elapsed = time.monotonic() - start
            rss, cpu = _usage(proc.pid)
            peak = max(peak, rss)
            why = ""
            if cpu > TIME_LIMIT:
                why = "time"
            elif elapsed > WALL_LIMIT:
                why = "hang"
            elif peak > RSS_KILL_KIB:
                why = "memory"
            elif out_path.stat().st_size > OUTPUT_LIMIT:
                why = "output"
            if why:
                run.killed = why
                proc.kill()
                pid, wstatus, usage = os.wait4(proc.pid, 0)
                break
            time.sleep(POLL)
        run.wall = time.monotonic() - start
        proc.returncode = os.waitstatus_to_exitcode(wstatus)  # reaped here, not by Popen
    run.status = proc.returncode
    run.rss_kib = max(peak, usage.ru_maxrss)
    run.seconds = usage.ru_utime + usage.ru_stime
    run.stderr = err_path.read_bytes().decode("utf-8", "replace")
    run.stdout_bytes = out_path.stat().st_size
    run.problems = judge(run)
    return run


def judge(run: Run) -> list[str]:
    """What is wrong with a finished run (empty: nothing)."""
    bad = []
    if run.killed == "time":
        bad.append(f"time: killed after {TIME_LIMIT:g} s of CPU time")
    elif run.killed == "hang":
        bad.append(f"time: killed after {WALL_LIMIT:g} s of wall time ({run.seconds:.1f} s of CPU)")
    elif run.killed == "memory":
        bad.append(f"memory: killed at {run.rss_kib / 1024:.0f} MB resident")
    elif run.killed == "output":
        bad.append(f"output: more than {OUTPUT_LIMIT >> 20} MB on stdout")
    if not run.killed:
        if run.seconds > TIME_LIMIT:
            bad.append(f"time: {run.seconds:.1f} s of CPU time")
        if run.status not in OK_STATUSES:
            bad.append(f"exit: status {run.status}")
        if run.rss_kib > RSS_LIMIT_KIB:
            bad.append(f"memory: peak {run.rss_kib / 1024:.0f} MB resident")
    err = run.stderr
    if "Traceback" in err:
        bad.append("traceback")
    if "internal error" in err:
        bad.append("internal error: " + _first(err, "internal error"))
    if run.killed:
        return bad
    # what dpcalc says of long work (its estimate, a wait for a ledger's lock, how far an interrupted job got)
    lines = [ln for ln in err.splitlines() if not ln.startswith(NOTICE)]
    if err and not err.endswith("\n"):
        bad.append("stderr: does not end with a line end")
    if run.status in (1, 2):
        if len(lines) != 1 or not lines[0].startswith("Error: "):
            bad.append(
                f"stderr: exit {run.status} needs exactly one 'Error: ' line, got {len(lines)}: {err[:160]!r}"
            )
    elif run.status in (0, 3, 130):
        body = lines[:-1] if run.status == 3 else lines
        if run.status == 3 and (not lines or not lines[-1].startswith("Error: ")):
            bad.append(f"stderr: exit 3 must end with one 'Error: ' line: {err[:160]!r}")
        if run.status == 130:  # a terminal's ^C may leave a line end
            body = [ln for ln in body if ln]
        odd = [ln for ln in body if not ln.startswith(("Note: ", "Warning: "))]
        if odd:
            bad.append(f"stderr: a line that is not a one-line Note/Warning: {odd[0][:160]!r}")
    return bad


def _first(text: str, needle: str) -> str:
    for line in text.splitlines():
        if needle in line:
            return line.strip()[:200]
    return ""


# -- one case --------------------------------------------------------------------------------------
@dataclass
class Result:
    case: str
    runs: list[Run]
    setup_error: str = ""
    file_problems: list[str] = field(default_factory=list)  # from :unchanged

    @property
    def problems(self) -> list[str]:
        out = [self.setup_error] if self.setup_error else []
        out += self.file_problems
        for i, r in enumerate(self.runs):
            where = f"step {i + 1}: " if len(self.runs) > 1 else ""
            out += [where + p for p in r.problems]
        return out

    @property
    def seconds(self) -> float:
        return sum(r.seconds for r in self.runs)

    @property
    def wall(self) -> float:
        return sum(r.wall for r in self.runs)

    @property
    def rss_kib(self) -> int:
        return max((r.rss_kib for r in self.runs), default=0)


def run_case(line: str) -> Result:
    result = Result(line, [])
    held: list = []
    snap: dict = {}
    with tempfile.TemporaryDirectory(prefix="dpcalc-hostile-") as tmp:
        cwd = Path(tmp)
        for f in DATA.iterdir():
            shutil.copy(f, cwd)
        try:
            for step in line.split(" && "):
                words = shlex.split(step)
                if words and words[0].startswith(":"):
                    result.file_problems += _action(words, cwd, held, snap)
                    continue
                stdin_word = None
                if words and words[-1].startswith("<"):
                    stdin_word = words.pop()[1:]
                result.runs.append(run_dpcalc(words, cwd, stdin_word))
        except Exception as exc:  # a broken case line, not a dpcalc failure
            result.setup_error = f"setup: {type(exc).__name__}: {exc}"
        finally:
            for lock in held:
                lock.release()
            _make_removable(cwd)
    return result


def _make_removable(root: Path) -> None:
    for dirpath, dirnames, _ in os.walk(root):
        for d in dirnames:
            os.chmod(os.path.join(dirpath, d), 0o755)


def run_all(lines: list[str], jobs: int | None = None) -> list[Result]:
    """Every case, ``jobs`` at a time (default: 2 to 4, by the cores)."""
    if jobs is None:
        jobs = max(2, min(4, os.cpu_count() or 2))
    with ThreadPoolExecutor(jobs) as pool:
        return list(pool.map(run_case, lines))


def report(results: list[Result]) -> str:
    failed = [r for r in results if r.problems]
    out = [f"{len(failed)} of {len(results)} hostile cases fail:"]
    for r in failed:
        out.append(f"  {r.case}")
        out += [f"      {p}" for p in r.problems]
        out.append(f"      ({r.seconds:.1f} s CPU, {r.wall:.1f} s wall, {r.rss_kib / 1024:.0f} MB)")
    return "\n".join(out)


def main(argv: list[str]) -> int:
    """``python tests/hostile/harness.py [-j N] [--cases FILE] [--share K] [--json FILE] [SUBSTRING ...]``:
    replay the (matching) cases, print the failures."""
    signal.signal(signal.SIGINT, signal.default_int_handler)
    jobs = None
    if argv[:1] == ["-j"]:
        jobs, argv = int(argv[1]), argv[2:]
    source = CASES
    if argv[:1] == ["--cases"]:  # the cases of another file (e.g. the failures of an earlier replay)
        source, argv = Path(argv[1]), argv[2:]
    share = 1
    if argv[:1] == ["--share"]:  # the issue's sections and every k-th case of the rest (cases())
        share, argv = int(argv[1]), argv[2:]
    json_path = None
    if argv[:1] == ["--json"]:  # also write each case's problems, CPU seconds and peak memory as JSON
        json_path, argv = Path(argv[1]), argv[2:]
    lines = [c for c in cases(source, share) if not argv or any(a in c for a in argv)]
    start = time.monotonic()
    results = run_all(lines, jobs)
    if json_path is not None:
        rows = [
            {"case": r.case, "problems": r.problems, "seconds": r.seconds, "report": report([r])}
            for r in results
        ]
        json_path.write_text(json.dumps(rows), encoding="utf-8")
    print(report(results))
    slow = sorted(results, key=lambda r: -r.seconds)[:10]
    print("slowest:", ", ".join(f"{r.seconds:.1f}s {r.case[:60]}" for r in slow))
    cpu = sum(r.seconds for r in results)
    print(f"{len(results)} cases in {time.monotonic() - start:.0f} s ({cpu:.0f} s of CPU in dpcalc runs)")
    return 1 if any(r.problems for r in results) else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
