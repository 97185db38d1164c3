"""Benchmark: one DP-SGD ε query as a whole process, side by side.

Each contender runs in a fresh interpreter (start-up, imports and computation all count), the way a
user would run a one-off query; the CLI wiring of dpcalc comes later, so its side is a ``python -c``
snippet calling the engine.  Reported: median wall time over ``--repeat`` runs, peak resident memory
of the child (``ru_maxrss``), the answer, and the ratios.

Contenders (configs A and B of the peer measurements):

* ``dpcalc pld`` — :func:`dpcalc.engine.pld.sgd_epsilon_pld` with the default tolerance (the whole
  certified bracket within 0.5 % of ε) vs ``dp-accounting pld`` — its PLD accountant with defaults
  (pessimistic estimate, no bracket).
* at equal error against prv-accountant: its ``compute-dp-epsilon`` command (hard-wired
  ``eps_error=0.1``: bracket width up to 0.2) vs dpcalc with ``eps_error=0.2``; and prv's Python API
  with ``eps_error=0.01`` (width up to 0.02) vs dpcalc with ``eps_error=0.02``.

Run: ``python benchmarks/bench_pld.py [--repeat 3] [--configs A,B]``.  Needs dp-accounting and
prv-accountant (test-only dependencies).
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import time

CONFIGS = {
    "A": (256 / 60000, 1.1, 14063, 1e-5),
    "B": (0.01, 1.0, 10000, 1e-6),
}

DPCALC = (
    "from dpcalc.engine.dpsgd.pld_accounting import sgd_epsilon_pld as f; b = f({q!r}, {s!r}, {t!r}, {d!r}, eps_error={e!r}); "
    "print(float(b.lower), float(b.estimate), float(b.upper))"
)
DP_ACCOUNTING = (
    "import dp_accounting as dpa; from dp_accounting.pld import pld_privacy_accountant as p; "
    "a = p.PLDAccountant(); a.compose(dpa.PoissonSampledDpEvent({q!r}, dpa.GaussianDpEvent({s!r})), {t!r}); "
    "print(a.get_epsilon({d!r}))"
)
PRV_PY = (
    "from prv_accountant import PRVAccountant; "
    "from prv_accountant.privacy_random_variables import PoissonSubsampledGaussianMechanism as M; "
    "a = PRVAccountant(prvs=[M(noise_multiplier={s!r}, sampling_probability={q!r})], max_self_compositions=[{t!r}], "
    "eps_error={e!r}, delta_error={d!r} / 1000); print(*a.compute_epsilon(delta={d!r}, num_self_compositions=[{t!r}]))"
)


def run(argv: list[str]) -> tuple[float, float, str]:
    """Wall seconds, peak RSS (MiB) and stdout of one child process."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    out = proc.stdout.read()
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t0
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        raise RuntimeError(f"{argv[:3]} failed with exit status {proc.returncode}")
    return wall, usage.ru_maxrss / 1024.0, out.strip()


def measure(argv: list[str], repeat: int) -> tuple[float, float, str]:
    runs = [run(argv) for _ in range(repeat)]
    return statistics.median(r[0] for r in runs), max(r[1] for r in runs), runs[-1][2]


def contenders(q, s, t, d):
    py = sys.executable
    out = [
        ("dpcalc pld (0.5 % bracket)", [py, "-c", DPCALC.format(q=q, s=s, t=t, d=d, e=None)]),
        ("dp-accounting pld (default)", [py, "-c", DP_ACCOUNTING.format(q=q, s=s, t=t, d=d)]),
        ("dpcalc pld (eps_error 0.2)", [py, "-c", DPCALC.format(q=q, s=s, t=t, d=d, e=0.2)]),
    ]
    cli = shutil.which("compute-dp-epsilon")
    if cli:
        out.append(
            ("prv compute-dp-epsilon (0.1)", [cli, "-p", repr(q), "-s", repr(s), "-i", str(t), "-d", repr(d)])
        )
    out += [
        ("dpcalc pld (eps_error 0.02)", [py, "-c", DPCALC.format(q=q, s=s, t=t, d=d, e=0.02)]),
        ("prv python (eps_error 0.01)", [py, "-c", PRV_PY.format(q=q, s=s, t=t, d=d, e=0.01)]),
    ]
    return out


PAIRS = [
    ("dp-accounting pld (default)", "dpcalc pld (0.5 % bracket)"),
    ("prv compute-dp-epsilon (0.1)", "dpcalc pld (eps_error 0.2)"),
    ("prv python (eps_error 0.01)", "dpcalc pld (eps_error 0.02)"),
]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--configs", default="A,B")
    args = ap.parse_args()
    try:
        load = os.getloadavg()[0]
    except OSError:
        load = float("nan")
    print(
        f"# whole-process timings, median of {args.repeat}; load average {load:.2f} on {os.cpu_count()} cores"
    )
    for name in args.configs.split(","):
        q, s, t, d = CONFIGS[name]
        print(f"\n## config {name}: q={q:.6g} sigma={s} steps={t} delta={d:g}")
        print(f"{'contender':32s} {'wall s':>8s} {'peak MiB':>9s}  answer")
        res = {}
        for label, argv in contenders(q, s, t, d):
            wall, rss, out = measure(argv, args.repeat)
            res[label] = (wall, rss)
            answer = " ".join(out.split())[:90]
            print(f"{label:32s} {wall:8.3f} {rss:9.1f}  {answer}")
        for slow, fast in PAIRS:
            if slow in res and fast in res:
                print(
                    f"ratio {slow} / {fast}: {res[slow][0] / res[fast][0]:.2f}x time, {res[slow][1] / res[fast][1]:.2f}x memory"
                )


if __name__ == "__main__":
    main()
