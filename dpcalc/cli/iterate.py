"""``dpcalc iterate``: privacy amplification by iteration, the intermediate iterates hidden (formulas.md §4)."""

from __future__ import annotations

import click

from dpcalc.cli.common import common_options, run
from dpcalc.cli.types import Grid
from dpcalc.result import PlotSpec, Result

METHODS = ("feldman", "asoodeh", "composition")
_SYMBOL = {"sigma": "σ", "lipschitz": "L", "lr": "η", "steps": "T", "diameter": "D", "initial_distance": "R"}
CONVERSIONS = ("optimal", "asoodeh", "balle", "mironov")
# --plot: words for titles and subtitles, axis labels with units
_WORD = {"delta": "δ", "epsilon": "ε", "alpha": "α", "rdp": "Rényi bound", **_SYMBOL}
_AXIS = {
    "steps": "steps T (= n, one pass)",
    "delta": "δ (probability)",
    "epsilon": "ε (nats)",
    "alpha": "Rényi order α",
    "rdp": "Rényi DP ε(α) (nats)",
}

MAN_EXAMPLES = [
    (
        "ε at δ = 1e-5 of 100 steps of projected noisy SGD, all three bounds:",
        "dpcalc iterate --sigma 5 --lipschitz 1 --lr 0.05 --steps 100 --delta 1e-5",
    ),
    ("δ at ε = 1 instead:", "dpcalc iterate --sigma 5 --lipschitz 1 --lr 0.05 --steps 100 --epsilon 1"),
    (
        "The Rényi bound of Feldman et al. at α = 2 (orders above α* get no number):",
        "dpcalc iterate --sigma 5 --lipschitz 1 --lr 0.05 --steps 100 --alpha 2,4,5 --method feldman",
    ),
    (
        "A curve over the number of steps, drawn to a file:",
        "dpcalc iterate --sigma 3 --lipschitz 1 --lr 0.1 --steps 10:100000:x10 --delta 1e-5 --plot iterate.png",
    ),
]

MAN_NOTES = """\
Setting: projected noisy SGD W_{t+1} = Π_K(W_t − η(∇ℓ(W_t; x_{t+1}) + Z)), Z ~ N(0, σ²I), one pass
over the data (record t is used at step t only, T = n), replace-one neighbours, ℓ(·, x) L-Lipschitz;
the output is the iterate at a step τ drawn uniformly from {1..T}, the other iterates stay hidden.

feldman: Feldman, Mironov, Talwar and Thakurta 2018 (convex, β-smooth loss, η <= 2/β; give
--smoothness to have it checked): (α, 4αL² log T/(Tσ²))-RDP, valid only for α <= α* =
(1 + √(1 + 2σ²/L²))/2; an order above α* gets no number and a note.  With --feldman-log seed
(default) this log T form, as usually quoted, is used where our derivation certifies it (T >= 37);
below that, 2(e−1)αL²H_T/(Tσ²) (T = 1 would otherwise give 0).  --feldman-log harmonic uses
1 + ln T.  For (ε, δ) the RDP bound is converted order by order (--conversion, default asoodeh, the
closed form) and optimised over α in (1, α*]; the alpha column is the best order.

asoodeh: Asoodeh, Diaz and Calmon (arXiv 2012.11035), E_γ contraction of the Gaussian kernel:
δ(ε) = θ_ε(2L/σ) / (T (1 − θ_ε((D + 2ηL)/(ησ)))) with θ_ε(r) the Gaussian mechanism's exact δ and
D = --diameter, the diameter of the compact convex set K (default 1).  It gives (ε, δ) only, no
Rényi bound; a δ at or above 1 is reported as 1 with a note (vacuous); ε for a δ by bisection.

composition: every iterate released: each record enters one Gaussian step, so the exact Gaussian
mechanism with r = 2L/σ (Balle and Wang 2018); it does not improve with T.

Every bound is valid for the randomly-stopped output (releasing all iterates only reveals more), so
the smallest of them applies.

cni (added with --initial-distance R): Feldman et al.'s contractive noisy iteration theorem for two
runs on the same data started R apart, (α, αR²/(2(ησ)²T))-RDP at every order, converted to (ε, δ)
like any Rényi curve; a swept R repeats the other methods' rows.

--plot FILE draws the bounds against T (or the swept target or parameter), one line per method;
with nothing swept, one dot per method."""


@click.command("iterate")
@click.option(
    "--sigma", type=Grid(lo=0), required=True, help="Noise multiplier σ > 0 (noise std ησ per step)."
)
@click.option("--lipschitz", type=Grid(lo=0), required=True, help="Lipschitz constant L > 0 of the loss.")
@click.option("--lr", type=Grid(lo=0), required=True, help="Step size η > 0.")
@click.option(
    "--steps",
    type=Grid(lo=1, lo_open=False, integer=True),
    required=True,
    help="Number of steps T >= 1 (= n).",
)
@click.option(
    "--diameter",
    type=Grid(lo=0),
    default="1",
    show_default=True,
    help="Diameter D of the compact convex parameter set K (asoodeh).",
)
@click.option("--delta", type=Grid(lo=0, hi=1, hi_open=True), help="Target δ in (0, 1): report ε.")
@click.option("--epsilon", type=Grid(lo=0, lo_open=False), help="Target ε >= 0: report δ.")
@click.option("--alpha", type=Grid(lo=1), help="Rényi order α > 1: report the Rényi bound.")
@click.option(
    "--method",
    type=click.Choice([*METHODS, "cni", "all"]),
    default="all",
    show_default=True,
    help="feldman (Feldman et al. 2018, RDP), asoodeh (Asoodeh et al., E_γ contraction), composition "
    "(every iterate released), cni (two starting points --initial-distance apart), or all (one row each).",
)
@click.option(
    "--initial-distance",
    type=Grid(lo=0),
    default=None,
    metavar="R",
    help="Adds the cni row: Feldman et al.'s contractive noisy iteration bound αR²/(2(ησ)²T) for two runs "
    "on the same data started R apart.",
)
@click.option(
    "--conversion",
    type=click.Choice(CONVERSIONS),
    default="asoodeh",
    show_default=True,
    help="RDP → (ε, δ) conversion for feldman and cni, per order (see 'dpcalc convert').",
)
@click.option(
    "--feldman-log",
    type=click.Choice(["seed", "harmonic"]),
    default="seed",
    show_default=True,
    help="seed: 4αL²·log T/(Tσ²), certified form for T < 37; harmonic: 4αL²(1 + ln T)/(Tσ²).",
)
@click.option(
    "--smoothness",
    type=Grid(lo=0),
    default=None,
    help="Smoothness β of the loss: checks feldman's condition η <= 2/β.",
)
@common_options
def command(
    sigma,
    lipschitz,
    lr,
    steps,
    diameter,
    delta,
    epsilon,
    alpha,
    method,
    initial_distance,
    conversion,
    feldman_log,
    smoothness,
    out,
):
    """Privacy of noisy SGD when only a randomly-stopped iterate is released.

    Projected noisy SGD, one pass over the data: give --sigma, --lipschitz, --lr, --steps and exactly
    one of --delta (to get ε), --epsilon (to get δ) or --alpha (to get the Rényi bound).  Rows compare
    Feldman et al.'s amplification by iteration, Asoodeh et al.'s contraction bound and the
    composition baseline that releases every iterate.  Every numeric option takes sweeps.
    """
    given = [name for name, v in (("delta", delta), ("epsilon", epsilon), ("alpha", alpha)) if v is not None]
    if len(given) != 1:
        raise click.UsageError(
            "give exactly one of --delta (to get ε), --epsilon (to get δ) or --alpha (RDP)"
        )
    if method == "cni" and initial_distance is None:
        raise click.UsageError("--method cni needs --initial-distance R")
    if method == "all":
        methods = (*METHODS, "cni") if initial_distance is not None else METHODS
    else:
        methods = (method,)
    query = given[0]
    target = {"delta": delta, "epsilon": epsilon, "alpha": alpha}[query]
    params = dict(sigma=sigma, lipschitz=lipschitz, lr=lr, steps=steps, diameter=diameter)
    if initial_distance is not None:
        params["initial_distance"] = initial_distance
    run(out, lambda: _compute(params, query, target, methods, conversion, feldman_log, smoothness))


def _compute(params, query, target, methods, conversion, feldman_log, smoothness) -> Result:
    import numpy as np

    from dpcalc.engine.grid import product
    from dpcalc.engine.hidden_state import iteration as it
    from dpcalc.errors import InputError

    g = product(**{k: np.asarray(v, float) for k, v in params.items()}, target=np.asarray(target, float))
    s, lip, lr, t, diam, x = (g[k] for k in ("sigma", "lipschitz", "lr", "steps", "diameter", "target"))
    dist = g.get("initial_distance")
    if smoothness is not None and "feldman" in methods:
        worst = float(np.max(lr)) * float(np.max(smoothness))
        if worst > 2.0:
            raise InputError(
                f"--lr: feldman needs the step size η <= 2/β (a contractive gradient step), "
                f"got η = {float(np.max(lr))!r} with β = {float(np.max(smoothness))!r}"
            )
    nan = np.full(x.shape, np.nan)
    answer = {"delta": "epsilon", "epsilon": "delta", "alpha": "rdp"}[query]
    # parameters given one value go to the caption; swept ones (and steps, the main axis) are columns
    shown = [k for k in params if k == "steps" or len(params[k]) > 1]
    fixed = ", ".join(f"{_SYMBOL[k]} = {params[k][0]:g}" for k in params if k not in shown)
    names = ["method", *shown]
    names += {"delta": ["delta", "epsilon", "alpha"], "epsilon": ["epsilon", "delta", "alpha"]}.get(
        query, ["alpha", "rdp"]
    )
    cols: dict[str, list] = {n: [] for n in [*names, "note"]}
    notes: list[str] = []
    for m in methods:
        value, order, note = nan, nan, np.full(x.shape, "", dtype=object)
        if m == "feldman":
            a_star = it.alpha_star(s, lip)
            if query == "alpha":
                value = it.rdp_feldman(x, s, lip, t, log_form=feldman_log)
                over = ~np.isfinite(value)
                value = np.where(over, np.nan, value)
                note = np.where(
                    over,
                    [f"no bound: α > α* = {a:.7g} (needs σ² >= 2α(α−1)L²)" for a in np.atleast_1d(a_star)],
                    note,
                )
            else:
                fn = it.eps_feldman if query == "delta" else it.delta_feldman
                value, order = fn(x, s, lip, t, conversion=conversion, log_form=feldman_log)
                bad = "no finite ε certified" if query == "delta" else "vacuous: the bound is >= 1"
                note = np.where((value >= 1) if query == "epsilon" else np.isinf(value), bad, note)
                note = np.where(
                    np.asarray(it.alpha_star_minus_one(s, lip)) <= 1e-9,
                    "no usable order: α* ≈ 1 (σ ≪ L)",
                    note,
                )
        elif m == "asoodeh":
            if query == "alpha":
                note[:] = "no Rényi bound: this bound is (ε, δ) only"
            elif query == "epsilon":
                value = it.delta_asoodeh(x, s, lip, lr, t, diam)
                vacuous = np.asarray(it.log_delta_asoodeh(x, s, lip, lr, t, diam)) >= 0
                note = np.where(vacuous, "vacuous: the bound is >= 1", note)
                if np.any(vacuous):
                    notes.append("asoodeh: δ >= 1 (vacuous) on some rows, reported as 1")
            else:
                value = it.eps_asoodeh(x, s, lip, lr, t, diam)
                note = np.where(np.isinf(value), "no finite ε certified", note)
        elif m == "cni":
            # noise std ησ per step, the shift R spread over the T steps (formulas.md §4.1)
            with np.errstate(over="ignore", under="ignore"):
                noise = lr * s
            # an underflowed ησ certifies nothing (inf); an overflowed one is replaced by a smaller std (safe)
            gone = noise == 0
            noise = np.where(gone, 1.0, np.minimum(noise, 1e308))
            if query == "alpha":
                value = np.where(gone, np.inf, it.rdp_contractive_iteration(x, dist, noise, t))
            else:
                from dpcalc.engine.hidden_state import langevin as lg

                coef = np.where(gone, np.inf, it.rdp_contractive_iteration(2.0, dist, noise, t) / 2.0)
                fn = lg.eps_linear_curve if query == "delta" else lg.delta_linear_curve
                value, order = fn(x, coef, conversion=conversion)
        else:
            if query == "alpha":
                value = it.rdp_composition(x, s, lip)
            elif query == "epsilon":
                value = it.delta_composition(x, s, lip)
            else:
                value = it.eps_composition(x, s, lip)
        value = np.broadcast_to(np.asarray(value, float), x.shape)
        order = np.broadcast_to(np.asarray(order, float), x.shape)
        cols["method"] += [m] * x.size
        for k in shown:
            cols[k] += [int(v) for v in g[k]] if k == "steps" else list(g[k])
        cols[query] += list(x)
        cols[answer] += list(value)
        if query != "alpha":
            cols["alpha"] += list(order)
        cols["note"] += [str(n) for n in np.broadcast_to(note, x.shape)]
    if not any(cols["note"]):
        del cols["note"]
    caption = (
        (f"{fixed}; " if fixed else "")
        + "randomly-stopped projected noisy SGD, one pass (T = n), replace-one; "
        "feldman: convex β-smooth loss, η <= 2/β"
        + (f", converted with {conversion}, alpha = best order" if query != "alpha" else "")
        + "; asoodeh: K of diameter D; composition: every iterate released"
        + ("; cni: same data, starts R apart" if "cni" in methods else "")
    )
    result = Result(
        cols, headline=answer, title="Privacy amplification by iteration", caption=caption, notes=notes
    )
    # --plot: against T if swept, else the target, else another swept parameter; the other swept ones
    # split the lines; nothing swept: the methods side by side (a dot chart)
    axes = {"steps": params["steps"], query: target, **params}
    swept = [k for k, v in axes.items() if len(v) > 1]
    x = swept[0] if swept else query
    if len(cols["method"]) > 1:
        result.plot = PlotSpec(
            x=x,
            y=answer,
            series="method",
            group=tuple(swept[1:]),
            logx=x in ("steps", "delta"),
            logy=answer != "epsilon",
            autolog=True,
            xlabel=_AXIS.get(x, ""),
            ylabel=_AXIS["rdp" if answer == "rdp" else answer],
            title=f"Hidden iterates: {_WORD[answer]} " + (f"by {_WORD[x]}" if swept else "by method"),
            subtitle=", ".join(f"{_WORD[k]} = {v[0]:g}" for k, v in axes.items() if len(v) == 1)
            + "; projected noisy SGD, one pass, replace-one",
        )
    return result
