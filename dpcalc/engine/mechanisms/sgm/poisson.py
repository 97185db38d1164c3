"""Exact Rényi DP of the Poisson-subsampled Gaussian, add/remove-one neighbours (docs/math.md §3.2).

Mironov–Talwar–Zhang 2019 (arXiv 1908.10530) §3.3.  Integer orders sum the binomial expansion of
``A_α − 1`` in log space (all its terms are positive, so tiny RDP values keep full relative precision).
Fractional orders use the signed two-sided series with the positive and negative terms accumulated
separately; its rounding error and tail are bounded and added.  Where the series gives up or keeps few
digits (A ≈ 1), a quadrature of ``A_α − 1`` with a positive integrand takes over.  The result is never
worse than the log-convexity interpolation between the neighbouring integer orders; fractional orders above
:data:`FRAC_SERIES_MAX` use that interpolation bound directly.  The public facade is :mod:`dpcalc.engine.mechanisms.sgm`.
"""

from __future__ import annotations

import math

import numpy as np

from dpcalc.engine._numerics import log1mexp, logsumexp_rows
from dpcalc.engine._special import _EPS, _gammaln, _lgamma_int, _log_ndtr, light_active
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

#: Fractional orders above this use the (valid, slightly loose) log-convex interpolation of integer orders.
FRAC_SERIES_MAX = 300.0
#: Fractional orders up to this use the series first; above it (and where the series fails), the quadrature.
FRAC_SERIES_DIRECT_MAX = 150.0
#: Largest number of series terms for one fractional order before falling back to the interpolation bound.
_FRAC_MAX_TERMS = 200
#: The series is used only where its rounding and tail allowances stay below this fraction of A − 1.
_FRAC_MAX_REL_ERR = 1e-4
#: Series terms evaluated per vectorised step.
_FRAC_BLOCK = 8


def _log_a_int_poisson(q, sigma, alpha):
    """log A_α for integer α ≥ 2 and 0 < q < 1 (flat arrays), via A_α − 1 = Σ_{k≥2} C(α,k) q^k (1−q)^{α−k}
    (e^{k(k−1)/(2σ²)} − 1) — MTZ 2019 §3.3 (docs/math.md §3.2, integer α), all terms positive."""
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
    # a pass per order, where log C(α, k) depends on the order alone and log(e^{c·k(k−1)} − 1) on c (that is σ)
    # alone: each evaluated once and broadcast or gathered (the same operations on the same numbers)
    out = np.empty(alpha.size)
    cu, ci = np.unique(c, return_inverse=True)
    ci = ci.reshape(-1)
    ks = np.arange(2.0, kmax + 1.0)
    quad = cu[:, None] * (ks * (ks - 1.0))
    with np.errstate(invalid="ignore"):
        l1m = log1mexp(-quad)
    for av in np.unique(alpha):
        sel = np.nonzero(alpha == av)[0]
        kn = int(av) - 1
        rows = ci[sel]
        out[sel] = _dense_block(
            np.array([av]), a[sel], b[sel], c[sel], ks[:kn], (quad[rows, :kn], l1m[rows, :kn])
        )
    return out


def _dense_block(alpha, a, b, c, k, quad_l1m=None):
    """The log-sums of :func:`_dense_logsum` over the terms ``k`` (padded with −∞ past each element's order).
    ``quad_l1m``: c·k(k−1) and log(1 − e^{−c·k(k−1)}) per element and term, where every element has the one
    order ``alpha`` (shape (1,)) and ``k`` runs to it (no padding)."""
    al, aa, bb, cc = alpha[:, None], a[:, None], b[:, None], c[:, None]
    use = k <= al
    kk = np.where(use, k, 2.0)
    lga, lgk, lgj = _lgamma_int(al + 1.0), _lgamma_int(kk + 1.0), _lgamma_int(al - kk + 1.0)
    if quad_l1m is None:
        quad = cc * (kk * (kk - 1.0))
        with np.errstate(invalid="ignore"):
            l1m = log1mexp(-quad)
    else:
        quad, l1m = quad_l1m
    ka, jb = kk * aa, (al - kk) * bb
    with np.errstate(invalid="ignore"):
        vals = (lga - lgk - lgj) + ka + jb + quad + l1m
        mag = (lga + lgk + lgj) + np.abs(ka) + np.abs(jb) + cc * (kk * kk)
    vals = np.where(use, vals + 4.0 * _EPS * (2.0 + mag), -np.inf)  # log(1 + x) <= x
    return logsumexp_rows(vals, _DENSE_MAX)  # one fixed block: a row's bits do not depend on its padding


def _sum_terms(x):
    """Sum over axis 0 of a (2^k × n) array of terms, as a pairwise tree: ((x0 + x1) + (x2 + x3)) + … — for 8 terms
    the order numpy's pairwise sum takes along a row of 8, so the series' values do not depend on its layout."""
    while x.shape[0] > 1:
        x = x[0::2] + x[1::2]
    return x[0]


def _logsumexp_terms(x):
    """``logsumexp`` over axis 0 of a (terms × elements) array (:func:`_sum_terms` order); all −∞ gives −∞."""
    m = np.max(x, axis=0)
    m_safe = np.where(np.isfinite(m), m, 0.0)
    with np.errstate(divide="ignore"):
        s = np.log(_sum_terms(np.exp(x - m_safe))) + m_safe
    return np.where(np.isposinf(m), np.inf, s)


def _signed_logsums(t, is_neg):
    """:func:`_logsumexp_terms` of ``t`` over the positive terms and over the negative ones (``is_neg``): the
    values of two calls on the masked arrays, with one exp per term instead of two (each term is shifted by
    its own part's maximum, as there; the other part's terms add exact zeros)."""
    mp = np.max(np.where(is_neg, -np.inf, t), axis=0)
    mn = np.max(np.where(is_neg, t, -np.inf), axis=0)
    mp_safe = np.where(np.isfinite(mp), mp, 0.0)
    mn_safe = np.where(np.isfinite(mn), mn, 0.0)
    e = np.exp(t - np.where(is_neg, mn_safe, mp_safe))
    with np.errstate(divide="ignore", invalid="ignore"):
        sp = np.log(_sum_terms(np.where(is_neg, 0.0, e))) + mp_safe
        sn = np.log(_sum_terms(np.where(is_neg, e, 0.0))) + mn_safe
    return np.where(np.isposinf(mp), np.inf, sp), np.where(np.isposinf(mn), np.inf, sn)


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
    (docs/math.md §3.2, fractional α).  Returns (log A upper bound, ok, precise); ``ok`` is False where the
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
    # log Γ at α − k + 1 depends on the order alone: evaluated once per distinct order and gathered (the same
    # values; not under light_start, where the array's size picks the routine)
    share = not light_active()
    ua, ai = np.unique(al, return_inverse=True) if share else (al, np.arange(n))
    ai = ai.reshape(-1)
    lga = _gammaln(ua + 1.0)[ai]
    # log Φ((z0 − k)/σ) depends on the (q, σ) pair and on k, not on α: evaluated once per pair and gathered
    # where the pairs are at most half the elements (a curve's fractional orders share a pair; the same values)
    by_pair = False
    if share:
        _, first, pi = np.unique(q + 1j * sg, return_index=True, return_inverse=True)
        by_pair = 2 * first.size <= n
    if by_pair:
        pi, z0p, sgp = pi.reshape(-1), z0[first], sg[first]
    else:
        pi = ai  # a placeholder: compacted with the elements, never read
    fl = np.floor(al)
    pos = np.full(n, -np.inf)
    neg = np.full(n, -np.inf)
    err = np.full(n, -np.inf)
    dpos = np.zeros(n)
    dneg = np.zeros(n)
    B = _FRAC_BLOCK
    lgk_all = _lgamma_int(np.arange(1.0, _FRAC_MAX_TERMS + 1.0))  # log Γ(k + 1), k = 0 … max − 1
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        for k0 in range(0, _FRAC_MAX_TERMS, B):
            # a block of B terms: arrays (terms × elements), so that the sums over terms run along contiguous rows
            ks = k0 + np.arange(B, dtype=float)
            kc = ks[:, None]
            j = al - kc
            lgk = lgk_all[k0 : k0 + B, None]
            lgj = _gammaln((ua - kc) + 1.0)[:, ai] if share else _gammaln(j + 1.0)  # log|Γ(α−k+1)|
            lc = lga - lgk - lgj
            e0 = kc * lq + j * l1q + (kc * kc - kc) * inv2s2
            e1 = j * lq + kc * l1q + (j * j - j) * inv2s2
            ndtr0 = _log_ndtr((z0p - kc) / sgp)[:, pi] if by_pair else _log_ndtr((z0 - kc) / sg)
            t = np.logaddexp(lc + e0 + ndtr0, lc + e1 + _log_ndtr((j - z0) / sg))
            mag = lga + np.abs(lgk) + np.abs(lgj) + np.abs(e0) + np.abs(e1)
            err = np.logaddexp(err, _logsumexp_terms(t + np.log(8.0 * _EPS * (1.0 + mag))))
            nsign = kc - fl - 1.0
            is_neg = (nsign > 0) & (nsign.astype(np.int64) % 2 == 1)
            lps, lns = _signed_logsums(t, is_neg)
            p_new, n_new = np.logaddexp(pos, lps), np.logaddexp(neg, lns)
            dpos = dpos + _add_err(p_new, lps, B)
            dneg = dneg + _add_err(n_new, lns, B)
            pos, neg = p_new, n_new
            last = t[-1]
            past = nsign[-2] > 0
            shrinking = last <= t[-2]
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
            idx, al, sg, lq, l1q, z0, inv2s2, lga, fl, ai, pi = (
                x[keep] for x in (idx, al, sg, lq, l1q, z0, inv2s2, lga, fl, ai, pi)
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
    q near 1/2, or A − 1 too small for the series' digits).  MTZ 2019 §3.3 (docs/math.md §3.2):
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
            aa = np.broadcast_to(a, x.shape)
            small = np.abs(aa * u) < 0.01
            # each point's log integrand by the one branch that applies to it (points past the grid's end: none)
            lg = np.full(x.shape, -np.inf)
            sm = small & inside
            lg[sm] = _log_taylor(aa[sm], u[sm])
            bg = ~small & inside
            lq = np.broadcast_to(np.log(q[sel, None]), x.shape)
            lg[bg] = _log_direct(aa[bg], u[bg], x[bg], lq[bg])
            dens = -0.5 * z * z / s2 - 0.5 * np.log(2.0 * np.pi * s2)
            vals = np.where(inside, dens + lg, -np.inf)
        # summed so that an element's value does not depend on the others in its block (their grid lengths)
        log_am1 = logsumexp_rows(vals) + np.log(h[sel]) + 1e-10
        with np.errstate(invalid="ignore"):  # σ² past double range: nan, not ok (the chord bound stays)
            out[sel] = np.logaddexp(0.0, log_am1)
        ok[sel] = np.isfinite(out[sel])
    return np.nextafter(out, np.inf), ok


def _log_taylor(a, u):
    """log Σ_{j>=2} C(α,j)u^j for α|u| < 0.01, 8 terms (error below (α|u|)^7 relative); −inf where the sum is
    not positive (flat arrays; :func:`_log_a_frac_quad`)."""
    coef = a * (a - 1.0) / 2.0
    term = coef * u * u
    ser = term.copy()
    for j in range(3, 10):
        term = term * (a - j + 1.0) / j * u
        ser = ser + term
    return np.where(ser > 0, np.log(np.where(ser > 0, ser, 1.0)), -np.inf)


def _log_direct(a, u, x, lq):
    """log((1 + u)^α − 1 − αu) for α|u| >= 0.01 (flat arrays; ``lq`` = log q): α·log(1 + u) in log space for
    u > 0 (log u = log q + x + log(1 − e^{−x})), the log of the difference below e^700, α·log(1 + u) itself
    above (where the difference is that to within e^−700)."""
    pos = x > 0
    tt = np.empty(x.shape)
    xp = x[pos]
    tt[pos] = a[pos] * np.logaddexp(0.0, lq[pos] + xp + log1mexp(-np.maximum(xp, 1e-300)))
    tt[~pos] = a[~pos] * np.log1p(u[~pos])
    direct = np.where(tt < 700.0, np.expm1(np.minimum(tt, 700.0)) - a * u, np.inf)
    log_big = np.where(tt < 700.0, np.log(np.where(direct > 0, direct, 1.0)), tt)
    return np.where((tt < 700.0) & ~(direct > 0), -np.inf, log_big)


def frac_log_a(q, sigma, alpha):
    """Upper bounds on log A_α at fractional orders α <= :data:`FRAC_SERIES_MAX` (flat arrays of elements): the
    signed series up to :data:`FRAC_SERIES_DIRECT_MAX`, the quadrature where the series gives up or above it.
    Returns ``(values, ok)``; where not ok the caller keeps the chord bound.  An element's value depends on
    that element alone (not on the others computed with it)."""
    series = np.full(alpha.size, np.inf)
    ok = np.zeros(alpha.size, dtype=bool)
    use = alpha <= FRAC_SERIES_DIRECT_MAX  # above, the series needs more than α terms: quadrature instead
    if np.any(use):
        series[use], ok[use], _ = _log_a_frac_poisson(q[use], sigma[use], alpha[use])
    bad = ~ok
    if np.any(bad):  # where the series gave up or kept few digits: the quadrature of A − 1
        quad, qok = _log_a_frac_quad(q[bad], sigma[bad], alpha[bad])
        series[bad] = np.where(qok, np.minimum(quad, series[bad]), series[bad])
        ok[bad] |= qok
    return series, ok


def _rdp_poisson_generic(q, sigma, alphas, defer=None, lookup=None):
    """The (pairs × orders) table of log A: integer orders from the binomial sums, fractional ones from
    :func:`frac_log_a` capped by the chord bound — except the orders marked in ``defer`` (bool, per order),
    which keep the chord bound (:mod:`dpcalc.engine.mechanisms.sgm.deferred` computes them where they
    matter).  ``lookup``: the integer-order table, if already built."""
    if lookup is None:
        lookup = _int_table(q, sigma, alphas, _log_a_int_poisson)
    is_int = alphas == np.floor(alphas)
    out = np.empty((q.size, alphas.size))
    out[:, is_int] = lookup(alphas[is_int])
    fr = ~is_int
    if np.any(fr):
        af = alphas[fr]
        best = _interp_table(af, lookup)
        small = af <= FRAC_SERIES_MAX
        if defer is not None:
            small &= ~defer[fr]
        if np.any(small):
            asm = af[small]
            P, n = q.size, asm.size
            series, ok = frac_log_a(np.repeat(q, n), np.repeat(sigma, n), np.tile(asm, P))
            series, ok = series.reshape(P, n), ok.reshape(P, n)
            cur = best[:, small]
            best[:, small] = np.where(ok, np.minimum(series, cur), cur)
        out[:, fr] = best
    return out


def rdp_poisson(q, sigma, alphas):
    """RDP of one step of the Poisson-subsampled Gaussian mechanism, add/remove-one neighbours.

    Mironov, Talwar, Zhang, "Rényi Differential Privacy of the Sampled Gaussian Mechanism" (2019,
    arXiv 1908.10530) §3.3: ``RDP(α) = log A_α/(α−1)`` with ``A_α = E_{z~N(0,σ²)}[((1−q) + q·e^{(2z−1)/(2σ²)})^α]``
    (the direction D_α(μ‖μ0), which dominates for this mechanism — MTZ Thm 4; docs/math.md §3.2).
    Integer orders: binomial expansion (exact up to rounding, 45+log(α+1) nats of truncation bounded and
    added); fractional orders up to :data:`FRAC_SERIES_MAX`: the signed two-sided series (exact), or where it
    fails the quadrature of A − 1, capped by the log-convex interpolation bound; above it: the
    interpolation bound (a valid upper bound, within a few parts in 10^4 of exact at such orders).  Special cases: q=0 → 0, q=1 → α/(2σ²), σ=0 → ∞.

    ``q`` and ``sigma`` broadcast; returns ``broadcast(q, sigma).shape + (len(alphas),)`` (per step).
    """
    shape, qu, su, inv, alphas = _prepare(q, sigma, alphas)
    with np.errstate(over="ignore"):
        res = _per_order(shape, qu, su, inv, alphas, _rdp_poisson_generic, _q_one)
    return _monotone(_round_up(res), alphas)
