"""Benchmark: user-level DP-SGD (a user with K examples) as a mixture of Gaussians, dpcalc against
dp-accounting, whole processes side by side.

One DP-SGD step for a user who contributed K examples, each Poisson-sampled with probability q, is the
mixture ``Σ_i Binom(K, q)_i N(i, σ²)`` against ``N(0, σ²)`` (Ganesh 2024, arXiv:2401.10294, Thm 3.1;
dpcalc's ``mixture-gaussian:group=K`` kind, dp-accounting's ``MixtureOfGaussiansDpEvent``).  The run is 60
epochs of σ = 1, q = 0.0064 (9375 steps), δ = 1e-5, for K = 2 and K = 10.  Rows, per K:

* ``dpcalc compose 'mixture-gaussian:sigma=1,group=K,q=0.0064,count=9375' --delta 1e-5 -f csv``: the
  default flags (``--method best``: every method that applies, the smallest certified ε kept; here the
  PLD's certified bracket [lower, upper], its upper end the answer);
* ``dpcalc sgd-epsilon --sigma 1 --sample-rate 0.0064 --steps 9375 --delta 1e-5 --group-size K
  --accountant pld -f csv``, where the checkout's ``sgd-epsilon`` has ``--group-size`` (else the row says
  "skipped: sgd-epsilon has no --group-size yet");
* dp-accounting's PLD accountant (its default: connect-the-dots, pessimistic estimate, add/remove
  neighbours) on ``SelfComposedDpEvent(MixtureOfGaussiansDpEvent(1.0, range(K+1), binomial probs), 9375)``,
  ``get_epsilon(1e-5)``, at ``value_discretization_interval`` 1e-4 (its default) and 1e-3; a script written
  to a temporary file at run time, each run a fresh process.

Every row is a whole process (a fresh interpreter: start-up, imports, parsing, computation and output all
count).  How (see ``_measure.py``): dpcalc's package is byte-compiled first (as ``pip install .`` leaves
it); each row gives min / median / max wall time of ``--repeat`` runs after one untimed warm-up run, timed
by a small launcher around the command, and the peak memory: "tree RSS" the peak of the summed VmRSS of
the process and its descendants (polled every 20 ms, in as many runs again, not timed), "max RSS" the largest single process
(``ru_maxrss``, at least the launcher's ~9 MB).  1 MB = 10^6 bytes.  The answers are dpcalc's certified
bracket and dp-accounting's ε; the ratios are dp-accounting's median wall time / dpcalc compose's.

Run: ``python benchmarks/bench_group.py [--repeat 3] [--groups 2,10] [--skip-1e-4]`` with the checkout to
measure importable (``PYTHONPATH=.`` from its root).  Needs dp-accounting (a test-only dependency); Linux.
dp-accounting at 1e-4 takes tens of seconds a run for K = 10 (``--skip-1e-4`` leaves those rows out).  The
machine may be shared: compare the ratios more than the absolute times.
"""

from __future__ import annotations

import argparse
import csv
import io
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _measure import MB, ensure_bytecode, measure  # noqa: E402

SIGMA, Q, STEPS, DELTA = 1.0, 0.0064, 9375, 1e-5
DPCALC = [sys.executable, "-m", "dpcalc"]

PEER_SCRIPT = f'''\
"""dp-accounting's PLD accountant on K-example user-level DP-SGD: python peer.py K INTERVAL."""
import sys
from math import comb

import dp_accounting
from dp_accounting.pld import pld_privacy_accountant as pld

k, interval = int(sys.argv[1]), float(sys.argv[2])
sigma, q, steps, delta = {SIGMA!r}, {Q!r}, {STEPS!r}, {DELTA!r}
probs = [comb(k, i) * q**i * (1 - q) ** (k - i) for i in range(k + 1)]
event = dp_accounting.SelfComposedDpEvent(
    dp_accounting.dp_event.MixtureOfGaussiansDpEvent(sigma, list(range(k + 1)), probs), steps
)
acc = pld.PLDAccountant(value_discretization_interval=interval)
acc.compose(event)
print(repr(acc.get_epsilon(delta)))
'''

HEAD = f"   {'':44s} {'min':>8s} {'median':>8s} {'max':>8s} {'tree RSS':>9s} {'max RSS':>8s}  answer"


def _t(x):
    return f"{x:7.3f}s" if x < 10 else f"{x:7.2f}s"


def _row(label, runs, answer=""):
    print(
        f"   {label:44s} {_t(runs.min)} {_t(runs.median)} {_t(runs.max)} "
        f"{runs.tree_rss / MB:6.0f} MB {runs.max_rss / MB:5.0f} MB  {answer}"
    )


def _bracket(stdout: str) -> str:
    row = next(csv.DictReader(io.StringIO(stdout)))
    lower = row.get("epsilon_lower") or ""
    return (
        f"ε ∈ [{float(lower):.4f}, {float(row['epsilon']):.4f}]"
        if lower
        else f"ε ≤ {float(row['epsilon']):.4f}"
    )


def has_group_size() -> bool:
    """Whether the checkout's ``sgd-epsilon`` takes ``--group-size``."""
    out = subprocess.run([*DPCALC, "sgd-epsilon", "--help"], capture_output=True, text=True, check=False)
    return "--group-size" in out.stdout


def bench(k: int, repeat: int, peer: str, intervals, sgd: bool) -> None:
    print(f"K = {k}: σ = {SIGMA:g}, q = {Q:g}, {STEPS} steps, δ = {DELTA:g}; {repeat} runs per row")
    print(HEAD)
    keep = {"stdout": "pipe", "keep": True}
    spec = f"mixture-gaussian:sigma={SIGMA:g},group={k},q={Q:g},count={STEPS}"
    ours, first = measure([*DPCALC, "compose", spec, "--delta", f"{DELTA:g}", "-f", "csv"], repeat, **keep)
    _row("dpcalc compose (default flags)", ours, _bracket(ours.runs[-1].stdout))
    if sgd:
        cmd = [
            *DPCALC,
            "sgd-epsilon",
            "--sigma",
            f"{SIGMA:g}",
            "--sample-rate",
            f"{Q:g}",
            "--steps",
            str(STEPS),
        ]
        cmd += ["--delta", f"{DELTA:g}", "--group-size", str(k), "--accountant", "pld", "-f", "csv"]
        runs, _ = measure(cmd, repeat, **keep)
        _row("dpcalc sgd-epsilon --group-size --accountant pld", runs, _bracket(runs.runs[-1].stdout))
    else:
        print(f"   {'dpcalc sgd-epsilon --group-size':44s} skipped: sgd-epsilon has no --group-size yet")
    ratios = []
    for interval in intervals:
        theirs, _ = measure([sys.executable, peer, str(k), repr(interval)], repeat, **keep)
        eps = float(theirs.runs[-1].stdout.strip())
        _row(f"dp-accounting PLD, interval {interval:g}", theirs, f"ε = {eps:.4f}")
        ratios.append(f"{theirs.median / ours.median:.1f}× at {interval:g}")
    if ratios:
        print(f"   ratio dp-accounting / dpcalc compose (median wall): {', '.join(ratios)}")
    print()


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=3, help="timed runs per row (default 3)")
    ap.add_argument("--groups", default="2,10", help="the K to run, comma-separated (default 2,10)")
    ap.add_argument("--skip-1e-4", action="store_true", help="leave out dp-accounting at interval 1e-4")
    args = ap.parse_args()
    ensure_bytecode()
    intervals = [1e-3] if args.skip_1e_4 else [1e-4, 1e-3]
    sgd = has_group_size()
    with tempfile.TemporaryDirectory() as tmp:
        peer = os.path.join(tmp, "dpa_mixture.py")
        with open(peer, "w", encoding="utf-8") as fh:
            fh.write(PEER_SCRIPT)
        for k in (int(v) for v in args.groups.split(",")):
            bench(k, args.repeat, peer, intervals, sgd)


if __name__ == "__main__":
    main()
