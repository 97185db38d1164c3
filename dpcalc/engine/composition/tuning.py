"""Private hyperparameter tuning: run a base algorithm Q a random number K of times, release the best
output (Papernot & Steinke 2022, "Hyperparameter Tuning with Renyi Differential Privacy", ICLR 2022,
arXiv:2110.03620; docs/math.md §2.10).

Q has the RDP curve ε(λ) (on a grid of orders); the tuned algorithm A's curve ε'(λ) is

* K ~ truncated negative binomial D_{η,γ} (Definition 1, η > −1; geometric η = 1, logarithmic η = 0), Thm 2:
  ε'(λ) = ε(λ) + (1+η)(1 − 1/λ̂) ε(λ̂) + (1+η) log(1/γ)/λ̂ + log(E[K])/(λ − 1), for every λ̂ >= 1;
  the free second order λ̂ is minimised over the same grid (the λ̂ terms do not depend on λ).
* K ~ Poisson(μ), Thm 6: ε'(λ) = ε(λ) + μ δ̂ + log(μ)/(λ − 1), where Q is (ε̂, δ̂)-DP with
  e^ε̂ <= 1 + 1/(λ − 1); δ̂ is Q's δ at ε̂ = log(1 + 1/(λ − 1)) from the curve (the largest ε̂ allowed,
  where δ̂ is smallest), by an RDP → (ε, δ) conversion.

Both are valid at orders λ > 1 only (∞ below).  Finally, since Rényi divergence is non-decreasing in the
order (van Erven & Harremoës 2014, Thm 3), ε'(λ) <= ε'(λ'') for λ <= λ'' on the grid: the reported curve is
the running minimum from the top (as dp_accounting's ``_compute_rdp_repeat_and_select`` does).

The truncated negative binomial (Definition 1), for η > −1 (η = 0 the logarithmic limit) and γ ∈ (0, 1):
P[K = k] = (1−γ)^k / (γ^{−η} − 1) · Π_{ℓ=0}^{k−1} (ℓ+η)/(ℓ+1) for k >= 1, i.e. the negative binomial
NB(η, γ) conditioned on K >= 1; E[K] = η(1−γ)/(γ(1−γ^η)); logarithmic: P[K = k] = (1−γ)^k/(k log(1/γ)),
E[K] = (1−γ)/(γ log(1/γ)); geometric: P[K = k] = γ(1−γ)^{k−1}, E[K] = 1/γ.  Pure numpy.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from dpcalc.engine._special import lazy_special
from dpcalc.engine.conversion import methods as conversions

#: The distributions of the number of runs K (``--tuning-runs KIND:...``).
KINDS = ("geometric", "poisson", "logarithmic", "negative-binomial")


@dataclass(frozen=True)
class TuningRuns:
    """K ~ ``kind`` with mean ``mean``; ``shape`` is η (1 for geometric, 0 for logarithmic, None for
    poisson)."""

    kind: str
    mean: float
    shape: float | None = None

    @property
    def eta(self) -> float | None:
        return {"geometric": 1.0, "logarithmic": 0.0, "poisson": None}.get(self.kind, self.shape)

    @property
    def theorem(self) -> str:
        return "Thm 6" if self.kind == "poisson" else "Thm 2"

    def gamma(self) -> float | None:
        """γ of the truncated negative binomial with this mean (None for poisson)."""
        return None if self.kind == "poisson" else tnb_gamma(self.mean, self.eta)

    def label(self) -> str:
        """E.g. ``K ~ geometric(mean 10)``, ``K ~ negative-binomial(mean 10, shape 0.5)``."""
        inner = f"mean {self.mean:g}" + (
            f", shape {self.shape:g}" if self.kind == "negative-binomial" else ""
        )
        return f"K ~ {self.kind}({inner})"

    def note(self) -> str:
        """What a row assumed."""
        return f"tuning: {self.label()}, best of K runs (Papernot & Steinke 2022 {self.theorem})"


# ------------------------------------------------------------------------------------ the distributions


def tnb_mean(gamma, eta):
    """E[K] of the truncated negative binomial D_{η,γ} (Papernot & Steinke 2022, Definition 1):
    η(1−γ)/(γ(1−γ^η)) for η > 0, (1−γ)/(γ log(1/γ)) for η = 0 (the logarithmic distribution), 1/γ at η = 1
    (geometric).  Vectorised over ``gamma`` ∈ (0, 1); computed with expm1/log1p (stable as γ → 1)."""
    g = np.asarray(gamma, float)
    log_g = np.log(g)
    with np.errstate(divide="ignore", invalid="ignore"):
        if eta == 0:
            return (1.0 - g) / (g * -log_g)
        if eta == 1:
            return 1.0 / g
        if eta < 0:  # η ∈ (−1, 0): |η|(1−γ)/(γ^{1+η}(1 − γ^{|η|})), in logs (γ^η overflows for tiny γ)
            log_m = math.log(-eta) + np.log1p(-g) - (1.0 + eta) * log_g - np.log(-np.expm1(-eta * log_g))
            return np.exp(log_m)
        return eta * (1.0 - g) / (g * -np.expm1(eta * log_g))


def tnb_gamma(mean: float, eta: float) -> float:
    """γ ∈ (0, 1) with E[K] = ``mean`` under D_{η,γ} (``mean`` > 1): E[K] decreases from ∞ (γ → 0) to 1
    (γ → 1), so bisection on log γ; the lower end of the final bracket is returned (the conservative side:
    the bound of Thm 2 grows with log(1/γ))."""
    if not mean > 1 or not math.isfinite(mean):
        raise ValueError(f"mean must be > 1 and finite, got {mean}")
    if eta == 1:
        return 1.0 / mean
    if eta < 0 and not float(tnb_mean(math.exp(-745.0), eta)) > mean:  # η near −1: E[K] ~ γ^{−(1+η)}
        raise ValueError(
            f"mean {mean:g} is out of reach for shape {eta:g} (γ would underflow): raise the shape"
        )
    lo, hi = -745.0, 0.0  # log γ
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        if float(tnb_mean(math.exp(mid), eta)) > mean:
            lo = mid
        else:
            hi = mid
        if hi - lo <= 1e-15 * max(1.0, abs(lo)):
            break
    return math.exp(lo)


def tnb_pmf(k, gamma, eta):
    """P[K = k] of D_{η,γ} (Definition 1), k >= 1: (1−γ)^k/(γ^{−η} − 1) · Π_{ℓ<k} (ℓ+η)/(ℓ+1); for η = 0
    (1−γ)^k/(k log(1/γ))."""
    k = np.asarray(k, float)
    lg = math.log(gamma)
    if eta == 0:
        return np.exp(k * math.log1p(-gamma) - np.log(k) - math.log(-lg))
    # for η ∈ (−1, 0) the product and γ^{−η} − 1 are both negative: their logs are taken of |·|
    # (gammaln is log|Γ|)
    log_prod = lazy_special.gammaln(k + eta) - lazy_special.gammaln(eta) - lazy_special.gammaln(k + 1.0)
    return np.exp(k * math.log1p(-gamma) + log_prod - math.log(abs(math.expm1(-eta * lg))))


# ------------------------------------------------------------------------------------------ the theorems


def _orders_rdp(orders, rdp):
    orders = np.asarray(orders, float)
    rdp = np.asarray(rdp, float)
    if orders.ndim != 1 or rdp.shape[-1:] != orders.shape:
        raise ValueError("rdp must have the orders along its last axis")
    if np.any(np.diff(orders) <= 0):
        raise ValueError("orders must be increasing")
    return orders, np.where(np.isnan(rdp), np.inf, rdp)


def tnb_rdp_raw(orders, rdp, eta: float, gamma: float, mean: float):
    """Papernot & Steinke 2022, Thm 2 (truncated negative binomial, η >= 0, γ ∈ (0, 1]): at each order λ > 1
    of ``orders``, ε(λ) + min over λ̂ in ``orders`` (λ̂ >= 1) of [(1+η)(1 − 1/λ̂)ε(λ̂) + (1+η)log(1/γ)/λ̂]
    + log(E[K])/(λ − 1); ∞ at orders <= 1.  ``rdp`` has the orders on its last axis (any leading shape)."""
    orders, rdp = _orders_rdp(orders, rdp)
    usable = orders >= 1
    with np.errstate(invalid="ignore", over="ignore"):
        hat = (1.0 + eta) * ((1.0 - 1.0 / orders) * rdp + math.log(1.0 / gamma) / orders)
    hat = np.where(usable, hat, np.inf)
    c = np.min(hat, axis=-1, keepdims=True)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        out = rdp + c + math.log(mean) / (orders - 1.0)
    return np.where(orders > 1, out, np.inf)


def poisson_eps_hat(orders):
    """ε̂ = log(1 + 1/(λ − 1)) of Thm 6 (the largest ε̂ with e^ε̂ <= 1 + 1/(λ − 1)); ∞ at λ <= 1."""
    orders = np.asarray(orders, float)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(orders > 1, np.log1p(1.0 / (orders - 1.0)), np.inf)


def poisson_rdp_raw(orders, rdp, mu: float, delta_hat):
    """Papernot & Steinke 2022, Thm 6 (K ~ Poisson(μ)): ε(λ) + μ δ̂ + log(μ)/(λ − 1) at each order λ > 1, where
    ``delta_hat`` (same shape as ``rdp``) is a δ̂ at which Q is (ε̂, δ̂)-DP with ε̂ = :func:`poisson_eps_hat`;
    ∞ at orders <= 1."""
    orders, rdp = _orders_rdp(orders, rdp)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        out = rdp + mu * np.asarray(delta_hat, float) + math.log(mu) / (orders - 1.0)
    return np.where(orders > 1, out, np.inf)


def poisson_delta_hat(orders, rdp, method: str = "optimal"):
    """δ̂ of Thm 6 at every order: Q's δ at ε̂ = log(1 + 1/(λ − 1)) from its whole curve ``rdp`` (orders on the
    last axis) by the conversion ``method`` (:func:`dpcalc.engine.conversion.methods.delta_from_curve`, a
    minimum over the curve's orders); 1 at orders <= 1."""
    orders, rdp = _orders_rdp(orders, rdp)
    eh = poisson_eps_hat(orders)
    finite = np.isfinite(eh)
    out = np.ones(rdp.shape)
    if np.any(finite):
        b = conversions.delta_from_curve(orders, rdp[..., None, :], eh[finite], method)
        out[..., finite] = np.minimum(np.asarray(b.value, float), 1.0)
    return out


def monotone(rdp):
    """The running minimum from the highest order down: an (λ'', ε)-RDP guarantee implies (λ, ε)-RDP for
    every λ <= λ'' (Rényi divergence is non-decreasing in the order, van Erven & Harremoës 2014, Thm 3)."""
    rdp = np.asarray(rdp, float)
    return np.flip(np.minimum.accumulate(np.flip(rdp, axis=-1), axis=-1), axis=-1)


def tuned_rdp(orders, rdp, runs: TuningRuns, conversion: str = "optimal"):
    """The RDP curve of the tuned algorithm A (best of K runs of Q, K ~ ``runs``) on ``orders``, from Q's curve
    ``rdp`` (orders on the last axis): Thm 2 (geometric, logarithmic, negative-binomial) or Thm 6 (poisson,
    with δ̂ by ``conversion``), then :func:`monotone`."""
    if runs.kind == "poisson":
        dh = poisson_delta_hat(orders, rdp, conversion)
        out = poisson_rdp_raw(orders, rdp, runs.mean, dh)
    else:
        out = tnb_rdp_raw(orders, rdp, runs.eta, runs.gamma(), runs.mean)
    return monotone(out)
