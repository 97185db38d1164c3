"""Rényi DP of the subsampled Gaussian mechanism (formulas.md §3.2 and §3.3).

* :func:`rdp_poisson` — exact RDP of the Poisson-subsampled Gaussian under add/remove-one neighbours
  (Mironov–Talwar–Zhang 2019, arXiv 1908.10530 §3.3; formulas.md §3.2).
* :func:`rdp_without_replacement` — the Wang–Balle–Kasiviswanathan upper bound for sampling without
  replacement under replace-one neighbours (AISTATS 2019, arXiv 1808.00087, Thm 9 / "Thm 27" / Cor. 10;
  formulas.md §3.3).

Both take ``q`` and ``sigma`` (broadcast against each other) and a 1-D array of orders, and return
``broadcast(q, sigma).shape + (len(alphas),)``: the RDP of **one** step (multiply by the number of steps).
``sigma`` is the noise standard deviation divided by the ℓ₂ sensitivity under the neighbouring relation
of the theorem (add/remove for Poisson, replace-one for sampling without replacement).

Numerics.  Integer orders sum the binomial expansion in log space; only the terms within ``e^-45/(α+1)``
of the largest are summed (located by bisection on the unimodal pieces of the term sequence) and the
omitted ones are bounded and added, so orders up to 10^4 and beyond cost a few dozen terms each.  For the
Poisson case the sum is taken for ``A_α - 1`` (all its terms are positive), so tiny RDP values keep full
relative precision.  Fractional orders use the signed two-sided series with the positive and negative
terms accumulated separately; its rounding error and tail are bounded and added.  Where the series gives
up or keeps few digits (A ≈ 1), a quadrature of ``A_α − 1`` with a positive integrand takes over.
The result is never worse than the log-convexity interpolation between the neighbouring integer orders
(an upper bound: ``log A_α`` is convex in α by Hölder's inequality).  Fractional orders above
:data:`FRAC_SERIES_MAX` use that interpolation bound directly.  Bounds are rounded up; RDP is
non-decreasing in α, so each order's bound is also capped by the bounds at higher orders.
"""

from __future__ import annotations

import math

import numpy as np

from ._numerics import LOG2, log1mexp, logsumexp

#: Fractional orders above this use the (valid, slightly loose) log-convex interpolation of integer orders.
FRAC_SERIES_MAX = 300.0
#: Fractional orders up to this use the series first; above it (and where the series fails), the quadrature.
FRAC_SERIES_DIRECT_MAX = 150.0
#: Terms further than this (in log units, plus log(α+1)) below the reference term are bounded, not summed.
_TAIL = 45.0
#: Largest number of series terms for one fractional order before falling back to the interpolation bound.
_FRAC_MAX_TERMS = 200
#: The series is used only where its rounding and tail allowances stay below this fraction of A − 1.
_FRAC_MAX_REL_ERR = 1e-4
#: Series terms evaluated per vectorised step.
_FRAC_BLOCK = 8
_EPS = np.finfo(float).eps


# --------------------------------------------------------------------------------------------------------
# log Γ and log Φ: scipy.special for large arrays; for small ones (one query from the command line) the C
# routines of the math module, so that a single query does not pay scipy's import time.
# --------------------------------------------------------------------------------------------------------

#: With :class:`light_start` active, arrays smaller than this use the math module instead of scipy.special.
_SCIPY_MIN = 1_000
_LIGHT = [False]
_SQRT1_2 = math.sqrt(0.5)
_HALF_LOG_2PI = 0.5 * math.log(2.0 * math.pi)


class light_start:
    """Context manager: small evaluations use the math module's lgamma/erfc, so that a single query does
    not import scipy (0.3 s).  The command line uses it; results agree with scipy's to a few ulps (more where
    the fractional series is ill-conditioned; both are valid upper bounds)."""

    def __enter__(self):
        self._old = _LIGHT[0]
        _LIGHT[0] = True
        return self

    def __exit__(self, *exc):
        _LIGHT[0] = self._old
        return False


def _use_scipy(x) -> bool:
    return not _LIGHT[0] or np.size(x) >= _SCIPY_MIN


def _lgamma1(x):
    try:
        return math.lgamma(x)
    except ValueError:  # a pole (non-positive integer)
        return math.inf


def _log_ndtr1(x):
    """log Φ(x) in double precision: erfc for |x| < 30, the asymptotic series of the Mills ratio below −30."""
    if x > 0:
        return math.log1p(-0.5 * math.erfc(x * _SQRT1_2))
    if x > -30.0:
        return math.log(0.5 * math.erfc(-x * _SQRT1_2))
    t2 = x * x
    s, term = 0.0, 1.0
    for n in range(1, 8):  # Σ (−1)^n (2n−1)!!/x^{2n}; the first omitted term is below 1e-17 at |x| >= 30
        term *= -(2 * n - 1) / t2
        s += term
    return -0.5 * t2 - math.log(-x) - _HALF_LOG_2PI + math.log1p(s)


_lgamma_u = np.frompyfunc(_lgamma1, 1, 1)
_log_ndtr_u = np.frompyfunc(_log_ndtr1, 1, 1)


def _gammaln(x):
    """log|Γ(x)| (+inf at the poles), elementwise."""
    if _use_scipy(x):
        from scipy import special

        return special.gammaln(x)
    return np.asarray(_lgamma_u(np.asarray(x, dtype=float)), dtype=float)


_LGAMMA_TABLE = np.array([np.inf])  # log Γ(n) for n = 0, 1, 2, … (grown on demand)
_LGAMMA_TABLE_MAX = 1 << 17


def _lgamma_int(x):
    """log Γ(x) for whole-number x (+inf for x <= 0): a cached table of math.lgamma (correctly rounded to
    within an ulp), scipy/math beyond 2^17."""
    global _LGAMMA_TABLE
    x = np.asarray(x, dtype=float)
    top = float(np.max(x, initial=0.0))
    if top >= _LGAMMA_TABLE_MAX:
        return _gammaln(x)
    if top >= _LGAMMA_TABLE.size:
        size = int(min(max(2 * top + 2, 1024), _LGAMMA_TABLE_MAX))
        _LGAMMA_TABLE = np.array([math.inf] + [math.lgamma(i) for i in range(1, size)])
    return _LGAMMA_TABLE[np.clip(x, 0, None).astype(np.intp)]


def _log_ndtr(x):
    """log Φ(x), elementwise."""
    if _use_scipy(x):
        from scipy import special

        return special.log_ndtr(x)
    return np.asarray(_log_ndtr_u(np.asarray(x, dtype=float)), dtype=float)


# --------------------------------------------------------------------------------------------------------
# Windowed sums  S = log Σ_{k=kmin}^{α} exp(F(k) + extra(k)),  F(k) = log C(α,k) + k·a + (α−k)·b + c·k(k−1)
# --------------------------------------------------------------------------------------------------------


def _F(k, alpha, a, b, c):
    """log of the k-th term C(α,k)·e^{k·a + (α−k)·b + c·k(k−1)} (whole-number k and α)."""
    with np.errstate(invalid="ignore", over="ignore"):
        bterm = np.where(alpha - k == 0, 0.0, (alpha - k) * b)
        return (
            _lgamma_int(alpha + 1)
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

    def F(k):
        return _F(k, alpha, a, b, c)

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


# --------------------------------------------------------------------------------------------------------
# Poisson subsampling (formulas.md §3.2)
# --------------------------------------------------------------------------------------------------------


def _log_a_int_poisson(q, sigma, alpha):
    """log A_α for integer α ≥ 2 and 0 < q < 1 (flat arrays), via A_α − 1 = Σ_{k≥2} C(α,k) q^k (1−q)^{α−k}
    (e^{k(k−1)/(2σ²)} − 1) — MTZ 2019 §3.3 (formulas.md §3.2, integer α), all terms positive."""
    c = 0.5 / sigma**2
    a, b = np.log(q), np.log1p(-q)
    log_am1 = np.empty(alpha.size)
    small = alpha <= _DENSE_MAX
    if np.any(small):
        log_am1[small] = _dense_logsum(alpha[small], a[small], b[small], c[small])
    if np.any(~small):
        big = ~small
        log_am1[big] = _windowed_logsum(alpha[big], a[big], b[big], c[big], 2.0, True)
    return np.logaddexp(0.0, log_am1)


#: Integer orders up to this sum all their terms directly (cheaper than locating the window).
_DENSE_MAX = 64


def _dense_logsum(alpha, a, b, c):
    """log Σ_{k=2}^{α} C(α,k)e^{k·a + (α−k)·b}(e^{c·k(k−1)} − 1), every term (α ≤ _DENSE_MAX), with the same
    rounding allowance per term as :func:`_segment_logsum`.  One pass over a padded (elements × k) array when
    that is small, else one pass per distinct order."""
    kmax = float(np.max(alpha))
    if alpha.size * (kmax - 1.0) <= 400_000:
        return _dense_block(alpha, a, b, c, np.arange(2.0, kmax + 1.0))
    out = np.empty(alpha.size)
    for av in np.unique(alpha):
        sel = np.nonzero(alpha == av)[0]
        out[sel] = _dense_block(alpha[sel], a[sel], b[sel], c[sel], np.arange(2.0, av + 1.0))
    return out


def _dense_block(alpha, a, b, c, k):
    al, aa, bb, cc = alpha[:, None], a[:, None], b[:, None], c[:, None]
    use = k <= al
    kk = np.where(use, k, 2.0)
    lga, lgk, lgj = _lgamma_int(al + 1.0), _lgamma_int(kk + 1.0), _lgamma_int(al - kk + 1.0)
    quad = cc * (kk * (kk - 1.0))
    ka, jb = kk * aa, (al - kk) * bb
    with np.errstate(invalid="ignore"):
        vals = (lga - lgk - lgj) + ka + jb + quad + log1mexp(-quad)
        mag = (lga + lgk + lgj) + np.abs(ka) + np.abs(jb) + cc * (kk * kk)
    vals = np.where(use, vals + 4.0 * _EPS * (2.0 + mag), -np.inf)  # log(1 + x) <= x
    return logsumexp(vals, axis=1)


def _add_err(new, block, nterms):
    """Bound on the absolute error (log units) of adding a block of ``nterms`` positive terms, whose log-sum is
    ``block``, to a log-space accumulator giving ``new``: 2·eps·|new| + (nterms + 1)·eps·e^{block − new}."""
    fin = np.isfinite(new)
    with np.errstate(invalid="ignore", over="ignore"):
        share = np.where(fin & np.isfinite(block), np.exp(block - np.where(fin, new, 0.0)), 0.0)
    return np.where(
        fin, 2.0 * _EPS * np.abs(np.where(fin, new, 0.0)) + (nterms + 1.0) * _EPS * share + 1e-300, 0.0
    )


def _log_a_frac_poisson(q, sigma, alpha):
    """log A_α for fractional α (flat arrays) by the signed two-sided series of MTZ 2019 §3.3
    (formulas.md §3.2, fractional α).  Returns (log A upper bound, ok, precise); ``ok`` is False where the
    series was abandoned (the caller then uses the quadrature or the interpolation bound).

    Terms k = 0, 1, …: ``C(α,k)·[q^k(1−q)^{α−k}e^{(k²−k)/(2σ²)}Q((k−z0)/σ) + q^{α−k}(1−q)^k e^{((α−k)²−(α−k))/(2σ²)}
    Q((z0−α+k)/σ)]``.  Positive and negative terms are accumulated separately in log space.  Past k = ⌊α⌋+1
    the signs alternate; the sum stops once the terms decrease and lie e^-21 below the running A − 1, or
    after :data:`_FRAC_MAX_TERMS` terms if they decrease by then; the alternating tail is then bounded by the
    last term, which is added, as is a bound on the rounding error (per term 8·eps·(1 + Σ|log parts|), plus
    the log-space accumulation error).  Where those allowances exceed 1e-4 of A − 1 (tiny RDP: A ≈ 1 leaves
    the sum too few digits) the element is reported not ok; ``precise`` says where they are below 1e-9.
    """
    n = alpha.size
    res_pos = np.full(n, -np.inf)
    res_neg = np.full(n, -np.inf)
    res_err = np.full(n, -np.inf)
    res_ok = np.zeros(n, dtype=bool)
    # working (compacted) copies of the elements still summing
    idx = np.arange(n)
    al = alpha.astype(float)
    sg = sigma.astype(float)
    lq = np.log(q)
    l1q = np.log1p(-q)
    z0 = sg**2 * (l1q - lq) + 0.5
    inv2s2 = 0.5 / sg**2
    lga = _gammaln(al + 1.0)
    fl = np.floor(al)
    pos = np.full(n, -np.inf)
    neg = np.full(n, -np.inf)
    err = np.full(n, -np.inf)
    dpos = np.zeros(n)
    dneg = np.zeros(n)
    B = _FRAC_BLOCK
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        for k0 in range(0, _FRAC_MAX_TERMS, B):
            ks = k0 + np.arange(B, dtype=float)
            j = al[:, None] - ks
            lgk = _lgamma_int(ks + 1.0)
            lgj = _gammaln(j + 1.0)  # log|Γ(α−k+1)|
            lc = lga[:, None] - lgk - lgj
            e0 = ks * lq[:, None] + j * l1q[:, None] + (ks * ks - ks) * inv2s2[:, None]
            e1 = j * lq[:, None] + ks * l1q[:, None] + (j * j - j) * inv2s2[:, None]
            t = np.logaddexp(
                lc + e0 + _log_ndtr((z0[:, None] - ks) / sg[:, None]),
                lc + e1 + _log_ndtr((j - z0[:, None]) / sg[:, None]),
            )
            mag = lga[:, None] + np.abs(lgk) + np.abs(lgj) + np.abs(e0) + np.abs(e1)
            err = np.logaddexp(err, logsumexp(t + np.log(8.0 * _EPS * (1.0 + mag)), axis=1))
            nsign = ks - fl[:, None] - 1.0
            is_neg = (nsign > 0) & (nsign % 2 == 1)
            lps = logsumexp(np.where(is_neg, -np.inf, t), axis=1)
            lns = logsumexp(np.where(is_neg, t, -np.inf), axis=1)
            p_new, n_new = np.logaddexp(pos, lps), np.logaddexp(neg, lns)
            dpos = dpos + _add_err(p_new, lps, B)
            dneg = dneg + _add_err(n_new, lns, B)
            pos, neg = p_new, n_new
            last = t[:, -1]
            past = nsign[:, -2] > 0
            shrinking = last <= t[:, -2]
            if not np.any(past):
                continue
            am1 = np.logaddexp(pos + log1mexp(np.minimum(neg - pos, 0.0)), -745.0)
            am1 = am1 + log1mexp(-np.maximum(am1, 1e-300))  # log(A − 1)
            conv = past & shrinking & (last < np.maximum(am1, -60.0) - 21.0)
            final = k0 + B >= _FRAC_MAX_TERMS
            finish = conv | (past & shrinking & final)
            leave = finish | final
            if not np.any(leave):
                continue
            ii = idx[leave]
            res_pos[ii] = pos[leave]
            res_neg[ii] = neg[leave]
            tot_err = np.logaddexp(
                err[leave], np.logaddexp(pos[leave] + np.log(dpos[leave]), neg[leave] + np.log(dneg[leave]))
            )
            res_err[ii] = np.logaddexp(tot_err, last[leave])  # + the alternating tail, below the last term
            res_ok[ii] = finish[leave]
            keep = ~leave
            if not np.any(keep):
                break
            idx, al, sg, lq, l1q, z0, inv2s2, lga, fl = (
                x[keep] for x in (idx, al, sg, lq, l1q, z0, inv2s2, lga, fl)
            )
            pos, neg, err, dpos, dneg = (x[keep] for x in (pos, neg, err, dpos, dneg))
        diff = res_pos + log1mexp(np.minimum(res_neg - res_pos, 0.0))
        up = np.logaddexp(diff, res_err)
        # log(A − 1): where the allowances are not small against it, A ≈ 1 has left the series too few digits
        am1 = np.where(diff > 0, diff + log1mexp(-np.maximum(diff, 1e-300)), -np.inf)
    good = res_ok & np.isfinite(up) & (res_err <= am1 + math.log(_FRAC_MAX_REL_ERR))
    precise = good & (res_err <= am1 + math.log(1e-9))
    return np.where(good, np.maximum(up, 0.0), np.inf), good, precise


#: Largest quadrature grid (the step shrinks with πσ², so very small σ at large α is left to the series).
_QUAD_MAX_POINTS = 40_000


def _log_a_frac_quad(q, sigma, alpha):
    """log A_α for fractional α by quadrature of a positive integrand, where the series gives up (large σ with
    q near 1/2, or A − 1 too small for the series' digits).  MTZ 2019 §3.3 (formulas.md §3.2):
    ``A_α − 1 = E_{z~N(0,σ²)}[(1+u)^α − 1 − αu]`` with ``u = q(e^{(2z−1)/(2σ²)} − 1)``, since E[u] = 0; the
    integrand is ≥ 0 by convexity and is evaluated stably (its Taylor series where α|u| < 0.01).  The
    trapezoid rule with step ``h = min(σ/4, πσ²/6)`` over ``[−30σ, α + 30σ]`` converges geometrically for
    this integrand, analytic in the strip |Im z| < πσ² (its branch points lie πσ² off the axis): the error is
    about e^{−2πd/h}·e^{d²/(2σ²)} for a strip of half-width d <= πσ², below 1e-15 relative at this step; a
    relative allowance of 1e-10 is added.  Returns (log A upper bound, ok).
    """
    out = np.full(alpha.size, np.inf)
    ok = np.zeros(alpha.size, dtype=bool)
    h = np.minimum(sigma / 4.0, np.pi * sigma**2 / 6.0)
    lo = -30.0 * sigma
    hi = alpha + 30.0 * sigma
    npts = np.ceil((hi - lo) / h) + 1
    fits = npts <= _QUAD_MAX_POINTS
    for i0 in range(0, alpha.size, 64):
        sel = np.nonzero(fits[i0 : i0 + 64])[0] + i0
        if sel.size == 0:
            continue
        m = int(np.max(npts[sel]))
        t = np.arange(m, dtype=float)
        z = lo[sel, None] + t * h[sel, None]
        inside = z <= hi[sel, None] + h[sel, None]
        s2 = sigma[sel, None] ** 2
        a = alpha[sel, None]
        with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
            x = (2.0 * z - 1.0) / (2.0 * s2)
            u = q[sel, None] * np.expm1(np.minimum(x, 700.0))  # only used where α·log1p(u) < 700
            small = np.abs(a * u) < 0.01
            # Taylor: Σ_{j>=2} C(α,j)u^j, 8 terms (error below (α|u|)^7 relative)
            coef = a * (a - 1.0) / 2.0
            term = coef * u * u
            ser = term.copy()
            for j in range(3, 10):
                term = term * (a - j + 1.0) / j * u
                ser = ser + term
            log_small = np.log(np.where(small, ser, 1.0))
            # α·log(1 + u) in log space for large u: log u = log q + x + log(1 − e^{−x})
            lu = np.log(q[sel, None]) + x + log1mexp(-np.maximum(x, 1e-300))
            tt = np.where(x > 0, a * np.logaddexp(0.0, lu), a * np.log1p(u))
            direct = np.where(tt < 700.0, np.expm1(np.minimum(tt, 700.0)) - a * u, np.inf)
            log_big = np.where(tt < 700.0, np.log(np.where(direct > 0, direct, 1.0)), tt)
            log_big = np.where((tt < 700.0) & ~(direct > 0), -np.inf, log_big)
            lg = np.where(small, log_small, log_big)
            lg = np.where(small & ~(ser > 0), -np.inf, lg)
            dens = -0.5 * z * z / s2 - 0.5 * np.log(2.0 * np.pi * s2)
            vals = np.where(inside, dens + lg, -np.inf)
        log_am1 = logsumexp(vals, axis=1) + np.log(h[sel]) + 1e-10
        out[sel] = np.logaddexp(0.0, log_am1)
        ok[sel] = np.isfinite(out[sel])
    return np.nextafter(out, np.inf), ok


def _prepare(q, sigma, alphas):
    q = np.asarray(q, dtype=float)
    sigma = np.asarray(sigma, dtype=float)
    alphas = np.asarray(alphas, dtype=float).reshape(-1)
    if np.any(~(alphas > 1.0)):
        raise ValueError("orders must be > 1")
    if np.any(~((q >= 0) & (q <= 1))):
        raise ValueError("q must lie in [0, 1]")
    if np.any(~(sigma >= 0)):
        raise ValueError("sigma must be >= 0")
    shape = np.broadcast_shapes(q.shape, sigma.shape)
    qf = np.broadcast_to(q, shape).reshape(-1)
    sf = np.broadcast_to(sigma, shape).reshape(-1)
    pairs, inverse = np.unique(np.stack([qf, sf], axis=1), axis=0, return_inverse=True)
    return shape, pairs[:, 0], pairs[:, 1], np.asarray(inverse).reshape(-1), alphas


def _per_order(shape, qu, su, inverse, alphas, generic, q_one):
    """Fill the (unique pairs × orders) table: special cases, then ``generic(q, σ, alphas)`` → (pairs, m)
    log A table for the pairs with 0 < q < 1, σ > 0; RDP = log A/(α − 1)."""
    m = alphas.size
    P = qu.size
    Qm = np.repeat(qu, m).reshape(P, m)
    Sm = np.repeat(su, m).reshape(P, m)
    Am = np.broadcast_to(alphas, (P, m))
    out = np.zeros((P, m))
    with np.errstate(divide="ignore", over="ignore"):
        out = np.where(Sm == 0, np.inf, out)
        out = np.where((Qm == 1) & (Sm > 0), q_one(Am, Sm), out)
    out = np.where(np.isposinf(Am) & (Qm > 0), np.inf, out)
    out = np.where(Qm == 0, 0.0, out)
    main = (qu > 0) & (qu < 1) & (su > 0)
    fin = np.isfinite(alphas)
    if np.any(main) and np.any(fin):
        af = alphas[fin]
        with np.errstate(over="ignore"):
            sub = generic(qu[main], su[main], af) / (af - 1.0)
        rows = out[main]
        rows[:, fin] = sub
        out[main] = rows
    return out[inverse].reshape(shape + (m,))


def _int_table(q, sigma, alphas, log_a_int):
    """log A at the integer orders needed (the integer α's and ⌊α⌋, ⌊α⌋+1 of the others): returns
    ``lookup(k_array (m',)) -> (pairs, m')`` (log A_1 = 0)."""
    fl = np.floor(alphas)
    frac = fl != alphas
    ks = np.unique(np.concatenate([fl, fl[frac] + 1.0]))
    ks = ks[ks >= 2]
    P, n = q.size, ks.size
    table = log_a_int(np.repeat(q, n), np.repeat(sigma, n), np.tile(ks, P)).reshape(P, n)

    def lookup(k):
        idx = np.searchsorted(ks, np.maximum(k, 2.0))
        return np.where(k >= 2, table[:, idx], 0.0)

    return lookup


def _interp_table(alphas, lookup):
    """Chord bound on log A_α between ⌊α⌋ and ⌈α⌉ (convexity of α ↦ log A_α; Hölder; WBK 2019 Cor. 10)."""
    lo = np.floor(alphas)
    t = alphas - lo
    la_lo, la_hi = lookup(lo), lookup(lo + 1.0)
    with np.errstate(invalid="ignore"):
        return np.where(np.isposinf(la_lo) | np.isposinf(la_hi), np.inf, (1.0 - t) * la_lo + t * la_hi)


def _rdp_poisson_generic(q, sigma, alphas):
    lookup = _int_table(q, sigma, alphas, _log_a_int_poisson)
    is_int = alphas == np.floor(alphas)
    out = np.empty((q.size, alphas.size))
    out[:, is_int] = lookup(alphas[is_int])
    fr = ~is_int
    if np.any(fr):
        af = alphas[fr]
        best = _interp_table(af, lookup)
        small = af <= FRAC_SERIES_MAX
        if np.any(small):
            asm = af[small]
            P, n = q.size, asm.size
            qq, ss, aa = np.repeat(q, n), np.repeat(sigma, n), np.tile(asm, P)
            series = np.full(aa.size, np.inf)
            ok = np.zeros(aa.size, dtype=bool)
            use = (
                aa <= FRAC_SERIES_DIRECT_MAX
            )  # above, the series needs more than α terms: quadrature instead
            if np.any(use):
                series[use], ok[use], _ = _log_a_frac_poisson(qq[use], ss[use], aa[use])
            bad = ~ok
            if np.any(bad):  # where the series gave up or kept few digits: the quadrature of A − 1
                quad, qok = _log_a_frac_quad(qq[bad], ss[bad], aa[bad])
                series[bad] = np.where(qok, np.minimum(quad, series[bad]), series[bad])
                ok[bad] |= qok
            series, ok = series.reshape(P, n), ok.reshape(P, n)
            cur = best[:, small]
            best[:, small] = np.where(ok, np.minimum(series, cur), cur)
        out[:, fr] = best
    return out


def rdp_poisson(q, sigma, alphas):
    """RDP of one step of the Poisson-subsampled Gaussian mechanism, add/remove-one neighbours.

    Mironov, Talwar, Zhang, "Rényi Differential Privacy of the Sampled Gaussian Mechanism" (2019,
    arXiv 1908.10530) §3.3: ``RDP(α) = log A_α/(α−1)`` with ``A_α = E_{z~N(0,σ²)}[((1−q) + q·e^{(2z−1)/(2σ²)})^α]``
    (the direction D_α(μ‖μ0), which dominates for this mechanism — MTZ Thm 4; formulas.md §3.2).
    Integer orders: binomial expansion (exact up to rounding, 45+log(α+1) nats of truncation bounded and
    added); fractional orders up to :data:`FRAC_SERIES_MAX`: the signed two-sided series (exact), or where it
    fails the quadrature of A − 1, capped by the log-convex interpolation bound; above it: the
    interpolation bound (a valid upper bound, within a few parts in 10^4 of exact at such orders).  Special cases: q=0 → 0, q=1 → α/(2σ²), σ=0 → ∞.

    ``q`` and ``sigma`` broadcast; returns ``broadcast(q, sigma).shape + (len(alphas),)`` (per step).
    """
    shape, qu, su, inv, alphas = _prepare(q, sigma, alphas)
    with np.errstate(over="ignore"):
        res = _per_order(shape, qu, su, inv, alphas, _rdp_poisson_generic, lambda A, S: A / (2.0 * S**2))
    return _monotone(_round_up(res), alphas)


# --------------------------------------------------------------------------------------------------------
# Sampling without replacement (formulas.md §3.3)
# --------------------------------------------------------------------------------------------------------

#: Orders up to this use the forward-difference ("Theorem 27") term, as dp_accounting does; above, 2e^{(j−1)ε(j)}.
WOR_FORWARD_DIFF_MAX = 256


def _log_even_forward_diffs(sigma, n):
    """log Δ_l for even l = 0, 2, …, ≤ n, per σ (rows; odd columns unused): Δ_l = Σ_i (−1)^{l−i}C(l,i)z_i with
    z_i = e^{(i−1)i/(2σ²)} (WBK 2019 "Thm 27"; formulas.md §3.3).  Shape (len(sigma), n+1).

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
    with ε(j) = j/(2σ²) (WBK 2019 Thm 9 and "Thm 27"; formulas.md §3.3).  The forward-difference term is
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
    (formulas.md §3.3).  An **upper bound**, not exact.  ``sigma`` is the noise standard deviation over
    the replace-one ℓ₂ sensitivity.  Special cases: q=1 → α/(2σ²), q=0 → 0, σ=0 → ∞.

    ``q`` and ``sigma`` broadcast; returns ``broadcast(q, sigma).shape + (len(alphas),)`` (per step).
    """
    shape, qu, su, inv, alphas = _prepare(q, sigma, alphas)
    with np.errstate(over="ignore"):
        res = _per_order(shape, qu, su, inv, alphas, _rdp_wor_generic, lambda A, S: A / (2.0 * S**2))
    return _monotone(_round_up(res), alphas)


def _round_up(x):
    """One ulp up (safe side), keeping exact zeros."""
    return np.where(x == 0, 0.0, np.nextafter(x, np.inf))


def _monotone(rdp, alphas):
    """RDP is non-decreasing in α, so a bound at a higher order bounds every lower one: suffix minimum."""
    order = np.argsort(alphas)
    r = rdp[..., order]
    r = np.minimum.accumulate(r[..., ::-1], axis=-1)[..., ::-1]
    out = np.empty_like(rdp)
    out[..., order] = r
    return out
