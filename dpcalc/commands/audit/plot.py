"""``dpcalc audit --plot``: the audit's points with their confidence boxes over trade-off curves
(docs/math.md §11.6); :mod:`dpcalc.plot.audit` draws what :func:`plot_spec` computes.

Each audit from counts is the point (FPR, TPR) = (fp/(fp + tn), tp/(tp + fn)) inside the box
[fpr_lower, fpr_upper] × [tpr_lower, tpr_upper] of the one-sided Clopper–Pearson bounds at level
1 − (1 − c)/2 (docs/math.md §11.1), the level of the printed tpr_lower and fpr_upper.  Beneath them:

* the claimed guarantee: TPR ≤ min(e^ε·α + δ, 1 − e^(−ε)(1 − δ − α)) for the claimed (ε, δ) (Kairouz, Oh &
  Viswanath 2015, arXiv:1311.0776, Thm 2.1), :func:`dpcalc.engine.tradeoff.profile_tpr`;
* with a DP-SGD claim, the certified PLD profile bound of the run (docs/math.md §10), the curve every
  attack on that run stays under, :func:`dpcalc.engine.tradeoff.pld_tpr`;
* the curve of the proved (epsilon_lower, δ): the box's corner (fpr_upper, tpr_lower) lies on or above it;
* the diagonal TPR = FPR of guessing.

Log axes from 10⁻⁶ to 1, like the ``--fpr --plot`` trade-off pictures.
"""

from __future__ import annotations

import numpy as np

from dpcalc.engine import tradeoff
from dpcalc.engine.audit import clopper_pearson as cp
from dpcalc.engine.dpsgd.pld_accounting import sgd_delta_pld, sgd_epsilon_pld
from dpcalc.errors import InputError
from dpcalc.render.cells import rounded
from dpcalc.result import PlotSpec, Result

#: The false-positive rates the curves are drawn at (closed forms: many; the PLD profile: a few).
FLOOR = 1e-6
_DENSE = 121
_PLD_POINTS = 13
#: At most this many boxes get a legend entry (a CSV of many audits draws every box, unlabelled).
_LABELLED = 6


def plot_spec(result: Result, run: dict | None) -> PlotSpec:
    """The picture of ``result`` (rows from counts, --input or --scores); ``run`` is the DP-SGD claim's
    ``{q, sigma, steps}`` (None: no profile curve).  One-run audits have no (FPR, TPR) point: refused."""
    if "one-run" in result.column("method"):
        raise InputError(
            "--plot: a one-run audit (--canaries) has no (FPR, TPR) point to draw; give counts or --scores"
        )
    tp, fp, fn, tn, conf = (
        np.asarray(result.column(k), float) for k in ("tp", "fp", "fn", "tn", "confidence")
    )
    level = 1.0 - (1.0 - conf) / 2.0
    n1, n0 = tp + fn, fp + tn
    tpr_lo = np.asarray(result.column("tpr_lower"), float)
    fpr_hi = np.asarray(result.column("fpr_upper"), float)
    tpr_hi = np.atleast_1d(cp.upper(tp, n1, level))
    fpr_lo = np.atleast_1d(cp.lower(fp, n0, level))
    # one box per audit: rows that differ only in δ share their counts and confidence
    first = list(dict.fromkeys(zip(tp, fp, fn, tn, conf)).keys())
    rows = [list(zip(tp, fp, fn, tn, conf)).index(key) for key in first]
    many = len(rows) > 1
    points = tuple(
        (
            (f"audit {k + 1}: " if many else "attack: ")
            + f"TPR {int(tp[i])}/{int(n1[i])}, FPR {int(fp[i])}/{int(n0[i])}"
            + (f", c = {conf[i]:g}" if len(set(conf)) > 1 else "")
            if k < _LABELLED
            else "",
            float(fp[i] / n0[i]),
            float(tp[i] / n1[i]),
            float(fpr_lo[i]),
            float(fpr_hi[i]),
            float(tpr_lo[i]),
            float(tpr_hi[i]),
        )
        for k, i in enumerate(rows)
    )
    alpha = np.logspace(np.log10(FLOOR), 0.0, _DENSE)
    curves = []
    deltas = result.column("delta")
    claims = result.column("epsilon_claimed") if "epsilon_claimed" in result.columns else [None] * len(result)
    for e, d in dict.fromkeys(zip(claims, deltas)):
        if e is not None and e < float("inf"):  # an infinite claim bounds nothing: TPR = 1
            tpr = tradeoff.profile_tpr(alpha, [e], [d])
            curves.append((f"claimed guarantee (ε = {rounded(e, 'up', 4)}, δ = {d:g})", alpha, tpr, "claim"))
    if run is not None:
        curves.append(_pld_curve(run))
    for e, d in list(dict.fromkeys(zip(result.column("epsilon_lower"), deltas)))[:4]:
        if e > 0:
            tpr = tradeoff.profile_tpr(alpha, [e], [d])
            curves.append(
                (f"proved by the attack (ε >= {rounded(e, 'down', 4)}, δ = {d:g})", alpha, tpr, "proved")
            )
    cs = sorted(set(result.column("confidence")))
    return PlotSpec(
        x="fpr",
        y="tpr",
        logx=True,
        logy=True,
        points=points,
        curves=tuple(
            (label, tuple(map(float, x)), tuple(map(float, y)), kind) for label, x, y, kind in curves
        ),
        diagonal="random guessing (TPR = FPR)",
        xlabel="false-positive rate (non-members called members)",
        ylabel="true-positive rate (members called members)",
        title="Audit: what the attack achieved, against the trade-off curve",
        subtitle="boxes: one-sided Clopper–Pearson bounds, each at level 1 − (1 − c)/2, c = "
        + ", ".join(f"{c:g}" for c in cs)
        + "; a box above a claimed curve contradicts the claim",
    )


def _pld_curve(run: dict):
    """The certified PLD profile bound on TPR of the DP-SGD run (docs/math.md §10)."""
    q, sigma, steps = run["q"], run["sigma"], run["steps"]
    alpha = np.logspace(np.log10(FLOOR), np.log10(0.5), _PLD_POINTS)
    _, _, hi = tradeoff.pld_tpr(
        alpha,
        lambda e: sgd_delta_pld(q, sigma, steps, e),
        lambda d: sgd_epsilon_pld(q, sigma, steps, d).upper,
    )
    alpha, hi = np.append(alpha, 1.0), np.append(hi, 1.0)
    label = f"DP-SGD run (q = {q:g}, σ = {sigma:g}, T = {steps}): PLD profile, certified"
    return label, alpha, hi, "profile"
