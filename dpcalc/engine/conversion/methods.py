"""Rényi DP ⇄ (ε, δ)-DP conversions, per order and over a curve of orders (docs/math.md §1).

numpy only (no scipy: ``dpcalc convert`` pays only for numpy at start-up).  Every function broadcasts
its arguments and returns float arrays of the broadcast shape; no Python loop over elements.

Per order (``alpha`` > 1, ``rdp`` = ζ >= 0, ``delta`` in [0, 1], ``eps`` >= 0):

* ``eps_mironov`` / ``delta_mironov``   Mironov 2017, Prop. 3 (docs/math.md §1.1)
* ``eps_balle`` / ``delta_balle``       Balle et al. 2020, Thm 21 = Canonne–Kamath–Steinke 2020, Prop. 12 (§1.2)
* ``eps_asoodeh`` / ``delta_asoodeh``   Asoodeh et al. (arXiv 2008.06529) closed-form bound (§1.3 items 3, 5, 6)
* ``eps_optimal`` / ``delta_optimal``   the exact ("lossless") conversion of Asoodeh et al. (§1.3 items 1–3),
  solved numerically and rounded to the safe side (see :mod:`dpcalc.engine.conversion.optimal`)

DP → RDP (``zeta_*``, §1.4): the RDP level at order α that certifies (ε, δ)-DP; all are lower bounds of the
exact value, so reporting them is safe for a privacy filter.

Curve level (§1.6): :func:`eps_from_curve`, :func:`delta_from_curve`.

The closed forms live in :mod:`dpcalc.engine.conversion.closed_form` and the exact solver in
:mod:`dpcalc.engine.conversion.optimal`; everything public is importable from here.

Definition note (checked by tests/test_conversions_bruteforce.py): Asoodeh et al.'s M formula is the exact
conversion for the divergence-level statement D_α(P‖Q) <= ζ ⇒ E_{e^ε}(P‖Q) <= δ.  A mechanism under a
symmetric neighbouring relation also satisfies D_α(Q‖P) <= ζ; the exact value under both constraints (a sup
over Bernoulli pairs, by data processing) is the same for αδ below ~0.05 but can be smaller above that (e.g.
α=113, ζ=0.248, ε=0.0586: δ 0.1725 one-sided vs 0.0995 two-sided).  "optimal" reports the one-sided value:
a valid bound in both readings, and exact in the practical regime.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from dpcalc.engine._numerics import next_up
from dpcalc.engine.conversion import optimal as oc
from dpcalc.engine.conversion.closed_form import (  # noqa: F401  (re-exported: the public interface)
    BALLE_MIN_ORDER,
    _arr,
    _asoodeh_second,
    _check_alpha,
    _check_delta,
    _check_eps,
    _check_rdp,
    _prep_delta,
    _prep_eps,
    _prep_zeta,
    _up,
    delta_asoodeh,
    delta_balle,
    delta_mironov,
    eps_asoodeh,
    eps_balle,
    eps_mironov,
    zeta_f,
    zeta_g,
    zeta_mironov,
)
from dpcalc.errors import InputError

METHODS = ("optimal", "asoodeh", "balle", "mironov")


class CurveBound(NamedTuple):
    """Best per-order bound over a grid of orders.

    ``value``: the bound (ε or δ); ``alpha``: the order attaining it (nan where every order is useless);
    ``index``: its position in the grid (-1 where none); ``at_edge``: the best order is the first or last
    of the grid (a wider grid might do better).
    """

    value: np.ndarray
    alpha: np.ndarray
    index: np.ndarray
    at_edge: np.ndarray


# ----------------------------------------------------------------------------------------------------------
# the exact conversion (docs/math.md §1.3 items 1–3)


def eps_optimal(alpha, rdp, delta):
    """The smallest ε certified by one (α, ζ)-RDP guarantee at δ: the exact ("lossless") conversion of Asoodeh,
    Liao, Calmon, Kosut, Sankar (arXiv 2008.06529, Thm 3 as cited; presented in Asoodeh's talk "Privacy
    Analysis of Iterative Algorithms via f-divergences"; docs/math.md §1.3 items 1–3).

    ε = min{ε' >= 0 : ζ_α^{ε'}(δ) >= ζ} with ζ_α^ε(δ) = ε + log M(α, ε, δ)/(α−1).  Solved numerically and
    rounded to the safe side: the reported ε satisfies ζ_lower(α, ε, δ) > ζ for a *certified lower bound*
    ζ_lower <= ζ_α^ε(δ) (tangent lines of the convex φ plus a round-off margin), so it is never below the
    exact value; the argument is in :mod:`dpcalc.engine.conversion.optimal`.  The result is also never above
    the closed form :func:`eps_asoodeh` (a valid bound; used wherever the numerics cannot certify a value).
    αδ >= 1 is exact in closed form (§1.3 item 3).
    """
    alpha, rdp, delta = _prep_eps(alpha, rdp, delta)
    shape = alpha.shape
    closed = eps_asoodeh(alpha, rdp, delta).ravel()
    alpha, rdp, delta = alpha.ravel(), rdp.ravel(), delta.ravel()
    out = closed.copy()
    work = (delta > 0) & (delta < 1) & (rdp > 0) & np.isfinite(rdp) & (alpha * delta < 1) & (closed > 0)
    work &= np.isfinite(closed)
    idx = np.flatnonzero(work)
    if idx.size:
        cert = oc.eps_certified(alpha[idx], rdp[idx], delta[idx], closed[idx])
        out[idx] = np.where(np.isnan(cert), closed[idx], np.minimum(cert, closed[idx]))
    return out.reshape(shape)


#: Orders whose estimated exact ε is within this relative distance of a curve's smallest estimate are
#: certified (the others keep the closed form, which they cannot beat the minimum with).
TIE_RTOL = 1e-6
#: Slack over the tie tolerance beyond which an order's Newton estimate stops early (:func:`eps_optimal_min`).
EARLY_RTOL = 1e-6


def eps_optimal_min(alpha, rdp, delta):
    """:func:`eps_optimal` along the last axis (orders of a curve), for taking the minimum over it.

    Every order gets Newton's estimate of its exact ε; only the orders whose estimate is within
    :data:`TIE_RTOL` of the smallest estimate on their curve (and orders whose estimate failed) are
    certified, the others keep the closed form of Asoodeh et al. (a valid bound above their exact ε).
    The minimum over the last axis, and the order attaining it, are those of :func:`eps_optimal` on
    every order (certification moves a value by < 1e-10 relative: it cannot reorder two orders further
    apart than the tie tolerance); only the certification of hopeless orders is saved.  docs/math.md §1.3, §1.6.
    """
    alpha, rdp, delta = _prep_eps(alpha, rdp, delta)
    closed = eps_asoodeh(alpha, rdp, delta)
    out = closed.copy()
    work = (delta > 0) & (delta < 1) & (rdp > 0) & np.isfinite(rdp) & (alpha * delta < 1) & (closed > 0)
    work &= np.isfinite(closed)
    if not np.any(work):
        return out

    est = np.full(closed.shape, np.inf)
    t = np.full(closed.shape, np.nan)
    # an order whose root lies above the smallest closed form of its curve, past the tie tolerance, can be
    # neither the lowest estimate nor a tie with it: its Newton iterations stop there (EARLY_RTOL of slack)
    top = np.min(closed, axis=-1, keepdims=True) * ((1.0 + TIE_RTOL) * (1.0 + EARLY_RTOL)) + 1e-300
    floor = np.broadcast_to(top, closed.shape)[work]
    est[work], t[work] = oc.eps_estimate(alpha[work], rdp[work], delta[work], closed[work], floor=floor)
    failed = work & np.isnan(est)
    ranked = np.where(work & ~failed, est, np.inf)
    lowest = np.min(np.minimum(ranked, closed), axis=-1, keepdims=True)
    cand = work & (failed | (ranked <= lowest * (1.0 + TIE_RTOL) + 1e-300))
    e0 = np.where(failed, closed, est)
    cert = oc.certify_eps(alpha[cand], rdp[cand], delta[cand], e0[cand], t[cand])
    out[cand] = np.where(np.isnan(cert), closed[cand], np.minimum(cert, closed[cand]))
    return out


def delta_optimal(alpha, rdp, eps):
    """The smallest δ certified by one (α, ζ)-RDP guarantee at ε (the exact conversion of Asoodeh et al.,
    docs/math.md §1.3 items 1–3), rounded up: the reported δ satisfies ζ_lower(α, ε, δ) > ζ for a certified
    lower bound ζ_lower <= ζ_α^ε(δ) (see :mod:`dpcalc.engine.conversion.optimal`); never above
    :func:`delta_asoodeh`.  Where the root lies at αδ >= 1 it is exact: δ = 1 − e^{ε−ζ} (item 3).
    """
    alpha, rdp, eps = _prep_delta(alpha, rdp, eps)
    shape = alpha.shape
    closed = delta_asoodeh(alpha, rdp, eps).ravel()
    alpha, rdp, eps = alpha.ravel(), rdp.ravel(), eps.ravel()
    out = closed.copy()
    work = (rdp > 0) & np.isfinite(rdp) & np.isfinite(eps) & (closed > 0)
    idx = np.flatnonzero(work)
    if idx.size:
        a, z, e, cl = alpha[idx], rdp[idx], eps[idx], closed[idx]
        la = np.log(a)
        # is the root at αδ >= 1?  There ζ_α^ε(δ) = ε − log(1−δ) exactly; at δ = 1/α this is ε − log1p(−1/α).
        # Below 1/α, 1 − e^{ε−ζ} would *under*-state δ (ζ_α^ε(δ) <= ε − log(1−δ) always), so the branch is taken
        # only with a clear margin over the round-off of log1p(−1/α) (relative 1e-16/(α−1)); borderline cases
        # go to the certified solver, which handles both sides of 1/α.
        edge = e - np.log1p(-1.0 / a)
        big = z > edge + 1e-12 * (1.0 + np.abs(edge)) * (1.0 + 1.0 / (a - 1.0))
        val = np.empty_like(a)
        with np.errstate(over="ignore"):
            val[big] = _up(-np.expm1(e[big] - z[big]), 1.0)
        s = ~big
        if np.any(s):
            hi = np.minimum(np.log(cl[s]), -la[s])
            lcert = oc.log_delta_certified(a[s], z[s], e[s], hi)
            cert = np.where(lcert > -np.inf, next_up(np.exp(lcert)), 0.0)
            cert = np.where(np.isnan(lcert), np.inf, cert)
            val[s] = cert
        out[idx] = np.minimum(val, cl)
    return out.reshape(shape)


def zeta_opt(alpha, eps, delta):
    """ζ_α^ε(δ): the largest ζ such that every (α, ζ)-RDP mechanism is (ε, δ)-DP, as a certified *lower* bound
    (Asoodeh et al., arXiv 2008.06529; docs/math.md §1.3 item 1, §1.4).  What a privacy filter needs.

    ζ = ε + log M(α, ε, δ)/(α−1), computed as log(min_p ψ)/(α−1) with ψ = φ e^{(α−1)ε} and rounded down by
    tangent-line and round-off margins (see :mod:`dpcalc.engine.conversion.optimal`); never below the closed
    forms f, g and Mironov (all valid lower bounds), which it also never falls under.  Edge cases: δ = 0 → 0
    (item 2), δ = 1 or ε = ∞ → ∞, αδ >= 1 → ε − log(1−δ) exactly (item 3).
    """
    alpha, eps, delta = _prep_zeta(alpha, eps, delta)
    shape = alpha.shape
    best = np.maximum(
        np.maximum(zeta_f(alpha, eps, delta), zeta_g(alpha, eps, delta)), zeta_mironov(alpha, eps, delta)
    )
    best = best.ravel()
    a, e, d = alpha.ravel(), eps.ravel(), delta.ravel()
    work = (d > 0) & (d < 1) & np.isfinite(e) & (a * d < 1)
    idx = np.flatnonzero(work)
    if idx.size:
        low, _, _ = oc.zeta_lower(a[idx], e[idx], np.log(d[idx]))
        best[idx] = np.maximum(best[idx], np.where(np.isnan(low), -np.inf, low))
    best = np.where(d <= 0, 0.0, best)
    best = np.where((d >= 1) | np.isposinf(e), np.inf, best)
    return np.maximum(best, 0.0).reshape(shape)


# ----------------------------------------------------------------------------------------------------------
# curve level (docs/math.md §1.6)

_EPS_FUNCS = {"optimal": eps_optimal, "asoodeh": eps_asoodeh, "balle": eps_balle, "mironov": eps_mironov}
_DELTA_FUNCS = {
    "optimal": delta_optimal,
    "asoodeh": delta_asoodeh,
    "balle": delta_balle,
    "mironov": delta_mironov,
}


def _check_method(method):
    if method not in METHODS:
        raise InputError(f"--method: must be one of {', '.join(METHODS)}, got {method!r}")


def _best(alphas, values):
    """min over the last axis (nan counts as ∞); the order, index and ``at_edge`` of the minimum.

    ``at_edge``: the minimum is attained only at the first or last order (ties with an interior order, and a
    minimum of 0, which no other order can improve, do not count).
    """
    m = values.shape[-1]
    values = np.where(np.isnan(values), np.inf, values)
    idx = np.argmin(values, axis=-1)
    best = np.take_along_axis(values, idx[..., None], axis=-1)[..., 0]
    useless = np.isposinf(best)
    alpha = np.where(useless, np.nan, alphas[idx])
    index = np.where(useless, -1, idx)
    interior = np.any(values[..., 1 : m - 1] == best[..., None], axis=-1) if m > 2 else np.zeros_like(useless)
    edge = (values[..., 0] == best) | (values[..., m - 1] == best)
    at_edge = ~useless & (best > 0) & edge & ~interior
    return CurveBound(best, alpha, index, at_edge)


def _curve_args(alphas, rdp, other):
    alphas = _check_alpha(alphas)
    if alphas.ndim != 1 or alphas.size == 0:
        raise InputError("--alpha: the orders of a curve must be a non-empty 1-D list")
    rdp = _check_rdp(rdp)
    if rdp.ndim == 0 or rdp.shape[-1] != alphas.size:
        raise InputError(
            f"--rdp: expected {alphas.size} values per curve (one per order), got shape {rdp.shape}"
        )
    other = _arr(other)
    shape = np.broadcast_shapes(rdp.shape[:-1], other.shape)
    rdp = np.broadcast_to(rdp, shape + (alphas.size,))
    other = np.broadcast_to(other, shape)[..., None]
    return alphas, rdp, other


def eps_from_curve(alphas, rdp, delta, method="optimal", per_order=None) -> CurveBound:
    """ε(δ) = min over orders of the per-order conversion (docs/math.md §1.6); orders with ζ = ∞ are skipped.

    ``alphas`` shape (m,), ``rdp`` shape (..., m), ``delta`` broadcastable to ``rdp.shape[:-1]``.  Where
    every order is infinite the value is ∞, ``alpha`` nan, ``index`` −1.  ``per_order``: the values of
    :func:`eps_per_order` for these arguments, if the caller has them already.
    """
    if per_order is None:
        per_order = eps_per_order(alphas, rdp, delta, method)
    return _best(np.asarray(alphas, dtype=float), per_order)


def eps_per_order(alphas, rdp, delta, method="optimal"):
    """The per-order conversion of a curve (shape (..., m)) that :func:`eps_from_curve` minimises.  Under a
    closed form (mironov, balle, asoodeh) the value at an order depends on that order's ζ and δ alone; the
    optimal conversion ranks the orders of each curve (:func:`eps_optimal_min`)."""
    _check_method(method)
    alphas, rdp, delta = _curve_args(alphas, rdp, delta)
    _check_delta(delta)
    if method == "optimal":
        return eps_optimal_min(alphas, rdp, delta)
    return _by_blocks(_EPS_FUNCS[method], alphas, rdp, delta)


#: Elements of a curve that a closed form converts at once: its temporaries (a dozen arrays) then stay near
#: 4 MB, where a sweep's chunk (1,250 curves of 225 orders) held 16 MB of them.
CLOSED_BLOCK = 1 << 16


def _by_blocks(fn, alphas, rdp, other):
    """``fn(alphas, rdp, other)`` (an elementwise closed form; the shapes of :func:`_curve_args`) over blocks of
    whole curves of about :data:`CLOSED_BLOCK` elements: the same values, in bounded memory."""
    m = alphas.size
    rows = rdp.size // m
    per = max(1, CLOSED_BLOCK // m)
    if rows <= per:
        return fn(alphas, rdp, other)
    flat = rdp.reshape(rows, m)
    oth = np.broadcast_to(other, rdp.shape[:-1] + (1,)).reshape(rows, 1)
    out = np.empty((rows, m))
    for lo in range(0, rows, per):
        out[lo : lo + per] = fn(alphas, flat[lo : lo + per], oth[lo : lo + per])
    return out.reshape(rdp.shape)


def delta_from_curve(alphas, rdp, eps, method="optimal") -> CurveBound:
    """δ(ε) = min over orders of the per-order conversion (docs/math.md §1.6); orders with ζ = ∞ are skipped
    (their δ is 1).  Same shapes as :func:`eps_from_curve`."""
    _check_method(method)
    alphas, rdp, eps = _curve_args(alphas, rdp, eps)
    _check_eps(eps)
    vals = _DELTA_FUNCS[method](alphas, rdp, eps)
    vals = np.where(np.isposinf(rdp), np.inf, vals)  # skip: never selected unless all are
    out = _best(alphas, vals)
    return out._replace(value=np.where(np.isposinf(out.value), 1.0, out.value))
