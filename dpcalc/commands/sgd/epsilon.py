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

from dpcalc.commands import schema, sweep
from dpcalc.commands.choices import SGD_ACCOUNTANTS, SGD_CONVERSIONS
from dpcalc.commands.sgd import checks as sgd_checks
from dpcalc.commands.sgd.checks import (  # noqa: F401 (the limits and checks, also read here)
    MC_CONFIDENCE,
    MC_SAMPLES,
    TARGET_MIN,
    check_sweep,
    checked,
    work_seconds,
)
from dpcalc.commands.sgd.delta import delta_rows
from dpcalc.commands.sgd.group import GROUP_ACCOUNTANTS, group_caption
from dpcalc.commands.sgd.rows import SIGMA_RTOL, accountant_rows
from dpcalc.engine.dpsgd.balls_in_bins_samples import BATCH_DRAWS
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
    "shuffle": "shuffle-gaussian",  # the shuffle sampler's own row (dpcalc.engine.samplers.shuffle)
    "mc": "balls-in-bins-mc",  # dpcalc.engine.dpsgd.balls_in_bins_mc
    "rdp-group": "rdp-group",  # --group-size: the generic routes (dpcalc.commands.sgd.group)
    "dp-group": "dp-group",
}
#: Combinations per chunk of a sweep (memory is bounded by the chunk, not by the sweep).
CHUNK = 2048


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
    mc_samples: int | None = None  # --method mc (balls-in-bins): Monte Carlo samples per direction
    confidence: float | None = None  # --method mc: the probability with which its ε holds
    seed: int | None = None  # --method mc: the seed of the sampling
    #: gradient accumulation (--physical-batch-size, --accumulation-steps): (B, A) when ``batch_size`` is
    #: the logical batch B·A they make (noise once per optimizer step); named in the caption only
    accumulation: tuple[int, int] | None = None
    #: --group-size K: what the run promises a person who contributed K examples (1: one example, today's
    #: rows), one value or a sequence (a sweep); the accountants rdp and pld then give the tight mixture
    #: (Poisson sampling), rdp-group and dp-group the generic group routes (dpcalc.commands.sgd.group)
    group_size: int | Sequence[int] = 1
    #: --epsilon: δ at each of these ε instead of ε at ``delta`` (None: ε is asked; :mod:`dpcalc.commands.sgd.delta`)
    epsilon: Sequence[float] | None = None


def sgd_epsilon(params: SgdEpsilonParams, *, jobs: int | None = None, scheduler=None) -> Result:
    """ε of every combination of the inputs under each accountant asked for, or the smallest noise
    multiplier / largest number of steps within ``target_epsilon`` (one row per combination and
    accountant).  Raises :class:`~dpcalc.errors.InputError` for an impossible combination.

    ``jobs`` (processes) or ``scheduler`` (a dask.distributed address or Client) spread a sweep's chunks over
    processes or a cluster (:mod:`dpcalc.execution`); the rows are the same however many there are (the
    chunks are those of the command line's stream, whatever computes them)."""
    return sgd_epsilon_stream(params, jobs=jobs, scheduler=scheduler).collect()


def sgd_epsilon_stream(
    params: SgdEpsilonParams, *, chunk: int | None = CHUNK, jobs: int | None = None, scheduler=None
) -> Stream:
    """:func:`sgd_epsilon` as a :class:`~dpcalc.result.Stream` of chunks of at most ``chunk``
    combinations each (0: :data:`CHUNK`; ``None``: one chunk), computed by ``jobs`` processes or on the dask
    cluster ``scheduler`` (``None``: the settings in force, :mod:`dpcalc.execution`; by default one process per core
    when the work is worth it).  Memory is bounded by the chunk, not by the sweep; the checks run before the
    first chunk, the estimate (and ``--max-seconds``' cap) when the first chunk is asked for."""
    p, names, solve, sampler = checked(params)
    seconds = check_sweep(p, names, solve, sampler)
    axes, kw = _prepare(p, names, sampler)
    at_eps = p.epsilon is not None  # δ at ε is asked (--epsilon)
    n = math.prod(a.size for a in axes.values())
    ks = p.group_size  # a tuple after checked()
    given_k = not isinstance(params.group_size, int)  # a sequence: --group-size given (the column shows it)
    columns = list(ALL_COLUMNS)  # whatever the inputs and accountants: one schema scripts can rely on
    caption = _caption(p, names, solve, axes, sampler)
    rate = "batch_size" if p.dataset_size is not None else "sample_rate"
    headline = {"sigma": "noise_multiplier", "steps": "steps", "q": rate}.get(
        solve, "delta" if at_eps else "epsilon"
    )  # never an estimate
    derived = _derived(p, solve)
    pieces = sweep.slices(
        n, sweep.chunk_rows(CHUNK if chunk == 0 else chunk, seconds, n * len(names) * len(ks))
    )
    tasks = [(k, name, lo, hi) for k in ks for name in names for lo, hi in pieces]
    # a sweep of one chunk may evaluate small arrays without scipy (a quick start for single queries);
    # a sweep of several chunks uses scipy throughout, so that no value depends on where a chunk ends
    light = len(pieces) == 1
    strict = len(names) == 1

    def compute(task):
        k, name, lo, hi = task
        pk = replace(p, group_size=k)
        part = _grid(axes, sampler, lo, hi)
        part_kw = _part_kw(kw, part)
        if at_eps:
            cols = delta_rows(pk, sampler, name, part, part_kw, light, strict=strict)
        else:
            cols = accountant_rows(pk, sampler, name, solve, part, part_kw, light, strict=strict)
        return Result(
            _result_columns(pk, solve, part, [(name, cols)], columns, sampler, given_k),
            headline=headline,
            title="DP-SGD accounting",
            caption=caption,
            derived=derived,
        )

    def finish(result):
        result.plot = _plot_spec(p, result.columns, headline)
        return result

    rows = n * len(names) * len(ks)
    mc = names == ["mc"]  # Monte Carlo: the samples are the work (spread over the processes within a row)
    total = 2 * (p.mc_samples or MC_SAMPLES) * rows if mc else rows
    weights = [(hi - lo) * total / rows for _, _, lo, hi in tasks]

    return Stream(
        columns,
        sweep.run(
            compute,
            tasks,
            seconds=seconds,
            unit="samples" if mc else "rows",
            what=_what(p),
            weights=weights,
            parallel=_mc_batches(p, rows) if mc else len(tasks),
            settings=_overrides(jobs, scheduler),
        ),
        headline=headline,
        title="DP-SGD accounting",
        caption=caption,
        finish=finish,
        derived=derived,
    )


def _overrides(jobs, scheduler) -> dict:
    """The execution settings a library caller gave (None: those in force)."""
    out = {}
    if jobs is not None:
        out["jobs"] = jobs
    if scheduler is not None:
        out["scheduler"] = scheduler
    return out


def _mc_batches(p: SgdEpsilonParams, rows: int) -> int:
    """The Monte Carlo batches of ``rows`` configurations, both directions (the pieces its samples are spread in:
    :data:`~dpcalc.engine.dpsgd.balls_in_bins_samples.BATCH_DRAWS` normal draws each, at least one a direction)."""
    draws = (p.mc_samples or MC_SAMPLES) * max(1.0, sgd_checks.longest_run(p))
    return 2 * rows * max(1, math.ceil(draws / BATCH_DRAWS))


def _what(p: SgdEpsilonParams) -> str:
    return f"DP-SGD accounting (--method {p.accountant})"


def _derived(p: SgdEpsilonParams, solve) -> tuple[str, ...]:
    """The columns each accountant finds for itself with --target-epsilon, besides the headline (see
    :mod:`dpcalc.render.configs`): the epochs within the steps found; the sample rate, batch size and the
    length not given (steps from --epochs, or the epochs within --steps)."""
    if solve == "steps":
        return ("epochs",)
    if solve == "q":
        return ("sample_rate", "batch_size", "steps" if p.epochs is not None else "epochs")
    return ()


def _axes(p: SgdEpsilonParams) -> dict[str, np.ndarray]:
    """The swept inputs, each a 1-D array, in the order of the cartesian product (the first slowest)."""
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
    if p.epsilon is not None:  # δ at ε is asked
        axes["eps"] = np.asarray(p.epsilon, float)
    else:
        axes["delta"] = np.asarray(p.delta, float)
    if p.target_epsilon is not None:
        axes["target"] = np.asarray(p.target_epsilon, float)
    return axes


def _grid(axes: dict[str, np.ndarray], sampler, lo: int = 0, hi: int | None = None) -> dict[str, np.ndarray]:
    """Combinations ``lo`` to ``hi`` of the cartesian product of ``axes``, as flat arrays (q from the sample
    rate or B/N; the steps of ``epochs`` as the sampler counts them).  Only those combinations are formed, so
    a chunk's memory does not grow with the sweep."""
    shape = tuple(a.size for a in axes.values())
    total = math.prod(shape)
    hi = total if hi is None else hi
    index = np.unravel_index(np.arange(lo, hi), shape) if shape else ()
    g = {k: a[i] for (k, a), i in zip(axes.items(), index)}
    if "q" not in g:
        g["q"] = g["b"] / g["n"] if "b" in g else np.full(g["sigma"].shape, np.nan)  # nan: solved for
    if "epochs" in g:  # ceil(E/q) = ceil(E·N/B), or whole epochs of floor(N/B) batches (§3.6, §3.8)
        g["steps"] = sampler.steps_of_epochs(g["epochs"], g["q"], g.get("n"), g.get("b"))
    return g


def _prepare(p: SgdEpsilonParams, names, sampler):
    """The swept inputs (:func:`_axes`) and the accountants' keyword arguments, whose arrays (the dataset
    size, the largest batch) :func:`_part_kw` cuts to a chunk; warning where δ >= 1/N."""
    sampler.check_relation(p.neighbors)
    axes = _axes(p)
    if "delta" in axes and "n" in axes and axes["delta"].max() >= 1.0 / axes["n"].max():
        warnings.warn(
            "--delta: δ >= 1/dataset size: a mechanism that publishes one random example is then (0, δ)-DP; "
            "choose δ well below 1/N",
            DpcalcWarning,
            stacklevel=2,
        )
    if "delta" in axes and np.any(
        axes["delta"] == 0
    ):  # every accountant reports inf there (docs/math.md §2.7)
        warnings.warn(
            "--delta 0: the subsampled Gaussian's privacy loss is unbounded: no finite ε at δ = 0 (ε = inf)",
            DpcalcWarning,
            stacklevel=2,
        )
    kw = dict(sampling=p.sampling, neighbors=p.neighbors, conversion=p.conversion)
    if "bassily" in names and "n" not in axes:
        raise InputError("--dataset-size: needed by the bassily reference (its formula involves n)")
    return axes, kw


def _part_kw(kw: dict, part: dict) -> dict:
    """The accountants' keyword arguments for the combinations ``part`` (their dataset size and largest batch)."""
    out = dict(kw)
    if "n" in part:
        out["dataset_size"] = part["n"]
    if "bmax" in part:
        out["max_batch_size"] = part["bmax"]
    return out


#: The note of every row of an accountant (pld rows carry their own: a refusal's reason).
_NOTE = {
    "abadi": "asymptotic closed form: not a guarantee where valid is false",
    "bassily": "reference formula: not a guarantee where valid is false",
}

#: Every column sgd-epsilon prints, in order (the documented schema of dpcalc.commands.schema).
ALL_COLUMNS = tuple(schema.names("sgd-epsilon"))


def _caption(p: SgdEpsilonParams, names, solve, g, sampler) -> str:
    relation = sampler.relation_caption(p.neighbors)
    caption = f"sampling: {p.sampling}; neighbours: {p.neighbors} ({relation})"
    if "rdp" in names:
        caption += f"; conversion: {p.conversion}"
    caption += sampler.caption
    x = "delta" if p.epsilon is not None else "epsilon"  # what the rows bound: δ at ε with --epsilon
    if "pld" in names and sampler.pld_upper_only:
        caption += (
            f"; pld: {x} is a certified upper bound (no lower end or estimate: {sampler.pld_upper_why})"
        )
    elif "pld" in names:
        caption += f"; pld: [{x}_lower, {x}] is the certified bracket, {x}_estimate lies inside it"
    if p.epsilon is not None:
        caption += "; delta: δ at the epsilon given"
    if p.tuning is not None:
        caption += f"; tuning: {p.tuning.label()}, the best of K runs released (rdp only)"
    if p.accumulation is not None:
        caption += _accumulation_caption(p.accumulation, p.dataset_size)
    if max(p.group_size) > 1 or any(name in GROUP_ACCOUNTANTS for name in names):
        caption += group_caption(p.group_size, names, sampler, p.neighbors)
    if "epochs" in g and not sampler.whole_epochs:
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


def _accumulation_caption(accumulation: tuple[int, int], dataset_size) -> str:
    """What gradient accumulation was taken to mean: the logical batch, its sample rate, the steps."""
    physical, steps = accumulation
    logical = physical * steps
    n = f"{dataset_size[0]}" if dataset_size is not None and len(dataset_size) == 1 else "dataset_size"
    return (
        f"; logical batch = physical {physical} × accumulation {steps} = {logical}; sample_rate = {logical}/{n}; "
        "steps = optimizer steps (one noise addition each)"
    )


def _result_columns(p: SgdEpsilonParams, solve, g, rows, columns, sampler, given_k=True) -> dict:
    """The output columns of ``rows`` ((accountant, answers) pairs) on the combinations ``g`` (``given_k``:
    whether --group-size was given; else the group_size column is empty)."""
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
            "conversion": [
                p.conversion
                if name in ("rdp", "rdp-group", "dp-group")
                else ("classic" if name == "abadi" else "")
            ]
            * n,
            "sampling": [p.sampling] * n,
            "neighbors": [p.neighbors] * n,
            "group_size": [p.group_size if given_k else None] * n,
            "sample_rate": _numbers(q),
            "batch_size": batch,
            "dataset_size": g["n"].astype(int).tolist() if "n" in g else None,
            "max_batch_size": g["bmax"].astype(int).tolist() if "bmax" in g else None,
            "noise_multiplier": np.asarray(cols["noise_multiplier"], float).reshape(-1).tolist(),
            "steps": [None if np.isnan(t) else int(t) for t in steps],
            "epochs": g["epochs"].tolist()
            if "epochs" in g
            else (
                _numbers(sampler.whole_epochs_within(steps, g["q"], g.get("n"), g.get("b")))
                if solve == "steps"
                else None
            ),
            "delta": g["delta"].tolist() if "delta" in g else None,
            "target_epsilon": g["target"].tolist() if solve is not None else None,
            "epsilon": np.asarray(e.epsilon, float).reshape(-1).tolist(),
            "epsilon_lower": cols["lower"].tolist() if "lower" in cols else [None] * n,
            "epsilon_estimate": cols["estimate"].tolist() if "estimate" in cols else [None] * n,
            "confidence": [p.confidence] * n if name == "mc" else None,
            "samples": [p.mc_samples] * n if name == "mc" else None,
            "alpha": [None if np.isnan(a) else float(a) for a in np.asarray(e.alpha, float).reshape(-1)],
            "valid": [bool(v) for v in np.asarray(e.valid).reshape(-1)],
            "note": _notes(sampler.note(name, p.neighbors, _NOTE.get(name, "")), cols.get("note"), n),
        }
        if "eps" in g:  # δ at ε (--epsilon): the accountant's values are δ's, the ε given is a column
            values["delta"], values["epsilon"] = values["epsilon"], g["eps"].tolist()
            values["delta_lower"], values["epsilon_lower"] = values["epsilon_lower"], None
            values["delta_estimate"], values["epsilon_estimate"] = values["epsilon_estimate"], None
        else:
            values["delta_lower"] = values["delta_estimate"] = None
        zero = g["delta"] == 0 if "delta" in g else np.zeros(n, bool)  # ε = inf there (docs/math.md §2.7)
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


def _notes(theorem: str, notes, n: int) -> list:
    """The note column of one accountant's ``n`` rows: a row's own note (a refusal's reason) if it has
    one, else the theorem and neighbouring relation of the setting (or the accountant's note)."""
    if notes is None:
        return [theorem] * n
    return [note if note else theorem for note in notes]


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
    "group_size": "K",
    "epochs": "epochs",
    "steps": "T",
    "target_epsilon": "target ε",
    "noise_multiplier": "σ",
    "sample_rate": "q",
    "batch_size": "B",
    "dataset_size": "N",
    "max_batch_size": "B_max",
    "delta": "δ",
    "epsilon": "ε",
}


def _plot_spec(p: SgdEpsilonParams, out, headline):
    """--plot: the headline by the first swept input, one line per accountant (a dot per accountant
    when nothing is swept); rows whose ``valid`` is false are drawn as "not a bound"."""
    inputs = {
        "group_size": p.group_size if max(p.group_size) > 1 else None,
        "epochs": p.epochs,
        "steps": p.steps,
        "target_epsilon": p.target_epsilon,
        "noise_multiplier": p.sigma,
        "sample_rate": p.sample_rate,
        "batch_size": p.batch_size,
        "dataset_size": p.dataset_size,
        "max_batch_size": p.max_batch_size,
        "delta": p.delta,
        "epsilon": p.epsilon,
    }
    inputs = {k: v for k, v in inputs.items() if v is not None and k != headline}
    swept = [k for k, v in inputs.items() if len(v) > 1 and k in out]
    if len(out["method"]) < 2:
        return None
    x = swept[0] if swept else ("epsilon" if p.epsilon is not None else "delta")
    fixed = ", ".join(f"{_PLOT_SYMBOL[k]} = {v[0]:g}" for k, v in inputs.items() if len(v) == 1)
    what, ylabel = _PLOT_HEADLINE[headline]
    return PlotSpec(
        x=x,
        y=headline,
        series="method",
        group=tuple(swept[1:]),
        valid="valid",
        band=(f"{headline}_lower", headline)
        if headline in ("epsilon", "delta") and f"{headline}_lower" in out
        else None,
        logx=x == "delta",
        autolog=True,
        xlabel={
            "steps": "steps T",
            "epochs": "epochs",
            "target_epsilon": "target ε (nats)",
            "group_size": "examples of one person K",
            "epsilon": "ε (nats)",
        }.get(x, ""),
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
    "delta": ("δ", "δ (probability)"),
    "noise_multiplier": ("smallest noise multiplier", "noise multiplier σ (noise std / clipping norm)"),
    "steps": ("largest number of steps", "largest number of steps T"),
    "sample_rate": ("largest sample rate", "largest sample rate q"),
    "batch_size": ("largest batch size", "largest batch size B"),
}
