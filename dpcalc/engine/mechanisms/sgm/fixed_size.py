"""Rényi DP bound of the Gaussian sampled without replacement, replace-one neighbours (docs/math.md §3.3).

Wang–Balle–Kasiviswanathan, AISTATS 2019 (arXiv 1808.00087): Thm 9 with the strengthened Gaussian term
("Thm 27") for integer orders, Cor. 10 (log-convex interpolation) for fractional ones.  An upper bound, not
exact.  The public facade is :mod:`dpcalc.engine.mechanisms.sgm`.
"""

from __future__ import annotations

import numpy as np

from dpcalc.engine._numerics import LOG2, log1mexp, logsumexp
from dpcalc.engine._special import _lgamma_int
from dpcalc.engine.mechanisms.sgm._orders import (
    _int_table,
    _interp_table,
    _monotone,
    _per_order,
    _prepare,
    _q_one,
    _round_up,
)
from dpcalc.engine.mechanisms.sgm._series import _windowed_logsum

#: Orders up to this use the forward-difference ("Theorem 27") term, as dp_accounting does; above, 2e^{(j−1)ε(j)}.
WOR_FORWARD_DIFF_MAX = 256


def _log_even_forward_diffs(sigma, n):
    """log Δ_l for even l = 0, 2, …, ≤ n, per σ (rows; odd columns unused): Δ_l = Σ_i (−1)^{l−i}C(l,i)z_i with
    z_i = e^{(i−1)i/(2σ²)} (WBK 2019 "Thm 27"; docs/math.md §3.3).  Shape (len(sigma), n+1).

    The alternating sum cancels catastrophically at large σ or l (dp_accounting's iterated differences in log
    space can come out far too high or too low), so it is evaluated instead as a Gaussian integral with a
    positive integrand: with c = 1/(2σ²) and Y ~ N(0, 2c), z_i = E[e^{i(Y−c)}], hence for even l
    ``Δ_l = E[(e^{Y−c} − 1)^l] = ∫ φ(z)(e^{z/σ−c} − 1)^l dz``, by the trapezoid rule (step 0.05 over
    [−40, lσ⁻¹ + 12√(l+1) + 60]: exponentially accurate for this entire integrand; the last point is checked
    to be negligible).  A relative allowance of 1e-9 is added.  Where the grid would exceed 20000 points,
    Δ_l = +inf, so the bound falls back to the Thm 9 term (still valid).
    """
    h = 0.05
    out = np.full((sigma.size, n + 1), np.inf)
    ls = np.arange(0, n + 1, 2, dtype=float)
    for r, sg in enumerate(np.asarray(sigma, dtype=float)):
        s = 1.0 / sg
        c = 0.5 * s * s
        z_hi = ls * s + 12.0 * np.sqrt(ls + 1.0) + 60.0
        usable = z_hi + 40.0 <= 20000 * h
        if not np.any(usable):
            continue
        lu = ls[usable]
        z = np.arange(-40.0, float(np.max(z_hi[usable])) + h, h)
        x = s * z - c
        with np.errstate(divide="ignore", invalid="ignore"):
            la = np.where(x > 0, x + log1mexp(-np.abs(x)), log1mexp(-np.abs(x)))  # log|e^x − 1|
            la = np.where(x == 0, -np.inf, la)
            g = -0.5 * z * z - 0.5 * np.log(2.0 * np.pi) + lu[:, None] * la[None, :]
        g[0, :] = -0.5 * z * z - 0.5 * np.log(2.0 * np.pi)  # l = 0: the plain normal density
        g = np.where(z[None, :] <= z_hi[usable][:, None], g, -np.inf)
        val = logsumexp(g, axis=1) + np.log(h)
        end = np.take_along_axis(g, np.argmin(np.abs(z[None, :] - z_hi[usable][:, None]), axis=1)[:, None], 1)
        ok = end[:, 0] < val - 60.0
        val = np.where(ok, val + 1e-9, np.inf)
        cols = lu.astype(int)
        out[r, cols] = val
    return out


def _log_a_wor_int(q, sigma, alpha):
    """log of the WBK bound on A_α = e^{(α−1)RDP(α)} for integer α ≥ 2, 0 < q < 1 (flat arrays):
    ``1 + q²C(α,2)min{4(e^{ε(2)}−1), 2e^{ε(2)}} + Σ_{j≥3} q^j C(α,j) min{4√(Δ_{2⌊j/2⌋}Δ_{2⌈j/2⌉}), 2e^{(j−1)ε(j)}}``
    with ε(j) = j/(2σ²) (WBK 2019 Thm 9 and "Thm 27"; docs/math.md §3.3).  The forward-difference term is
    used for α ≤ 256 as in dp_accounting; above, only ``2e^{(j−1)ε(j)}`` (still a valid bound)."""
    c = 0.5 / sigma**2
    lq = np.log(q)
    e2 = 2.0 * c
    s2 = 2 * lq + _lgamma_int(alpha + 1) - _lgamma_int(alpha - 1) - LOG2
    s2 = s2 + np.minimum(np.log(4.0) + e2 + log1mexp(-e2), e2 + LOG2)
    out = np.logaddexp(0.0, s2)
    small = alpha <= WOR_FORWARD_DIFF_MAX
    if np.any(small):
        a_s, q_s, s_s = alpha[small], lq[small], sigma[small]
        su, si = np.unique(s_s, return_inverse=True)
        nmax = int(np.max(a_s))
        deltas = _log_even_forward_diffs(su, nmax + 1)
        acc = out[small].copy()
        lga = _lgamma_int(a_s + 1)
        for j in range(3, nmax + 1):
            act = a_s >= j
            lo = deltas[si, 2 * (j // 2)]
            hi = deltas[si, 2 * ((j + 1) // 2)]
            term = np.minimum(np.log(4.0) + 0.5 * (lo + hi), LOG2 + (j - 1) * j * c[small])
            with np.errstate(invalid="ignore"):
                term = term + j * q_s + lga - _lgamma_int(j + 1.0) - _lgamma_int(a_s - j + 1)
            acc = np.where(act, np.logaddexp(acc, term), acc)
        out[small] = acc
    big = ~small
    if np.any(big):
        rest = _windowed_logsum(alpha[big], lq[big], 0.0, c[big], 3.0, False)
        out[big] = np.logaddexp(out[big], LOG2 + rest)
    return out


def _rdp_wor_generic(q, sigma, alphas):
    lookup = _int_table(q, sigma, alphas, _log_a_wor_int)
    is_int = alphas == np.floor(alphas)
    out = np.empty((q.size, alphas.size))
    out[:, is_int] = lookup(alphas[is_int])
    if np.any(~is_int):
        out[:, ~is_int] = _interp_table(alphas[~is_int], lookup)
    return out


def rdp_without_replacement(q, sigma, alphas):
    """RDP bound of one step of the Gaussian mechanism on a uniformly random subset of size m = q·n
    (sampling without replacement), replace-one neighbours with n public.

    Wang, Balle, Kasiviswanathan, "Subsampled Rényi Differential Privacy and Analytical Moments Accountant"
    (AISTATS 2019, arXiv 1808.00087): Thm 9 specialised to the Gaussian with the strengthened Gaussian
    term ("Thm 27") for integer α; Cor. 10 (linear interpolation of the CGF) for fractional α
    (docs/math.md §3.3).  An **upper bound**, not exact.  ``sigma`` is the noise standard deviation over
    the replace-one ℓ₂ sensitivity.  Special cases: q=1 → α/(2σ²), q=0 → 0, σ=0 → ∞.

    ``q`` and ``sigma`` broadcast; returns ``broadcast(q, sigma).shape + (len(alphas),)`` (per step).
    """
    shape, qu, su, inv, alphas = _prepare(q, sigma, alphas)
    with np.errstate(over="ignore"):
        res = _per_order(shape, qu, su, inv, alphas, _rdp_wor_generic, _q_one)
    return _monotone(_round_up(res), alphas)
