"""Closed-form RDP ⇄ (ε, δ) conversions, per order (docs/math.md §1.1–§1.4), with input checks and safe-side
rounding shared by :mod:`dpcalc.engine.conversion.methods` (which re-exports everything public here).

numpy only.  Every function broadcasts its arguments and returns float arrays of the broadcast shape.

* ``eps_mironov`` / ``delta_mironov``   Mironov 2017, Prop. 3 (docs/math.md §1.1)
* ``eps_balle`` / ``delta_balle``       Balle et al. 2020, Thm 21 = Canonne–Kamath–Steinke 2020, Prop. 12 (§1.2)
* ``eps_asoodeh`` / ``delta_asoodeh``   Asoodeh et al. (arXiv 2008.06529) closed-form bound (§1.3 items 3, 5, 6)
* ``zeta_mironov``, ``zeta_g``, ``zeta_f``   DP → RDP lower bounds on ζ_α^ε(δ) (§1.3 item 4, §1.4)

Rounding: every closed form is rounded to the safe side past its own floating-point error (ε and δ up, the
DP → RDP lower bounds down) by 16 units in the last place per log-space summand (:func:`_up`, :func:`_down`).
"""

from __future__ import annotations

import numpy as np

from dpcalc.engine._numerics import log1mexp, log_h, next_up, require

#: Orders at or below this are unstable for the Balle et al. formula; dp_accounting treats them as ∞ (§1.2).
BALLE_MIN_ORDER = 1.01

# ----------------------------------------------------------------------------------------------------------
# safe-side rounding

#: round-off allowance per unit of magnitude of the summands of a closed form (16 units in the last place)
_ROUND = 16 * 2.0**-52


def _up(value, *mags):
    """``value`` rounded up past its round-off: + 16 ulp × Σ|summand|, then one more ulp up (nan/inf kept)."""
    value = _arr(value)
    with np.errstate(invalid="ignore", over="ignore"):
        m = sum((np.abs(_arr(x)) for x in mags), np.zeros_like(value))
        out = next_up(value + _ROUND * np.where(np.isfinite(m), m, 0.0))
    return np.where(np.isfinite(value), out, value)


def _down(value, *mags):
    """``value`` rounded down past its round-off (the mirror of :func:`_up`, for lower bounds)."""
    return -_up(-_arr(value), *mags)


def _exp_up(logv, *mags):
    """exp(logv) rounded up (never 0 for a finite ``logv``: an underflow gives the smallest subnormal)."""
    logv = _arr(logv)
    with np.errstate(over="ignore", invalid="ignore"):
        v = next_up(np.exp(_up(logv, *mags)))
    return np.where(np.isneginf(logv), 0.0, v)


# ----------------------------------------------------------------------------------------------------------
# input checks


def _arr(x) -> np.ndarray:
    return np.asarray(x, dtype=float)


def _check_alpha(alpha) -> np.ndarray:
    return require(alpha, lambda a: a > 1.0, "--alpha: Rényi orders must be > 1")


def _check_rdp(rdp) -> np.ndarray:
    return require(rdp, lambda z: z >= 0.0, "--rdp: must be >= 0 (Rényi divergences are non-negative)")


def _check_delta(delta) -> np.ndarray:
    return require(delta, lambda d: (d >= 0.0) & (d <= 1.0), "--delta: must lie in [0, 1]")


def _check_eps(eps) -> np.ndarray:
    return require(eps, lambda e: e >= 0.0, "--epsilon: must be >= 0")


def _prep_eps(alpha, rdp, delta):
    """Checked and broadcast (α, ζ, δ) for the ε-for-δ direction."""
    return np.broadcast_arrays(_check_alpha(alpha), _check_rdp(rdp), _check_delta(delta))


def _checked_eps(alpha, rdp, delta):
    """Checked (α, ζ, δ) for the ε-for-δ direction, *not* broadcast: the elementwise closed forms let each
    operation broadcast, so a term of α alone (or δ alone) is computed once per order (per δ), not once per
    element of a curve — the same operations on the same values, so the same results."""
    return _check_alpha(alpha), _check_rdp(rdp), _check_delta(delta)


def _prep_delta(alpha, rdp, eps):
    """Checked and broadcast (α, ζ, ε) for the δ-for-ε direction."""
    return np.broadcast_arrays(_check_alpha(alpha), _check_rdp(rdp), _check_eps(eps))


def _finish_eps(eps, rdp, delta):
    """Edge cases shared by every ε-for-δ conversion (§1.2, §1.3).

    δ >= 1: every mechanism is (0, 1)-DP, ε = 0.  ζ = 0: M(x) = M(y), ε = 0 (even for δ = 0).
    δ = 0 with ζ > 0: no single order certifies δ = 0 (§1.3 item 2), ε = ∞.  ζ = ∞: ε = ∞.
    Otherwise clip at ε >= 0.
    """
    eps = np.where(np.isnan(eps), np.inf, eps)
    eps = np.maximum(eps, 0.0)
    eps = np.where(delta <= 0.0, np.inf, eps)
    eps = np.where(np.isposinf(rdp), np.inf, eps)
    eps = np.where((rdp == 0.0) | (delta >= 1.0), 0.0, eps)
    return eps


def _finish_delta(delta, rdp, eps):
    """Edge cases shared by every δ-for-ε conversion: ζ = 0 → δ = 0; ζ = ∞ → δ = 1; ε = ∞ → δ = 0
    (for finite ζ); result clipped to [0, 1]."""
    delta = np.where(np.isnan(delta), 1.0, delta)
    delta = np.clip(delta, 0.0, 1.0)
    delta = np.where(np.isposinf(eps), 0.0, delta)
    delta = np.where(np.isposinf(rdp), 1.0, delta)
    delta = np.where(rdp == 0.0, 0.0, delta)
    return delta


# ----------------------------------------------------------------------------------------------------------
# Mironov 2017, Prop. 3 (docs/math.md §1.1)


def eps_mironov(alpha, rdp, delta):
    """ε = ζ + log(1/δ)/(α−1): Mironov 2017 ("Rényi differential privacy"), Prop. 3; docs/math.md §1.1."""
    alpha, rdp, delta = _checked_eps(alpha, rdp, delta)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        term = -np.log(delta) / (alpha - 1.0)
        eps = _up(rdp + term, rdp, term)
    return _finish_eps(eps, rdp, delta)


def delta_mironov(alpha, rdp, eps):
    """δ = exp((α−1)(ζ−ε)), clipped at 1: the inverse of Mironov 2017, Prop. 3; docs/math.md §1.1."""
    alpha, rdp, eps = _prep_delta(alpha, rdp, eps)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        a, b = (alpha - 1.0) * rdp, (alpha - 1.0) * eps
        delta = _exp_up(np.minimum(a - b, 0.0), a, b)
    return _finish_delta(delta, rdp, eps)


# ----------------------------------------------------------------------------------------------------------
# Balle et al. 2020, Thm 21 = Canonne–Kamath–Steinke 2020, Prop. 12 (docs/math.md §1.2)


def _kl_tv_ok(rdp, delta):
    """dp_accounting's KL shortcut (docs/math.md §1.2 rule 2): δ² + expm1(−ζ) > 0 ⇒ (0, δ)-DP.

    Sound: TV(P, Q) <= sqrt(1 − e^{−KL}) (Bretagnolle–Huber), KL = D_1 <= D_α <= ζ, and (0, δ)-DP is
    exactly TV <= δ.
    """
    with np.errstate(over="ignore", invalid="ignore"):
        return delta * delta + np.expm1(-rdp) > 0.0


def _balle_first(alpha, rdp, delta):
    """ζ + (log h_α − log δ)/(α−1), rounded up (shared by Balle et al. and the first Asoodeh term)."""
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        am1 = alpha - 1.0
        lh = log_h(alpha) / am1
        ld = np.log(delta) / am1
        return _up(rdp + (lh - ld), rdp, lh, ld, 1.0 / am1)


def eps_balle(alpha, rdp, delta):
    """ε = ζ + (log h_α − log δ)/(α−1), h_α = (1/α)(1−1/α)^{α−1}.

    Balle, Barthe, Gaboardi, Hsu, Sato 2020 (arXiv 1905.09982) Thm 21 = Canonne, Kamath, Steinke 2020
    (arXiv 2004.00010 v4) Prop. 12; docs/math.md §1.2.  Follows dp_accounting 0.6.0's rules: (1) the KL
    shortcut ε = 0 where δ² + expm1(−ζ) > 0 (sound, see :func:`_kl_tv_ok`); (2) orders α <= 1.01 give ∞
    (the library deems the formula unstable there; this only discards orders); (3) ε >= 0.
    """
    alpha, rdp, delta = _checked_eps(alpha, rdp, delta)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        eps = _balle_first(alpha, rdp, delta)
    eps = np.where(alpha <= BALLE_MIN_ORDER, np.inf, eps)
    eps = np.where(_kl_tv_ok(rdp, delta), 0.0, eps)
    return _finish_eps(eps, rdp, delta)


def delta_balle(alpha, rdp, eps):
    """δ = min(sqrt(1 − e^{−ζ}), h_α e^{(α−1)(ζ−ε)}), as dp_accounting 0.6.0 ``compute_delta``.

    The inverse of Balle et al. 2020 Thm 21 / Canonne–Kamath–Steinke Prop. 12 (docs/math.md §1.2); the first
    term is the KL/TV bound (valid for every ε >= 0); orders α <= 1.01 use it alone.
    """
    alpha, rdp, eps = _prep_delta(alpha, rdp, eps)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        log_rdp = _balle_log_delta(alpha, rdp, eps)
        delta = np.where(alpha <= BALLE_MIN_ORDER, 1.0, _exp_up(np.minimum(log_rdp, 0.0)))
        delta = np.minimum(delta, _kl_delta(rdp))
    return _finish_delta(delta, rdp, eps)


def _kl_delta(rdp):
    """sqrt(1 − e^{−ζ}) rounded up: TV <= sqrt(1 − e^{−KL}) and KL <= D_α (docs/math.md §1.2)."""
    return _exp_up(0.5 * log1mexp(-rdp), rdp)


def _balle_log_delta(alpha, rdp, eps):
    """log(h_α e^{(α−1)(ζ−ε)}), rounded up."""
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        a, b, lh = (alpha - 1.0) * rdp, (alpha - 1.0) * eps, log_h(alpha)
        return _up(a - b + lh, a, b, lh, alpha)


# ----------------------------------------------------------------------------------------------------------
# Asoodeh et al. closed form (docs/math.md §1.3 items 3, 5, 6)


def eps_asoodeh(alpha, rdp, delta):
    """Closed-form upper bound on the optimal ε (Asoodeh, Liao, Calmon, Kosut, Sankar, arXiv 2008.06529, as
    presented in Asoodeh's talk "Privacy Analysis of Iterative Algorithms via f-divergences";
    docs/math.md §1.3 items 3 and 5).

    For 0 < αδ < 1: ε = min{ζ − log(δ/h_α)/(α−1), log((e^{(α−1)ζ} − 1)/(αδ) + 1)/(α−1)}; the first term is
    Balle et al. (without their α <= 1.01 cut-off: it is computed in log space and is stable).
    For αδ >= 1: ε = max(0, ζ + log(1−δ)) (exact, item 3).  Also applies the KL shortcut ε = 0 where
    δ² + expm1(−ζ) > 0 (sound, see :func:`_kl_tv_ok`), so that it is never above :func:`eps_balle`.
    """
    alpha, rdp, delta = _checked_eps(alpha, rdp, delta)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        first = _balle_first(alpha, rdp, delta)
        eps = np.minimum(first, _second_where_needed(alpha, rdp, delta))
        big = alpha * delta >= 1.0
        if np.any(big):  # (rare: orders of 1/δ and above)
            l1d = np.log1p(-np.minimum(delta, 1.0))
            eps = np.where(big, np.minimum(_up(rdp + l1d, rdp, l1d), first), eps)
    eps = np.where(_kl_tv_ok(rdp, delta), 0.0, eps)
    return _finish_eps(eps, rdp, delta)


def _second_where_needed(alpha, rdp, delta):
    """:func:`_asoodeh_second` where it may be below the first term, +∞ elsewhere (the same minimum).

    With x = (α−1)ζ, the second term is at least ζ + (log(1 − e^{−x}) − log α − log δ)/(α−1) (drop the + 1), and
    the first is ζ + (log h_α − log δ)/(α−1) with log h_α = −log α − g, g = −(α−1) log(1 − 1/α) > 0; so
    second − first >= (log(1 − e^{−x}) + g)/(α−1).  Where x >= −log(1 − e^{−g/2}) that is >= g/(2(α−1)) >=
    1/(2α), far above both terms' rounding allowances while their magnitudes stay below 1e12/(2α): there the
    first term is the minimum, bit for bit, and the second is not computed."""
    am1 = alpha - 1.0
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        g = -am1 * np.log1p(-1.0 / alpha)
        x_min = -np.log(-np.expm1(-0.5 * g))
        mags = 1.0 + rdp + (np.abs(np.log(delta)) + np.log(alpha) + 50.0) / am1
        skip = (am1 * rdp >= x_min) & (mags * 1e-12 < 0.5 / alpha)
    if not np.any(skip):
        return _asoodeh_second(alpha, rdp, delta)
    need = ~skip
    out = np.full(skip.shape, np.inf)
    if np.any(need):
        a, z, d = (np.broadcast_to(x, skip.shape)[need] for x in (alpha, rdp, delta))
        out[need] = _asoodeh_second(a, z, d)
    return out


def _asoodeh_second(alpha, rdp, delta):
    """log((e^{(α−1)ζ} − 1)/(αδ) + 1)/(α−1), rounded up (the second term of §1.3 item 5)."""
    am1 = alpha - 1.0
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        lad = np.log(alpha) + np.log(delta)
        second = np.logaddexp(_log_expm1(am1 * rdp) - lad, 0.0) / am1
        return _up(second, second, rdp, lad / am1)


def _log_expm1(x):
    """log(e^x − 1) for x >= 0 (−∞ at 0), without overflow."""
    with np.errstate(divide="ignore", over="ignore"):
        return np.where(x > 30.0, x + np.log1p(-np.exp(-x)), np.log(np.expm1(np.minimum(x, 30.0))))


def delta_asoodeh(alpha, rdp, eps):
    """Closed-form upper bound on the optimal δ for a given ε (Asoodeh et al., arXiv 2008.06529, as presented
    in Asoodeh's talk; docs/math.md §1.3 item 6).

    δ = min{h_α e^{(α−1)(ζ−ε)}, (e^{(α−1)ζ} − 1)/(α(e^{(α−1)ε} − 1))} where that value is < 1/α (the second
    term is ∞ at ε = 0); otherwise the αδ >= 1 branch δ = max(1/α, 1 − e^{ε−ζ}) (exact where the true δ is
    >= 1/α, and >= 1/α otherwise, so valid either way); also min with Balle et al.'s term (valid everywhere)
    and the KL/TV bound sqrt(1 − e^{−ζ}); clipped to [0, 1].
    """
    alpha, rdp, eps = _prep_delta(alpha, rdp, eps)
    am1 = alpha - 1.0
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        first = _balle_log_delta(alpha, rdp, eps)
        xz = am1 * rdp
        xe = am1 * eps
        lz, le, la = _log_expm1(xz), _log_expm1(xe), np.log(alpha)
        second = np.where(eps > 0.0, _up(lz - la - le, lz, la, le, xz, xe), np.inf)
        logd = np.minimum(first, second)
        small = logd < -la
        big_branch = np.maximum(1.0 / alpha, _up(-np.expm1(eps - rdp), 1.0))
        delta = np.where(small, _exp_up(logd), big_branch)
        # Balle et al.'s term is valid for every δ (also where the branch switch applies) and KL/TV too
        delta = np.minimum(np.minimum(delta, _exp_up(np.minimum(first, 0.0))), _kl_delta(rdp))
    return _finish_delta(delta, rdp, eps)


# ----------------------------------------------------------------------------------------------------------
# DP → RDP (docs/math.md §1.4): lower bounds on ζ_α^ε(δ)


def _prep_zeta(alpha, eps, delta):
    return np.broadcast_arrays(_check_alpha(alpha), _check_eps(eps), _check_delta(delta))


def zeta_mironov(alpha, eps, delta):
    """ζ = ε − log(1/δ)/(α−1) (Lécuyer's filter / the inverse of Mironov 2017 Prop. 3; docs/math.md §1.4).

    May be negative (then no RDP level at this order certifies (ε, δ)).  δ = 0 gives −∞.
    """
    alpha, eps, delta = _prep_zeta(alpha, eps, delta)
    with np.errstate(divide="ignore", invalid="ignore"):
        term = np.log(delta) / (alpha - 1.0)
        return _down(eps + term, eps, term)


def zeta_g(alpha, eps, delta):
    """g(α, ε, δ) = ε − log(h_α/δ)/(α−1): the inverse of Balle et al. 2020 Thm 21 (docs/math.md §1.3 item 4,
    §1.4).  A lower bound on ζ_α^ε(δ); may be negative."""
    alpha, eps, delta = _prep_zeta(alpha, eps, delta)
    with np.errstate(divide="ignore", invalid="ignore"):
        am1 = alpha - 1.0
        ld, lh = np.log(delta) / am1, log_h(alpha) / am1
        return _down(eps + (ld - lh), eps, ld, lh, 1.0 / am1)


def zeta_f(alpha, eps, delta):
    """f(α, ε, δ) = ε + log((e^ε − αδ)((1−δ)/(e^ε−δ))^α + αδ)/(α−1) for 0 < αδ < 1 (Asoodeh et al.,
    arXiv 2008.06529, as presented in Asoodeh's talk; docs/math.md §1.3 item 4, §1.4).  A lower bound on
    ζ_α^ε(δ).  For αδ >= 1 returns the exact ε − log(1−δ) (item 3)."""
    alpha, eps, delta = _prep_zeta(alpha, eps, delta)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        ad = alpha * delta
        # log(e^ε − αδ) = ε + log1p(−αδ e^{−ε}); log((1−δ)/(e^ε−δ)) = log1p(−δ) − ε − log1p(−δ e^{−ε})
        a = (
            eps
            + np.log1p(-ad * np.exp(-eps))
            + alpha * (np.log1p(-delta) - eps - np.log1p(-delta * np.exp(-eps)))
        )
        term = np.logaddexp(a, np.log(ad)) / (alpha - 1.0)
        val = _down(eps + term, eps, term, alpha * (eps + np.abs(np.log(delta))) / (alpha - 1.0))
        l1d = np.log1p(-np.minimum(delta, 1.0))
        val = np.where(ad >= 1.0, _down(eps - l1d, eps, l1d), val)
    return val
