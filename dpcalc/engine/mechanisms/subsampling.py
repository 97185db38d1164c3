"""Subsampling of any mechanism: ``KIND:...,q=Q[,sampling=poisson|fixed-size]`` (docs/math.md §2.11).

Every kind that does not declare its own ``q`` (``subsampled-gaussian`` does) takes the keys of
:data:`dpcalc.engine.mechanisms.base.SUBSAMPLING_KEYS`; a spec that gives ``q`` is answered by
:class:`Subsampled`, which wraps the kind's :class:`~dpcalc.engine.mechanisms.base.Mechanism`:

* ``sampling=poisson`` (each record kept independently with probability q) fixes add/remove-one
  neighbours; ``sampling=fixed-size`` (a uniformly random subset of size m = qn, n public) fixes
  replace-one neighbours.  The base mechanism's sensitivity must be the one of that relation.
* Rényi DP (:func:`rdp_amplified`): the smaller of the convexity bound
  ``e^{(α−1)ε'(α)} <= 1 + q(e^{(α−1)ε(α)} − 1)`` (all orders; joint convexity of ``∫p^α r^{1−α}``) and,
  at integer orders up to :data:`THEOREM_MAX_ORDER`, Zhu & Wang 2019 ("Poisson subsampled Rényi
  differential privacy", ICML 2019) Thm 6 (Poisson)
  or Wang, Balle & Kasiviswanathan 2019 (arXiv:1808.00087) Thm 9 (fixed-size), both using the base
  curve at orders 2..α; fractional orders interpolate (α−1)ε' linearly between ⌊α⌋ and ⌈α⌉ (it is convex
  in α: WBK 2019 Cor. 10).  The Gaussian keeps its own exact curves (Mironov, Talwar & Zhang 2019 for
  Poisson; WBK's Gaussian bound for fixed-size) through :meth:`Mechanism.subsampled_rdp`.
* Privacy loss distribution: Poisson only, see :mod:`dpcalc.engine.mechanisms.subsampling_pld`.
* Per release and at δ = 0: ``(ε, δ) -> (log(1 + q(e^ε − 1)), qδ)`` (Balle, Barthe & Gaboardi 2018,
  "Privacy amplification by subsampling", arXiv:1807.01647, Thm 8 for Poisson sampling under
  add/remove, Thm 9 for sampling without replacement under replace-one).
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np

from dpcalc.engine._special import _lgamma_int
from dpcalc.engine.mechanisms.base import Mechanism, check_alphas, up
from dpcalc.engine.mechanisms.subsampling_pld import subsampled_model
from dpcalc.errors import InputError

#: Integer orders up to this use the Zhu–Wang / WBK sums (O(α) terms each); above, the convexity bound.
THEOREM_MAX_ORDER = 1024
_EPS = float(np.finfo(float).eps)
_LOG3 = math.log(3.0)
_LOG2 = math.log(2.0)


def amplify_eps(eps: float, q: float) -> float:
    """``log(1 + q(e^ε − 1))`` in doubles (not rounded; see :func:`amplified_dp` for the safe side)."""
    if q == 1.0 or eps == 0.0:
        return float(eps)
    if math.isinf(eps):
        return math.inf
    if eps < 700.0:
        return math.log1p(q * math.expm1(eps))
    return float(np.logaddexp(math.log1p(-q), math.log(q) + eps))


def amplified_dp(eps: float, delta: float, q: float) -> tuple[float, float]:
    """``(log(1 + q(e^ε − 1)), qδ)`` rounded up (Balle, Barthe & Gaboardi 2018, arXiv:1807.01647, Thm 8 and Thm 9)."""
    if q == 1.0:
        return float(eps), float(delta)
    e = amplify_eps(float(eps), q)
    return float(up(e, e)), float(up(q * delta, q * delta))


def _convexity_bound(q: float, base: np.ndarray, a: np.ndarray) -> np.ndarray:
    """``log(1 + q(e^{(α−1)ε(α)} − 1))/(α−1)``; ``qε(1)`` at α = 1; ``log(1 + q(e^{ε(∞)} − 1))`` at ∞."""
    fin = np.isfinite(a) & (a > 1)
    am1 = np.where(fin, a - 1.0, 1.0)
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        x = np.where(fin, am1 * base, base)
        small = np.log1p(q * np.expm1(np.minimum(x, 700.0)))
        large = np.logaddexp(math.log1p(-q), math.log(q) + x)
        k = np.where(x < 700.0, small, large)
        k = np.where(np.isinf(x), np.inf, k)
        out = np.where(fin, k / am1, k)
        out = np.where(a == 1, q * base, out)
    return up(out, out)


def _log_expm1(x):
    """``log(e^x − 1)`` for ``x >= 0`` (``-inf`` at 0, ``inf`` at ``inf``)."""
    x = np.asarray(x, dtype=float)
    with np.errstate(divide="ignore", over="ignore", invalid="ignore"):
        return np.where(x < 30.0, np.log(np.expm1(np.minimum(x, 30.0))), x + np.log1p(-np.exp(-x)))


def _log_comb(m: np.ndarray, j: np.ndarray) -> np.ndarray:
    return _lgamma_int(m + 1) - _lgamma_int(j + 1) - _lgamma_int(m - j + 1)


def _theorem_log_moments(q: float, sampling: str, m: np.ndarray, eps_int, eps_inf: float) -> np.ndarray:
    """Upper bounds on ``(m−1)·ε'(m)`` at integer orders ``m >= 2`` (array), given the base curve
    ``eps_int[j−2] = ε(j)`` for ``j = 2..max(m)`` and the base pure ε ``eps_inf`` (``inf`` if none).

    Poisson: Zhu & Wang 2019, Thm 6: ``log{(1−q)^{m−1}(1+(m−1)q) + C(m,2)q²(1−q)^{m−2}e^{ε(2)}
    + 3Σ_{j=3}^m C(m,j)q^j(1−q)^{m−j}e^{(j−1)ε(j)}}``.
    Fixed-size: WBK 2019, Thm 9: ``log{1 + q²C(m,2)·min(4(e^{ε(2)}−1), e^{ε(2)}min(2, (e^{ε(∞)}−1)²))
    + Σ_{j=3}^m q^j C(m,j)e^{(j−1)ε(j)}min(2, (e^{ε(∞)}−1)^j)}``.
    Both are evaluated as ``log1p(Σ_{j>=2} positive terms)``: for Poisson the binomial identity
    ``(1−q)^{m−1}(1+(m−1)q) = 1 − Σ_{j>=2}C(m,j)q^j(1−q)^{m−j}`` turns term j into
    ``C(m,j)q^j(1−q)^{m−j}(c_j e^{(j−1)ε(j)} − 1)`` (c_2 = 1, c_j = 3), so tiny values keep their
    relative precision (as for the subsampled Gaussian, docs/math.md §3.2)."""
    m = np.asarray(m, dtype=float)[:, None]
    j = np.arange(2, int(np.max(m)) + 1, dtype=float)[None, :]
    ej = np.maximum(np.asarray(eps_int, dtype=float)[None, : j.shape[1]], 0.0)
    lq, l1q = math.log(q), math.log1p(-q)
    active = j <= m
    with np.errstate(invalid="ignore", over="ignore", divide="ignore"):
        lc = np.where(active, _log_comb(m, np.minimum(j, m)), -np.inf)
        gain = np.where(ej == np.inf, np.inf, (j - 1.0) * ej)
        if sampling == "poisson":
            lem = _log_expm1(gain)  # log(e^g − 1); for c_j = 3: log(2 + 3(e^g − 1))
            extra = np.where(j >= 3, np.logaddexp(_LOG2, _LOG3 + lem), lem)
            t = lc + j * lq + (m - j) * l1q + extra
        else:
            lem1 = float(_log_expm1(eps_inf)) if math.isfinite(eps_inf) else math.inf
            cap = np.minimum(_LOG2, j * lem1)
            e2 = ej[:, :1]
            two = np.minimum(math.log(4.0) + _log_expm1(e2), e2 + cap[:, :1])
            t = lc + j * lq + np.where(j == 2, two, gain + cap)
        t = np.where(active, t, -np.inf)
        t = np.where(np.isnan(t), np.inf, t)
        top = np.max(t, axis=1, keepdims=True)
        safe = np.where(np.isfinite(top), top, 0.0)
        w = np.exp(t - safe)
        lse = np.log(np.sum(w, axis=1)) + safe[:, 0]
        # rounding: term j carries ~4 ulp·|t_j| (its logs and exp), weighted by its share of the sum;
        # the pairwise sum and the log a few ulps more
        share = w / np.sum(w, axis=1, keepdims=True)
        err = _EPS * (4.0 * np.sum(np.where(share > 0, share * (np.abs(t) + 1.0), 0.0), axis=1) + 12.0)
        err = err + _EPS * np.log2(t.shape[1] + 1.0)
        val = np.log1p(np.exp(lse + err))
        val = np.where(np.isposinf(top[:, 0]), np.inf, np.where(np.isneginf(top[:, 0]), 0.0, val))
    return up(val, val)


def rdp_amplified(base_rdp, q: float, sampling: str, alphas, eps_inf: float = math.inf) -> np.ndarray:
    """RDP of one subsampled release (upper bound; module docstring; docs/math.md §2.11).

    ``base_rdp(alphas)`` returns the base mechanism's RDP upper bound (under the relation that
    ``sampling`` fixes); ``eps_inf`` its pure ε (``inf`` when unbounded)."""
    a = check_alphas(alphas)
    if q == 1.0:
        return np.asarray(base_rdp(a), dtype=float)
    out = _convexity_bound(q, np.asarray(base_rdp(a), dtype=float), a)
    fin = np.isfinite(a) & (a > 1) & (a <= THEOREM_MAX_ORDER)
    if np.any(fin):
        af = a[fin]
        lo, hi = np.floor(af), np.ceil(af)
        need = np.unique(np.concatenate([lo, hi]))
        need = need[need >= 2]
        eps_int = np.asarray(base_rdp(np.arange(2.0, float(np.max(need)) + 1.0)), dtype=float)
        k = dict(zip(need.tolist(), _theorem_log_moments(q, sampling, need, eps_int, eps_inf).tolist()))
        k[1.0] = 0.0
        klo = np.array([k[v] for v in lo.tolist()])
        khi = np.array([k[v] for v in hi.tolist()])
        t = af - lo
        with np.errstate(invalid="ignore"):
            kk = np.where(t == 0, klo, (1.0 - t) * klo + t * khi)
            thm = up(kk, kk) / (af - 1.0)
        thm = np.where(np.isnan(thm), np.inf, thm)
        out[fin] = np.minimum(out[fin], up(thm, thm))
    if math.isfinite(eps_inf):  # ε'(α) <= ε'(∞) = log(1 + q(e^ε − 1))
        cap = amplify_eps(eps_inf, q)
        out = np.minimum(out, float(up(cap, cap)))
    order = np.argsort(a)  # RDP is non-decreasing in α: a bound at a higher order holds below it
    capped = np.minimum.accumulate(out[order][::-1])[::-1]
    out[order] = capped
    return out


def _frac_bounds(eps: Fraction, q: float, lower: bool) -> Fraction | None:
    """``log(1 + q(e^ε − 1))`` as a Fraction below (``lower``) or above it (a 1e-13 relative margin
    over the few ulps of log1p/expm1); ``None`` for an upper bound past double range."""
    v = amplify_eps(float(eps), q)
    if math.isinf(v):
        return Fraction(0) if lower else None
    if lower:
        return Fraction(max(float(np.nextafter(v * (1.0 - 1e-13), -np.inf)), 0.0))
    return Fraction(float(np.nextafter(v * (1.0 + 1e-13), np.inf)))


class Subsampled(Mechanism):
    """A kind's mechanism run on a random subsample (``params`` hold ``q`` and ``sampling``)."""

    def __init__(self, base: Mechanism):
        self.base = base
        self.kind = base.kind
        self.keys = base.keys

    @staticmethod
    def split(params: dict):
        rest = {k: v for k, v in params.items() if k not in ("q", "sampling")}
        return rest, float(params["q"]), params.get("sampling") or "poisson"

    def rdp_refusal(self, params):
        return self.base.rdp_refusal(self.split(params)[0])

    def _eps_inf(self, bp) -> float:
        bounds, _ = self.base.max_loss(bp)
        if bounds is None:
            return math.inf
        try:
            return float(bounds[1]) * (1.0 + 4.0 * _EPS)
        except OverflowError:
            return math.inf

    def rdp(self, params, alphas):
        bp, q, sampling = self.split(params)
        own = self.base.subsampled_rdp(bp, q, sampling, alphas)
        if own is not None:
            return own
        return rdp_amplified(lambda a: self.base.rdp(bp, a), q, sampling, alphas, self._eps_inf(bp))

    def pld_pair(self, params):
        bp, q, sampling = self.split(params)
        if q == 1.0:
            return self.base.pld_pair(bp)
        if sampling != "poisson":
            raise InputError(
                "sampling=fixed-size: the PLD accountant covers Poisson sampling only (sampling=poisson); "
                "use --method rdp"
            )
        own = self.base.subsampled_pld_pair(bp, q)
        if own is not None:
            return own
        pair = self.base.pld_pair(bp)
        if pair is None:
            return None
        if pair[1] is not None:
            raise InputError(
                f"q: subsampling of {self.kind} has no privacy loss distribution here; use --method rdp"
            )
        return subsampled_model(pair[0], q, "remove"), subsampled_model(pair[0], q, "add")

    def pld_dominated(self, params):
        # subsampled, a dominating pair still only dominates
        return self.base.pld_dominated(self.split(params)[0])

    def per_release(self, params):
        bp, q, _ = self.split(params)
        pair, reason = self.base.per_release(bp)
        if pair is None:
            return None, reason
        return amplified_dp(pair[0], pair[1], q), None

    def max_loss(self, params):
        bp, q, _ = self.split(params)
        bounds, reason = self.base.max_loss(bp)
        if bounds is None or q == 1.0:
            return bounds, reason
        hi = _frac_bounds(bounds[1], q, lower=False)
        if hi is None:
            return None, f"the privacy loss of {self.kind} is too large to bound (ε = {float(bounds[1]):g})"
        return (_frac_bounds(bounds[0], q, lower=True), hi), None

    def gaussian_ratio(self, params):
        bp, q, _ = self.split(params)
        return self.base.gaussian_ratio(bp) if q == 1.0 else None

    def relation(self, params):
        return self.split(params)[2]
