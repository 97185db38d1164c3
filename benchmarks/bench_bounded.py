"""Benchmarks of the questions issue 27 found unbounded, as a user runs them (whole processes).

1. ``audit`` one-run with large audits: 10^6 canaries, 10^5 guesses, 6·10^4 right (was about 4.4 s:
   the binomial tail summed over all v terms at each of 541 ε) and 10^9 guesses (was past 9 GB); now the
   tail is summed on a window of about 11·√r terms around the binomial's mean and most ε are decided
   from cheap bounds (docs/math.md §11.4).
2. ``sgd-epsilon --accountant pld`` where ε = 0 (δ = 0.236, σ = 0.5863, q = 0.0006997, T = 2609: was
   11 s and 450 MB): the rdp bound certifies ε = 0, the pld row is [0, 0] without a PLD (docs/math.md
   §7.4), beside the rdp row of the same run for reference.
3. Up-front refusals (each a one-line error, exit 2): ``--rdp-curve --alphas 1e20`` (never returned),
   ``--target-epsilon 1e-300 --accountant pld`` (minutes), random allocation in rounds of 10^6 steps
   (14 GB, MemoryError), ``--mc-samples 1e12`` (MemoryError), a langevin sweep of 2·10^5 steps (1.6 GB).

Each row: min / median / max wall time of N runs after one untimed warm-up run and the peaks of the
process tree's RSS and PSS (see ``_measure.py``); the target is 10 s and 500 MB per command (issue 27).

Run: ``python benchmarks/bench_bounded.py [--repeat 3]`` (about a minute; Linux).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _measure import MB, ensure_bytecode, measure  # noqa: E402

DPCALC = [sys.executable, "-m", "dpcalc"]
CASES = [
    (
        "audit one-run m=1e6 r=1e5 v=6e4",
        ["audit", "--canaries", "1e6", "--guesses", "1e5", "--correct", "6e4"],
    ),
    ("audit one-run m=r=1e9 v=6e8", ["audit", "--canaries", "1e9", "--guesses", "1e9", "--correct", "6e8"]),
    ("sgd-epsilon pld, ε = 0 (δ = 0.236)", ["sgd-epsilon", "--accountant", "pld"]),
    ("sgd-epsilon rdp, same run", ["sgd-epsilon", "--accountant", "rdp"]),
    ("refused: --rdp-curve --alphas 1e20", ["sgd-epsilon", "--rdp-curve", "--alphas", "2,1e20"]),
    (
        "refused: --target-epsilon 1e-300 pld",
        ["sgd-epsilon", "--target-epsilon", "1e-300", "--accountant", "pld"],
    ),
    (
        "refused: allocation rounds of 1e6",
        ["sgd-epsilon", "--sampling", "random-allocation", "--accountant", "pld"],
    ),
    ("refused: --mc-samples 1e12", ["sgd-epsilon", "--mc-samples", "1000000000000"]),
    ("refused: langevin 2e5-step sweep", ["langevin"]),
]
RUN = ["--sigma", "0.5863", "--sample-rate", "0.0006997", "--steps", "2609", "--delta", "0.236"]
TAILS = {
    "audit": ["--delta", "1e-5"],
    "sgd-epsilon pld": RUN,
    "sgd-epsilon rdp": RUN,
    "refused: --rdp-curve": ["--sigma", "1.1", "--sample-rate", "0.01", "--steps", "1000"],
    "refused: --target-epsilon": ["--sample-rate", "0.01", "--steps", "1000", "--delta", "1e-5"],
    "refused: allocation": ["--sigma", "1.1", "--sample-rate", "1e-6", "--steps", "1e7", "--delta", "1e-5"],
    "refused: --mc-samples": [
        *(
            "--sigma",
            "1.1",
            "--batch-size",
            "256",
            "--dataset-size",
            "60000",
            "--epochs",
            "1",
            "--delta",
            "1e-5",
        ),
        *("--sampling", "balls-in-bins", "--accountant", "mc"),
    ],
    "refused: langevin": [
        *(
            "--sigma",
            "0.02",
            "--sensitivity",
            "4",
            "--lr",
            "0.02",
            "--strong-convexity",
            "1",
            "--smoothness",
            "1",
        ),
        *("--dataset-size", "5000", "--steps", "1:200000:1", "--delta", "1e-5"),
    ],
}


def _tail(label):
    return next(v for k, v in TAILS.items() if label.startswith(k))


def _refused(cmd, repeat):
    """``(walls, max_rss, exit codes, stderr lines)`` of a command expected to refuse (``_measure.run``
    accepts exit status 0 only): timed here, peak RSS from ``wait4``."""
    walls, rss, codes, lines = [], 0, set(), 0
    for _ in range(repeat + 1):  # the first run warms up
        t0 = time.perf_counter()
        proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        err = proc.stderr.read()
        _, status, usage = os.wait4(proc.pid, 0)
        walls.append(time.perf_counter() - t0)
        rss = max(rss, usage.ru_maxrss * 1024)
        codes.add(os.waitstatus_to_exitcode(status))
        lines = max(lines, len(err.decode(errors="replace").strip().splitlines()))
    return walls[1:], rss, codes, lines


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    ensure_bytecode()
    print(f"   {'':38s} {'min':>8s} {'median':>8s} {'max':>8s} {'peak RSS':>9s}  exit  verdict")
    for label, cmd in CASES:
        full = [*DPCALC, *cmd, *_tail(label), "-f", "csv"]
        if label.startswith("refused"):
            walls, rss, codes, lines = _refused(full, args.repeat)
            ok = max(walls) <= 10 and rss <= 500 * MB and codes == {2} and lines == 1
            exit_text = ",".join(map(str, sorted(codes)))
        else:
            runs, _ = measure(full, args.repeat)
            walls, rss = runs.walls, runs.tree_rss
            ok = max(walls) <= 10 and rss <= 500 * MB
            exit_text = "0"
        times = f"{min(walls):7.3f}s {statistics.median(walls):7.3f}s {max(walls):7.3f}s"
        print(f"   {label:38s} {times} {rss / MB:6.0f} MB  {exit_text:4s}  {'met' if ok else 'MISSED'}")


if __name__ == "__main__":
    main()
