"""Windowed binomial sums for the subsampled-Gaussian RDP (:mod:`dpcalc.engine.mechanisms.sgm`, docs/math.md §3.2–§3.3).

``S = log Σ_{k=kmin}^{α} exp(F(k) + extra(k))`` with ``F(k) = log C(α,k) + k·a + (α−k)·b + c·k(k−1)``, for
whole-number orders α: only the terms within ``e^-45/(α+1)`` of the largest are summed (located by
bisection on the unimodal pieces of the term sequence) and the omitted ones are bounded and added, so
orders up to 10^4 and beyond cost a few dozen terms each.  Shared by the Poisson (MTZ 2019) and the
sampling-without-replacement (WBK 2019) integer-order sums.
"""

from __future__ import annotations

import numpy as np

from dpcalc.engine._numerics import log1mexp
from dpcalc.engine._special import _EPS, _lgamma_int

#: Terms further than this (in log units, plus log(α+1)) below the reference term are bounded, not summed.
_TAIL = 45.0


def _F(k, alpha, a, b, c, lga=None):
    """log of the k-th term C(α,k)·e^{k·a + (α−k)·b + c·k(k−1)} (whole-number k and α); ``lga``: log Γ(α + 1),
    if the caller has it (a search evaluates F at many k of the same orders)."""
    with np.errstate(invalid="ignore", over="ignore"):
        bterm = np.where(alpha - k == 0, 0.0, (alpha - k) * b)
        return (
            (_lgamma_int(alpha + 1) if lga is None else lga)
            - _lgamma_int(k + 1)
            - _lgamma_int(alpha - k + 1)
            + k * a
            + bterm
            + c * k * (k - 1)
        )


def _h(k, alpha, a, b, c):
    """log(term_{k+1}/term_k) of F; −inf at k = α."""
    with np.errstate(divide="ignore", invalid="ignore"):
        out = np.log(alpha - k) - np.log(k + 1) + (a - b) + 2.0 * c * k
    return np.where(k >= alpha, -np.inf, out)


def _first_true(pred, lo, hi):
    """Smallest integer k in [lo, hi] with pred(k) (pred monotone False→True there); hi+1 if none."""
    L = np.asarray(lo, dtype=float).copy()
    R = np.asarray(hi, dtype=float) + 1.0
    R = np.maximum(R, L)
    while True:
        active = L < R
        if not np.any(active):
            return L
        mid = np.floor((L + R) / 2.0)
        mid_eval = np.where(active, mid, L)
        p = pred(mid_eval) & active
        R = np.where(p, mid, R)
        L = np.where(active & ~p, mid + 1.0, L)


def _log_expm1_factor(k, c):
    """log(1 − e^{−c k(k−1)}): turns a term of A into the matching term of A − 1 (−inf at k ≤ 1)."""
    x = c * k * (k - 1)
    with np.errstate(divide="ignore"):
        return np.where(x > 0, log1mexp(-np.maximum(x, 1e-300)), -np.inf)


def _windowed_logsum(alpha, a, b, c, kmin, minus_one):
    """log Σ_{k=kmin}^{α} exp(F(k) [+ log(1 − e^{−ck(k−1)}) if minus_one]) for flat arrays, integer α ≥ kmin.

    The ratio of consecutive terms, exp(h(k)), has h decreasing, then increasing, then decreasing
    (h' = −1/(α−k) − 1/(k+1) + 2c), so the terms have at most two local maxima with one local minimum
    between.  These are located by bisection; the terms at least ``exp(ref − T)`` (``ref`` = the largest
    of a few actual terms, ``T = 45 + log(α+1)``) form at most two integer windows, summed exactly; every
    omitted term is below ``exp(ref − T)`` and the at most α+1 of them are added as a bound.
    """
    alpha, a, b, c = (np.asarray(x, dtype=float) for x in np.broadcast_arrays(alpha, a, b, c))
    kmin = np.broadcast_to(np.asarray(kmin, dtype=float), alpha.shape)

    lga = _lgamma_int(alpha + 1)

    def F(k):
        return _F(k, alpha, a, b, c, lga)

    def h(k):
        return _h(k, alpha, a, b, c)

    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        disc = (alpha + 1.0) ** 2 - 2.0 * (alpha + 1.0) / c
        two = (c > 0) & (disc > 0)
        sq = np.sqrt(np.where(two, disc, 0.0))
    k1 = np.where(two, ((alpha - 1.0) - sq) / 2.0, alpha)
    k2 = np.where(two, ((alpha - 1.0) + sq) / 2.0, alpha)
    f1 = np.clip(np.floor(k1), kmin - 1.0, alpha)
    c2 = np.clip(np.ceil(k2), kmin, alpha)

    pa = _first_true(lambda k: h(k) <= 0, kmin, f1)
    pb = _first_true(lambda k: h(k) <= 0, c2, alpha)
    cands = np.clip(np.stack([pa, f1 + 1.0, pb, c2, c2 - 1.0, kmin, alpha]), kmin, alpha)
    left_ok = (cands <= kmin) | (h(np.maximum(cands - 1.0, 0.0)) > 0)
    right_ok = (cands >= alpha) | (h(cands) <= 0)
    is_max = left_ok & right_ok
    is_max[-1] |= ~np.any(is_max, axis=0)  # cannot happen in exact arithmetic; keeps p1, p2 defined
    gc = F(cands)
    if minus_one:
        gc = gc + _log_expm1_factor(cands, c)
    ref = np.max(gc, axis=0)
    thr = ref - (_TAIL + np.log(alpha + 1.0))
    p1 = np.min(np.where(is_max, cands, np.inf), axis=0)
    p2 = np.max(np.where(is_max, cands, -np.inf), axis=0)

    L1 = np.minimum(_first_true(lambda k: F(k) >= thr, kmin, p1), p1)
    R2 = np.maximum(_first_true(lambda k: F(k) < thr, p2, alpha) - 1.0, p2)
    two_peaks = p2 > p1
    v = _first_true(lambda k: h(k) > 0, p1, np.maximum(p2 - 1.0, p1))
    v = np.where(two_peaks, np.minimum(v, p2), p1)
    R1 = np.maximum(_first_true(lambda k: F(k) < thr, p1, v) - 1.0, p1)
    L2 = np.minimum(_first_true(lambda k: F(k) >= thr, v, p2), p2)
    merged = ~two_peaks | (R1 + 1.0 >= L2)
    R1 = np.where(merged, R2, R1)
    n1 = (R1 - L1 + 1.0).astype(np.int64)
    n2 = np.where(merged, 0.0, R2 - L2 + 1.0).astype(np.int64)

    owner = np.concatenate([np.arange(alpha.size), np.arange(alpha.size)])
    seg = _segment_logsum(
        np.concatenate([L1, L2]), np.concatenate([n1, n2]), owner, alpha, a, b, c, minus_one
    )
    s = np.full(alpha.size, -np.inf)
    s = np.logaddexp(seg[: alpha.size], seg[alpha.size :])
    with np.errstate(invalid="ignore"):
        return np.logaddexp(s, thr + np.log(alpha + 1.0))  # the omitted terms


def _segment_logsum(lo, counts, owner, alpha, a, b, c, minus_one, chunk_terms=1_000_000):
    """log Σ_{j<counts[i]} exp(G(lo[i] + j)) per segment i (−inf if empty), evaluated in chunks of terms."""
    out = np.full(lo.size, -np.inf)
    nz = np.nonzero(counts > 0)[0]
    if nz.size == 0:
        return out
    cum = np.cumsum(counts[nz])
    done = 0
    i0 = 0
    while i0 < nz.size:
        i1 = max(int(np.searchsorted(cum, done + chunk_terms, side="right")), i0 + 1)
        idx = nz[i0:i1]
        cnt = counts[idx]
        seg_id = np.repeat(np.arange(idx.size), cnt)
        starts = np.concatenate([[0], np.cumsum(cnt)[:-1]])
        k = lo[idx][seg_id] + (np.arange(seg_id.size) - starts[seg_id])
        el = owner[idx][seg_id]
        al = alpha[el]
        vals = _F(k, al, a[el], b[el], c[el])
        if minus_one:
            vals = vals + _log_expm1_factor(k, c[el])
        # rounding: each term's log is a sum of parts of these magnitudes (gammaln and products each
        # within a few ulps), so its relative error is below 4·eps·(1 + mag); that much is added
        with np.errstate(invalid="ignore"):
            mag = (
                _lgamma_int(al + 1)
                + _lgamma_int(k + 1)
                + _lgamma_int(al - k + 1)
                + np.abs(k * a[el])
                + np.abs(np.where(al > k, (al - k) * b[el], 0.0))
                + c[el] * k * k
            )
        rel = 4.0 * _EPS * (2.0 + mag)
        m = np.maximum.reduceat(vals, starts)
        m_safe = np.where(np.isfinite(m), m, 0.0)
        with np.errstate(divide="ignore", over="ignore", invalid="ignore"):
            ex = np.exp(vals - m_safe[seg_id])
            ssum = np.add.reduceat(ex * (1.0 + rel), starts)
            out[idx] = np.where(np.isneginf(m), -np.inf, np.log(ssum) + m_safe)
        done = int(cum[i1 - 1])
        i0 = i1
    return out
