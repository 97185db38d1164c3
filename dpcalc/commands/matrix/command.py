"""``dpcalc matrix``: the privacy of training with correlated noise — the matrix mechanism C·G + Z of DP-FTRL and
banded matrix factorization (docs/math.md §12).

For each strategy (:mod:`dpcalc.engine.matrix.strategies`) and participation pattern it reports the sensitivity of
C (exact where a theorem makes it so, else a certified upper bound: :mod:`dpcalc.engine.matrix.sensitivity`),
then one row per accountant that applies (:mod:`dpcalc.engine.matrix.accounting`): ``gaussian`` (no
amplification, exact), ``bandmf-rdp`` and ``bandmf-pld`` (amplified BandMF, cyclic Poisson sampling), ``mmcc``
(Poisson sampling over the whole run, a non-negative C: :mod:`dpcalc.engine.matrix.mmcc`, ε only) and ``mc``
(balls-in-bins participation by Monte Carlo, a bound holding with a confidence:
:mod:`dpcalc.engine.matrix.balls_in_bins_mc`, ε only).  With
``target_epsilon`` and no noise multiplier: the smallest noise multiplier of each row.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from dpcalc import execution
from dpcalc.commands import choices, schema, sweep
from dpcalc.commands.matrix import sampled
from dpcalc.engine.grid import product
from dpcalc.engine.matrix import accounting as acc
from dpcalc.engine.matrix.sensitivity import Participation, sensitivity
from dpcalc.engine.matrix.strategies import MAX_DENSE_STEPS, MAX_STEPS, strategy
from dpcalc.engine.mechanisms import sgm
from dpcalc.engine.pld.search import boundary
from dpcalc.errors import InputError
from dpcalc.result import PlotSpec, Result

#: The accountants, in the order rows are shown (dpcalc.commands.choices, read by --help without numpy).
MATRIX_METHODS = choices.MATRIX_METHODS
#: The most strategies (and participation patterns) in one run.  Kept: they are repeated options written out one by
#: one (never a range), each parsed, read (a file) and checked against its size limits (MAX_STEPS, MAX_DENSE_STEPS:
#: one strategy's n × n matrices held in memory) before anything is computed; the sweeps of the numeric options
#: (--steps, --noise-multiplier, --delta, ...) are estimated instead (:func:`work`), never refused.
MAX_STRATEGIES = 20
#: The work of a sweep (CPU seconds on one core), from quick timings of ``matrix`` rows on the development machine
#: (2 cores, shared; time.process_time, scipy loaded), each rounded up with a margin of about 1.5 to 3:
#: a run (a strategy built and its sensitivity under one pattern: 5 to 7 ms measured for Toeplitz C up to 10⁵ steps,
#: with its gaussian row), plus per step of a Toeplitz C, or per entry of the n × n Gram matrix of a dense one (tree,
#: file: 0.05 s measured for the tree of 1000 steps under min-sep, 2.4 s for 4096 steps).
SECONDS_RUN = 0.01
SECONDS_TOEPLITZ_STEP = 1e-7
SECONDS_DENSE_CELL = 1.5e-7
#: Per row, by question (None: ε at σ; "sigma": the least σ for a target ε; "steps": the most steps) and accountant,
#: measured as above: gaussian 0.6 ms a row in a sweep (vectorised), bandmf-rdp 7 to 30 ms (a Rényi curve per σ),
#: bandmf-pld 40 to 250 ms (one PLD per σ; 250 ms with 64 bands over 10⁵ steps); σ for a target: gaussian 5 ms,
#: bandmf-rdp 31 ms, bandmf-pld 0.24 s, mmcc 6.5 s (its search: at most 16 MMCC evaluations within
#: mmcc_calibration.SEARCH_WORK); the most steps (a search over n, a strategy and sensitivity at each candidate):
#: gaussian 0.05 to 0.1 s, bandmf-rdp 0.25 s, bandmf-pld 2.1 s, mmcc 3.7 s.  mmcc's ε rows are estimated from its own
#: operation counts (:func:`dpcalc.commands.matrix.sampled.mmcc_seconds`), mc's from its samples
#: (:func:`dpcalc.commands.matrix.sampled.mc_seconds`).
SECONDS_ROW = {
    None: {"gaussian": 2e-3, "bandmf-rdp": 0.05, "bandmf-pld": 0.4},
    "sigma": {"gaussian": 0.01, "bandmf-rdp": 0.1, "bandmf-pld": 0.6, "mmcc": 15.0},
    "steps": {"gaussian": 0.3, "bandmf-rdp": 0.6, "bandmf-pld": 5.0, "mmcc": 10.0},
}
SIGMA_RTOL = sampled.SIGMA_RTOL
COLUMNS = tuple(schema.names("matrix"))


@dataclass(frozen=True)
class MatrixParams:
    """The inputs of ``dpcalc matrix``: the strategies (``--strategy`` values), the steps n (one, or a sweep: rows
    for each), the participation
    (``single``, ``min-sep:k=K,b=B`` or ``cyclic-poisson:b=B[,q=Q]``; one or a sequence: rows for each),
    ``delta`` and ``sigma`` (sequences: a sweep) or ``target_epsilon``; ``method`` one of :data:`MATRIX_METHODS`
    or ``"all"``."""

    strategies: Sequence[str]
    steps: int | Sequence[int] | None
    delta: Sequence[float] | None
    sigma: Sequence[float] | None = None
    target_epsilon: Sequence[float] | None = None
    participation: str | Sequence[str] = "single"
    method: str = "all"
    eps_error: float | None = None
    mc_samples: int | None = None  # mc: Monte Carlo samples per direction [MC_SAMPLES]
    confidence: float | None = None  # mc: the probability with which its ε holds [MC_CONFIDENCE]
    seed: int | None = None  # mc: the seed of the sampling [0]
    mmcc_memory_cap: int | None = None  # mmcc: the PLD's memory cap (set by the searches; None: its default)


def participation(text: str) -> Participation:
    """A ``--participation`` value (its keys checked, each fault named)."""
    kind, _, rest = text.partition(":")
    kind = kind.strip()
    params = {}
    for part in filter(None, rest.split(",")):
        key, eq, value = part.partition("=")
        if not eq:
            raise InputError(f"--participation {text!r}: {part!r} is not KEY=VALUE")
        params[key.strip()] = value.strip()
    allowed = {
        "single": (),
        "min-sep": ("k", "b"),
        "cyclic-poisson": ("b", "q"),
        "poisson": ("q",),
        "balls-in-bins": ("b",),
    }
    if kind not in allowed:
        raise InputError(
            f"--participation {text!r}: must be single, min-sep:k=K,b=B, cyclic-poisson:b=B[,q=Q], poisson:q=Q "
            "or balls-in-bins:b=B"
        )
    for key in params:
        if key not in allowed[kind]:
            raise InputError(f"--participation {text!r}: unknown key {key!r}")
    for key in allowed[kind]:
        if key not in params and (key != "q" or kind == "poisson"):
            raise InputError(f"--participation {text!r}: give {key}=")

    def whole(key):
        if not re.fullmatch(r"[0-9]+", params[key]) or int(params[key]) < 1:
            raise InputError(
                f"--participation {text!r}: {key} must be a whole number >= 1, got {params[key]!r}"
            )
        return int(params[key])

    if kind == "single":
        return Participation("single")
    if kind == "min-sep":
        return Participation("min-sep", k=whole("k"), b=whole("b"))
    if kind == "balls-in-bins":
        return Participation("balls-in-bins", b=whole("b"))
    q = None
    if "q" in params:
        try:
            q = float(params["q"])
        except ValueError:
            q = float("nan")
        if not 0 < q <= 1:
            raise InputError(f"--participation {text!r}: q must be in (0, 1], got {params['q']!r}")
    if kind == "poisson":
        return Participation("poisson", b=1, q=q)
    return Participation("cyclic", b=whole("b"), q=q)


def step_counts(p: MatrixParams) -> list[int] | None:
    """The step counts of ``--steps`` (one, or a sweep), checked; None where they are left out (solved for).
    A file's C fixes n: it takes one step count (its size), never a sweep."""
    if p.steps is None:
        return None
    counts = [int(p.steps)] if isinstance(p.steps, (int, np.integer)) else [int(n) for n in p.steps]
    if not counts:
        raise InputError("--steps: give a number of steps")
    for n in counts:
        if not 1 <= n <= MAX_STEPS:
            raise InputError(f"--steps: must be a whole number in [1, {MAX_STEPS}], got {n}")
    if len(counts) > 1:
        for text in p.strategies:
            if text.partition(":")[0].strip() == "file":
                raise InputError(
                    f"--steps: a sweep of steps cannot go with --strategy {text!r} (a file's C fixes the steps: "
                    "give one --steps, its size)"
                )
    # the strategies' size limits grow with n: a run past them is refused before any row is computed (or estimated)
    for text in p.strategies:
        strategy(text, max(counts))
    return counts


def setting(p: MatrixParams, counts, question: str | None = None):
    """``(patterns, methods, strict)`` of a run: the ``--participation`` patterns parsed (each checked against
    every step count), the methods asked for and whether a method that does not apply is an error (one method
    and one pattern asked for) rather than rows left out; the Monte Carlo options checked."""
    if not p.strategies or len(p.strategies) > MAX_STRATEGIES:
        raise InputError(f"--strategy: give 1 to {MAX_STRATEGIES} strategies")
    texts = [p.participation] if isinstance(p.participation, str) else list(p.participation)
    if not texts or len(texts) > MAX_STRATEGIES:
        raise InputError(f"--participation: give 1 to {MAX_STRATEGIES} patterns")
    parts = [participation(t) for t in texts]
    for part in parts:
        for n in counts or ():
            if part.kind in ("cyclic", "balls-in-bins") and part.b > n:
                raise InputError(f"--participation: b = {part.b} partitions is more than the {n} steps")
    methods = list(MATRIX_METHODS) if p.method == "all" else [p.method]
    mc_opts = {"--mc-samples": p.mc_samples, "--confidence": p.confidence, "--seed": p.seed}
    if (given := [k for k, v in mc_opts.items() if v is not None]) and (
        "mc" not in methods or all(part.kind != "balls-in-bins" for part in parts)
    ):
        raise InputError(
            f"{given[0]}: applies to the mc row (--participation balls-in-bins:b=B, --method mc or all)"
        )
    # one pattern asked for: a method that does not apply to it is an error; several: its rows are left out
    strict = p.method != "all" and len(parts) == 1
    return parts, methods, strict


#: The options a sweep of the rows' numbers is made of (their values: :func:`_swept_values`), for the 10⁸-row limit.
_SWEPT = ("target-epsilon", "noise-multiplier", "delta")


def _swept_values(p: MatrixParams) -> tuple:
    return tuple(x if x is not None else [None] for x in (p.target_epsilon, p.sigma, p.delta))


class _Built:
    """The strategy of a run and its sensitivity under each pattern, built once for consecutive runs of the same
    step count and strategy (per process: each worker builds its own)."""

    def __init__(self, p: MatrixParams, parts):
        self.parts, self.key, self.s, self.sens = parts, None, None, {}

    def __call__(self, text: str, n: int, j: int):
        if self.key != (text, n):
            self.key, self.s, self.sens = (text, n), strategy(text, n), {}
        if j not in self.sens:
            self.sens[j] = sensitivity(self.s, self.parts[j])
        return self.s, self.sens[j]


def _kind(text: str) -> str:
    return text.partition(":")[0].strip()


def _refusal(s_of, part, method: str, solve) -> str | None:
    """Why ``method`` does not apply to the run (the rules of :func:`_rows` and :func:`_steps_rows`), or None;
    ``s_of()`` builds the strategy, only where the pattern leaves the question open."""
    if method == "gaussian":
        return None
    if method.startswith("bandmf"):
        return acc.bandmf_refusal(s_of() if part.kind == "cyclic" and part.q is not None else None, part)
    if method == "mmcc":
        return sampled.mmcc_refusal(
            s_of() if part.kind == "poisson" else None, part, None if solve == "steps" else solve
        )
    if solve == "steps":
        return sampled.MC_ONLY_EPSILON
    return sampled.mc_refusal(s_of() if part.kind == "balls-in-bins" and not solve else None, part, solve)


def runs(p: MatrixParams, counts, parts, methods, strict: bool, solve=None):
    """Yield ``(n, text, j, method, s)`` for every run whose method applies, in the order of the rows (step count,
    strategy, pattern, method; ``s`` the strategy where it was built to decide, else None); a method that does not
    apply is an error where ``strict``.  Nothing is computed but the strategies the rules need."""
    for n in counts or [None]:
        for text in p.strategies:
            if solve == "steps" and _kind(text) == "file":
                raise InputError(f"--strategy {text!r}: a file's C fixes the steps; give --steps")
            cache: list = []

            def s_of(text=text, n=n, cache=cache):
                if not cache:
                    cache.append(strategy(text, 2 if solve == "steps" else n))
                return cache[0]

            for j, part in enumerate(parts):
                for m in methods:
                    why = _refusal(s_of, part, m, solve)
                    if why is not None:
                        if strict:
                            raise InputError(f"--method {m}: {why}")
                        continue
                    yield n, text, j, m, (cache[0] if cache else None)


def run_seconds(text: str, n: int | None) -> float:
    """The estimated CPU seconds of a run's strategy and sensitivity (the constants above)."""
    n = 1 if n is None else n
    if _kind(text) in ("tree", "file"):
        return SECONDS_RUN + SECONDS_DENSE_CELL * float(n) * float(n)
    return SECONDS_RUN + SECONDS_TOEPLITZ_STEP * float(n)


def work(p: MatrixParams, counts, parts, methods, strict, solve, g: dict):
    """``(runs, seconds, samples)``: the runs whose methods apply (:func:`runs`, as ``(n, text, j, method)``), the
    estimated CPU seconds of their rows (one per point of the grid ``g``) each on one core, and the Monte Carlo
    samples among them (both directions, every σ).  Refusals of a single run (its size, its Monte Carlo sample's
    width, an MMCC search's target or δ) are raised here, before any work or estimate."""
    rows = g["delta"].size
    out, seconds, samples, seen = [], 0.0, 0.0, set()
    sigmas = np.unique(np.asarray(p.sigma, float)) if p.sigma is not None else np.array([])
    for n, text, j, m, s in runs(p, counts, parts, methods, strict, solve):
        out.append((n, text, j, m))
        if (n, text, j) not in seen:
            seen.add((n, text, j))
            seconds += run_seconds(text, n)
        part = parts[j]
        if m == "mc":
            sampled.mc_check(s, part)
            k = sigmas.size
            samples += 2.0 * sampled.mc_count(p) * k
            seconds += sampled.mc_seconds(sampled.mc_count(p), part.b, k)
        elif m == "mmcc" and solve is not None:
            sampled.mmcc_search_check(g, p)
            seconds += SECONDS_ROW[solve][m] * rows
        elif m == "mmcc":
            seconds += sampled.mmcc_seconds(
                s if s is not None else strategy(text, n), part.q, sigmas, rows // max(1, sigmas.size)
            )
        else:
            seconds += SECONDS_ROW[solve][m] * rows
    if not out:
        raise InputError(f"--method {p.method}: applies to none of the strategies and patterns given")
    return out, seconds, samples


#: What the estimate of a sweep without Monte Carlo names (a sweep with it names its samples: "Monte Carlo").
WHAT = "matrix accounting"


def execute(compute, tasks, seconds: float, samples: float, rows: int):
    """Yield ``compute(task)`` for every task, in order, after planning the work (:func:`dpcalc.execution.plan`:
    the estimate said when long, ``--max-seconds``' cap, the bar).  Without Monte Carlo the tasks are spread over
    the processes or cluster of the settings in force (:func:`dpcalc.commands.sweep.run`), a bar of rows; with it,
    they run in order in this process and the samples of each are spread instead (their batches,
    :func:`dpcalc.execution.mapper`), a bar of samples (the other rows' work counted in the estimate, not the bar)."""
    if not samples:
        yield from sweep.run(
            compute, tasks, seconds=seconds, unit="rows", what=WHAT, weights=[rows] * len(tasks)
        )
        return
    execution.plan(seconds, samples, "samples", what="Monte Carlo")
    for task in tasks:
        yield compute(task)


def matrix(params: MatrixParams) -> Result:
    """One row per (step count, strategy, pattern, accountant, σ or target ε, δ) (module docstring); with
    ``target_epsilon`` the smallest noise multiplier, or (``steps`` None, ``sigma`` given) the largest number of
    steps."""
    p = params
    counts = step_counts(p)
    if counts is None:
        if p.target_epsilon is None or p.sigma is None:
            raise InputError(
                "give --steps (or leave it out with --target-epsilon and --noise-multiplier to solve for it)"
            )
        solve = "steps"
    elif (p.sigma is None) == (p.target_epsilon is None):
        raise InputError("give --noise-multiplier, or --target-epsilon to solve for it")
    else:
        solve = "sigma" if p.target_epsilon is not None else None
    if p.delta is None:
        raise InputError("give --delta (ε is reported at it)")
    parts, methods, strict = setting(p, counts)
    axes = {}
    if p.target_epsilon is not None:
        axes["target"] = np.asarray(p.target_epsilon, float)
    if p.sigma is not None:
        axes["sigma"] = np.asarray(p.sigma, float)
    axes["delta"] = np.asarray(p.delta, float)
    g = product(**axes)
    sizes = {"--steps": len(counts or [None]), "--strategy": len(p.strategies), "--participation": len(parts)}
    sizes.update({f"--{k}": int(np.size(x)) for k, x in zip(_SWEPT, _swept_values(p))})
    sweep.check_rows(sizes, len(methods), per="methods")
    tasks, seconds, samples = work(p, counts, parts, methods, strict, solve, g)
    out: dict[str, list] = {c: [] for c in COLUMNS}
    built = _Built(p, parts)

    def compute(run):
        n, text, j, m = run
        one: dict[str, list] = {c: [] for c in COLUMNS}
        # as sgd-epsilon evaluates one chunk: the same numbers as its rows (C = I is DP-SGD exactly)
        with sgm.light_start():
            if solve == "steps":
                _steps_rows(one, text, parts[j], m, g, p, strict=strict)
            else:
                s, sens = built(text, n, j)
                _rows(one, s, parts[j], sens, m, g, solve, p, strict=strict)
        return one

    for one in execute(compute, tasks, seconds, samples, rows=g["delta"].size):
        for c in COLUMNS:
            out[c] += one[c]
    if not out["method"]:
        raise InputError(f"--method {p.method}: applies to none of the strategies and patterns given")
    headline = {"sigma": "noise_multiplier", "steps": "steps"}.get(solve, "epsilon")
    caption = (
        f"participation: {', '.join(pt.label() for pt in parts)}; noise: C·G + Z with Z ~ N(0, σ²) per entry, σ relative to the clipping "
        "norm; sensitivity_bound: the sensitivity of C under the participation, an upper bound (sensitivity_exact: true "
        "where it is the exact value)"
    )
    if "mc" in out["method"]:
        caption += (
            "; mc: balls-in-bins by Monte Carlo, ε an upper bound with probability confidence over the sampling "
            "(not certified; never the headline of -q or a budget check)"
        )
    if "mmcc" in out["method"]:
        caption += (
            "; mmcc: ε of the run under Poisson sampling (Choquette-Choo et al. 2024, arXiv:2310.15526), "
            "a certified bound (δ − δ_tail to the PLD of the row mixtures, δ_tail to the tail events)"
        )
    if solve == "sigma":
        caption += (
            "; noise_multiplier: the smallest (within a factor 1.0001 for bandmf and mmcc rows, exact for gaussian) "
            "with ε <= target"
        )
    if solve == "steps":
        caption += (
            "; steps: the largest with ε <= target (ε computed there; one more step computed and above it)"
        )
    res = Result(
        out,
        headline=headline,
        title="Matrix mechanism (correlated noise)",
        caption=caption,
        # what the inputs determine, or a method adds: never a configuration of its own
        derived=(
            "sensitivity_bound",
            "sensitivity_exact",
            "dpsgd_steps",
            "bands",
            "sample_rate",
            "confidence",
            "samples",
        ),
    )
    res.plot = _plot(out, p, solve)
    return res


def _steps_rows(out, text, part, method, g, p, strict):
    """The largest n with ε <= target for each row of ``g`` (a monotone search over whole n)."""
    if text.partition(":")[0].strip() == "file":
        raise InputError(f"--strategy {text!r}: a file's C fixes the steps; give --steps")
    small = strategy(text, 2)
    dense = not small.toeplitz or (not small.monotone_toeplitz() and part.kind != "single")
    hi = float(sampled.MMCC_SEARCH_STEPS if method == "mmcc" else MAX_DENSE_STEPS if dense else MAX_STEPS)
    lo = float(part.b if part.kind == "cyclic" else 1)
    for i in range(g["delta"].size):
        target, sigma, delta = (float(g[k][i]) for k in ("target", "sigma", "delta"))
        one = {"sigma": np.array([sigma]), "delta": np.array([delta]), "target": np.array([target])}
        budget = sampled.MmccBudget(p, target, delta) if method == "mmcc" else None

        def test(n, one=one, budget=budget):
            s = strategy(text, int(n))
            sens = sensitivity(s, part)
            row: dict = {c: [] for c in COLUMNS}
            if budget is not None and not budget.admits(s, part.q, one["sigma"][0]):
                return math.inf, None  # not computed (the search's work limit): never reported
            if budget is None:
                _rows(row, s, part, sens, method, one, None, p, strict=True)
                return row["epsilon"][0], row
            try:
                _rows(row, s, part, sens, method, one, None, budget.params, strict=True)
            except (InputError, OverflowError):  # an MMCC computation refused: not computed, never reported
                budget.cut = True
                return math.inf, None
            return row["epsilon"][0], row

        if method.startswith("bandmf") and (why := acc.bandmf_refusal(small, part)) is not None:
            if strict:
                raise InputError(f"--method {method}: {why}")
            return
        why = sampled.mmcc_refusal(small, part, None) if method == "mmcc" else sampled.MC_ONLY_EPSILON
        if method == "mc" or (method == "mmcc" and why is not None):
            if strict:
                raise InputError(f"--method {method}: {why}")
            return
        found = boundary(test, target, max(lo, 100.0), ok_above=False, lo=lo, hi=hi, integer=True)
        if found.x is None:
            row = {c: [None] for c in COLUMNS}
            row.update(
                strategy=[text],
                participation=[part.label()],
                method=[method],
                steps=[0],
                noise_multiplier=[sigma],
                delta=[delta],
                target_epsilon=[target],
                note=[f"no solution: even {int(lo)} steps exceed the target ε"],
            )
        else:
            row = found.info
            row["target_epsilon"] = [target]
            if found.x >= hi:
                row["note"] = [
                    row["note"][0] + f"; steps: the whole range searched meets the target (up to {int(hi)})"
                ]
            elif budget is not None and budget.cut:
                row["note"] = [
                    row["note"][0] + "; steps: the search reached mmcc's work limit: larger n not all "
                    "computed, so the answer may be below the largest"
                ]
        for c in COLUMNS:
            out[c] += row[c]


def _rows(out, s, part, sens, method, g, solve, p, strict):
    n = g["delta"].size
    why = acc.bandmf_refusal(s, part) if method.startswith("bandmf") else None
    if method == "mmcc":
        why = sampled.mmcc_refusal(s, part, solve)
    if method == "mc":
        why = sampled.mc_refusal(s, part, solve)
    if why is not None:
        if strict:
            raise InputError(f"--method {method}: {why}")
        return
    lower = est = np.full(n, np.nan)
    # the bandmf rows come with notes of their own (below)
    note = [f"{sampled.NOTES[method]}; sensitivity: {sens.how}"] * n if method in sampled.NOTES else None
    confidence = samples = None
    if method == "mc":
        sigma = g["sigma"]
        eps, est, note, samples, confidence = sampled.mc_rows(s, part, g, p)
    elif method == "mmcc" and solve:
        sigma, eps, lower, est, note = sampled.mmcc_sigma_rows(s, part, sens, g, p)
    elif method == "mmcc":
        sigma, eps, lower, est, note = sampled.mmcc_epsilon_rows(s, part, sens, g, p)
    elif method == "gaussian":
        if solve:
            sigma = acc.unamplified_sigma(sens.value, g["target"], g["delta"])
            eps = acc.unamplified_epsilon(sens.value, sigma, g["delta"])
        else:
            sigma, eps = g["sigma"], acc.unamplified_epsilon(sens.value, g["sigma"], g["delta"])
    else:
        name = method.removeprefix("bandmf-")
        if solve:
            sigma, eps, lower, est, how = acc.bandmf_sigma(
                s, part, g["target"], g["delta"], name, SIGMA_RTOL, p.eps_error
            )
        else:
            sigma = g["sigma"]
            eps, lower, est, how = acc.bandmf_epsilon(s, part, sigma, g["delta"], name, p.eps_error)
        note = [f"{h}; sensitivity: {sens.how}" for h in how]
    steps, _ = acc.bandmf_run(s, part) if method.startswith("bandmf") else (None, None)
    values = {
        "strategy": [s.label] * n,
        "participation": [part.label()] * n,
        "steps": [s.n] * n,
        "bands": [s.bands] * n,
        "sample_rate": [part.q] * n,
        "method": [method] * n,
        "sensitivity_bound": [sens.value] * n,
        "sensitivity_exact": [sens.exact] * n,
        "noise_multiplier": [float(v) for v in np.asarray(sigma, float).reshape(-1)],
        "delta": g["delta"].tolist(),
        "target_epsilon": g["target"].tolist() if solve else [None] * n,
        "epsilon": [float(v) for v in np.asarray(eps, float).reshape(-1)],
        "epsilon_lower": [None if np.isnan(v) else float(v) for v in np.asarray(lower, float).reshape(-1)],
        "epsilon_estimate": [None if np.isnan(v) else float(v) for v in np.asarray(est, float).reshape(-1)],
        "dpsgd_steps": [steps] * n,
        "confidence": [confidence] * n,
        "samples": [samples] * n,
        "note": note,
    }
    for k in COLUMNS:
        out[k] += values[k]


def _plot(out, p, solve):
    if len(out["method"]) < 2:
        return None
    swept_steps = solve != "steps" and len(set(out["steps"])) > 1
    if len(p.delta) > 1:
        x = "delta"
    elif solve is not None and (len(p.target_epsilon) > 1 or not swept_steps):
        x = "target_epsilon"
    elif solve is None and (len(p.sigma) > 1 or not swept_steps):
        x = "noise_multiplier"
    else:
        x = "steps"
    y = {"sigma": "noise_multiplier", "steps": "steps"}.get(solve, "epsilon")
    return PlotSpec(
        x=x,
        y=y,
        series="method",
        group=("strategy",) + (("steps",) if swept_steps and x != "steps" else ()),
        band=("epsilon_lower", "epsilon") if solve is None else None,
        logx=x == "delta",
        autolog=True,
        title="Matrix mechanism: "
        + {"noise_multiplier": "smallest noise multiplier", "steps": "largest steps"}.get(y, "ε"),
        ylabel={"noise_multiplier": "noise multiplier σ", "steps": "steps n"}.get(y, "ε (nats)"),
    )
