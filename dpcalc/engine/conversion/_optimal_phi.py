"""The function φ of the optimal RDP → (ε, δ) conversion and its minimiser (numpy only).

φ(p) = p^α (p−δ)^{1−α} + (1−p)^α (e^ε − p + δ)^{1−α}, parametrised by t with p − δ = (1−δ)·sigmoid(t)
(Asoodeh et al., arXiv 2008.06529, Thm 3; docs/math.md §1.3).  This module evaluates log φ, its slope,
ψ − 1 without cancellation in the small-(α−1)ζ regime, and locates the minimiser; the certified bounds
built from these evaluations, and why they are safe, are in :mod:`dpcalc.engine.conversion.optimal`.
"""

from __future__ import annotations

import functools

import numpy as np

from dpcalc.engine._numerics import log1mexp


def _quiet(fn):
    """Run ``fn`` under ``np.errstate(all="ignore")``: every non-finite intermediate is handled explicitly
    (nan/−∞ mean "not certified"), and the engine must not emit numpy RuntimeWarnings."""

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        with np.errstate(all="ignore"):
            return fn(*args, **kwargs)

    return wrapper


#: (α−1)ζ below this: also certify with ψ − 1 computed without cancellation (module docstring, item 5)
SMALL = 1.0

#: relative size of the round-off margin per unit of the magnitude sum S (see the module docstring, item 2)
ROUNDOFF = 1e-14


class _C:
    """Per-element constants of φ for given (α, ε, log δ) (1-D arrays of equal length)."""

    __slots__ = ("alpha", "am1", "la", "lam1", "eps", "ld", "l1d", "lK", "lm", "tL")

    def __init__(self, alpha, eps, ld):
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            self.alpha = alpha
            self.am1 = alpha - 1.0
            self.la = np.log(alpha)
            self.lam1 = np.log(self.am1)
            self.eps = eps
            self.ld = ld
            self.l1d = log1mexp(ld)  # log(1 − δ)
            # log(e^ε − 1 + δ)
            small = eps < 1.0
            k_small = np.logaddexp(np.log(np.expm1(np.where(small, eps, 0.0))), ld)
            k_big = eps + np.log1p(-np.exp(self.l1d - np.where(small, 1.0, eps)))
            self.lK = np.where(small, k_small, k_big)
            self.lm = self.lam1 + ld  # log((α−1)δ): φ' < 0 while p <= αδ, i.e. x <= (α−1)δ
            self.tL = self.lm - log1mexp(self.la + ld)  # t at p = αδ (valid for αδ < 1)

    def sub(self, idx):
        new = object.__new__(_C)
        for name in _C.__slots__:
            setattr(new, name, getattr(self, name)[idx])
        return new


def _eval(t, c: _C, derivative=True):
    """log ψ and friends at t (broadcasts t against the constants), ψ = φ·e^{(α−1)ε}.

    (α−1)ζ_α^ε(δ) = log min ψ: scaling by e^{(α−1)ε} removes the cancellation ε + log M/(α−1) when ζ ≪ ε.
    Summands: ψ1 = p^α x^{1−α} e^{(α−1)ε}, ψ2 = y^α (1 − x e^{−ε})^{1−α} (since e^ε − p + δ = e^ε − x).
    ``S1``/``S2`` bound the relative round-off of ψ1/ψ2 in units of ROUNDOFF (module docstring, item 2).
    With ``derivative``: also the slope's two parts (lA, lB, their sign sA and allowances errA, errB) and the
    sign h of φ', which the tangent lines read (Newton's dh/dt is :func:`_h_dh`'s).
    """
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        lsp = -np.logaddexp(0.0, -t)  # log sigmoid(t)
        lsm = -np.logaddexp(0.0, t)  # log sigmoid(−t)
        lx = c.l1d + lsp  # log(p − δ)
        ly = c.l1d + lsm  # log(1 − p)
        d1 = np.logaddexp(0.0, c.ld - lx)  # log(p/x)
        d2 = np.logaddexp(0.0, c.lK - ly)  # log((y+K)/y)
        lp = lx + d1
        lyK = ly + d2
        lq = np.log1p(-np.exp(lx - c.eps))  # log(1 − x e^{−ε}) = log((y+K) e^{−ε})
        lT1 = lx + c.alpha * d1 + c.am1 * c.eps  # log ψ1
        lT2 = c.alpha * ly - c.am1 * lq  # log ψ2
        lphi = np.logaddexp(lT1, lT2)
        at = np.abs(t)
        a1 = c.alpha + 1.0
        S1 = a1 * (np.abs(lx) + np.abs(d1) + np.abs(c.ld) + at + c.eps + 1.0)
        S2 = a1 * (
            np.abs(ly) * (1.0 + at) + np.abs(c.l1d) + np.abs(lq) * (1.0 + np.abs(lx) + c.eps + at) + 1.0
        )
        out = {"t": t, "lsp": lsp, "lsm": lsm, "lx": lx, "ly": ly, "d1": d1, "d2": d2, "lp": lp, "lyK": lyK}
        out.update(lT1=lT1, lT2=lT2, lphi=lphi, S1=S1, S2=S2)
        if not derivative:
            return out
        # φ'(p) = T1 (x − (α−1)δ)/(p x) − T2 (y + αK)/(y (y+K)) = sA e^{lA} − e^{lB}
        diff = lx - c.lm
        lgap = np.maximum(lx, c.lm) + log1mexp(-np.abs(diff))  # log|x − (α−1)δ|
        lA = lT1 + lgap - lp - lx
        lyaK = np.logaddexp(ly, c.la + c.lK)
        lB = lT2 + lyaK - ly - lyK
        h = np.where(diff > 0, lA - lB, -np.inf)  # sign(h) = sign(φ')
        errA = ROUNDOFF * S1 * (1.0 + np.exp(lx - lgap))
        errB = ROUNDOFF * (S2 + a1 * (np.abs(c.lK) + np.abs(lyK) + np.abs(lyaK) + np.abs(c.la) + 1.0))
        out.update(sA=np.sign(diff), lA=lA, lB=lB, h=h, errA=errA, errB=errB)
        return out


def _h_dh(t, c: _C, slope=True):
    """h (the sign of φ') and, with ``slope``, dh/dt at t, for Newton in :func:`_solve_t`: h by the operations
    of :func:`_eval` in the same order (so the same values), without the value of ψ, its round-off allowances
    and the derivative's error terms."""
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        lsp = -np.logaddexp(0.0, -t)
        lsm = -np.logaddexp(0.0, t)
        lx = c.l1d + lsp
        ly = c.l1d + lsm
        d1 = np.logaddexp(0.0, c.ld - lx)
        d2 = np.logaddexp(0.0, c.lK - ly)
        lp = lx + d1
        lyK = ly + d2
        lq = np.log1p(-np.exp(lx - c.eps))
        lT1 = lx + c.alpha * d1 + c.am1 * c.eps
        lT2 = c.alpha * ly - c.am1 * lq
        diff = lx - c.lm
        lgap = np.maximum(lx, c.lm) + log1mexp(-np.abs(diff))
        lA = lT1 + lgap - lp - lx
        lyaK = np.logaddexp(ly, c.la + c.lK)
        lB = lT2 + lyaK - ly - lyK
        h = np.where(diff > 0, lA - lB, -np.inf)
        if not slope:
            return h, None
        r1 = 1.0 / -np.expm1(c.lm - lx)
        r2 = np.exp(np.logaddexp(lx, c.la + c.ld) - lp)
        q1 = c.am1 * np.exp(c.lK - lyK) - np.exp(ly - lyK)
        q2 = np.exp(ly - lyaK)
        return h, np.exp(lsm) * (r1 - r2) + np.exp(lsp) * (q1 + q2)


def _solve_t(c: _C, t0, maxiter=100):
    """The minimiser t* of ψ (αδ < 1 only): safeguarded Newton on h (the sign of φ') in v = log(t − tL).

    For t <= tL (p <= αδ) φ' < 0, so t* > tL; near tL, h ≈ log(t − tL) + const is linear in v, and far
    right h grows linearly in t (slope α − 1), so Newton in v converges in a few steps from either side.
    Fallback: bisection in v inside the bracket [vl, vr] with h(vl) <= 0 < h(vr).
    """
    n = c.alpha.shape[0]
    tL = c.tL
    vmin = np.log(4e-16 * (1.0 + np.abs(tL)))  # below this offset t rounds to tL
    with np.errstate(invalid="ignore", divide="ignore"):
        v0 = np.where(np.isfinite(t0) & (t0 > tL), np.log(t0 - tL), 0.0)
    v0 = np.maximum(v0, vmin)
    vl = vmin.copy()
    # a right end with h > 0 (h → +∞ as t → ∞)
    vr = v0 + 0.5
    pend = np.arange(n)
    for k in range(12):
        hr = _h_dh(tL[pend] + np.exp(vr[pend]), c.sub(pend), slope=False)[0]
        pend = pend[~(hr > 0)]
        if pend.size == 0:
            break
        vr[pend] = np.minimum(vr[pend] + 2.0**k, 700.0)
    vr[pend] = np.nan  # no sign change found (round-off regime): the caller sees nan and does not certify
    v = np.where(v0 < vr, v0, 0.5 * (vl + vr))
    act = np.flatnonzero(np.isfinite(vr))
    for _ in range(maxiter):
        cc = c.sub(act)
        va = v[act]
        off = np.exp(va)
        h, dh = _h_dh(tL[act] + off, cc)
        dh = dh * off
        left = ~(h > 0)
        vla = np.where(left, va, vl[act])
        vra = np.where(left, vr[act], va)
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            vn = va - h / dh
        tol = 1e-15 * (1.0 + np.abs(tL[act]) / off)  # relative accuracy of t itself
        # a Newton step within the tolerance has converged, even where it rounds onto the bracket's end
        bad = ~(np.abs(vn - va) <= tol) & (~np.isfinite(vn) | (vn <= vla) | (vn >= vra))
        vn = np.where(bad, 0.5 * (vla + vra), vn)
        done = (np.abs(vn - va) <= tol) | (vra - vla <= tol)
        vl[act], vr[act], v[act] = vla, vra, vn
        act = act[~done]
        if act.size == 0:
            break
    return tL + np.exp(v)


def _eval_v(ev, c: _C, slope=False):
    """ψ − 1 at the points of ``ev`` without the cancellation of log ψ ≈ 0, and its absolute round-off allowance.

    With y := 1 − p, ψ = p e^{a1} + y e^{a2} (a1 = (α−1)(log(p/x) + ε), a2 = (α−1) log((1−p)/(1 − x e^{−ε}))),
    so ψ − 1 = p·expm1(a1) + y·expm1(a2) (p + y = 1 exactly).  1 − p = (1 − x e^{−ε})(1 − w) with
    w = x(δ/x + 1 − e^{−ε})/(1 − x e^{−ε}), all terms positive, so a2 = (α−1) log1p(−w) is accurate in relative
    terms (for w >= 1/2, where 1 − w cancels, a2 is taken from log y − log(1 − x e^{−ε}) instead).  The two
    terms have opposite signs; the allowance is ROUNDOFF × (each term's magnitude × (1 + |its argument|) ×
    the magnitudes of the logs feeding it), plus the sum's rounding: relative to each term, not to ψ.  Errors
    in δ/x (i.e. evaluating at a slightly different δ) and in the independently computed y are included.
    """
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        u = c.am1
        lx, ly, t = ev["lx"], ev["ly"], ev["t"]
        x = np.exp(lx)
        rho = np.exp(c.ld - lx)  # δ/x
        a1 = u * (np.log1p(rho) + c.eps)
        p = x + x * rho
        em = -np.expm1(-c.eps)
        xe = x * np.exp(-c.eps)
        lq = np.log1p(-np.exp(lx - c.eps))  # log(1 − x e^{−ε})
        den = np.where(xe < 0.5, 1.0 - xe, -np.expm1(lx - c.eps))
        w = x * (rho + em) / den
        a2 = u * np.where(w < 0.5, np.log1p(-w), ly - lq)
        y = np.exp(ly)
        A = p * np.expm1(a1)
        B = y * np.expm1(a2)
        mag = 1.0 + np.abs(lx) + np.abs(c.ld) + c.eps
        mag2 = (
            mag
            + np.abs(ly) * (1.0 + np.abs(t))
            + np.abs(c.l1d)
            + np.abs(lq) * (1.0 + np.abs(lx) + c.eps + np.abs(t))
        )
        err = ROUNDOFF * (A * (2.0 + np.abs(a1)) * mag + np.abs(B) * (2.0 + np.abs(a2)) * mag2)
        if not slope:
            return A + B, err
        # dψ/dp = ψ1 (x − (α−1)δ)/(p x) + ψ2 (e^{−ε}(x − (α−1)δ) − 1 − (α−1)(1 − e^{−ε}))/(y (1 − x e^{−ε}));
        # with ψ1 = p(1 + E1), ψ2 = y(1 + E2) the E-free parts add up to s0 < 0 without cancellation:
        #   dψ/dp = s0 + E1 (1 − (α−1)δ/x) + E2 c2,  s0 = −(α−1)(δ/x + (e^{−ε}δ + 1 − e^{−ε})/(1 − x e^{−ε}))
        E1 = np.expm1(a1)
        E2 = np.expm1(a2)
        s0 = -u * (rho + (np.exp(-c.eps) * np.exp(c.ld) + em) / den)
        c1 = 1.0 - u * rho
        c2 = (np.exp(-c.eps) * (x - u * np.exp(c.ld)) - 1.0 - u * em) / den
        dv = s0 + E1 * c1 + E2 * c2
        derr = ROUNDOFF * (
            np.abs(s0) * mag
            + np.abs(E1) * (1.0 + u * rho) * (2.0 + np.abs(a1)) * mag
            + np.abs(E2)
            * (np.abs(c2) + (1.0 + x + u * (np.exp(c.ld) + em)) / den)
            * (2.0 + np.abs(a2))
            * mag2
        )
        return A + B, err, dv, derr


def _slope_v(t, c: _C):
    """dψ/dp at t from :func:`_eval_v` (accurate where log ψ ≈ 0, unlike the log-space h)."""
    return _eval_v(_eval(t, c, derivative=False), c, slope=True)[2]


def _refine_t_small(c: _C, t0, maxiter=200):
    """The minimiser of ψ located on the sign of the accurate slope of :func:`_eval_v` (small mode).

    Where log ψ ≈ 0 the log-space sign h of :func:`_solve_t` is swamped by round-off, so its t can be far from
    the minimiser and the tangent pairs would not straddle it.  A bracket with dψ/dp < 0 < dψ/dp is grown
    around t0, then safeguarded Newton (finite-difference slope): a step within the tolerance has converged
    (even where it rounds onto the bracket's end); a step that leaves the bracket is replaced by the false
    position of the bracket's ends, or by a bisection where that fails too or where the bracket has not
    halved in three steps.  Only the *position* of the tangent pairs depends on this (the bound is valid
    wherever they are).  t0 is kept where no bracket is found.
    """
    t = np.where(np.isfinite(t0), t0, 0.0)
    s = 1e-3 * (1.0 + np.abs(t))
    tl, tr = t - s, t + s
    fl, fr = _slope_v(tl, c), _slope_v(tr, c)
    pend = np.flatnonzero(~((fl < 0) & (fr > 0)))
    for k in range(40):
        if pend.size == 0:
            break
        cc = c.sub(pend)
        grow_l = ~(fl[pend] < 0)
        grow_r = ~(fr[pend] > 0)
        step = s[pend] * 2.0 ** (k + 1)
        tl[pend] = np.where(grow_l, tl[pend] - step, tl[pend])
        tr[pend] = np.where(grow_r, tr[pend] + step, tr[pend])
        fl[pend] = np.where(grow_l, _slope_v(tl[pend], cc), fl[pend])
        fr[pend] = np.where(grow_r, _slope_v(tr[pend], cc), fr[pend])
        pend = pend[~((fl[pend] < 0) & (fr[pend] > 0))]
    ok = (fl < 0) & (fr > 0)
    out = t0.copy()
    act = np.flatnonzero(ok)
    t = np.where(ok & (t > tl) & (t < tr), t, 0.5 * (tl + tr))
    w3 = tr - tl  # bracket width three steps ago
    for it in range(maxiter):
        if act.size == 0:
            break
        cc = c.sub(act)
        ta = t[act]
        h = 1e-7 * (1.0 + np.abs(ta))
        f = _slope_v(ta, cc)
        fh = _slope_v(ta + h, cc)
        neg = f < 0
        tla = np.where(neg, ta, tl[act])
        tra = np.where(neg, tr[act], ta)
        fla = np.where(neg, f, fl[act])
        fra = np.where(neg, fr[act], f)
        with np.errstate(divide="ignore", invalid="ignore"):
            tn = ta - f * h / (fh - f)
            fp = tla - fla * (tra - tla) / (fra - fla)
        tol = 1e-13 * (1.0 + np.abs(ta))
        # a Newton step within the tolerance has converged, even where it rounds onto the bracket's end
        converged = np.abs(tn - ta) <= tol
        bad = ~converged & (~np.isfinite(tn) | (tn <= tla) | (tn >= tra))
        # a bisection where the bracket has not halved in three steps (Newton crawls on exponential tails)
        width = tra - tla
        slow = ~converged & (it >= 3) & (width > 0.5 * w3[act]) & (width > 1e-6 * (1.0 + np.abs(ta)))
        w3[act] = np.where(it % 3 == 2, width, w3[act])
        inside = np.isfinite(fp) & (fp > tla) & (fp < tra)
        tn = np.where(slow | (bad & ~inside), 0.5 * (tla + tra), np.where(bad, fp, tn))
        done = (np.abs(tn - ta) <= tol) | (tra - tla <= tol) | (f == 0)
        tl[act], tr[act], fl[act], fr[act] = tla, tra, fla, fra
        t[act] = np.where(f == 0, ta, tn)
        act = act[~done]
    out[ok] = t[ok]
    return out


def _rel_err(ev):
    """Relative round-off allowance of ψ at a point: ROUNDOFF·(S1 ψ1 + S2 ψ2)/ψ."""
    with np.errstate(over="ignore", invalid="ignore"):
        return ROUNDOFF * (
            ev["S1"] * np.exp(ev["lT1"] - ev["lphi"]) + ev["S2"] * np.exp(ev["lT2"] - ev["lphi"])
        )
