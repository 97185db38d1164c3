"""DP-SGD accounting: ε of a training run, or the noise / steps for a target ε (docs/math.md §3).

:func:`sgd_epsilon` checks the combination of inputs, builds their cartesian product, asks the
accountants of :mod:`dpcalc.engine.dpsgd` (and the PLD accountant, docs/math.md §7) and packs the
answer into a :class:`~dpcalc.result.Result`.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np

from dpcalc.commands import samplers, schema, sweep
from dpcalc.commands.choices import SGD_ACCOUNTANTS, SGD_CONVERSIONS
from dpcalc.commands.sgd_rows import SIGMA_RTOL, accountant_rows
from dpcalc.engine.dpsgd.allocation import epoch_steps
from dpcalc.engine.grid import product
from dpcalc.errors import DpcalcWarning, InputError
from dpcalc.result import PlotSpec, Result, Stream

#: The accountants and conversions offered (dpcalc.commands.choices, read by --help without numpy).
ACCOUNTANTS = SGD_ACCOUNTANTS
CONVERSIONS = SGD_CONVERSIONS
METHOD_LABEL = {
    "rdp": "rdp",
    "pld": "pld",
    "abadi": "abadi-asymptotic",
    "bassily": "bassily-reference",
    "shuffle": "shuffle-gaussian",  # dpcalc.commands.samplers
    "mc": "balls-in-bins-mc",  # dpcalc.commands.samplers
}
#: --accountant mc: Monte Carlo samples per direction, and the confidence of its ε (defaults).
MC_SAMPLES = 1_000_000
MC_CONFIDENCE = 0.95
#: Combinations per chunk of a sweep (memory is bounded by the chunk, not by the sweep).
CHUNK = 2048


#: The most configurations the pld accountant is asked for in one run (each takes about a second: a PLD, or
#: a search of several); a larger sweep is refused up front (the other accountants stream it).
PLD_MAX_CONFIGS = 1000

#: The smallest --target-epsilon when solving for the noise multiplier or the sample rate (bounded work:
#: smaller targets made the searches evaluate ε ever closer to 0, minutes per configuration).
TARGET_MIN = 1e-3


#: CPU seconds per configuration of each accountant at its default flags, measured (benchmarks/) with a
#: margin: the rdp accountant's by sampling (a Rényi curve per configuration; balls-in-bins and random
#: allocation sum over the batch's allocations), the Monte Carlo accountant's per sample.
SECONDS_EACH = {"abadi": 1e-4, "bassily": 1e-4, "pld": 0.1, "shuffle": 2.5e-3}
RDP_SECONDS_EACH = {
    "poisson": 2.5e-3,
    "fixed-size": 0.025,
    "truncated-poisson": 0.02,
    "shuffle": 2.5e-3,
    "balls-in-bins": 0.5,
    "random-allocation": 0.5,
}
#: samplings whose forward rdp rows share one Rényi curve across --steps, --epochs and --delta; such a
#: row costs RDP_SECONDS_PER_ROW beside its share of the curve (measured: about 7,000 rows a second)
CURVE_REUSED = frozenset({"poisson", "shuffle"})
RDP_SECONDS_PER_ROW = 1.5e-4
MC_SECONDS_PER_SAMPLE = 3e-6
MC_SECONDS_PER_DRAW = 4e-8  # per sample and step (dpcalc.commands.samplers.MC_WORK_MAX)
#: --target-epsilon: a search costs about this many evaluations of ε per configuration (the sample rate's
#: more: each evaluation a new curve); the pld accountant's calibration reuses its distributions.
SEARCH_FACTOR = {"sigma": 10, "steps": 15, "q": 100}
PLD_SEARCH_FACTOR = {"sigma": 3, "steps": 3, "q": 10}


def check_work(p: SgdEpsilonParams, names, solve, sizes: dict[str, int]) -> None:
    """Refuse, before any work, a sweep whose configurations would take the accountants asked for
    more than :data:`dpcalc.commands.sweep.WORK_SECONDS` (naming the swept options, the count and the limit)."""
    if p.tuning is not None:
        return  # bounded by --tuning-runs' own limits
    each = 0.0
    for name in names:
        if name == "rdp":
            cost = RDP_SECONDS_EACH.get(p.sampling, 0.5)
            if solve is None and p.sampling in CURVE_REUSED:
                # one Rényi curve per (rate, noise); the steps, epochs and δ of a sweep reuse it
                configs = math.prod(sizes.values())
                curves = math.prod(v for k, v in sizes.items() if k not in ("--steps", "--epochs", "--delta"))
                cost = cost * curves / configs + RDP_SECONDS_PER_ROW
        elif name == "mc":
            steps = max(p.steps) if p.steps is not None else 0  # with --epochs: bounded by MC_WORK_MAX
            cost = (MC_SECONDS_PER_SAMPLE + MC_SECONDS_PER_DRAW * steps) * (p.mc_samples or MC_SAMPLES)
        else:
            cost = SECONDS_EACH.get(name, 0.1)
        each += cost * (PLD_SEARCH_FACTOR if name == "pld" else SEARCH_FACTOR).get(solve, 1)
    what = f"--accountant {p.accountant}" + (f" --sampling {p.sampling}" if p.sampling != "poisson" else "")
    if solve is not None:
        what += " with --target-epsilon"
    budget = sweep.WORK_SECONDS if solve is None else sweep.SEARCH_WORK_SECONDS
    sweep.check_work(sizes, each, what, unit="configurations", budget=budget)


@dataclass(frozen=True)
class SgdEpsilonParams:
    """The inputs of ``dpcalc sgd-epsilon``: each numeric field a sequence of values (a sweep) or None.

    Give ``sigma`` (the noise multiplier), the sample rate (``sample_rate``, or ``batch_size`` with
    ``dataset_size``), the length (``steps``, or ``epochs``) and ``delta``.  With ``target_epsilon``,
    leave out ``sigma`` (to get the smallest one) or the length (to get the largest number of steps).
    ``accountant`` is one of :data:`ACCOUNTANTS` or ``"all"``; ``conversion`` one of
    :data:`CONVERSIONS`; ``sampling`` ``"poisson"``, ``"fixed-size"``, ``"truncated-poisson"`` (with
    ``max_batch_size``), ``"shuffle"``, ``"balls-in-bins"`` or ``"random-allocation"``; ``neighbors``
    ``"add-remove"`` or ``"replace-one"`` (None: the usual one for the sampling); ``eps_error`` the
    width of the PLD bracket (a number, or a sequence of one number).
    """

    delta: Sequence[float]
    sigma: Sequence[float] | None = None
    sample_rate: Sequence[float] | None = None
    batch_size: Sequence[int] | None = None
    dataset_size: Sequence[int] | None = None
    max_batch_size: Sequence[int] | None = None
    steps: Sequence[int] | None = None
    epochs: Sequence[float] | None = None
    target_epsilon: Sequence[float] | None = None
    accountant: str = "rdp"
    conversion: str = "optimal"
    sampling: str = "poisson"
    neighbors: str | None = None
    eps_error: float | Sequence[float] | None = None
    tuning: object | None = None  # a dpcalc.engine.composition.tuning.TuningRuns (--tuning-runs)
    mc_samples: int | None = None  # --accountant mc (balls-in-bins): Monte Carlo samples per direction
    confidence: float | None = None  # --accountant mc: the probability with which its ε holds
    seed: int | None = None  # --accountant mc: the seed of the sampling


def sgd_epsilon(params: SgdEpsilonParams) -> Result:
    """ε of every combination of the inputs under each accountant asked for, or the smallest noise
    multiplier / largest number of steps within ``target_epsilon`` (one row per combination and
    accountant).  Raises :class:`~dpcalc.errors.InputError` for an impossible combination."""
    return sgd_epsilon_stream(params, chunk=None).collect()


def sgd_epsilon_stream(
    params: SgdEpsilonParams, *, chunk: int | None = CHUNK, jobs: int | None = 1
) -> Stream:
    """:func:`sgd_epsilon` as a :class:`~dpcalc.result.Stream` of chunks of at most ``chunk``
    combinations each (0: :data:`CHUNK`; ``None``: one chunk), computed by ``jobs`` processes (``None``: as many as
    the sweep can use, see :func:`dpcalc.commands.sweep.auto_jobs`).  Memory is bounded by the
    chunk, not by the sweep; the checks run before the first chunk."""
    p, names, solve = _checked(params)
    sizes = {opt: len(v) for opt, v in _swept(p).items()}
    sweep.check_rows(sizes, len(names))
    if "pld" in names and p.tuning is None:  # one PLD (or PLD search) per configuration
        configs = math.prod(sizes.values())
        if configs > PLD_MAX_CONFIGS:
            swept = " × ".join(f"{k} ({v:,})" for k, v in sizes.items() if v > 1)
            raise InputError(
                f"--accountant {p.accountant}: {swept} make {configs:,} configurations for the pld accountant, "
                f"more than {PLD_MAX_CONFIGS:,} (about a second each); narrow a range, split the sweep, or use "
                "--accountant rdp"
            )
    check_work(p, names, solve, sizes)
    g, kw = _prepare(p, names)
    n = g["q"].size
    columns = _column_names(p, names, solve, g)
    caption = _caption(p, names, solve, g)
    rate = "batch_size" if p.dataset_size is not None else "sample_rate"
    headline = {"sigma": "noise_multiplier", "steps": "steps", "q": rate}.get(
        solve, "epsilon"
    )  # never an estimate
    derived = _derived(p, solve)
    pieces = sweep.slices(n, CHUNK if chunk == 0 else chunk)
    tasks = [(name, lo, hi) for name in names for lo, hi in pieces]
    # a sweep of one chunk may evaluate small arrays without scipy (a quick start for single queries);
    # a sweep of several chunks uses scipy throughout, so that no value depends on where a chunk ends
    light = len(pieces) == 1

    def compute(task):
        name, lo, hi = task
        part = {k: v[lo:hi] for k, v in g.items()}
        part_kw = {k: (v[lo:hi] if k in ("dataset_size", "max_batch_size") else v) for k, v in kw.items()}
        cols = accountant_rows(p, name, solve, part, part_kw, light, strict=len(names) == 1)
        return Result(
            _result_columns(p, solve, part, [(name, cols)], columns),
            headline=headline,
            title="DP-SGD accounting",
            caption=caption,
            derived=derived,
        )

    def finish(result):
        result.plot = _plot_spec(p, result.columns, headline)
        return result

    return Stream(
        columns,
        sweep.run(compute, tasks, jobs, rows=n * len(names)),
        headline=headline,
        title="DP-SGD accounting",
        caption=caption,
        finish=finish,
        derived=derived,
    )


def _derived(p: SgdEpsilonParams, solve) -> tuple[str, ...]:
    """The columns each accountant finds for itself with --target-epsilon, besides the headline (see
    :mod:`dpcalc.render.configs`): the epochs within the steps found; the sample rate, batch size and the
    length not given (steps from --epochs, or the epochs within --steps)."""
    if solve == "steps":
        return ("epochs",)
    if solve == "q":
        return ("sample_rate", "batch_size", "steps" if p.epochs is not None else "epochs")
    return ()


def _swept(p: SgdEpsilonParams) -> dict:
    """Option -> its values, for the options given (their product is the grid)."""
    options = {
        "--sample-rate": p.sample_rate,
        "--batch-size": p.batch_size,
        "--dataset-size": p.dataset_size,
        "--max-batch-size": p.max_batch_size,
        "--noise-multiplier": p.sigma,
        "--steps": p.steps,
        "--epochs": p.epochs,
        "--delta": p.delta,
        "--target-epsilon": p.target_epsilon,
    }
    return {k: v for k, v in options.items() if v is not None}


def _invalid(option: str, message: str) -> InputError:
    """An error about one option's value, worded as the command line words a bad option value."""
    return InputError(f"Invalid value for '{option}': {message}")


def _checked(p: SgdEpsilonParams):
    """The inputs with the neighbouring relation and ``eps_error`` resolved, the accountants to run
    and what to solve for (None, ``"sigma"`` or ``"steps"``); the checks run in the order the
    command line has always reported them."""
    neighbors = p.neighbors
    if neighbors is None:
        neighbors = "replace-one" if p.sampling in ("fixed-size", "shuffle") else "add-remove"
    if p.sample_rate is not None and p.batch_size is not None:
        raise InputError("give either --sample-rate or --batch-size with --dataset-size, not both")
    if p.steps is not None and p.epochs is not None:
        raise InputError("give either --steps or --epochs, not both")
    rate_given = p.sample_rate is not None or p.batch_size is not None
    length_given = p.steps is not None or p.epochs is not None
    if p.batch_size is not None and p.dataset_size is None:
        raise InputError("--batch-size needs --dataset-size (the sample rate is batch size / dataset size)")
    solve = None
    if p.target_epsilon is None:
        if not rate_given:
            raise InputError("give --sample-rate, or --batch-size with --dataset-size")
        if p.sigma is None:
            raise InputError("missing option --noise-multiplier (or give --target-epsilon to solve for it)")
        if not length_given:
            raise InputError("give --steps or --epochs (or --target-epsilon to solve for the steps)")
    else:
        left_out = [not rate_given, p.sigma is None, not length_given]
        if sum(left_out) != 1:
            raise InputError(
                "with --target-epsilon, leave out exactly one option to solve for: --noise-multiplier, "
                "--steps/--epochs, or --sample-rate/--batch-size"
                + (" (give --dataset-size to solve for the batch size)" if sum(left_out) > 1 else "")
            )
        solve = "q" if not rate_given else ("sigma" if p.sigma is None else "steps")
    if solve is not None and p.delta is not None and 0 in p.delta:
        raise _invalid(
            "--delta",
            "0 with --target-epsilon: the subsampled Gaussian's privacy loss is unbounded, so no finite ε "
            "holds at δ = 0 and nothing meets the target; give δ > 0",
        )
    if solve in ("sigma", "q") and min(p.target_epsilon) < TARGET_MIN:
        raise _invalid(
            "--target-epsilon",
            f"{min(p.target_epsilon):g} is below {TARGET_MIN:g} when solving for the "
            f"{'noise multiplier' if solve == 'sigma' else 'sample rate'}: the search evaluates ε ever closer "
            "to 0, where the accountants' certified ε is not computed within bounded work",
        )
    if p.batch_size is not None:
        bad = [(b, n) for b in p.batch_size for n in p.dataset_size if b > n]
        if bad:
            raise _invalid("--dataset-size", f"{bad[0][1]} is smaller than the batch size {bad[0][0]}")
    if p.tuning is not None:
        if solve not in (None, "sigma"):
            raise InputError(
                "--tuning-runs with --target-epsilon solves for the noise multiplier only: give the sample rate "
                "and the length, and leave out --noise-multiplier"
            )
        if p.accountant not in ("rdp", "all"):
            raise InputError(
                f"--tuning-runs applies to --accountant rdp (or all), not {p.accountant}: its bound is an RDP bound"
            )
    samplers.check_truncated(p)
    samplers.check_mc(p, solve)
    if p.sampling == "shuffle":
        names = samplers.check_shuffle(p.accountant, neighbors, solve, p.tuning)
    elif p.accountant == "all":
        names = [a for a in ACCOUNTANTS if _applies(a, p.sampling, neighbors, p.dataset_size, solve)]
    else:
        names = [p.accountant]
    if p.accountant == "pld":
        samplers.check_pld(p.sampling)
    if p.eps_error is not None and "pld" not in names:
        raise InputError("--eps-error applies to --accountant pld (or all)")
    eps_error = p.eps_error
    if eps_error is not None and not isinstance(eps_error, (int, float)):
        if len(eps_error) != 1:
            raise _invalid("--eps-error", "takes a single value, not a list or range")
        eps_error = eps_error[0]
    if p.accountant == "mc":  # the Monte Carlo accountant's defaults (reproducible: a fixed seed)
        p = replace(
            p,
            mc_samples=MC_SAMPLES if p.mc_samples is None else p.mc_samples,
            confidence=MC_CONFIDENCE if p.confidence is None else p.confidence,
            seed=0 if p.seed is None else p.seed,
        )
    return replace(p, neighbors=neighbors, eps_error=eps_error), names, solve


def _applies(name, sampling, neighbors, dataset_size, solve=None) -> bool:
    if name == "mc":  # Monte Carlo: slow, and a bound with a confidence only; run when asked for
        return False
    if name == "pld":
        return samplers.pld_applies(sampling)
    if name == "abadi":
        return (sampling, neighbors) == ("poisson", "add-remove")
    if name == "bassily":
        return (sampling, neighbors) == ("fixed-size", "replace-one") and dataset_size is not None
    return True


def _grid(p: SgdEpsilonParams):
    """The cartesian product of the inputs, as flat arrays (q from ``sample_rate`` or B/N)."""
    axes = {}
    if p.sample_rate is not None:
        axes["q"] = np.asarray(p.sample_rate, float)
        if p.dataset_size is not None:
            axes["n"] = np.asarray(p.dataset_size, float)
    elif p.batch_size is not None:
        axes["b"] = np.asarray(p.batch_size, float)
        axes["n"] = np.asarray(p.dataset_size, float)
    elif p.dataset_size is not None:  # the batch size is solved for
        axes["n"] = np.asarray(p.dataset_size, float)
    if p.max_batch_size is not None:
        axes["bmax"] = np.asarray(p.max_batch_size, float)
    if p.sigma is not None:
        axes["sigma"] = np.asarray(p.sigma, float)
    if p.steps is not None:
        axes["steps"] = np.asarray(p.steps, float)
    if p.epochs is not None:
        axes["epochs"] = np.asarray(p.epochs, float)
    axes["delta"] = np.asarray(p.delta, float)
    if p.target_epsilon is not None:
        axes["target"] = np.asarray(p.target_epsilon, float)
    g = product(**axes)
    if "q" not in g:
        g["q"] = g["b"] / g["n"] if "b" in g else np.full(g["delta"].shape, np.nan)  # nan: solved for
    if "epochs" in g:
        # steps = ceil(E/q) = ceil(E·N/B) (exact for whole numbers below 2^53)
        ratio = g["epochs"] * g["n"] / g["b"] if "b" in g else g["epochs"] / g["q"]
        g["steps"] = np.maximum(np.ceil(ratio), 1.0)
        if p.sampling in ("shuffle", "balls-in-bins"):  # whole epochs of floor(N/B) batches (§3.6, §3.8)
            g["steps"] = samplers.shuffle_steps(g)
    return g


def _prepare(p: SgdEpsilonParams, names):
    """The grid of combinations and the accountants' keyword arguments (warning where δ >= 1/N)."""
    samplers.check_setting(p.sampling, p.neighbors)
    g = _grid(p)
    if "n" in g and np.any(g["delta"] >= 1.0 / g["n"]):
        warnings.warn(
            "--delta: δ >= 1/dataset size: a mechanism that publishes one random example is then (0, δ)-DP; "
            "choose δ well below 1/N",
            DpcalcWarning,
            stacklevel=2,
        )
    if np.any(g["delta"] == 0):  # every accountant reports inf there (docs/math.md §2.7)
        warnings.warn(
            "--delta 0: the subsampled Gaussian's privacy loss is unbounded: no finite ε at δ = 0 (ε = inf)",
            DpcalcWarning,
            stacklevel=2,
        )
    kw = dict(sampling=p.sampling, neighbors=p.neighbors, conversion=p.conversion)
    if "n" in g:
        kw["dataset_size"] = g["n"]
    elif "bassily" in names:
        raise InputError("--dataset-size: needed by the bassily reference (its formula involves n)")
    if "bmax" in g:
        kw["max_batch_size"] = g["bmax"]
    return g, kw


#: The note of every row of an accountant (pld rows carry their own: a refusal's reason).
_NOTE = {
    "abadi": "asymptotic closed form: not a guarantee where valid is false",
    "bassily": "reference formula: not a guarantee where valid is false",
}

#: Every column sgd-epsilon prints, in order (the documented schema of dpcalc.commands.schema).
ALL_COLUMNS = tuple(schema.names("sgd-epsilon"))


def _column_names(p: SgdEpsilonParams, names, solve, g) -> list[str]:
    """The columns: always :data:`ALL_COLUMNS`, whatever the inputs and accountants (a column that does
    not apply to a row is empty), so that scripts can rely on one schema."""
    return list(ALL_COLUMNS)


def _caption(p: SgdEpsilonParams, names, solve, g) -> str:
    relation = samplers.relation_caption(p.sampling, p.neighbors)
    caption = f"sampling: {p.sampling}; neighbours: {p.neighbors} ({relation})"
    if "rdp" in names:
        caption += f"; conversion: {p.conversion}"
    caption += samplers.caption(p.sampling)
    if "pld" in names and p.sampling in samplers.ALLOCATION:
        caption += "; pld: epsilon is a certified upper bound (no lower end), epsilon_estimate an estimate"
    elif "pld" in names:
        caption += "; pld: [epsilon_lower, epsilon] is the certified bracket, epsilon_estimate lies inside it"
    if p.tuning is not None:
        caption += f"; tuning: {p.tuning.label()}, the best of K runs released (rdp only)"
    if "epochs" in g and p.sampling not in ("shuffle", "balls-in-bins"):
        caption += "; steps = ceil(epochs / sample_rate)"
    if solve == "sigma":
        caption += f"; noise_multiplier: the smallest (within a factor {1 + SIGMA_RTOL:g}) with ε <= target"
    elif solve == "steps":
        caption += "; steps: the largest with ε <= target (epochs: the whole epochs within them)"
    elif solve == "q" and "n" in g:
        caption += "; batch_size: the largest with ε <= target (sample_rate = batch_size / dataset_size)"
    elif solve == "q":
        caption += f"; sample_rate: the largest (within a factor {1 + SIGMA_RTOL:g}) with ε <= target"
    return caption


def _result_columns(p: SgdEpsilonParams, solve, g, rows, columns) -> dict:
    """The output columns of ``rows`` ((accountant, answers) pairs) on the combinations ``g``."""
    n = g["q"].size
    out: dict[str, list] = {k: [] for k in columns}
    for name, cols in rows:
        e = cols["eps"]
        steps = np.asarray(cols["steps"], float).reshape(-1)
        q = np.asarray(cols["q"], float).reshape(-1) if "q" in cols else g["q"]
        batch = None
        if "b" in g:
            batch = g["b"].astype(int).tolist()
        elif solve == "q" and "n" in g:
            batch = [None if not b > 0 else int(b) for b in np.round(q * g["n"])]
        values = {
            "method": [METHOD_LABEL[name]] * n,
            "accountant": [name] * n,
            "conversion": [p.conversion if name == "rdp" else ("classic" if name == "abadi" else "")] * n,
            "sampling": [p.sampling] * n,
            "neighbors": [p.neighbors] * n,
            "sample_rate": _numbers(q),
            "batch_size": batch,
            "dataset_size": g["n"].astype(int).tolist() if "n" in g else None,
            "max_batch_size": g["bmax"].astype(int).tolist() if "bmax" in g else None,
            "noise_multiplier": np.asarray(cols["noise_multiplier"], float).reshape(-1).tolist(),
            "steps": [None if np.isnan(t) else int(t) for t in steps],
            "epochs": g["epochs"].tolist()
            if "epochs" in g
            else (_numbers(_whole_epochs(steps, g, p.sampling)) if solve == "steps" else None),
            "delta": g["delta"].tolist(),
            "target_epsilon": g["target"].tolist() if solve is not None else None,
            "epsilon": np.asarray(e.epsilon, float).reshape(-1).tolist(),
            "epsilon_lower": cols["lower"].tolist() if "lower" in cols else [None] * n,
            "epsilon_estimate": cols["estimate"].tolist() if "estimate" in cols else [None] * n,
            "confidence": [p.confidence] * n if name == "mc" else None,
            "samples": [p.mc_samples] * n if name == "mc" else None,
            "alpha": [None if np.isnan(a) else float(a) for a in np.asarray(e.alpha, float).reshape(-1)],
            "valid": [bool(v) for v in np.asarray(e.valid).reshape(-1)],
            "note": samplers.row_notes(
                name, p.sampling, p.neighbors, cols.get("note"), _NOTE.get(name, ""), n
            ),
        }
        zero = g["delta"] == 0  # ε = inf there (docs/math.md §2.7): say why in the row
        values["note"] = [
            _ZERO_NOTE + ("; " + note if note else "")
            if z and not note.startswith("does not apply")
            else note
            for z, note in zip(zero, values["note"])
        ]
        if solve is not None:  # an inverse question nothing answers: say why in the row
            values["note"] = _unsolved_notes(solve, "n" in g, values)
        # a row the accountant could not compute is no statement at all: neither valid nor invalid
        values["valid"] = [
            None if note.startswith("does not apply") else v
            for v, note in zip(values["valid"], values["note"])
        ]
        for k in columns:
            out[k] += values[k] if values[k] is not None else [None] * n
    return out


_ZERO_NOTE = "δ = 0: the subsampled Gaussian's privacy loss is unbounded, no finite ε"

#: Why an inverse row has no answer, by the quantity solved for (with a dataset size for "q").
_UNSOLVED = {
    "sigma": "no solution: no noise multiplier in the range searched meets the target ε",
    "steps": "no solution: even one step exceeds the target ε",
    "q": "no solution: even the smallest sample rate searched exceeds the target ε",
    "b": "no solution: even a batch of one exceeds the target ε",
}


def _unsolved_notes(solve: str, by_batch: bool, values: dict) -> list:
    """The notes of an inverse question's rows, each row without an answer (no ε: σ = inf, 0 steps, a
    sample rate of 0) saying why first, unless its note already does (δ = 0, a tuned row's miss) or the
    accountant does not apply."""
    solved = {"sigma": "noise_multiplier", "steps": "steps", "q": "sample_rate"}[solve]
    why = _UNSOLVED["b" if solve == "q" and by_batch else solve]
    out = []
    for x, eps, note in zip(values[solved], values["epsilon"], values["note"]):
        missing = x is None or not math.isfinite(x) or (solve != "sigma" and x == 0)
        if (
            missing
            and not (eps is not None and math.isfinite(eps))
            and not note.startswith(("does not apply", _ZERO_NOTE))
            and "the target" not in note
        ):
            note = why + ("; " + note if note else "")
        out.append(note)
    return out


def _numbers(x) -> list:
    """Floats, None where nan (a value the row does not have)."""
    return [None if np.isnan(v) else float(v) for v in np.asarray(x, float).reshape(-1)]


_PLOT_SYMBOL = {
    "epochs": "epochs",
    "steps": "T",
    "target_epsilon": "target ε",
    "noise_multiplier": "σ",
    "sample_rate": "q",
    "batch_size": "B",
    "dataset_size": "N",
    "max_batch_size": "B_max",
    "delta": "δ",
}


def _plot_spec(p: SgdEpsilonParams, out, headline):
    """--plot: the headline by the first swept input, one line per accountant (a dot per accountant
    when nothing is swept); rows whose ``valid`` is false are drawn as "not a bound"."""
    inputs = {
        "epochs": p.epochs,
        "steps": p.steps,
        "target_epsilon": p.target_epsilon,
        "noise_multiplier": p.sigma,
        "sample_rate": p.sample_rate,
        "batch_size": p.batch_size,
        "dataset_size": p.dataset_size,
        "max_batch_size": p.max_batch_size,
        "delta": p.delta,
    }
    inputs = {k: v for k, v in inputs.items() if v is not None and k != headline}
    swept = [k for k, v in inputs.items() if len(v) > 1 and k in out]
    if len(out["method"]) < 2:
        return None
    x = swept[0] if swept else "delta"
    fixed = ", ".join(f"{_PLOT_SYMBOL[k]} = {v[0]:g}" for k, v in inputs.items() if len(v) == 1)
    what, ylabel = _PLOT_HEADLINE[headline]
    return PlotSpec(
        x=x,
        y=headline,
        series="method",
        group=tuple(swept[1:]),
        valid="valid",
        band=("epsilon_lower", "epsilon") if headline == "epsilon" and "epsilon_lower" in out else None,
        logx=x == "delta",
        autolog=True,
        xlabel={"steps": "steps T", "epochs": "epochs", "target_epsilon": "target ε (nats)"}.get(x, ""),
        ylabel=ylabel,
        title=f"DP-SGD: {what} " + (f"by {_PLOT_SYMBOL[x]}" if swept else "by accountant"),
        subtitle=(f"{fixed}; " if fixed else "")
        + f"sampling: {p.sampling}, neighbours: {p.neighbors}"
        + (f", conversion: {p.conversion}" if "rdp" in out["accountant"] else ""),
    )


#: --plot: the headline of each question (ε, or what --target-epsilon solves for) -> (title words,
#: y-axis label); every headline :func:`sgd_epsilon_stream` can choose is here.
_PLOT_HEADLINE = {
    "epsilon": ("ε", "ε (nats)"),
    "noise_multiplier": ("smallest noise multiplier", "noise multiplier σ (noise std / clipping norm)"),
    "steps": ("largest number of steps", "largest number of steps T"),
    "sample_rate": ("largest sample rate", "largest sample rate q"),
    "batch_size": ("largest batch size", "largest batch size B"),
}


def _whole_epochs(steps, g, sampling="poisson"):
    """The whole epochs E with ceil(E/q) <= steps (checked with the same arithmetic as ``epochs``); for
    balls-in-bins, the whole epochs of floor(N/B) steps within them."""
    if sampling == "balls-in-bins":
        return np.floor(steps / epoch_steps(g["q"], g.get("n")))

    e = np.floor(steps * g["q"])
    ratio = e * g["n"] / g["b"] if "b" in g else e / g["q"]
    return np.where(np.ceil(ratio) > steps, e - 1, e)
