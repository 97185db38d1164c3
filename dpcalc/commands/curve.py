"""``--rdp-curve``: the Rényi-DP curve a command computes, printed instead of ε (docs/math.md §1.6).

``sgd-epsilon``, ``compose``, ``iterate`` and ``langevin`` turn a Rényi curve ζ(α) into ε; with
``--rdp-curve`` they print that curve, one row per order α of ``--alphas`` (default: the engine's
:data:`~dpcalc.engine.orders.DEFAULT_ORDERS`, the 225 orders the commands minimise over), per
configuration of the swept inputs and per method.  The columns are
:data:`dpcalc.commands.schema.CURVE_SCHEMAS` (a fixed list per command, always holding ``alpha`` and
``rdp``), so the CSV of one curve is accepted as it is by ``dpcalc convert --curve -``, which then
gives the command's own RDP ε (see each function for where the two can differ).

An order where a bound gives nothing (Feldman et al. above α*, an unbounded mechanism) prints ``inf``;
``convert --curve`` skips such orders.  Options that only act on the conversion to (ε, δ)
(``--delta``, ``--epsilon``, ``--conversion``) do not change a curve; options that would change what is
computed without a curve to show (``--target-epsilon``, an accountant or method without a Rényi form,
``--alpha``) are refused with one line (exit 2).  numpy loads only when a function runs.
"""

from __future__ import annotations

from collections.abc import Sequence

from dpcalc.commands.schema import curve_names
from dpcalc.errors import InputError
from dpcalc.result import PlotSpec, Result

TITLE = "Rényi DP curve"
_CONVERT = "the CSV of one curve (one configuration, one method) is a curve for dpcalc convert --curve -"


def orders(alphas: Sequence[float] | None):
    """The orders of a curve: ``alphas`` (checked: finite, > 1, at most ``ORDER_MAX``, distinct; in the order given) or, for
    ``None``, :data:`~dpcalc.engine.orders.DEFAULT_ORDERS`."""
    import numpy as np

    from dpcalc.engine.orders import DEFAULT_ORDERS, ORDER_MAX

    if alphas is None:
        return DEFAULT_ORDERS
    a = np.asarray(alphas, dtype=float).reshape(-1)
    if a.size == 0:
        raise InputError("Invalid value for '--alphas': give at least one order")
    if not np.all(np.isfinite(a) & (a > 1.0)):
        raise InputError("Invalid value for '--alphas': every order must be a finite number > 1")
    if np.any(a > ORDER_MAX):
        raise InputError(f"Invalid value for '--alphas': every order must be at most {ORDER_MAX:g}")
    if np.unique(a).size != a.size:
        raise InputError("Invalid value for '--alphas': the orders must be distinct")
    return a


def _check_rows(sizes: dict[str, int], orders: int, methods: int = 1) -> None:
    """Refuse a curve of more rows than a sweep may make, or of more than :data:`MAX_CONFIGS`
    configurations (before anything is computed)."""
    from dpcalc.commands import sweep

    sweep.check_rows({**sizes, "--alphas": orders, "--method": methods})
    # the configurations' inputs are held whole (one Python value each), the rows are streamed
    sweep.check_rows(sizes, limit=MAX_CONFIGS, unit="configurations")


#: The most configurations (combinations of the swept inputs) of one curve command: their inputs are held
#: in memory while the rows stream (a million took about 500 MB).
MAX_CONFIGS = 200_000


#: Rows per chunk of a curve: a large sweep is written as it is computed, in memory bounded by a chunk.
CHUNK_ROWS = 65536


def _per_chunk(a) -> int:
    """Configurations per chunk of a curve over the orders ``a``."""
    return max(1, CHUNK_ROWS // a.size)


def _rows(configs: dict, method: str, values: dict, a, extra: dict | None = None) -> dict:
    """Columns of one method's curves: for each of the n configurations (``configs``: column -> n values)
    one row per order of ``a`` (m orders); ``values``: column -> (n, m) array (nan: no value), ``extra``:
    column -> one value for every row (e.g. ``bound``)."""
    import numpy as np

    m = a.size
    n = len(next(iter(configs.values()))) if configs else 1
    cols = {k: [v for v in col for _ in range(m)] for k, col in configs.items()}
    if method:
        cols["method"] = [method] * (n * m)
    for k, v in (extra or {}).items():
        cols[k] = [v] * (n * m)
    cols["alpha"] = np.tile(a, n).tolist()
    for k, arr in values.items():
        flat = np.broadcast_to(np.asarray(arr, dtype=float), (n, m)).reshape(-1)
        cols[k] = [None if v != v else float(v) for v in flat.tolist()]
    return cols


def _curves(
    command,
    configs: dict,
    methods,
    values,
    a,
    caption,
    *,
    stream=False,
    headline="rdp",
    swept=(),
    notes=(),
    subtitle="",
    extra=None,
):
    """The curves of ``command``: for each method and configuration (``configs``: column -> n values),
    ``values(method, lo, hi)`` (column -> (hi − lo, m) array) over the orders ``a``; ``extra(method)``:
    columns holding one value per method.  A :class:`~dpcalc.result.Stream` of chunks of about
    :data:`CHUNK_ROWS` rows (``stream``), else the whole :class:`~dpcalc.result.Result`."""
    from dpcalc.commands import sweep
    from dpcalc.result import Stream

    names = curve_names(command)
    n = len(next(iter(configs.values()))) if configs else 1
    pieces = sweep.slices(n, _per_chunk(a))
    tasks = [(m, lo, hi) for m in methods for lo, hi in pieces]

    def chunk(task):
        m, lo, hi = task
        part = {k: col[lo:hi] for k, col in configs.items()}
        cols = _rows(part, m, values(m, lo, hi), a, extra(m) if extra else None)
        rows = len(cols["alpha"])
        return Result({k: cols.get(k, [None] * rows) for k in names}, headline=headline, title=TITLE)

    def finish(result):
        if len(result) > 1:
            result.plot = PlotSpec(
                x="alpha",
                y=headline,
                y_extra=("rdp_lower",) if "rdp_lower" in names and headline == "rdp" else (),
                series="method" if len(methods) > 1 else None,
                group=tuple(swept),
                logx=True,
                autolog=True,
                xlabel="Rényi order α",
                ylabel="Rényi DP ζ(α) (nats)",
                title=TITLE + " by order",
                subtitle=subtitle,
            )
        return result

    out = Stream(
        names,
        (chunk(t) for t in tasks),
        headline=headline,
        title=TITLE,
        caption=caption,
        finish=finish,
        notes=list(notes),
    )
    return out if stream else out.collect()


# -- sgd-epsilon --------------------------------------------------------------------------------------
def sgd_curve(params, alphas: Sequence[float] | None = None, *, stream: bool = False):
    """The Rényi curve of DP-SGD (``params``: :class:`dpcalc.commands.sgd_epsilon.SgdEpsilonParams`; its
    ``delta``, ``conversion`` and ``eps_error`` are not used): T times the per-step curve of the
    subsampled Gaussian (:func:`dpcalc.engine.dpsgd.accounting.rdp_per_step`, Poisson: exact, MTZ 2019;
    fixed-size: the WBK 2019 bound at σ/2), exactly the curve the rdp accountant converts.

    ``convert --curve`` of it gives the rdp accountant's ε with ``--conversion balle`` or ``mironov``
    exactly; with ``optimal``, the accountant evaluates the exact conversion on a window of orders
    around the best order of its closed form (``eps_of_curve``) while ``convert`` evaluates it on every
    order, so ``convert`` is equal or (when the window misses the best order) lower.

    Returns a :class:`~dpcalc.result.Result`, or with ``stream`` a :class:`~dpcalc.result.Stream` of
    chunks (as every function here)."""
    import contextlib
    import dataclasses

    import numpy as np

    from dpcalc.commands import sgd_epsilon as sgd_cmd
    from dpcalc.engine.dpsgd import accounting
    from dpcalc.engine.grid import product
    from dpcalc.engine.mechanisms import sgm

    p = params
    if p.target_epsilon is not None:
        raise InputError(
            "--target-epsilon cannot be used with --rdp-curve: the curve is of a given noise multiplier "
            "and length (give --noise-multiplier and --steps or --epochs)"
        )
    if p.accountant not in ("rdp", "all"):
        raise InputError(
            f"--accountant {p.accountant} has no Rényi curve: --rdp-curve prints the rdp accountant's "
            "(the exact Rényi DP of the subsampled Gaussian)"
        )
    if p.sampling == "shuffle":
        raise InputError(
            "--rdp-curve: --sampling shuffle is bounded without a Rényi curve here (its upper bound composes "
            "one Gaussian per epoch exactly); use --sampling poisson or fixed-size for a curve"
        )
    if p.sigma is None:
        raise InputError("missing option --noise-multiplier")
    if p.steps is None and p.epochs is None:
        raise InputError("give --steps or --epochs")
    p = dataclasses.replace(p, accountant="rdp")
    p, _, _ = sgd_cmd._checked(p)  # the command's own checks of the inputs (and their messages)
    accounting.check_setting(p.sampling, p.neighbors)
    a = orders(alphas)
    sizes = {
        "--sample-rate": p.sample_rate,
        "--batch-size": p.batch_size,
        "--dataset-size": p.dataset_size,
        "--max-batch-size": p.max_batch_size,
        "--noise-multiplier": p.sigma,
        "--steps": p.steps,
        "--epochs": p.epochs,
    }
    _check_rows({k: len(v) for k, v in sizes.items() if v is not None}, a.size)
    axes = {}
    if p.sample_rate is not None:
        axes["q"] = np.asarray(p.sample_rate, float)
        if p.dataset_size is not None:
            axes["n"] = np.asarray(p.dataset_size, float)
    else:
        axes["b"] = np.asarray(p.batch_size, float)
        axes["n"] = np.asarray(p.dataset_size, float)
    if p.max_batch_size is not None:
        axes["bmax"] = np.asarray(p.max_batch_size, float)
    axes["sigma"] = np.asarray(p.sigma, float)
    if p.steps is not None:
        axes["steps"] = np.asarray(p.steps, float)
    else:
        axes["epochs"] = np.asarray(p.epochs, float)
    g = product(**axes)
    if "q" not in g:
        g["q"] = g["b"] / g["n"]
    if "epochs" in g:  # steps = ceil(E/q) = ceil(E·N/B), as the command computes them
        ratio = g["epochs"] * g["n"] / g["b"] if "b" in g else g["epochs"] / g["q"]
        g["steps"] = np.maximum(np.ceil(ratio), 1.0)
        if p.sampling == "balls-in-bins":  # whole epochs of floor(N/B) steps, as the command counts them
            from dpcalc.commands.samplers import shuffle_steps

            g["steps"] = shuffle_steps(g)
    n = g["q"].size
    # as the command does: a curve of one chunk may evaluate small arrays without scipy (a single query
    # gives the command's digits); several chunks use scipy throughout, so that no value depends on
    # where a chunk ends
    light = n <= _per_chunk(a)

    def values(method, lo, hi):
        part = {k: v[lo:hi] for k, v in g.items()}
        with sgm.light_start() if light else contextlib.nullcontext():
            total = accounting.rdp_total(
                part["q"],
                part["sigma"],
                part["steps"],
                a,
                sampling=p.sampling,
                neighbors=p.neighbors,
                dataset_size=part.get("n"),
                max_batch_size=part.get("bmax"),
            )
        return {"rdp": total}

    configs = {
        "sampling": [p.sampling] * n,
        "neighbors": [p.neighbors] * n,
        "sample_rate": g["q"].tolist(),
        "batch_size": g["b"].astype(int).tolist() if "b" in g else [None] * n,
        "dataset_size": g["n"].astype(int).tolist() if "n" in g else [None] * n,
        "max_batch_size": g["bmax"].astype(int).tolist() if "bmax" in g else [None] * n,
        "noise_multiplier": g["sigma"].tolist(),
        "steps": [int(t) for t in g["steps"]],
        "epochs": g["epochs"].tolist() if "epochs" in g else [None] * n,
    }
    swept = [c for c, opt in _SGD_COLUMNS.items() if sizes[opt] is not None and len(sizes[opt]) > 1]
    from dpcalc.commands.samplers import ALLOCATION, relation_caption

    relation = relation_caption(p.sampling, p.neighbors)
    what = (
        "rounds × the per-round bound of random allocation"
        if p.sampling in ALLOCATION
        else "steps × the per-step curve of the subsampled Gaussian"
    )
    caption = (
        f"sampling: {p.sampling}; neighbours: {p.neighbors} ({relation}); rdp: {what}, the rdp accountant's "
        f"curve; {_CONVERT}"
    )
    fixed = [
        f"{s} = {sizes[opt][0]:g}" for s, opt in _SGD_SYMBOLS.items() if sizes[opt] and len(sizes[opt]) == 1
    ]
    return _curves(
        "sgd-epsilon",
        configs,
        [""],
        values,
        a,
        caption,
        stream=stream,
        swept=swept,
        subtitle=", ".join(fixed) + f"; sampling: {p.sampling}, neighbours: {p.neighbors}",
    )


_SGD_COLUMNS = {
    "sample_rate": "--sample-rate",
    "batch_size": "--batch-size",
    "dataset_size": "--dataset-size",
    "max_batch_size": "--max-batch-size",
    "noise_multiplier": "--noise-multiplier",
    "steps": "--steps",
    "epochs": "--epochs",
}
_SGD_SYMBOLS = {
    "q": "--sample-rate",
    "B": "--batch-size",
    "N": "--dataset-size",
    "B_max": "--max-batch-size",
    "σ": "--noise-multiplier",
    "T": "--steps",
    "epochs": "--epochs",
}


# -- compose ------------------------------------------------------------------------------------------
def compose_curve(
    texts, alphas: Sequence[float] | None = None, method: str = "best", *, stream: bool = False
):
    """The summed Rényi curve of the MECHANISMs ``texts`` (identical specs merged, as ``compose`` does):
    :func:`dpcalc.engine.mechanisms.catalogue.total_rdp`, exactly the curve ``compose --method rdp``
    converts, so ``convert --curve`` of it (optimal conversion) gives that ε exactly.  A spec without a
    Rényi curve (``dp`` with δ > 0) is refused."""
    import numpy as np

    from dpcalc.commands.compose import _check_relations
    from dpcalc.engine.mechanisms.catalogue import rdp_work_refusal, total_rdp
    from dpcalc.spec import expand_sources, merge_identical, parse_mechanisms

    if method not in ("best", "all", "rdp"):
        raise InputError(
            f"--method {method} has no Rényi curve: --rdp-curve prints the curve of the rdp method "
            "(leave --method out, or give --method rdp)"
        )
    specs = merge_identical(parse_mechanisms(expand_sources(texts)))
    _check_relations(specs)
    a = orders(alphas)
    _check_rows({}, a.size)
    if (refusal := rdp_work_refusal(specs)) is not None:
        raise InputError(refusal)
    curve = np.asarray(total_rdp(specs, a), dtype=float)
    labels = " + ".join(s.label() for s in specs)
    return _curves(
        "compose",
        {},
        [""],
        lambda m, lo, hi: {"rdp": curve[None, :]},
        a,
        f"mechanisms: {labels}; rdp: the sum of their Rényi curves (the rdp method's curve); {_CONVERT}",
        stream=stream,
        subtitle=" + ".join(s.text for s in specs),
    )


# -- iterate ------------------------------------------------------------------------------------------
ITERATE_CURVES = ("feldman", "composition", "cni")


def iterate_curve(params, alphas: Sequence[float] | None = None, *, stream: bool = False):
    """The Rényi bounds of ``iterate`` at every order (``params``: :class:`dpcalc.commands.iterate.
    IterateParams`; ``delta``, ``epsilon``, ``conversion`` and ``diameter`` do not enter a curve):
    feldman (:func:`~dpcalc.engine.hidden_state.iteration.rdp_feldman`, ``inf`` above α*), composition
    (:func:`~dpcalc.engine.hidden_state.iteration.rdp_composition`) and, with ``initial_distance``, cni
    (:func:`~dpcalc.engine.hidden_state.iteration.rdp_contractive_iteration`).  asoodeh has no Rényi form.

    The command's ε of feldman and cni minimises the conversion over *continuous* α (composition is
    converted exactly, as one Gaussian), so ``convert --curve`` of a curve on a grid of orders is that ε
    or above; at the command's best order (``--alphas`` = its ``alpha`` column, ``convert --method`` = its
    ``--conversion``) the two agree to a few ulps (the curve's ζ(α) is rounded up once more)."""
    import numpy as np

    from dpcalc.engine.grid import product
    from dpcalc.engine.hidden_state import iteration as it

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
    if p.smoothness is not None and "feldman" in methods:
        worst = max(p.lr) * max(p.smoothness)
        if worst > 2.0:
            raise InputError(
                f"--lr: feldman needs the step size η <= 2/β (a contractive gradient step), "
                f"got η = {float(max(p.lr))!r} with β = {float(max(p.smoothness))!r}"
            )
    a = orders(alphas)
    grid = dict(sigma=p.sigma, lipschitz=p.lipschitz, lr=p.lr, steps=p.steps)
    if p.initial_distance is not None:
        grid["initial_distance"] = p.initial_distance
    _check_rows({f"--{k.replace('_', '-')}": len(v) for k, v in grid.items()}, a.size, len(methods))
    g = product(**{k: np.asarray(v, float) for k, v in grid.items()})

    def values(m, lo, hi):
        s, lip, lr, t = (g[k][lo:hi, None] for k in ("sigma", "lipschitz", "lr", "steps"))
        if m == "feldman":
            return {"rdp": it.rdp_feldman(a, s, lip, t, log_form=p.feldman_log)}
        if m == "composition":
            return {"rdp": it.rdp_composition(a, s, lip)}
        # cni, as the command computes it: noise std ησ per step
        with np.errstate(over="ignore", under="ignore"):
            noise = lr * s
        gone = noise == 0
        noise = np.where(gone, 1.0, np.minimum(noise, 1e308))
        dist = g["initial_distance"][lo:hi, None]
        return {"rdp": np.where(gone, np.inf, it.rdp_contractive_iteration(a, dist, noise, t))}

    configs = {k: ([int(v) for v in g[k]] if k == "steps" else g[k].tolist()) for k in grid}
    swept = [k for k, v in grid.items() if len(v) > 1]
    caption = (
        "randomly-stopped projected noisy SGD, one pass (T = n), replace-one; feldman: convex β-smooth loss, "
        "η <= 2/β, inf above α*; composition: every iterate released"
        + ("; cni: same data, starts R apart" if "cni" in methods else "")
        + f"; {_CONVERT}"
    )
    symbols = {"sigma": "σ", "lipschitz": "L", "lr": "η", "steps": "T", "initial_distance": "R"}
    return _curves(
        "iterate",
        configs,
        methods,
        values,
        a,
        caption,
        stream=stream,
        swept=swept,
        subtitle=", ".join(f"{symbols[k]} = {v[0]:g}" for k, v in grid.items() if len(v) == 1),
    )


# -- langevin -----------------------------------------------------------------------------------------
def langevin_curve(params, alphas: Sequence[float] | None = None, *, stream: bool = False):
    """The Rényi bounds of ``langevin`` at every order (``params``: :class:`dpcalc.commands.langevin.
    LangevinParams`; ``delta`` and ``conversion`` do not enter a curve), each linear in α: dynamics and
    composition in ``rdp`` (:func:`dpcalc.engine.hidden_state.langevin.rdp`, upper bounds), the paper's
    lower bound in ``rdp_lower`` (``bound`` = lower: never a guarantee, and not a curve ``convert`` reads).

    The command's ε of dynamics minimises the conversion over continuous α (composition and lower are
    converted exactly, as Gaussians), so ``convert --curve`` of the dynamics curve on a grid of orders is
    that ε or above; at the command's ``best_alpha`` (with ``convert --method`` = its ``--conversion``)
    the two agree to a few ulps (the printed ζ(α) = α·c is rounded up once more)."""
    import numpy as np

    from dpcalc.commands.langevin import _SYMBOL, METHODS, setting_grid
    from dpcalc.engine.grid import product
    from dpcalc.engine.hidden_state import langevin as lg

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
    _check_rows(
        {names.get(k, f"--{k.replace('_', '-')}"): len(v) for k, v in grid.items()}, a.size, len(methods)
    )
    g = product(**{k: np.asarray(v, float) for k, v in grid.items()})

    def values(m, lo, hi):
        s, sg, lr, lam, n, k = (
            g[x][lo:hi, None]
            for x in ("sigma", "sensitivity", "lr", "strong_convexity", "dataset_size", "steps")
        )
        if m == "lower":  # a lower bound, never a guarantee: its own column
            with np.errstate(over="ignore"):
                return {"rdp_lower": a * np.asarray(lg.coef_lower(s, sg, lr, n, k), float)}
        coef = (
            lg.coef_dynamics(s, sg, lr, lam, n, k)
            if m == "dynamics"
            else lg.coef_composition(s, sg, lr, n, k)
        )
        return {"rdp": np.asarray(lg.rdp(a, np.asarray(coef, float)), float)}

    configs = {x: ([int(v) for v in g[x]] if x in ("dataset_size", "steps") else g[x].tolist()) for x in grid}
    notes = []
    if "lower" in methods and (np.any(g["strong_convexity"] > 1.0) or np.any(g["smoothness"] < 1.0)):
        notes.append(
            "lower: the squared loss (λ = β = 1) is outside a class with λ > 1 or β < 1; there the lower bound "
            "describes that loss only, not your class"
        )
    caption = (
        "noisy GD, last model released, replace-one; S_g = sensitivity of the gradient sum"
        + (" = 2L (from --lipschitz)" if p.lipschitz is not None else "")
        + "; lower = a lower bound for ℓ = ‖θ−x‖²/2, not a guarantee"
        + f"; {_CONVERT} (of an upper bound)"
    )
    symbols = _SYMBOL
    return _curves(
        "langevin",
        configs,
        methods,
        values,
        a,
        caption,
        stream=stream,
        headline="rdp_lower" if methods == ["lower"] else "rdp",
        swept=[x for x, v in grid.items() if len(v) > 1],
        notes=notes,
        extra=lambda m: {"bound": "lower" if m == "lower" else "upper"},
        subtitle=", ".join(f"{symbols[x]} = {v[0]:g}" for x, v in grid.items() if len(v) == 1),
    )
