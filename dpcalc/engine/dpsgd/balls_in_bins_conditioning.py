"""DP-SGD with balls-in-bins batches: the rare-event conditioning of the Monte-Carlo samples of the dominating
pair — the events, their probabilities and the bounds off them, the thresholds chosen before any draw — and
the exact samplers of the conditioned laws (docs/math.md §3.9).

The pair of one epoch (Chua, Ghazi, Harrison, Leeman, Kamath, Kumar, Manurangsi, Sinha & Zhang 2025, AISTATS,
"Balls-and-Bins Sampling for DP-SGD", arXiv:2412.16802) is ``P = (1/m) Σ_i N(e_i, σ² I_m)`` versus
``Q = N(0, σ² I_m)``, ``epochs`` of them composed; ℓ(x) = log((1/m) Σ_i exp((2x_i − 1)/(2σ²))) is the loss
of one epoch (:mod:`dpcalc.engine.dpsgd.balls_in_bins_samples`, whose module doc has the construction).

Rare-event conditioning (in the spirit of the paper's importance sampling, made exact): the mean is taken
under the law conditioned on an event E whose probability p(E) is known in closed form, and the part of
δ outside E is bounded deterministically:

* remove: E = {some coordinate of some epoch exceeds t}.  Off E every term e^{a} (a = (2x−1)/(2σ²)) is
  at most b = e^{(2t−1)/(2σ²)}, and by Jensen Σ_k ℓ_k > ε forces Σ_{k,i} e^{a_ki} > K·m·e^{ε/K}; the
  probability of that is bounded by Bennett's inequality (Boucheron, Lugosi & Massart 2013, Thm 2.9)
  with the closed-form truncated log-normal means and variances.  δ <= p(E)·U_E + β(ε).
* add, one epoch (m > 1): an exponential tilt of every coordinate by exp(−λ e^{a}) (exact rejection
  sampling); the likelihood ratio Z(λ)^m e^{λS} is at most B = Z̄^m e^{λ m e^{−ε₀}} wherever the term is
  non-zero (S < m e^{−ε}, ε >= ε₀), so the weighted terms lie in [0, B] and δ_add <= B·U(mean/B).
* add, several epochs: by Jensen −ℓ(x) <= 1/(2σ²) − mean(x)/σ², so the add loss exceeds g₀ only if the
  grand mean of the K·m coordinates (a Gaussian) is below a threshold: E = {that Gaussian event}, exact;
  valid for ε >= g₀.

The conditional laws are sampled exactly (first-exceedance index, truncated normals by inverse CDF or
rejection; for the add direction the grand sum is drawn truncated and the centred coordinates
independently).  p(E), t, λ and g₀ are fixed before sampling, so the bound keeps its confidence.
"""

from __future__ import annotations

import functools
import math

import numpy as np

from dpcalc.engine._special import lazy_special as special
from dpcalc.engine.dpsgd.balls_in_bins_counts import _ROUND
from dpcalc.engine.mechanisms.random_allocation.rdp_add import log_laplace_lognormal_upper

#: Largest number of float64 entries in one sampled block (about 48 MB; a few temporaries of that size).
_BLOCK = 6_000_000
#: Above this conditioning probability the plain (unconditioned) sampler is used.
_P_MAX = 0.5
#: Conditioning events below this probability are not sampled: their probability is the bound.
_P_TINY = 1e-250


def _remove_p_event(sigma, m, k, t):
    """P(E) under P^K, E = {some coordinate > t}: 1 − Φ((t−1)/σ)^K Φ(t/σ)^{K(m−1)} (exact, rounded up)."""
    t = np.asarray(t, dtype=float)
    log_none = k * special.log_ndtr((t - 1.0) / sigma) + k * (m - 1) * special.log_ndtr(t / sigma)
    return np.minimum(-np.expm1(log_none) * (1.0 + _ROUND), 1.0)


def _bennett_beta(sigma, m, k, t, eps):
    """Upper bound on P^K(no coordinate > t and Σ_k ℓ_k > ε) by Bennett's inequality (see module doc)."""
    t = np.asarray(t, dtype=float)
    eps = np.asarray(eps, dtype=float)
    s2 = sigma * sigma
    phi = special.ndtr
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        # truncated moments of Y = e^{a} 1{x <= t}, a = (2x − 1)/(2σ²): null x ~ N(0, σ²), signal N(1, σ²)
        m0 = phi((t - 1.0) / sigma)
        q0 = np.exp(1.0 / s2) * phi((t - 2.0) / sigma)
        m1 = np.exp(1.0 / s2) * phi((t - 2.0) / sigma)
        q1 = np.exp(3.0 / s2) * phi((t - 3.0) / sigma)
        mean = k * ((m - 1) * m0 + m1) * (1.0 + 1e-6)
        var = k * ((m - 1) * np.maximum(q0 - m0 * m0, 0.0) + np.maximum(q1 - m1 * m1, 0.0))
        var = var * (1.0 + 1e-6) + 1e-300
        b = np.exp((2.0 * t - 1.0) / (2.0 * s2))
        u = k * m * np.exp(eps / k) - mean
        x = b * u / var
        beta = np.exp(-(var / (b * b)) * ((1.0 + x) * np.log1p(x) - x))
    beta = np.where((u > 0) & np.isfinite(beta), beta, 1.0)
    return np.minimum(beta * (1.0 + 1e-6), 1.0)


def _remove_plan(sigma, m, k, eps_ref, n, confidence, delta_target=None):
    """Threshold t for the remove direction (``inf``: no conditioning), minimising a forecast of the bound
    (the floor p(E)·log(1/α)/n, the relative spread and β at ``eps_ref``); data-independent."""
    lia = -math.log1p(-confidence)
    z = np.linspace(0.0, 14.0, 281)
    t = 1.0 + sigma * z
    p = _remove_p_event(sigma, m, k, t)
    beta = _bennett_beta(sigma, m, k, t, eps_ref)
    cost = p * lia / n + beta
    cost_off = lia / n
    if delta_target is not None:
        cost = cost + np.sqrt(2.0 * delta_target * p * lia / n)
        cost_off += math.sqrt(2.0 * delta_target * lia / n)
    ok = p < _P_MAX
    if not np.any(ok):
        return math.inf
    i = int(np.argmin(np.where(ok, cost, np.inf)))
    return float(t[i]) if cost[i] < cost_off else math.inf


def _epoch_losses(x, sigma, k, m):
    """Σ_k ℓ(x_k) for a (rows, K·m) block (overwrites ``x``)."""
    rows = x.shape[0]
    a = x.reshape(rows, k, m)
    a *= 1.0 / (sigma * sigma)
    mx = a.max(axis=2, keepdims=True)
    a -= mx
    np.exp(a, out=a)
    ell = np.log(a.sum(axis=2)) + mx[:, :, 0] - 1.0 / (2.0 * sigma * sigma) - math.log(m)
    return ell.sum(axis=1)


def _sample_remove(sigma, m, k, t, n, rng):
    """Losses Σ_k ℓ(x_k), x ~ P^K (ball in coordinate 0 of every epoch), conditioned on
    {some coordinate > t} when t is finite (exact: first-exceedance index, then truncated normals)."""
    width = k * m
    mu = np.zeros(width)
    mu[::m] = 1.0
    out = np.empty(n)
    rows_per = max(1, _BLOCK // width)
    if math.isfinite(t):
        log_below = special.log_ndtr((t - mu) / sigma)
        reach = -np.expm1(np.cumsum(log_below))  # P(first exceedance <= j)
    for s in range(0, n, rows_per):
        r = min(rows_per, n - s)
        x = rng.standard_normal((r, width))
        if math.isfinite(t):
            j = np.searchsorted(reach, rng.random(r) * reach[-1], side="left")
            j = np.minimum(j, width - 1)
            zt = (t - mu[j]) / sigma
            x[np.arange(r), j] = -special.ndtri(rng.random(r) * special.ndtr(-zt))  # z > zt
            x *= sigma
            x += mu
            cols = np.arange(width)
            before = cols[None, :] < j[:, None]
            bad = before & (x > t)
            while np.any(bad):
                idx = np.nonzero(bad)
                x[idx] = mu[idx[1]] + sigma * rng.standard_normal(idx[0].size)
                bad[idx] = x[idx] > t
        else:
            x *= sigma
            x += mu
        out[s : s + r] = _epoch_losses(x, sigma, k, m)
    return out


def _add_p_event(sigma, m, k, g0):
    """Q^K(G > g0), G = K/(2σ²) − Σx/(mσ²) ~ N(K/(2σ²), K/(mσ²)): the Jensen bound on the add loss."""
    s0 = m * (k / 2.0 - sigma * sigma * g0)
    log_p = float(special.log_ndtr(s0 / (sigma * math.sqrt(k * m))))
    return min(math.exp(log_p) * (1.0 + _ROUND), 1.0) if log_p > math.log(_P_TINY) else 0.0


def _sample_add(sigma, m, k, g0, n, rng):
    """Losses −Σ_k ℓ(x_k), x ~ Q^K, conditioned on {G > g0} when g0 is finite (grand sum drawn truncated,
    the centred coordinates independently: exact for i.i.d. Gaussians)."""
    width = k * m
    out = np.empty(n)
    rows_per = max(1, _BLOCK // width)
    sd_sum = sigma * math.sqrt(width)
    if math.isfinite(g0):
        cap = special.ndtr(m * (k / 2.0 - sigma * sigma * g0) / sd_sum)
    for s in range(0, n, rows_per):
        r = min(rows_per, n - s)
        x = rng.standard_normal((r, width))
        x *= sigma
        if math.isfinite(g0):
            total = sd_sum * special.ndtri(rng.random(r) * cap)
            x -= x.mean(axis=1, keepdims=True)
            x += (total / width)[:, None]
        out[s : s + r] = -_epoch_losses(x, sigma, k, m)
    return out


def _tilt_z_upper(sigma, lam):
    """A rigorous upper bound on Z(λ) = E[exp(−λ e^{a(x)})], x ~ N(0, σ²), a = (2x − 1)/(2σ²): the Laplace
    transform of the lognormal e^{a}, bounded by the tangent-cell sum of
    :func:`dpcalc.engine.mechanisms.random_allocation.rdp_add.log_laplace_lognormal_upper` (never below the exact
    value; about 1e-6 relative above it where Z is not astronomically small)."""
    if lam == 0.0:
        return 1.0
    return min(1.0, math.exp(float(log_laplace_lognormal_upper(1.0 / sigma, np.array([lam]))[0])))


@functools.lru_cache(maxsize=256)
def _tilt_plan(sigma, m, eps0):
    """λ >= 0 minimising log B(λ) = m(log Z(λ) + λ e^{−ε₀}) (the Chernoff exponent of the add loss)."""
    lams = np.concatenate([[0.0], np.geomspace(1e-2, 50.0, 60)])
    logb = [m * (math.log(_tilt_z_upper(sigma, float(la))) + la * math.exp(-eps0)) for la in lams]
    i = int(np.argmin(logb))
    return float(lams[i]), float(logb[i])


def _sample_add_tilted(sigma, m, lam, n, rng):
    """S = Σ_i e^{a(x_i)} with x_i i.i.d. from N(0, σ²) tilted by exp(−λ e^{a}) (exact rejection sampling)."""
    c = 1.0 / (2.0 * sigma * sigma)
    out = np.empty(n)
    rows_per = max(1, _BLOCK // (2 * m))
    for s in range(0, n, rows_per):
        r = min(rows_per, n - s)
        need = r * m
        kept = []
        while need > 0:
            x = sigma * rng.standard_normal(int(need * 1.2) + 64)
            y = np.exp(x / (sigma * sigma) - c)
            acc = y[rng.random(x.size) < np.exp(-lam * y)]
            kept.append(acc[:need])
            need -= kept[-1].size
        out[s : s + r] = np.concatenate(kept).reshape(r, m).sum(axis=1)
    return out
