"""Benchmarks of ``dpcalc sgd-epsilon`` as a user runs it, against its peers, side by side in one run.

dpcalc always runs as a whole process with its default flags (``python -m dpcalc ...`` in a fresh
interpreter: start-up, imports, parsing, computation and output all count); peak memory is reported
beside time.

1. One query (q=256/60000, σ=1.1, T=14063, δ=1e-5, ``-f csv``): ``dpcalc sgd-epsilon`` vs
   prv-accountant's ``compute-dp-epsilon`` script (both run by this interpreter), plus ``dpcalc --help``,
   ``python -c pass`` (the interpreter's own start-up), ``python -c 'import numpy'`` and ``'import click'``
   (the yardsticks: one query at most 1.6× the first, --help at most 1.3× the second); and the same query
   with ``--method pld`` vs dp_accounting's PLD accountant in a script (at least 5× faster).
2. A 10,000-configuration grid (``--sample-rate 0.001:0.2:x1.32 --noise-multiplier 0.5:2.95:0.05`` and
   ten step counts from 100 to 3e6: 20 × 50 × 10, δ=1e-5, stdout to /dev/null), with the default flags
   (optimal conversion, automatic ``--jobs``), with ``--jobs 1`` and with ``--conversion balle``, vs
   dp_accounting's RDP accountant per configuration: its time per configuration is measured in-process
   (imports excluded) on a random sample of the grid's configurations, and the ratio is
   (that time × 10,000) / dpcalc's whole-process wall time.  The ε of both on the sample are compared.
3. A ~100,000-configuration grid (91 × 101 × 11 = 101,101 rows), stdout read through a pipe: wall time,
   peak memory, time until the first data row arrives, and the number of rows (at most 3 runs, no
   warm-up run; skipped with ``--quick``).
4. Noise calibration for ε=3 (δ=1e-5, q and T of 1., σ to a relative 1e-4): in-process, dpcalc's
   ``calibrate_noise`` (optimal and balle conversions) vs bisection over dp_accounting's RDP accountant
   to the same tolerance (median of N runs, after one warm-up call of each: imports and first-call set-up
   excluded on both sides); and as whole processes, ``dpcalc sgd-epsilon --target-epsilon 3`` vs a
   script running the same bisection (written to a temporary file at run time), beside ``python -c 'import
   numpy'`` (the floor of any whole process of dpcalc's).

How (see ``_measure.py``): every process row gives min / median / max wall time of N runs after one
untimed warm-up run, timed by a small launcher around the command; "tree RSS" and "tree PSS" are the peaks
of the summed VmRSS and Pss of the process and its descendants, polled every 20 ms in N more runs interleaved
with the timed ones (the polling takes CPU, so the timed runs are not polled; RSS counts pages shared by
forked workers once per process, PSS splits them), "max RSS" is the launcher's
``getrusage(RUSAGE_CHILDREN).ru_maxrss``: the largest single process (at least the launcher's ~9 MB),
"procs" the most processes seen at once ("–": ended before the first poll).  1 MB = 10^6 bytes.

Run: ``python benchmarks/bench_sgd.py [--repeat 5] [--sample 100] [--quick]`` (about 2 minutes; needs
dp-accounting and prv-accountant, test-only dependencies; Linux).  The machine may be shared: compare
the ratios more than the absolute times.
"""

from __future__ import annotations

import argparse
import csv
import importlib.metadata
import io
import os
import re
import statistics
import sys
import tempfile
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _measure import MB, ensure_bytecode, measure  # noqa: E402

Q_A, SIGMA_A, STEPS_A, DELTA = 256 / 60000, 1.1, 14063, 1e-5
TARGET_EPS, RTOL = 3.0, 1e-4
DPCALC = [sys.executable, "-m", "dpcalc"]
ONE_QUERY = ["--sigma", "1.1", "--sample-rate", "0.0042666666666666667", "--steps", "14063"]
GRID_10K = [
    "--sample-rate", "0.001:0.2:x1.32",
    "--noise-multiplier", "0.5:2.95:0.05",
    "--steps", "100,300,1000,3000,10000,30000,100000,300000,1000000,3000000",
]  # fmt: skip
GRID_100K = [
    "--sample-rate", "0.001:0.2:x1.06",
    "--noise-multiplier", "0.5:5:0.045",
    "--steps", "100,300,1000,3000,10000,30000,100000,300000,1000000,3000000,10000000",
]  # fmt: skip
TAIL = ["--delta", "1e-5", "-f", "csv"]
#: dp_accounting's PLD accountant on the one query, as a user's script (a whole process: its imports count)
DPA_PLD = (
    "import dp_accounting\n"
    "from dp_accounting.pld import pld_privacy_accountant as pld\n"
    "acc = pld.PLDAccountant()\n"
    f"event = dp_accounting.PoissonSampledDpEvent({Q_A!r}, dp_accounting.GaussianDpEvent({SIGMA_A!r}))\n"
    f"acc.compose(event, {STEPS_A})\n"
    f"print(acc.get_epsilon({DELTA!r}))\n"
)

# The peer of ``--target-epsilon``: run as a script (row 4, whole process) and exec'd here (rows 2 and 4).
PEER_SCRIPT = '''\
"""Smallest σ with ε <= target: bisection over dp_accounting's RDP accountant."""
import sys

import dp_accounting
from dp_accounting.rdp import rdp_privacy_accountant as rdp


def epsilon(q, sigma, steps, delta):
    acc = rdp.RdpAccountant()
    acc.compose(
        dp_accounting.PoissonSampledDpEvent(float(q), dp_accounting.GaussianDpEvent(float(sigma))), int(steps)
    )
    return acc.get_epsilon(delta)


def bisect(q, steps, delta, target, rtol, lo=0.1, hi=100.0):
    """Bisection on [lo, hi] to a relative width rtol, keeping eps(hi) <= target; (hi, evaluations)."""
    evals = 0
    while hi > lo * (1 + rtol):
        mid = 0.5 * (lo + hi)
        evals += 1
        if epsilon(q, mid, steps, delta) <= target:
            hi = mid
        else:
            lo = mid
    return hi, evals


if __name__ == "__main__":
    q, steps, delta, target, rtol = map(float, sys.argv[1:6])
    sigma, evals = bisect(q, int(steps), delta, target, rtol)
    print(f"sigma,epsilon,evaluations\\n{sigma!r},{epsilon(q, sigma, int(steps), delta)!r},{evals}")
'''


def _peer():
    import logging

    logging.getLogger("absl").setLevel(logging.ERROR)
    ns = {"__name__": "peer_bisect"}
    exec(compile(PEER_SCRIPT, "<peer_bisect>", "exec"), ns)
    return ns


def _compute_dp_epsilon():
    real = os.path.join(os.path.dirname(sys.executable), "compute-dp-epsilon")
    if not os.path.exists(real):
        import shutil

        real = shutil.which("compute-dp-epsilon")
    return [sys.executable, real]


# ----------------------------------------------------------------------------------------------- output

HEAD = (
    f"   {'':38s} {'min':>8s} {'median':>8s} {'max':>8s} {'tree RSS':>9s} {'tree PSS':>9s} {'max RSS':>8s} "
    f"{'procs':>5s}  "
)


def _t(x):
    return f"{x:7.3f}s" if x < 10 else f"{x:7.2f}s"


def _mb(x):
    return f"{x / MB:6.0f} MB" if x else f"{'–':>9s}"  # – : the process ended before the first poll


def _row(label, runs, extra=""):
    print(
        f"   {label:38s} {_t(runs.min)} {_t(runs.median)} {_t(runs.max)} "
        f"{_mb(runs.tree_rss)} {_mb(runs.tree_pss)} {runs.max_rss / MB:5.0f} MB {runs.max_procs:5d}  {extra}"
    )


def _times_row(label, times, extra=""):
    print(
        f"   {label:38s} {_t(min(times))} {_t(statistics.median(times))} {_t(max(times))} {'':34s}  {extra}"
    )


def _verdict(ok):
    return "met" if ok else "MISSED"


def _csv(text):
    return list(csv.DictReader(io.StringIO(text)))


# ------------------------------------------------------------------------------------------------- rows


def bench_one_query(repeat):
    print(f"1. One query, whole process (q=256/60000, σ=1.1, T=14063, δ=1e-5), {repeat} runs")
    print(HEAD + "result")
    keep = {"stdout": "pipe", "keep": True}
    base, _ = measure([sys.executable, "-c", "pass"], repeat)
    numpy_, _ = measure([sys.executable, "-c", "import numpy"], repeat)
    click_, _ = measure([sys.executable, "-c", "import click"], repeat)
    helps, _ = measure([*DPCALC, "--help"], repeat)
    ours, out = measure([*DPCALC, "sgd-epsilon", *ONE_QUERY, *TAIL], repeat, **keep)
    prv_cmd = [*_compute_dp_epsilon(), "-p", repr(Q_A), "-s", str(SIGMA_A), "-i", str(STEPS_A), "-d", "1e-5"]
    theirs, out_prv = measure(prv_cmd, repeat, **keep)
    eps = float(_csv(out.stdout)[0]["epsilon"])
    m = re.search(r"PRV.*?eps_lower\s*=\s*([\d.]+).*?eps_upper\s*=\s*([\d.]+)", out_prv.stdout)
    _row("python -c pass (start-up only)", base)
    _row("python -c 'import numpy'", numpy_)
    _row("python -c 'import click'", click_)
    _row("dpcalc --help", helps)
    _row("dpcalc sgd-epsilon (default flags)", ours, f"ε = {eps:.4f} (RDP, optimal conversion)")
    _row("compute-dp-epsilon (prv-accountant)", theirs, f"ε ∈ [{m[1]}, {m[2]}] (PRV)" if m else "")
    pld_ours, out_pld = measure(
        [*DPCALC, "sgd-epsilon", *ONE_QUERY, *TAIL, "--method", "pld"], repeat, **keep
    )
    pld_theirs, out_dpa = measure([sys.executable, "-c", DPA_PLD], repeat, **keep)
    row = _csv(out_pld.stdout)[0]
    bracket = f"ε ∈ [{float(row['epsilon_lower']):.4f}, {float(row['epsilon']):.4f}] (PLD, certified)"
    _row("dpcalc sgd-epsilon --method pld", pld_ours, bracket)
    _row("dp_accounting PLDAccountant (script)", pld_theirs, f"ε = {float(out_dpa.stdout.split()[-1]):.4f}")
    vs_prv, vs_numpy, vs_click = (
        theirs.median / ours.median,
        ours.median / numpy_.median,
        helps.median / click_.median,
    )
    vs_dpa = pld_theirs.median / pld_ours.median
    print(
        f"   ratio compute-dp-epsilon / dpcalc: time {vs_prv:.1f}× (median), "
        f"tree RSS {theirs.tree_rss / ours.tree_rss:.1f}×"
    )
    print(
        f"   targets: one query ≥ 5× compute-dp-epsilon: {vs_prv:.1f}×, {_verdict(vs_prv >= 5)}; "
        f"≤ 1.6× import numpy: {vs_numpy:.2f}×, {_verdict(vs_numpy <= 1.6)}; "
        f"--help ≤ 1.3× import click: {vs_click:.2f}×, {_verdict(vs_click <= 1.3)}; "
        f"pld query ≥ 5× dp_accounting's PLD: {vs_dpa:.1f}×, {_verdict(vs_dpa >= 5)}"
    )


def _grid_sample(text, sample, rng):
    rows = _csv(text)
    idx = rng.choice(len(rows), size=min(sample, len(rows)), replace=False)
    return [rows[i] for i in idx]


def bench_grid_10k(repeat, sample):
    n = 10_000
    print(f"2. {n:,}-configuration grid, whole process, stdout to /dev/null, {repeat} runs")
    print(HEAD + "vs dp_accounting")
    keep = {"stdout": "pipe", "keep": True}
    variants = [
        ("dpcalc, default flags", []),
        ("dpcalc --jobs 1", ["--jobs", "1"]),
        ("dpcalc --conversion balle", ["--conversion", "balle"]),
    ]
    results = []
    for label, extra in variants:
        runs, first = measure([*DPCALC, "sgd-epsilon", *GRID_10K, *extra, *TAIL], repeat, warmup_kw=keep)
        assert first.lines == n + 1, f"{label}: {first.lines} lines"
        results.append((label, runs, first.stdout))

    peer = _peer()
    eps_peer = peer["epsilon"]
    eps_peer(Q_A, SIGMA_A, STEPS_A, DELTA)  # warm-up: imports and first-call set-up excluded
    configs = _grid_sample(results[0][2], sample, np.random.default_rng(0))
    t = time.perf_counter()
    theirs = [
        eps_peer(float(c["sample_rate"]), float(c["noise_multiplier"]), int(c["steps"]), DELTA)
        for c in configs
    ]
    per = (time.perf_counter() - t) / len(configs)

    for label, runs, _ in results:
        _row(label, runs, f"{per * n / runs.median:6.0f}×")
    print(
        f"   dp_accounting RdpAccountant: {per * 1e3:.1f} ms per configuration (in-process, {len(configs)} random "
        f"grid configurations) → whole grid ≈ {per * n:.0f} s"
    )
    theirs = np.asarray(theirs)
    for label, _, text in (results[0], results[2]):
        ours = {
            (r["sample_rate"], r["noise_multiplier"], r["steps"]): float(r["epsilon"]) for r in _csv(text)
        }
        mine = np.array([ours[(c["sample_rate"], c["noise_multiplier"], c["steps"])] for c in configs])
        ok = np.isfinite(mine) & np.isfinite(theirs)
        rel = mine[ok] / theirs[ok] - 1
        print(
            f"   ε({label.removeprefix('dpcalc').strip(', ') or 'default'}) / ε(dp_accounting) − 1 on the sample: "
            f"[{rel.min():+.2e}, {rel.max():+.2e}]"
            + (f" ({(~ok).sum()} non-finite left out)" if (~ok).any() else "")
        )
    runs = results[0][1]
    ratio = per * n / runs.median
    print(
        f"   targets (default flags): ≥ 300× dp_accounting (issue 44): {ratio:.0f}×, {_verdict(ratio >= 300)}; "
        f"tree RSS ≤ 300 MB: {runs.tree_rss / MB:.0f} MB, {_verdict(runs.tree_rss <= 300 * MB)}"
    )
    return per


def bench_grid_100k(repeat, per):
    n = 91 * 101 * 11
    print(
        f"3. {n:,}-configuration grid, whole process, default flags, stdout read through a pipe, {repeat} runs"
    )
    print(HEAD + "first row (median)    rows  vs dp_accounting")
    runs, _ = measure([*DPCALC, "sgd-epsilon", *GRID_100K, *TAIL], repeat, warmup=False, stdout="pipe")
    first = statistics.median(r.first_row for r in runs.runs)
    rows = {r.lines - 1 for r in runs.runs}
    _row(
        "dpcalc, default flags",
        runs,
        f"{first:17.2f}s  {','.join(map(str, rows))}  {per * n / runs.median:6.0f}×",
    )
    print(
        f"   targets: tree RSS ≤ 500 MB: {runs.tree_rss / MB:.0f} MB, {_verdict(runs.tree_rss <= 500 * MB)}; "
        f"first row ≤ 5 s: {first:.2f} s, {_verdict(first <= 5)}"
    )


def _timed(fn, repeat):
    """(wall times of ``repeat`` calls, the last result)."""
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t)
    return times, out


def bench_calibration(repeat):
    from dpcalc.engine.dpsgd import noise_calibration

    print(
        f"4. Noise calibration for ε = {TARGET_EPS:g} (δ=1e-5, q=256/60000, T=14063, σ to a relative {RTOL:g}), "
        f"{repeat} runs"
    )
    print(HEAD + "σ, vs dp_accounting")
    peer = _peer()
    peer["epsilon"](Q_A, SIGMA_A, STEPS_A, DELTA)
    for conv in ("optimal", "balle"):  # warm up (imports, first-call set-up), as dp_accounting is already
        noise_calibration.calibrate_noise(0.01, 100, DELTA, 1.0, conversion=conv)

    def ours(conv):
        return lambda: noise_calibration.calibrate_noise(
            Q_A, STEPS_A, DELTA, TARGET_EPS, conversion=conv, rtol=RTOL
        )[0]

    t_bis, (sigma_bis, evals) = _timed(lambda: peer["bisect"](Q_A, STEPS_A, DELTA, TARGET_EPS, RTOL), repeat)
    ratios = []
    print("   in-process, after one warm-up call:")
    for conv in ("optimal", "balle"):
        times, sigma = _timed(ours(conv), repeat)
        ratios.append(statistics.median(t_bis) / statistics.median(times))
        _times_row(f"dpcalc calibrate_noise ({conv})", times, f"σ = {float(sigma):.6f}, {ratios[-1]:.0f}×")
    _times_row("bisection over dp_accounting", t_bis, f"σ = {sigma_bis:.6f} ({evals} ε evaluations)")

    print("   whole process (stdout through a pipe):")
    keep = {"stdout": "pipe", "keep": True}
    args = ["--target-epsilon", "3", "--sample-rate", "0.0042666666666666667", "--steps", "14063"]
    ours_p, out = measure([*DPCALC, "sgd-epsilon", *args, *TAIL], repeat, **keep)
    with tempfile.TemporaryDirectory() as tmp:
        script = os.path.join(tmp, "bisect_dp_accounting.py")
        with open(script, "w") as f:
            f.write(PEER_SCRIPT)
        cmd = [sys.executable, script, repr(Q_A), str(STEPS_A), "1e-5", str(TARGET_EPS), str(RTOL)]
        theirs_p, out_peer = measure(cmd, repeat, **keep)
    ratio_p = theirs_p.median / ours_p.median
    ours_row, peer_row = _csv(out.stdout)[0], _csv(out_peer.stdout)[0]
    _row(
        "dpcalc sgd-epsilon --target-epsilon 3",
        ours_p,
        f"σ = {float(ours_row['noise_multiplier']):.6f}, {ratio_p:.0f}×",
    )
    _row("python bisect_dp_accounting.py", theirs_p, f"σ = {float(peer_row['sigma']):.6f}")
    numpy_, _ = measure([sys.executable, "-c", "import numpy"], repeat)
    _row("python -c 'import numpy'", numpy_)
    print(
        f"   targets: ≥ 20× dp_accounting (issue 11, in process): {ratios[0]:.0f}× (balle {ratios[1]:.0f}×), "
        f"{_verdict(min(ratios) >= 20)}; whole process {ratio_p:.0f}× (not a target: the interpreter's start-up "
        f"with numpy alone allows at most {theirs_p.median / numpy_.median:.0f}×; "
        f"dpcalc is {ours_p.median / numpy_.median:.2f}× import numpy)"
    )


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument(
        "--repeat", type=int, default=5, help="runs per row (default 5; the 100k grid: at most 3)"
    )
    ap.add_argument("--sample", type=int, default=100, help="grid configurations timed with dp_accounting")
    ap.add_argument("--quick", action="store_true", help="skip the ~100,000-configuration grid")
    args = ap.parse_args()
    import dpcalc

    ensure_bytecode()

    versions = ", ".join(
        f"{p} {importlib.metadata.version(p)}" for p in ("dp-accounting", "prv-accountant", "numpy")
    )
    print(
        f"dpcalc {dpcalc.__version__}, Python {sys.version.split()[0]}, {versions}; {os.cpu_count()} CPUs, "
        f"load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}"
    )
    t0 = time.perf_counter()
    bench_one_query(args.repeat)
    per = bench_grid_10k(args.repeat, args.sample)
    if not args.quick:
        bench_grid_100k(min(args.repeat, 3), per)
    bench_calibration(args.repeat)
    print(
        f"total {time.perf_counter() - t0:.0f} s; load average now "
        f"{' '.join(f'{x:.2f}' for x in os.getloadavg())}"
    )


if __name__ == "__main__":
    main()
