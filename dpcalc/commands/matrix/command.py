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

Its parameters and their checks are :mod:`.params`; its runs, their work estimated and spread, :mod:`.plan`.
"""

from __future__ import annotations

import math

import numpy as np

from dpcalc.commands import noise_std, schema, sweep
from dpcalc.commands.matrix import sampled
from dpcalc.commands.matrix.params import MatrixParams, setting, step_counts
from dpcalc.commands.matrix.plan import _Built, execute, work
from dpcalc.engine.grid import product
from dpcalc.engine.matrix import accounting as acc
from dpcalc.engine.matrix.sensitivity import sensitivity
from dpcalc.engine.matrix.strategies import MAX_DENSE_STEPS, MAX_STEPS, strategy
from dpcalc.engine.mechanisms import sgm
from dpcalc.engine.pld.search import boundary
from dpcalc.errors import InputError
from dpcalc.result import PlotSpec, Result

SIGMA_RTOL = sampled.SIGMA_RTOL
COLUMNS = tuple(schema.names("matrix"))


#: The options a sweep of the rows' numbers is made of (their values: :func:`_swept_values`), for the 10⁸-row limit.
_SWEPT = ("target-epsilon", "noise-multiplier", "delta")


def _swept_values(p: MatrixParams) -> tuple:
    return tuple(x if x is not None else [None] for x in (p.target_epsilon, p.sigma, p.delta))


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
        f"norm{noise_std.caption(p.noise_std)}; sensitivity_bound: the sensitivity of C under the participation, an "
        "upper bound (sensitivity_exact: true where it is the exact value)"
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
