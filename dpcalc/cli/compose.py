"""``dpcalc compose``: the command line (click options); the computation is :mod:`dpcalc.commands.compose.command`."""

from __future__ import annotations

import click

from dpcalc.cli._kinds import ALIASES
from dpcalc.cli.common import common_options, eps_error_option, run, single
from dpcalc.cli.rdp_curve import curve_options, wanted
from dpcalc.cli.spec_complete import complete_mechanism
from dpcalc.cli.tradeoff import refuse_with, risk_options, risk_question, tradeoff_options, with_max_tpr
from dpcalc.cli.tuning import tuning_option
from dpcalc.cli.types import Grid
from dpcalc.cli.work_options import work_options
from dpcalc.commands.choices import COMPOSE_METHODS, GROUP_SIZE_MAX

MAN_EXAMPLES = [
    (
        "ε at δ = 1e-5 of 100 Gaussian releases with σ = 10 (the default method 'best' picks the tightest bound):",
        "dpcalc compose gaussian:sigma=10,count=100 --delta 1e-5",
    ),
    (
        "1000 Laplace releases, each on a Poisson subsample of 1% of the records:",
        "dpcalc compose laplace:scale=1,q=0.01,count=1000 --delta 1e-6",
    ),
    (
        "Every method side by side; rows that do not apply say why:",
        "dpcalc compose laplace:scale=10,count=100 --delta 1e-5 --method all",
    ),
    (
        "A heterogeneous mix under Rényi DP:",
        "dpcalc compose gaussian:sigma=4,count=10 laplace:scale=20,count=5 "
        "subsampled-gaussian:q=0.01,sigma=1,count=1000 --delta 1e-6 --method rdp",
    ),
    ("δ at ε = 1, 2 and 4 instead:", "dpcalc compose dp:epsilon=0.1,count=50 --epsilon 1,2,4"),
    (
        "Specs from a file, one per line (identical ones are merged):",
        "dpcalc compose @releases.txt --delta 1e-6",
    ),
    (
        "Calibrate σ: the smallest σ that makes 10 Gaussian releases (1, 1e-5)-DP (leave sigma out):",
        "dpcalc compose gaussian:count=10 --epsilon 1 --delta 1e-5",
    ),
    (
        "Calibrate a Laplace scale: the smallest b that makes 10 Laplace releases (1, 1e-5)-DP (leave scale out):",
        "dpcalc compose laplace:count=10 --epsilon 1 --delta 1e-5",
    ),
    (
        "100 exponential mechanisms (or report-noisy-max) of ε = 0.1, as bounded-range mechanisms:",
        "dpcalc compose exponential:epsilon=0.1,count=100 --delta 1e-6",
    ),
    (
        "The noise of the DP-SGD part of a release plan, with the tight accountant (leave sigma out):",
        "dpcalc compose subsampled-gaussian:q=0.01,count=1000 laplace:scale=10 --epsilon 2 --delta 1e-5 "
        "--method pld",
    ),
    (
        "Tight numerical accounting with a certified bracket (privacy loss distributions):",
        "dpcalc compose laplace:scale=10,count=100 subsampled-gaussian:q=0.01,sigma=1,count=1000 "
        "--delta 1e-5 --method pld",
    ),
    (
        "ε by δ for every theorem that applies, drawn to a file:",
        "dpcalc compose laplace:scale=10,count=100 --delta 1e-10:1e-2:x10 --method all --plot compose.png",
    ),
    (
        "What ε means for an attacker: the largest true-positive rate of any membership test at a "
        "false-positive rate of 1e-3 (exact: μ-GDP):",
        "dpcalc compose gaussian:sigma=10,count=100 --fpr 1e-3",
    ),
    (
        "The summed Rényi curve of a mix at a few orders:",
        "dpcalc compose gaussian:sigma=4,count=10 laplace:scale=20,count=5 --rdp-curve --alphas 2,4,8,16,32",
    ),
    (
        "Hyperparameter tuning: the best of K runs of the composition, K geometric with mean 10:",
        "dpcalc compose gaussian:sigma=10,count=100 --delta 1e-5 --tuning-runs geometric:mean=10",
    ),
]

MAN_NOTES = """\
Methods:

exact — the exact privacy profile of the Gaussian mechanism (Balle and Wang 2018, Thm 8); k
Gaussians of σ are one Gaussian of σ/√k, so it applies to compositions of plain gaussian specs only.

pld — privacy loss distributions composed numerically (Koskela et al. 2020; Gopi, Lee and Wutschitz
2021; Doroshenko et al. 2022): a pessimistic discretisation gives a certified upper end, an optimistic
one a lower end, with truncation and aliasing counted in; the row reports epsilon (the certified upper
end, like every other epsilon), epsilon_lower and epsilon_estimate (a value inside the bracket, not a
bound), and budget checks, best and -q read epsilon.  --eps-error sets the
bracket width (default 0.5% of ε, however small ε is; where that grid would pass the memory cap the
bracket is coarsened to fit, with a warning); an explicit --eps-error past the cap is refused with
the --eps-error that fits.  Applies to gaussian, discrete-gaussian, laplace, discrete-laplace,
randomized-response, exponential, dp, Poisson subsampled-gaussian and mixture-gaussian (and
random-allocation, below), and to the Poisson-subsampled (q=) specs of those with a symmetric pair.

Merging and limits: identical specs are merged (counts summed) and, for pld, all plain gaussian specs
become one Gaussian of r = sqrt(Σ count·(Δ/σ)²) (exact: Dong, Roth and Su 2019), rounded to the safe side;
where exact applies, best runs exact alone.  Checked up front: pld takes at most 16 distinct mechanisms
after merging, within its memory cap and work caps (grid points, quadrature panels, transforms); rdp at
most 256 distinct subsampled specs; a calibration by search ε >= 0.001.  A method past a limit says so in
note (--method pld alone: an error, exit 2).  Tables of any size are computed (at most 10^8 rows): any
number of --delta/--epsilon values, --fpr rates and (ε, δ) pairs to calibrate.  Their work is estimated
up front (said on stderr above 3 s; --max-seconds refuses it) and spread over every core (--jobs,
--scheduler) in pieces fixed by the work, so the rows are the same however they run.

rdp — Rényi-DP curves (Mironov 2017) summed over 225 orders from 1.01 to 1e4 and converted by the
optimal conversion of Asoodeh et al.; applies to every kind except dp specs with δ > 0.

optimal — the exact homogeneous composition of Kairouz, Oh and Viswanath 2015, for identical
(ε, δ) releases, counts up to 10^6.

advanced — Dwork–Rothblum–Vadhan (heterogeneous form), reported as min(basic, advanced).

basic — (Σε, Σδ).

basic, advanced and optimal need a per-release (ε, δ): laplace and discrete-laplace (Δ/b, 0),
randomized-response and exponential (ε, 0) and dp specs have one; gaussian, discrete-gaussian, subsampled-gaussian,
mixture-gaussian, random-allocation, tree-aggregation, zcdp and rdp-curve do not, and those rows say so
rather than choosing a δ split for you.  best (default) — one row per target with the smallest bound
among the methods that apply, and the method that gave it.  all — one row per method.  Every bound
is rounded to the safe side.

Neighbouring relation: the sensitivities are yours; subsampled-gaussian, and any spec with q=Q,
with sampling=poisson assumes add/remove-one, sampling=fixed-size replace-one (give the sensitivity
under that relation), and the two are not mixed.  subsampled-gaussian with sampling=truncated-poisson
(add/remove-one; N counts the example) is the revealed mixture of docs/math.md §3.7, as sgd-epsilon
--sampling truncated-poisson computes it.

Subsampling (q=Q on any kind; docs/math.md §2.11): rdp uses the smaller of the convexity bound
log(1 + q(e^((α−1)ε(α)) − 1))/(α−1) and, at integer orders up to 1024, Zhu and Wang 2019 Thm 6
(Poisson) or Wang, Balle and Kasiviswanathan 2019 Thm 9 (fixed-size), interpolated between orders;
the Gaussian keeps its exact curves.  pld composes both directions of the Poisson-subsampled pair
(fixed-size is refused there).  A per-release (ε, δ) becomes (log(1 + q(e^ε − 1)), qδ) (Balle,
Barthe and Gaboardi 2018), and so does the largest loss at δ = 0.

tree-aggregation:sigma=S,steps=T[,epochs=E] is the tree aggregation of DP-FTRL (Kairouz et al.
2021, Appendix D): E trees of T leaves (steps per epoch), the tree restarted every epoch, Gaussian
noise of S times the clipping norm on every node.  Neighbours: one example added or removed (its
contributions replaced by zero), at most one leaf per epoch; under replace-one give sigma=S/2.  A
leaf enters floor(log2 T)+1 nodes, so its Rényi curve is α·E·(floor(log2 T)+1)/(2S²); count=K
composes K independent runs (the same as epochs=K·E).  Only the rdp method applies to it.

random-allocation:sigma=S,steps=T[,k=K] (alias balls-in-bins) is one random allocation (Feldman and
Shenfeld 2025): T Gaussian steps with noise multiplier S, each example in exactly K of them, uniformly
(K = 1: one balls-in-bins epoch of T batches; count=E composes E epochs, as sgd-epsilon --sampling
balls-in-bins does for E·T steps).  Add/remove-one neighbours.  rdp: the Rényi bound of docs/math.md §3.8;
pld (K = 1): the certified PLD of the round (docs/math.md §3.10), an upper bound only (no epsilon_lower).

exponential:epsilon=E is the exponential mechanism exp(ε·u/(2Δu)) (or report-noisy-max with Gumbel
noise), which is ε-bounded range (Durfee and Rogers 2019): its Rényi curve is the largest of the
generalised randomized responses of Dong, Durfee and Rogers 2020 (at most αε²/8, Cesar and Rogers
2021), and its PLD pair the one whose profile is their pointwise largest, (1 − e^((ε'−ε)/2))²/(1 − e^−ε);
both compose adaptively and beat treating it as plain ε-DP.  Their exact composition formula holds
for non-adaptive composition only and is not used.

Calibration: with both --epsilon and --delta and gaussian specs without sigma, the smallest common σ
that makes the composition (ε, δ)-DP, by the exact Gaussian profile (unlike sqrt(2 log(1.25/δ))Δ/ε,
it holds for every ε; --method all adds that classical value, which needs ε < 1).  Otherwise the
spec(s) that leave their noise parameter out share one value: the smallest sigma (gaussian kinds,
tree-aggregation) or scale (laplace, discrete-laplace), or the largest per-release epsilon
(randomized-response, exponential; column release_epsilon) at which the row's method certifies
the whole list within --epsilon at --delta: pld (the certified upper end, within a factor 1.0001;
the row shows the bracket reached there), rdp, optimal, advanced, basic (within 1e-6); best keeps
the most favourable.  δ = 0 works for kinds with a bounded loss.

--tuning-runs KIND:mean=M[,shape=η]: private hyperparameter tuning (Papernot and Steinke 2022): the
whole composition is run K times, K ~ geometric, poisson, logarithmic or negative-binomial (shape
η > −1, η ≠ 0) with mean M, and the best output is released.  The rdp row becomes the tuned bound (Thm 2 for the
negative-binomial family, with the second order λ̂ minimised over the same 225 orders; Thm 6 for
poisson, δ̂ by the optimal conversion); the other rows say it does not apply, and best picks rdp.

--plot FILE draws ε (or δ, or σ) against the swept target, one line per method; at a single target
with --method all, one dot per method, and a method that does not apply is named with its reason.

--rdp-curve prints the summed Rényi curve of the MECHANISMs (the rdp method's, before any
conversion) at each order of --alphas (default: the 225 orders of rdp), with no --delta or
--epsilon; a dp spec with δ > 0 has no curve and is refused, and so is a --method other than rdp.
dpcalc convert --curve - reads its CSV as it is and gives the rdp row's ε exactly.

rdp-curve:file=PATH reads such a CSV back as a mechanism (one curve per file; a relative PATH is
relative to the current directory): at an order of the file its value, between orders the value at
the next larger order of the file (and below the smallest, the smallest order's), which bounds the
curve from above because Rényi divergence is non-decreasing in the order (van Erven and Harremoës
2014, Thm 3); inf above the largest order.  Only the rdp method applies to it: with the orders of
the file, compose --method rdp gives what convert --curve gives.

--group-size K: group privacy.  Every other bound here protects one example (neighbouring datasets differ
in one); with K, the guarantee for a person who contributed K examples (datasets K neighbouring steps
apart; docs/math.md §2.15).  Each spec becomes its person-level form, named in the caption with its route:
gaussian, discrete-gaussian, laplace and discrete-laplace with sensitivity K·Δ (exact); the Poisson-subsampled
Gaussian (subsampled-gaussian, or gaussian with q=) the mixture-gaussian:sigma=S/Δ,group=K,q=Q of Ganesh 2024,
Thm 3.1 (tight; K <= 999); zcdp K²ρ (Bun and Steinke 2016, Prop. 1.9); randomized-response and dp with δ = 0
dp:epsilon=Kε (Dwork and Roth 2014, Thm 2.2); exponential Kε-bounded range; dp:epsilon=E,delta=D
(KE, K·e^((K−1)E)·D) (Vadhan 2017, Lemma 2.2) — upper bounds.  Every other spec (subsampled kinds but the
Poisson Gaussian, tree-aggregation, random-allocation, rdp-curve, mixture-gaussian) by the generic routes:
its Rényi curve by the RDP group property (Mironov 2017, Prop. 2: (α, ε)-RDP with α >= 2^(c+1) gives
(α/2^c, 3^c·ε) for 2^c >= K examples; order β < 2 takes β = 2's value), its (ε, δ) by the group conversion,
its loss pair that of Kε-DP where its loss is bounded.  Every method then runs on the forms (pld keeps its
lower end only where every form is exact or tight).  --method all adds two rows of the generic routes over
the whole example-level composition, the comparison people use today: rdp-group (the RDP group property of
the summed curve) and dp-group (the (ε, δ) group conversion: the smallest ε' found with
K·e^((K−1)ε')·δ' <= δ, ε' the certified example-level ε at δ' of the method best at δ/K, and ε = K·ε'; a
search per --delta value); best weighs them too.  Calibration (--epsilon with --delta), --rdp-curve and --fpr
use the forms (no generic rows; --fpr drops clt-asymptotic).  K = 1 is the example itself; --tuning-runs
does not go with K > 1.

--fpr X[,...]: what ε means for an attacker, instead of ε or δ: for each false-positive rate α,
tpr_upper, a certified upper bound on the true-positive rate of every membership test (both
directions of the neighbouring relation), from the privacy profile: TPR(α) <= e^ε·α + δ(ε) and
1 − e^(−ε)(1 − δ(ε) − α) at every ε (Kairouz, Oh and Viswanath 2015; Dong, Roth and Su 2022).
exact (plain gaussian specs): μ-GDP with μ = sqrt(Σ count·(Δ/σ)²) and TPR = Φ(Φ⁻¹(α) + μ) exactly,
μ in the mu column.  pld: δ(ε) brackets at a grid of ε refined around each α: [tpr_lower, tpr_upper],
tpr inside it.  rdp: the optimal conversion of the Rényi curve to a trade-off curve, an upper bound.  clt-asymptotic (with
subsampled-gaussian specs): the central-limit μ = sqrt(Σ count·q²(e^(1/σ²) − 1)) of Dong, Roth and Su
and Bu et al. 2020, an approximation and not a bound (never judged, never picked by best).  Methods
optimal, advanced and basic do not answer it.  --max-tpr T fails (exit 3) when a certified tpr_upper
passes T; -q prints tpr_upper.  --plot draws TPR against FPR on log axes with the diagonal of random
guessing (sweep --fpr, e.g. 1e-6:0.5:x2).  The columns are those of TRADE-OFF COLUMNS."""


def _aliases() -> str:
    """The kind aliases the spec parser accepts, from the generated :mod:`dpcalc.cli._kinds` (no engine import)."""
    by_kind: dict[str, list[str]] = {}
    for alias, kind in ALIASES.items():
        by_kind.setdefault(kind, []).append(alias)
    return ", ".join(f"{' or '.join(names)} for {kind}" for kind, names in by_kind.items())


#: ``compose --help`` and the DESCRIPTION of dpcalc-compose(1): every kind of the catalogue, in its order, and
#: every alias (tests/test_docs_lists.py keeps both equal to the spec parser's).
HELP = f"""Compose mechanisms: one (ε, δ) guarantee for all of them.

A MECHANISM is KIND:key=value,... with an optional count=K.  The kinds: gaussian:sigma=S[,sensitivity=D],
discrete-gaussian:sigma=S[,sensitivity=D] (integer noise, whole D), laplace:scale=B[,sensitivity=D],
discrete-laplace:scale=B[,sensitivity=D], randomized-response:epsilon=E (or p=P),
exponential:epsilon=E (the exponential mechanism, ε-bounded range),
subsampled-gaussian:q=Q,sigma=S[,sampling=poisson|fixed-size] (or
sampling=truncated-poisson,dataset_size=N,max_batch_size=B: Poisson batches cut at B),
mixture-gaussian:sigma=S,sensitivities=C1|C2|...,probs=P1|P2|...[,q=Q] (a mixture of Gaussians of
means Ci with probabilities Pi against N(0, S²)) or mixture-gaussian:sigma=S,group=K,q=Q (one
DP-SGD step for a person with K examples, each Poisson-sampled at rate Q),
random-allocation:sigma=S,steps=T[,k=K] (each example in K random steps of T; K = 1: a balls-in-bins
epoch), tree-aggregation:sigma=S,steps=T[,epochs=E] (DP-FTRL's tree, restarted every epoch; rdp only),
zcdp:rho=R, rdp-curve:file=PATH[,sha256=HEX] (a curve printed by --rdp-curve, its contents pinned by HEX; rdp only), dp:epsilon=E[,delta=D].

Kind aliases: {_aliases()}.
Every kind but subsampled-gaussian and mixture-gaussian also takes q=Q[,sampling=poisson|fixed-size]: the
mechanism run on a random subsample of rate Q (gaussian:sigma=S,q=Q is subsampled-gaussian).

@FILE reads one MECHANISM per line from FILE, - from standard input (# starts a comment);
identical specs are merged (their counts summed).  Give --delta to get ε, or --epsilon to get δ
(both take sweeps).  Give both, with specs that leave sigma (scale, or a randomized-response or
exponential epsilon) out, to calibrate it.
With --rdp-curve, the summed Rényi curve of the mechanisms instead (no --delta or --epsilon needed).
"""


# ------------------------------------------------------------------------------------------------ command


@click.command("compose", help=HELP)
@click.argument(
    "mechanisms", nargs=-1, required=False, metavar="MECHANISM...", shell_complete=complete_mechanism
)
@click.option(
    "--dp-event",
    "dp_events",
    multiple=True,
    metavar="FILE",
    type=click.Path(dir_okay=False, allow_dash=True),
    help="A DpEvent of dp-accounting / jax_privacy in its named-tuple JSON form (repeatable; - reads standard "
    "input): its mechanisms join the MECHANISMs.  An event dpcalc cannot account for is refused, naming its "
    "class and place.",
)
@click.option(
    "--write-dp-event",
    is_flag=True,
    help="Print the DpEvent (named-tuple JSON) of the composition instead of accounting for it, to check it in "
    "dp-accounting.",
)
@click.option(
    "--delta",
    type=Grid(lo=0, lo_open=False, hi=1, hi_open=True),
    help="Target δ in [0, 1): report ε.  At δ = 0, the pure ε (the largest privacy loss): Σε of laplace, "
    "randomized-response, exponential and dp specs with delta=0; inf, with the reason in note, where a loss is unbounded.",
)
@click.option("--epsilon", type=Grid(lo=0, lo_open=False), help="Target ε >= 0: report δ.")
@click.option(
    "--method",
    type=click.Choice([*COMPOSE_METHODS, "best", "all"]),
    default="best",
    show_default=True,
    help="exact (Gaussian compositions), pld (privacy loss distributions, bracketed), rdp, optimal "
    "(Kairouz et al.), advanced, basic; best: the smallest upper bound that applies, with its method; "
    "all: one row per method.",
)
@click.option(
    "--group-size",
    type=Grid(lo=1, hi=GROUP_SIZE_MAX, lo_open=False, integer=True),
    default=None,
    metavar="K",
    help="Group privacy: the guarantee for a person who contributed K examples (1 <= K <= 10000; 1: the "
    "example itself), each spec by its tightest route, named in the caption; with --method all, the generic "
    "routes rdp-group and dp-group beside them.",
)
@eps_error_option
@tradeoff_options
@risk_options(
    target=True,
    tpr=False,
    what="Leave a spec's noise out (sigma, scale, or a per-release epsilon): the least noise (the largest "
    "per-release ε) whose certified advantage of the composition is at most A, per method.",
)
@tuning_option
@curve_options
@work_options
@common_options
def command(
    mechanisms,
    dp_events,
    write_dp_event,
    delta,
    epsilon,
    method,
    group_size,
    eps_error,
    fpr,
    max_tpr,
    advantage,
    prior,
    max_advantage,
    target_advantage,
    tuning,
    out,
    rdp_curve=False,
    alphas=None,
):
    # the help is HELP (above): its aliases are read from the generated list of kinds
    eps_error = single(eps_error, "--eps-error")
    k = single(group_size, "--group-size") or 1
    if not mechanisms and not dp_events:
        raise click.UsageError("Missing argument 'MECHANISM...' (or give --dp-event FILE).")
    if dp_events or write_dp_event:
        # lazy: the DpEvent conversion (the specs' parser, numpy) loads only for these options
        from dpcalc.commands.dp_events import event_specs, write_event

        mechanisms = (*mechanisms, *event_specs(dp_events))
        if write_dp_event:
            if out.plot:
                raise click.UsageError("--plot: --write-dp-event prints a DpEvent (JSON), nothing to draw")
            click.echo(write_event(mechanisms))
            return
    out = with_max_tpr(out, fpr, max_tpr)
    out, risk = risk_question(out, fpr, advantage, prior, max_advantage, target_advantage)
    if risk:
        for option, value in (("--delta", delta), ("--epsilon", epsilon), ("--tuning-runs", tuning)):
            if value is not None:
                raise click.UsageError(
                    f"--advantage/--prior replace {option} as the question: give one of them"
                )
        if wanted(rdp_curve, alphas, out):
            raise click.UsageError("--rdp-curve cannot be used with --advantage/--prior")
        # lazy: the command's work
        from dpcalc.commands.compose.risk import compose_risk, compose_target_advantage

        if target_advantage is not None:
            if advantage or prior is not None:
                raise click.UsageError(
                    "--target-advantage asks for the noise: give it without --advantage/--prior"
                )
            if k > 1:
                raise click.UsageError("--target-advantage cannot be used with --group-size")
            a = single(target_advantage, "--target-advantage")
            run(out, lambda: compose_target_advantage(mechanisms, a, method, eps_error))
            return
        run(out, lambda: compose_risk(mechanisms, prior, method, eps_error, group_size=k))
        return
    question = _question(fpr, method, delta, epsilon, eps_error, tuning, rdp_curve, alphas, out)
    if k > 1 and tuning is not None:
        raise click.UsageError("--group-size cannot be used with --tuning-runs")
    # lazy: the command's work (numpy, the engine) loads when it runs, never for --help or completion
    from dpcalc.commands.compose import command as cmd

    if question == "tradeoff":  # the trade-off curve: TPR at each false-positive rate (docs/math.md §10)
        refuse_with(fpr, **{"--delta": delta, "--epsilon": epsilon, "--tuning-runs": tuning})
        refuse_with(fpr, **{"--rdp-curve": wanted(rdp_curve, alphas, out)})
        run(out, lambda: cmd.compose_tradeoff(mechanisms, fpr, method, eps_error, group_size=k))
    elif question == "curve":
        run(out, lambda: cmd.compose_curve(mechanisms, alphas, method, stream=True, group_size=k))
    elif question == "calibrate":
        run(out, lambda: cmd.calibrate(mechanisms, epsilon, delta, method, eps_error, group_size=k))
    else:
        run(
            out,
            lambda: cmd.compose(mechanisms, delta, epsilon, method, eps_error, tuning=tuning, group_size=k),
        )


def _question(fpr, method, delta, epsilon, eps_error, tuning, rdp_curve, alphas, out) -> str:
    """The question the options ask: ``"tradeoff"`` (--fpr, whose options the command checks), ``"curve"``
    (--rdp-curve), ``"calibrate"`` (both --delta and --epsilon) or ``"compose"``; options that cannot go
    together are a usage error (exit 2), checked in the order the command has always reported them, before
    the command's work loads."""
    if fpr is not None:
        return "tradeoff"
    if tuning is not None:
        if method not in ("rdp", "best", "all"):
            raise click.UsageError(
                f"--tuning-runs applies to --method rdp (or best, all): its bound is an RDP bound, not {method}"
            )
        if wanted(rdp_curve, alphas, out):
            raise click.UsageError("--tuning-runs cannot be used with --rdp-curve")
        if delta is not None and epsilon is not None:
            raise click.UsageError(
                "--tuning-runs cannot be used with σ calibration (both --delta and --epsilon)"
            )
    if wanted(rdp_curve, alphas, out):
        if eps_error is not None:
            raise click.UsageError(
                "--eps-error cannot be used with --rdp-curve (it is the width of a pld bracket)"
            )
        return "curve"
    if eps_error is not None and method not in ("pld", "best", "all"):
        raise click.UsageError("--eps-error applies to --method pld (or best, all)")
    if delta is not None and epsilon is not None:
        return "calibrate"
    if delta is None and epsilon is None:
        raise click.UsageError("give --delta (to get ε) or --epsilon (to get δ); both to calibrate σ")
    return "compose"
