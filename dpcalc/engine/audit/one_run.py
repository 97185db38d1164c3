"""One-run auditing: ε lower bounds from m canaries (Steinke, Nasr & Jagielski 2023; docs/math.md §11.4).

Steinke, Nasr & Jagielski, "Privacy Auditing with One (1) Training Run", NeurIPS 2023,
arXiv:2305.08846.  Each of m canaries is included independently with probability 1/2; the auditor
guesses "in" or "out" for r of them (abstaining on the rest) and v guesses are right.  If the
training is (ε, δ)-DP, their main theorem (Thm 3 there; its δ > 0 form with the exact tail sum of
their appendix algorithm) bounds the number W of right guesses:

    P[W ≥ v] ≤ f(v) + 2mδ · max_{1≤i≤v} (f(v − i) − f(v))/i,     f(u) = P[Binomial(r, p_ε) ≥ u],

with ``p_ε = e^ε/(1 + e^ε)``.  The right side is a p-value for "the training is (ε, δ)-DP"; the lower
bound at confidence c is the largest ε whose p-value is still below β = 1 − c (an (ε, δ)-DP mechanism
is (ε', δ)-DP for every ε' ≥ ε, so every such ε' is rejected together).  It is found on a grid of
ε in [0, 50] and refined by bisection inside the last grid cell, keeping the end whose p-value is
below β (× (1 + 1e-9), a margin for rounding), so the reported value never exceeds the exact one.
Above ε ≈ 37, p_ε rounds to 1 and the p-value to 1: no bound exceeds that.

Bounded work (docs/math.md §11.4): the tail sum is taken term by term only on a window of about
11·√r terms around the binomial's mean, the mass outside added whole (:func:`_alpha`), and most grid
points are decided from cheap bounds on it (:func:`_alpha_cheap`).
"""

from __future__ import annotations

import math

import numpy as np
from scipy import special, stats

EPS_MAX = 50.0
_GRID = np.linspace(0.0, EPS_MAX, 501)
_MARGIN = 1e-9
#: the binomial's mass is summed term by term on ``r·p ± sqrt(TAIL_LOG·r/2)`` only: by Hoeffding's
#: inequality each side outside holds at most e^(−TAIL_LOG), and that mass is added whole (as computed
#: by the binomial's tail functions), so the p-value stays an upper bound; about 11·√r terms per ε
TAIL_LOG = 60.0
#: the largest number r of guesses (the work per ε grows as √r; checked by the command)
GUESSES_MAX = 10**9


def _alpha(r, v, p):
    """An upper bound on ``max_{1≤i≤v} P[v − i ≤ B < v]/i``, B ~ Binomial(r, p), for v ≥ 1.

    The terms ``P[B = k]`` are summed downwards from ``hi = min(v − 1, r·p + t)`` to ``lo ≥ r·p − t``
    (t from :data:`TAIL_LOG`); for i with ``v − i`` in the window, ``P[v − i ≤ B < v]`` is at most the
    window's partial sum plus ``P[B > hi]``; for shorter i at most ``P[B > hi]``; for longer i at most
    the whole window plus both tails, over ``v − lo + 1``.  When the window is all of [0, v − 1] this is
    the exact maximum of the module docstring, term for term."""
    t = math.sqrt(TAIL_LOG * r / 2.0) + 1.0
    hi = int(min(v - 1, math.ceil(r * p + t)))
    lo = int(max(0, min(math.floor(r * p - t), hi)))
    k = np.arange(hi, lo - 1, -1)
    total = np.cumsum(stats.binom.pmf(k, r, p))  # P[k ≤ B ≤ hi]
    above = float(stats.binom.sf(hi, r, p)) if hi < v - 1 else 0.0
    best = float(np.max((above + total) / (v - k)))
    if hi < v - 1:
        best = max(best, above)
    if lo > 0:
        below = float(stats.binom.cdf(lo - 1, r, p))
        best = max(best, (above + float(total[-1]) + below) / (v - lo + 1))
    return best


def _alpha_cheap(r, v, p):
    """``(low, high)`` with ``low ≤ α ≤ high`` for :func:`_alpha`'s α, from a few tail evaluations:
    high is the largest term ``P[B = k]``, k < v (an average never exceeds it); low is the average over
    a few windows ``[v − i, v − 1]`` reaching below the mode, scaled down by 1e-6 for rounding."""
    mode = math.floor((r + 1) * p)
    ks = sorted({min(v - 1, j) for j in (mode - 1, mode, mode + 1) if j >= 0} | {v - 1})
    high = float(np.max(stats.binom.pmf(ks, r, p)))
    low = float(stats.binom.pmf(v - 1, r, p))
    if v - 1 > mode:
        sd = math.sqrt(r * p * (1.0 - p)) + 1.0
        starts = np.unique(np.clip(np.floor(mode - sd * np.array([0.0, 0.5, 1.0, 1.5, 2.0, 3.0])), 0, v - 1))
        mass = stats.binom.cdf(v - 1, r, p) - stats.binom.cdf(starts - 1, r, p)
        upper = stats.binom.sf(starts - 1, r, p) - stats.binom.sf(v - 1, r, p)
        mass = np.where(starts > r * p, upper, mass)
        low = max(low, float(np.max(mass / (v - starts))) * (1.0 - 1e-6))
    return low, high


def p_value(m, r, v, eps, delta):
    """The bound on ``P[W ≥ v]`` for an (ε, δ)-DP training (module docstring), clipped to 1.

    Scalars ``m, r, v`` (0 ≤ v ≤ r ≤ m); ``eps`` a scalar or an array; ``delta`` a scalar."""
    eps = np.asarray(eps, dtype=float)
    p = special.expit(eps)  # e^ε/(1 + e^ε)
    f_v = stats.binom.sf(v - 1, r, p)  # P[B ≥ v]
    if v == 0 or delta == 0:
        return np.minimum(f_v, 1.0)
    alpha = np.array([_alpha(r, v, float(q)) for q in p.ravel()]).reshape(p.shape)
    return np.minimum(f_v + 2.0 * m * delta * alpha, 1.0)


def _rejected(m, r, v, delta, beta, eps):
    """Whether ε is rejected: the p-value (× (1 + margin)) is below β."""
    return bool(p_value(m, r, v, eps, delta) * (1.0 + _MARGIN) < beta)


def _last_rejected(m, r, v, delta, beta):
    """The index of the largest grid ε that is rejected, or None.  The grid is scanned from the top;
    an ε is decided from the cheap bounds of :func:`_alpha_cheap` when they suffice (``P[B ≥ v]``
    alone already at β, or the largest term already below it), else from the p-value itself."""
    p = special.expit(_GRID)
    f_v = stats.binom.sf(v - 1, r, p)
    scale = 0.0 if v == 0 else 2.0 * m * delta
    for k in np.flatnonzero(f_v * (1.0 + _MARGIN) < beta)[::-1]:
        if scale == 0.0:
            return int(k)
        low, high = _alpha_cheap(r, v, float(p[k]))
        if min(f_v[k] + scale * high, 1.0) * (1.0 + _MARGIN) < beta:
            return int(k)
        if min(f_v[k] + scale * low, 1.0) * (1.0 + _MARGIN) >= beta:
            continue
        if _rejected(m, r, v, delta, beta, _GRID[k]):
            return int(k)
    return None


def _one(m, r, v, delta, beta):
    k = _last_rejected(m, r, v, delta, beta)
    if k is None:
        return 0.0
    lo = _GRID[k]
    if k + 1 == _GRID.size:
        return float(lo)
    hi = _GRID[k + 1]
    for _ in range(40):
        mid = 0.5 * (lo + hi)
        if _rejected(m, r, v, delta, beta, mid):
            lo = mid
        else:
            hi = mid
    return float(lo)


def epsilon_lower(m, r, v, delta, confidence):
    """The one-run ε lower bound at δ, holding with probability ≥ ``confidence`` (module docstring).

    Arrays broadcast; each combination is one audit (0 ≤ v ≤ r ≤ m, m ≥ 1, δ ∈ [0, 1),
    confidence ∈ (0, 1)).  v = 0 or a p-value never below 1 − confidence gives 0."""
    m, r, v, delta, c = np.broadcast_arrays(
        *(np.asarray(x, dtype=float) for x in (m, r, v, delta, confidence))
    )
    out = np.empty(m.shape, dtype=float)
    # each audit has its own tail sum length v: one vectorised grid evaluation per audit
    for idx in np.ndindex(m.shape):
        out[idx] = _one(int(m[idx]), int(r[idx]), int(v[idx]), float(delta[idx]), 1.0 - float(c[idx]))
    return out[()] if out.ndim == 0 else out
