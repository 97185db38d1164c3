"""Whole-process measurement for the benchmarks: wall time, peak memory of the process tree, stdout timing.

:func:`run` runs one command under a small launcher (``python -S``, about 9 MB) that starts it with
``posix_spawn``, waits for it and reports

* ``wall``: seconds from just before the spawn to the end of the wait, taken in the launcher (so the
  launcher's own start-up is not counted, and the end is not rounded to a polling interval);
* ``max_rss``: the launcher's ``resource.getrusage(RUSAGE_CHILDREN).ru_maxrss`` after the wait: the largest
  single process of the command's tree.  Linux counts into it the memory of the process a child was
  forked from (the launcher), hence the launcher: measured from this interpreter directly, it would
  include this interpreter's own memory;

and, in a run with ``poll=True``, polled every ``interval`` seconds by a thread here over the command's
process and all its descendants (found through the ``PPid`` of every ``/proc/<pid>/stat``):

* ``tree_rss``: the peak of the summed ``VmRSS``.  Pages shared by forked workers count once per process,
  so it is an upper-end estimate of the memory used; a peak shorter than the interval can be missed;
* ``tree_pss``: the peak of the summed ``Pss`` (``/proc/<pid>/smaps_rollup``): shared pages split
  between the processes sharing them, so the sum is the memory the tree really holds;
* with ``stdout="pipe"``: the number of lines written and the time until the second newline (the first
  data row after a header line), read in chunks by a thread as they arrive.

The polling takes CPU (a scan of /proc and each process's ``smaps_rollup``, 50 times a second): on a machine of
two cores busy with the command it made the 10,000-row sweep 12% slower (1.12 s against 1.00 s, medians of 7).
So :func:`measure` times runs that are not polled, and takes the memory from as many polled runs of the same
command, interleaved with them.

Linux only (``/proc``, ``CLOCK_MONOTONIC`` shared between processes).
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field

MB = 1e6


@dataclass
class Run:
    wall: float
    tree_rss: int  # bytes
    tree_pss: int  # bytes
    max_rss: int  # bytes
    max_procs: int
    lines: int | None = None
    first_row: float | None = None
    stdout: str | None = None
    stderr: str = ""


@dataclass
class Runs:
    """Timed runs, and the polled runs their memory comes from (the timed runs themselves when there are none)."""

    runs: list[Run] = field(default_factory=list)
    polled: list[Run] = field(default_factory=list)

    @property
    def _memory(self):
        return self.polled or self.runs

    @property
    def walls(self):
        return [r.wall for r in self.runs]

    @property
    def min(self):
        return min(self.walls)

    @property
    def median(self):
        return statistics.median(self.walls)

    @property
    def max(self):
        return max(self.walls)

    @property
    def tree_rss(self):
        """Largest polled tree sum over the runs (polling can only miss a peak, never inflate it)."""
        return max(r.tree_rss for r in self._memory)

    @property
    def tree_pss(self):
        return max(r.tree_pss for r in self._memory)

    @property
    def max_rss(self):
        return max(r.max_rss for r in self.runs + self.polled)

    @property
    def max_procs(self):
        return max(r.max_procs for r in self._memory)


def _ppids():
    out = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as f:
                stat = f.read()
        except OSError:
            continue
        # pid (comm) state ppid ...; comm may hold spaces and parentheses
        fields = stat[stat.rfind(b")") + 2 :].split()
        out[int(name)] = int(fields[1])
    return out


def _tree(pid):
    children = {}
    for p, pp in _ppids().items():
        children.setdefault(pp, []).append(p)
    tree, todo = [], [pid]
    while todo:
        p = todo.pop()
        tree.append(p)
        todo.extend(children.get(p, ()))
    return tree


def _memory_kib(pid):
    """(VmRSS, Pss) of ``pid`` in KiB; zeros when it is gone or a zombie."""
    rss = pss = 0
    try:
        with open(f"/proc/{pid}/status", "rb") as f:
            for line in f:
                if line.startswith(b"VmRSS:"):
                    rss = int(line.split()[1])
                    break
        with open(f"/proc/{pid}/smaps_rollup", "rb") as f:
            for line in f:
                if line.startswith(b"Pss:"):
                    pss = int(line.split()[1])
                    break
    except OSError:
        pass
    return rss, pss


LAUNCHER = """\
import os, resource, sys, time
t0 = time.clock_gettime(time.CLOCK_MONOTONIC)
pid = os.posix_spawnp(sys.argv[2], sys.argv[2:], os.environ)
_, status = os.waitpid(pid, 0)
t1 = time.clock_gettime(time.CLOCK_MONOTONIC)
maxrss = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
with open(sys.argv[1], "w") as f:
    f.write(f"{t0!r} {t1!r} {maxrss} {os.waitstatus_to_exitcode(status)}")
"""


def ensure_bytecode() -> None:
    """Byte-compile the dpcalc package being measured, as ``pip install .`` does at install time.

    An editable install run with ``PYTHONDONTWRITEBYTECODE`` set (as in some CI images) would otherwise
    compile dpcalc's sources at every start (about 45 ms): a cost a user's installed copy never pays.
    The peers are measured as installed (with their byte code), so dpcalc is too."""
    import compileall

    import dpcalc

    compileall.compile_dir(os.path.dirname(dpcalc.__file__), quiet=1)


def _now():
    return time.clock_gettime(time.CLOCK_MONOTONIC)


def run(cmd, *, stdout="devnull", keep=False, interval=0.02, cwd=None, poll=True):
    """Run ``cmd`` once; ``stdout`` is ``"devnull"`` or ``"pipe"`` (counted, and kept if ``keep``); ``poll``: poll
    the tree's memory (else ``tree_rss``, ``tree_pss`` and ``max_procs`` are 0)."""
    piped = stdout == "pipe"
    done = threading.Event()
    peak = {"rss": 0, "pss": 0, "procs": 0}
    out = {"lines": 0, "first_row": None, "chunks": []}
    with tempfile.TemporaryDirectory() as tmp, open(os.path.join(tmp, "stderr"), "w+b") as err:
        report = os.path.join(tmp, "report")
        proc = subprocess.Popen(
            [sys.executable, "-S", "-c", LAUNCHER, report, *map(str, cmd)],
            stdout=subprocess.PIPE if piped else subprocess.DEVNULL,
            stderr=err,
            cwd=cwd,
        )

        def poll_memory():
            while True:
                mem = [_memory_kib(p) for p in _tree(proc.pid)[1:]]  # the launcher left out
                peak["rss"] = max(peak["rss"], sum(r for r, _ in mem) * 1024)
                peak["pss"] = max(peak["pss"], sum(p for _, p in mem) * 1024)
                peak["procs"] = max(peak["procs"], sum(1 for r, _ in mem if r))
                if done.wait(interval):
                    return

        def read():
            while chunk := proc.stdout.read1(1 << 16):
                out["lines"] += chunk.count(b"\n")
                if out["first_row"] is None and out["lines"] >= 2:
                    out["first_row"] = _now()
                if keep:
                    out["chunks"].append(chunk)

        threads = [threading.Thread(target=poll_memory, daemon=True)] if poll else []
        if piped:
            threads.append(threading.Thread(target=read, daemon=True))
        for th in threads:
            th.start()
        proc.wait()
        done.set()
        for th in threads:
            th.join()
        if piped:
            proc.stdout.close()
        err.seek(0)
        stderr = err.read().decode(errors="replace")
        if proc.returncode != 0 or not os.path.exists(report):
            raise RuntimeError(
                f"launcher of {' '.join(map(str, cmd))} exited with {proc.returncode}:\n{stderr}"
            )
        with open(report) as f:
            t0, t1, maxrss, code = f.read().split()
    if int(code) != 0:
        raise RuntimeError(f"{' '.join(map(str, cmd))} exited with {code}:\n{stderr}")
    return Run(
        wall=float(t1) - float(t0),
        tree_rss=peak["rss"],
        tree_pss=peak["pss"],
        max_rss=int(maxrss) * 1024,  # KiB on Linux
        max_procs=peak["procs"],
        lines=out["lines"] if piped else None,
        first_row=None if out["first_row"] is None else out["first_row"] - float(t0),
        stdout=b"".join(out["chunks"]).decode() if keep else None,
        stderr=stderr,
    )


def measure(cmd, repeat, *, warmup=True, warmup_kw=None, **kw):
    """``repeat`` timed runs of ``cmd``, not polled, each followed by a polled run for the memory, after one
    untimed warm-up run (disk cache, byte-code), which is returned too, as the second item (or None);
    ``warmup_kw`` replaces ``kw`` for it (to keep its output)."""
    first = run(cmd, **(kw if warmup_kw is None else warmup_kw)) if warmup else None
    runs = Runs()
    for _ in range(repeat):
        runs.runs.append(run(cmd, **kw, poll=False))
        runs.polled.append(run(cmd, **kw))
    return runs, first
