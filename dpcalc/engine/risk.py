"""Membership-inference risk in an attacker's terms, from a privacy profile δ(ε) (docs/math.md §10.4).

An attacker sees the output and decides whether a target example was in the data (member: the output is
drawn from P; non-member: from Q).  Every quantity below is a function of the hockey-stick divergences
H_γ(P‖Q) = sup_S P(S) − γ·Q(S) of the pair, i.e. of its privacy profile δ(ε) = H_{e^ε} (the larger of the
two directions, which every dpcalc accountant reports; Balle et al. 2018, arXiv:1807.01647, Thm 1; Dong, Roth
& Su 2022, arXiv:1905.02383, Prop. 2.12):

* **advantage** — the largest TPR − FPR of any test (the membership advantage of Yeom et al. 2018,
  arXiv:1709.01604, Def. 4): sup_S P(S) − Q(S) = δ(0), the total variation distance of the pair.  For μ-GDP it is
  2Φ(μ/2) − 1 exactly; for (ε, δ)-DP at most (e^ε − 1 + 2δ)/(e^ε + 1) (:func:`dp_delta` at 0).
* **success at prior π** — the largest probability that a Bayes-optimal attacker, told that the target is a
  member with prior probability π, guesses right: sup_S π·P(S) + (1 − π)·(1 − Q(S)).  For π ≤ 1/2 it is
  (1 − π) + π·H_{(1−π)/π}(P‖Q); for π > 1/2, swapping the roles of S and its complement,
  π + (1 − π)·H_{π/(1−π)}(Q‖P).  So with the profile: success(π) ≤ max(π, 1 − π) + min(π, 1 − π)·δ(|logit π|),
  with equality where δ is the pair's own profile (Kulynych et al. 2024, arXiv:2407.02191, §3: the risks as
  functions of the trade-off curve).  max(π, 1 − π) is the success of guessing without looking.

Each function is monotone non-decreasing in δ, so an upper (lower) end of a δ bracket gives an upper (lower)
end of the risk; the arithmetic is rounded outward by two ulps (:func:`outward`).
"""

from __future__ import annotations

import numpy as np

from dpcalc.engine._special import lazy_special as special

#: The most priors one question may ask (each is one more point of the profile).
MAX_PRIORS = 100


def check_priors(priors) -> np.ndarray:
    """Priors as a float array in (0, 1) (the checks the command line made, again for the library)."""
    p = np.atleast_1d(np.asarray(priors, dtype=float))
    if p.ndim != 1 or not np.all((p > 0) & (p < 1)):
        raise ValueError("prior: each must be in (0, 1)")
    return p


def profile_epsilons(priors=None) -> np.ndarray:
    """The ε at which the profile is read: 0 (the advantage) and |logit π| for each prior."""
    if priors is None:
        return np.zeros(1)
    p = check_priors(priors)
    return np.concatenate([[0.0], np.abs(np.log(p) - np.log1p(-p))])


def outward(x, up: bool) -> np.ndarray:
    """``x`` moved two ulps up (``up``) or down, and kept in [0, 1]: a bound computed in floating point
    stays a bound."""
    x = np.asarray(x, dtype=float)
    d = np.inf if up else -np.inf
    return np.clip(np.nextafter(np.nextafter(x, d), d), 0.0, 1.0)


def advantage(delta0, up: bool = True) -> np.ndarray:
    """The advantage from δ(0) (an end of a bracket of it; ``up``: the upper end)."""
    return outward(np.asarray(delta0, dtype=float), up)


def success(priors, delta_at_logit, up: bool | None = True) -> np.ndarray:
    """The Bayes-optimal attacker's success at each prior from δ(|logit π|): an end of its bracket, rounded
    outward (``up``: the upper end), or with ``up=None`` an estimate from an estimate of δ (not rounded)."""
    p = check_priors(priors)
    d = np.clip(np.asarray(delta_at_logit, dtype=float), 0.0, 1.0)
    value = np.maximum(p, 1 - p) + np.minimum(p, 1 - p) * d
    return value if up is None else outward(value, up)


def gaussian_delta(eps, mu) -> np.ndarray:
    """A lower bound on the exact profile of μ-GDP, δ(ε) = Φ(−ε/μ + μ/2) − e^ε·Φ(−ε/μ − μ/2) (Dong, Roth & Su
    2022, Cor. 2.13; Balle & Wang 2018, Thm 8): each term's rounding bounded (Φ to 8 ulps, the exponential to
    64 ulps plus its argument's), the first rounded down and the second up, so that the difference never
    passes the true δ (the upper end is :func:`dpcalc.engine.mechanisms.gaussian_exact.delta_gaussian`)."""
    eps = np.asarray(eps, dtype=float)
    mu = float(mu)
    if mu == 0:
        return np.zeros_like(eps)
    u = float(np.finfo(float).eps)
    a = special.ndtr(-eps / mu + mu / 2) * (1 - 8 * u)
    arg = eps + special.log_ndtr(-eps / mu - mu / 2)
    b = np.exp(arg) * (1 + (64 + np.abs(arg)) * u)
    return np.clip(a - b, 0.0, 1.0)


def gaussian_advantage(mu) -> float:
    """2Φ(μ/2) − 1, the advantage of μ-GDP exactly (as erf(μ/(2√2)): no cancellation for small μ)."""
    return float(special.erf(float(mu) / (2.0 * np.sqrt(2.0))))


def dp_delta(eps, eps0: float, delta0: float) -> np.ndarray:
    """The profile of (ε₀, δ₀)-DP itself (the tightest pair: Kairouz et al. 2015, arXiv:1311.0776, Thm 2.1's
    generalised randomized response): δ(ε) = 1 − (1 − δ₀)(1 + e^ε)/(1 + e^ε₀) for ε ≤ ε₀, δ₀ above."""
    eps = np.asarray(eps, dtype=float)
    inside = 1.0 - (1.0 - delta0) * (1.0 + np.exp(np.minimum(eps, eps0))) / (1.0 + np.exp(eps0))
    return np.where(eps >= eps0, delta0, np.clip(inside, delta0, 1.0))


def dp_tradeoff(fpr, eps0: float, delta0: float) -> np.ndarray:
    """The (ε₀, δ₀)-DP trade-off curve β(α) = max(0, 1 − δ₀ − e^ε₀·α, e^−ε₀·(1 − δ₀ − α)) (Dong, Roth & Su
    2022, Prop. 2.5; Wasserman & Zhou 2010): the smallest false-negative rate at false-positive rate α."""
    a = np.asarray(fpr, dtype=float)
    return np.maximum(0.0, np.maximum(1 - delta0 - np.exp(eps0) * a, np.exp(-eps0) * (1 - delta0 - a)))
