"""``dpcalc langevin``: privacy dynamics of noisy gradient descent, last model released (formulas.md §5)."""

from __future__ import annotations

import click

from dpcalc.cli.common import common_options, run
from dpcalc.cli.types import Grid
from dpcalc.result import PlotSpec, Result

METHODS = ("dynamics", "lower", "composition")
_SYMBOL = {
    "sigma": "σ",
    "sensitivity": "S_g",
    "lr": "η",
    "strong_convexity": "λ",
    "smoothness": "β",
    "dataset_size": "n",
    "steps": "K",
}
CONVERSIONS = ("optimal", "asoodeh", "balle", "mironov")

MAN_EXAMPLES = [
    (
        "Chourasia et al.'s setting at α = 30: the dynamics bound, the lower bound and composition:",
        "dpcalc langevin --sigma 0.02 --sensitivity 4 --lr 0.02 --strong-convexity 1 --smoothness 1 "
        "--dataset-size 5000 --steps 1,10,100,159,500,1000 --alpha 30",
    ),
    (
        "The same as (ε, δ) at δ = 1e-5:",
        "dpcalc langevin --sigma 0.02 --sensitivity 4 --lr 0.02 --strong-convexity 1 --smoothness 1 "
        "--dataset-size 5000 --steps 100,1000 --delta 1e-5",
    ),
    (
        "A 1-Lipschitz loss instead of a gradient sensitivity (S_g = 2L), curve over K drawn to a file:",
        "dpcalc langevin --sigma 0.02 --lipschitz 1 --lr 0.02 --strong-convexity 1 --smoothness 1 "
        "--dataset-size 5000 --steps 1:1000:1 --alpha 30 --plot langevin.png",
    ),
]

MAN_NOTES = """\
Setting (Chourasia, Ye and Shokri, NeurIPS 2021, arXiv 2102.05855): noisy gradient descent
θ_{k+1} = Π_C(θ_k − (η/n)·g(θ_k; D) + √(2ησ²)·N(0, I)) with g the SUM of the per-example gradients,
only θ_K released, replace-one neighbours (n public), a data-independent start.  S_g is the
sensitivity of the gradient sum; --lipschitz L sets S_g = 2L (one of the n gradients is replaced,
each of norm <= L).

dynamics: their theorem, (α, α S_g²/(λσ²n²)(1 − e^{−ληK/2}))-RDP at every α > 1, for a λ-strongly
convex, β-smooth loss on a closed convex set with η <= 1/β; the conditions η <= 1/β, 0 < λ <= β and
n >= 1 are checked (exit 2 naming the violated one).

lower: their exact lower bound α S_g²/(4σ²n²)(1 − e^{−ηK}) for ℓ(θ; x) = ‖θ − x‖²/2 (λ = β = 1): a
LOWER bound on the true privacy loss, reported in the rdp_lower / epsilon_lower columns (bound =
lower), never judged by --max-epsilon and never a guarantee.  It applies to your class of losses
only if λ <= 1 <= β.

composition: every iterate released, K Gaussian steps: (α, K α η S_g²/(4σ²n²))-RDP.

With --delta: the dynamics bound holds at every order and is converted order by order
(--conversion, default asoodeh) and optimised over α (best_alpha); composition is converted
exactly (K Gaussian steps are one Gaussian mechanism, Balle and Wang 2018); the lower bound is
converted the same exact way into a lower bound on ε.

crossing_steps: the K* = 2u*/(λη), u* = 2 + W(−2e^{−2}) ≈ 1.5936, beyond which the dynamics bound is
below composition (in Rényi terms, at every order).

--plot FILE draws the three bounds against K (the lower bound dashed, K* dotted), or against the
swept α or δ; with nothing swept, one dot per method."""


@click.command("langevin")
@click.option("--sigma", type=Grid(lo=0), required=True, help="Noise scale σ > 0 (noise √(2ησ²)·N(0, I)).")
@click.option(
    "--sensitivity",
    type=Grid(lo=0),
    default=None,
    help="Gradient sensitivity S_g > 0 of the gradient SUM under replace-one.",
)
@click.option(
    "--lipschitz",
    type=Grid(lo=0),
    default=None,
    help="Lipschitz constant L of the loss, instead of --sensitivity: S_g = 2L (replace-one, sum of gradients).",
)
@click.option("--lr", type=Grid(lo=0), required=True, help="Step size η > 0 (the theorem needs η <= 1/β).")
@click.option("--strong-convexity", type=Grid(lo=0), required=True, help="Strong convexity λ > 0 (λ <= β).")
@click.option("--smoothness", type=Grid(lo=0), required=True, help="Smoothness β > 0 of the loss.")
@click.option(
    "--dataset-size", type=Grid(lo=1, lo_open=False, integer=True), required=True, help="Dataset size n >= 1."
)
@click.option(
    "--steps", type=Grid(lo=1, lo_open=False, integer=True), required=True, help="Iterations K >= 1."
)
@click.option("--alpha", type=Grid(lo=1), default=None, help="Rényi order α > 1: report the Rényi bounds.")
@click.option(
    "--delta", type=Grid(lo=0, hi=1, hi_open=True), default=None, help="Target δ in (0, 1): report ε."
)
@click.option(
    "--method",
    type=click.Choice([*METHODS, "all"]),
    default="all",
    show_default=True,
    help="dynamics (Chourasia et al. upper bound), lower (their lower bound: not a guarantee), "
    "composition (every iterate released), or all.",
)
@click.option(
    "--conversion",
    type=click.Choice(CONVERSIONS),
    default="asoodeh",
    show_default=True,
    help="RDP → (ε, δ) conversion for the dynamics bound with --delta (see 'dpcalc convert').",
)
@common_options
def command(
    sigma,
    sensitivity,
    lipschitz,
    lr,
    strong_convexity,
    smoothness,
    dataset_size,
    steps,
    alpha,
    delta,
    method,
    conversion,
    out,
):
    """Privacy of noisy gradient descent that releases only its last model.

    Chourasia et al.'s privacy dynamics for strongly convex, smooth losses: the Rényi bound converges
    as the number of steps grows, while composition grows linearly.  Give --alpha (Rényi bounds) and/or
    --delta (ε).  S_g is the sensitivity of the SUM of gradients under replace-one; --lipschitz L
    means S_g = 2L.  One row per step count, order and bound; every numeric option takes sweeps.
    """
    if (sensitivity is None) == (lipschitz is None):
        raise click.UsageError("give exactly one of --sensitivity (S_g) or --lipschitz (S_g = 2L)")
    if alpha is None and delta is None:
        raise click.UsageError("give --alpha (Rényi bounds) and/or --delta (ε)")
    methods = METHODS if method == "all" else (method,)
    sens = sensitivity if sensitivity is not None else tuple(2.0 * v for v in lipschitz)
    params = dict(
        sigma=sigma,
        sensitivity=sens,
        lr=lr,
        strong_convexity=strong_convexity,
        smoothness=smoothness,
        dataset_size=dataset_size,
        steps=steps,
    )
    run(out, lambda: _compute(params, alpha, delta, methods, conversion, lipschitz is not None))


def _compute(params, alpha, delta, methods, conversion, from_lipschitz) -> Result:
    import numpy as np

    from dpcalc.engine.grid import product
    from dpcalc.engine.hidden_state import langevin as lg

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
    g = product(**axes)
    s, sg, lr, lam, n, k = (
        g[x] for x in ("sigma", "sensitivity", "lr", "strong_convexity", "dataset_size", "steps")
    )
    coefs = {
        "dynamics": lambda: lg.coef_dynamics(s, sg, lr, lam, n, k),
        "lower": lambda: lg.coef_lower(s, sg, lr, n, k),
        "composition": lambda: lg.coef_composition(s, sg, lr, n, k),
    }
    # parameters given one value go to the caption; swept ones (and steps, the main axis) are columns
    shown = [k for k in params if k == "steps" or len(params[k]) > 1]
    fixed = ", ".join(f"{_SYMBOL[k]} = {params[k][0]:g}" for k in params if k not in shown)
    names = ["method", "bound", *shown]
    if alpha is not None:
        names += ["alpha", "rdp", "rdp_lower"]
    if delta is not None:
        names += ["delta", "epsilon", "epsilon_lower", "best_alpha"]
    names.append("crossing_steps")
    cols: dict[str, list] = {x: [] for x in names}
    nan = np.full(s.shape, np.nan)
    crossing = lg.crossing_steps(lr, lam)
    for m in methods:
        c = np.asarray(coefs[m](), float)
        lower = m == "lower"
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
                eps = lg.eps_gaussian_coef_lower(g["delta"], c)
            eps = np.broadcast_to(np.asarray(eps, float), s.shape)
            cols["delta"] += list(g["delta"])
            cols["epsilon"] += list(nan if lower else eps)
            cols["epsilon_lower"] += list(eps if lower else nan)
            cols["best_alpha"] += list(np.broadcast_to(np.asarray(best, float), s.shape))
        cols["crossing_steps"] += list(np.broadcast_to(np.asarray(crossing, float), s.shape))
    for key in ("rdp", "rdp_lower", "epsilon", "epsilon_lower", "best_alpha"):
        if key in cols and all(v != v for v in cols[key]):  # all NaN: drop (e.g. --method dynamics)
            del cols[key]
    notes = []
    pairs = sorted({(float(a), float(b)) for a, b in zip(lam, lr)})
    for lam_v, lr_v in pairs[:3]:
        k_star = float(lg.crossing_steps(lr_v, lam_v))
        notes.append(
            f"λ = {lam_v:g}, η = {lr_v:g}: the dynamics bound is below composition for K > {k_star:.6g} "
            f"in Rényi terms at every order (crossing_steps); composition is smaller before"
        )
    if len(pairs) > 3:
        notes.append(f"... and {len(pairs) - 3} more (λ, η) pairs: see the crossing_steps column")
    if "lower" in methods and (np.any(lam > 1.0) or np.any(g["smoothness"] < 1.0)):
        notes.append(
            "lower: the squared loss (λ = β = 1) is outside a class with λ > 1 or β < 1; there the lower bound "
            "describes that loss only, not your class"
        )
    caption = (
        (f"{fixed}; " if fixed else "")
        + "noisy GD, last model released, replace-one; S_g = sensitivity of the gradient sum"
        + (" = 2L (from --lipschitz)" if from_lipschitz else "")
        + "; lower = a lower bound for ℓ = ‖θ−x‖²/2, not a guarantee"
    )
    headline = "epsilon" if delta is not None else "rdp"
    if methods == ("lower",):
        headline += "_lower"
    result = Result(cols, headline=headline, title="Langevin privacy dynamics", caption=caption, notes=notes)
    # --plot (seed 002's figure): against K if swept, else α or δ, else another swept parameter (the
    # other swept ones split the lines), the lower bound dashed, K* dotted; nothing swept: a dot chart
    y = "epsilon" if delta is not None else "rdp"
    axes = {"steps": params["steps"], "alpha": alpha or (), "delta": delta or (), **params}
    swept = [k for k, v in axes.items() if len(v) > 1]
    x = swept[0] if swept else "steps"
    if len(s) * len(methods) > 1:
        result.plot = PlotSpec(
            x=x,
            y=y if y in cols else f"{y}_lower",
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
    return result
