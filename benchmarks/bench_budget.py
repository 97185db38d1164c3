"""Benchmark of ``-q`` and the budget verdict on a large sweep (a script, not a test).

    python benchmarks/bench_budget.py [--runs 1] [--orders 50000]

Runs ``dpcalc convert --alpha 2:ORDERS+1:1 --rdp 0.1,0.2 --delta 1e-5 --method all`` (4 × 2 × ORDERS rows,
2 × ORDERS configurations) three ways: ``-f csv`` (the rows, streamed), ``-q`` (one tightest value per
configuration) and ``-q --max-epsilon 100`` (the value and the verdict), and reports the wall time and
the peak memory of each (see ``_measure.py``).

Target: ``-q`` with a budget holds the configurations in bounded memory (:mod:`dpcalc.configs` spills
past 10,000 of them to a temporary SQLite file): its peak stays within 50 MB of the streamed CSV's,
whatever ORDERS.  Exit status 1 if the target is missed.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _measure import MB, ensure_bytecode, measure  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=1)
    ap.add_argument("--orders", type=int, default=50_000)
    args = ap.parse_args()
    ensure_bytecode()
    sweep = [
        sys.executable,
        "-m",
        "dpcalc",
        "convert",
        "--alpha",
        f"2:{args.orders + 1}:1",
        "--rdp",
        "0.1,0.2",
    ]
    sweep += ["--delta", "1e-5", "--method", "all"]
    peaks = {}
    for name, extra in (
        ("csv", ["-f", "csv"]),
        ("-q", ["-q"]),
        ("-q --max-epsilon", ["-q", "--max-epsilon", "100"]),
    ):
        runs, _ = measure(sweep + extra, args.runs, warmup=False)
        peaks[name] = runs.tree_rss
        print(f"{name:18} wall {runs.median:7.2f} s   peak {runs.tree_rss / MB:7.1f} MB")
    ok = peaks["-q --max-epsilon"] <= peaks["csv"] + 50 * MB
    print("target (-q with a budget within 50 MB of csv):", "met" if ok else "MISSED")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
