"""What ε means for an attacker: the largest true-positive rate of any test at a false-positive rate
(docs/math.md §10, the hypothesis-testing view of DP).

A test between the outputs on two neighbouring datasets has a false-positive rate α (type I error) and
a true-positive rate TPR (one minus the type II error).  A mechanism that is (ε, δ(ε))-DP for every ε
of its privacy profile, in both directions of the neighbouring relation, admits no test with

    TPR(α) > min(e^ε·α + δ(ε), 1 − e^(−ε)·(1 − δ(ε) − α))          for any ε >= 0

(Kairouz, Oh & Viswanath 2015, arXiv:1311.0776, Thm 2.1; Dong, Roth & Su 2022, arXiv:1905.02383, §2.4).
Each pair (ε, δ) that holds gives a sound bound, so the minimum over any finite set of pairs whose δ
are upper bounds is a certified upper bound on TPR(α) (:func:`profile_tpr`).  The minimum over *every*
ε of the exact profile is the trade-off curve of the symmetrised pair (Dong, Roth & Su, Prop. 2.12,
the primal-dual view);
:func:`profile_tpr_lower` bounds it from below from lower bounds on δ at finitely many ε (δ is
non-increasing in ε, so on [a, b] it is at least δ(b)): no (ε, δ(ε)) profile whose δ are at least those
can certify less.

For Gaussian compositions (one Gaussian with μ = Δ/σ·√k, docs/math.md §2.6) the curve is exact,
TPR(α) = Φ(Φ⁻¹(α) + μ), μ-GDP (Dong, Roth & Su, §2.1; Cor. 3.3 for the composition): :func:`gaussian_tpr`.  For DP-SGD the central
limit theorem of Dong, Roth & Su (§5; Bu, Dong, Long & Su 2020, arXiv:1911.11607, §3) gives
μ = q·sqrt(T·(e^{1/σ²} − 1)) asymptotically, an approximation and not a bound: :func:`clt_mu`.

Everything is array-based over a grid of false-positive rates (and, for the profile, of ε values).
"""

from __future__ import annotations

import math

import numpy as np

from dpcalc.engine._numerics import require
from dpcalc.engine._special import lazy_special as special
from dpcalc.engine.conversion.methods import delta_from_curve
from dpcalc.engine.conversion.rdp_tradeoff import tpr_from_rdp

#: relative slack added to upper ends (and taken off lower ends) for the rounding of a few float ops
_REL = 1e-12


def check_fpr(fpr):
    """False-positive rates, each in (0, 1) (``--fpr``)."""
    return require(fpr, lambda a: (a > 0) & (a < 1), "--fpr: must lie in (0, 1)", show=lambda v: f"{v:g}")


def _clamp(tpr, fpr):
    return np.clip(tpr, fpr, 1.0)


def profile_tpr(fpr, eps, delta):
    """Certified upper bound on TPR at each ``fpr`` (shape (m,)) from pairs ``(eps[j], delta[j])`` (shape
    (n,)) that each hold in both directions: min over j of min(e^ε α + δ, 1 − e^(−ε)(1 − δ − α)), clamped
    to [α, 1] and rounded up."""
    a = np.asarray(fpr, float)[..., None]
    e = np.asarray(eps, float)
    d = np.asarray(delta, float)
    with np.errstate(over="ignore", invalid="ignore"):
        first = np.exp(e) * a + d
        second = -np.expm1(-e) + np.exp(-e) * (d + a)
        both = np.fmin(first, second)
    both = np.where(np.isnan(both), 1.0, both)
    best = np.min(both, axis=-1) if e.size else np.ones(a.shape[:-1])
    return _clamp(best * (1.0 + _REL), np.asarray(fpr, float))


def profile_tpr_lower(fpr, eps, delta_lower, delta_upper=None, *, sub=32):
    """Lower end of the best bound a profile can give: for the exact profile δ(ε) with
    ``delta_lower[j] <= δ(eps[j]) <= delta_upper[j]`` (``eps`` ascending from 0), min over *all* ε >= 0
    of the bound of :func:`profile_tpr` is at least the value returned.

    δ is non-increasing in ε and convex in x = e^ε (a supremum over events S of P(S) − x·Q(S)), so on
    [x_j, x_{j+1}] it lies above δ(x_{j+1}) and above the chords of the neighbouring intervals extended
    (with their slopes bounded from the brackets); on each of ``sub`` pieces [u, v] of the interval,
    e^ε α + δ(ε) >= u·α + h(v) and 1 − e^(−ε)(1 − δ − α) >= 1 − (1 − h(v) − α)/u (or /v), h being that
    lower envelope.  Beyond the last ε, δ >= 0.  Without ``delta_upper`` only monotonicity is used."""
    a = np.asarray(fpr, float)[..., None, None]
    e = np.asarray(eps, float)
    dl = np.maximum(np.asarray(delta_lower, float), 0.0)
    du = np.asarray(delta_upper if delta_upper is not None else np.ones_like(dl), float)
    x = np.exp(e)
    n = e.size
    t = np.linspace(0.0, 1.0, sub + 1)
    u = x[:-1, None] + (x[1:] - x[:-1])[:, None] * t  # (n-1, sub+1) points of each interval
    h = np.broadcast_to(dl[1:, None], u.shape).copy()  # δ >= δ(x_{j+1})
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        if n >= 3 and delta_upper is not None:
            s_left = (dl[1:-1] - du[:-2]) / (x[1:-1] - x[:-2])  # chord slope of [x_{j-1}, x_j], from below
            h[1:] = np.fmax(h[1:], dl[1:-1, None] + s_left[:, None] * (u[1:] - x[1:-1, None]))
            s_right = (du[2:] - dl[1:-1]) / (x[2:] - x[1:-1])  # chord slope of [x_{j+1}, x_{j+2}], from above
            h[:-1] = np.fmax(h[:-1], dl[1:-1, None] + s_right[:, None] * (u[:-1] - x[1:-1, None]))
        hv = h[:, 1:]  # fmax: a chord over two (nearly) equal ε gives nan, and is ignored
        lo_x, hi_x = u[:, :-1], u[:, 1:]
        first = lo_x * a + hv
        rest = 1.0 - hv - a
        second = 1.0 - np.maximum(rest / lo_x, rest / hi_x)
        inner = np.min(np.fmin(first, second), axis=(-2, -1)) if n >= 2 else np.ones(a.shape[:-2])
        last = np.fmin(x[-1] * a[..., 0, 0] + 0.0, 1.0 - (1.0 - a[..., 0, 0]) / x[-1])
    best = np.fmin(inner, last)
    if e.size and e[0] > 0:  # [0, ε_0]: δ >= δ(ε_0)
        a0 = a[..., 0, 0]
        best = np.fmin(best, np.fmin(a0 + dl[0], 1.0 - (1.0 - dl[0] - a0)))
    return _clamp(best * (1.0 - _REL), np.asarray(fpr, float))


def gaussian_tpr(fpr, mu):
    """Φ(Φ⁻¹(α) + μ), the exact trade-off curve of μ-GDP (one minus G_μ of Dong, Roth & Su 2022); from
    ``log_ndtr`` so that tiny α keep their digits, and rounded up.  Broadcasts ``fpr`` against ``mu``."""
    a, m = np.broadcast_arrays(np.asarray(fpr, float), np.asarray(mu, float))
    z = special.ndtri(a) + m
    with np.errstate(over="ignore"):
        tpr = np.where(z < 0, np.exp(special.log_ndtr(z)), -np.expm1(special.log_ndtr(-z)))
    tpr = np.where(np.isposinf(m), 1.0, tpr)
    return _clamp(tpr * (1.0 + _REL), a)


def gaussian_tpr_lower(fpr, mu):
    """:func:`gaussian_tpr` rounded down (the same exact curve, its lower end)."""
    a, m = np.broadcast_arrays(np.asarray(fpr, float), np.asarray(mu, float))
    return _clamp(gaussian_tpr(a, m) / (1.0 + _REL) * (1.0 - _REL), a)


def clt_mu(q, sigma, steps):
    """The central-limit μ of DP-SGD with Poisson rate ``q``, noise multiplier ``sigma`` and ``steps``
    (Dong, Roth & Su 2022, §5; Bu et al. 2020, §3): μ = q·sqrt(T·(e^{1/σ²} − 1)).  An
    asymptotic approximation (q√T fixed, T → ∞), not a bound."""
    q, sigma, steps = (np.asarray(x, float) for x in (q, sigma, steps))
    with np.errstate(over="ignore"):
        return q * np.sqrt(steps * np.expm1(1.0 / sigma**2))


def rdp_profile(orders, curve, fpr):
    """Pairs (ε, δ(ε)) from a Rényi curve, every one an upper bound (docs/math.md §1.6): the conversion of
    Balle et al. 2020 (Thm 21; arXiv:1905.09982) on 4001 ε from 0 to 40, and the optimal conversion of
    Asoodeh et al. 2021 (arXiv:2001.05990) at a grid refined around each false-positive rate's best ε
    (:func:`pld_profile`; the optimal conversion costs milliseconds per ε)."""
    dense = np.concatenate([np.linspace(0.0, 2.0, 2001), np.linspace(2.0, 40.0, 2001)[1:]])
    d_dense = np.minimum(np.asarray(delta_from_curve(orders, curve, dense, method="balle").value, float), 1.0)
    floor = max(float(np.min(fpr)) * 1e-3, 1e-300)
    below = np.nonzero(d_dense <= floor)[0]
    eps_max = float(dense[below[0]]) if below.size else 40.0

    def optimal(e):
        d = np.minimum(np.asarray(delta_from_curve(orders, curve, e, method="optimal").value, float), 1.0)
        return d, d, d

    e_opt, _, _, d_opt = pld_profile(optimal, max(eps_max, 1e-3), fpr)
    return np.concatenate([dense, e_opt]), np.concatenate([d_dense, d_opt])


def pld_profile(delta_at, eps_max, fpr, *, coarse=12, rounds=4):
    """(ε, δ_lower, δ_estimate, δ_upper) arrays, ε ascending, from ``delta_at(eps_array) -> (lower,
    estimate, upper)`` (a certified PLD bracket of δ(ε)): a uniform grid of ``coarse`` points on
    [0, ``eps_max``], then ``rounds`` halvings of the step around the ε that gives each false-positive rate of
    ``fpr`` its smallest upper bound (two new ε per rate and round, asked in one call)."""
    seen: dict[float, tuple] = {}

    def ask(points):
        new = sorted({round(float(p), 12) for p in points if p >= 0} - set(seen))  # near-equal ε merged
        if new:
            lo, est, up = (np.atleast_1d(np.asarray(x, float)) for x in delta_at(np.array(new)))
            for p, v in zip(new, zip(lo, est, up)):
                seen[p] = v

    grid = np.linspace(0.0, eps_max, coarse)
    ask(grid)
    step = grid[1] - grid[0] if coarse > 1 else eps_max
    fpr = np.atleast_1d(np.asarray(fpr, float))
    for _ in range(rounds):  # one call per round for every α (a conversion has a fixed cost per call)
        e = np.array(sorted(seen))
        up = np.array([seen[p][2] for p in e])
        best = np.unique(e[np.argmin(_bound_each(np.unique(fpr)[:, None], e, up), axis=-1)])
        step /= 2.0
        ask(np.concatenate([best - step, best + step]))
    e = np.array(sorted(seen))
    lo, est, up = (np.array([seen[p][k] for p in e]) for k in range(3))
    return e, lo, est, up


def _bound_each(a, e, d):
    """The bound of :func:`profile_tpr` for each pair separately, at one α."""
    with np.errstate(over="ignore"):
        return np.fmin(np.exp(e) * a + d, -np.expm1(-e) + np.exp(-e) * (d + a))


def bracket_from_profile(fpr, eps, lower, estimate, upper):
    """(tpr_lower, tpr_estimate, tpr_upper) at each ``fpr`` from a bracketed profile: upper from the
    upper δ (:func:`profile_tpr`), lower from both ends (:func:`profile_tpr_lower`), the estimate from
    the estimated δ, kept inside the bracket.  A profile with no lower end (nan: models that only dominate
    the mechanism) has no tpr_lower and no tpr_estimate (nan)."""
    hi = profile_tpr(fpr, eps, upper)
    nan = np.full(np.shape(hi), np.nan)
    if np.any(np.isnan(np.asarray(lower, float))):
        return nan, nan, hi
    lo = np.minimum(profile_tpr_lower(fpr, eps, lower, upper), hi)
    if np.any(np.isnan(np.asarray(estimate, float))):
        return lo, nan, hi
    est = np.clip(profile_tpr(fpr, eps, estimate) / (1.0 + _REL), lo, hi)
    return lo, est, hi


def _eps_max(epsilon_at, fpr) -> float:
    """The largest ε worth asking δ at: ε(δ) at δ = 1e-3 of the smallest α (no smaller than 1e-300); where
    that ε is infinite (δ(ε) never falls so low: a dp spec's δ, a point mass at infinity), at a δ ten
    times larger, up to 0.1."""
    target = max(float(np.min(fpr)) * 1e-3, 1e-300)
    while True:
        e = float(epsilon_at(target))
        if math.isfinite(e) or target >= 0.1:
            return e if math.isfinite(e) and e > 0 else 50.0
        target = min(target * 10.0, 0.1)


def pld_tpr(fpr, delta_at, epsilon_at):
    """``(tpr_lower, tpr_estimate, tpr_upper)`` at each ``fpr`` from a certified PLD accountant:
    ``delta_at(eps_array)`` -> the (lower, estimate, upper) brackets of δ, ``epsilon_at(delta)`` -> the
    upper ε (used to find the largest ε worth asking).  The profile is bracketed on [0, that ε]
    (:func:`pld_profile`) and read by :func:`bracket_from_profile`; ``tpr_upper`` is certified."""
    top = _eps_max(epsilon_at, fpr)
    # the coarse step is top/11: a wide range (tiny α) gets more halvings, to the same final step
    rounds = 4 + max(0, math.ceil(math.log2(top / 4.0)))
    eps, lo, est, up = pld_profile(delta_at, top, fpr, rounds=min(rounds, 10))
    return bracket_from_profile(fpr, eps, lo, est, up)


def rdp_tpr(orders, curve, fpr):
    """A certified upper bound on TPR at each ``fpr`` from a Rényi curve: the optimal conversion of the curve
    to a trade-off curve (every order's constraint on a binary test, both directions; Zhu, Dong & Wang 2022,
    arXiv:2106.08567, App. F; :func:`dpcalc.engine.conversion.rdp_tradeoff.tpr_from_rdp`), which no conversion
    that sees only the curve can improve on (the bound of its privacy profile, :func:`rdp_profile` and
    :func:`profile_tpr`, is one such conversion)."""
    return tpr_from_rdp(orders, curve, fpr)
