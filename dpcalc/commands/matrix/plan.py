"""The runs of a ``dpcalc matrix`` question (step count, strategy, participation pattern, accountant: the methods
that apply to each, by the rules of :mod:`dpcalc.engine.matrix.accounting` and :mod:`.sampled`), their work
estimated before any of it is done (CPU seconds from measured costs, Monte Carlo samples) and executed
(:func:`dpcalc.execution.plan`, :func:`dpcalc.commands.sweep.run`).  The ε rows (:mod:`.command`) and the risk
rows (:mod:`.risk`) share them."""

from __future__ import annotations

import numpy as np

from dpcalc import execution
from dpcalc.commands import sweep
from dpcalc.commands.matrix import sampled
from dpcalc.commands.matrix.params import MatrixParams
from dpcalc.engine.matrix import accounting as acc
from dpcalc.engine.matrix.sensitivity import sensitivity
from dpcalc.engine.matrix.strategies import strategy
from dpcalc.errors import InputError

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
    """Why ``method`` does not apply to the run (the rules of :func:`dpcalc.commands.matrix.command._rows` and
    :func:`~dpcalc.commands.matrix.command._steps_rows`), or None; ``s_of()`` builds the strategy, only where the
    pattern leaves the question open."""
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
