"""The exact ("lossless") RDP ⇄ (ε, δ) conversion of Asoodeh, Liao, Calmon, Kosut, Sankar (arXiv 2008.06529,
Thm 3 as cited by third-party code; presented in Asoodeh's talk "Privacy Analysis of Iterative Algorithms via
f-divergences"), solved numerically and certified (docs/math.md §1.3 items 1–3).

    ζ_α^ε(δ) = ε + log M(α, ε, δ)/(α−1),   M = min_{p∈(δ,1)} φ(p),
    φ(p) = p^α (p−δ)^{1−α} + (1−p)^α (e^ε − p + δ)^{1−α}.

We compute (α−1)ζ_α^ε(δ) = log min ψ with ψ = φ·e^{(α−1)ε} = ψ1 + ψ2, ψ1 = p^α x^{1−α} e^{(α−1)ε},
ψ2 = y^α (1 − x e^{−ε})^{1−α} (x = p − δ, y = 1 − p): no cancellation between ε and log M/(α−1) when ζ ≪ ε.

Why the numbers are safe (the direction of every approximation)
----------------------------------------------------------------
ζ_α^ε(δ) is the largest RDP level certifying (ε, δ).  Over-estimating it is *unsafe* in both uses: a filter
would allow too much, and "ε is the smallest value with ζ_α^ε(δ) >= ζ" would come out too small.  An
approximate minimiser p̃ gives ψ(p̃) >= min ψ, i.e. an *over*-estimate of ζ, so it must not decide anything.
Every decision uses a certified **lower** bound L <= log min ψ instead:

1. ψ is convex in p (each summand is the perspective (u, v) ↦ v (u/v)^α of the convex s ↦ s^α composed with
   affine maps of p, times a constant), so every tangent line lies below ψ, and for any two points a, b
   ``min_{p∈[δ,1]} max(tangent_a(p), tangent_b(p)) <= min ψ``.  This minimum of a convex piecewise-linear
   function is attained at p = δ, p = 1 or the crossing point, so it is computed in closed form from ψ(a),
   ψ(b), ψ'(a), ψ'(b).  It holds wherever a and b are; choosing them around the numerical minimiser (found
   by safeguarded Newton on the sign of ψ', which changes once because ψ is convex) makes it tight (gap of
   order ψ''·(b−a)²).  Five pairs (half-widths 1e-11 … 1e-3 in t) are tried and the largest bound kept.
2. Round-off is absorbed by explicit allowances, each subtracted on the side that lowers the bound: ψ1 and ψ2
   carry a relative error of ROUNDOFF·S1 and ROUNDOFF·S2 (ROUNDOFF = 1e-14 ≈ 90 units in the last place,
   S = (α+1) × the sum of the magnitudes of the log-space terms feeding the summand, since a log-space
   error is multiplied by α); the derivatives and positions of the tangent lines carry their own allowances
   (the gap x − (α−1)δ, computed from x, gets the relative error amplified by x/gap).
3. ε for a given (ζ, δ): Newton iterations (on the *approximate* ζ, for speed) locate the root; then
   :func:`_certify` brackets the crossing of the *certified* bound (moving up from the estimate until
   ζ_lower(α, ε, δ) > ζ holds, or down until it fails if it held at once) and bisects to 1e-14 relative.  The
   reported ε is always a candidate at which ζ_lower > ζ was checked; because the true ζ_α^ε(δ) >= ζ_lower > ζ,
   the (α, ζ)-RDP guarantee implies (ε, δ)-DP.  Reporting the crossing itself (not the first candidate found
   by jumps of varying size) makes the slack a smooth function of the inputs, so the results are monotone
   in ζ, δ and ε.  If no candidate can be certified the caller keeps the closed form of Asoodeh et al. (a
   valid bound).  δ for a given (ζ, ε): the same on log δ, and exp is rounded up afterwards.
4. αδ >= 1: min ψ = (1−δ)^{1−α} e^{(α−1)ε} exactly (§1.3 item 3); only the round-off allowance applies.
5. Small (α−1)ζ (< SMALL = 1): then min ψ = e^{(α−1)ζ} ≈ 1 and log ψ carries an absolute round-off of at
   least ~1e-16 (and the allowance of item 2 is ~(α+1)·1e-14), i.e. a relative error in ζ that grows without
   bound as (α−1)ζ → 0 (this used to cost up to ~40% in δ and made the results non-monotone).  There the
   same tangent-line argument (item 1) is also run on ψ − 1 computed without cancellation
   (:func:`_eval_v`): with y := 1 − p, ψ − 1 = p·expm1(a1) + y·expm1(a2), and the slope ψ' = s0 + E1 c1 +
   E2 c2 whose E-free part s0 is a sum of negative terms; the allowances are relative to each term, not to
   ψ.  The minimiser is re-located on the sign of that accurate slope (:func:`_refine_t_small`; only the
   position of the tangent pair depends on it).  The larger of the two certified bounds is kept, so this
   never loosens anything.  The mode is chosen from the input (α−1)ζ, so along ε and δ it does not switch.
   Checked against the M formula in 50-digit mpmath (tests/test_conversions_small.py).

Net effect (tests/test_conversions_*.py): within ~1e-11 relative of the exact value at the docs/math.md
vectors, never below an independent mpmath/brute-force value; stated tolerance 1e-10 relative.

Numerics (docs/math.md §1.3): p − δ = (1−δ)·sigmoid(t), 1 − p = (1−δ)·sigmoid(−t) (no cancellation when
p* ≈ αδ is tiny or p* is close to 1); log(e^ε − 1 + δ) via expm1 for ε < 1 and ε + log1p(−(1−δ)e^{−ε})
above (no overflow).  numpy only; vectorised over 1-D arrays (callers flatten), loops only over iterations,
each on the still-active elements.
"""

from __future__ import annotations

import numpy as np

from dpcalc.engine.conversion._optimal_phi import (
    _C,
    ROUNDOFF,
    SMALL,
    _eval,
    _eval_v,
    _quiet,
    _refine_t_small,
    _rel_err,
    _solve_t,
)

_UNDERFLOW = 5e-308  # > any positive double that exp() flushes towards 0 or represents as a subnormal
_ETAS = np.array([1e-11, 1e-9, 1e-7, 1e-5, 1e-3])


def _lower_log_m(c: _C, tc, evc, small=False):
    """Certified lower bound on log min ψ (αδ < 1), from tangent lines at pairs around t = tc (``evc``:
    :func:`_eval` at ``tc``, without the derivative).

    See the module docstring; every error allowance below is added to the side that lowers the bound.
    """
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        eta = _ETAS[:, None] * (1.0 + np.abs(tc))[None, :]
        ta = tc[None, :] - eta
        tb = tc[None, :] + eta
        eva = _eval(ta, c)
        evb = _eval(tb, c)
        lphic = evc["lphi"]
        ec = _rel_err(evc)
        if small:
            # lines in absolute units of ψ − 1 (values from _eval_v): no normalisation by ψ(tc)
            lphic = np.zeros_like(lphic)
            ec = np.zeros_like(ec)
            va_all = _eval_v(eva, c, slope=True)
            vb_all = _eval_v(evb, c, slope=True)
        # w = (1−δ) σ(tc) σ(−tc): the p-length of one unit of t at tc; positions z = (p − p_c)/w
        lw = c.l1d + evc["lsp"] + evc["lsm"]
        ez = ROUNDOFF * (1.0 + np.abs(tc) + np.abs(c.l1d))  # relative error of positions and of w

        def line(ev, tt, vs=None):
            z = np.exp(ev["lsp"] - evc["lsp"]) * -np.expm1(tc - tt)
            if vs is not None:
                # small mode: value ψ − 1 and slope dψ/dz = w dψ/dp from _eval_v, absolute allowances
                r, er, dv, derr = vs
                wv = np.exp(lw)
                kappa = dv * wv
                ek = derr * wv + np.abs(kappa) * ez + _UNDERFLOW
                sgn = np.where(np.abs(kappa) > ek, np.sign(kappa), 0.0)
                return r, er, kappa, ek, z, sgn
            r = np.exp(ev["lphi"] - lphic)
            er = r * (_rel_err(ev) + ec)
            pa = ev["sA"] * np.exp(ev["lA"] + lw - lphic)
            pb = np.exp(ev["lB"] + lw - lphic)
            kappa = pa - pb
            # + _UNDERFLOW: pa, pb may underflow to 0 (ψ flat in t, e.g. p* within e^{−700} of 1); the
            # true slope is then below that, and this allowance covers it times any finite position
            ek = np.abs(pa) * (ev["errA"] + ec + ez) + pb * (ev["errB"] + ec + ez) + _UNDERFLOW
            # the sign of the slope is the sign of h = log|ψ1'| − log|ψ2'|, certain when |h| exceeds its error
            sgn = np.where(np.abs(ev["h"]) > ev["errA"] + ev["errB"], np.sign(ev["h"]), 0.0)
            return r, er, kappa, ek, z, sgn

        if small:
            ra, era, ka, eka, za, sa = line(eva, ta, va_all)
            rb, erb, kb, ekb, zb, sb = line(evb, tb, vb_all)
        else:
            ra, era, ka, eka, za, sa = line(eva, ta)
            rb, erb, kb, ekb, zb, sb = line(evb, tb)
        z_lo = -np.exp(np.logaddexp(0.0, tc))  # p = δ
        z_hi = np.exp(np.logaddexp(0.0, -tc))  # p = 1
        zx = (rb - ra + ka * za - kb * zb) / (ka - kb)
        zx = np.clip(np.where(np.isnan(zx), z_lo, zx), z_lo, z_hi)

        def line_at(z, r, er, k, ek, z0, sgn):
            """tangent at z lowered by its error allowance; at z = ±∞ (an end whose position overflows) the
            limit: +∞ only if the line certainly rises towards that end, else −∞."""
            d = z - z0
            v = r + k * d - er - ek * np.abs(d) - ez * np.abs(k * d) * 4.0
            toward = (np.sign(z) * k - ek > 0) | (np.sign(z) * sgn > 0)
            v = np.where(np.isinf(z), np.where(toward, np.inf, -np.inf), v)
            return np.where(np.isnan(v), -np.inf, v)

        def g(z):
            """max of the two tangents at z, each lowered by its error allowance (nan → −∞)."""
            return np.maximum(line_at(z, ra, era, ka, eka, za, sa), line_at(z, rb, erb, kb, ekb, zb, sb))

        lb_rel = np.minimum(np.minimum(g(z_lo), g(z_hi)), g(zx))
        if small:
            # lb_rel bounds min ψ − 1 from below; log1p is correctly rounded to within 1 ulp
            lv = np.log1p(lb_rel)
            lb = np.where(lb_rel > -1.0, lv - 4.0 * np.spacing(np.abs(lv)), -np.inf)
        else:
            lb = np.where(lb_rel > 0, lphic + np.log(lb_rel) - ec, -np.inf)
        return np.max(np.where(np.isnan(lb), -np.inf, lb), axis=0)


def _big_branch_log_m(c: _C):
    """log min ψ for αδ >= 1: (α−1)(ε − log(1−δ)) exactly (§1.3 item 3), minus the round-off margin."""
    val = c.am1 * (c.eps - c.l1d)
    return val - ROUNDOFF * (c.alpha + 1.0) * (np.abs(c.l1d) + c.eps + 1.0) * (1.0 + np.abs(val))


@_quiet
def zeta_lower(alpha, eps, ld, t0=None, certify=True, small=None):
    """Certified lower bound on ζ_α^ε(δ) = ε + log M/(α−1) (1-D arrays; log δ given; 0 < δ < 1, ε finite).

    Returns ``(zeta_lower, zeta_approx, t)``: the certified value, the uncertified estimate at the numerical
    minimiser (never below the true value up to round-off), and the minimiser (for warm starts).
    ``small`` (bool array, or None: where the estimate of (α−1)ζ is below ~SMALL) marks elements where (α−1)ζ
    is small: there the bound and the estimate also use ψ − 1 computed without cancellation
    (:func:`_eval_v`), and the larger of the two certified bounds is kept.
    """
    return _zeta_parts(alpha, eps, ld, t0, certify, small)[:3]


#: The values of :func:`_eval` at the minimiser that the slopes of ζ (:func:`_dzeta`) read.
_SLOPE_PARTS = ("lT1", "lT2", "lphi", "lx", "lyK")


def _zeta_parts(alpha, eps, ld, t0=None, certify=True, small=None):
    """:func:`zeta_lower`, and also the parts of ψ at the returned minimiser that :func:`_dzeta` needs
    (nan where αδ >= 1), so that a Newton step does not evaluate ψ there a second time."""
    c = _C(alpha, eps, ld)
    n = alpha.shape[0]
    low = np.empty(n)
    approx = np.empty(n)
    parts = {name: np.full(n, np.nan) for name in _SLOPE_PARTS}
    t = np.full(n, np.nan) if t0 is None else np.array(t0, dtype=float)
    big = c.la + c.ld >= 0.0
    bi = np.nonzero(big)[0]
    if bi.size:
        cb = c.sub(bi)
        low[bi] = _big_branch_log_m(cb)
        approx[bi] = cb.am1 * (cb.eps - cb.l1d)
    si = np.nonzero(~big)[0]
    if si.size:
        cs = c.sub(si)
        ts = _solve_t(cs, t[si])
        t[si] = ts
        evs = _eval(ts, cs, derivative=False)
        approx[si] = evs["lphi"]
        for name in _SLOPE_PARTS:
            parts[name][si] = evs[name]
        low[si] = _lower_log_m(cs, ts, evs) if certify else np.nan
        # auto (small=None): by the estimate, a little generously, so that zeta_opt at an ε from eps_optimal
        # (which chose by (α−1)ζ < SMALL) uses at least the bounds that certified that ε
        sm = evs["lphi"] < 1.01 * SMALL if small is None else np.asarray(small, dtype=bool)[si]
        k = np.flatnonzero(sm)
        if k.size:
            # tiny (α−1)ζ: log ψ ≈ 0 loses its relative accuracy; use ψ − 1 directly (module docstring, item 5)
            ck = cs.sub(k)
            tk = _refine_t_small(ck, ts[k])
            t[si[k]] = tk
            evk = _eval(tk, ck, derivative=False)
            for name in _SLOPE_PARTS:
                parts[name][si[k]] = evk[name]
            vk, _ = _eval_v(evk, ck)
            approx[si[k]] = np.where(vk > -1.0, np.log1p(vk), approx[si[k]])
            if certify:
                low[si[k]] = np.maximum(low[si[k]], _lower_log_m(ck, tk, evk, small=True))
    am1 = alpha - 1.0
    return low / am1, approx / am1, t, (c, parts)


def _dzeta(eps, ld, at):
    """Approximate ∂ζ/∂ε and ∂ζ/∂log δ at the minimiser (envelope theorem), for Newton steps; ``at``: the
    constants and the parts of ψ at the minimiser, as :func:`_zeta_parts` returns them."""
    c, ev = at
    with np.errstate(over="ignore", invalid="ignore"):
        de = 1.0 - np.exp(ev["lT2"] - ev["lphi"] + eps - ev["lyK"])
        dd = np.exp(ev["lT1"] + ld - ev["lx"] - ev["lphi"]) - np.exp(ev["lT2"] + ld - ev["lyK"] - ev["lphi"])
    big = c.la + ld >= 0.0
    de = np.where(big, 1.0, de)
    dd = np.where(big, np.exp(ld - c.l1d), dd)
    return de, dd


def _certify(zl_of, rdp, x0, tries=10, rtol=1e-14, atol=1e-300, x_min=None):
    """The smallest x (to within ``rtol``·|x| + ``atol``) at or above the estimate x0 of the root of ζ(x) = ζ
    (ζ increasing in x) at which the *certified* ζ_lower(x) > ζ has been checked; nan where none is found.

    Search: from x0 move up until ζ_lower(x) > ζ holds (a Newton jump on ζ_lower with a slope measured on the
    spot, doubled after every failure, so it always moves up), or, if x0 is certified at once, down (steps
    growing by 4, not below ``x_min``) until it fails; then shrink the bracket [last failing, certified] by
    secant-guided probes.  The returned x is always one at which the check passed (soundness), and it is
    the crossing of the certified bound itself (to ``rtol``), not a point that depends on the sizes of the
    jumps (so the result is monotone wherever ζ_lower is, e.g. in ζ).
    """
    n = x0.shape[0]
    out = np.full(n, np.nan)
    fail = np.full(n, np.nan)  # last x at which the check failed
    z_out = np.full(n, np.nan)  # ζ_lower there (for secant steps)
    z_fail = np.full(n, np.nan)
    todo = np.arange(n)
    x = x0.copy()
    step = np.zeros(n)
    for k in range(tries):
        if todo.size == 0:
            break
        xt = x[todo]
        zl = zl_of(todo, xt)
        ok = zl > rdp[todo]
        out[todo[ok]], z_out[todo[ok]] = xt[ok], zl[ok]
        fail[todo[~ok]], z_fail[todo[~ok]] = xt[~ok], zl[~ok]
        todo, xt, zl = todo[~ok], xt[~ok], zl[~ok]
        if todo.size == 0:
            break
        # slope of ζ_lower from a probe a little above
        h = np.maximum(1e-9 * np.abs(xt), 1e-12)
        zh = zl_of(todo, xt + h)
        with np.errstate(divide="ignore", invalid="ignore"):
            jump = (rdp[todo] - zl) * h / (zh - zl)
        floor = 4.0 * np.spacing(np.maximum(np.abs(xt), 1e-300)) * 2.0**k
        jump = np.where(np.isfinite(jump) & (jump > 0), jump * 1.25 * 2.0**k, 2.0 * step[todo] + floor)
        jump = np.maximum(jump, floor)
        step[todo] = jump
        x[todo] = xt + jump
    # certified at once (the estimate x0 may be above the crossing, e.g. where the Newton slope was poor): step
    # down, by factors of 4, to a failing point so that the refinement below finds the crossing itself
    down = np.flatnonzero(np.isfinite(out) & np.isnan(fail))
    step = np.maximum(1e-12 * np.abs(out), atol)
    for _ in range(30):
        if down.size == 0:
            break
        xd = out[down] - step[down]
        if x_min is not None:
            xd = np.maximum(xd, x_min)
        moved = xd < out[down]
        down, xd = down[moved], xd[moved]
        if down.size == 0:
            break
        zd = zl_of(down, xd)
        ok = zd > rdp[down]
        fail[down[~ok]], z_fail[down[~ok]] = xd[~ok], zd[~ok]
        out[down[ok]], z_out[down[ok]] = xd[ok], zd[ok]
        down = down[ok]
        step[down] *= 4.0
    # refine the bracket [last failure, certified] around the crossing: two probes per round, just below and
    # just above the secant estimate (ζ_lower is smooth), falling back to the midpoint
    act = np.flatnonzero(np.isfinite(out) & np.isfinite(fail) & (fail < out))
    for _ in range(60):
        if act.size == 0:
            break
        la, ha = fail[act], out[act]
        tol = rtol * np.abs(ha) + atol
        wide = ha - la > tol
        act, la, ha, tol = act[wide], la[wide], ha[wide], tol[wide]
        if act.size == 0:
            break
        w = ha - la
        with np.errstate(divide="ignore", invalid="ignore"):
            frac = (rdp[act] - z_fail[act]) / (z_out[act] - z_fail[act])
        frac = np.where(np.isfinite(frac), np.clip(frac, 0.0, 1.0), 0.5)
        tiny = np.maximum(0.5 * tol, 1e-3 * w)
        m1 = np.clip(la + frac * w - tiny, la + 0.25 * tiny, ha - 0.25 * tiny)
        m2 = np.clip(la + frac * w + tiny, la + 0.25 * tiny, ha - 0.25 * tiny)
        m2 = np.maximum(m2, m1)
        both = zl_of(np.concatenate([act, act]), np.concatenate([m1, m2]))
        z1, z2 = both[: act.size], both[act.size :]
        ok1 = z1 > rdp[act]
        ok2 = z2 > rdp[act]
        # new bracket: [la, m1] if m1 passes; [m1, m2] if only m2 passes; [m2, ha] if neither
        new_hi = np.where(ok1, m1, np.where(ok2, m2, ha))
        new_zhi = np.where(ok1, z1, np.where(ok2, z2, z_out[act]))
        new_lo = np.where(ok1, la, np.where(ok2, m1, m2))
        new_zlo = np.where(ok1, z_fail[act], np.where(ok2, z1, z2))
        out[act], z_out[act], fail[act], z_fail[act] = new_hi, new_zhi, new_lo, new_zlo
    return out


def _newton_in_bracket(step, x, lo, hi, tol, maxiter):
    """Newton iterations on an increasing f, kept inside a shrinking bracket [lo, hi] (in place, elementwise).

    ``step(act, x[act]) -> (f, f')`` for the active rows; a Newton step leaving the bracket (or not finite)
    is replaced by bisection; a row stops once the step or the bracket is within ``tol(x)``.  Locates the
    root only: certification is the caller's (:func:`_certify`).
    """
    act = np.arange(x.shape[0])
    for _ in range(maxiter):
        if act.size == 0:
            break
        xa = x[act]
        f, slope = step(act, xa)
        below = f <= 0
        loa = np.where(below, xa, lo[act])
        hia = np.where(below, hi[act], xa)
        with np.errstate(divide="ignore", invalid="ignore"):
            xn = xa - f / slope
        bad = ~np.isfinite(xn) | (xn < loa) | (xn > hia)
        xn = np.where(bad, 0.5 * (loa + hia), xn)
        t = tol(xa)
        done = (np.abs(xn - xa) <= t) | (hia - loa <= t)
        lo[act], hi[act], x[act] = loa, hia, xn
        act = act[~done]


@_quiet
def eps_estimate(alpha, rdp, delta, hi, maxiter=60, floor=None):
    """Newton's estimate of the exact ε for (α, ζ, δ) (1-D arrays; as :func:`eps_certified`), *not* certified.

    Returns ``(e, t)``: the estimate (the root of the approximate ζ_α^ε(δ) = ζ, within [0, hi]) and the
    minimisers found on the way (warm starts for :func:`certify_eps`).  Used to rank orders: only the
    best few are certified (an uncertified number never reaches an output).

    ``floor`` (optional, per element): a bar the caller only needs to know the root to be above.  Where the
    approximate ζ at ε = floor is below ζ (past :data:`PROBE_RTOL`), the root lies above it, and ``e`` is
    ``floor`` itself (t nan), with no Newton iterations; every other element is estimated exactly as without
    ``floor`` (the probe does not move its start), so its estimate is the same.
    """
    n = alpha.shape[0]
    ld = np.log(delta)
    small = (alpha - 1.0) * rdp < SMALL
    snap = 1e-12 * (1.0 + rdp)
    above = np.zeros(n, dtype=bool)
    if floor is not None:
        floor = np.maximum(floor, snap)
        probe = np.flatnonzero(floor < hi)  # elsewhere the root is at most hi <= floor
        if probe.size:
            above[probe] = _root_above(alpha[probe], rdp[probe], ld[probe], floor[probe])
    e = hi.copy()
    t = np.full(n, np.nan)
    rest = np.flatnonzero(~above)
    if rest.size:
        e[rest], t[rest] = _newton_estimate(alpha[rest], rdp[rest], ld[rest], small[rest], hi[rest], maxiter)
    # a root this close to 0 means ζ_α^0(δ) is (nearly) >= ζ: try ε = 0 itself first
    e = np.where(e <= snap, 0.0, e)
    if floor is not None:
        e[above] = floor[above]
    return e, t


def _newton_estimate(alpha, rdp, ld, small, hi, maxiter):
    """``(root, minimisers)``: Newton on the approximate ζ_α^ε(δ) − ζ in ε, from ``hi`` down, in [0, hi]."""
    e = hi.copy()
    t = np.full(e.shape, np.nan)

    def step(act, ea):
        _, zap, ta, at = _zeta_parts(alpha[act], ea, ld[act], t[act], certify=False, small=small[act])
        t[act] = ta
        return zap - rdp[act], _dzeta(ea, ld[act], at)[0]

    _newton_in_bracket(step, e, np.zeros(e.shape), hi.copy(), lambda x: 4e-15 * x + 1e-300, maxiter)
    return e, t


def _root_above(alpha, rdp, ld, eps):
    """Where the approximate ζ_α^ε(δ) is certainly below ζ at ``eps`` (so that its root in ε, which Newton
    would find, lies above ``eps``): log ψ at any t, plus its round-off allowance, is above log min ψ, and
    :data:`PROBE_STEPS` Newton steps on t from a cold start put t near enough the minimiser to show it for
    most orders far from a curve's best; αδ >= 1 is left out (False)."""
    c = _C(alpha, eps, ld)
    out = np.zeros(alpha.shape[0], dtype=bool)
    si = np.flatnonzero(c.la + c.ld < 0.0)
    for lo in range(0, si.size, PROBE_BLOCK):  # elementwise: the blocks bound the temporaries, not the values
        sb = si[lo : lo + PROBE_BLOCK]
        cs = c.sub(sb)
        ev = _eval(_solve_t(cs, np.full(sb.size, np.nan), maxiter=PROBE_STEPS), cs, derivative=False)
        up = ev["lphi"] + _rel_err(ev)
        out[sb] = up < cs.am1 * rdp[sb] * (1.0 - PROBE_RTOL)
    return out


#: Newton steps on t of :func:`_root_above` (any t gives an upper bound on min ψ; closer ones prune more).
PROBE_STEPS = 1
#: Relative margin below ζ for the approximate ζ at a probe (:func:`eps_estimate`'s ``floor``): covers its
#: round-off, so that the root of the approximate ζ lies above the probe, as the full iterations would find.
PROBE_RTOL = 1e-12
#: Elements probed at once by :func:`_root_above`: a sweep's chunk probes some 20,000, whose temporaries (7 MB)
#: made its peak memory.
PROBE_BLOCK = 8192


@_quiet
def certify_eps(alpha, rdp, delta, e, t):
    """The smallest certified ε near the estimate ``e`` (from :func:`eps_estimate`, with its minimisers
    ``t``); nan where no candidate could be certified (the caller then keeps the closed form)."""
    ld = np.log(delta)
    small = (alpha - 1.0) * rdp < SMALL
    zl_of = lambda idx, x: zeta_lower(alpha[idx], x, ld[idx], t[idx], small=small[idx])[0]  # noqa: E731
    return _certify(zl_of, rdp, e, x_min=0.0)


def eps_certified(alpha, rdp, delta, hi, maxiter=60):
    """Smallest certified ε for (α, ζ, δ) (1-D arrays; 0 < δ < 1, αδ < 1, 0 < ζ < ∞, 0 <= ε <= hi).

    ``hi`` is a valid upper bound (the closed form).  Returns the certified ε, or nan where no candidate
    could be certified (the caller then keeps ``hi``).
    """
    e, t = eps_estimate(alpha, rdp, delta, hi, maxiter)
    return certify_eps(alpha, rdp, delta, e, t)


@_quiet
def log_delta_certified(alpha, rdp, eps, hi, maxiter=60):
    """Smallest certified log δ for (α, ζ, ε) with the root below log(1/α) (1-D arrays; 0 < ζ < ∞, ε finite).

    ``hi`` is a log δ known to be valid, <= −log α.  Returns the certified log δ, or nan where none
    could be certified.
    """
    n = alpha.shape[0]
    small = (alpha - 1.0) * rdp < SMALL
    hi = hi.copy()
    lo = np.minimum(hi, -800.0)
    # push lo down until ζ(lo) < ζ (ζ_α^ε(δ) → 0 as δ → 0, docs/math.md §1.3 item 2)
    pend = np.arange(n)
    for _ in range(12):
        _, zap, _ = zeta_lower(alpha[pend], eps[pend], lo[pend], certify=False, small=small[pend])
        bad = zap >= rdp[pend]
        pend = pend[bad]
        if pend.size == 0:
            break
        lo[pend] = 2.0 * lo[pend]
    u = hi.copy()
    t = np.full(n, np.nan)

    def step(act, ua):
        a, ep = alpha[act], eps[act]
        _, zap, ta, at = _zeta_parts(a, ep, ua, t[act], certify=False, small=small[act])
        t[act] = ta
        return zap - rdp[act], _dzeta(ep, ua, at)[1]

    _newton_in_bracket(step, u, lo, hi, lambda x: 4e-15 * (1.0 + np.abs(x)), maxiter)
    zl_of = lambda idx, x: zeta_lower(alpha[idx], eps[idx], x, t[idx], small=small[idx])[0]  # noqa: E731
    return _certify(zl_of, rdp, u, rtol=1e-14, atol=1e-14)
