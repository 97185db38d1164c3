"""The largest sweep each command accepts, run as a user runs it: CPU seconds and peak memory.

Every sweep is refused up front past a limit set from its measured cost per row (issue 27): the
budget :data:`dpcalc.commands.sweep.WORK_SECONDS` (5 s) divided by the constants of
``dpcalc.commands.sgd.work`` (``SECONDS_EACH``, ``SEARCH_FACTOR``..., and each sampler's ``rdp_seconds`` in
``dpcalc.engine.samplers``) and of
``dpcalc.commands.convert.command`` (``POINT_SECONDS_EACH``, ``FROM_DP_MAX_ROWS``).  Each case here is a sweep of
about its limit; the target is under 10 s of CPU (the process and its workers) and 500 MB, so a
constant that is too small shows as a case past the target.  Measured when the limits were set
(2 shared cores): sgd-epsilon rdp about 350-470 configurations a second under Poisson sampling (a
--noise-multiplier or --sample-rate sweep: a new Rényi curve each), 50 under fixed-size, 2-3 under
balls-in-bins and random allocation, pld about 10; convert about 28,000 points a second with the
optimal conversion, 300,000 with the closed forms; convert --from dp about 4 KB a row with the
optimal conversion (10^6 rows: 0.9 GB with balle).

Run: ``python benchmarks/bench_sweep_limits.py`` (a few minutes; Linux).
"""

from __future__ import annotations

import os
import subprocess
import sys

DPCALC = [sys.executable, "-m", "dpcalc"]
RUN = ["--steps", "1000", "--delta", "1e-5", "-f", "csv"]
CASES = [
    ("sgd rdp poisson, 1,986 σ", ["sgd-epsilon", "--sigma", "0.5:5:x1.00116", "--sample-rate", "0.01", *RUN]),
    ("sgd rdp poisson, 1,995 q", ["sgd-epsilon", "--sigma", "1", "--sample-rate", "1e-3:0.5:x1.00312", *RUN]),
    (
        "sgd rdp fixed-size, 200 σ",
        [
            "sgd-epsilon",
            "--sigma",
            "0.5:5:x1.0116",
            "--sample-rate",
            "0.01",
            "--sampling",
            "fixed-size",
            *RUN,
        ],
    ),
    (
        "sgd rdp balls-in-bins, 10 σ",
        [
            "sgd-epsilon",
            "--sigma",
            "0.5:5:x1.29",
            "--sample-rate",
            "0.01",
            "--sampling",
            "balls-in-bins",
            *RUN,
        ],
    ),
    (
        "sgd pld, 50 σ",
        ["sgd-epsilon", "--sigma", "0.5:5:x1.048", "--sample-rate", "0.01", "--accountant", "pld", *RUN],
    ),
    (
        "sgd rdp, 20 q searched",
        [
            "sgd-epsilon",
            "--target-epsilon",
            "0.5:5:x1.125",
            "--sigma",
            "1",
            "--delta",
            "1e-5",
            "--steps",
            "1000",
        ],
    ),
    (
        "convert optimal, 99,900 points",
        ["convert", "--alpha", "2:1000:1", "--rdp", "0.01:1:0.01", "--delta", "1e-5"],
    ),
    (
        "convert balle, 999,000 points",
        ["convert", "--alpha", "2:1000:1", "--rdp", "0.001:1:0.001", "--delta", "1e-5", "--method", "balle"],
    ),
    (
        "convert --from dp optimal, 19,999",
        ["convert", "--from", "dp", "--alpha", "2:20000:1", "--epsilon", "1"],
    ),
    (
        "convert --from dp balle, 199,999",
        ["convert", "--from", "dp", "--alpha", "2:2e5:1", "--epsilon", "1", "--method", "balle"],
    ),
]
TAILS = {"convert": ["--delta", "1e-5", "-f", "csv"]}


def measure(args: list[str]) -> tuple[float, float, int]:
    """CPU seconds (the process and its reaped workers), peak RSS in MB of its largest process, exit status."""
    with open(os.devnull, "wb") as null:
        proc = subprocess.Popen([*DPCALC, *args], stdout=null, stderr=subprocess.PIPE)
        _, status, usage = os.wait4(proc.pid, 0)
        proc.returncode = os.waitstatus_to_exitcode(status)
        err = proc.stderr.read().decode()
    if proc.returncode != 0:
        print(f"   exit {proc.returncode}: {err.strip()[:200]}")
    return usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1e3, proc.returncode


def main() -> None:
    print(f"{'case':36} {'cpu s':>7} {'peak MB':>8}")
    for name, args in CASES:
        if args[0] == "convert" and "--delta" not in args:
            args = [*args, *TAILS["convert"]]
        elif "-f" not in args:
            args = [*args, "-f", "csv"]
        cpu, rss, _ = measure(args)
        print(f"{name:36} {cpu:7.2f} {rss:8.0f}")


if __name__ == "__main__":
    main()
