"""``dpcalc langevin``: the options of the privacy dynamics of noisy gradient descent (docs/math.md §5);
the work is :func:`dpcalc.commands.langevin.command.langevin`."""

from __future__ import annotations

import click

from dpcalc.cli.common import common_options, run
from dpcalc.cli.rdp_curve import curve_options, wanted
from dpcalc.cli.types import Grid
from dpcalc.cli.work_options import work_options
from dpcalc.commands.choices import CONVERSIONS, LANGEVIN_METHODS

#: Why --delta must be > 0 (docs/math.md §2.7).
_GAUSSIAN_NOISE = "the noise is Gaussian, whose privacy loss is unbounded: no finite ε holds at δ = 0"

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
    (
        "The curve of the dynamics bound, to convert with 'dpcalc convert --curve -':",
        "dpcalc langevin --sigma 0.02 --sensitivity 4 --lr 0.02 --strong-convexity 1 --smoothness 1 "
        "--dataset-size 5000 --steps 1000 --method dynamics --rdp-curve -f csv",
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
swept α or δ; with nothing swept, one dot per method.

--rdp-curve prints the bounds at each order of --alphas (default: 225 orders from 1.01 to 10^4), one
curve per method and configuration, in the columns of RDP CURVE COLUMNS (the lower bound in
rdp_lower); --alpha is refused (the orders are --alphas), --delta and --conversion do not enter a
curve.  The dynamics bound is converted over continuous α, so dpcalc convert --curve of its curve on
a grid of orders gives its ε or above (to a few ulps at best_alpha, with convert --method the same as
--conversion)."""


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
    "--delta",
    type=Grid(lo=0, hi=1, hi_open=True, why=_GAUSSIAN_NOISE),
    default=None,
    help="Target δ in (0, 1): report ε (not 0: the noise is Gaussian, so no finite ε holds at δ = 0).",
)
@click.option(
    "--method",
    type=click.Choice([*LANGEVIN_METHODS, "all"]),
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
@curve_options
@work_options
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
    rdp_curve=False,
    alphas=None,
):
    """Privacy of noisy gradient descent that releases only its last model.

    Chourasia et al.'s privacy dynamics for strongly convex, smooth losses: the Rényi bound converges
    as the number of steps grows, while composition grows linearly.  Give --alpha (Rényi bounds) and/or
    --delta (ε).  S_g is the sensitivity of the SUM of gradients under replace-one; --lipschitz L
    means S_g = 2L.  One row per step count, order and bound; every numeric option takes sweeps.
    With --rdp-curve, the Rényi curve of each bound instead (rows over the orders of --alphas).
    """
    curve = wanted(rdp_curve, alphas, out)
    # lazy: the command's work (numpy, the engine) loads when it runs, never for --help or completion
    from dpcalc.commands.langevin import command as cmd

    params = cmd.LangevinParams(
        sigma=sigma,
        lr=lr,
        strong_convexity=strong_convexity,
        smoothness=smoothness,
        dataset_size=dataset_size,
        steps=steps,
        sensitivity=sensitivity,
        lipschitz=lipschitz,
        alpha=alpha,
        delta=delta,
        method=method,
        conversion=conversion,
    )
    if curve:
        run(out, lambda: cmd.langevin_curve(params, alphas, stream=True))
        return
    # the rows stream as they are computed; with a budget check the result is judged whole before any row
    # is written (a budget no row can judge is refused with nothing printed)
    budget = out.max_epsilon is not None or out.max_delta is not None
    run(out, lambda: cmd.langevin(params) if budget else cmd.langevin_stream(params))
