"""Benchmark of ``dpcalc convert`` start-up and of the vectorised optimal conversion (a script, not a test).

    python benchmarks/bench_convert.py [--runs 15] [--orders 10000]

Measures, side by side in one run on this machine:

* whole processes (subprocess, min and median of ``--runs`` runs): ``python -c "import numpy"`` (the floor
  every numeric command pays), ``dpcalc --help``, and one ``dpcalc convert --alpha 10 --rdp 0.5 --delta 1e-5``;
* in process: an α-sweep of ``--orders`` orders through the optimal conversion (per order, ε for δ and δ for
  ε) and the curve-level minimum over the same orders.

Targets (from the task brief): ``--help`` <= 100 ms; one convert query <= 2.5 × the bare numpy import; the
10,000-order sweep well under a second.  Exit status 1 if a target is missed.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import sysconfig
import time


def _dpcalc_command() -> tuple[list[str], str]:
    """The installed console script of *this* interpreter (not a pyenv shim, whose bash start-up would be
    counted), else whatever ``dpcalc`` is on PATH, else ``python -m dpcalc``."""
    script = os.path.join(sysconfig.get_path("scripts"), "dpcalc")
    if os.path.exists(script):
        return [script], script
    found = shutil.which("dpcalc")
    if found:
        return [found], found
    return [sys.executable, "-m", "dpcalc"], f"{sys.executable} -m dpcalc"


def _time_processes(commands: list[list[str]], runs: int) -> list[list[float]]:
    """Wall time of each command, ``runs`` times, interleaved round-robin (so that load from other
    processes on a shared machine affects every command alike)."""
    times: list[list[float]] = [[] for _ in commands]
    for _ in range(runs):
        for argv, out in zip(commands, times):
            t0 = time.perf_counter()
            done = subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
            out.append(time.perf_counter() - t0)
            if done.returncode != 0:
                raise SystemExit(f"{' '.join(argv)} failed: {done.stderr.decode(errors='replace')}")
    return times


def _time_call(fn, runs: int) -> list[float]:
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return times


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=15)
    ap.add_argument("--orders", type=int, default=10_000)
    args = ap.parse_args()

    dpcalc, where = _dpcalc_command()
    rows = []  # (name, times, target description, ok)

    query = ["convert", "--alpha", "10", "--rdp", "0.5", "--delta", "1e-5"]
    t_bare, t_numpy, t_help, t_conv = _time_processes(
        [
            [sys.executable, "-c", "pass"],
            [sys.executable, "-c", "import numpy"],
            dpcalc + ["--help"],
            dpcalc + query,
        ],
        args.runs,
    )
    rows.append(('python -c "pass"', t_bare, "(interpreter start-up)", None))
    rows.append(('python -c "import numpy"', t_numpy, "(reference)", None))
    rows.append(("dpcalc --help", t_help, "<= 100 ms", min(t_help) <= 0.100))
    limit = 2.5 * min(t_numpy)
    rows.append(
        ("dpcalc " + " ".join(query), t_conv, f"<= 2.5 x numpy = {limit * 1e3:.0f} ms", min(t_conv) <= limit)
    )

    import numpy as np

    from dpcalc.engine.conversion import methods as conversions

    alphas = np.geomspace(1.01, 1e4, args.orders)
    rdp = alphas / (2 * 1.1**2)  # Gaussian mechanism, σ = 1.1
    n = max(3, args.runs // 3)
    t_eps = _time_call(lambda: conversions.eps_optimal(alphas, rdp, 1e-5), n)
    rows.append((f"eps_optimal, {args.orders} orders (in process)", t_eps, "< 1 s", min(t_eps) < 1.0))
    t_del = _time_call(lambda: conversions.delta_optimal(alphas, rdp, 2.0), n)
    rows.append((f"delta_optimal, {args.orders} orders (in process)", t_del, "< 1 s", min(t_del) < 1.0))
    t_curve = _time_call(lambda: conversions.eps_from_curve(alphas, rdp, 1e-5), n)
    rows.append((f"eps_from_curve, {args.orders} orders (in process)", t_curve, "< 1 s", min(t_curve) < 1.0))

    width = max(len(r[0]) for r in rows)
    print(
        f"dpcalc: {where}   python: {sys.version.split()[0]}   numpy: {np.__version__}   cpus: {os.cpu_count()}"
    )
    print(f"{'what':<{width}}  {'min ms':>8}  {'median ms':>9}  target")
    for name, times, target, ok in rows:
        verdict = "" if ok is None else ("  ok" if ok else "  MISSED")
        med = statistics.median(times)
        print(f"{name:<{width}}  {min(times) * 1e3:8.1f}  {med * 1e3:9.1f}  {target}{verdict}")
    ratio = min(t_conv) / min(t_numpy)
    print(f"convert / numpy import (min): {ratio:.2f}x   load average: {os.getloadavg()[0]:.2f}")
    return 0 if all(ok is not False for *_, ok in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
