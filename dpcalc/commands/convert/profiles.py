"""``dpcalc convert`` from the guarantees people quote — an (ε, δ) pair (``--from dp``), μ-GDP (``--from gdp
--mu M``), ρ-zCDP (``--from zcdp --rho R``) or a Rényi bound — to what they mean for an attacker: the trade-off
curve (``--fpr``), the advantage and an attacker's success (``--advantage``, ``--prior``), and for μ-GDP also
ε ⇄ δ (docs/math.md §10.4).  Each from the guarantee's own privacy profile:

* (ε₀, δ₀)-DP: its exact profile and trade-off curve β(α) = max(0, 1 − δ₀ − e^ε₀·α, e^−ε₀·(1 − δ₀ − α))
  (Kairouz, Oh & Viswanath 2015, Thm 2.1; Dong, Roth & Su 2022, arXiv:1905.02383, Prop. 2.5);
* μ-GDP: TPR = Φ(Φ⁻¹(α) + μ) and δ(ε) = Φ(−ε/μ + μ/2) − e^ε·Φ(−ε/μ − μ/2) exactly (Dong, Roth & Su 2022,
  Def. 2.7 and Cor. 2.13);
* ρ-zCDP: the Rényi curve ρ·α (Bun & Steinke 2016, arXiv:1605.02065, Def. 1.1) at dpcalc's orders, read by the
  optimal conversion (Asoodeh et al. 2021): an upper bound, as every Rényi row is.
"""

from __future__ import annotations

import itertools

import numpy as np

from dpcalc.commands.attack_schema import tradeoff_names
from dpcalc.commands.convert.command import read_curve
from dpcalc.commands.risk import risk_result, risk_rows
from dpcalc.commands.schema import names
from dpcalc.commands.tradeoff import exact_rows, tradeoff_plot
from dpcalc.engine import risk, tradeoff
from dpcalc.engine.conversion.rdp_profile import delta_from_rdp, delta_from_zcdp
from dpcalc.engine.conversion.zcdp_tradeoff import tpr_from_zcdp
from dpcalc.engine.mechanisms import gaussian_exact
from dpcalc.engine.orders import DEFAULT_ORDERS
from dpcalc.errors import InputError
from dpcalc.result import Result

_ORDERS = np.asarray(DEFAULT_ORDERS, float)


def guarantees(p, question: str) -> list[tuple[str, str, object]]:
    """``(method, label, delta_at)`` for each guarantee of the sweep (``question`` names the option asked,
    for the errors): ``delta_at(eps_array) -> (lower, estimate, upper)``."""
    out = []
    if p.source == "gdp":
        _only(p, question, "mu", mu=p.mu)
        for mu in p.mu:
            mu = float(mu)
            out.append(
                ("exact", f"mu={mu:g}", lambda e, m=mu: (risk.gaussian_delta(e, m), None, _gauss_up(e, m)))
            )
    elif p.source == "zcdp":
        _only(p, question, "rho", rho=p.rho)
        for rho in p.rho:
            out.append(
                (
                    "optimal",
                    f"rho={float(rho):g}",
                    lambda e, r=float(rho): (None, None, delta_from_zcdp(r, e)),
                )
            )
    elif p.source == "dp":
        _only(p, question, "epsilon and --delta", epsilon=p.epsilon, delta=p.delta)
        for e0, d0 in itertools.product(p.epsilon, p.delta):
            e0, d0 = float(e0), float(d0)
            out.append(
                ("dp", f"epsilon={e0:g},delta={d0:g}", lambda e, a=e0, b=d0: (risk.dp_delta(e, a, b),) * 3)
            )
    else:  # a Rényi bound: (α, ζ) pairs or a curve
        if p.curve is not None:
            alphas, zetas = (np.asarray(x, float) for x in read_curve(p.curve))
            out.append(("optimal", "curve", lambda e, a=alphas, z=zetas: (None, None, _rdp_delta(a, z, e))))
        else:
            if p.alpha is None or p.rdp is None:
                raise InputError(f"{question}: give --alpha and --rdp, or --curve FILE")
            for a, z in itertools.product(p.alpha, p.rdp):
                a_, z_ = np.array([float(a)]), np.array([float(z)])
                out.append(
                    (
                        "optimal",
                        f"alpha={float(a):g},rdp={float(z):g}",
                        lambda e, a=a_, z=z_: (None, None, _rdp_delta(a, z, e)),
                    )
                )
    return out


def _only(p, question, need, **given) -> None:
    """The guarantee's own options are given; the others (a Rényi bound's, the targets) are not."""
    if any(v is None for v in given.values()):
        raise InputError(f"{question} with --from {p.source}: give --{need}")
    others = {"alpha": p.alpha, "rdp": p.rdp, "curve": p.curve, "mu": p.mu, "rho": p.rho}
    if p.source != "dp":
        others.update(epsilon=p.epsilon, delta=p.delta)
    for name, value in others.items():
        if value is not None and name not in given:
            raise InputError(f"--{name} cannot be used with --from {p.source} and {question}")


def _gauss_up(e, mu):
    return gaussian_exact.delta_gaussian(np.asarray(e, float), mu)


def _rdp_delta(alphas, zetas, e):
    return np.asarray(delta_from_rdp(alphas, zetas, np.asarray(e, float)), float)


def convert_risk(p, priors) -> Result:
    """``convert --advantage`` / ``--prior``: one row per guarantee of the sweep and prior."""
    question = "--prior" if priors is not None else "--advantage"
    rows = []
    for method, label, delta_at in guarantees(p, question):
        rows += risk_rows(method, delta_at, priors, {"guarantee": label})
    return risk_result(rows, "convert", f"from --from {p.source}", priors)


def convert_tradeoff_of(p, fpr) -> Result:
    """``convert --fpr`` from μ-GDP (exact), an (ε, δ) pair (its own curve) or ρ-zCDP (its Rényi curve)."""
    fpr = tradeoff.check_fpr(np.atleast_1d(np.asarray(fpr, float)))
    rows = []
    for _, label, _ in guarantees(p, "--fpr"):
        if p.source == "gdp":
            rows += exact_rows(fpr, float(label.split("=")[1]))
        elif p.source == "dp":
            e0, d0 = (float(kv.split("=")[1]) for kv in label.split(","))
            hi = risk.outward(1.0 - risk.dp_tradeoff(fpr, e0, d0), True)
            note = (
                f"(ε, δ) = ({e0:g}, {d0:g})-DP's own trade-off curve (Dong, Roth & Su 2022, Prop. 2.5): exact"
            )
            rows += [_row("dp", a, h, note, lo=h) for a, h in zip(fpr, hi)]
        else:
            hi = tpr_from_zcdp(float(label.split("=")[1]), fpr)
            note = (
                f"ρ-zCDP, {label}: optimal conversion of its Rényi curve ρ·α (every order > 1, and KL ≤ ρ) to a "
                "trade-off curve (Zhu, Dong & Wang 2022, App. F): an upper bound"
            )
            rows += [_row("optimal", a, h, note) for a, h in zip(fpr, hi)]
    names = tradeoff_names("convert")
    cols = {n: [r.get(n) for r in rows] for n in names}
    result = Result(cols, headline="tpr_upper", title="trade-off", caption=f"from --from {p.source}")
    result.plot = tradeoff_plot((), f"from --from {p.source}")
    return result


def _row(method, fpr, tpr, note, lo=None):
    return {"method": method, "fpr": float(fpr), "tpr": float(tpr), "tpr_upper": float(tpr), "note": note}


def convert_gdp(p) -> Result:
    """``convert --from gdp --mu M --delta D`` (ε) or ``--epsilon E`` (δ): μ-GDP's exact profile, rounded to
    the safe side (Balle & Wang 2018, Thm 8: the Gaussian mechanism with Δ/σ = μ)."""
    if p.mu is None:
        raise InputError("--from gdp: give --mu")
    if (p.delta is None) == (p.epsilon is None):
        raise InputError("give exactly one of --delta (to get ε) or --epsilon (to get δ)")
    for name, value in (("alpha", p.alpha), ("rdp", p.rdp), ("curve", p.curve), ("rho", p.rho)):
        if value is not None:
            raise InputError(f"--{name} cannot be used with --from gdp")
    rows = []
    for mu in p.mu:
        for t in p.delta if p.delta is not None else p.epsilon:
            mu, t = float(mu), float(t)
            if p.delta is not None:
                eps, delta = float(gaussian_exact.eps_gaussian(t, mu)), t
            else:
                eps, delta = t, float(gaussian_exact.delta_gaussian(t, mu))
            rows.append({"method": "exact", "delta": delta, "epsilon": eps})
    cols = {n: [r.get(n) for r in rows] for n in names("convert")}
    mus = ", ".join(f"{float(m):g}" for m in p.mu)
    caption = f"μ-GDP, μ = {mus}: its exact profile (Dong, Roth & Su 2022; Balle & Wang 2018), rounded up"
    return Result(
        cols, headline="epsilon" if p.delta is not None else "delta", title="μ-GDP", caption=caption
    )
