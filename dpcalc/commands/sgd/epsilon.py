"""DP-SGD accounting: ε of a training run, or the noise / steps for a target ε (docs/math.md §3).

:func:`sgd_epsilon` checks the combination of inputs, builds their cartesian product, asks the
accountants of :mod:`dpcalc.engine.dpsgd` (and the PLD accountant, docs/math.md §7) and packs the
answer into a :class:`~dpcalc.result.Result` (its columns: :mod:`.columns`; its figure: :mod:`.plot`).
"""

from __future__ import annotations

import math
import warnings

import numpy as np

from dpcalc.commands import sweep
from dpcalc.commands.sgd.columns import ALL_COLUMNS, caption, result_columns
from dpcalc.commands.sgd.delta import delta_rows
from dpcalc.commands.sgd.group import route
from dpcalc.commands.sgd.mc_cost import MC_SAMPLES
from dpcalc.commands.sgd.params import SgdEpsilonParams
from dpcalc.commands.sgd.plot import plot_spec
from dpcalc.commands.sgd.question import TARGET_MIN, ask  # noqa: F401 (TARGET_MIN: the limit, read here too)
from dpcalc.commands.sgd.rows import accountant_rows
from dpcalc.commands.sgd.work import mc_batches
from dpcalc.engine.dpsgd.accounting import Epsilon
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


#: Work estimated (CPU seconds, one core) at most this takes the math module's log Γ and log Φ for every array
#: (:class:`dpcalc.engine.mechanisms.sgm.light_start` with ``full``): at 0.2–0.4 µs an element that stays below
#: the 0.12–0.15 s of importing scipy.special.  A noise calibration is estimated at 0.025 s (26,000 elements), a
#: sweep of ten (q, σ) pairs at 0.026 s (184,000 elements).
LIGHT_SECONDS = 0.03


def sgd_epsilon_stream(
    params: SgdEpsilonParams, *, chunk: int | None = CHUNK, jobs: int | None = None, scheduler=None
) -> Stream:
    """:func:`sgd_epsilon` as a :class:`~dpcalc.result.Stream` of chunks of at most ``chunk``
    combinations each (0: :data:`CHUNK`; ``None``: one chunk), computed by ``jobs`` processes or on the dask
    cluster ``scheduler`` (``None``: the settings in force, :mod:`dpcalc.execution`; by default one process per core
    when the work is worth it).  Memory is bounded by the chunk, not by the sweep; the checks run before the
    first chunk, the estimate (and ``--max-seconds``' cap) when the first chunk is asked for."""
    question = ask(params)
    p, names, sampler, seconds = question.params, question.accountants, question.sampler, question.seconds
    axes, kw = _prepare(p, names, sampler)
    n = math.prod(a.size for a in axes.values())
    ks = p.group_size  # a tuple after ask()
    given_k = not isinstance(params.group_size, int)  # a sequence: --group-size given (the column shows it)
    text = caption(question, axes)
    rows = n * len(names) * len(ks)
    tasks = [
        (k, name, lo, hi)
        for k in ks
        for name in names
        for lo, hi in sweep.pieces(n, CHUNK if chunk == 0 else chunk, seconds, rows)
    ]
    # a sweep of one chunk may evaluate small arrays without scipy (a quick start for single queries);
    # a sweep of several chunks uses scipy throughout, so that no value depends on where a chunk ends;
    # work estimated below LIGHT_SECONDS evaluates every array without scipy, however it is cut
    light = "full" if seconds <= LIGHT_SECONDS else len(tasks) == len(ks) * len(names)

    def compute(task):
        k, name, lo, hi = task
        part = _grid(axes, sampler, lo, hi)
        way = route(question, name, k)
        if way.refusal is not None:
            cols = _refused(part, way.refusal)
        else:
            part_kw = _part_kw(kw, part)
            if way.person:
                part_kw["sampling"] = way.sampler
            if question.at_eps:
                cols = delta_rows(question, way, part, part_kw, light)
            else:
                cols = accountant_rows(question, way, part, part_kw, light)
        return Result(
            result_columns(question, way, part, cols, given_k),
            headline=question.answer,
            title="DP-SGD accounting",
            caption=text,
            derived=question.derived,
        )

    def finish(result):
        result.plot = plot_spec(question, result.columns)
        return result

    mc = names == ("mc",)  # Monte Carlo: the samples are the work (spread over the processes within a row)
    total = 2 * (p.mc_samples or MC_SAMPLES) * rows if mc else rows
    weights = [(hi - lo) * total / rows for _, _, lo, hi in tasks]

    return Stream(
        list(ALL_COLUMNS),  # whatever the inputs and accountants: one schema scripts can rely on
        sweep.run(
            compute,
            tasks,
            seconds=seconds,
            unit="samples" if mc else "rows",
            what=f"DP-SGD accounting (--method {p.accountant})",
            weights=weights,
            parallel=mc_batches(p, rows) if mc else len(tasks),
            settings=_overrides(jobs, scheduler),
        ),
        headline=question.answer,
        title="DP-SGD accounting",
        caption=text,
        finish=finish,
        derived=question.derived,
    )


def _refused(g, note: str) -> dict:
    """Rows with no value, ``note`` saying why (a route that does not apply)."""
    n = g["q"].size
    nan = np.full(n, np.nan)
    e = Epsilon(nan, nan, np.zeros(n, bool), np.zeros(n, bool))
    return dict(noise_multiplier=g.get("sigma", nan), steps=g["steps"], eps=e, note=[note] * n)


def _overrides(jobs, scheduler) -> dict:
    """The execution settings a library caller gave (None: those in force)."""
    out = {}
    if jobs is not None:
        out["jobs"] = jobs
    if scheduler is not None:
        out["scheduler"] = scheduler
    return out


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
