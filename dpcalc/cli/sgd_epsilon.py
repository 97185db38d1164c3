"""``dpcalc sgd-epsilon``: DP-SGD accounting, and the inverse questions (formulas.md §3)."""

from __future__ import annotations

import click

from dpcalc.cli.common import common_options, eps_error_option, run, single
from dpcalc.cli.types import Grid
from dpcalc.errors import InputError
from dpcalc.result import PlotSpec, Result

#: The accountants offered (static so that --help needs no numpy); each is an entry of
#: ``dpcalc.engine.dpsgd.accounting.ACCOUNTANTS``.
ACCOUNTANTS = ("rdp", "pld", "abadi", "bassily")
CONVERSIONS = ("optimal", "balle", "mironov")
METHOD_LABEL = {"rdp": "rdp", "pld": "pld", "abadi": "abadi-asymptotic", "bassily": "bassily-reference"}
#: Relative tolerance of the noise calibration (the σ reported is within this factor of the smallest).
SIGMA_RTOL = 1e-4

MAN_EXAMPLES = [
    (
        "ε of 60 epochs of DP-SGD on 60000 examples, batches of 256, noise multiplier 1.1, δ = 1e-5:",
        "dpcalc sgd-epsilon --noise-multiplier 1.1 --batch-size 256 --dataset-size 60000 --epochs 60 --delta 1e-5",
    ),
    (
        "The per-epoch curve, as CSV:",
        "dpcalc sgd-epsilon --sigma 1.1 --batch-size 256 --dataset-size 60000 --epochs 1:60:1 --delta 1e-5 -f csv",
    ),
    (
        "Every accountant side by side (exact RDP, the Abadi et al. closed form):",
        "dpcalc sgd-epsilon --sigma 4 --sample-rate 0.04 --steps 1000 --delta 1e-5 --accountant all",
    ),
    (
        "The smallest noise multiplier for ε <= 3:",
        "dpcalc sgd-epsilon --target-epsilon 3 --sample-rate 0.004267 --steps 14063 --delta 1e-5",
    ),
    (
        "The largest number of steps within ε <= 2:",
        "dpcalc sgd-epsilon --target-epsilon 2 --sigma 4 --sample-rate 0.04 --delta 1e-5",
    ),
    (
        "Fixed-size batches (sampling without replacement), replace-one neighbours:",
        "dpcalc sgd-epsilon --sigma 2 --batch-size 512 --dataset-size 50000 --steps 4900 --delta 1e-5 "
        "--sampling fixed-size --neighbors replace-one",
    ),
    (
        "Tight accounting with a certified bracket, beside RDP:",
        "dpcalc sgd-epsilon --sigma 1.1 --sample-rate 0.004267 --steps 14063 --delta 1e-5 --accountant all",
    ),
    (
        "ε by steps for every accountant, drawn to a file:",
        "dpcalc sgd-epsilon --sigma 1.1 --sample-rate 0.004267 --steps 1000:14000:1000 --delta 1e-5 "
        "--accountant all --plot sgd.png",
    ),
]

MAN_NOTES = """\
rdp: the exact Rényi DP of the Poisson-subsampled Gaussian (Mironov, Talwar and Zhang 2019), at
integer orders by the binomial expansion and at fractional orders by the signed two-sided series or,
where that loses digits, a quadrature with a positive integrand (dp_accounting's absolute-value
series over-reports by up to 27%), times the steps, converted to (ε, δ) by --conversion and
minimised over 225 orders from 1.01 to 10^4 (the best order is the alpha column).  optimal: the
exact per-order conversion of Asoodeh et al. (on the orders around the best order of its closed
form); balle: Balle et al. 2020 / Canonne et al. 2020; mironov: Mironov 2017.

pld: privacy loss distributions of the Poisson-subsampled Gaussian (both directions of the
add/remove pair, the worse reported), composed by FFT: epsilon is the estimate and
[epsilon_lower, epsilon_upper] a certified bracket (pessimistic and optimistic discretisation,
truncation and aliasing counted in); budget checks and -q use the upper end.  --eps-error sets the
bracket width (default 0.5% of ε).  It answers the forward question only.

Sampling and neighbours: --sampling fixed-size uses the Wang, Balle and Kasiviswanathan 2019 bound
for sampling without replacement, an upper bound, under replace-one neighbours.  The noise
multiplier is the noise standard deviation over the clipping norm C: the sensitivity of the clipped
sum is C under add/remove and 2C under replace-one, so replace-one analyses σ/2.  Poisson sampling
with replace-one, and fixed-size batches with add/remove, are refused: no theorem here covers them.

abadi: the moments-accountant closed form ε = ρT + sqrt(4ρT log(1/δ)), ρ = q²/((1−q)σ²) (Abadi et
al. 2016, Lemma 3's leading term); asymptotic, and a bound only under σ >= 1, q < 1/(16σ) and
α* − 1 <= σ² log(1/(qσ)): the valid column says whether they hold.

bassily: the noise formula of Bassily, Smith and Thakurta 2014 as in Bellet's 2022 slides, solved
for ε; a reference, valid for ε <= 1.

--epochs E means steps = ceil(E / sample rate).  --target-epsilon solves for the option left out:
the smallest noise multiplier (within a factor 1.0001), or the largest number of steps; every
answer is one at which ε was computed and found within the target.

--plot FILE draws the headline against the first swept option, one line per accountant (the PLD
bracket shaded; bounds whose conditions fail hollow and dotted)."""


@click.command("sgd-epsilon")
@click.option(
    "--noise-multiplier",
    "--sigma",
    "sigma",
    type=Grid(lo=0),
    default=None,
    help="Noise standard deviation / clipping norm (> 0). Leave out with --target-epsilon to solve for it.",
)
@click.option("--sample-rate", type=Grid(lo=0, hi=1), default=None, help="Sampling probability q in (0, 1].")
@click.option(
    "--batch-size", type=Grid(lo=1, lo_open=False, integer=True), default=None, help="Batch size B (q = B/N)."
)
@click.option(
    "--dataset-size",
    type=Grid(lo=1, lo_open=False, integer=True),
    default=None,
    help="Dataset size N (with --batch-size; also checks δ < 1/N).",
)
@click.option(
    "--steps", type=Grid(lo=1, lo_open=False, integer=True), default=None, help="Number of steps T."
)
@click.option("--epochs", type=Grid(lo=0), default=None, help="Epochs E: steps = ceil(E / sample rate).")
@click.option("--delta", type=Grid(lo=0, hi=1, hi_open=True), required=True, help="Target δ in (0, 1).")
@click.option(
    "--accountant",
    type=click.Choice([*ACCOUNTANTS, "all"]),
    default="rdp",
    show_default=True,
    help="rdp (exact RDP), pld (privacy loss distributions: a certified [lower, upper] bracket), "
    "abadi (closed form, asymptotic), bassily (reference), or all that apply.",
)
@eps_error_option
@click.option(
    "--conversion",
    type=click.Choice(CONVERSIONS),
    default="optimal",
    show_default=True,
    help="RDP → (ε, δ) conversion of the rdp accountant.",
)
@click.option(
    "--sampling",
    type=click.Choice(["poisson", "fixed-size"]),
    default="poisson",
    show_default=True,
    help="poisson (each example with probability q) or fixed-size (a uniformly random batch of B).",
)
@click.option(
    "--neighbors",
    type=click.Choice(["add-remove", "replace-one"]),
    default=None,
    help="Neighbouring relation [default: add-remove for poisson, replace-one for fixed-size].",
)
@click.option(
    "--target-epsilon",
    type=Grid(lo=0),
    default=None,
    help="Solve for the option left out (noise multiplier, or steps/epochs) so that ε <= this.",
)
@common_options
def command(
    sigma,
    sample_rate,
    batch_size,
    dataset_size,
    steps,
    epochs,
    delta,
    accountant,
    conversion,
    sampling,
    neighbors,
    target_epsilon,
    eps_error,
    out,
):
    """DP-SGD accounting: ε of a training run, or the noise / steps for a target ε.

    Give the noise multiplier, the sample rate (--sample-rate, or --batch-size with --dataset-size),
    the length (--steps, or --epochs) and --delta.  With --target-epsilon, leave out the noise
    multiplier (to get the smallest one) or the length (to get the largest number of steps).
    Every numeric option takes sweeps; the output has one row per combination and accountant.
    """
    if neighbors is None:
        neighbors = "replace-one" if sampling == "fixed-size" else "add-remove"
    if sample_rate is not None and batch_size is not None:
        raise click.UsageError("give either --sample-rate or --batch-size with --dataset-size, not both")
    if sample_rate is None and (batch_size is None or dataset_size is None):
        raise click.UsageError("give --sample-rate, or --batch-size with --dataset-size")
    if steps is not None and epochs is not None:
        raise click.UsageError("give either --steps or --epochs, not both")
    solve = None
    if target_epsilon is None:
        if sigma is None:
            raise click.UsageError(
                "missing option --noise-multiplier (or give --target-epsilon to solve for it)"
            )
        if steps is None and epochs is None:
            raise click.UsageError("give --steps or --epochs (or --target-epsilon to solve for the steps)")
    else:
        if sigma is None and steps is None and epochs is None:
            raise click.UsageError(
                "with --target-epsilon, leave out one of --noise-multiplier or --steps/--epochs"
            )
        if sigma is not None and (steps is not None or epochs is not None):
            raise click.UsageError(
                "with --target-epsilon, leave out the option to solve for: --noise-multiplier, or --steps/--epochs"
            )
        solve = "sigma" if sigma is None else "steps"
    if batch_size is not None:
        bad = [(b, n) for b in batch_size for n in dataset_size if b > n]
        if bad:
            raise click.BadParameter(
                f"{bad[0][1]} is smaller than the batch size {bad[0][0]}", param_hint="'--dataset-size'"
            )
    if accountant == "all":
        names = [a for a in ACCOUNTANTS if _applies(a, sampling, neighbors, dataset_size, solve)]
    else:
        names = [accountant]
    if accountant == "pld" and solve is not None:
        raise click.UsageError(
            "--accountant pld answers ε for given noise and steps; for --target-epsilon use rdp (the default)"
        )
    if accountant == "pld" and (sampling, neighbors) != ("poisson", "add-remove"):
        raise click.UsageError(
            "--accountant pld: the privacy loss distribution here is for Poisson sampling with add/remove "
            "neighbours; use --accountant rdp for fixed-size batches"
        )
    if eps_error is not None and "pld" not in names:
        raise click.UsageError("--eps-error applies to --accountant pld (or all)")
    setting = dict(
        sampling=sampling,
        neighbors=neighbors,
        conversion=conversion,
        sample_rate=sample_rate,
        batch_size=batch_size,
        dataset_size=dataset_size,
        sigma=sigma,
        steps=steps,
        epochs=epochs,
        delta=delta,
        target=target_epsilon,
        eps_error=None if eps_error is None else single(eps_error, "--eps-error"),
    )
    run(out, lambda: _compute_light(names, solve, setting))


def _compute_light(names, solve, setting) -> Result:
    from dpcalc.engine.dpsgd import sgm

    with sgm.light_start():  # a single query need not import scipy
        return _compute(names, solve, setting)


def _applies(name, sampling, neighbors, dataset_size, solve=None) -> bool:
    if name == "pld":
        return (sampling, neighbors) == ("poisson", "add-remove") and solve is None
    if name == "abadi":
        return (sampling, neighbors) == ("poisson", "add-remove")
    if name == "bassily":
        return (sampling, neighbors) == ("fixed-size", "replace-one") and dataset_size is not None
    return True


def _grid(s):
    """The cartesian product of the inputs, as flat arrays (q from --sample-rate or B/N)."""
    import numpy as np

    from dpcalc.engine.grid import product

    axes = {}
    if s["sample_rate"] is not None:
        axes["q"] = np.asarray(s["sample_rate"], float)
        if s["dataset_size"] is not None:
            axes["n"] = np.asarray(s["dataset_size"], float)
    else:
        axes["b"] = np.asarray(s["batch_size"], float)
        axes["n"] = np.asarray(s["dataset_size"], float)
    if s["sigma"] is not None:
        axes["sigma"] = np.asarray(s["sigma"], float)
    if s["steps"] is not None:
        axes["steps"] = np.asarray(s["steps"], float)
    if s["epochs"] is not None:
        axes["epochs"] = np.asarray(s["epochs"], float)
    axes["delta"] = np.asarray(s["delta"], float)
    if s["target"] is not None:
        axes["target"] = np.asarray(s["target"], float)
    g = product(**axes)
    if "q" not in g:
        g["q"] = g["b"] / g["n"]
    if "epochs" in g:
        # steps = ceil(E/q) = ceil(E·N/B) (exact for whole numbers below 2^53)
        ratio = g["epochs"] * g["n"] / g["b"] if "b" in g else g["epochs"] / g["q"]
        g["steps"] = np.maximum(np.ceil(ratio), 1.0)
    return g


def _compute(names, solve, s) -> Result:
    import warnings

    import numpy as np

    from dpcalc.engine.dpsgd import accounting as sgd
    from dpcalc.engine.dpsgd import noise_calibration, step_budget
    from dpcalc.errors import DpcalcWarning

    sgd.check_setting(s["sampling"], s["neighbors"])
    g = _grid(s)
    if "n" in g and np.any(g["delta"] >= 1.0 / g["n"]):
        warnings.warn(
            "--delta: δ >= 1/dataset size: a mechanism that publishes one random example is then (0, δ)-DP; "
            "choose δ well below 1/N",
            DpcalcWarning,
            stacklevel=2,
        )
    kw = dict(sampling=s["sampling"], neighbors=s["neighbors"], conversion=s["conversion"])
    if "n" in g:
        kw["dataset_size"] = g["n"]
    elif "bassily" in names:
        raise InputError("--dataset-size: needed by the bassily reference (its formula involves n)")
    rows = []
    for name in names:
        cols = {}
        if name == "pld":
            from dpcalc.engine.pld.accountant import sgd_epsilon_pld

            b = sgd_epsilon_pld(g["q"], g["sigma"], g["steps"], g["delta"], eps_error=s["eps_error"])
            lower, est, upper = (np.asarray(x, float).reshape(-1) for x in b)
            nan = np.full(est.shape, np.nan)
            e = sgd.Epsilon(est, nan, np.zeros(est.shape, bool), np.ones(est.shape, bool))
            cols.update(noise_multiplier=g["sigma"], steps=g["steps"], eps=e, lower=lower, upper=upper)
        elif solve is None:
            e = sgd.epsilon(name, g["q"], g["sigma"], g["steps"], g["delta"], **kw)
            cols.update(noise_multiplier=g["sigma"], steps=g["steps"], eps=e)
        elif solve == "sigma":
            sig, e = noise_calibration.calibrate_noise(
                g["q"], g["steps"], g["delta"], g["target"], accountant=name, rtol=SIGMA_RTOL, **kw
            )
            cols.update(noise_multiplier=sig, steps=g["steps"], eps=e)
        else:
            t, _ = step_budget.max_steps(g["q"], g["sigma"], g["delta"], g["target"], accountant=name, **kw)
            # report ε (with its order and flags) at the answer; 0 steps: nothing fits
            e = sgd.epsilon(name, g["q"], g["sigma"], np.maximum(t, 1.0), g["delta"], **kw)
            e = e._replace(
                epsilon=np.where(t >= 1, e.epsilon, np.nan), alpha=np.where(t >= 1, e.alpha, np.nan)
            )
            cols.update(noise_multiplier=g["sigma"], steps=t, eps=e)
        rows.append((name, cols))
    return _result(names, solve, s, g, rows)


def _result(names, solve, s, g, rows) -> Result:
    import numpy as np

    n = g["q"].size
    out: dict[str, list] = {
        k: []
        for k in (
            "method",
            "accountant",
            "conversion",
            "sampling",
            "neighbors",
            "sample_rate",
            "batch_size",
            "dataset_size",
            "noise_multiplier",
            "steps",
            "epochs",
            "delta",
            "target_epsilon",
            "epsilon_lower",
            "epsilon",
            "epsilon_upper",
            "alpha",
            "valid",
        )
    }
    bracketed = any("lower" in cols for _, cols in rows)
    for name, cols in rows:
        e = cols["eps"]
        steps = np.asarray(cols["steps"], float).reshape(-1)
        out["method"] += [METHOD_LABEL[name]] * n
        out["accountant"] += [name] * n
        out["conversion"] += [
            s["conversion"] if name == "rdp" else ("classic" if name == "abadi" else "")
        ] * n
        out["sampling"] += [s["sampling"]] * n
        out["neighbors"] += [s["neighbors"]] * n
        out["sample_rate"] += g["q"].tolist()
        out["batch_size"] += g["b"].astype(int).tolist() if "b" in g else [None] * n
        out["dataset_size"] += g["n"].astype(int).tolist() if "n" in g else [None] * n
        out["noise_multiplier"] += np.asarray(cols["noise_multiplier"], float).reshape(-1).tolist()
        out["steps"] += [int(t) for t in steps]
        if "epochs" in g:
            out["epochs"] += g["epochs"].tolist()
        elif solve == "steps":
            out["epochs"] += _whole_epochs(steps, g).tolist()
        out["delta"] += g["delta"].tolist()
        if solve is not None:
            out["target_epsilon"] += g["target"].tolist()
        out["epsilon"] += np.asarray(e.epsilon, float).reshape(-1).tolist()
        if bracketed:  # other accountants' ε is itself the upper end (no lower end)
            out["epsilon_lower"] += cols["lower"].tolist() if "lower" in cols else [None] * n
            out["epsilon_upper"] += (
                (cols["upper"] if "upper" in cols else np.asarray(e.epsilon, float)).reshape(-1).tolist()
            )
        alpha = np.asarray(e.alpha, float).reshape(-1)
        out["alpha"] += [None if np.isnan(a) else float(a) for a in alpha]
        out["valid"] += [bool(v) for v in np.asarray(e.valid).reshape(-1)]
    for k in ("batch_size", "dataset_size", "epochs", "target_epsilon", "epsilon_lower", "epsilon_upper"):
        if not out[k] or all(v is None for v in out[k]):
            del out[k]
    if set(names) <= {"rdp", "pld"}:
        del out["valid"]
    headline = {"sigma": "noise_multiplier", "steps": "steps"}.get(solve, "epsilon")
    if bracketed:
        headline = "epsilon_upper"  # -q prints a guarantee, never the PLD estimate
    relation = "sensitivity C" if s["neighbors"] == "add-remove" else "sensitivity 2C: the theorem sees σ/2"
    caption = f"sampling: {s['sampling']}; neighbours: {s['neighbors']} ({relation})"
    if "rdp" in names:
        caption += f"; conversion: {s['conversion']}"
    if bracketed:
        caption += "; pld: epsilon is the estimate, [epsilon_lower, epsilon_upper] the certified bracket"
    if "epochs" in g:
        caption += "; steps = ceil(epochs / sample_rate)"
    if solve == "sigma":
        caption += f"; noise_multiplier: the smallest (within a factor {1 + SIGMA_RTOL:g}) with ε <= target"
    elif solve == "steps":
        caption += "; steps: the largest with ε <= target (epochs: the whole epochs within them)"
    plot = _plot_spec(s, out, "epsilon" if headline == "epsilon_upper" else headline)
    return Result(out, headline=headline, title="DP-SGD accounting", caption=caption, plot=plot)


_PLOT_SYMBOL = {
    "epochs": "epochs",
    "steps": "T",
    "target_epsilon": "target ε",
    "noise_multiplier": "σ",
    "sample_rate": "q",
    "batch_size": "B",
    "dataset_size": "N",
    "delta": "δ",
}


def _plot_spec(s, out, headline):
    """--plot: the headline by the first swept input, one line per accountant (a dot per accountant
    when nothing is swept); rows whose ``valid`` is false are drawn as "not a bound"."""
    inputs = {
        "epochs": s["epochs"],
        "steps": s["steps"],
        "target_epsilon": s["target"],
        "noise_multiplier": s["sigma"],
        "sample_rate": s["sample_rate"],
        "batch_size": s["batch_size"],
        "dataset_size": s["dataset_size"],
        "delta": s["delta"],
    }
    inputs = {k: v for k, v in inputs.items() if v is not None and k != headline}
    swept = [k for k, v in inputs.items() if len(v) > 1 and k in out]
    if len(out["method"]) < 2:
        return None
    x = swept[0] if swept else "delta"
    fixed = ", ".join(f"{_PLOT_SYMBOL[k]} = {v[0]:g}" for k, v in inputs.items() if len(v) == 1)
    what = {
        "epsilon": "ε",
        "noise_multiplier": "smallest noise multiplier",
        "steps": "largest number of steps",
    }
    return PlotSpec(
        x=x,
        y=headline,
        series="method",
        group=tuple(swept[1:]),
        valid="valid",
        band=("epsilon_lower", "epsilon_upper") if "epsilon_lower" in out else None,
        logx=x == "delta",
        autolog=True,
        xlabel={"steps": "steps T", "epochs": "epochs", "target_epsilon": "target ε (nats)"}.get(x, ""),
        ylabel={
            "epsilon": "ε (nats)",
            "noise_multiplier": "noise multiplier σ (noise std / clipping norm)",
            "steps": "largest number of steps T",
        }[headline],
        title=f"DP-SGD: {what[headline]} " + (f"by {_PLOT_SYMBOL[x]}" if swept else "by accountant"),
        subtitle=(f"{fixed}; " if fixed else "")
        + f"sampling: {s['sampling']}, neighbours: {s['neighbors']}"
        + (f", conversion: {s['conversion']}" if "rdp" in out["accountant"] else ""),
    )


def _whole_epochs(steps, g):
    """The whole epochs E with ceil(E/q) <= steps (checked with the same arithmetic as --epochs)."""
    import numpy as np

    e = np.floor(steps * g["q"])
    ratio = e * g["n"] / g["b"] if "b" in g else e / g["q"]
    return np.where(np.ceil(ratio) > steps, e - 1, e)
