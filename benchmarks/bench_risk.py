"""Benchmark: membership-inference risk (issue 32) — what the risk outputs cost beside ε, and calibration to a
risk target beside calibration to ε; whole processes.

A DP-SGD run: Poisson rate q = 0.01, 1000 steps, δ = 1e-5, the tight accountant (``--accountant pld``).

* Risk outputs: ``--sigma 1.1 --advantage`` and ``--sigma 1.1 --prior 0.1,0.5`` against ``--sigma 1.1
  --delta 1e-5`` (the issue: at most one extra PLD evaluation per row).
* Calibration: ``--target-advantage 0.1 --delta 1e-5`` (the least noise with certified advantage <= 0.1, and
  its ε at δ) against ``--target-epsilon E --delta 1e-5`` with E the ε that σ found has (the issue: within
  2× of calibration to ε); ``--fpr 1e-3 --target-tpr 0.003`` (a TPR target: each step a trade-off curve).

Every row is a whole process (start-up, imports, computation, output), min / median / max wall time of
``--repeat`` runs after one untimed warm-up, with the peak memory (``_measure.py``).  Run: ``python
benchmarks/bench_risk.py [--repeat 3]`` from the checkout's root (``PYTHONPATH=.``).  The machine may be
shared: compare the ratios more than the absolute times.
"""

from __future__ import annotations

import argparse
import csv
import io
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _measure import MB, ensure_bytecode, measure  # noqa: E402

RUN = ["--sample-rate", "0.01", "--steps", "1000", "--accountant", "pld", "-f", "csv"]
DPCALC = [sys.executable, "-m", "dpcalc", "sgd-epsilon", *RUN]
HEAD = f"   {'':52s} {'min':>8s} {'median':>8s} {'max':>8s} {'max RSS':>8s}  answer"


def _t(x):
    return f"{x:7.3f}s" if x < 10 else f"{x:7.2f}s"


def _row(label, runs, answer=""):
    print(
        f"   {label:52s} {_t(runs.min)} {_t(runs.median)} {_t(runs.max)} {runs.max_rss / MB:5.0f} MB  {answer}"
    )


def _first(stdout, *cols):
    row = next(csv.DictReader(io.StringIO(stdout)))
    return ", ".join(f"{c} = {float(row[c]):.6g}" for c in cols)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=3, help="timed runs per row (default 3)")
    args = ap.parse_args()
    ensure_bytecode()
    keep = {"stdout": "pipe", "keep": True}
    print(f"DP-SGD q = 0.01, 1000 steps, pld; {args.repeat} runs per row")
    print(HEAD)
    plain, _ = measure([*DPCALC, "--sigma", "1.1", "--delta", "1e-5"], args.repeat, **keep)
    _row("ε at δ = 1e-5 (σ = 1.1)", plain, _first(plain.runs[-1].stdout, "epsilon"))
    adv, _ = measure([*DPCALC, "--sigma", "1.1", "--advantage"], args.repeat, **keep)
    _row("--advantage (σ = 1.1)", adv, _first(adv.runs[-1].stdout, "advantage"))
    pri, _ = measure([*DPCALC, "--sigma", "1.1", "--prior", "0.1,0.5"], args.repeat, **keep)
    _row("--prior 0.1,0.5 (σ = 1.1)", pri, _first(pri.runs[-1].stdout, "success"))
    print(
        f"   ratios to ε: --advantage {adv.median / plain.median:.2f}×, --prior {pri.median / plain.median:.2f}×"
    )
    risk, _ = measure([*DPCALC, "--target-advantage", "0.1", "--delta", "1e-5"], args.repeat, **keep)
    out = risk.runs[-1].stdout
    _row("--target-advantage 0.1", risk, _first(out, "noise_multiplier", "epsilon"))
    eps = float(next(csv.DictReader(io.StringIO(out)))["epsilon"])
    by_eps, _ = measure([*DPCALC, "--target-epsilon", repr(eps), "--delta", "1e-5"], args.repeat, **keep)
    _row(
        f"--target-epsilon {eps:.4f} (the same noise)",
        by_eps,
        _first(by_eps.runs[-1].stdout, "noise_multiplier"),
    )
    tpr, _ = measure(
        [*DPCALC, "--fpr", "1e-3", "--target-tpr", "0.003", "--delta", "1e-5"], args.repeat, **keep
    )
    _row("--fpr 1e-3 --target-tpr 0.003", tpr, _first(tpr.runs[-1].stdout, "noise_multiplier", "tpr"))
    print(
        f"   calibration to risk / to ε (median wall): advantage {risk.median / by_eps.median:.2f}×, "
        f"TPR {tpr.median / by_eps.median:.2f}×"
    )


if __name__ == "__main__":
    main()
