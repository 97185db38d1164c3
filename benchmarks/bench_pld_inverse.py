"""Benchmarks of dpcalc's PLD inverse questions (``sgd-epsilon --target-epsilon --accountant pld``)
against their peers, side by side in one run.

Every row is a whole process (``python ...`` in a fresh interpreter: start-up, imports, parsing,
computation and output all count); dpcalc runs with its default flags and ``-f csv``.  The configuration
is the README's 60-epoch example: batch size 256 of 60,000 examples (q = 256/60000), 60 epochs
(T = ⌈60·60000/256⌉ = 14063 steps), δ = 1e-5.

1. Smallest σ for a target ε = 1, 3, 8 (one process per target):
   ``dpcalc sgd-epsilon --target-epsilon E --batch-size 256 --dataset-size 60000 --epochs 60 --delta 1e-5
   --accountant pld`` and the same with ``--accountant rdp``, beside
   * dp-accounting: ``calibrate_dp_mechanism`` over its PLD accountant (add/remove neighbours,
     ``value_discretization_interval=1e-4``, pessimistic estimate, the default) for the event
     ``SelfComposedDpEvent(PoissonSampledDpEvent(q, GaussianDpEvent(σ)), T)``, bracket
     ``LowerEndpointAndGuess(0.3, 1.0)``, ``tol=5e-5`` (absolute in σ, Brent's method: σ within 5e-5 of
     its root, a relative ≤ 1e-4 for every σ ≥ 0.5; the answers here are 0.66–2.03);
   * Opacus: ``opacus.accountants.utils.get_noise_multiplier(..., accountant="prv",
     epsilon_tolerance=0.01)`` (a bisection over its PRV accountant), imported without torch: stub
     modules for ``opacus`` (a package whose ``__path__`` is the installed one, so its ``__init__`` is not
     run) and ``opacus.optimizers`` (a dummy ``DPOptimizer``).  Not a dependency of the project: install it
     with ``pip install --no-deps opacus``; without it, its published test value is printed instead.
   Both peers are scripts written to a temporary file at run time, run once per target (seconds to tens of
   seconds each) after an untimed import of their package.  Verdicts per target: dpcalc's σ at most 0.1 %
   above dp-accounting's; dpcalc's σ certified (``sgd_epsilon_pld(q, σ, T, δ).upper <= E``, in-process,
   default bracket width) and not needlessly large (``sgd_epsilon_pld(q, σ·(1 − 1e-3), T, δ).upper > E``);
   dp-accounting's time / dpcalc's ≥ 10×; dpcalc ≤ 1.5 s (median).  The "cert. ε" column is dpcalc's
   certified upper ε at each row's σ (in-process), so every answer is judged by the same yardstick.
2. Largest number of steps for ε = 3 at σ = 1.1 (``--target-epsilon 3 --sigma 1.1 --batch-size 256
   --dataset-size 60000 --delta 1e-5``, pld and rdp) beside an integer bisection over steps with
   dp-accounting's PLD accountant (same settings; bracket by doubling from 1 step).  Verdicts: dpcalc
   ≤ 1.5 s; its answer certified, and its answer × (1 + 1e-3) (at least one more step) not.
3. Largest batch size for ε = 3 at σ = 1.1, 60 epochs (``--target-epsilon 3 --sigma 1.1 --dataset-size
   60000 --epochs 60 --delta 1e-5``, pld and rdp; no peer answers this question).  Verdicts: the answer
   certified (q = B/N, T = ⌈60·N/B⌉), one more example per batch not.

How (see ``_measure.py``): dpcalc's package is byte-compiled first (as ``pip install .`` leaves it); its
rows give min / median / max wall time of N runs after one untimed warm-up run, the peers' rows their single run; "tree RSS" is the peak of the summed VmRSS of the process and
its descendants (polled every 20 ms, in as many runs again, not timed), "max RSS" the largest single process (``ru_maxrss``, at least the
launcher's ~9 MB), "CPU" the median user + system time of the process tree (launcher included, ~0.01 s):
on a loaded machine wall time exceeds it.  1 MB = 10^6 bytes.  "time ratio": the row's median wall time /
dpcalc pld's.  The verdicts are on wall time; the CPU figures beside them show how much of it the load took.

Run: ``python benchmarks/bench_pld_inverse.py [--repeat N] [--quick]`` (N = 3 by default: about 3 minutes;
``--quick`` runs the peers for ε = 3 only and leaves out the steps bisection).  Needs dp-accounting
(a test-only dependency), optionally opacus; Linux.  The machine may be shared: compare the ratios more
than the absolute times.
"""

from __future__ import annotations

import argparse
import csv
import importlib.metadata
import importlib.util
import io
import math
import os
import resource
import statistics
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _measure import MB, Runs, ensure_bytecode, run  # noqa: E402

BATCH, N, EPOCHS, DELTA = 256, 60000, 60, 1e-5
Q = BATCH / N
STEPS = math.ceil(EPOCHS * N / BATCH)  # 14063
TARGETS = (1.0, 3.0, 8.0)
SIGMA, TARGET = 1.1, 3.0  # sections 2 and 3
TOL = 5e-5  # dp-accounting's tolerance on σ (absolute)
BUDGET = 1.5  # seconds, dpcalc per question
DPCALC = [sys.executable, "-m", "dpcalc", "sgd-epsilon"]
TAIL = ["--delta", "1e-5", "-f", "csv"]

DPA_SIGMA = '''\
"""Smallest σ with ε <= target: dp_accounting.calibrate_dp_mechanism over its PLD accountant."""
import sys

import dp_accounting as dpa

q, steps, delta, target, tol = float(sys.argv[1]), int(sys.argv[2]), *map(float, sys.argv[3:6])
evaluations = 0


def accountant():
    relation = dpa.NeighboringRelation.ADD_OR_REMOVE_ONE
    return dpa.pld.PLDAccountant(relation, value_discretization_interval=1e-4)


def event(sigma):
    global evaluations
    evaluations += 1
    return dpa.SelfComposedDpEvent(dpa.PoissonSampledDpEvent(q, dpa.GaussianDpEvent(sigma)), steps)


sigma = dpa.calibrate_dp_mechanism(
    accountant, event, target, delta, bracket_interval=dpa.LowerEndpointAndGuess(0.3, 1.0), tol=tol
)
n = evaluations
print(f"sigma,epsilon,evaluations\\n{sigma!r},{accountant().compose(event(sigma)).get_epsilon(delta)!r},{n}")
'''

DPA_STEPS = '''\
"""Largest number of steps with ε <= target: integer bisection over dp_accounting's PLD accountant."""
import sys

import dp_accounting as dpa

q, sigma, delta, target = map(float, sys.argv[1:5])
evaluations = 0


def epsilon(steps):
    global evaluations
    evaluations += 1
    acc = dpa.pld.PLDAccountant(dpa.NeighboringRelation.ADD_OR_REMOVE_ONE, value_discretization_interval=1e-4)
    acc.compose(dpa.SelfComposedDpEvent(dpa.PoissonSampledDpEvent(q, dpa.GaussianDpEvent(sigma)), steps))
    return acc.get_epsilon(delta)


lo, hi = 0, 1  # invariant: eps(lo) <= target < eps(hi) (0 steps: ε = 0)
while (eps_hi := epsilon(hi)) <= target:
    lo, hi = hi, 2 * hi
while hi - lo > 1:
    mid = (lo + hi) // 2
    if epsilon(mid) <= target:
        lo = mid
    else:
        hi = mid
n = evaluations
print(f"steps,epsilon,evaluations\\n{lo},{epsilon(lo)!r},{n}")
'''

OPACUS = '''\
"""Smallest σ with ε <= target: Opacus's get_noise_multiplier (PRV accountant), imported without torch."""
import importlib.util
import sys
import types
import warnings

spec = importlib.util.find_spec("opacus")
if spec is None:
    sys.exit("opacus is not installed (pip install --no-deps opacus)")
package = types.ModuleType("opacus")  # its __init__ imports torch: not run
package.__path__ = list(spec.submodule_search_locations)
optimizers = types.ModuleType("opacus.optimizers")  # imported by opacus.accountants.accountant
optimizers.DPOptimizer = type("DPOptimizer", (), {})
sys.modules.update({"opacus": package, "opacus.optimizers": optimizers})
from opacus.accountants.utils import get_noise_multiplier  # noqa: E402

if sys.argv[1:] == ["--import-only"]:
    sys.exit(0)
warnings.simplefilter("ignore")  # "Optimal order is the largest alpha" from the RDP domain estimate
q, steps, delta, target = float(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3]), float(sys.argv[4])
sigma = get_noise_multiplier(
    target_epsilon=target,
    target_delta=delta,
    sample_rate=q,
    steps=steps,
    accountant="prv",
    epsilon_tolerance=0.01,
)
print(f"sigma\\n{sigma!r}")
'''

# The value Opacus's own test checks (opacus/tests/accountants_test.py, test_get_noise_multiplier_prv_epochs).
OPACUS_PUBLISHED = "σ = 1.34766 (1.34765625) for ε = 8, δ = 1e-5, q = 0.04, 90 epochs"


# ----------------------------------------------------------------------------------------------- output

HEAD = f"   {'':34s} {'min':>8s} {'median':>8s} {'max':>8s} {'CPU':>8s} {'tree RSS':>9s} {'max RSS':>8s}  "


def _t(x):
    return f"{x:7.3f}s" if x < 10 else f"{x:7.2f}s"


def _mb(x):
    return f"{x / MB:6.0f} MB" if x else f"{'–':>9s}"  # – : the process ended before the first poll


def _row(label, runs, extra=""):
    print(
        f"   {label:34s} {_t(runs.min)} {_t(runs.median)} {_t(runs.max)} {_t(runs.cpu)} "
        f"{_mb(runs.tree_rss)} {runs.max_rss / MB:5.0f} MB  {extra}"
    )


def _wall_cpu(runs):
    return f"{runs.median:.3f} s (median; CPU {runs.cpu:.3f} s)"


def _n(repeat):
    return f"{repeat} run{'s' * (repeat != 1)}"


def _csv(text):
    return list(csv.DictReader(io.StringIO(text)))[0]


def _pf(ok):
    return "n/a " if ok is None else "PASS" if ok else "FAIL"


VERDICTS = []  # (section, text, ok)


def _verdict(section, text, ok):
    VERDICTS.append((section, text, ok))
    print(f"   {_pf(ok)}  {text}")


def _upper(q, sigma, steps):
    from dpcalc.engine.dpsgd.pld_accounting import sgd_epsilon_pld

    return float(sgd_epsilon_pld(q, sigma, steps, DELTA).upper)


def _script(tmp, name, text):
    path = os.path.join(tmp, name)
    with open(path, "w") as f:
        f.write(text)
    return path


KEEP = {"stdout": "pipe", "keep": True}


def _children_cpu():
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def _measure(cmd, repeat, *, warmup=True):
    """``_measure.measure`` (``repeat`` runs after an untimed warm-up run), plus ``runs.cpu``: the median
    CPU time (user + system) of the whole process tree, launcher included, from this process's
    ``RUSAGE_CHILDREN`` before and after each run; (runs, stdout of the first run)."""
    first = run(cmd, **KEEP) if warmup else None
    out, polled, cpu = [], [], []
    for _ in range(repeat):
        before = _children_cpu()
        out.append(run(cmd, **KEEP, poll=False))
        cpu.append(_children_cpu() - before)
        polled.append(run(cmd, **KEEP))  # the memory, from a run that is not timed (the polling takes CPU)
    runs = Runs(out, polled)
    runs.cpu = statistics.median(cpu)
    return runs, (first or out[0]).stdout


def _once(cmd):
    """One timed run of a slow peer (its package imported once before, untimed, by the caller)."""
    return _measure(cmd, 1, warmup=False)


def _dpcalc(args, repeat):
    runs, out = _measure([*DPCALC, *args, *TAIL], repeat)
    return runs, _csv(out)


# ------------------------------------------------------------------------------------------------- rows


def bench_sigma(repeat, quick, tmp):
    print(
        f"1. Smallest σ for a target ε (q = {BATCH}/{N}, T = {STEPS}, δ = 1e-5); dpcalc: {_n(repeat)} "
        "after a warm-up, peers: one run"
    )
    print(HEAD + f"{'σ':>9s} {'ε (own)':>8s} {'cert. ε':>8s}  {'σ/σ_pld−1':>9s} {'time ratio':>10s}")
    dpa = _script(tmp, "calibrate_dp_accounting.py", DPA_SIGMA)
    opa = _script(tmp, "calibrate_opacus.py", OPACUS)
    run([sys.executable, "-c", "import dp_accounting"])  # untimed: first import of the peers' packages
    try:
        run([sys.executable, opa, "--import-only"])
        opacus_error = None
    except RuntimeError as e:
        opacus_error = str(e).strip().splitlines()[-1]
    data = {}

    def line(label, runs, sigma, eps, ours):
        cert = _upper(Q, sigma, STEPS)
        rel = f"{sigma / ours[1] - 1:+9.4%}" if ours else f"{'':9s}"
        ratio = f"{runs.median / ours[0].median:9.1f}×" if ours else f"{'':10s}"
        eps_s = f"{eps:8.5f}" if eps is not None else f"{'–':>8s}"
        _row(label, runs, f"{sigma:9.6f} {eps_s} {cert:8.5f}  {rel} {ratio}")

    for target in TARGETS:
        e = f"{target:g}"
        args = ["--target-epsilon", e, "--batch-size", str(BATCH), "--dataset-size", str(N)]
        args += ["--epochs", str(EPOCHS)]
        pld, row = _dpcalc([*args, "--accountant", "pld"], repeat)
        ours = (pld, float(row["noise_multiplier"]))
        line(f"ε = {e}: dpcalc --accountant pld", pld, ours[1], float(row["epsilon"]), None)
        rdp, row = _dpcalc([*args, "--accountant", "rdp"], repeat)
        line(
            "       dpcalc --accountant rdp", rdp, float(row["noise_multiplier"]), float(row["epsilon"]), ours
        )
        peer = None
        if not quick or target == 3:
            runs, out = _once([sys.executable, dpa, repr(Q), str(STEPS), "1e-5", e, repr(TOL)])
            row = _csv(out)
            peer = (runs, float(row["sigma"]))
            line(
                f"       dp-accounting ({row['evaluations']} evals)",
                runs,
                peer[1],
                float(row["epsilon"]),
                ours,
            )
        theirs = None
        if opacus_error is None and (not quick or target == 3):
            runs, out = _once([sys.executable, opa, repr(Q), str(STEPS), "1e-5", e])
            theirs = (runs, float(_csv(out)["sigma"]))
            line("       Opacus PRV (tol 0.01)", runs, theirs[1], None, ours)
        data[target] = (ours, peer, theirs)

    if opacus_error is not None:
        print(f"   Opacus not run: {opacus_error}")
        print(f"   its published test value (another configuration, no comparison here): {OPACUS_PUBLISHED}")
    print(
        "   cert. ε: dpcalc's certified upper ε (PLD, in-process) at the row's σ; ε (own): the tool's own ε"
    )

    for target, ((pld, sigma), peer, theirs) in data.items():
        e = f"{target:g}"
        print(f"   ε = {e}:")
        if peer is not None:
            _verdict(
                1,
                f"ε = {e}: σ within 0.1 % above dp-accounting's: {sigma:.6f} vs {peer[1]:.6f} "
                f"({sigma / peer[1] - 1:+.4%})",
                sigma <= peer[1] * 1.001,
            )
        else:
            _verdict(1, f"ε = {e}: σ within 0.1 % above dp-accounting's (--quick: not run)", None)
        upper, below = _upper(Q, sigma, STEPS), _upper(Q, sigma * (1 - 1e-3), STEPS)
        _verdict(1, f"ε = {e}: σ certified: upper ε(σ) = {upper:.6f} <= {e}", upper <= target)
        _verdict(
            1, f"ε = {e}: σ not 0.1 % too large: upper ε(σ·(1 − 1e-3)) = {below:.6f} > {e}", below > target
        )
        if peer is not None:
            ratio, cpu = peer[0].median / pld.median, peer[0].cpu / pld.cpu
            _verdict(
                1,
                f"ε = {e}: ≥ 10× faster than dp-accounting: {ratio:.1f}× (CPU time {cpu:.1f}×)",
                ratio >= 10,
            )
        else:
            _verdict(1, f"ε = {e}: ≥ 10× faster than dp-accounting (--quick: not run)", None)
        _verdict(1, f"ε = {e}: dpcalc ≤ {BUDGET} s: {_wall_cpu(pld)}", pld.median <= BUDGET)
        if theirs is not None:
            print(
                f"         vs Opacus: time {theirs[0].median / pld.median:.1f}× dpcalc's "
                f"(CPU time {theirs[0].cpu / pld.cpu:.1f}×), "
                f"σ {theirs[1] / sigma - 1:+.3%} (Opacus / dpcalc − 1)"
            )


def bench_steps(repeat, quick, tmp):
    print(
        f"2. Largest number of steps for ε = {TARGET:g} at σ = {SIGMA} (q = {BATCH}/{N}, δ = 1e-5); dpcalc: "
        f"{_n(repeat)} after a warm-up, peer: one run"
    )
    print(HEAD + f"{'steps':>7s} {'ε (own)':>8s} {'cert. ε':>8s}  {'steps ratio':>11s} {'time ratio':>10s}")
    args = ["--target-epsilon", f"{TARGET:g}", "--sigma", str(SIGMA), "--batch-size", str(BATCH)]
    args += ["--dataset-size", str(N)]

    def line(label, runs, steps, eps, ours):
        cert = _upper(Q, SIGMA, steps)
        rel = f"{steps / ours[1]:11.4f}" if ours else f"{'':11s}"
        ratio = f"{runs.median / ours[0].median:9.1f}×" if ours else f"{'':10s}"
        _row(label, runs, f"{steps:7d} {eps:8.5f} {cert:8.5f}  {rel} {ratio}")

    pld, row = _dpcalc([*args, "--accountant", "pld"], repeat)
    ours = (pld, int(row["steps"]))
    line("dpcalc --accountant pld", pld, ours[1], float(row["epsilon"]), None)
    rdp, row = _dpcalc([*args, "--accountant", "rdp"], repeat)
    line("dpcalc --accountant rdp", rdp, int(row["steps"]), float(row["epsilon"]), ours)
    if quick:
        print("   dp-accounting integer bisection: not run (--quick)")
    else:
        script = _script(tmp, "max_steps_dp_accounting.py", DPA_STEPS)
        runs, out = _once([sys.executable, script, repr(Q), str(SIGMA), "1e-5", f"{TARGET:g}"])
        row = _csv(out)
        line(
            f"dp-accounting ({row['evaluations']} evals)",
            runs,
            int(row["steps"]),
            float(row["epsilon"]),
            ours,
        )
    steps = ours[1]
    more = max(steps + 1, math.ceil(steps * (1 + 1e-3)))
    upper, above = _upper(Q, SIGMA, steps), _upper(Q, SIGMA, more)
    _verdict(2, f"dpcalc ≤ {BUDGET} s: {_wall_cpu(pld)}", pld.median <= BUDGET)
    _verdict(2, f"steps certified: upper ε({steps}) = {upper:.6f} <= {TARGET:g}", upper <= TARGET)
    _verdict(2, f"steps not 0.1 % too few: upper ε({more}) = {above:.6f} > {TARGET:g}", above > TARGET)


def bench_batch(repeat):
    print(
        f"3. Largest batch size for ε = {TARGET:g} at σ = {SIGMA}, {EPOCHS} epochs of {N} (δ = 1e-5; "
        f"no peer); {_n(repeat)} after a warm-up"
    )
    print(HEAD + f"{'batch':>7s} {'steps':>7s} {'ε (own)':>8s} {'cert. ε':>8s}  {'time ratio':>10s}")
    args = ["--target-epsilon", f"{TARGET:g}", "--sigma", str(SIGMA), "--dataset-size", str(N)]
    args += ["--epochs", str(EPOCHS)]

    def steps_of(batch):
        return math.ceil(EPOCHS * N / batch)

    pld, row = _dpcalc([*args, "--accountant", "pld"], repeat)
    batch = int(row["batch_size"])
    assert int(row["steps"]) == steps_of(batch), row
    _row(
        "dpcalc --accountant pld",
        pld,
        f"{batch:7d} {int(row['steps']):7d} {float(row['epsilon']):8.5f} "
        f"{_upper(batch / N, SIGMA, steps_of(batch)):8.5f}",
    )
    rdp, row = _dpcalc([*args, "--accountant", "rdp"], repeat)
    b = int(row["batch_size"])
    cert = _upper(b / N, SIGMA, steps_of(b))
    _row(
        "dpcalc --accountant rdp",
        rdp,
        f"{b:7d} {int(row['steps']):7d} {float(row['epsilon']):8.5f} {cert:8.5f}  "
        f"{rdp.median / pld.median:9.1f}×",
    )
    upper, above = (
        _upper(batch / N, SIGMA, steps_of(batch)),
        _upper((batch + 1) / N, SIGMA, steps_of(batch + 1)),
    )
    print(f"   pld: batch size {batch} ({batch / b - 1:+.1%} vs rdp's {b}); {pld.median:.3f} s (median)")
    _verdict(3, f"batch size certified: upper ε(B = {batch}) = {upper:.6f} <= {TARGET:g}", upper <= TARGET)
    _verdict(
        3, f"batch size not too small: upper ε(B = {batch + 1}) = {above:.6f} > {TARGET:g}", above > TARGET
    )


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=3, help="timed runs per dpcalc row (default 3)")
    ap.add_argument(
        "--quick", action="store_true", help="peers for ε = 3 only, no dp-accounting steps bisection"
    )
    args = ap.parse_args()
    import dpcalc

    ensure_bytecode()

    def version(p):
        try:
            return f"{p} {importlib.metadata.version(p)}"
        except importlib.metadata.PackageNotFoundError:
            return f"{p} (not installed)"

    versions = ", ".join(version(p) for p in ("dp-accounting", "opacus", "numpy", "scipy"))
    print(
        f"dpcalc {dpcalc.__version__}, Python {sys.version.split()[0]}, {versions}; {os.cpu_count()} CPUs, "
        f"load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}"
    )
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        bench_sigma(args.repeat, args.quick, tmp)
        bench_steps(args.repeat, args.quick, tmp)
    bench_batch(args.repeat)
    print("Summary:")
    for section, text, ok in VERDICTS:
        print(f"   {_pf(ok)}  {section}. {text}")
    counts = {k: sum(1 for *_, ok in VERDICTS if _pf(ok).strip() == k) for k in ("PASS", "FAIL", "n/a")}
    print(
        f"   {counts['PASS']} PASS, {counts['FAIL']} FAIL, {counts['n/a']} not run; total "
        f"{time.perf_counter() - t0:.0f} s; load average now {' '.join(f'{x:.2f}' for x in os.getloadavg())}"
    )


if __name__ == "__main__":
    main()
