"""``dpcalc convert``: between Rényi DP and (ε, δ)-DP, both ways (formulas.md §1)."""

from __future__ import annotations

import sys

import click

from dpcalc.cli.common import common_options, run
from dpcalc.cli.types import Grid
from dpcalc.errors import InputError
from dpcalc.result import PlotSpec, Result

METHODS = ("optimal", "asoodeh", "balle", "mironov")

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
    ("Fail a CI job when ε passes 2:", "dpcalc convert --curve curve.csv --delta 1e-5 -q --max-epsilon 2"),
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
Formulas and test vectors: formulas.md §1."""

_SYM = {"alpha": "α", "rdp": "ζ", "delta": "δ", "epsilon": "ε"}  # --plot subtitles
_WORD = {"alpha": "Rényi order α", "rdp": "RDP level ζ", "delta": "δ", "epsilon": "ε"}
_AXIS = {
    "alpha": "Rényi order α",
    "rdp": "Rényi DP level ζ (nats)",
    "delta": "δ (probability)",
    "epsilon": "ε (nats)",
}

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
@click.option("--delta", type=Grid(lo=0, hi=1, hi_open=True), help="Target δ in (0, 1): report ε.")
@click.option("--epsilon", type=Grid(lo=0, lo_open=False), help="Target ε >= 0: report δ.")
@click.option(
    "--method",
    type=click.Choice([*METHODS, "all"]),
    default="optimal",
    show_default=True,
    help=HELP_METHOD,
)
@click.option(
    "--from",
    "source",
    type=click.Choice(["rdp", "dp"]),
    default="rdp",
    show_default=True,
    help="rdp: RDP → (ε, δ).  dp: (ε, δ) → the largest RDP level at --alpha that certifies it.",
)
@common_options
def command(alpha, rdp, curve, delta, epsilon, method, source, out):
    """Convert between Rényi DP and (ε, δ)-DP.

    Give --alpha and --rdp (or --curve FILE) and either --delta (to get ε) or --epsilon (to get δ).
    With --from dp, give --alpha, --epsilon and --delta to get the RDP level that certifies them.
    Every numeric option takes sweeps; the output has one row per combination and method.
    """
    methods = METHODS if method == "all" else (method,)
    if source == "dp":
        _require(alpha=alpha, epsilon=epsilon, delta=delta)
        _forbid("with --from dp", rdp=rdp, curve=curve)
        run(out, lambda: _from_dp(alpha, epsilon, delta, methods))
        return
    if curve is not None:
        _forbid("with --curve", alpha=alpha, rdp=rdp)
    else:
        _require(alpha=alpha, rdp=rdp)
    if (delta is None) == (epsilon is None):
        raise click.UsageError("give exactly one of --delta (to get ε) or --epsilon (to get δ)")
    if curve is not None:
        alphas, zetas = _read_curve(curve)
        run(out, lambda: _from_curve(alphas, zetas, delta, epsilon, methods))
    else:
        run(out, lambda: _points(alpha, rdp, delta, epsilon, methods))


def _require(**opts) -> None:
    for name, value in opts.items():
        if value is None:
            raise click.UsageError(f"missing option --{name}")


def _forbid(context: str, **opts) -> None:
    for name, value in opts.items():
        if value is not None:
            raise click.UsageError(f"--{name} cannot be used {context}")


def _read_curve(path: str):
    from dpcalc.curvefile import read_curve

    if path == "-":
        return read_curve(sys.stdin, "--curve -")
    try:
        with open(path, encoding="utf-8", newline="") as fh:
            return read_curve(fh, f"--curve {path}")
    except (FileNotFoundError, IsADirectoryError, PermissionError) as exc:
        raise click.ClickException(f"--curve: cannot read {path!r}: {exc.strerror}") from None
    except UnicodeDecodeError:
        raise InputError(f"--curve {path}: not a UTF-8 text file") from None


def _points(alpha, rdp, delta, epsilon, methods) -> Result:
    """One row per (method, α, ζ, δ or ε) combination."""
    import numpy as np

    from dpcalc.engine.conversion import methods as conversions
    from dpcalc.engine.grid import product

    want_eps = delta is not None
    target = delta if want_eps else epsilon
    g = product(alpha=np.asarray(alpha, float), rdp=np.asarray(rdp, float), target=np.asarray(target, float))
    cols: dict[str, list] = {"method": [], "alpha": [], "rdp": [], "delta": [], "epsilon": []}
    for m in methods:
        fn = getattr(conversions, f"eps_{m}" if want_eps else f"delta_{m}")
        value = np.asarray(fn(g["alpha"], g["rdp"], g["target"]), dtype=float)
        cols["method"] += [m] * value.size
        cols["alpha"] += list(g["alpha"])
        cols["rdp"] += list(g["rdp"])
        cols["delta"] += list(g["target"] if want_eps else value)
        cols["epsilon"] += list(value if want_eps else g["target"])
    headline = "epsilon" if want_eps else "delta"
    # --plot: against the first swept of α, ζ, δ (or ε); the other swept ones split the lines; one
    # point per method (nothing swept, --method all) is a dot chart
    given = "delta" if want_eps else "epsilon"
    axes = {"alpha": alpha, "rdp": rdp, given: target}
    swept = [k for k, v in axes.items() if len(v) > 1]
    x = swept[0] if swept else "alpha"
    fixed = ", ".join(f"{_SYM[k]} = {v[0]:g}" for k, v in axes.items() if len(v) == 1)
    plot = None
    if len(cols["method"]) > 1:
        plot = PlotSpec(
            x=x,
            y=headline,
            series="method" if len(methods) > 1 else None,
            group=tuple(swept[1:]),
            logx=x == "delta",
            logy=not want_eps,
            autolog=True,
            title=f"RDP → (ε, δ): {'ε' if want_eps else 'δ'} "
            + (f"by {_WORD[x]}" if swept else "by conversion method"),
            subtitle=f"(α, ζ)-RDP at {fixed}" if fixed else "",
            xlabel=_AXIS[x],
            ylabel=_AXIS[headline],
        )
    return Result(cols, headline=headline, title="RDP → (ε, δ)", plot=plot)


def _from_curve(alphas, zetas, delta, epsilon, methods) -> Result:
    """Optimise over the orders of a curve, for every δ (or ε) and method."""
    import numpy as np

    from dpcalc.engine.conversion import methods as conversions

    a = np.asarray(alphas, float)
    z = np.asarray(zetas, float)
    want_eps = delta is not None
    target = np.asarray(delta if want_eps else epsilon, float)
    fn = conversions.eps_from_curve if want_eps else conversions.delta_from_curve
    cols: dict[str, list] = {"method": [], "delta": [], "epsilon": [], "alpha": [], "rdp": []}
    edge = []
    for m in methods:
        bound = fn(a, z, target, method=m)
        value = np.asarray(bound.value, float).reshape(-1)
        idx = np.asarray(bound.index).reshape(-1)
        cols["method"] += [m] * value.size
        cols["delta"] += list(target if want_eps else value)
        cols["epsilon"] += list(value if want_eps else target)
        best = [float(a[i]) if i >= 0 else None for i in idx]
        cols["alpha"] += best
        cols["rdp"] += [float(z[i]) if i >= 0 else None for i in idx]
        edge += [(m, b) for b, e in zip(best, np.asarray(bound.at_edge).reshape(-1)) if e and len(a) > 1]
    result = Result(
        cols,
        headline="epsilon" if want_eps else "delta",
        title="RDP curve → (ε, δ)",
        caption=f"{len(a)} orders from {a.min():g} to {a.max():g}; alpha = best order",
    )
    if edge:
        orders = sorted({b for _, b in edge})
        result.notes.append(
            "the best order is at the edge of the curve's orders (alpha="
            + ", ".join(f"{b:g}" for b in orders)
            + "): orders beyond it may give a smaller bound"
        )
    if len(cols["method"]) > 1:  # a curve over δ (or ε), or the methods side by side at one target
        result.plot = PlotSpec(
            x="delta" if want_eps else "epsilon",
            y="epsilon" if want_eps else "delta",
            series="method" if len(methods) > 1 else None,
            logx=want_eps,
            logy=not want_eps,
            autolog=True,
            title="RDP curve as (ε, δ)" + ("" if target.size > 1 else ": by conversion method"),
            subtitle=f"best of {len(a)} orders from {a.min():g} to {a.max():g}"
            + (f"; {'δ' if want_eps else 'ε'} = {float(target.flat[0]):g}" if target.size == 1 else ""),
            xlabel=_AXIS["delta" if want_eps else "epsilon"],
            ylabel=_AXIS["epsilon" if want_eps else "delta"],
        )
    return result


def _from_dp(alpha, epsilon, delta, methods) -> Result:
    """DP → RDP: the largest ζ at α such that every (α, ζ)-RDP mechanism is (ε, δ)-DP (§1.3, §1.4)."""
    import numpy as np

    from dpcalc.engine.conversion import methods as conversions
    from dpcalc.engine.grid import product

    g = product(
        alpha=np.asarray(alpha, float), epsilon=np.asarray(epsilon, float), delta=np.asarray(delta, float)
    )
    fns = {
        "optimal": conversions.zeta_opt,
        "asoodeh": lambda a, e, d: np.maximum(conversions.zeta_f(a, e, d), conversions.zeta_g(a, e, d)),
        "balle": conversions.zeta_g,
        "mironov": conversions.zeta_mironov,
    }
    cols: dict[str, list] = {"method": [], "alpha": [], "epsilon": [], "delta": [], "rdp": []}
    for m in methods:
        value = np.maximum(np.asarray(fns[m](g["alpha"], g["epsilon"], g["delta"]), float), 0.0)
        cols["method"] += [m] * value.size
        cols["alpha"] += list(g["alpha"])
        cols["epsilon"] += list(g["epsilon"])
        cols["delta"] += list(g["delta"])
        cols["rdp"] += list(value)
    axes = {"alpha": alpha, "epsilon": epsilon, "delta": delta}
    swept = [k for k, v in axes.items() if len(v) > 1]
    x = swept[0] if swept else "alpha"
    plot = None
    if len(cols["method"]) > 1:
        plot = PlotSpec(
            x=x,
            y="rdp",
            series="method" if len(methods) > 1 else None,
            group=tuple(swept[1:]),
            logx=x == "delta",
            autolog=True,
            xlabel=_AXIS[x],
            ylabel="largest certifying Rényi DP ζ (nats)",
            title="(ε, δ)-DP → RDP: " + (f"by {_WORD[x]}" if swept else "by conversion method"),
            subtitle="every (α, ζ)-RDP mechanism is (ε, δ)-DP; "
            + ", ".join(f"{_SYM[k]} = {v[0]:g}" for k, v in axes.items() if len(v) == 1),
        )
    # The rdp column here is a *lower* bound on what certifies (ε, δ): never rounded up in tables.
    cols["rdp_certifying"] = cols.pop("rdp")
    if plot:
        plot.y = "rdp_certifying"
    return Result(
        cols,
        headline="rdp_certifying",
        title="(ε, δ)-DP → RDP",
        plot=plot,
        caption="rdp_certifying: every (alpha, rdp_certifying)-RDP mechanism is (epsilon, delta)-DP",
    )
