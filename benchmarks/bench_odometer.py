"""Benchmark of ``dpcalc odometer`` over a long stream of events: the whole process (a script, not a test).

    python benchmarks/bench_odometer.py [--repeat 3] [--events 100000]

Rows (an EVENTS file generated here: ``gaussian:sigma=20+i%7``, δ = 1e-6, the paper's 38 orders, the
plain RDP column by the exact conversion, the default):

* ``N events, a file``: ``dpcalc odometer e.csv --delta 1e-6``;
* ``N events, a pipe``: ``cat e.csv | dpcalc odometer - --delta 1e-6`` (a stream: rows are computed in
  batches of what has arrived, written as each batch is done);
* ``N events, a file, --filter 50``: the filter's verdicts.

Wall time (min / median / max of ``--repeat`` runs after an untimed warm-up), the peak memory of the
process tree and the time to the first data row (:mod:`_measure`).  Before issue 27 the exact conversion
of the plain column was solved at every order for every row, one row at a time: about 8 rows/s
(100,000 events: about 3.5 hours); now about 6 s on one core of the reference machine.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _measure import MB, ensure_bytecode, measure  # noqa: E402

DELTA = "1e-6"


def _dpcalc():
    script = os.path.join(os.path.dirname(sys.executable), "dpcalc")
    return [script] if os.path.exists(script) else [sys.executable, "-m", "dpcalc"]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--events", type=int, default=100_000)
    args = ap.parse_args()
    ensure_bytecode()
    n = args.events
    print(f"odometer EVENTS --delta {DELTA} (whole process)")
    print(f"  {'':36s} {'min':>7s} {'median':>7s} {'max':>7s}    {'peak':>6s}  {'1st row':>7s}  last row")
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "e.csv")
        with open(path, "w") as f:
            f.write("mechanism\n" + "".join(f"gaussian:sigma={20 + i % 7}\n" for i in range(n)))
        dp = " ".join(_dpcalc())
        cases = {
            f"{n} events, a file": [*_dpcalc(), "odometer", path, "--delta", DELTA],
            f"{n} events, a pipe": ["sh", "-c", f"cat {path} | {dp} odometer - --delta {DELTA}"],
            f"{n} events, a file, --filter 50": [
                *_dpcalc(),
                "odometer",
                path,
                "--delta",
                DELTA,
                "--filter",
                "50",
            ],
        }
        for label, cmd in cases.items():
            runs, first = measure(cmd, args.repeat, stdout="pipe", warmup_kw=dict(stdout="pipe", keep=True))
            last = first.stdout.strip().splitlines()[-1] if first and first.stdout else "?"
            row = runs.runs[0]
            print(
                f"  {label:36s} {runs.min:7.3f} {runs.median:7.3f} {runs.max:7.3f} s  "
                f"{runs.tree_rss / MB:6.0f} MB  {row.first_row or float('nan'):6.2f} s  {last[:60]}"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
