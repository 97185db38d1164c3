"""The discrete Laplace (two-sided geometric) mechanism: f(D) + Y, P(Y = k) ∝ e^{−|k|/b} on the integers,
for an integer-valued query of ℓ₁-sensitivity Δ (a whole number; docs/math.md §2.8).

Spec ``discrete-laplace:scale=B[,sensitivity=D]`` (``b``, ``sens``; D a whole number >= 1, default 1).
With u = 1/b and r = e^{−u}, P(k) = c·r^{|k|}, c = (1 − r)/(1 + r) = tanh(u/2) (Ghosh, Roughgarden &
Sundararajan 2009, "Universally utility-maximizing privacy mechanisms", STOC, for the mechanism).

Privacy loss of P = N(0) vs Q = N(Δ) (P centred at 0, Q at Δ): ``L(k) = (|k − Δ| − |k|)/b``, so
* k <= 0: L = Δu with mass 1/(1 + r);
* 0 < k < Δ: L = (Δ − 2k)u with mass c·r^k;
* k >= Δ: L = −Δu with mass r^Δ/(1 + r).
Atoms only, symmetric (the pair Q vs P is its mirror image).  Exact pure DP: ε = Δ/b.

Rényi divergence (exact, the same three regions summed in closed form, docs/math.md §2.8)::

    e^{(α−1)ζ(α)} = (e^{(α−1)Δu} + e^{−αΔu})/(1 + r) + c·e^{(α−1)Δu}·Σ_{k=1}^{Δ−1} e^{−(2α−1)ku}

α = 1: ``ζ = (Δ − 2r(1 − r^Δ)/(1 − r²))·u`` (KL, from E|Y − Δ| − E|Y| = Σ_{j<Δ}(2F(j) − 1)); α = ∞: Δu.
"""

from __future__ import annotations

import math

import numpy as np

from dpcalc.engine.mechanisms.base import Key, check_alphas, up
from dpcalc.engine.mechanisms.laplace import Laplace
from dpcalc.engine.mechanisms.loss_models import LossModel
from dpcalc.errors import InputError

#: The largest sensitivity (whole numbers up to 2^53 are exact doubles).
MAX_SENSITIVITY = 2**53
#: Atoms whose mass is below this are merged (pessimistically) into one.
_TINY = 1e-300
#: The most atoms the PLD holds.
MAX_ATOMS = 2_000_001


def _log_geom(x, n):
    """``log Σ_{k=1}^{n} e^{−kx}`` for x > 0 and whole n >= 1 (array x): log(e^{−x}(1 − e^{−nx})/(1 − e^{−x}))."""
    with np.errstate(divide="ignore", over="ignore", invalid="ignore"):
        return -x + np.log(-np.expm1(-n * x)) - np.log(-np.expm1(-x))


def rdp_discrete_laplace(scale, sensitivity, alphas):
    """The exact Rényi divergence D_α(N(0)‖N(Δ)) of discrete Laplace noise of scale b (module docstring),
    raised by a few ulps of its terms, capped at the pure-DP level Δ/b and floored at 0."""
    a = check_alphas(alphas)
    d = int(sensitivity)
    u = 1.0 / float(scale)
    eps0 = d / float(scale)
    r = math.exp(-u)
    log1pr = math.log1p(r)
    log_c = math.log(-math.expm1(-u)) - log1pr
    mid = (a > 1) & np.isfinite(a)
    am = np.where(mid, a, 2.0)
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        t1 = (am - 1) * eps0 - log1pr
        t2 = -am * eps0 - log1pr
        num = np.logaddexp(t1, t2)
        size = 1.0 + np.abs(t1) + np.abs(t2)
        if d > 1:
            t3 = log_c + (am - 1) * eps0 + _log_geom((2 * am - 1) * u, d - 1)
            num = np.logaddexp(num, t3)
            size = size + np.abs(t3)
        z = up(num, size) / (am - 1)
    # α = 1: KL = (Δ − 2r(1 − r^Δ)/(1 − r²))·u; 2r(1 − r^Δ)/(1 − r²) = 2r·(−expm1(−Δu))/(−expm1(−2u))
    frac = 2.0 * r * (-math.expm1(-eps0)) / (-math.expm1(-2.0 * u))
    kl = max((d - frac) * u, 0.0)
    kl = float(up(kl, 4.0 * eps0))  # cancellation of Δ against frac: a few ulps of Δu
    out = np.where(mid, z, np.where(a == 1, kl, eps0))
    return np.maximum(np.minimum(out, eps0), 0.0)


def loss_model(scale: float, sensitivity: int = 1) -> LossModel:
    """The privacy loss of discrete Laplace noise, N(0) vs N(Δ): Δ + 1 atoms (module docstring).  Atoms
    0 < k < Δ whose mass c·r^k is below 1e-300 (and the atom at −Δ/b with them) are merged into one atom
    at the largest of their losses, with their exact total mass r^{K+1}/(1 + r) — pessimistic."""
    scale = float(scale)
    if not (scale > 0 and math.isfinite(scale)):
        raise InputError(f"scale: must be a finite number > 0, got {scale}")
    if not (float(sensitivity).is_integer() and 1 <= sensitivity <= MAX_SENSITIVITY):
        raise InputError(f"sensitivity: must be a whole number >= 1, got {sensitivity}")
    d = int(sensitivity)
    u = 1.0 / scale
    eps0 = d / float(scale)
    r = math.exp(-u)
    log1pr = math.log1p(r)
    log_c = math.log(-math.expm1(-u)) - log1pr
    # interior atoms k = 1 .. kmax (kmax <= Δ − 1) with c·r^k >= 1e-300
    kmax = d - 1
    lim = (log_c - math.log(_TINY)) / u  # c·r^k >= 1e-300  <=>  k <= lim
    if lim < kmax:
        kmax = max(int(math.floor(lim)), 0)
    if kmax + 2 > MAX_ATOMS:
        raise InputError(
            f"scale={scale:g}, sensitivity={d}: the exact discrete Laplace PLD would need {kmax + 2:,} atoms "
            f"(at most {MAX_ATOMS:,}); use --method rdp or optimal"
        )
    k = np.arange(1, kmax + 1, dtype=float)
    loc = [np.array([eps0]), (d - 2.0 * k) / scale]
    mass = [np.array([1.0 / (1.0 + r)]), np.exp(log_c - k * u)]
    if kmax == d - 1:
        loc.append(np.array([-eps0]))
        mass.append(np.array([math.exp(-eps0 - log1pr)]))
    else:  # k >= kmax + 1 (including k >= Δ): total mass r^{kmax+1}/(1 + r), at the loss of k = kmax + 1
        loc.append(np.array([(d - 2.0 * (kmax + 1)) / scale]))
        mass.append(np.array([math.exp(-(kmax + 1) * u - log1pr)]))
    locs, masses = np.concatenate(loc), np.concatenate(mass)
    return LossModel(
        name=f"discrete-laplace(b={scale:g},sensitivity={d})",
        atoms_loc=locs,
        atoms_mass=masses,
        loss_min=float(np.min(locs)),
        loss_max=eps0,
    )


def _whole_sensitivity(params, given, fail):
    v = params["sensitivity"]
    if not (float(v).is_integer() and 1 <= v <= MAX_SENSITIVITY):
        fail(f"bad value sensitivity={given.get('sensitivity', v)!r} (must be a whole number in [1, 2^53])")
    return int(v)


class DiscreteLaplace(Laplace):
    kind = "discrete-laplace"
    keys = (Key("scale", "pos", aliases=("b",)), Key("sensitivity", "pos", 1.0, aliases=("sens",)))
    order = 22

    def complete(self, params, given, fail):
        params["sensitivity"] = _whole_sensitivity(params, given, fail)
        return params

    def rdp(self, params, alphas):
        return rdp_discrete_laplace(params["scale"], params["sensitivity"], alphas)

    def pld_pair(self, params):
        return loss_model(params["scale"], params.get("sensitivity", 1)), None

    # per_release (Δ/b, 0) and max_loss (Δ/b exactly) are those of the continuous Laplace: inherited


MECHANISM = DiscreteLaplace()
