"""Inverse questions (``--target-epsilon``) of the RDP accountant for a sampler without a vectorised
calibration (truncated Poisson batches, random allocation: docs/math.md §3.7, §3.8): one monotone search per
distinct configuration (:func:`dpcalc.engine.pld.search.boundary`) over the forward ε, so that every answer
is one at which ε was computed and found at or below the target, and the neighbour one tolerance step
further was computed and found above it.
"""

from __future__ import annotations

import math

import numpy as np

from dpcalc.engine.dpsgd import accounting as sgd
from dpcalc.engine.pld.search import boundary

#: The noise multipliers searched.
SIGMA_RANGE = (1e-3, 1e6)
#: The most steps searched.
STEPS_MAX = 1e9


def searched_rows(name, g, kw, solve, rtol) -> dict:
    """The rdp accountant's answers to ``solve`` ("sigma", "steps" or "q") on the combinations ``g``."""
    n = g["q"].size
    row_kw = ("dataset_size", "max_batch_size")
    shared = {k: v for k, v in kw.items() if k not in row_kw}
    out = {k: np.full(n, np.nan) for k in ("sigma", "steps", "q", "eps", "alpha")}
    edge = np.zeros(n, bool)
    answers: dict = {}
    for i in range(n):
        v = {
            k: float(g[k][i])
            for k in ("q", "sigma", "steps", "epochs", "n", "b", "delta", "target")
            if k in g
        }
        extra = {k: float(np.asarray(kw[k]).reshape(-1)[i]) for k in row_kw if k in kw}
        key = (tuple(sorted(v.items())), tuple(sorted(extra.items())))
        if key not in answers:
            answers[key] = _one(name, v, extra, shared, solve, rtol)
        (out["sigma"][i], out["steps"][i], out["q"][i], out["eps"][i], out["alpha"][i], edge[i]) = answers[
            key
        ]
    e = sgd.Epsilon(out["eps"], out["alpha"], edge, np.ones(n, bool))
    cols = dict(noise_multiplier=out["sigma"], steps=out["steps"], eps=e)
    if solve == "q":
        cols["q"] = out["q"]
    return cols


def _one(name, v, extra, shared, solve, rtol):
    """``(σ, steps, q, ε, α, at_edge)`` of one configuration (nan where nothing meets the target)."""
    whole = "n" in v and solve == "q"

    def run(x):
        sigma, steps, q = v.get("sigma"), v.get("steps"), v.get("q")
        if solve == "sigma":
            sigma = x
        elif solve == "steps":
            steps = x
        else:
            q = x / v["n"] if whole else x
            if "epochs" in v:  # steps = ceil(E·N/B) (ceil(E/q) without N), as the forward command counts them
                steps = max(math.ceil(v["epochs"] * v["n"] / x if whole else v["epochs"] / q), 1)
        return sigma, steps, q

    def test(x):
        sigma, steps, q = run(x)
        e = sgd.epsilon(name, q, sigma, steps, v["delta"], warn=False, **shared, **extra)
        val = float(e.epsilon)
        return (val if math.isfinite(val) else math.inf), e

    if solve == "sigma":
        found = boundary(
            test, v["target"], 1.0, ok_above=True, lo=SIGMA_RANGE[0], hi=SIGMA_RANGE[1], rtol=rtol
        )
    elif solve == "steps":
        found = boundary(test, v["target"], 1.0, ok_above=False, lo=1.0, hi=STEPS_MAX, integer=True)
    else:
        hi = v["n"] if whole else 1.0
        start = max(hi / 100.0, 1.0) if whole else 0.01
        lo = 1.0 if whole else 1e-12
        found = boundary(test, v["target"], start, ok_above=False, lo=lo, hi=hi, integer=whole, rtol=rtol)
    nan = math.nan
    if found.x is None:  # nothing in range meets the target
        sigma = math.inf if solve == "sigma" else v["sigma"]
        steps = 0.0 if solve == "steps" else (nan if solve == "q" and "epochs" in v else v["steps"])
        return sigma, steps, 0.0 if solve == "q" else v["q"], nan, nan, False
    sigma, steps, q = run(found.x)
    e = found.info
    return sigma, float(steps), q, float(e.epsilon), float(e.alpha), bool(e.at_edge)
