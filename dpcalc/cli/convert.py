"""``dpcalc convert``: the options of the conversions between Rényi DP and (ε, δ)-DP (docs/math.md §1);
the work is :func:`dpcalc.commands.convert.command.convert`."""

from __future__ import annotations

import click

from dpcalc.cli.common import common_options, run
from dpcalc.cli.tradeoff import refuse_with, risk_options, risk_question, tradeoff_options, with_max_tpr
from dpcalc.cli.types import Grid
from dpcalc.cli.work_options import work_options
from dpcalc.commands.choices import CONVERSIONS
from dpcalc.input.opening import open_error

MAN_EXAMPLES = [
    (
        "ε at δ = 1e-5 for a mechanism that is (10, 0.5)-RDP, by the optimal conversion:",
        "dpcalc convert --alpha 10 --rdp 0.5 --delta 1e-5",
    ),
    (
        "The four conversions side by side:",
        "dpcalc convert --alpha 10 --rdp 0.5 --delta 1e-5 --method all",
    ),
    ("δ at ε = 1.5 instead:", "dpcalc convert --alpha 10 --rdp 0.5 --epsilon 1.5"),
    (
        "A whole RDP curve from a CSV file with columns alpha,rdp; the best order is reported:",
        "dpcalc convert --curve curve.csv --delta 1e-6",
    ),
    ("An α-sweep, as CSV:", "dpcalc convert --alpha 2:64:2 --rdp 0.5 --delta 1e-5 -f csv"),
    (
        "The RDP budget at α = 10 that certifies (1, 1e-5)-DP (the DP → RDP direction):",
        "dpcalc convert --from dp --alpha 10 --epsilon 1 --delta 1e-5",
    ),
    (
        "The four conversions by RDP level ζ at α = 10, drawn to a file (Asoodeh et al.'s comparison):",
        "dpcalc convert --alpha 10 --rdp 0.01:4:x1.1 --delta 1e-5 --method all --plot conversions.png",
    ),
    (
        "The largest true-positive rate of a membership test at false-positive rate 1e-3 under (10, 0.5)-RDP:",
        "dpcalc convert --alpha 10 --rdp 0.5 --fpr 1e-3",
    ),
    ("Fail a CI job when ε passes 2:", "dpcalc convert --curve curve.csv --delta 1e-5 -q --max-epsilon 2"),
    (
        "What (1, 1e-3)-DP allows an attacker: the largest TPR at FPR 0.8, and the advantage:",
        "dpcalc convert --from dp --epsilon 1 --delta 1e-3 --fpr 0.8",
    ),
    (
        "The advantage and an attacker's success at prior 1/2 under 1-GDP:",
        "dpcalc convert --from gdp --mu 1 --prior 0.5",
    ),
]

MAN_NOTES = """\
optimal: the lossless conversion of Asoodeh, Liao, Calmon, Kosut and Sankar (arXiv 2008.06529,
Thm 3): the smallest ε (resp. δ) certified by a single (α, ζ)-RDP guarantee D_α(P‖Q) <= ζ, solved
numerically through M(α, ε, δ) with a certified lower bound on the minimum, and rounded up, so the
reported ε is never below the exact value (where the numerics cannot certify a value, the
closed form below is reported).  It is exact for the one-sided constraint; requiring D_α(Q‖P) <= ζ
too can only lower the true value (for αδ above about 0.05), so the number stays sound.
asoodeh: its closed-form upper bound (the minimum of two terms; the αδ >= 1 branch).
balle: Balle, Barthe, Gaboardi, Hsu and Sato 2020, Thm 21 = Canonne, Kamath and Steinke 2020, Prop. 12,
with dp_accounting's rules (orders <= 1.01 give no bound; ε = 0 where the KL bound already gives δ).
mironov: Mironov 2017, Prop. 3, as used by old Opacus and TF-Privacy.
For orders above 1.01, optimal <= asoodeh <= balle <= mironov.  Over a curve, each order gives a
valid bound and the minimum is reported with its order; a warning on stderr says when the best
order lies at the edge of the orders given (add orders beyond it).  --from dp gives the largest ζ
such that every (α, ζ)-RDP mechanism is (ε, δ)-DP: exactly (optimal), or the lower bounds
max(f, g) (asoodeh), g (balle) and ε − log(1/δ)/(α − 1) (mironov), each clipped at 0.
Formulas and test vectors: docs/math.md §1.

--fpr X[,...] (with --alpha and --rdp, or --curve; instead of --delta or --epsilon): for each
false-positive rate α, tpr_upper, an upper bound on the true-positive rate of every membership test,
from the (ε, δ(ε)) pairs the Rényi bound certifies (the optimal conversion and that of Balle et al.,
minimised over ε; docs/math.md §10), assuming as every row here does that the bound holds in both
directions of the neighbouring relation.  --max-tpr T is its budget check (exit 3).

--advantage / --prior P (instead of --delta or --epsilon): a certified upper bound on TPR − FPR of
every membership test (δ at ε = 0) and on the success of the best attacker with prior P, from the
guarantee's own privacy profile (docs/math.md §10.4); --max-advantage A is its budget check.

--from dp --epsilon E --delta D with --fpr, --advantage or --prior: the (E, D)-DP guarantee itself,
its own trade-off curve (exact).  --from gdp --mu M: μ-GDP, exact (also --delta to get ε, --epsilon
to get δ).  --from zcdp --rho R: ρ-zCDP through its Rényi curve ρ·α (--fpr, --advantage, --prior;
for ε use 'dpcalc compose zcdp:rho=R --delta D')."""

HELP_METHOD = (
    "optimal (exact, Asoodeh et al.; rounded up), asoodeh (closed form), balle (Balle et al. 2020 / "
    "Canonne et al. 2020), mironov (Mironov 2017), or all (one row per method)."
)


@click.command("convert")
@click.option("--alpha", type=Grid(lo=1), help="Rényi order(s) α > 1.")
@click.option("--rdp", type=Grid(lo=0, lo_open=False), help="Rényi-DP level ζ >= 0 at --alpha.")
@click.option(
    "--curve",
    type=str,
    default=None,
    metavar="FILE",
    help="A whole RDP curve: CSV with header alpha,rdp ('-' reads stdin). The best order is reported.",
)
@click.option(
    "--delta",
    type=Grid(lo=0, lo_open=False, hi=1, hi_open=True),
    help="Target δ in [0, 1): report ε.  At δ = 0, ε = inf (RDP at finite orders bounds no privacy "
    "loss) unless ζ = 0.",
)
@click.option("--epsilon", type=Grid(lo=0, lo_open=False), help="Target ε >= 0: report δ.")
@click.option(
    "--method",
    type=click.Choice([*CONVERSIONS, "all"]),
    default="optimal",
    show_default=True,
    help=HELP_METHOD,
)
@click.option(
    "--from",
    "source",
    type=click.Choice(["rdp", "dp", "gdp", "zcdp"]),
    default="rdp",
    show_default=True,
    help="rdp: RDP → (ε, δ).  dp: (ε, δ) → the largest RDP level at --alpha that certifies it (with --fpr, "
    "--advantage or --prior: what (ε, δ)-DP itself allows).  gdp: μ-GDP (--mu).  zcdp: ρ-zCDP (--rho).",
)
@click.option("--mu", type=Grid(lo=0), default=None, metavar="M", help="With --from gdp: μ > 0 of μ-GDP.")
@click.option("--rho", type=Grid(lo=0), default=None, metavar="R", help="With --from zcdp: ρ > 0 of ρ-zCDP.")
@tradeoff_options
@risk_options()
@work_options
@common_options
def command(
    alpha,
    rdp,
    curve,
    delta,
    epsilon,
    method,
    source,
    mu,
    rho,
    fpr,
    max_tpr,
    advantage,
    prior,
    max_advantage,
    out,
):
    """Convert between Rényi DP and (ε, δ)-DP.

    Give --alpha and --rdp (or --curve FILE) and either --delta (to get ε) or --epsilon (to get δ).
    With --from dp, give --alpha, --epsilon and --delta to get the RDP level that certifies them.
    Every numeric option takes sweeps; the output has one row per combination and method, streamed
    as it is computed on every core (a sweep estimated above a few seconds says so first; --max-seconds
    caps it; more than 10^8 rows is refused up front).
    """
    out = with_max_tpr(out, fpr, max_tpr)
    out, risk = risk_question(out, fpr, advantage, prior, max_advantage)
    if source != "dp":  # with --from dp, --epsilon and --delta are the guarantee
        refuse_with(fpr, **{"--delta": delta, "--epsilon": epsilon})
        if risk and (delta is not None or epsilon is not None):
            raise click.UsageError("--advantage/--prior replace --delta/--epsilon as the question")
    if (mu is not None) != (source == "gdp") or (rho is not None) != (source == "zcdp"):
        raise click.UsageError("--mu goes with --from gdp, --rho with --from zcdp (and each needs its own)")
    # lazy: the command's work (numpy, the engine) loads when it runs, never for --help or completion
    from dpcalc.commands.convert import command as cmd
    from dpcalc.commands.convert import profiles as prof  # lazy: as the line above

    params = cmd.ConvertParams(
        alpha=alpha,
        rdp=rdp,
        curve=curve,
        delta=delta,
        epsilon=epsilon,
        method=method,
        source=source,
        mu=mu,
        rho=rho,
    )
    if risk:  # membership-inference risk (docs/math.md §10.4)
        run(out, lambda: _convert(params, lambda: prof.convert_risk(params, prior)))
        return
    if fpr is not None and source != "rdp":  # the trade-off curve of the guarantee itself
        run(out, lambda: prof.convert_tradeoff_of(params, fpr))
        return
    if fpr is not None:  # the trade-off curve: TPR at each false-positive rate (docs/math.md §10)
        run(out, lambda: _convert(params, lambda: cmd.convert_tradeoff(params, fpr)))
        return
    if source == "gdp":
        run(out, lambda: prof.convert_gdp(params))
        return
    if source == "zcdp":
        raise click.UsageError(
            "--from zcdp answers --fpr, --advantage and --prior; for ε use 'dpcalc compose zcdp:rho=R --delta D'"
        )
    # the rows stream as they are computed; --from dp with a budget check is judged whole before any row is
    # written, as it always was (a budget no row can judge is refused with nothing printed)
    whole = source == "dp" and (out.max_epsilon is not None or out.max_delta is not None)
    run(out, lambda: _convert(params, lambda: cmd.convert(params) if whole else cmd.convert_stream(params)))


def _convert(params, compute):
    """``compute()`` (a convert question); a --curve file that cannot be opened or read is bad input (exit 2), like a
    malformed one (dpcalc.input.text names it; an OSError that escapes it is mapped the same way)."""
    try:
        return compute()
    except OSError as exc:
        if params.curve is None or exc.filename != params.curve:
            raise
        raise open_error(exc, params.curve, f"--curve {params.curve}") from None
