"""Privacy amplification by iteration, the intermediate iterates hidden (docs/math.md §4).

:func:`iterate` checks the combination of inputs, asks :mod:`dpcalc.engine.hidden_state.iteration`
for Feldman et al.'s bound, Asoodeh et al.'s contraction bound, the composition baseline and
(optionally) the contractive-noisy-iteration bound at every combination of the values given, and
packs the answer into a :class:`~dpcalc.result.Result` (its rows: :mod:`.rows`; its figure: :mod:`.plot`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from dpcalc.commands import sweep
from dpcalc.commands.choices import ITERATE_METHODS
from dpcalc.commands.curve import (
    CURVE_SECONDS_PER_ROW,
    FOR_CONVERT,
    check_curve_rows,
    curve_result,
    grid_part,
    orders,
)
from dpcalc.commands.iterate.plot import _plot
from dpcalc.commands.iterate.rows import _columns, cni_noise
from dpcalc.commands.schema import conform, names
from dpcalc.engine.hidden_state import iteration as it
from dpcalc.errors import InputError
from dpcalc.result import Result, Stream

METHODS = ITERATE_METHODS


@dataclass(frozen=True)
class IterateParams:
    """The inputs of ``dpcalc iterate``: each numeric field a sequence of values (a sweep) or None.

    Give ``sigma``, ``lipschitz``, ``lr``, ``steps`` and exactly one of ``delta`` (to get ε),
    ``epsilon`` (to get δ) or ``alpha`` (to get the Rényi bound).  ``method`` is one of
    :data:`METHODS`, ``"cni"`` (needs ``initial_distance``) or ``"all"``; ``conversion`` one of
    :data:`~dpcalc.commands.choices.CONVERSIONS`; ``feldman_log`` a ``--feldman-log`` choice (the default, the log T form as
    usually quoted, or ``"harmonic"``, 1 + ln T); ``smoothness`` checks feldman's condition η <= 2/β.
    """

    sigma: Sequence[float]
    lipschitz: Sequence[float]
    lr: Sequence[float]
    steps: Sequence[int]
    diameter: Sequence[float] = (1.0,)
    delta: Sequence[float] | None = None
    epsilon: Sequence[float] | None = None
    alpha: Sequence[float] | None = None
    method: str = "all"
    initial_distance: Sequence[float] | None = None
    conversion: str = "asoodeh"
    feldman_log: str = "seed"
    smoothness: Sequence[float] | None = None


def iterate(params: IterateParams) -> Result:
    """One row per method and combination of the values given: ε, δ and/or the Rényi bound of the
    randomly-stopped iterate.  Raises :class:`~dpcalc.errors.InputError` for an impossible
    combination."""
    return iterate_stream(params).collect()


def iterate_stream(params: IterateParams, *, chunk: int | None = None) -> Stream:
    """:func:`iterate` as a :class:`~dpcalc.result.Stream`: the sweep in chunks of at most ``chunk``
    combinations (None: :data:`CHUNK`, or fewer where rows are expensive: :func:`dpcalc.commands.sweep.
    chunk_rows`), each formed from the axes when computed, so memory is bounded by the chunk, not by the
    sweep.  The checks run at once; the estimate (and ``--max-seconds``' cap) when the first chunk is asked
    for; the chunks are spread over the processes of the execution settings in force (:mod:`dpcalc.execution`),
    the same chunks however many there are."""
    p = params
    query = profile_question(p.alpha, p.delta, p.epsilon)
    if p.method == "cni" and p.initial_distance is None:
        raise InputError("--method cni needs --initial-distance R")
    if p.method == "all":
        methods = (*METHODS, "cni") if p.initial_distance is not None else METHODS
    else:
        methods = (p.method,)
    target = None if query is None else (p.delta if query == "delta" else p.epsilon)
    grid = dict(sigma=p.sigma, lipschitz=p.lipschitz, lr=p.lr, steps=p.steps, diameter=p.diameter)
    if p.initial_distance is not None:
        grid["initial_distance"] = p.initial_distance
    sizes = {f"--{k.replace('_', '-')}": len(v) for k, v in grid.items()}
    sizes.update({"--alpha": len(p.alpha or ()), f"--{query}": len(target or ())})
    rows = sweep.check_rows({k: v for k, v in sizes.items() if v}, len(methods), per="methods")
    _check_smoothness(p.lr, p.smoothness, methods)
    seconds = (
        rows / len(methods) * sum(row_seconds(m, query, p.alpha is not None, p.conversion) for m in methods)
    )
    return _stream(grid, query, target, p.alpha, methods, p.conversion, p.feldman_log, seconds, chunk)


def profile_question(alpha, delta, epsilon=None, epsilon_option: bool = True) -> str | None:
    """The (ε, δ) question of iterate and langevin: ``"delta"`` (--delta: ε at δ), ``"epsilon"`` (--epsilon: δ
    at ε) or None (--alpha alone).  One rule for both commands: --alpha (the Rényi bound at α) may come alone
    or beside the (ε, δ) question, one row then carrying both; --delta and --epsilon exclude each other; at
    least one question is asked.  ``epsilon_option``: whether the command has --epsilon (langevin has not)."""
    if delta is not None and epsilon is not None:
        raise InputError("give exactly one of --delta (to get ε) or --epsilon (to get δ)")
    if alpha is None and delta is None and epsilon is None:
        asked = "--delta (to get ε)" + (", --epsilon (to get δ)" if epsilon_option else "")
        raise InputError(
            f"give {asked} or --alpha (to get the Rényi bound), or --alpha with {_EITHER[epsilon_option]}"
        )
    return "delta" if delta is not None else "epsilon" if epsilon is not None else None


_EITHER = {True: "one of the others (one row reports both)", False: "--delta (one row reports both)"}


#: Combinations per chunk of a sweep (at most; fewer where rows are expensive): memory is bounded by the
#: chunk, not by the sweep (a row took about 10 KB while computed, with its Rényi curve).
CHUNK = 8192

#: CPU seconds per row on one core, measured with a margin (time.process_time of :func:`iterate` on sweeps
#: of 2,000-5,000 random configurations, σ in [0.3, 20], L in [0.1, 3], η in [0.001, 1], T up to 10^6, the
#: packing of the rows included): a Rényi bound at α (closed forms, any method: 1-4 µs);
RDP_SECONDS = 1e-5
#: ε at δ or δ at ε of asoodeh (a bisection on its closed form: 15-40 µs) and of composition (the exact
#: Gaussian: 5-10 µs);
PROFILE_SECONDS = {"asoodeh": 1e-4, "composition": 3e-5}
#: and of feldman and cni, a Rényi curve converted order by order and minimised over α, by --conversion
#: (asoodeh 70-110 µs, balle 40-60 µs, mironov 30-35 µs; optimal, solved numerically at each order,
#: 15-130 ms).  langevin's dynamics bound is converted the same way (dpcalc.commands.langevin.command).
CONVERSION_SECONDS = {"asoodeh": 3e-4, "balle": 2e-4, "mironov": 1e-4, "optimal": 0.3}


def row_seconds(method: str, query: str | None, rdp: bool, conversion: str) -> float:
    """The estimated CPU seconds of one row of ``method``: the Rényi bound (``rdp``: --alpha given) and the
    (ε, δ) answer (``query``: "delta", "epsilon" or None)."""
    seconds = RDP_SECONDS if rdp else 0.0
    if query is not None:
        seconds += CONVERSION_SECONDS[conversion] if method in ("feldman", "cni") else PROFILE_SECONDS[method]
    return seconds


def _check_smoothness(lr, smoothness, methods) -> None:
    """feldman's condition η <= 2/β (with --smoothness), checked before any work."""
    if smoothness is not None and "feldman" in methods:
        worst = float(max(lr)) * float(max(smoothness))
        if worst > 2.0:
            raise InputError(
                f"--lr: feldman needs the step size η <= 2/β (a contractive gradient step), "
                f"got η = {float(max(lr))!r} with β = {float(max(smoothness))!r}"
            )


def _stream(params, query, target, alpha, methods, conversion, feldman_log, seconds, chunk=None) -> Stream:
    """The rows of :func:`iterate_stream` (``params``: the swept inputs, by name)."""
    axes = {k: np.asarray(v, float) for k, v in params.items()}
    if alpha is not None:
        axes["alpha"] = np.asarray(alpha, float)
    if query is not None:
        axes["target"] = np.asarray(target, float)
    n = math.prod(x.size for x in axes.values())
    answer = {"delta": "epsilon", "epsilon": "delta", None: "rdp"}[query]
    both = alpha is not None and query is not None  # one row: the Rényi bound at α and the (ε, δ) answer
    caption = (
        "randomly-stopped projected noisy SGD, one pass (T = n), replace-one; "
        "feldman: convex β-smooth loss, η <= 2/β"
        + (
            f", converted with {conversion}, {'best_alpha' if both else 'alpha'} = best order"
            if query is not None
            else ""
        )
        + "; asoodeh: K of diameter D; composition: every iterate released"
        + ("; cni: same data, starts R apart" if "cni" in methods else "")
    )

    def compute(task):
        m, lo, hi = task
        cols, notes = _columns(params, axes, lo, hi, query, alpha, (m,), conversion, feldman_log)
        return Result(
            conform(cols, "iterate"),
            headline=answer,
            title="Privacy amplification by iteration",
            caption=caption,
            notes=notes,
        )

    def finish(result):
        _fill_notes(result)
        result.plot = _plot(params, query, target, alpha, answer, both, len(result))
        return result

    notes: list[str] = []
    chunks = sweep.by_method(
        compute,
        methods,
        n,
        CHUNK if chunk is None else chunk,
        seconds=seconds,
        what=f"privacy amplification by iteration (--method {'all' if len(methods) > 1 else methods[0]})",
    )
    if n * len(methods) <= WHOLE_ROWS:  # the rows held together, judged as one result
        chunks = _whole(gathered(chunks, notes))
    else:
        chunks = gathered(chunks, notes)
    return Stream(
        names("iterate"),
        chunks,
        headline=answer,
        title="Privacy amplification by iteration",
        caption=caption,
        finish=finish,
        notes=notes,
    )


#: A sweep of at most this many rows is written as one result, its chunks joined (the rows of a few MB), as
#: before issue 40: a row without a note has an empty note where another row has one, none where no row has
#: one.  A larger sweep streams chunk by chunk, each chunk (one method, some combinations) deciding that for
#: its own rows (the same in CSV, TSV, tables and -q; in JSON, "" or null).
WHOLE_ROWS = 20_000


def _fill_notes(result: Result) -> Result:
    """``result`` with an empty note on every row without one when some row has one."""
    note = result.column("note")
    if any(note):
        result.columns["note"] = ["" if x is None else x for x in note]
    return result


def _whole(chunks):
    """The chunks joined into one result (:func:`_fill_notes`)."""
    parts = list(chunks)
    if len(parts) == 1:
        yield _fill_notes(parts[0])
        return
    first = parts[0]
    cols = {k: [v for part in parts for v in part.column(k)] for k in first.names}
    yield _fill_notes(
        Result(cols, headline=first.headline, title=first.title, caption=first.caption, notes=first.notes)
    )


def gathered(chunks, notes: list):
    """The chunks, their notes (computed where the chunk was) added to ``notes`` once each, in order."""
    for chunk in chunks:
        for note in chunk.notes:
            if note not in notes:
                notes.append(note)
        yield chunk


# -- --rdp-curve ----------------------------------------------------------------------------------------
ITERATE_CURVES = ("feldman", "composition", "cni")


def iterate_curve(params, alphas: Sequence[float] | None = None, *, stream: bool = False):
    """The Rényi bounds of ``iterate`` at every order (``params``: :class:`dpcalc.commands.iterate.command.
    IterateParams`; ``delta``, ``epsilon``, ``conversion`` and ``diameter`` do not enter a curve):
    feldman (:func:`~dpcalc.engine.hidden_state.iteration.rdp_feldman`, ``inf`` above α*), composition
    (:func:`~dpcalc.engine.hidden_state.iteration.rdp_composition`) and, with ``initial_distance``, cni
    (:func:`~dpcalc.engine.hidden_state.iteration.rdp_contractive_iteration`).  asoodeh has no Rényi form.

    The command's ε of feldman and cni minimises the conversion over *continuous* α (composition is
    converted exactly, as one Gaussian), so ``convert --curve`` of a curve on a grid of orders is that ε
    or above; at the command's best order (``--alphas`` = its ``alpha`` column, ``convert --method`` = its
    ``--conversion``) the two agree to a few ulps (the curve's ζ(α) is rounded up once more)."""
    p = params
    if p.alpha is not None:
        raise InputError(
            "--alpha cannot be used with --rdp-curve: give the orders of the curve with --alphas"
        )
    if p.method == "asoodeh":
        raise InputError(
            "--method asoodeh has no Rényi curve (its bound is (ε, δ) only): --rdp-curve prints feldman, "
            "composition or cni"
        )
    if p.method == "cni" and p.initial_distance is None:
        raise InputError("--method cni needs --initial-distance R")
    if p.method == "all":
        methods = [m for m in ITERATE_CURVES if m != "cni" or p.initial_distance is not None]
    else:
        methods = [p.method]
    _check_smoothness(p.lr, p.smoothness, methods)
    a = orders(alphas)
    grid = dict(sigma=p.sigma, lipschitz=p.lipschitz, lr=p.lr, steps=p.steps)
    if p.initial_distance is not None:
        grid["initial_distance"] = p.initial_distance
    check_curve_rows(
        {f"--{k.replace('_', '-')}": len(v) for k, v in grid.items()}, a.size, len(methods), whole=False
    )
    axes = {k: np.asarray(v, float) for k, v in grid.items()}

    def values(m, lo, hi):
        g = grid_part(axes, lo, hi)
        s, lip, lr, t = (g[k][:, None] for k in ("sigma", "lipschitz", "lr", "steps"))
        if m == "feldman":
            return {"rdp": it.rdp_feldman(a, s, lip, t, log_form=p.feldman_log)}
        if m == "composition":
            return {"rdp": it.rdp_composition(a, s, lip)}
        noise, gone = cni_noise(lr, s)  # cni, as the command computes it: noise std ησ per step
        dist = g["initial_distance"][:, None]
        return {"rdp": np.where(gone, np.inf, it.rdp_contractive_iteration(a, dist, noise, t))}

    def configs(lo, hi):
        g = grid_part(axes, lo, hi)
        return {k: ([int(v) for v in g[k]] if k == "steps" else g[k].tolist()) for k in grid}

    swept = [k for k, v in grid.items() if len(v) > 1]
    caption = (
        "randomly-stopped projected noisy SGD, one pass (T = n), replace-one; feldman: convex β-smooth loss, "
        "η <= 2/β, inf above α*; composition: every iterate released"
        + ("; cni: same data, starts R apart" if "cni" in methods else "")
        + f"; {FOR_CONVERT}"
    )
    symbols = {"sigma": "σ", "lipschitz": "L", "lr": "η", "steps": "T", "initial_distance": "R"}
    return curve_result(
        "iterate",
        configs,
        methods,
        values,
        a,
        caption,
        stream=stream,
        count=math.prod(x.size for x in axes.values()),
        seconds_per_row=CURVE_SECONDS_PER_ROW,
        swept=swept,
        subtitle=", ".join(f"{symbols[k]} = {v[0]:g}" for k, v in grid.items() if len(v) == 1),
    )
