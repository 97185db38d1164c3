"""Benchmark of ``dpcalc sgd-epsilon --sampling …``: one query per sampler as a whole process, beside
dp-accounting where it has the scheme (a script, not a test).

    python benchmarks/bench_samplers.py [--repeat 3]

The run of the "Which sampler did you run?" section of docs/guide/sgd-epsilon.md: 60000 examples, batches of 256, noise
multiplier 1.1, 60 epochs, δ = 1e-5.  Each row is what a user runs, default flags, the whole process
(start-up included): wall time (min / median / max of ``--repeat`` runs after an untimed warm-up), peak
memory of the process tree, and the answer.  Side by side, dp-accounting's PLD accountant (its defaults)
for the schemes it has: Poisson sampling under REPLACE_ONE and TruncatedSubsampledGaussianDpEvent (under
its convention, add/remove, which uses the replace-one pair for a cut batch: a different, looser
analysis, so its ε is not expected to equal ours).  Needs dp-accounting (a test-only dependency).  The
allocation samplers have no peer here (jax_privacy's balls-in-bins accounting is Monte Carlo; the authors'
package, random-allocation, is compared in tests/test_allocation_authors.py).
"""

from __future__ import annotations

import argparse
import math
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _measure import MB, ensure_bytecode, measure  # noqa: E402

BATCH, N, EPOCHS, DELTA, SIGMA, CAP = 256, 60000, 60, 1e-5, 1.1, 300
STEPS = math.ceil(EPOCHS * N / BATCH)
RUN = [
    "sgd-epsilon",
    "--sigma",
    str(SIGMA),
    "--batch-size",
    str(BATCH),
    "--dataset-size",
    str(N),
    "--epochs",
    str(EPOCHS),
    "--delta",
    str(DELTA),
    "-f",
    "csv",
    "--columns",
    "epsilon",
]
ROWS = [
    ("poisson, pld", ["--accountant", "pld"]),
    ("poisson replace-one, pld", ["--neighbors", "replace-one", "--accountant", "pld"]),
    (
        "truncated-poisson, pld",
        ["--sampling", "truncated-poisson", "--max-batch-size", str(CAP), "--accountant", "pld"],
    ),
    ("truncated-poisson, rdp", ["--sampling", "truncated-poisson", "--max-batch-size", str(CAP)]),
    ("balls-in-bins, rdp", ["--sampling", "balls-in-bins"]),
    ("balls-in-bins, pld", ["--sampling", "balls-in-bins", "--accountant", "pld"]),
    ("random-allocation, rdp", ["--sampling", "random-allocation"]),
    ("random-allocation, pld", ["--sampling", "random-allocation", "--accountant", "pld"]),
    ("shuffle (upper, lower)", ["--sampling", "shuffle"]),
]
PEERS = {
    "poisson replace-one, pld": (
        "import dp_accounting as d; from dp_accounting.pld import pld_privacy_accountant as p; "
        f"a = p.PLDAccountant(d.NeighboringRelation.REPLACE_ONE); "
        f"a.compose(d.PoissonSampledDpEvent({BATCH / N!r}, d.GaussianDpEvent({SIGMA!r})), {STEPS}); "
        f"print(a.get_epsilon({DELTA!r}))"
    ),
    "truncated-poisson, pld": (
        "import dp_accounting as d; from dp_accounting.pld import pld_privacy_accountant as p; "
        "a = p.PLDAccountant(); "
        f"a.compose(d.TruncatedSubsampledGaussianDpEvent({N}, {BATCH / N!r}, {CAP}, {SIGMA!r}), {STEPS}); "
        f"print(a.get_epsilon({DELTA!r}))"
    ),
}


def _dpcalc():
    script = os.path.join(os.path.dirname(sys.executable), "dpcalc")
    return [script] if os.path.exists(script) else [sys.executable, "-m", "dpcalc"]


def _line(label, runs, answer, ratio=""):
    return (
        f"  {label:36s} {runs.min:7.3f} {runs.median:7.3f} {runs.max:7.3f} s  "
        f"{runs.tree_rss / MB:6.0f} MB  {answer:28s} {ratio}"
    )


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--no-peers", action="store_true", help="skip dp-accounting")
    args = ap.parse_args()
    ensure_bytecode()
    print(f"one DP-SGD run: N = {N}, B = {BATCH}, σ = {SIGMA}, {EPOCHS} epochs, δ = {DELTA} (cap {CAP})")
    print(f"  {'':36s} {'min':>7s} {'median':>7s} {'max':>7s}    {'peak':>6s}     answer")
    for label, extra in ROWS:
        cmd = [*_dpcalc(), *RUN, *extra]
        runs, first = measure(cmd, args.repeat, warmup_kw=dict(stdout="pipe", keep=True))
        answer = ",".join(first.stdout.strip().splitlines()[1:]) if first and first.stdout else "?"
        print(_line("dpcalc " + label, runs, answer))
        if label in PEERS and not args.no_peers:
            peer, pfirst = measure(
                [sys.executable, "-c", PEERS[label]], args.repeat, warmup_kw=dict(stdout="pipe", keep=True)
            )
            panswer = pfirst.stdout.strip() if pfirst and pfirst.stdout else "?"
            print(
                _line(
                    "dp-accounting " + label.split(",")[0], peer, panswer, f"{peer.median / runs.median:.1f}×"
                )
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
