"""The optimal conversion of a Rényi curve to a trade-off curve: the smallest type-II error β (largest TPR
= 1 − β) that any test at false-positive rate a can have when the mechanism is (λ, ρ(λ))-RDP at every order
λ of a curve, in both directions of the neighbouring relation.

The constraints (data processing on a binary test)
--------------------------------------------------
A test (a Markov kernel to {reject, accept}) between the outputs P = M(D) and Q = M(D') turns them into
Bern(a) and Bern(1 − b), a its false-positive rate and b its type-II error.  Rényi divergences do not grow
under post-processing, so for every order λ > 1 (with c = e^{(λ−1)ρ(λ)})

    g_A(b) = (1 − b)^λ a^{1−λ} + b^λ (1 − a)^{1−λ} <= c      (D_λ(Q‖P) >= D_λ(Bern(1−b)‖Bern(a)))
    g_B(b) = a^λ (1 − b)^{1−λ} + (1 − a)^λ b^{1−λ} <= c      (D_λ(P‖Q) >= D_λ(Bern(a)‖Bern(1−b)))

and, for a bound κ on the KL divergence (the λ → 1 limit: ρ for ρ-zCDP),

    (1 − b) log((1 − b)/a) + b log(b/(1 − a)) <= κ   and   a log(a/(1 − b)) + (1 − a) log((1 − a)/b) <= κ.

(Balle, Barthe, Gaboardi, Hsu & Sato 2020, AISTATS, arXiv:1905.09982: the hypothesis-testing reading of
Rényi DP through binary tests; Zhu, Dong & Wang 2022, AISTATS, arXiv:2106.08567, Appendix F.1: the RDP →
f-DP conversion as the intersection of the single-order regions.  The section and appendix numbers are as
cited by Riess et al. and by riskcal's code; we did not check them against the papers' text.  The
constraints themselves are derived above from data processing alone.)

Why the smallest feasible b is the answer, and why a bracketing solve finds it
------------------------------------------------------------------------------
With p = (1 − b, b) and q = (a, 1 − a), g_A = Σ q_i (p_i/q_i)^λ and g_B = Σ p_i (q_i/p_i)^λ: sums of
perspectives of the convex t ↦ t^λ, so each is (jointly) convex in (a, b) and >= 1 with equality only at
p = q, i.e. b = 1 − a (the KL forms likewise, from t ↦ t log t).  A convex function of b whose minimum is at
b = 1 − a is strictly decreasing on [0, 1 − a]: each constraint holds on [r, 1 − a] for one root r, their
intersection is [max r, 1 − a], and β(a) = max over orders and directions of the roots.  The feasible set
is convex in (a, b), so β is convex in a with β(1) = 0, hence non-increasing: a test with false-positive
rate <= a has type-II error >= β(a).  A test whose type-II error exceeds 1 − a is already above β(a).

β is also the best any conversion can do from these orders alone: the pair Bern(a), Bern(1 − β) meets every
constraint (they are the constraints), and its test "reject on 1" has exactly (a, β).  Riess, Gomez,
Calmon, Schnabel & Kaissis 2026 (arXiv:2602.04562, its main theorem as stated in the abstract; the
conjecture of Zhu et al., App. F.3) prove that the intersection of single-order regions, over all orders τ >= 0.5, is the optimal RDP → f-DP
conversion.  Orders τ in [0.5, 1] add nothing to a curve known at orders > 1: D_τ <= D_λ for τ < λ, so
the only bound on D_τ is inf ρ(λ), and the binary constraint at order τ is implied by the one at λ.

Numerics and rounding
---------------------
The unknown is x = logit(b): b and 1 − b are both accurate (log b = −log(1 + e^{−x}), log(1 − b) =
−log(1 + e^{x})), so that β near 0 and TPR = 1 − β near 0 keep their digits.  Each constraint is compared
on the log scale and in divergence units, (log g − (λ − 1)ρ(λ))/(λ − 1), so that (λ − 1)ρ of thousands
neither overflows nor underflows and orders near 1 do not look flat.  A point counts as violated only when
log g exceeds the level by more than an allowance for round-off: ROUNDOFF (≈ 45 units in the last place)
times 1 + |level| + (λ + 1) × (|log a| + |log(1 − a)| + |log b| + |log(1 − b)|), which bounds the error of
every term (λ times a difference of logs) and of logaddexp; for the KL forms, 4 × that sum (each product
e^{l}·y with l <= 0 carries an error of a few ε·(|y| + 1), since e^{l}·|l| <= 1/e).  So every point kept as
the lower end of the bracket is truly infeasible and lies below β; the result is that lower end, with
e^{log b} rounded down by 8 units in the last place per unit of 1 + |log b| (above 1/2: 1 − the rounded-up
e^{log(1−b)}), and 1 − β rounded up alike.  The price is tightness where the divergences are tiny: the
allowance over (λ − 1)·ρ sets the relative accuracy, about 1e-12 for ρ ~ 1 but up to ~1e-4 of β (or of
1 − β) for ρ ~ 1e-5 at orders near 1.

The root is bracketed between a start from the dropped-term bounds (:func:`_start`, moved down until it is
certified) and x = logit(1 − a), and narrowed by Newton steps from the violated end (the constraints are
convex in b), regula falsi (Illinois) and a bisection every fourth step (:func:`_narrow`), to
1e-12·(1 + |x|) in x.
After each chunk of steps the orders satisfied at the lower end are dropped: their roots lie below it, so
they cannot be the maximum (dropping constraints can only lower the result, never make it unsafe).
"""

from __future__ import annotations

import numpy as np

from dpcalc.engine._numerics import log1mexp, require
from dpcalc.errors import InputError

#: relative round-off allowance per unit of log-magnitude (~45 units in the last place)
ROUNDOFF = 1e-14
#: the final rounding of e^{log b}: 8 units in the last place per unit of 1 + |log b|
_LAST = 8.0 * np.finfo(float).eps
_TINY = np.finfo(float).tiny
#: below this logit, b < 1e-347: the result rounds to 0
_X_FLOOR = -800.0
#: the solve runs in chunks of this many steps; after each, the orders satisfied at the lower end are dropped
_CHUNK = 8
_FIRST = 3
_CHUNKS = 60
#: the solve stops when the bracket on logit(β) is this narrow (relative to 1 + |logit|)
XTOL = 1e-12


def _logs(x):
    """(log b, log(1 − b)) at b = sigmoid(x), both without cancellation."""
    return -np.logaddexp(0.0, -x), -np.logaddexp(0.0, x)


def _excess(x, la, lna, lam, level, kl, slope=False, margin=1.0):
    """Per constraint, (log g − level − allowance)/(λ − 1) (>= 0: certainly violated), shape (rows, orders
    [+1 for KL]); with ``slope``, also its derivative in x (without the allowance's: it only steers).
    ``margin`` = −1 adds the allowance instead: then < 0 means certainly satisfied.

    ``x``, ``la`` = log a, ``lna`` = log(1 − a), ``kl``: (rows,); ``lam``, ``level`` = (λ − 1)ρ(λ): (rows or
    1, orders); ``kl`` may be None.  Both directions: max of g_A and g_B."""
    lb, lnb = _logs(x)
    p = (lnb - la)[:, None]  # log((1 − b)/a) > 0 below b = 1 − a
    q = (lb - lna)[:, None]  # log(b/(1 − a)) < 0 there
    size = (np.abs(la) + np.abs(lna) + np.abs(lb) + np.abs(lnb))[:, None]
    with np.errstate(invalid="ignore", over="ignore"):
        a1, a2 = la[:, None] + lam * p, lna[:, None] + lam * q
        b1, b2 = lnb[:, None] - lam * p, lb[:, None] - lam * q
        va, vb = np.logaddexp(a1, a2), np.logaddexp(b1, b2)
        top = np.maximum(va, vb)
        out = (top - level - margin * ROUNDOFF * (1.0 + np.abs(level) + (lam + 1.0) * size)) / (lam - 1.0)
    # (divided by λ − 1: in divergence units, D_λ − ρ(λ), like the KL column, so that orders compare)
    if slope:
        b, nb = np.exp(lb)[:, None], np.exp(lnb)[:, None]  # d log b/dx = 1 − b, d log(1 − b)/dx = −b
        with np.errstate(invalid="ignore", over="ignore", under="ignore"):
            da = lam * (np.exp(a2 - va) * nb - np.exp(a1 - va) * b)
            db = (lam - 1.0) * (np.exp(b1 - vb) * b - np.exp(b2 - vb) * nb)
            d_out = np.where(va >= vb, da, db) / (lam - 1.0)
    if kl is None:
        return (out, d_out) if slope else out
    b, nb, a = np.exp(lb)[:, None], np.exp(lnb)[:, None], np.exp(la)[:, None]
    na = np.exp(lna)[:, None]
    with np.errstate(invalid="ignore"):
        k_fwd = nb * p + b * q
        k_rev = -a * p - na * q
        k = (
            np.maximum(k_fwd, k_rev)
            - kl[:, None]
            - margin * ROUNDOFF * (1.0 + np.abs(kl[:, None]) + 4.0 * size)
        )
    if not slope:
        return np.concatenate([out, k], axis=1)
    d_k = np.where(k_fwd >= k_rev, b * nb * (q - p), a * b - na * nb)
    return np.concatenate([out, k], axis=1), np.concatenate([d_out, d_k], axis=1)


def _row_max(ex, d_ex):
    """Per row, the largest excess and the slope of the constraint attaining it."""
    j = np.argmax(ex, axis=1)[:, None]
    return np.take_along_axis(ex, j, axis=1)[:, 0], np.take_along_axis(d_ex, j, axis=1)[:, 0]


def _start(la, lna, lam, level, kl):
    """A logit below every root of some order's constraint (the largest such, from dropping one term of g):
    g_B >= (1 − a)^λ b^{1−λ} gives log b >= (λ log(1 − a) − L)/(λ − 1); g_A >= (1 − b)^λ a^{1−λ} gives
    log(1 − b) <= (L + (λ − 1) log a)/λ; the reverse KL >= a log a + (1 − a) log((1 − a)/b) gives
    log b >= (a log a + (1 − a) log(1 − a) − κ)/(1 − a).  Round-off is taken care of by the caller."""
    with np.errstate(invalid="ignore", over="ignore", divide="ignore"):
        lb_b = (lam * lna[:, None] - level) / (lam - 1.0)
        x_b = lb_b - log1mexp(np.minimum(lb_b, -1e-300))
        lnb_a = (level + (lam - 1.0) * la[:, None]) / lam
        x_a = np.where(lnb_a < 0, np.log(-np.expm1(np.minimum(lnb_a, -1e-300))) - lnb_a, -np.inf)
        x0 = np.max(np.fmax(np.where(np.isnan(x_b), -np.inf, x_b), x_a), axis=1)
        if kl is not None:
            a = np.exp(la)
            lb_k = (a * la + (1.0 - a) * lna - kl) / (1.0 - a)
            x0 = np.fmax(x0, lb_k - log1mexp(np.minimum(lb_k, -1e-300)))
    return np.where(np.isnan(x0), -np.inf, x0)


def _solve(la, lna, lam, level, kl):
    """Logit of a certified lower bound on β for each row (``-inf``: β rounds to 0); see the module doc.

    ``la``, ``lna``, ``kl``: (rows,); ``lam``, ``level``: (1 or rows, orders)."""
    hi = lna - la  # b = 1 − a: every constraint holds (g = 1)
    lo = _certified_start(la, lna, lam, level, kl, hi)
    pos = np.nonzero(np.isfinite(lo))[0]  # the rows still narrowing
    shape = (pos.size, lam.shape[1])
    w = [
        la[pos],
        lna[pos],
        np.broadcast_to(_rows(lam, pos), shape),
        np.broadcast_to(_rows(level, pos), shape),
    ]
    w.append(_opt(kl, pos))
    lo_w, hi_w, top_w = lo[pos], hi[pos], hi[pos]
    for chunk in range(_CHUNKS):
        if pos.size == 0:
            break

        def f(x, i, w=w):
            return _row_max(*_excess(x, w[0][i], w[1][i], w[2][i], w[3][i], _opt(w[4], i), slope=True))

        lo_w, hi_w, done = _narrow(f, lo_w, hi_w, top_w, maxiter=_FIRST if chunk == 0 else _CHUNK)
        lo[pos] = lo_w
        going = ~done
        pos, lo_w, hi_w, top_w = pos[going], lo_w[going], hi_w[going], top_w[going]
        w = [v if v is None else v[going] for v in w]
        if pos.size:  # drop the orders satisfied at the lower end: their roots lie below it
            w[2], w[3], w[4] = _prune(_excess(lo_w, *w), w[2], w[3], w[4])
    return lo


def _certified_start(la, lna, lam, level, kl, hi):
    """The start of :func:`_start`, moved down until some constraint is certainly violated there (-inf if
    not even at the floor: β rounds to 0)."""
    x0 = np.clip(_start(la, lna, lam, level, kl), _X_FLOOR, hi)
    lo = np.full(la.size, -np.inf)
    todo = np.arange(la.size)
    for step in (1e-9, 1e-3, 1.0, np.inf):
        if todo.size == 0:
            break
        cand = np.maximum(x0[todo] - step * (1.0 + np.abs(x0[todo])), _X_FLOOR)
        ex = _excess(cand, la[todo], lna[todo], _rows(lam, todo), _rows(level, todo), _opt(kl, todo))
        ok = np.max(ex, axis=1) >= 0
        lo[todo[ok]] = cand[ok]
        todo = todo[~ok]
    return lo


def _prune(ex, lam_c, lev_c, kl_c):
    """The columns (orders) with ``ex >= 0`` in some row, gathered per row into (rows, K) arrays, K the
    largest count (rows with fewer are padded with their most violated column, which changes nothing);
    the KL column (the last of ``ex`` when ``kl_c`` is given) stays only where it is kept (else κ = inf)."""
    n = lam_c.shape[1]
    keep = max(int(np.max(np.sum(ex >= 0, axis=1))), 1)
    order = np.argsort(-ex, axis=1)[:, :keep]
    first = order[:, :1]
    is_kl = order == n
    pick = np.where(is_kl, np.where(first == n, 0, first), order)  # a Rényi slot standing in for the KL one
    lam_k = np.take_along_axis(lam_c, pick, axis=1)
    lev_k = np.take_along_axis(lev_c, pick, axis=1)
    if kl_c is None:
        return lam_k, lev_k, None
    lev_k = np.where(is_kl, np.inf, lev_k)  # that slot is the KL one: no Rényi constraint there
    return lam_k, lev_k, np.where(np.any(is_kl, axis=1), kl_c, np.inf)


def _narrow(f, lo, hi, top, *, maxiter, xtol=XTOL):
    """Narrow brackets [lo, hi] of the decreasing ``f(x, idx) -> (value, slope)`` (``idx``: the rows of
    ``x``).  Each step tries Newton from ``lo`` (the violated side; the constraints are convex in b, so the
    step lands near the root and usually below it), else the Illinois point of regula falsi, and every
    fourth step bisects (on log(top − x) where hi lies much closer to ``top`` = logit(1 − a) than lo: a
    small ρ puts the root there), so it is never slower than a quarter of bisection.  Only the sign of a
    fresh evaluation moves an end: ``lo`` moves only to points with f >= 0 (certainly violated), so it stays
    below every root; NaN counts as negative.  A row is done when hi − lo <= xtol·(1 + |hi|), or when a
    Newton step from lo moved it by less than that (the root is then within about that of lo).
    Returns (lo, hi, done)."""
    lo, hi, top = (np.array(v, dtype=float, copy=True) for v in (lo, hi, top))
    every = np.arange(lo.size)
    flo, dlo = f(lo, every)
    fhi, _ = f(hi, every)
    f_lo_true = flo.copy()
    side = np.zeros(lo.size, dtype=np.int8)
    done = ~(hi - lo > xtol * (1.0 + np.abs(hi)))
    idx = np.nonzero(~done)[0]
    for it in range(maxiter):
        if idx.size == 0:
            break
        low, high = lo[idx], hi[idx]
        d_low, d_high = top[idx] - low, top[idx] - high
        geo = (d_high > 0) & (d_low > 4.0 * d_high)
        mid = np.where(geo, top[idx] - np.sqrt(d_low * d_high), low + 0.5 * (high - low))
        with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
            # Newton from lo, stopped 0.1% short: a point just below the root is certifiably violated
            newton = low - 0.999 * f_lo_true[idx] / dlo[idx]
            false_pos = low + flo[idx] * (high - low) / (flo[idx] - fhi[idx])
        use_newton = (newton > low) & (newton < high)
        x = np.where(use_newton, newton, false_pos)
        x = np.where((x > low) & (x < high) & (it % 4 != 3), x, mid)
        fx, dx = f(x, idx)
        up = fx >= 0
        s = np.where(up, 1, -1).astype(np.int8)
        again = s == side[idx]
        lo[idx] = np.where(up, x, low)
        hi[idx] = np.where(up, high, x)
        f_lo_true[idx] = np.where(up, fx, f_lo_true[idx])
        dlo[idx] = np.where(up, dx, dlo[idx])
        flo[idx] = np.where(up, fx, np.where(again, flo[idx] / 2.0, flo[idx]))
        fhi[idx] = np.where(up, np.where(again, fhi[idx] / 2.0, fhi[idx]), fx)
        side[idx] = s
        tol = xtol * (1.0 + np.abs(hi[idx]))
        stop = (hi[idx] - lo[idx] <= tol) | (up & use_newton & (it % 4 != 3) & (x - low <= tol))
        done[idx[stop]] = True
        idx = idx[~stop]
    return lo, hi, done


def _rows(arr, idx):
    return arr if arr.shape[0] == 1 else arr[idx]


def _opt(arr, idx):
    return None if arr is None else arr[idx]


def _prepare(orders, curve, fpr, kl):
    """Checked arrays: orders (n,), curves (k, n), fpr (m,), kl (k,) or None, and the output shape."""
    lam = require(
        orders, lambda v: (v > 1) & np.isfinite(v), "orders: Rényi orders must be finite and > 1", None
    )
    lam = np.atleast_1d(lam)
    if lam.ndim != 1 or lam.size == 0:
        raise InputError("orders: a non-empty 1-D array of Rényi orders")
    rho = require(curve, lambda v: v >= 0, "curve: Rényi divergences must be >= 0 (inf allowed)", None)
    if rho.ndim == 0 or rho.shape[-1] != lam.size:
        raise InputError(f"curve: the last axis must have one value per order ({lam.size})")
    a = require(fpr, lambda v: (v >= 0) & (v <= 1), "fpr: must lie in [0, 1]", lambda v: f"{v:g}")
    lead = rho.shape[:-1]
    rho2 = rho.reshape(-1, lam.size)
    kl2 = None
    if kl is not None:
        kl_arr = require(kl, lambda v: v >= 0, "kl: a KL bound must be >= 0 (inf allowed)", None)
        kl2 = np.broadcast_to(kl_arr, lead).reshape(-1).astype(float)
    return lam, rho2, a, kl2, lead + a.shape


def _special(af, finite_r, zero_r):
    """(beta, tpr, mask) of the rows answered without a solve: a = 1 (β = 0); no finite constraint (β = 0,
    TPR = 1: nothing is certified); ρ = 0 at some order or κ = 0 (P = Q: β = 1 − a exactly, rounded down);
    a = 0 with a finite constraint (g_A = ∞ unless b = 1, the KL form likewise: β = 1)."""
    zr = finite_r & zero_r
    at0 = finite_r & ~zr & (af == 0)
    beta = np.select(
        [af == 1, ~finite_r, zr, at0], [0.0, 0.0, np.maximum(np.nextafter(1.0 - af, 0.0), 0.0), 1.0], np.nan
    )
    tpr = np.select([af == 1, ~finite_r, zr, at0], [1.0, 1.0, af, 0.0], np.nan)
    return beta, tpr, ~np.isnan(beta)


def _logit_bounds(lam, rho2, a, kl2):
    """Per (curve, fpr) row (curve-major): the logit of the lower bound on β (``-inf``: β rounds to 0), the
    special rows' answers (:func:`_special`) and the rows' false-positive rates."""
    k, m = rho2.shape[0], a.size
    af = np.tile(a.reshape(-1), k)
    with np.errstate(over="ignore", invalid="ignore"):
        level = (lam - 1.0) * rho2  # (k, n), inf stays inf
    finite_any = np.any(np.isfinite(level), axis=1)
    zero_any = np.any(rho2 == 0, axis=1)  # (not level == 0: a tiny ρ whose level underflows is solved)
    if kl2 is not None:
        finite_any |= np.isfinite(kl2)
        zero_any |= kl2 == 0
    beta_s, tpr_s, special = _special(af, np.repeat(finite_any, m), np.repeat(zero_any, m))
    x = np.full(af.shape, -np.inf)
    idx = np.nonzero(~special)[0]
    if idx.size:
        ai = af[idx]
        curve_of = idx // m
        kl_i = None if kl2 is None else kl2[curve_of]
        x[idx] = _solve(np.log(ai), np.log1p(-ai), lam[None, :], level[curve_of], kl_i)
    return x, beta_s, tpr_s, special, af


def _beta_out(x, beta_s, special):
    """β = sigmoid(x) rounded down.  For β <= 1/2: e^{log b} less 8 units in the last place per unit of
    1 + |log b| (log b carries an absolute error of a few ε·|log b|, exp one more ε), and 0 below e^{-690}
    (where exp nears the subnormals); above 1/2: 1 − (1 − β rounded up by :func:`_tpr_up`), one step down."""
    lb, lnb = _logs(x)
    with np.errstate(under="ignore"):
        small = np.exp(lb) * (1.0 - _LAST * (1.0 + np.abs(np.where(np.isfinite(lb), lb, 0.0))))
    large = np.nextafter(1.0 - _tpr_up(lnb), 0.0)
    beta = np.where(x > 0, large, np.where(lb < -690.0, 0.0, small))
    return np.where(special, beta_s, beta)


def _tpr_up(lnb):
    """e^{log(1 − b)} rounded up alike, plus the smallest normal number (against exp's subnormal results)."""
    with np.errstate(under="ignore"):
        return np.exp(lnb) * (1.0 + _LAST * (1.0 + np.abs(lnb))) + _TINY


def _tpr_out(x, tpr_s, special, af):
    """1 − β rounded up (:func:`_tpr_up`), clamped to [a, 1]."""
    _, lnb = _logs(x)
    return np.where(special, tpr_s, np.clip(_tpr_up(lnb), af, 1.0))


def beta_from_rdp(orders, curve, fpr, *, kl=None):
    """Certified lower bound on the type-II error β at each false-positive rate ``fpr``, from a Rényi curve:
    the smallest β that meets the binary-test constraints of every order in both directions (Zhu, Dong &
    Wang 2022, arXiv:2106.08567, App. F.1; optimal among conversions that see only the curve: Riess et al.
    2026, arXiv:2602.04562; the constraints: Balle et al. 2020, arXiv:1905.09982, §5), rounded down.

    ``orders``: (n,) finite orders > 1; ``curve``: (..., n) RDP values ρ(λ) >= 0 (``inf`` for an order
    without a bound), several curves along the leading axes; ``fpr``: values in [0, 1]; ``kl``: an optional
    bound on the KL divergence per curve (the λ → 1 limit of the curve).  Returns β with shape
    ``curve.shape[:-1] + fpr.shape`` (probabilities, no units); 1 − β is an upper bound on any test's TPR."""
    lam, rho2, a, kl2, shape = _prepare(orders, curve, fpr, kl)
    x, beta_s, _, special, _ = _logit_bounds(lam, rho2, a, kl2)
    return _beta_out(x, beta_s, special).reshape(shape)


def tpr_from_rdp(orders, curve, fpr, *, kl=None):
    """Certified upper bound on the true-positive rate 1 − β of any test at each ``fpr`` (the same solve
    as :func:`beta_from_rdp`, with 1 − β computed as e^{log(1−b)} so that tiny TPRs keep their digits),
    rounded up and clamped to [fpr, 1].  Same arguments and shape as :func:`beta_from_rdp`."""
    lam, rho2, a, kl2, shape = _prepare(orders, curve, fpr, kl)
    x, _, tpr_s, special, af = _logit_bounds(lam, rho2, a, kl2)
    return _tpr_out(x, tpr_s, special, af).reshape(shape)


#: steps (relative to 1 + |x|) above the solved logit tried for a certainly feasible point
_FEASIBLE_STEPS = (1e-11, 1e-9, 1e-7, 1e-5, 1e-3, 1e-1)


def _tpr_low(x, la, lna, lam, level, kl, af):
    """A certified lower bound on 1 − β per row: 1 − b at the first logit above ``x`` (steps
    _FEASIBLE_STEPS) where every constraint is certainly satisfied (a feasible (a, b): the pair Bern(a),
    Bern(1 − b) meets the curve, so β(a) <= b), rounded down; a itself (always feasible: b = 1 − a) where
    none is found.  ``lam``, ``level``: (1 or rows, orders); ``kl``: (rows,) or None."""
    hi = lna - la
    out = af.copy()
    todo = np.nonzero(np.isfinite(x))[0]
    for step in _FEASIBLE_STEPS:
        if todo.size == 0:
            break
        cand = np.minimum(x[todo] + step * (1.0 + np.abs(x[todo])), hi[todo])
        ex = _excess(
            cand, la[todo], lna[todo], _rows(lam, todo), _rows(level, todo), _opt(kl, todo), margin=-1.0
        )
        ok = ~np.any(ex >= 0, axis=1) & ~np.any(np.isnan(ex), axis=1)
        _, lnb = _logs(cand[ok])
        with np.errstate(under="ignore"):
            low = np.exp(lnb) * (1.0 - _LAST * (1.0 + np.abs(lnb)))
        out[todo[ok]] = np.maximum(low, af[todo[ok]])
        todo = todo[~ok]
    return np.clip(out, 0.0, 1.0)


def tpr_bracket_from_rdp(orders, curve, fpr, *, kl=None):
    """(lower, upper): certified bounds on the conversion's own TPR curve T(a) = 1 − β(a) (the optimal
    trade-off curve of every mechanism with the curve, :func:`tpr_from_rdp`) at each ``fpr``.  ``upper``
    is :func:`tpr_from_rdp`; ``lower`` is 1 − b at a certainly feasible b just above the solve's bracket
    (the bracket's width apart, ~1e-12 relative in logit), or a where none is found.  A lower bound on the
    *conversion's* curve, not on any mechanism's: :mod:`dpcalc.engine.conversion.rdp_profile` uses it, with
    the curve's concavity, to bound the curve between grid points.  Same arguments and shape as
    :func:`tpr_from_rdp`."""
    lam, rho2, a, kl2, shape = _prepare(orders, curve, fpr, kl)
    x, _, tpr_s, special, af = _logit_bounds(lam, rho2, a, kl2)
    upper = _tpr_out(x, tpr_s, special, af)
    lower = tpr_s.copy()
    idx = np.nonzero(~special)[0]
    if idx.size:
        m = a.size
        curve_of = idx // m
        with np.errstate(over="ignore", invalid="ignore"):
            level = (lam - 1.0) * rho2
        ai = af[idx]
        kl_i = None if kl2 is None else kl2[curve_of]
        lower[idx] = _tpr_low(x[idx], np.log(ai), np.log1p(-ai), lam[None, :], level[curve_of], kl_i, ai)
    return np.minimum(lower, upper).reshape(shape), upper.reshape(shape)
