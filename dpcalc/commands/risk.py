"""``--advantage`` and ``--prior P`` (compose, sgd-epsilon, convert): membership-inference risk in an attacker's
terms — the largest TPR − FPR of any test, and the success of a Bayes-optimal attacker with prior π — from each
method's privacy profile (docs/math.md §10.4; the formulas are :mod:`dpcalc.engine.risk`).

A method is a function ``delta_at(eps_array) -> (lower, estimate, upper)`` (any of the first two may be
``None``): the command's own certified δ(ε) — exact for Gaussian compositions, the PLD bracket, or the Rényi
curve's optimal conversion.  Each question reads it at ε = 0 (the advantage) and at |logit π| for each prior:
one more point of the profile per prior, nothing else.
"""

from __future__ import annotations

import math

import numpy as np

from dpcalc.commands.attack_schema import risk_names
from dpcalc.engine import risk
from dpcalc.result import PlotSpec, Result

#: a Rényi row: the smaller of the per-order conversion and the profile of the curve's optimal trade-off curve
_RDP = (
    "the Rényi curve's optimal trade-off curve (every order, both directions; Balle et al. 2020, Zhu, Dong "
    "& Wang 2022) read as a profile, or the per-order conversion where smaller: an upper bound"
)

NOTES = {
    "exact": "exact: μ-GDP's own profile (Dong, Roth & Su 2022)",
    "pld": "the composed PLD's certified δ bracket",
    "rdp": _RDP,
    "optimal": _RDP,
    "dp": "the (ε, δ)-DP pair's own profile (Kairouz et al. 2015): exact for the guarantee",
}


def risk_rows(method, delta_at, priors, cfg=None, note=None) -> list[dict]:
    """The rows of one method (and configuration ``cfg``, a dict of its columns): one per prior, or one
    without ``priors``."""
    eps = risk.profile_epsilons(priors)
    lo, est, up = (None if v is None else np.atleast_1d(np.asarray(v, dtype=float)) for v in delta_at(eps))

    def at(v, i, upward):
        return None if v is None else float(risk.outward(v[i], upward))

    base = {
        "method": method,
        "advantage_lower": at(lo, 0, False),
        "advantage_estimate": None if est is None else float(np.clip(est[0], 0, 1)),
        "advantage": at(up, 0, True),
        "note": note if note is not None else NOTES.get(method, ""),
        **(cfg or {}),
    }
    if priors is None:
        return [dict(base, prior=None)]
    rows = []
    for i, p in enumerate(np.atleast_1d(priors), start=1):
        p = float(p)

        def s(v, upward, i=i, p=p):  # upward None: the estimate, not rounded
            return None if v is None else float(risk.success(p, v[i], upward)[0])

        rows.append(
            dict(
                base,
                prior=p,
                success_lower=s(lo, False),
                success_estimate=s(est, None),
                success=s(up, True),
            )
        )
    return rows


def refused_rows(method, priors, reason, cfg=None) -> list[dict]:
    """A method that does not apply: its rows, empty, saying why."""
    ps = [None] if priors is None else [float(p) for p in np.atleast_1d(priors)]
    return [dict(method=method, prior=p, note=f"does not apply: {reason}", **(cfg or {})) for p in ps]


#: compose's calibrated columns: shown only by --target-advantage (the value it found).
CALIBRATED = ("sigma", "scale", "release_epsilon")


def risk_result(rows, command, caption, priors, headline: str | None = None) -> Result:
    """The table: the command's risk columns, headline ``success`` with ``--prior``, else ``advantage`` (or the
    input a calibration found: ``headline``); the plot: success against the prior (one line per method), or the
    advantage against a swept input."""
    names = [n for n in risk_names(command) if n not in CALIBRATED or any(r.get(n) is not None for r in rows)]
    cols = {n: [_clean(r.get(n)) for r in rows] for n in names}
    headline = headline or ("advantage" if priors is None else "success")
    title = "Membership-inference risk: " + ("advantage" if priors is None else "the attacker's success")
    # the risk columns (and a calibration's ε) are outputs: never a configuration of their own
    found = (
        "advantage_lower",
        "advantage_estimate",
        "advantage",
        "success_lower",
        "success_estimate",
        "success",
    )
    derived = tuple(c for c in (*found, "tpr_lower", "tpr", "epsilon") if c in cols and c != headline)
    result = Result(cols, headline=headline, title=title, caption=caption, derived=derived)
    swept = [c for c in ("noise_multiplier", "steps", "sample_rate") if c in cols and len(set(cols[c])) > 1]
    if priors is not None:
        result.plot = PlotSpec(
            x="prior",
            y="success",
            series="method",
            band=("success_lower", "success"),
            group=tuple(swept),
            xlabel="prior π (membership)",
            ylabel="the best attacker's success (upper bound)",
            title=title,
            subtitle=caption,
        )
    elif swept:
        result.plot = PlotSpec(
            x=swept[0],
            y="advantage",
            series="method",
            band=("advantage_lower", "advantage"),
            group=tuple(swept[1:]),
            xlabel=swept[0].replace("_", " "),
            ylabel="advantage TPR − FPR (upper bound)",
            title=title,
            subtitle=caption,
            autolog=True,
        )
    return result


def _clean(v):
    if isinstance(v, float) and math.isnan(v):
        return None
    return v
