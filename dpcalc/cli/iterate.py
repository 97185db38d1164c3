"""``dpcalc iterate``: the options of privacy amplification by iteration (docs/math.md §4); the work is
:func:`dpcalc.commands.iterate.command.iterate`."""

from __future__ import annotations

import click

from dpcalc.cli.common import common_options, run
from dpcalc.cli.rdp_curve import curve_options, wanted
from dpcalc.cli.types import Grid
from dpcalc.cli.work_options import work_options
from dpcalc.commands.choices import CONVERSIONS, ITERATE_METHODS

#: Why --delta must be > 0 (docs/math.md §2.7).
_GAUSSIAN_NOISE = "the noise is Gaussian, whose privacy loss is unbounded: no finite ε holds at δ = 0"

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
        "The Rényi bound at α = 2 and ε at δ = 1e-5 in the same rows:",
        "dpcalc iterate --sigma 5 --lipschitz 1 --lr 0.05 --steps 100 --alpha 2 --delta 1e-5",
    ),
    (
        "A curve over the number of steps, drawn to a file:",
        "dpcalc iterate --sigma 3 --lipschitz 1 --lr 0.1 --steps 10:100000:x10 --delta 1e-5 --plot iterate.png",
    ),
    (
        "The Rényi curves of feldman and composition at a few orders:",
        "dpcalc iterate --sigma 5 --lipschitz 1 --lr 0.05 --steps 100 --rdp-curve --alphas 1.5,2,3,4,5",
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
closed form) and optimised over α in (1, α*]; the alpha column is the best order.  --alpha beside
--delta or --epsilon (the rule langevin follows too) gives both in one row: alpha and rdp the order
asked and its Rényi bound, best_alpha the order of the (ε, δ) answer.

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
with nothing swept, one dot per method.

--rdp-curve prints the Rényi bound of feldman (inf above α*), composition and cni at each order of
--alphas (default: 225 orders from 1.01 to 10^4), one curve per method and configuration, in the
columns of RDP CURVE COLUMNS; asoodeh has no Rényi form, --alpha is refused (the orders are
--alphas) and --diameter, --delta, --epsilon and --conversion do not enter a curve.  feldman and cni
are converted over continuous α, so dpcalc convert --curve of a curve on a grid of orders gives their
ε or above (to a few ulps at the best order, with convert --method the same as --conversion)."""


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
@click.option(
    "--delta",
    type=Grid(lo=0, hi=1, hi_open=True, why=_GAUSSIAN_NOISE),
    help="Target δ in (0, 1): report ε (not 0: the noise is Gaussian, so no finite ε holds at δ = 0).",
)
@click.option("--epsilon", type=Grid(lo=0, lo_open=False), help="Target ε >= 0: report δ.")
@click.option(
    "--alpha",
    type=Grid(lo=1),
    help="Rényi order α > 1: report the Rényi bound (beside --delta or --epsilon: both, best_alpha the order of "
    "the (ε, δ) answer).",
)
@click.option(
    "--method",
    type=click.Choice([*ITERATE_METHODS, "cni", "all"]),
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
@curve_options
@work_options
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
    rdp_curve=False,
    alphas=None,
):
    """Privacy of noisy SGD when only a randomly-stopped iterate is released.

    Projected noisy SGD, one pass over the data: give --sigma, --lipschitz, --lr, --steps and one of
    --delta (to get ε) or --epsilon (to get δ), --alpha (to get the Rényi bound), or --alpha with one of
    them (each row then reports both, as langevin does).  Rows compare
    Feldman et al.'s amplification by iteration, Asoodeh et al.'s contraction bound and the
    composition baseline that releases every iterate.  Every numeric option takes sweeps.
    With --rdp-curve, the Rényi curve of each bound that has one instead (feldman, composition, cni).
    """
    curve = wanted(rdp_curve, alphas, out)
    # lazy: the command's work (numpy, the engine) loads when it runs, never for --help or completion
    from dpcalc.commands.iterate import command as cmd

    params = cmd.IterateParams(
        sigma=sigma,
        lipschitz=lipschitz,
        lr=lr,
        steps=steps,
        diameter=diameter,
        delta=delta,
        epsilon=epsilon,
        alpha=alpha,
        method=method,
        initial_distance=initial_distance,
        conversion=conversion,
        feldman_log=feldman_log,
        smoothness=smoothness,
    )
    if curve:
        run(out, lambda: cmd.iterate_curve(params, alphas, stream=True))
        return
    # the rows stream as they are computed; with a budget check the result is judged whole before any row
    # is written (a budget no row can judge is refused with nothing printed)
    budget = out.max_epsilon is not None or out.max_delta is not None
    run(out, lambda: cmd.iterate(params) if budget else cmd.iterate_stream(params))
