"""Composition theorems for (ε, δ)-DP mechanisms (docs/math.md §2.1–§2.3).

* :func:`basic` — (Σε_i, Σδ_i) (Dwork–Roth 2014, Thm 3.16; docs/math.md §2.1).
* :func:`advanced_eps` / :func:`advanced_delta` — Dwork–Rothblum–Vadhan 2010 (Dwork–Roth 2014, Thm 3.20),
  in the heterogeneous form of Lécuyer §2.1 (docs/math.md §2.2), reporting min(basic, advanced).
* :func:`kov_log_delta` / :func:`kov_eps` / :func:`kov_delta` — the exact (optimal) homogeneous composition of
  Kairouz–Oh–Viswanath 2015 (docs/math.md §2.3), evaluated in :mod:`dpcalc.engine.composition.kov` and
  re-exported here.

Mechanisms are given as arrays ``eps``, ``delta``, ``counts`` (one entry per mechanism kind, ``counts[j]``
copies of it); targets (``delta_target`` / ``eps_target``) are arrays and results have their shape.
Every value is an upper bound, rounded to the safe side; ``inf`` (resp. δ = 1) where a theorem
certifies nothing at the target.
"""

from __future__ import annotations

import math
from decimal import Decimal
from fractions import Fraction

import numpy as np

from dpcalc.engine._numerics import next_up
from dpcalc.errors import InputError

_EPS = float(np.finfo(float).eps)


def _mechs(eps, delta, counts):
    eps = np.atleast_1d(np.asarray(eps, dtype=float))
    delta = np.atleast_1d(np.asarray(delta, dtype=float))
    counts = np.atleast_1d(np.asarray(counts, dtype=float))
    if np.any(~np.isfinite(eps)) or np.any(eps < 0):
        raise InputError("epsilon: each mechanism's ε must be a finite number >= 0")
    if np.any(np.isnan(delta)) or np.any(delta < 0) or np.any(delta >= 1):
        raise InputError("delta: each mechanism's δ must lie in [0, 1)")
    if np.any(counts < 1):
        raise InputError("count: must be >= 1")
    return np.broadcast_arrays(eps, delta, counts)


def _fsum_up(values) -> float:
    s = math.fsum(float(v) for v in values)
    return s if s == 0 else float(next_up(s, 2))


def basic(eps, delta, counts=1):
    """Basic composition (docs/math.md §2.1): ``(Σ k_j ε_j, Σ k_j δ_j)``, both rounded up (δ capped at 1)."""
    eps, delta, counts = _mechs(eps, delta, counts)
    return _fsum_up(counts * eps), min(1.0, _fsum_up(counts * delta))


def exact_sum(values, counts=1):
    """``Σ k_j x_j`` exactly, as a :class:`fractions.Fraction`, reading each ``x_j`` as the decimal it
    was written as (the shortest decimal that gives its double, e.g. 0.1 for the double nearest 0.1), so
    that a boundary that holds exactly in the user's decimals holds here (1 + 2 <= 3; 0.1 + 0.2 <= 0.3)."""
    x = np.atleast_1d(np.asarray(values, dtype=float))
    k = np.broadcast_to(np.asarray(counts, dtype=float), x.shape)
    return sum(
        (Fraction(Decimal(repr(float(c)))) * Fraction(Decimal(repr(float(v)))) for v, c in zip(x, k)),
        Fraction(0),
    )


def at_least(target: float, exact) -> bool:
    """Whether the decimal ``target`` (read as in :func:`exact_sum`) is at least the exact value ``exact``."""
    return math.isfinite(target) and Fraction(Decimal(repr(float(target)))) >= exact


def _advanced_sums(eps, counts):
    """``(m, n2, S1)``: ``S2 = Σ k ε² = m²·n2`` with ``m = max ε`` (scaled: no underflow for tiny ε) and
    ``S1 = Σ k ε (e^ε − 1)`` (expm1), rounded up."""
    m = float(np.max(eps)) if eps.size else 0.0
    if m == 0:
        return 0.0, 0.0, 0.0
    n2 = _fsum_up(counts * (eps / m) ** 2)
    with np.errstate(over="ignore"):
        s1 = _fsum_up(counts * eps * np.expm1(eps))
    return m, n2, s1


def drv_eps(eps, counts, delta_hat):
    """The Dwork–Rothblum–Vadhan ε alone: ``sqrt(2 log(1/δ̂) Σ k ε²) + Σ k ε (e^ε − 1)`` (docs/math.md §2.2).

    Dwork–Roth 2014 Thm 3.20 in Lécuyer's heterogeneous form; rounded up; ``inf`` where ``δ̂ = 0``.  The
    total δ is ``δ̂ + Σ k δ_i``.  ``delta_hat`` is an array; the result has its shape.
    """
    eps, _, counts = _mechs(eps, 0.0, counts)
    d = np.asarray(delta_hat, dtype=float)
    m, n2, s1 = _advanced_sums(eps, counts)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        root = m * np.sqrt(2.0 * -np.log(np.where(d > 0, d, 1.0)) * n2)
        out = np.where(d > 0, next_up(root + s1, 4), np.inf)
    return out[()] if out.ndim == 0 else out


def advanced_eps(eps, delta, counts, delta_target):
    """ε of heterogeneous advanced composition at total δ = ``delta_target``, min(basic, DRV).

    Dwork–Rothblum–Vadhan 2010 / Dwork–Roth 2014 Thm 3.20 as stated by Lécuyer §2.1 (docs/math.md §2.2):
    ``ε_g = sqrt(2 log(1/δ̂) Σ ε_i²) + Σ ε_i (e^{ε_i} − 1)`` with ``δ̂ = delta_target − Σ δ_i``.  Basic
    composition applies where ``delta_target ≥ Σ δ_i``; the minimum of the two is reported.  ``inf``
    where ``delta_target ≤ Σ δ_i`` (neither certifies anything).  With all ε_i equal this is the
    homogeneous ``sqrt(2k log(1/δ')) ε + k ε (e^ε − 1)``.
    """
    eps, delta, counts = _mechs(eps, delta, counts)
    t = np.asarray(delta_target, dtype=float)
    e_basic, d_basic = basic(eps, delta, counts)
    with np.errstate(invalid="ignore"):
        dhat = t - _fsum_up(counts * delta)
        dhat = np.where(dhat > 0, dhat * (1 - 4 * _EPS), 0.0)
    drv = drv_eps(eps, counts, dhat)
    out = np.where(t >= d_basic, np.minimum(drv, e_basic), drv)
    return out[()] if out.ndim == 0 else out


def advanced_delta(eps, delta, counts, eps_target):
    """δ of heterogeneous advanced composition at total ε = ``eps_target``, min(basic, DRV) (docs/math.md §2.2).

    Inverting the DRV bound: ``δ̂ = exp(−(ε − S1)²/(2 S2))`` for ε > S1, where ``S1 = Σ ε_i(e^{ε_i} − 1)``
    and ``S2 = Σ ε_i²``; total ``δ̂ + Σ δ_i``.  Basic composition gives ``Σ δ_i`` for ε ≥ Σ ε_i.
    1 (no guarantee) where neither applies.
    """
    eps, delta, counts = _mechs(eps, delta, counts)
    t = np.asarray(eps_target, dtype=float)
    e_basic, d_basic = basic(eps, delta, counts)
    m, n2, s1 = _advanced_sums(eps, counts)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        x = np.maximum(t * (1 - 4 * _EPS) - s1, 0.0)
        if m > 0:
            xm = x / m
            dhat = np.exp(-(xm * xm) / (2.0 * n2) * (1 - 8 * _EPS))
        else:
            dhat = np.where(x > 0, 0.0, 1.0)
        drv = np.where(t > s1, np.minimum(next_up(dhat + d_basic, 4), 1.0), 1.0)
    out = np.where(t >= e_basic, np.minimum(drv, d_basic), drv)
    return out[()] if out.ndim == 0 else out


# the exact homogeneous composition lives in its own module (its numerics are long)
from dpcalc.engine.composition.kov import (  # noqa: E402,F401
    KOV_MAX_COUNT,
    _kov_log_pmf,
    _kov_split,
    kov_delta,
    kov_eps,
    kov_log_delta,
)
