"""Privacy dynamics of noisy gradient descent that releases only its last model (docs/math.md §5).

:func:`langevin` checks the combination of inputs and the theorem's conditions, asks
:mod:`dpcalc.engine.hidden_state.langevin` for the dynamics bound of Chourasia, Ye and Shokri
(NeurIPS 2021, arXiv 2102.05855), their lower bound and the composition baseline at every
combination of the values given, and packs the answer into a :class:`~dpcalc.result.Result`.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from dpcalc.commands import sweep
from dpcalc.commands.choices import LANGEVIN_METHODS
from dpcalc.commands.curve import (
    CURVE_SECONDS_PER_ROW,
    FOR_CONVERT,
    check_curve_rows,
    curve_result,
    grid_part,
    orders,
)
from dpcalc.commands.iterate.command import CONVERSION_SECONDS, profile_question
from dpcalc.commands.schema import conform, names
from dpcalc.engine.hidden_state import langevin as lg
from dpcalc.errors import InputError
from dpcalc.result import PlotSpec, Result, Stream

METHODS = LANGEVIN_METHODS
_SYMBOL = {
    "sigma": "σ",
    "sensitivity": "S_g",
    "lr": "η",
    "strong_convexity": "λ",
    "smoothness": "β",
    "dataset_size": "n",
    "steps": "K",
}


@dataclass(frozen=True)
class LangevinParams:
    """The inputs of ``dpcalc langevin``: each numeric field a sequence of values (a sweep) or None.

    Give ``sigma``, ``lr``, ``strong_convexity``, ``smoothness``, ``dataset_size``, ``steps``,
    exactly one of ``sensitivity`` (S_g, of the gradient sum under replace-one) or ``lipschitz``
    (S_g = 2L), and ``alpha`` (Rényi bounds) and/or ``delta`` (ε).  ``method`` is one of
    :data:`METHODS` or ``"all"``; ``conversion`` one of :data:`~dpcalc.commands.choices.CONVERSIONS`.
    """

    sigma: Sequence[float]
    lr: Sequence[float]
    strong_convexity: Sequence[float]
    smoothness: Sequence[float]
    dataset_size: Sequence[int]
    steps: Sequence[int]
    sensitivity: Sequence[float] | None = None
    lipschitz: Sequence[float] | None = None
    alpha: Sequence[float] | None = None
    delta: Sequence[float] | None = None
    method: str = "all"
    conversion: str = "asoodeh"


def langevin(params: LangevinParams) -> Result:
    """One row per method and combination of the values given: the Rényi bound and/or ε of the
    last model.  Raises :class:`~dpcalc.errors.InputError` for an impossible combination or a
    violated condition of the theorem (naming it)."""
    return langevin_stream(params).collect()


def langevin_stream(params: LangevinParams, *, chunk: int | None = None) -> Stream:
    """:func:`langevin` as a :class:`~dpcalc.result.Stream`: the sweep in chunks of at most ``chunk``
    combinations (None: :data:`CHUNK`, or fewer where rows are expensive), each formed from the axes when
    computed, so memory is bounded by the chunk, not by the sweep.  The checks (the theorem's conditions
    included) run at once; the estimate (and ``--max-seconds``' cap) when the first chunk is asked for; the
    chunks are spread over the processes of the execution settings in force (:mod:`dpcalc.execution`)."""
    p = params
    if (p.sensitivity is None) == (p.lipschitz is None):
        raise InputError("give exactly one of --sensitivity (S_g) or --lipschitz (S_g = 2L)")
    profile_question(p.alpha, p.delta, epsilon_option=False)  # iterate's rule: --alpha, --delta, or both
    methods = METHODS if p.method == "all" else (p.method,)
    grid = setting_grid(p)
    sizes = {
        f"--{k.replace('_', '-')}": len(v)
        for k, v in {**grid, "alpha": p.alpha, "delta": p.delta}.items()
        if v
    }
    rows = sweep.check_rows(sizes, len(methods), per="methods")
    seconds = rows / len(methods) * sum(_row_seconds(m, p) for m in methods)
    return _stream(grid, p.alpha, p.delta, methods, p.conversion, p.lipschitz is not None, seconds, chunk)


#: Combinations per chunk of a sweep (at most; fewer where rows are expensive): memory is bounded by the
#: chunk, not by the sweep (a row took about 15 KB while computed).
CHUNK = 8192

#: CPU seconds per row on one core, measured with a margin (time.process_time of :func:`langevin` on a sweep of
#: 5,000 step counts, and of the engine's conversions on 200 random coefficients, the packing of the rows
#: included): a Rényi bound at α (closed forms: about 1 µs), ε at δ of the lower bound and of composition
#: (exact Gaussians: about 6 µs); the dynamics bound's ε is converted order by order like iterate's feldman
#: (:data:`dpcalc.commands.iterate.command.CONVERSION_SECONDS`, by --conversion).
RDP_SECONDS = 1e-5
PROFILE_SECONDS = {"lower": 3e-5, "composition": 3e-5}


def _row_seconds(method: str, p) -> float:
    """The estimated CPU seconds of one row of ``method``."""
    seconds = RDP_SECONDS if p.alpha is not None else 0.0
    if p.delta is not None:
        seconds += CONVERSION_SECONDS[p.conversion] if method == "dynamics" else PROFILE_SECONDS[method]
    return seconds


def setting_grid(p) -> dict:
    """The swept inputs of a langevin setting, by name (the sensitivity S_g = 2L with --lipschitz)."""
    sens = p.sensitivity if p.sensitivity is not None else tuple(2.0 * v for v in p.lipschitz)
    return dict(
        sigma=p.sigma,
        sensitivity=sens,
        lr=p.lr,
        strong_convexity=p.strong_convexity,
        smoothness=p.smoothness,
        dataset_size=p.dataset_size,
        steps=p.steps,
    )


def _stream(params, alpha, delta, methods, conversion, from_lipschitz, seconds, chunk=None) -> Stream:
    """The rows of :func:`langevin_stream` (``params``: the swept inputs of the setting, by name)."""
    lg.check_conditions(
        np.asarray(params["lr"])[:, None, None],
        np.asarray(params["strong_convexity"])[None, :, None],
        np.asarray(params["smoothness"])[None, None, :],
        np.asarray(params["dataset_size"]),
    )
    axes = {k: np.asarray(v, float) for k, v in params.items()}
    if alpha is not None:
        axes["alpha"] = np.asarray(alpha, float)
    if delta is not None:
        axes["delta"] = np.asarray(delta, float)
    n = math.prod(x.size for x in axes.values())
    lam, lr = axes["strong_convexity"], axes["lr"]
    notes = []
    # every (λ, η) pair of the sweep, in order: the first three named
    pairs = itertools.product(sorted({float(v) for v in lam}), sorted({float(v) for v in lr}))
    for lam_v, lr_v in itertools.islice(pairs, 3):
        k_star = float(lg.crossing_steps(lr_v, lam_v))
        notes.append(
            f"λ = {lam_v:g}, η = {lr_v:g}: the dynamics bound is below composition for K > {k_star:.6g} "
            f"in Rényi terms at every order (crossing_steps); composition is smaller before"
        )
    count = len({float(v) for v in lam}) * len({float(v) for v in lr})
    if count > 3:
        notes.append(f"... and {count - 3} more (λ, η) pairs: see the crossing_steps column")
    if "lower" in methods and (np.any(lam > 1.0) or np.any(axes["smoothness"] < 1.0)):  # _outside somewhere
        notes.append(OUTSIDE_NOTE)
    caption = (
        "noisy GD, last model released, replace-one; S_g = sensitivity of the gradient sum"
        + (" = 2L (from --lipschitz)" if from_lipschitz else "")
        + "; lower = a lower bound for ℓ = ‖θ−x‖²/2, not a guarantee"
    )
    headline = "epsilon" if delta is not None else "rdp"
    if methods == ("lower",):
        headline += "_lower"

    def compute(task):
        m, lo, hi = task
        cols = _columns(params, axes, lo, hi, alpha, delta, m, conversion)
        return Result(
            conform(cols, "langevin"), headline=headline, title="Langevin privacy dynamics", caption=caption
        )

    def finish(result):
        for key in _DROPPED:  # a column no row has a value in does not apply (e.g. --method dynamics)
            col = result.columns[key]
            if all(v is None or v != v for v in col):
                result.columns[key] = [None] * len(col)
        result.plot = _plot(params, alpha, delta, methods, result)
        return result

    chunks = sweep.by_method(
        compute,
        methods,
        n,
        CHUNK if chunk is None else chunk,
        seconds=seconds,
        what=f"Langevin privacy dynamics (--method {'all' if len(methods) > 1 else methods[0]})",
    )
    return Stream(
        names("langevin"),
        chunks,
        headline=headline,
        title="Langevin privacy dynamics",
        caption=caption,
        finish=finish,
        notes=notes,
    )


#: Columns left empty where no row of the result has a value in them (all nan: e.g. rdp_lower without the
#: lower bound).
_DROPPED = ("rdp", "rdp_lower", "epsilon", "epsilon_lower", "best_alpha")


def _columns(params, axes, lo, hi, alpha, delta, m, conversion) -> dict:
    """The columns of method ``m`` at combinations ``lo`` to ``hi`` of ``axes``."""
    g = grid_part(axes, lo, hi)
    s, sg, lr, lam, n, k = (
        g[x] for x in ("sigma", "sensitivity", "lr", "strong_convexity", "dataset_size", "steps")
    )
    coefs = {
        "dynamics": lambda: lg.coef_dynamics(s, sg, lr, lam, n, k),
        "lower": lambda: lg.coef_lower(s, sg, lr, n, k),
        "composition": lambda: lg.coef_composition(s, sg, lr, n, k),
    }
    # every input is a column (one schema); a table moves constant ones to its caption
    shown = list(params)
    names = ["method", "bound", *shown]
    if alpha is not None:
        names += ["alpha", "rdp", "rdp_lower"]
    if delta is not None:
        names += ["delta", "epsilon", "epsilon_lower", "best_alpha"]
    names.append("crossing_steps")
    cols: dict[str, list] = {x: [] for x in names}
    nan = np.full(s.shape, np.nan)
    crossing = lg.crossing_steps(lr, lam)
    outside = _outside(lam, g["smoothness"])
    c = np.asarray(coefs[m](), float)
    lower = m == "lower"
    if lower:  # the squared loss it is computed for is not in a class with λ > 1 or β < 1: no lower end
        c = np.where(outside, np.nan, c)  # (and no ε below)
    cols["method"] += [m] * s.size
    cols["bound"] += ["lower" if lower else "upper"] * s.size
    for key in shown:
        cols[key] += [int(v) for v in g[key]] if key in ("dataset_size", "steps") else list(g[key])
    if alpha is not None:
        with np.errstate(over="ignore"):
            r = g["alpha"] * c if lower else np.asarray(lg.rdp(g["alpha"], c), float)
        cols["alpha"] += list(g["alpha"])
        cols["rdp"] += list(nan if lower else r)
        cols["rdp_lower"] += list(r if lower else nan)
    if delta is not None:
        best = nan
        if m == "dynamics":
            eps, best = lg.eps_linear_curve(g["delta"], c, conversion=conversion)
        elif m == "composition":
            eps = lg.eps_gaussian_coef(g["delta"], c)
        else:
            eps = lg.eps_gaussian_coef_lower(g["delta"], np.where(outside, 0.0, c))
            eps = np.where(outside, np.nan, eps)
        eps = np.broadcast_to(np.asarray(eps, float), s.shape)
        cols["delta"] += list(g["delta"])
        cols["epsilon"] += list(nan if lower else eps)
        cols["epsilon_lower"] += list(eps if lower else nan)
        cols["best_alpha"] += list(np.broadcast_to(np.asarray(best, float), s.shape))
    cols["crossing_steps"] += list(np.broadcast_to(np.asarray(crossing, float), s.shape))
    for key in _DROPPED:
        if key in cols and all(v != v for v in cols[key]):  # all nan here: empty
            del cols[key]
    return cols


def _plot(params, alpha, delta, methods, result):
    """--plot: against K if swept, else α or δ, else another swept parameter (the other swept ones split the
    lines), the lower bound dashed, K* dotted; nothing swept: a dot chart."""
    if len(result) < 2:
        return None
    y = "epsilon" if delta is not None else "rdp"
    has_y = any(v is not None and v == v for v in result.columns[y])
    axes = {"steps": params["steps"], "alpha": alpha or (), "delta": delta or (), **params}
    swept = [k for k, v in axes.items() if len(v) > 1]
    x = swept[0] if swept else "steps"
    return PlotSpec(
        x=x,
        y=y if has_y else f"{y}_lower",
        y_extra=(f"{y}_lower",),
        series="method",
        group=tuple(swept[1:]),
        logx=x == "delta",
        autolog=True,
        xref="crossing_steps" if x == "steps" else None,
        labels={
            "dynamics": "dynamics (last model only)",
            "lower": "lower bound, ℓ = ‖θ−x‖²/2",
            "composition": "composition (every iterate)",
            "crossing_steps": "crossing K*",
        },
        xlabel={"steps": "iterations K", "alpha": "Rényi order α", "delta": "δ (probability)"}.get(x, ""),
        ylabel="ε (nats)" if delta is not None else "Rényi DP ε(α) (nats)",
        title="Privacy dynamics vs composition: "
        + ("ε" if delta is not None else "Rényi bound")
        + (f" by {_SYMBOL.get(x, x) if x != 'delta' else 'δ'}" if swept else " by method"),
        subtitle=", ".join(
            f"{_SYMBOL.get(k, {'alpha': 'α', 'delta': 'δ'}.get(k, k))} = {v[0]:g}"
            for k, v in axes.items()
            if len(v) == 1
        )
        + "; noisy GD, last model released, replace-one",
    )


#: The note where some setting's class leaves the squared loss out (:func:`_outside`).
OUTSIDE_NOTE = (
    "lower: empty where λ > 1 or β < 1: the squared loss (λ = β = 1) its lower bound is computed for is outside "
    "that class, so it is no lower bound there"
)


def _outside(strong_convexity, smoothness):
    """Where the class of λ-strongly convex, β-smooth losses leaves out the squared loss ‖θ−x‖²/2 (1-strongly
    convex and 1-smooth: in the class iff λ <= 1 <= β), whose noisy GD the lower bound is of."""
    return (np.asarray(strong_convexity, float) > 1.0) | (np.asarray(smoothness, float) < 1.0)


# -- --rdp-curve ----------------------------------------------------------------------------------------
def langevin_curve(params, alphas: Sequence[float] | None = None, *, stream: bool = False):
    """The Rényi bounds of ``langevin`` at every order (``params``: :class:`dpcalc.commands.langevin.command.
    LangevinParams`; ``delta`` and ``conversion`` do not enter a curve), each linear in α: dynamics and
    composition in ``rdp`` (:func:`dpcalc.engine.hidden_state.langevin.rdp`, upper bounds), the paper's
    lower bound in ``rdp_lower`` (``bound`` = lower: never a guarantee, and not a curve ``convert`` reads).

    The command's ε of dynamics minimises the conversion over continuous α (composition and lower are
    converted exactly, as Gaussians), so ``convert --curve`` of the dynamics curve on a grid of orders is
    that ε or above; at the command's ``best_alpha`` (with ``convert --method`` = its ``--conversion``)
    the two agree to a few ulps (the printed ζ(α) = α·c is rounded up once more)."""
    p = params
    if (p.sensitivity is None) == (p.lipschitz is None):
        raise InputError("give exactly one of --sensitivity (S_g) or --lipschitz (S_g = 2L)")
    if p.alpha is not None:
        raise InputError(
            "--alpha cannot be used with --rdp-curve: give the orders of the curve with --alphas"
        )
    methods = list(METHODS) if p.method == "all" else [p.method]
    grid = setting_grid(p)
    lg.check_conditions(
        np.asarray(grid["lr"])[:, None, None],
        np.asarray(grid["strong_convexity"])[None, :, None],
        np.asarray(grid["smoothness"])[None, None, :],
        np.asarray(grid["dataset_size"]),
    )
    a = orders(alphas)
    names = {"sensitivity": "--lipschitz" if p.lipschitz is not None else "--sensitivity"}
    check_curve_rows(
        {names.get(k, f"--{k.replace('_', '-')}"): len(v) for k, v in grid.items()},
        a.size,
        len(methods),
        whole=False,
    )
    axes = {k: np.asarray(v, float) for k, v in grid.items()}

    def values(m, lo, hi):
        g = grid_part(axes, lo, hi)
        s, sg, lr, lam, n, k = (
            g[x][:, None] for x in ("sigma", "sensitivity", "lr", "strong_convexity", "dataset_size", "steps")
        )
        if m == "lower":  # a lower bound, never a guarantee: its own column (none outside the class)
            c = np.where(_outside(lam, g["smoothness"][:, None]), np.nan, lg.coef_lower(s, sg, lr, n, k))
            with np.errstate(over="ignore"):
                return {"rdp_lower": a * np.asarray(c, float)}
        coef = (
            lg.coef_dynamics(s, sg, lr, lam, n, k)
            if m == "dynamics"
            else lg.coef_composition(s, sg, lr, n, k)
        )
        return {"rdp": np.asarray(lg.rdp(a, np.asarray(coef, float)), float)}

    def configs(lo, hi):
        g = grid_part(axes, lo, hi)
        return {
            x: ([int(v) for v in g[x]] if x in ("dataset_size", "steps") else g[x].tolist()) for x in grid
        }

    notes = []
    if "lower" in methods and (np.any(axes["strong_convexity"] > 1.0) or np.any(axes["smoothness"] < 1.0)):
        notes.append(OUTSIDE_NOTE)  # _outside somewhere in the sweep
    caption = (
        "noisy GD, last model released, replace-one; S_g = sensitivity of the gradient sum"
        + (" = 2L (from --lipschitz)" if p.lipschitz is not None else "")
        + "; lower = a lower bound for ℓ = ‖θ−x‖²/2, not a guarantee"
        + f"; {FOR_CONVERT} (of an upper bound)"
    )
    symbols = _SYMBOL
    return curve_result(
        "langevin",
        configs,
        methods,
        values,
        a,
        caption,
        stream=stream,
        count=math.prod(x.size for x in axes.values()),
        seconds_per_row=CURVE_SECONDS_PER_ROW,
        headline="rdp_lower" if methods == ["lower"] else "rdp",
        swept=[x for x, v in grid.items() if len(v) > 1],
        notes=notes,
        extra=lambda m: {"bound": "lower" if m == "lower" else "upper"},
        subtitle=", ".join(f"{symbols[x]} = {v[0]:g}" for x, v in grid.items() if len(v) == 1),
    )
