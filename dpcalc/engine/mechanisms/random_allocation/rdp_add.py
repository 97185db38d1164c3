"""The add direction of random allocation, near exactly: a certified upper bound on D_α(Q‖P) of one 1-of-t
allocation of the Gaussian mechanism through the Laplace transform of the lognormal (docs/math.md §3.8).

With ``W = P/Q = (1/t) Σ_i Y_i``, ``Y_i = e^{μ z_i − μ²/2}`` i.i.d. (z standard normal, μ = 1/σ), the add
direction is ``D_α(Q‖P) = log E_Q[W^{−β}]/β``, β = α − 1 (Feldman & Shenfeld 2025, arXiv:2502.08202, the pair
of Thm 3.1).  For w > 0, ``w^{−β} = Γ(β)^{−1} ∫_0^∞ s^{β−1} e^{−sw} ds``; splitting at ``W = w_c`` and the
integral at ``S``:

    E[W^{−β}] <= Γ(β)^{−1} [∫_0^S s^{β−1} φ(s/t)^t ds + Γ(β, S·w_c) w_c^{−β}] + E[e^{−βȳ}; ȳ < log w_c],

with ``φ(u) = E[e^{−uY}]`` (so ``E e^{−sW} = φ(s/t)^t``), the upper incomplete gamma Γ(β, ·) bounding the
part of the integral beyond S where W >= w_c, and AM–GM (W >= e^{ȳ}, ȳ the mean of μz_i − μ²/2, normal)
bounding the event W < w_c.  Each piece is an upper bound computed with outward rounding:

* φ(u): ``h(z) = −u e^{μz − μ²/2}`` is concave, so ``e^h`` lies below its tangent on each cell of a z-grid;
  the Gaussian integral of ``e^{a + bz}`` over a cell is closed form (:func:`log_laplace_lognormal_upper`);
* the s-integral: ``log φ`` is convex (a Laplace transform), so on each interval of a u-grid it lies below
  the chord through the upper bounds at its ends; on finer cells ``s^{β−1}e^{A + Bs}`` (log-concave) is
  bounded by its largest value (ends or the stationary point); the first cell by ``∫_0^{s₁} s^{β−1} ds``.

The bound is within about 1 % of the exact divergence (an mpmath check in the tests) and is taken as the
minimum with the other valid add-direction bounds of :mod:`dpcalc.engine.mechanisms.random_allocation.rdp`.
"""

from __future__ import annotations

import math

import numpy as np

from dpcalc.engine._special import lazy_special as special

#: The z-grid of the Laplace-transform bound: [_Z_LO, _Z_HI] in steps of _Z_STEP/max(μ, 1).
_Z_LO, _Z_HI, _Z_STEP = -20.0, 12.0, 0.01
#: Thresholds w_c tried (each gives a valid bound; the smallest is kept).
_WC = (0.02, 0.1, 0.25, 0.45, 0.65)
#: Points of the u-grid (chord ends) and fine cells per chord interval.
_U_POINTS, _FINE = 240, 32
_REL = 1e-9


def _log_gauss_interval(u1, u2):
    """``log(Φ(u2) − Φ(u1))`` for ``u1 < u2`` (arrays), accurate in both tails."""
    with np.errstate(divide="ignore", invalid="ignore", under="ignore"):
        up = special.log_ndtr(-u1) + np.log1p(-np.exp(special.log_ndtr(-u2) - special.log_ndtr(-u1)))
        lo = special.log_ndtr(u2) + np.log1p(-np.exp(special.log_ndtr(u1) - special.log_ndtr(u2)))
    return np.where(u1 > 0, up, lo)


def log_laplace_lognormal_upper(mu: float, u) -> np.ndarray:
    """Upper bounds on ``log φ(u) = log E[exp(−u e^{μz − μ²/2})]``, z ~ N(0, 1), for an array ``u >= 0``.

    Tangent of the concave exponent on each cell of the z-grid, closed-form Gaussian integrals in log space,
    the mass beyond the grid bounded by 1 (below) and by the last cell's value (above), a relative 1e-10
    for rounding.  Second order in the step: about 1e-6 relative where φ is not astronomically small."""
    u = np.atleast_1d(np.asarray(u, dtype=float))
    step = _Z_STEP / max(mu, 1.0)  # the tangent's error grows like (μ·step)²
    z = np.arange(_Z_LO, _Z_HI + step / 2, step)
    out = np.zeros(u.size)
    pos = u > 0
    c = 0.5 * mu * mu
    ez = np.exp(mu * z - c)
    for i0 in range(0, int(np.sum(pos)), 64):
        uu = u[pos][i0 : i0 + 64][:, None]
        with np.errstate(under="ignore", over="ignore", divide="ignore", invalid="ignore"):
            h = -uu * ez[None, :]
            b = mu * h[:, :-1]
            lead = h[:, :-1] - b * z[None, :-1] + 0.5 * b * b
            cells = lead + _log_gauss_interval(z[None, :-1] - b, z[None, 1:] - b)
            tails = np.stack(
                [np.full(uu.shape[0], special.log_ndtr(z[0])), h[:, -1] + special.log_ndtr(-z[-1])], axis=1
            )
            allc = np.concatenate([cells, tails], axis=1)
            allc = np.where(np.isnan(allc), 0.0, allc)
            m = np.max(allc, axis=1, keepdims=True)
            val = np.log(np.sum(np.exp(allc - m), axis=1)) + m[:, 0]
        idx = np.nonzero(pos)[0][i0 : i0 + 64]
        out[idx] = np.minimum(val + 1e-10 + 8.0 * np.finfo(float).eps * np.abs(val), 0.0)
    return out


class _Chords:
    """The chord bound on ``t·log φ(s/t)`` over a geometric u-grid reaching ``s_top``, cut into fine cells."""

    def __init__(self, mu: float, t: float, s_top: float):
        u_hi = s_top / t
        u = np.concatenate([[0.0], np.geomspace(1e-6 * min(u_hi, 1.0), u_hi, _U_POINTS)])
        lphi = t * log_laplace_lognormal_upper(mu, u)  # upper bounds on t·log φ at the chord ends
        ends = u * t
        frac = np.linspace(0.0, 1.0, _FINE + 1)
        lo, hi = ends[:-1], ends[1:]
        self.a = (lo[:, None] + (hi - lo)[:, None] * frac[None, :-1]).ravel()
        self.b = (lo[:, None] + (hi - lo)[:, None] * frac[None, 1:]).ravel()
        slope = (lphi[1:] - lphi[:-1]) / (hi - lo)  # log φ convex: its chord lies above it
        self.slope = np.repeat(slope, _FINE)
        self.base = np.repeat(lphi[:-1] - slope * lo, _FINE)

    def log_integral(self, beta: np.ndarray, s_max: np.ndarray) -> np.ndarray:
        """Upper bounds on ``log ∫_0^{S} s^{β−1} φ(s/t)^t ds`` for each (β, S) (arrays of equal length):
        on each cell, ``s^{β−1}e^{A + Bs}`` (log-concave for β >= 1, decreasing for β < 1) times the cell's
        width at its largest value (the ends, or the stationary point (β−1)/(−B) inside); the first cell
        ``∫_0^{b} s^{β−1} ds`` times the largest ``e^{A+Bs}``."""
        be = beta[:, None]
        a = np.broadcast_to(self.a[None, :], (beta.size, self.a.size))
        b = np.minimum(self.b[None, :], s_max[:, None])
        sl, bs = self.slope[None, :], self.base[None, :]
        live = a < s_max[:, None]
        with np.errstate(divide="ignore", invalid="ignore", over="ignore", under="ignore"):

            def lf(s):
                return (be - 1.0) * np.log(s) + bs + sl * s

            star = np.where(sl < 0, (be - 1.0) / -sl, np.inf)
            inside = (star > a) & (star < b) & (be > 1.0)
            top = np.maximum(lf(np.maximum(a, 1e-300)), lf(b))
            top = np.where(inside, np.maximum(top, lf(np.where(inside, star, b))), top)
            logs = top + np.log(b - a)
            first = be * np.log(b) - np.log(be) + np.maximum(bs, bs + sl * b)
            logs = np.where(a == 0.0, first, logs)
            logs = np.where(live & ~np.isnan(logs), logs, -np.inf)
            m = np.max(logs, axis=1, keepdims=True)
            m = np.where(np.isfinite(m), m, 0.0)
            total = np.sum(np.exp(logs - m), axis=1) + 1e-300 * logs.shape[1]
        return np.log(total) + m[:, 0]


def log_moment_add_upper(sigma: float, t: int, alphas) -> np.ndarray:
    """Upper bounds on ``log E_Q[W^{−(α−1)}]`` of the 1-of-t allocation pair at every finite α > 1 (inf
    elsewhere); see the module doc."""
    alphas = np.asarray(alphas, dtype=float).reshape(-1)
    out = np.full(alphas.size, np.inf)
    fin = np.isfinite(alphas) & (alphas > 1.0)
    if not np.any(fin):
        return out
    mu = 1.0 / sigma
    beta = alphas[fin] - 1.0
    best = np.full(beta.size, np.inf)
    m_y, v_y = -0.5 * mu * mu, mu * mu / t  # ȳ ~ N(m_y, v_y)
    x = beta + 50.0
    chords = _Chords(mu, float(t), float(np.max(x)) / min(_WC))
    for wc in _WC:
        log_int = chords.log_integral(beta, x / wc)
        with np.errstate(divide="ignore", under="ignore"):
            log_tail_s = np.log(special.gammaincc(beta, x)) + special.gammaln(beta) - beta * math.log(wc)
            # E[e^{−βȳ}; ȳ < log w_c] = e^{−β m + β² v/2} Φ((log w_c − m + β v)/√v)
            z = (math.log(wc) - m_y + beta * v_y) / math.sqrt(v_y)
            log_low = -beta * m_y + 0.5 * beta**2 * v_y + special.log_ndtr(z)
        first = np.logaddexp(log_int, log_tail_s) - special.gammaln(beta)
        best = np.minimum(best, np.logaddexp(first, log_low))
    out[fin] = best + _REL * (1.0 + np.abs(best)) + 1e-12
    return out
