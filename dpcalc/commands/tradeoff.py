"""``--fpr``: the largest true-positive rate of any membership test at a false-positive rate (docs/math.md
§10; the engine is :mod:`dpcalc.engine.tradeoff`) — the rows, the result and the figure that the trade-off
of every command shares: ``compose`` (:mod:`dpcalc.commands.compose.tradeoff`), ``sgd-epsilon``
(:mod:`dpcalc.commands.sgd.tradeoff`) and ``convert`` (:func:`dpcalc.commands.convert.command.convert_tradeoff`).

Rows (one per false-positive rate, per configuration and per method):

* ``exact`` — Gaussian compositions (and DP-SGD with q = 1): μ-GDP with μ = Δ/σ·√k, TPR = Φ(Φ⁻¹(α) + μ)
  exactly (Dong, Roth & Su 2022, arXiv:1905.02383, §2.1 and Cor. 3.3).
* ``pld`` — the privacy profile δ(ε) of the composed privacy loss distributions (certified brackets at
  a grid of ε refined around each α's best ε): ``tpr`` = ``tpr_upper`` from the upper ends (a certified
  bound), ``tpr_lower`` the least any profile within the bracket can certify, ``tpr_estimate`` from the
  estimates (not a bound).
* ``rdp`` — the optimal conversion of the Rényi curve to a trade-off curve (every order's constraint on a
  binary test, :func:`dpcalc.engine.tradeoff.rdp_tpr`): a certified upper bound.
* ``clt-asymptotic`` — DP-SGD's central-limit μ (Dong, Roth & Su, §5; Bu et al. 2020,
  arXiv:1911.11607): an approximation, never a guarantee, never judged by ``--max-tpr``: its value is in
  ``tpr_estimate``, its ``tpr`` empty.

``tpr`` is always a certified upper bound (or empty), as ``epsilon`` is in every command; the headline
(``-q``, ``--max-tpr``, ``best``) is the same value, ``tpr_upper``.  scipy (:mod:`dpcalc.engine.tradeoff`) is
imported inside the functions that need it: a command that merely can answer ``--fpr`` does not load it.
"""

from __future__ import annotations

import math

from dpcalc.commands.attack_schema import tradeoff_names
from dpcalc.result import PlotSpec, Result

#: The note of a trade-off row from a Rényi curve alone (dpcalc.engine.tradeoff.rdp_tpr).
RDP_NOTE = (
    "optimal conversion of the Rényi curve to a trade-off curve (Zhu, Dong & Wang 2022, arXiv:2106.08567, "
    "App. F): an upper bound"
)
CLT_NOTE = "central limit theorem (Dong, Roth & Su 2022; Bu et al. 2020): an approximation, not a guarantee"


def tradeoff_row(method, fpr, lo, est, hi, mu=None, note=""):
    """One trade-off row: ``tpr`` is the certified upper end ``hi`` (as ``epsilon`` is in every command),
    the estimate ``est`` goes to ``tpr_estimate``."""
    return {
        "method": method,
        "fpr": fpr,
        "tpr_lower": lo,
        "tpr_estimate": est,
        "tpr": hi,
        "tpr_upper": hi,
        "mu": mu,
        "note": note,
    }


def _f(v):
    """A cell as a float (None for nan); a label, a flag or a count (matrix's strategy, sensitivity_exact,
    dpsgd_steps) as it is."""
    if isinstance(v, (str, bool, int)):
        return v
    return None if v is None or (isinstance(v, float) and math.isnan(v)) else float(v)


def exact_rows(fpr, mu, method="exact"):
    # lazy: scipy (dpcalc.engine.tradeoff); only --fpr needs it: a plain sgd-epsilon or convert imports none
    from dpcalc.engine import tradeoff

    hi = tradeoff.gaussian_tpr(fpr, mu)
    lo = tradeoff.gaussian_tpr_lower(fpr, mu)
    note = f"μ-GDP, μ = {mu:.6g}: TPR = Φ(Φ⁻¹(FPR) + μ)"
    return [
        tradeoff_row(method, float(a), float(lw), None, float(h), mu, note) for a, lw, h in zip(fpr, lo, hi)
    ]


def tradeoff_result(rows, command, title, caption, subtitle) -> Result:
    cols = {
        name: [_f(r.get(name)) if name not in ("method", "note") else r.get(name) for r in rows]
        for name in tradeoff_names(command)
    }
    for name in ("sample_rate", "noise_multiplier", "steps"):
        if name in cols:
            cols[name] = [r.get(name) for r in rows]
    result = Result(cols, headline="tpr_upper", title=title, caption=caption)
    fixed = [
        f"{sym} = {cols[name][0]:g}"
        for name, sym in (("sample_rate", "q"), ("noise_multiplier", "σ"), ("steps", "T"))
        if name in cols and cols[name] and len(set(cols[name])) == 1 and cols[name][0] is not None
    ]
    subtitle = "; ".join(p for p in (", ".join(fixed), subtitle) if p)
    result.plot = tradeoff_plot(
        tuple(g for g in ("sample_rate", "noise_multiplier", "steps") if g in cols and len(set(cols[g])) > 1),
        subtitle,
    )
    return result


def tradeoff_plot(group, subtitle) -> PlotSpec:
    """``--plot``: TPR against FPR on log axes, one line per method (and per swept ``group`` value), the
    pld bracket shaded, and the diagonal of random guessing; estimates (pld's, the central-limit
    approximation) as lines of their own, labelled as not a bound."""
    return PlotSpec(
        x="fpr",
        y="tpr",
        y_extra=("tpr_estimate",),
        series="method",
        logx=True,
        logy=True,
        group=group,
        band=("tpr_lower", "tpr_upper"),
        diagonal="random guessing (TPR = FPR)",
        labels={
            "pld": "pld (its certified bracket shaded)",
            "clt-asymptotic": "clt-asymptotic (an approximation, not a bound)",
            "tpr": "bound",
            "tpr_estimate": "estimate, not a bound",
        },
        xlabel="false-positive rate α",
        ylabel="largest true-positive rate",
        title="What ε means for an attacker: the trade-off curve",
        subtitle=subtitle,
    )
