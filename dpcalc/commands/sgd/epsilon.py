"""DP-SGD accounting: ε of a training run, or the noise / steps for a target ε (docs/math.md §3).

:func:`sgd_epsilon` checks the combination of inputs, builds their cartesian product, asks the
accountants of :mod:`dpcalc.engine.dpsgd` (and the PLD accountant, docs/math.md §7) and packs the
answer into a :class:`~dpcalc.result.Result` (its columns: :mod:`.columns`; its figure: :mod:`.plot`).
"""

from __future__ import annotations

import math
import warnings
from dataclasses import replace

import numpy as np

from dpcalc.commands import sweep
from dpcalc.commands.sgd import checks as sgd_checks
from dpcalc.commands.sgd.checks import (  # noqa: F401 (the limits and checks, also read here)
    MC_CONFIDENCE,
    MC_SAMPLES,
    TARGET_MIN,
    check_sweep,
    checked,
    work_seconds,
)
from dpcalc.commands.sgd.columns import ALL_COLUMNS, _result_columns
from dpcalc.commands.sgd.delta import delta_rows
from dpcalc.commands.sgd.group import GROUP_ACCOUNTANTS, group_caption
from dpcalc.commands.sgd.params import SgdEpsilonParams
from dpcalc.commands.sgd.plot import _plot_spec
from dpcalc.commands.sgd.rows import SIGMA_RTOL, accountant_rows
from dpcalc.engine.dpsgd.balls_in_bins_samples import BATCH_DRAWS
from dpcalc.errors import DpcalcWarning, InputError
from dpcalc.result import Result, Stream

#: Combinations per chunk of a sweep (memory is bounded by the chunk, not by the sweep).
CHUNK = 2048


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
