"""Benchmark: heavy work spread over processes or a dask cluster (issue 40), whole processes, peak memory.

    python benchmarks/bench_scale.py [--quick] [--repeat 3] [--only sweep,memory,mc,matrix]
                                     [--jax-python /tmp/jaxenv/bin/python]

Every row is a fresh ``dpcalc`` process with the default flags but those named (start-up, imports, the pool
or the cluster connection and the CSV written to /dev/null all count), timed by :mod:`_measure` (wall time
from spawn to reap) and run under ``/usr/bin/time`` for the CPU seconds of the whole tree (user + sys of the
process and the pool workers it reaped).  Memory, as :mod:`_measure` reads it: ``max MB`` is the peak RSS of
the largest single process of the tree (``getrusage(RUSAGE_CHILDREN).ru_maxrss``), ``tree MB`` the peak of
the tree's summed PSS polled every 20 ms (pages shared by forked workers split between them).  The
processes of a dask cluster are not the command's children: their peak RSS is polled the same way, apart.
Pairs are run in turn (A B A B ...) and their ratios taken pair by pair, so that a drift of the machine's
speed cancels; the medians are quoted.  The polling takes CPU (more from two workers than from one: it made
the 100k sweep's ``--jobs 2``/``--jobs 1`` ratio 0.674 where unpolled runs give 0.527), so the timed rounds of
a pair are not polled: the memory of a pair's rows comes from its untimed warm-up round.

1. ``sweep``: the 100k sweep (101,101 rows of ``--method rdp``: 91 sample rates × 101 noise multipliers × 11
   step counts) with ``--jobs 1``, ``--jobs 2`` and ``--scheduler`` on a local dask cluster of 2 single-thread
   workers that this script starts (``dask scheduler``, ``dask worker --nworkers 2 --nthreads 1``) and
   stops.  Issue 40's targets: ``--jobs 2`` at most 1/1.7 of ``--jobs 1``; the cluster at most 15% over
   ``--jobs 2``.
2. ``memory``: a sweep of 1,020,201 rows (the 100k sweep with 111 step counts, 100 to 10^7 at ×1.11) with
   the default flags (every core): time and peak memory per process (target: 500 MB a process).
3. ``mc``: balls-in-bins DP-SGD by Monte Carlo (σ = 1, q = 0.01, 1000 steps, δ = 1e-6), N samples per
   direction (2N in all), ``--jobs 1`` and ``--jobs 2``: samples a second per core and the ratio (target
   1/1.7).  Beside it, with ``--jax-python`` (an interpreter that has jax_privacy): jax_privacy's Monte Carlo
   (``experimental.monte_carlo.sample_generation.get_privacy_loss_sample`` for BallsInBinsSampling(1000, 100),
   ``c_col = [1]``, both directions, whole process; it has no parallel mode).
4. ``matrix``: the guide's BandMF-under-balls-in-bins example (docs/guide/matrix.md) (``matrix --strategy identity --strategy
   sqrt:bands=4 --steps 400 --participation balls-in-bins:b=100 --noise-multiplier 2``) at δ = 1e-6 with the
   samples that certify δ = 1e-6 (read off the note of a short run's inf row), with ``--jobs 1`` and the
   default (every core; a dpcalc without ``matrix --jobs``: 1 process is ``taskset -c 0``, since dpcalc uses
   the cores it may run on).  A run whose extrapolation (a tenth of the samples, timed) is past 5 minutes is
   extrapolated, not run.

``--quick``: a sweep of 18,382 rows, a 10^5-row memory sweep, 10^5 Monte Carlo samples a direction, the
matrix example at a tenth of its samples; one run each.

Measured with ``--repeat 2`` (2 cores, x86_64, Python 3.11.7, 2026-12-05).  The machine was NOT quiet: other
sessions' test suites ran throughout (load average 5-9 on 2 cores), and the kernel shares the CPU between
sessions (``sched_autogroup_enabled`` = 1), so this session got half a core to one core whether it ran 1 process
or 2: the wall times are 2-3× the CPU seconds and the ``--jobs`` ratios below measure that share, not dpcalc.
The CPU seconds and the memory hold.

====================================  =======  =======  ===========  ========================================
case                                  wall s   CPU s    largest MB   notes
====================================  =======  =======  ===========  ========================================
sweep 101,101 rows --jobs 1              97.8     43.6          102
sweep 101,101 rows --jobs 2             101.1     47.4           94  ratio 1.03 (pairs 1.030, 1.037); tree 159
sweep --scheduler, 2 dask workers        86.4      2.2           74  0.90 × --jobs 2 (pairs 1.14, 0.66);
                                                                     dask workers 166 MB each at most,
                                                                     scheduler + nannies + workers 492 MB
sweep 1,020,201 rows, default flags     345.3    200.4          100  2 workers; tree PSS 188 MB
mc 2 × 800,000 samples --jobs 1         111.4     29.4          148  54,400 samples per CPU second
mc 2 × 800,000 samples --jobs 2          79.3     31.5          123  50,700 per CPU s; ratio 0.92 (0.46, 1.38)
jax_privacy mc 2 × 10,000 samples        22.3     10.9          402  899 samples/s (one process; jax import)
matrix example, 3·10^6 a direction       38.8     29.1          228  --jobs 1; ε 1.066 / 2.616 (identity /
                                                                     sqrt:bands=4), estimates 0.830 / 1.984
matrix example, same, default flags      56.5     32.9          198  2 processes (tree PSS 395 MB)
====================================  =======  =======  ===========  ========================================


A second pairing of the two ``--jobs`` pairs (3 runs each in turn after a warm-up, load average about 6): the
sweep 46.9 s wall / 44.3 CPU s with ``--jobs 1``, 49.0 s / 46.1 CPU s with ``--jobs 2`` (ratio 1.07, 90-97 MiB
the largest process); Monte Carlo 31.6 s / 29.7 CPU s and 32.8 s / 31.6 CPU s (ratio 1.03; 54,000 and
50,600 samples per CPU second).  During the ``--jobs 2`` runs both workers were runnable (state R) in every
sample while they got 0.52 and 0.44 of a core: the session's share of the machine, one core, was the limit,
not the pool (the parent spent its time waiting for results; writing the CSV took a few percent).  The cost
of the second process is 4-7% more CPU (fork, each worker's own start, the results pickled back), so on two
free cores ``--jobs 2`` would take about half the CPU seconds plus the serial part (about 0.53 of ``--jobs
1`` for both pairs: a projection from the CPU seconds, not a measurement).

The matrix example is 2 strategies × 2 directions × 3·10^6 = 1.2·10^7 samples of 4 draws: about 410,000
samples per CPU second.  The samples that certify δ = 1e-6 (3·10^6 a direction, the note of an inf row) are
the floor below which ε is inf, not the 1.2·10^8 of the tight-ε figure of docs/guide/sgd-epsilon.md (Chua et al., Fact 4.2): that
is 40 times the work, about 1,170 CPU seconds (20 minutes on one core, 10 on two, extrapolated).

Measured again on 2026-12-07 (quiet machine, after issue 44's speed work; ``--only sweep --repeat 3``, the pairs' timed
rounds unpolled; ``--only memory``): the 101,101-row sweep ``--jobs 1`` 10.67 s, ``--jobs 2`` 5.85 s (ratio 0.546,
1/1.83), ``--scheduler`` 6.67 s (1.129 × ``--jobs 2``; cluster 373 MB); 1,020,201 rows with the default flags
34.7 s, 61.0 CPU s, 86 MB the largest process.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(__file__))

from _measure import MB, _memory_kib, _tree, ensure_bytecode, run  # noqa: E402

DPCALC = [sys.executable, "-m", "dpcalc"]
TIME = ["/usr/bin/time", "-f", "BENCH_CPU %U %S"]

STEPS_11 = "100,300,1000,3000,10000,30000,100000,300000,1000000,3000000,10000000"
SWEEP = [
    "sgd-epsilon",
    "--sample-rate",
    "0.001:0.2:x1.06",
    "--noise-multiplier",
    "0.5:5:0.045",
    "--steps",
    STEPS_11,
    "--delta",
    "1e-5",
    "-f",
    "csv",
]
SWEEP_QUICK = [*SWEEP[:6], "100,10000", *SWEEP[7:]]
#: about 10^6 rows: the 100k sweep with 111 step counts (100 to 10^7, ×1.11)
MEMORY = [*SWEEP[:6], "100:10000000:x1.11", *SWEEP[7:]]


def mc(samples: int) -> list[str]:
    return [
        "sgd-epsilon",
        "--sigma",
        "1",
        "--sample-rate",
        "0.01",
        "--steps",
        "1000",
        "--delta",
        "1e-6",
        "--sampling",
        "balls-in-bins",
        "--method",
        "mc",
        "--mc-samples",
        str(samples),
        "-f",
        "csv",
    ]


def matrix(samples: int) -> list[str]:
    return [
        "matrix",
        "--strategy",
        "identity",
        "--strategy",
        "sqrt:bands=4",
        "--steps",
        "400",
        "--participation",
        "balls-in-bins:b=100",
        "--noise-multiplier",
        "2",
        "--delta",
        "1e-6",
        "--mc-samples",
        str(samples),
        "-f",
        "csv",
        "--columns",
        "strategy,method,epsilon,epsilon_estimate,confidence,samples,note",
    ]


#: jax_privacy's Monte Carlo accountant for the ``mc`` pair, both directions (argv: samples a direction)
JAX_MC = """\
import sys
import numpy as np
from jax_privacy import batch_selection
from jax_privacy.experimental.monte_carlo import delta_calculation, sample_generation
n = int(sys.argv[1])
strategy = batch_selection.BallsInBinsSampling(iterations=1000, cycle_length=100)
c_col = np.array([1.0])
pos, _ = sample_generation.get_privacy_loss_sample(strategy, 1.0, c_col, seed=1, positive_sample=True, num_samples=n)
neg, _ = sample_generation.get_privacy_loss_sample(strategy, 1.0, c_col, seed=2, positive_sample=False, num_samples=n)
print(max(delta_calculation.delta_from_epsilon_and_samples(2.0, s) for s in (pos, neg)))
"""


# ------------------------------------------------------------------------------------------------- measuring


class Row:
    """One whole-process run: wall, CPU of the tree, peak memory."""

    def __init__(self, r, cluster_peak=None):
        self.wall = r.wall
        m = re.findall(r"BENCH_CPU ([\d.]+) ([\d.]+)", r.stderr)
        self.cpu = float(m[-1][0]) + float(m[-1][1]) if m else float("nan")
        self.max_rss = r.max_rss
        self.tree_pss = r.tree_pss
        self.tree_rss = r.tree_rss
        self.procs = r.max_procs
        self.stdout = r.stdout
        self.stderr = r.stderr
        self.cluster = cluster_peak  # (largest process RSS, summed RSS) of the cluster's processes, bytes


def once(words, prefix=(), keep=False, cluster=None, memory=True) -> Row:
    """One run of dpcalc ``words`` (``prefix``: e.g. taskset); ``cluster``: pids whose memory is polled too;
    ``memory``: poll the memory (it takes CPU: a run whose time is compared is not polled)."""
    poll = _Poll(cluster) if cluster and memory else None
    if poll:
        poll.start()
    try:
        r = run(
            [*TIME, *prefix, *DPCALC, *words], stdout="pipe" if keep else "devnull", keep=keep, poll=memory
        )
    finally:
        peak = poll.stop() if poll else None
    return Row(r, peak)


class _Poll(threading.Thread):
    """Peak RSS of a set of process trees (a dask cluster), polled every 50 ms."""

    def __init__(self, roots):
        super().__init__(daemon=True)
        self.roots, self.done = roots, threading.Event()
        self.largest = self.total = 0

    def run(self):
        while True:
            rss = [_memory_kib(p)[0] * 1024 for root in self.roots for p in _tree(root)]
            self.largest = max(self.largest, max(rss, default=0))
            self.total = max(self.total, sum(rss))
            if self.done.wait(0.05):
                return

    def stop(self):
        self.done.set()
        self.join()
        return self.largest, self.total


def paired(cases: dict, repeat: int, warmup: bool = True) -> dict[str, list[Row]]:
    """``repeat`` rounds of every case in turn (A B C, A B C, ...) after one untimed round, which polls the
    memory (without ``warmup``: a polled round after them); the timed rounds are not polled (the polling takes
    CPU from the processes timed, more from several workers than from one) and carry that round's memory."""
    polled = {}

    def poll_round():
        for name, (words, kw) in cases.items():
            polled[name] = once(words, **kw)

    if warmup:
        poll_round()
    out = {name: [] for name in cases}
    for _ in range(repeat):
        for name, (words, kw) in cases.items():
            out[name].append(once(words, **kw, memory=False))
    if not warmup:
        poll_round()
    for name, rows in out.items():
        mem = polled[name]
        for r in rows:
            r.tree_pss, r.tree_rss, r.procs, r.cluster = mem.tree_pss, mem.tree_rss, mem.procs, mem.cluster
            r.max_rss = max(r.max_rss, mem.max_rss)
    return out


def med(xs):
    return statistics.median(xs)


def fmt(name, rows: list[Row], extra=""):
    walls = [r.wall for r in rows]
    cpu = med([r.cpu for r in rows])
    mx = max(r.max_rss for r in rows) / MB
    pss = max(r.tree_pss for r in rows) / MB
    procs = max(r.procs for r in rows)
    return (
        f"{name:<34} {med(walls):8.2f} {min(walls):7.2f} {max(walls):7.2f} {cpu:7.1f} {mx:7.0f} {pss:7.0f}"
        f" {procs:5d}  {extra}"
    )


HEAD = (
    f"{'case':<34} {'median':>8} {'min':>7} {'max':>7} {'cpu s':>7} {'max MB':>7} {'tree MB':>7} {'procs':>5}"
)


def load() -> str:
    a, b, c = os.getloadavg()
    return f"load average {a:.2f} {b:.2f} {c:.2f}"


# ----------------------------------------------------------------------------------------------- the cluster


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Cluster:
    """``dask scheduler`` and ``dask worker --nworkers 2 --nthreads 1`` on 127.0.0.1, stopped on exit."""

    def __init__(self, workers=2):
        self.workers = workers
        self.procs = []

    def __enter__(self):
        dask = shutil.which("dask") or "dask"
        port = _free_port()
        self.address = f"tcp://127.0.0.1:{port}"
        self.log = tempfile.TemporaryFile()
        self.procs.append(
            subprocess.Popen(
                [dask, "scheduler", "--host", "127.0.0.1", "--port", str(port), "--no-dashboard"],
                stdout=self.log,
                stderr=self.log,
            )
        )
        self.procs.append(
            subprocess.Popen(
                [dask, "worker", self.address, "--nworkers", str(self.workers), "--nthreads", "1"]
                + ["--no-dashboard"],
                stdout=self.log,
                stderr=self.log,
            )
        )
        import distributed

        deadline = time.monotonic() + 60
        while True:
            try:
                with distributed.Client(self.address, timeout=5) as c:
                    c.wait_for_workers(self.workers, timeout=60)
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.5)
        return self

    @property
    def pids(self):
        return [p.pid for p in self.procs]

    def __exit__(self, *exc):
        for p in reversed(self.procs):
            p.terminate()
        for p in reversed(self.procs):
            try:
                p.wait(20)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
        self.log.close()


# ------------------------------------------------------------------------------------------------- the cases


def bench_sweep(args):
    words = SWEEP_QUICK if args.quick else SWEEP
    print(f"\n1. sweep of {'18,382' if args.quick else '101,101'} rows, rdp; {load()}")
    with Cluster() as cl:
        cases = {
            "sweep --jobs 1": ([*words, "--jobs", "1"], {}),
            "sweep --jobs 2": ([*words, "--jobs", "2"], {}),
            "sweep --scheduler (2 workers)": ([*words, "--scheduler", cl.address], {"cluster": cl.pids}),
        }
        res = paired(cases, args.repeat)
    a, b, c = res.values()
    r21 = [y.wall / x.wall for x, y in zip(a, b)]
    rc2 = [z.wall / y.wall for y, z in zip(b, c)]
    print(HEAD)
    print(fmt("sweep --jobs 1", a))
    print(
        fmt(
            "sweep --jobs 2", b, f"jobs2/jobs1 {med(r21):.3f} (1/{1 / med(r21):.2f}; target <= 1/1.7 = 0.588)"
        )
    )
    big, total = max(z.cluster[0] for z in c) / MB, max(z.cluster[1] for z in c) / MB
    print(
        fmt(
            "sweep --scheduler (2 workers)",
            c,
            f"scheduler/jobs2 {med(rc2):.3f} ({100 * (med(rc2) - 1):+.1f}%; target <= +15%)",
        )
    )
    print(
        f"{'':34} cluster processes: largest {big:.0f} MB, all (scheduler, nannies, workers) {total:.0f} MB"
    )
    print(
        f"   pairs jobs2/jobs1 {' '.join(f'{x:.3f}' for x in r21)}; scheduler/jobs2 {' '.join(f'{x:.3f}' for x in rc2)}"
    )
    print(f"   after: {load()}")


def bench_memory(args):
    words = SWEEP if args.quick else MEMORY
    print(f"\n2. memory: a sweep of {'101,101' if args.quick else '1,020,201'} rows, default flags; {load()}")
    rows = [once(words) for _ in range(1 if args.quick else args.memory_repeat)]
    print(HEAD)
    print(fmt("sweep, default flags", rows, "target: 500 MB a process"))
    print(f"   after: {load()}")


def bench_mc(args):
    n = 100_000 if args.quick else args.mc_samples
    print(f"\n3. Monte Carlo: balls-in-bins DP-SGD, {n:,} samples a direction ({2 * n:,} in all); {load()}")
    cases = {f"mc --jobs {j}": ([*mc(n), "--jobs", str(j)], {}) for j in (1, 2)}
    res = paired(cases, 1 if args.quick else args.repeat)
    a, b = res.values()
    ratio = [y.wall / x.wall for x, y in zip(a, b)]
    print(HEAD)
    for j, rows in ((1, a), (2, b)):
        rate = 2 * n / med([r.wall for r in rows])
        cpu_rate = 2 * n / med([r.cpu for r in rows])
        extra = f"{rate:,.0f} samples/s, {rate / j:,.0f} /s/core ({cpu_rate:,.0f} per CPU second)"
        if j == 2:
            extra += f"; jobs2/jobs1 {med(ratio):.3f} (1/{1 / med(ratio):.2f})"
        print(fmt(f"mc --jobs {j}", rows, extra))
    print(f"   pairs jobs2/jobs1 {' '.join(f'{x:.3f}' for x in ratio)}")
    if args.jax_python:
        jn = 2_000 if args.quick else args.jax_samples
        with tempfile.NamedTemporaryFile("w", suffix=".py", delete=False) as f:
            f.write(JAX_MC)
        try:
            jr = [run([*TIME, args.jax_python, f.name, str(jn)]) for _ in range(1 if args.quick else 2)]
        finally:
            os.unlink(f.name)
        rows = [Row(r) for r in jr]
        rate = 2 * jn / med([r.wall for r in rows])
        print(
            fmt(
                f"jax_privacy mc, {jn:,} a direction",
                rows,
                f"{rate:,.0f} samples/s (1 process, its only mode)",
            )
        )
    print(f"   after: {load()}")


def bench_matrix(args):
    print(
        f"\n4. matrix: the guide's BandMF-under-balls-in-bins example (docs/guide/matrix.md) at δ = 1e-6; {load()}"
    )
    short = once(matrix(20_000), keep=True)
    needed = max(
        int(x.replace(",", "")) for x in re.findall(r"([\d,]+) samples per direction would", short.stdout)
    )
    print(f"   samples that certify δ = 1e-6 (the note of a 20,000-sample run): {needed:,} a direction")
    has_jobs = (
        "--jobs" in subprocess.run([*DPCALC, "matrix", "--help"], capture_output=True, text=True).stdout
    )
    ways = {1: (["--jobs", "1"], []) if has_jobs else ([], ["taskset", "-c", "0"]), 2: ([], [])}
    print(HEAD)
    for j, (flags, prefix) in ways.items():
        tenth = max(1000, needed // 10)
        t = once([*matrix(tenth), *flags], prefix=prefix)
        guess = t.wall * needed / tenth  # linear in the samples, fixed costs included (an upper end)
        if args.quick or guess > 300:
            print(
                fmt(
                    f"matrix {tenth:,} samples, {j} proc",
                    [t],
                    f"extrapolated to {needed:,}: {guess:.0f} s, {guess / j:.0f} s a worker",
                )
            )
            continue
        full = once([*matrix(needed), *flags], prefix=prefix, keep=True)
        eps = re.findall(r"^([^,]+),mc,([^,]+),([^,]+),", full.stdout, re.M)
        print(
            fmt(
                f"matrix {needed:,} samples, {j} proc",
                [full],
                f"{full.wall / j:.1f} s a worker; mc ε " + ", ".join(f"{s} {e} (est {m})" for s, e, m in eps),
            )
        )
    print(f"   after: {load()}")


def _autogroup() -> bool:
    try:
        with open("/proc/sys/kernel/sched_autogroup_enabled") as f:
            return f.read().strip() == "1"
    except OSError:
        return False


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="smaller sizes, one run each")
    ap.add_argument("--repeat", type=int, default=3, help="rounds of each pair (after a warm-up round)")
    ap.add_argument("--memory-repeat", type=int, default=1)
    ap.add_argument("--only", default="sweep,memory,mc,matrix")
    ap.add_argument("--mc-samples", type=int, default=800_000, help="Monte Carlo samples a direction")
    ap.add_argument("--jax-python", help="a Python that has jax_privacy (e.g. /tmp/jaxenv/bin/python)")
    ap.add_argument("--jax-samples", type=int, default=10_000)
    args = ap.parse_args()
    if args.quick:
        args.repeat = 1
    ensure_bytecode()
    print(f"{os.cpu_count()} cores; {load()}; wall in s (median, min, max), cpu s of the tree (median)")
    if _autogroup() and os.getloadavg()[0] > (os.cpu_count() or 1):
        print(
            "   WARNING: the machine is busy and the kernel shares the CPU between sessions (sched_autogroup):"
            "\n   this session gets about the same share with 1 or 2 processes, so wall-time ratios of --jobs"
            "\n   are the scheduler's, not dpcalc's; run on a quiet machine (the cpu s column still holds)"
        )
    for part in args.only.split(","):
        {"sweep": bench_sweep, "memory": bench_memory, "mc": bench_mc, "matrix": bench_matrix}[part](args)


if __name__ == "__main__":
    main()
