"""The exact (optimal) homogeneous composition of k (ε, δ)-DP mechanisms: Kairouz, Oh & Viswanath 2015,
"The composition theorem for differential privacy", arXiv:1311.0776, Thm 3.3 (docs/math.md §2.3) — the
hockey-stick divergence of the k-fold product of the dominating pair of (ε, δ)-DP, evaluated exactly as the
theorem states it, for k up to 10^6, and rounded to the safe side.

δ(ε_g) = c + (1−δ)^k·S(ε_g) with c = 1 − (1−δ)^k computed in 80-digit decimal arithmetic and S the sum over
the binomial terms, each by Loader's (2000) saddle-point form with its own rounding bound.
"""

from __future__ import annotations

import functools
import math
from decimal import Context, Decimal, localcontext
from fractions import Fraction

import numpy as np

from dpcalc.engine._numerics import log1mexp, logsumexp, next_up
from dpcalc.engine._roots import bisect
from dpcalc.errors import InputError

_EPS = float(np.finfo(float).eps)

#: The largest count :func:`kov_log_delta` accepts (its sum has count + 1 terms).
KOV_MAX_COUNT = 10**6
#: Terms of the KOV sum below ``max − _WINDOW`` (in log) are bounded in bulk rather than summed.
_WINDOW = 1000.0
#: At most this many (target × term) values are held in memory at once.
_BLOCK = 4_000_000


def _check_kov(eps, delta, k):
    if not (math.isfinite(eps) and eps >= 0):
        raise InputError("epsilon: must be a finite number >= 0")
    if not 0 <= delta < 1:
        raise InputError("delta: must lie in [0, 1)")
    if int(k) != k or not 1 <= k <= KOV_MAX_COUNT:
        raise InputError(
            f"count: optimal composition is computed for counts in [1, {KOV_MAX_COUNT}], got {k}"
        )
    return float(eps), float(delta), int(k)


# The KOV sum in the form evaluated here (docs/math.md §2.3).  With p = e^ε/(1+e^ε), q = 1 − p,
#     δ(ε_g) = c + (1−δ)^k · S(ε_g),   c = 1 − (1−δ)^k,
#     S(ε_g) = Σ_l a_l (1 − e^{ε_g + (2l−k)ε})_+,   a_l = C(k,l) p^{k−l} q^l = C(k,l) e^{(k−l)ε}/(1+e^ε)^k,
# a_l being the Binomial(k, p) probability of k − l.  The scalar parts (c, (1−δ)^k, kp, kq) are computed in
# 80-digit decimal arithmetic (the standard library's correctly rounded exp/ln), so that a target barely
# above c keeps its whole remaining budget; only S is evaluated in floating point, each term with its own
# error bound.

_U = _EPS / 2  # unit roundoff, 2^-53
_DEC_PREC = 80
#: stirlerr(n) = log n! − log(√(2πn) (n/e)^n) for n = 0..15 (40-digit mpmath, rounded to doubles; n = 0
#: unused)
_STIRLERR_TABLE = np.array(
    [
        0.0,
        0.08106146679532726,
        0.0413406959554093,
        0.02767792568499834,
        0.020790672103765093,
        0.016644691189821193,
        0.013876128823070748,
        0.01189670994589177,
        0.010411265261972096,
        0.009255462182712733,
        0.00833056343336287,
        0.007573675487951841,
        0.00694284010720953,
        0.006408994188004207,
        0.0059513701127588475,
        0.005554733551962801,
    ]
)
#: An absolute bound on the error of :func:`_stirlerr`: for n >= 16 the first omitted term of the alternating
#: Stirling series, (691/360360)/16^11 < 1.1e-16, plus the rounding of a value below 0.0053 (< 1e-17); the
#: table entries are within half an ulp (< 1e-17).
_STIRLERR_ERR = 2.5e-16
_BD0_TERMS = 12
_TINY = 5e-324  # the smallest subnormal


def _dec_log1p(x):
    """``log(1 + x)`` of a :class:`~decimal.Decimal` (current context): the series for |x| <= 1/4, else
    ``ln``."""
    if abs(x) > Decimal("0.25"):
        return (1 + x).ln()
    total, power, j = Decimal(0), x, 1
    tiny = Decimal(10) ** -(_DEC_PREC + 5)
    while True:
        step = power / j
        total += step
        if abs(step) <= tiny * abs(total):
            return total
        power, j = -power * x, j + 1


def _dec_expm1(x):
    """``exp(x) − 1`` of a :class:`~decimal.Decimal` (current context): the series for |x| < 1/2, else
    ``exp``."""
    if abs(x) >= Decimal("0.5"):
        return x.exp() - 1
    total, term, j = Decimal(0), Decimal(1), 1
    tiny = Decimal(10) ** -(_DEC_PREC + 5)
    while True:
        term = term * x / j
        total += term
        if abs(term) <= tiny * abs(total):
            return total
        j += 1


@functools.lru_cache(maxsize=32)
def _kov_split(delta: float, k: int):
    """``(c_hi, c_lo, log_keep_up)``: ``c = 1 − (1−δ)^k = c_hi + c_lo`` (a double-double: ``|c − c_hi − c_lo|
    <= 2^-53 |c_lo| + 1e-70 c + 2^-1075``, the last for a c_lo that underflows) and ``log (1−δ)^k =
    k log1p(−δ)`` rounded up.

    Computed in 80-digit decimal arithmetic from the exact value of the double δ: log1p and expm1 by their
    series where they would cancel, ``ln``/``exp`` (correctly rounded by the :mod:`decimal` module) elsewhere,
    so that the only errors left are the final roundings to doubles."""
    if delta == 0:
        return 0.0, 0.0, 0.0
    with localcontext(Context(prec=_DEC_PREC)):
        log_keep = k * _dec_log1p(-Decimal(delta))
        c = -_dec_expm1(log_keep)
        c_hi = float(c)
        c_lo = float(c - Decimal(c_hi))
    return c_hi, c_lo, float(next_up(float(log_keep)))


@functools.lru_cache(maxsize=8)
def _kov_rr(eps: float, k: int):
    """``(kp, log kp, kq, log kq, log p^k, log q^k)`` as doubles (each within half an ulp, via 80-digit
    decimals; logs finite even where kq underflows): p = e^ε/(1+e^ε), q = 1/(1+e^ε)."""
    with localcontext(Context(prec=_DEC_PREC)):
        e = Decimal(eps)
        r = (-e).exp()  # e^{-ε} <= 1
        lp = -_dec_log1p(r)  # log p
        lq = -(e + _dec_log1p(r))  # log q
        kd = Decimal(k)
        vals = (kd / (1 + r), kd.ln() + lp, kd * r / (1 + r), kd.ln() + lq, kd * lp, kd * lq)
    return tuple(float(v) for v in vals)


def _stirlerr(n):
    """``log n! − log(√(2πn)(n/e)^n)`` for integer-valued ``n >= 1`` (Loader 2000; error below
    :data:`_STIRLERR_ERR`): a table up to 15, the Stirling series Σ B_2j/(2j(2j−1) n^{2j−1}) to n^-9 above."""
    n = np.asarray(n, dtype=float)
    nn = n * n
    with np.errstate(divide="ignore", invalid="ignore"):
        series = (1 / 12 - (1 / 360 - (1 / 1260 - (1 / 1680 - 1 / (1188 * nn)) / nn) / nn) / nn) / n
    return np.where(n <= 15, _STIRLERR_TABLE[np.clip(n, 0, 15).astype(int)], series)


def _bd0(x, m, log_m):
    """Loader's deviance term ``x log(x/m) + m − x`` (>= 0) for ``x >= 1`` and an absolute bound on its error.

    Where ``|x − m| < 0.1 (x + m)``: the series ``(x−m)v + 2x Σ_{j>=1} v^{2j+1}/(2j+1)``, ``v = (x−m)/(x+m)``,
    whose terms are at most ``v^{2j} <= 0.01^j`` times the first one (12 of them leave < 1e-24 of it); its
    computation loses at most ~17 units of roundoff of the value (bound: 32).  Elsewhere the direct form with
    ``log(x/m) = log x − log m`` (``log_m`` given, so that an underflowing m still has its log): the error of
    the log (2u|log x| + u|log m| + u|L|), times x, plus the three roundings of ``x L + m − x`` (bound: 4u per
    unit of magnitude of each part).  The error of m itself is the caller's (:func:`_kov_log_pmf`)."""
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        d = x - m
        near = np.abs(d) < 0.1 * (x + m)
        v = np.where(near, d / (x + m), 0.0)
        s = d * v
        ej = 2.0 * x * v
        v2 = v * v
        for j in range(1, _BD0_TERMS + 1):
            ej = ej * v2
            s = s + ej / (2 * j + 1)
        log_x = np.log(x)
        big = log_x - log_m
        direct = x * big + m - x
        val = np.where(near, s, direct)
        err = np.where(
            near,
            32.0 * _U * np.abs(s),
            4.0 * _U * (x * (np.abs(log_x) + np.abs(log_m) + np.abs(big)) + m + x) + 1e-300,
        )
    return val, err


def _kov_log_pmf(eps: float, k: int, x):
    """``log`` of the Binomial(k, p) probability of ``x`` (p = e^ε/(1+e^ε); ``x`` integer-valued in [0, k])
    and an absolute bound on the error of each value.

    Loader's saddle-point form (C. Loader 2000, "Fast and accurate computation of binomial probabilities", the
    algorithm of R's ``dbinom``): ``stirlerr(k) − stirlerr(x) − stirlerr(k−x) − bd0(x, kp) − bd0(k−x, kq) −
    ½ log(2π x (k−x)/k)``.  Unlike ``gammaln(k+1) − gammaln(l+1) − gammaln(k−l+1) + …``, whose parts are
    ~log k! (1.3e7 at k = 10^6: their rounding alone is ~1e-8 in log), every part here is at most the size of
    the result (bd0 is the log ratio to the mode), so the bound is ~1e-12 in the window of
    :func:`_kov_terms`.  The bound adds: the errors of bd0 and stirlerr; the rounding of kp and kq to doubles
    (relative u: first order ``u |kp − x| + u |kq − (k−x)|``, plus k u² for the second); the log of the
    product 2πx(k−x)/k (4u per unit of it); the additions (8u per unit of magnitude of each part).  The
    endpoints ``x = 0, k`` are ``k log q`` and ``k log p`` (rounded from decimals: u of the value; bound
    2u)."""
    kp, log_kp, kq, log_kq, lpk, lqk = _kov_rr(eps, k)
    x = np.asarray(x, dtype=float)
    inner = (x > 0) & (x < k)
    xi = np.where(inner, x, 1.0)
    yi = k - xi
    d1, e1 = _bd0(xi, kp, log_kp)
    d2, e2 = _bd0(yi, kq, log_kq)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        lf = np.log(2.0 * math.pi * (xi * yi / k))
        lc = _stirlerr(k) - _stirlerr(xi) - _stirlerr(yi) - d1 - d2
        val = lc - 0.5 * lf
        err = (
            e1
            + e2
            + 3.0 * _STIRLERR_ERR
            + _U * (np.abs(kp - xi) + np.abs(kq - yi))
            + k * _U * _U
            + 8.0 * _U * (2.0 + d1 + d2 + np.abs(lf))
        )
        val = np.where(x == 0, lqk, np.where(x == k, lpk, val))
        err = np.where(inner, err, 2.0 * _U * np.abs(val) + 1e-300)
        err = np.where(
            np.isneginf(val), 0.0, err
        )  # an underflowed kq: -inf is then exact enough (see caller)
    return val, err


@functools.lru_cache(maxsize=8)
def _kov_terms(eps: float, k: int):
    """Upper bounds of ``log a_l`` (the ε_g-independent part of :func:`_kov_log_pure`, computed once per
    (ε, k), not per bisection step): ``(ls, up, top, n_drop)`` — the ``l`` kept, their bounds, the largest
    bound, and how many terms lie more than ``_WINDOW`` below it (bounded in bulk by the caller)."""
    l_all = np.arange(k + 1, dtype=float)
    val, err = _kov_log_pmf(eps, k, k - l_all)
    up = val + err
    top = float(up.max())
    keep = up >= top - _WINDOW
    n_drop = int(k + 1 - keep.sum())
    # each kept term's bound is raised by 8u per unit of its magnitude here, once (see _kov_log_pure)
    ls, up = l_all[keep], up[keep] + 4.0 * _EPS * (1.0 + np.abs(up[keep]))
    ls.flags.writeable = False
    up.flags.writeable = False
    return ls, up, top, n_drop


def _kov_log_pure(eps: float, k: int, eps_g):
    """An upper bound of ``log S(ε_g)``, ``S(ε_g) = Σ_l a_l (1 − e^{ε_g + (2l−k)ε})_+`` (the δ-free part of
    the KOV sum, see above); ``-inf`` where ``ε_g >= kε`` (S = 0).  Flat array ``eps_g``.

    Each term is ``log a_l`` (bounded above, :func:`_kov_terms`) plus ``log1mexp(x)``, its argument ``x =
    ε_g + (2l−k)ε`` lowered by 16u(kε + |ε_g| + 1) (more than the 3 roundings of computing it) and its value
    raised by 8u per unit of magnitude of the term (log1mexp's own rounding and logsumexp's shift by the
    maximum); logsumexp over ``n`` terms is then raised by log1p(8u(n + 2)) (the exponentials and the sum)
    plus 8u per unit of the result and of the largest term.  Terms more than ``_WINDOW`` below the largest
    (at most n_drop, each below e^{top − _WINDOW} since 1 − e^x <= 1) are added in bulk."""
    ls, up, top, n_drop = _kov_terms(eps, k)
    eg = np.asarray(eps_g, dtype=float)
    x_err = 8.0 * _EPS * (k * eps + np.abs(eg) + 1.0)
    rows = max(1, _BLOCK // max(ls.size, 1))
    sums = np.empty(eg.shape)
    for start in range(0, eg.size, rows):  # blocks of targets, bounding memory
        e = eg[start : start + rows, None]
        x = e + (2.0 * ls - k) * eps - x_err[start : start + rows, None]
        with np.errstate(divide="ignore", invalid="ignore"):
            # log1mexp <= 0: raising it by 8u per unit of its magnitude is multiplying it by 1 − 8u
            terms = np.where(x < 0, up + log1mexp(np.minimum(x, 0.0)) * (1.0 - 4.0 * _EPS), -np.inf)
        sums[start : start + rows] = logsumexp(terms, axis=-1)
    margin = math.log1p(4.0 * _EPS * (ls.size + 2)) + 4.0 * _EPS * (np.abs(sums) + abs(top) + 1.0)
    sums = np.where(np.isneginf(sums), sums, sums + np.where(np.isfinite(sums), margin, 0.0))
    if n_drop:
        sums = np.logaddexp(sums, math.log(n_drop) + top - _WINDOW + 4.0 * _EPS * (abs(top) + _WINDOW))
    return np.where(_pure_is_zero(eps, k, eg), -np.inf, sums)


@functools.lru_cache(maxsize=64)
def _k_eps_up(eps: float, k: int) -> float:
    """The smallest double >= kε (exact rational product): from there on every term of S vanishes
    (1 − e^{ε_g + (2l−k)ε} <= 0 for l >= 0), so ``ε_g >= _k_eps_up`` is exactly ``ε_g >= kε``."""
    exact = Fraction(k) * Fraction(eps)
    p = float(exact)  # correctly rounded
    return p if Fraction(p) >= exact else float(next_up(p))


def _pure_is_zero(eps: float, k: int, eg):
    """Where S(ε_g) = 0 exactly: ε_g >= kε (tested against kε rounded up), or ε = 0 and ε_g >= 0."""
    return (eg >= _k_eps_up(eps, k)) | ((eps == 0) & (eg >= 0))


def kov_log_delta(eps, delta, k, eps_g):
    """``log δ(ε_g)`` of the k-fold composition of (ε, δ)-DP mechanisms, exactly (an upper bound).

    Kairouz–Oh–Viswanath 2015 (arXiv:1311.0776, Thm 3.3, as recalled in docs/math.md §2.3): the
    hockey-stick divergence of the k-fold product of the dominating pair,
    ``δ(ε_g) = 1 − (1−δ)^k + (1−δ)^k Σ_l C(k,l) [e^{(k−l)ε} − e^{ε_g + lε}]_+ / (1+e^ε)^k``:
    ``log(c + (1−δ)^k S)`` with c and ``log (1−δ)^k`` from :func:`_kov_split` and ``log S`` from
    :func:`_kov_log_pure`, each bounded above, combined by logaddexp and raised by 8u per unit of the result.
    ``eps_g`` is an array; the result has its shape.  See :func:`kov_delta` for δ itself (accurate also where
    it is dominated by c).
    """
    eps, delta, k = _check_kov(eps, delta, k)
    eg = np.asarray(eps_g, dtype=float)
    c_hi, c_lo, log_keep = _kov_split(delta, k)
    ls = _kov_log_pure(eps, k, eg.reshape(-1)).reshape(eg.shape)
    with np.errstate(divide="ignore", invalid="ignore"):
        lc = float(next_up(math.log(float(next_up(c_hi))), 2)) if c_hi > 0 else -np.inf
        out = np.logaddexp(lc, log_keep + ls)
        out = np.where(np.isneginf(out), out, out + 4.0 * _EPS * (np.abs(out) + 1.0))
    out = np.minimum(out, 0.0)
    return out[()] if out.ndim == 0 else out


def kov_delta(eps, delta, k, eps_target):
    """δ at total ε = ``eps_target`` of k-fold (ε, δ)-DP composition, exactly (KOV, arXiv:1311.0776 Thm 3.3;
    docs/math.md §2.3), rounded up.

    ``c + (1−δ)^k S`` summed as a double-double (``c_hi + (c_lo + (1−δ)^k S)``, each step rounded up), so that
    the result is within a few ulps of the exact value even where c dominates it."""
    eps, delta, k = _check_kov(eps, delta, k)
    eg = np.asarray(eps_target, dtype=float)
    c_hi, c_lo, log_keep = _kov_split(delta, k)
    ls = _kov_log_pure(eps, k, eg.reshape(-1)).reshape(eg.shape)
    with np.errstate(over="ignore", invalid="ignore"):
        v = log_keep + ls
        pure = np.where(np.isneginf(v), 0.0, next_up(np.exp(next_up(v + _EPS * np.abs(v))), 2))
        if c_hi > 0:
            lo_up = c_lo + _EPS * abs(c_lo) + 1e-60 * c_hi + _TINY
            out = next_up(c_hi + next_up(lo_up + pure))
        else:
            out = pure
    out = np.minimum(out, 1.0)
    return out[()] if np.ndim(out) == 0 else out


def kov_eps(eps, delta, k, delta_target):
    """The smallest ε_g (rounded up) with δ(ε_g) <= ``delta_target`` under KOV (arXiv:1311.0776 Thm 3.3;
    docs/math.md §2.3).

    Solved on the pure part: ``S(ε_g) <= r = (target − c)/(1−δ)^k`` (c = 1 − (1−δ)^k), with ``target − c``
    taken from the double-double c of :func:`_kov_split` (exact subtraction where they are close,
    Sterbenz), lowered by its rounding (2u of each part, 1e-60 c for c's own error, one subnormal for
    c_lo's underflow), and ``log r`` lowered by 4u per unit of its parts, so that no rounding of the c part
    eats into the budget of S however small that budget is.  S is decreasing on [0, kε] and 0 from kε on:
    bisection on ``log S`` (upper bounds, :func:`_kov_log_pure`), returning the bracket's upper end, a
    value at which the bound was evaluated and found within the budget. 0 where S(0) is already within it;
    ``inf`` where the target is at most ``1 − (1−δ)^k`` (no ε reaches it).
    """
    eps, delta, k = _check_kov(eps, delta, k)
    t = np.asarray(delta_target, dtype=float)
    if np.any(~(t > 0)) or np.any(t >= 1):
        raise InputError("--delta: must lie in (0, 1)")
    c_hi, c_lo, log_keep = _kov_split(delta, k)
    shape = t.shape
    tf = t.reshape(-1)
    room = tf - c_hi  # exact where tf and c_hi are within a factor 2 (Sterbenz)
    diff = room - c_lo
    diff = diff - _EPS * (np.abs(diff) + np.abs(room) + abs(c_lo)) - 1e-60 * c_hi - _TINY
    ok = diff > 0
    with np.errstate(divide="ignore", invalid="ignore"):
        ld = np.log(np.where(ok, diff, 1.0))
        lr = ld - log_keep
        lr = lr - 2.0 * _EPS * (np.abs(ld) + abs(log_keep) + np.abs(lr) + 1.0)

    def f(e, rows):
        return _kov_log_pure(eps, k, e) - lr[rows]

    out = np.where(ok, 0.0, np.inf)
    rows = np.nonzero(ok)[0]
    if rows.size:
        rows = rows[f(np.zeros(rows.size), rows) > 0]  # elsewhere S(0) is already within the budget: 0
    if rows.size:
        _, hi = bisect(
            lambda e: f(e, rows), np.zeros(rows.size), np.full(rows.size, _k_eps_up(eps, k)), increasing=False
        )
        out[rows] = next_up(hi, 2)
    out = out.reshape(shape)
    return out[()] if out.ndim == 0 else out
