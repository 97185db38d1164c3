"""Group privacy: what a mechanism promises a person who contributed K examples (docs/math.md §2.15).

Two datasets that differ in one person's K examples are joined by a chain of K neighbouring datasets (K
additions or removals under add/remove-one, K replacements under replace-one), so every guarantee of
one example yields one for the person; the generic routes here hold for any mechanism:

* :func:`rdp_group` — the RDP group property (Mironov 2017, "Rényi differential privacy",
  arXiv:1702.07476, Prop. 2): if a mechanism is (α, ε)-RDP and α >= 2^(c+1), it is (α/2^c, 3^c·ε)-RDP for
  datasets 2^c neighbouring steps apart.  K is rounded up to the power of two 2^c >= K (a group of K is a
  group of 2^c whose last steps change nothing).  Order β >= 2 of the person's curve reads the example's
  curve at 2^c·β; an order below 2 takes the value at 2 (Rényi divergence is non-decreasing in the order:
  van Erven & Harremoës 2014, Thm 3).  Where the example's curve is infinite at 2^c·β, so is the person's.
* :func:`group_dp` — the (ε, δ) group conversion (Vadhan 2017, "The complexity of differential privacy",
  Lemma 2.2): (ε, δ)-DP implies (Kε, K·e^((K−1)ε)·δ)-DP for groups of K; with δ = 0, group privacy of pure DP
  (Dwork & Roth 2014, Thm 2.2): Kε.  An upper bound (tight for some mechanisms, loose for most).

:class:`Grouped` wraps a kind for a person with K examples by these routes alone (the kinds without a
tighter person-level form: subsampled kinds other than the Poisson-subsampled Gaussian, tree aggregation,
random allocation, Rényi curves read from a file, the mixture of Gaussians); the catalogue answers a spec
through it when its params hold ``group_size`` (:func:`dpcalc.engine.mechanisms.catalogue.mechanism`).
The tighter per-kind forms (the Gaussian with sensitivity KΔ, the mixture of Ganesh 2024, ...) are specs of
the existing kinds, made by :mod:`dpcalc.input.group`.
"""

from __future__ import annotations

import math

import numpy as np

from dpcalc.engine.mechanisms.base import Mechanism, check_alphas, decimal, up
from dpcalc.errors import InputError
from dpcalc.lazy import lazy_module

fractions = lazy_module("fractions")  # exact group sizes times bounds, only when a group is asked for
#: what the person-level forms of (ε, δ) and pure DP use, loaded when one is asked for
pure_dp = lazy_module("dpcalc.engine.mechanisms.approx_dp")
loss_models = lazy_module("dpcalc.engine.mechanisms.loss_models")


#: The params key that asks the catalogue for a kind's person-level answers (:class:`Grouped`).
GROUP_KEY = "group_size"
_U = float(np.finfo(float).eps)


def doublings(k: int) -> int:
    """``c``: the smallest ``c`` with ``2^c >= k`` (the RDP group property's group of 2^c)."""
    return max(0, (int(k) - 1).bit_length())


def exact_up(x: fractions.Fraction) -> float:
    """The smallest double ``d >= x`` whose shortest decimal (the number a spec reads back) is also ``>= x``."""
    try:
        d = float(x)
    except OverflowError:
        return math.inf
    while math.isfinite(d) and (d < x or decimal(d) < x):
        d = float(np.nextafter(d, math.inf))
    return d


def scaled_up(k: int, x: float) -> float:
    """``k·x`` for a value ``x`` as written (its shortest decimal), rounded up (:func:`exact_up`)."""
    return exact_up(int(k) * decimal(x))


def rdp_group(curve, k: int, alphas) -> np.ndarray:
    """The Rényi curve for datasets ``k`` examples apart at the orders ``alphas``, from ``curve(orders)``, the
    curve of neighbours (module docstring: Mironov 2017, Prop. 2, with 2^c >= k)."""
    a = check_alphas(alphas)
    c = doublings(k)
    if c == 0:
        return np.asarray(curve(a), dtype=float)
    b = np.maximum(a, 2.0)  # β < 2: the value at 2 (the proposition gives orders α/2^c >= 2 only)
    u, inv = np.unique(b, return_inverse=True)
    with np.errstate(over="ignore"):
        base = np.asarray(curve(u * float(2**c)), dtype=float).reshape(u.shape)
        z = base * float(3**c)
    return up(z, z)[inv].reshape(a.shape)


def group_dp(eps: float, delta: float, k: int) -> tuple[float, float]:
    """``(kε, k·e^((k−1)ε)·δ)`` rounded up (Vadhan 2017, Lemma 2.2); the δ may be 1 or more (no guarantee)."""
    e = scaled_up(k, eps)
    if delta == 0:
        return e, 0.0
    with np.errstate(over="ignore"):
        log_d = math.log(k) + (k - 1) * float(eps) + math.log(float(delta))
        log_d += (
            16.0 * _U * (abs(math.log(k)) + abs((k - 1) * float(eps)) + abs(math.log(float(delta))) + 1.0)
        )
    return e, (math.inf if log_d > 700.0 else float(up(math.exp(log_d), math.exp(log_d))))


def log_group_delta(k: int, eps, delta) -> np.ndarray:
    """An upper bound on ``log(K·e^((K−1)ε)·δ)``, the δ of the group conversion (Vadhan 2017, Lemma 2.2), on
    arrays (``-inf`` at δ = 0)."""
    eps, delta = np.broadcast_arrays(np.asarray(eps, float), np.asarray(delta, float))
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        terms = (math.log(k), (k - 1) * eps, np.log(delta))
        out = terms[0] + terms[1] + terms[2]
        out = out + 16.0 * _U * (abs(terms[0]) + np.abs(terms[1]) + np.abs(terms[2]) + 1.0)
    return np.where(delta > 0, out, -np.inf)


class Grouped(Mechanism):
    """A kind for a person with ``K = params[GROUP_KEY]`` examples by the generic routes (module docstring):
    its Rényi curve by the RDP group property (and, where the kind's loss is bounded by ε, the smaller
    curve of Kε-DP at each order); its per-release (ε, δ) by the group conversion; its privacy loss pair
    that of (Kε, 0)-DP where the loss is bounded, of the group conversion's (ε, δ) where the kind has
    one, else none."""

    def __init__(self, base: Mechanism):
        self.base = base
        self.kind = base.kind
        self.keys = base.keys

    @staticmethod
    def split(params: dict):
        """``(K, the kind's own params)``."""
        return int(params[GROUP_KEY]), {k: v for k, v in params.items() if k != GROUP_KEY}

    def rdp_refusal(self, params):
        return self.base.rdp_refusal(self.split(params)[1])

    def _pure(self, k, bp):
        """``k`` times the kind's largest loss (its pure ε), rounded up, or ``None`` where it is unbounded."""
        bounds, _ = self.base.max_loss(bp)
        return None if bounds is None else exact_up(k * bounds[1])

    def rdp(self, params, alphas):
        k, bp = self.split(params)
        a = check_alphas(alphas)
        z = rdp_group(lambda o: self.base.rdp(bp, o), k, a)
        pure = self._pure(k, bp)
        if pure is not None:
            z = np.minimum(z, pure_dp.rdp_pure_dp(pure, a))
        return z

    def per_release(self, params):
        k, bp = self.split(params)
        pair, reason = self.base.per_release(bp)
        if pair is None:
            return None, reason
        e, d = group_dp(pair[0], pair[1], k)
        if not d < 1.0:
            return None, (
                f"{self.kind}'s per-release ({pair[0]!r}, {pair[1]!r}) gives δ >= 1 for a group of {k} "
                "(Vadhan 2017, Lemma 2.2): no person-level (epsilon, delta)"
            )
        return (e, d), None

    def max_loss(self, params):
        k, bp = self.split(params)
        bounds, reason = self.base.max_loss(bp)
        if bounds is None:
            return None, reason
        # an upper bound only: the lower end claims nothing
        return (fractions.Fraction(0), k * bounds[1]), None

    def pld_pair(self, params):
        k, bp = self.split(params)
        pure = self._pure(k, bp)
        if pure is not None:
            # (Kε, 0)-DP: dominated by randomized response of Kε
            return loss_models.approx_dp(pure, 0.0), None
        pair, reason = self.per_release(params)
        if pair is not None:
            return loss_models.approx_dp(pair[0], pair[1]), None
        raise InputError(
            f"{self.kind} has no person-level privacy loss distribution (for a group of {k}: only the RDP "
            "group route, --method rdp)"
        )

    def relation(self, params):
        return self.base.relation(self.split(params)[1])
