"""Benchmark: ``dpcalc matrix`` (correlated noise) beside the DP-SGD query it reduces to, whole processes.

    python benchmarks/bench_matrix.py [--repeat 5]

Rows (each a fresh process with the default flags; start-up, imports and computation all count; median wall
time over ``--repeat`` runs after a warm-up, peak memory of the process tree):

* ``sgd-epsilon`` — DP-SGD, 63 steps at q = 0.08, σ = 4/max column norm, rdp and pld (``--accountant all``);
* ``matrix bandmf`` — the 16-banded square root over 1000 steps, cyclic Poisson over 16 partitions at q = 0.08:
  the unamplified row and amplified BandMF (rdp, pld), which is that DP-SGD run.  Beside it, jax_privacy's
  ``amplified_bandmf_event`` for the same run through dp-accounting's PLD accountant (recorded: 1.32 s, 247 MB,
  one ε; jax_privacy 2.3.0.dev0 at commit 8967688);
* ``matrix unamplified`` — five banded square roots, the tree and DP-SGD, five epochs of 200 steps
  (min-separation), σ = 4: sensitivities and exact Gaussian ε;
* ``matrix tree min-sep`` — the tree over 4096 steps, 14 participations 300 apart: the general certified
  bound of the sensitivity (the dynamic program, the heaviest admitted input of its size);
* ``matrix mmcc b=16``, ``matrix mmcc b=64`` — MMCC (Choquette-Choo et al. 2024, arXiv:2310.15526) for the 16-
  and 64-banded square roots over 1000 steps, Poisson sampling at q = 0.01 over the whole run, σ = 4 (the
  issue's target: under 60 s and 2 GB each);
* ``matrix mc 400``, ``matrix mc 1000`` — balls-in-bins with correlated noise by Monte Carlo (docs/math.md §12.5):
  the 4-banded square root over 400 steps (σ = 2) and 1000 steps (σ = 3), 100 bins, δ = 1e-5, the default 10⁶
  samples a direction.  Beside them, jax_privacy's own Monte Carlo for the same pairs (experimental/monte_carlo
  at commit 8967688, 10⁶ samples a side, its δ estimate only, whole process): 28.5 s and 51.3 s (recorded, not
  rerun here: it needs jax).

The issue's floor: amplified BandMF and unamplified rows as fast as a DP-SGD query.  Reported: the ratios.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys

sys.path.insert(0, os.path.dirname(__file__))

from _measure import MB, ensure_bytecode, measure  # noqa: E402

DPCALC = [sys.executable, "-m", "dpcalc"]
ROWS = {
    "sgd-epsilon": [
        "sgd-epsilon",
        "--sigma",
        "0.3618",
        "--sample-rate",
        "0.08",
        "--steps",
        "63",
        "--delta",
        "1e-6",
        "--accountant",
        "all",
        "-f",
        "csv",
    ],
    "matrix bandmf": [
        "matrix",
        "--strategy",
        "sqrt:bands=16",
        "--steps",
        "1000",
        "--participation",
        "cyclic-poisson:b=16,q=0.08",
        "--noise-multiplier",
        "4",
        "--delta",
        "1e-6",
        "-f",
        "csv",
    ],
    "matrix unamplified": [
        "matrix",
        "--strategy",
        "identity",
        "--strategy",
        "tree",
        "--strategy",
        "sqrt:bands=4",
        "--strategy",
        "sqrt:bands=16",
        "--strategy",
        "sqrt:bands=64",
        "--steps",
        "1000",
        "--participation",
        "min-sep:k=5,b=200",
        "--noise-multiplier",
        "4",
        "--delta",
        "1e-6",
        "-f",
        "csv",
    ],
    "matrix tree min-sep": [
        "matrix",
        "--strategy",
        "tree",
        "--steps",
        "4096",
        "--participation",
        "min-sep:k=14,b=300",
        "--noise-multiplier",
        "4",
        "--delta",
        "1e-6",
        "-f",
        "csv",
    ],
    **{
        f"matrix mmcc b={b}": [
            "matrix",
            "--strategy",
            f"sqrt:bands={b}",
            "--steps",
            "1000",
            "--participation",
            "poisson:q=0.01",
            "--noise-multiplier",
            "4",
            "--delta",
            "1e-6",
            "--method",
            "mmcc",
            "-f",
            "csv",
        ]
        for b in (16, 64)
    },
    **{
        f"matrix mc {n}": [
            "matrix",
            "--strategy",
            "sqrt:bands=4",
            "--steps",
            str(n),
            "--participation",
            "balls-in-bins:b=100",
            "--noise-multiplier",
            str(sigma),
            "--delta",
            "1e-5",
            "--method",
            "mc",
            "-f",
            "csv",
        ]
        for n, sigma in ((400, 2), (1000, 3))
    },
}
#: jax_privacy for the same questions (seconds, whole process; recorded): its balls-in-bins Monte Carlo for the
#: same pairs, and its amplified BandMF event (63 compositions of the Poisson-sampled Gaussian, q = 0.08) by
#: dp-accounting's PLD accountant — 1.32 s and 247 MB peak (RDP: 1.18 s), most of it importing jax.
JAX_PRIVACY_MC = {"matrix mc 400": 28.5, "matrix mc 1000": 51.3, "matrix bandmf": 1.32}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    ensure_bytecode()
    base = None
    print(f"{'row':<22} {'median s':>9} {'min s':>7} {'peak MB':>8} {'× sgd':>6}")
    for name, words in ROWS.items():
        runs, _ = measure([*DPCALC, *words], args.repeat)
        med = statistics.median(runs.walls)
        peak = runs.tree_pss / MB
        base = med if base is None else base
        line = f"{name:<22} {med:9.3f} {min(runs.walls):7.3f} {peak:8.1f} {med / base:6.2f}"
        if name in JAX_PRIVACY_MC:
            line += f"   jax_privacy {JAX_PRIVACY_MC[name]:.1f} s: {JAX_PRIVACY_MC[name] / med:.1f}× slower"
        print(line)


if __name__ == "__main__":
    main()
