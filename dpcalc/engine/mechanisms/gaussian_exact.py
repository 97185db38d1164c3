"""The exact privacy profile of the Gaussian mechanism (Balle & Wang 2018, Thm 8; docs/math.md §2.6).

A Gaussian mechanism with ℓ₂-sensitivity Δ and noise N(0, σ²I) is (ε, δ)-DP exactly for

    δ(ε) = Φ(r/2 − ε/r) − e^ε Φ(−r/2 − ε/r),     r = Δ/σ,

which is also Asoodeh's θ_ε(r) (docs/math.md §4.3).  k Gaussian mechanisms with the same r compose to
one Gaussian mechanism with ``r·√k`` (and heterogeneous ones to ``sqrt(Σ r_i²)``), so this profile is
also the exact profile of any composition of Gaussian mechanisms.

Everything is computed in log space (``log_ndtr``), elementwise over broadcast arrays.  Values returned
as bounds are rounded to the safe side: :func:`log_delta_gaussian` bounds δ from above (the
cancellation of the two terms is accounted for), :func:`eps_gaussian` bounds ε from above and
:func:`sigma_gaussian` bounds the calibrated σ from above.
"""

from __future__ import annotations

import numpy as np

from dpcalc.engine._numerics import log_add, log_sub, next_up, require
from dpcalc.engine._roots import bisect
from dpcalc.engine._special import lazy_special as special
from dpcalc.errors import InputError, UncertifiedError

#: Relative accuracy assumed for ``log_ndtr`` and one addition, in units of the double epsilon.
_ULPS = 4.0
_EPS_MACH = float(np.finfo(float).eps)


def _terms(eps, r):
    """The two log terms ``log Φ(r/2 − ε/r)`` and ``ε + log Φ(−r/2 − ε/r)`` (finite r > 0)."""
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        er = eps / r
        la = special.log_ndtr(r / 2.0 - er)
        lb = eps + special.log_ndtr(-r / 2.0 - er)
    return la, lb


def _check_r(r):
    r = np.asarray(r, dtype=float)
    if np.any(np.isnan(r)) or np.any(r < 0):
        raise InputError("r: the sensitivity-to-noise ratio Δ/σ must be >= 0")
    return r


def _prepare(eps, r):
    """Broadcast ε and r; ``finite`` marks the generic case, where ``rs``/``es`` are r/ε (elsewhere 1/0)."""
    eps = np.asarray(eps, dtype=float)
    r = _check_r(r)
    eps, r = np.broadcast_arrays(eps, r)
    finite = (r > 0) & np.isfinite(r) & np.isfinite(eps)
    return eps, r, finite, np.where(finite, r, 1.0), np.where(finite, eps, 0.0)


def log_delta_gaussian(eps, r):
    """``log δ(ε)`` of the Gaussian mechanism with ``r = Δ/σ`` (Balle & Wang 2018, Thm 8; docs/math.md §2.6).

    ``log δ = log_sub(log Φ(r/2 − ε/r), ε + log Φ(−r/2 − ε/r))``.  The result is an upper bound: it is
    raised by the worst-case effect of the rounding errors of the two terms, amplified by their
    cancellation, and never exceeds ``log Φ(r/2 − ε/r)`` (δ is at most its first term).  The
    inflation is a few ulps unless r² ≪ ε.  Edge cases: ``r = 0`` or ``ε = inf`` give ``-inf``
    (δ = 0); ``r = inf`` gives 0 (δ = 1).  Broadcasts ``eps`` against ``r``.
    """
    eps, r, finite, rs, es = _prepare(eps, r)
    la, lb = _terms(es, rs)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        ld = log_sub(la, np.minimum(lb, la))
        # relative error of each term as a value, then amplified by kappa = term1 / delta
        rel = _ULPS * _EPS_MACH * (1.0 + np.abs(la) + np.abs(es))
        log_kappa = la - ld
        infl = np.log1p(2.0 * rel * np.exp(np.minimum(log_kappa, 700.0)))
        out = np.minimum(ld + infl, la)
    with np.errstate(invalid="ignore"):
        out = np.where(np.isneginf(ld), np.minimum(la, np.log(2.0 * rel) + la), out)
    out = np.where(np.isneginf(la), -np.inf, out)  # δ <= its first term = 0 (e.g. ε = 1e300)
    out = np.where(finite, out, np.nan)
    out = np.where((r == 0) | np.isposinf(eps), -np.inf, out)
    out = np.where(np.isposinf(r) & np.isfinite(eps), 0.0, out)
    return out[()] if out.ndim == 0 else out


def delta_gaussian(eps, r):
    """δ(ε) of the Gaussian mechanism with ``r = Δ/σ``, an upper bound (see :func:`log_delta_gaussian`)."""
    with np.errstate(over="ignore"):
        ld = log_delta_gaussian(eps, r)
        out = np.where(np.isneginf(ld), 0.0, np.minimum(next_up(np.exp(ld)), 1.0))
    return out[()] if np.ndim(out) == 0 else out


def log_one_minus_delta_gaussian(eps, r):
    """``log(1 − δ(ε))`` computed directly (docs/math.md §2.6), never as ``1 − δ``.

    ``1 − δ = Φ(ε/r − r/2) + e^ε Φ(−ε/r − r/2)`` (a logaddexp), accurate when δ is close to 1, i.e.
    for Asoodeh's contraction coefficient 1 − θ_ε(r) (docs/math.md §4.3).  A plain evaluation (no
    rounding to either side).  ``r = 0`` gives 0; ``r = inf`` with finite ε gives ``-inf``.
    """
    eps, r, finite, rs, es = _prepare(eps, r)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        er = es / rs
        out = log_add(special.log_ndtr(er - rs / 2.0), es + special.log_ndtr(-er - rs / 2.0))
    out = np.where(finite, out, np.nan)
    out = np.where((r == 0) | np.isposinf(eps), 0.0, out)
    out = np.where(np.isposinf(r) & np.isfinite(eps), -np.inf, out)
    return out[()] if out.ndim == 0 else out


def _check_delta(delta, name="delta"):
    return require(delta, lambda d: (d > 0) & (d < 1), f"--{name}: must lie in (0, 1)", show=None)


def _tail_eps(delta, r):
    """ε with P[L > ε] = δ for the privacy loss L ~ N(r²/2, r²): an upper bound on ε(δ)."""
    z = -special.ndtri(delta)
    return r * r / 2.0 + r * z


def eps_gaussian(delta, r):
    """The smallest ε (rounded up) with δ(ε) ≤ ``delta`` for the Gaussian mechanism with ``r = Δ/σ``.

    Balle & Wang 2018, Thm 8 (docs/math.md §2.6), inverted by bisection on ``log δ`` (decreasing in ε).
    The bracket's upper end is the tail bound ``r²/2 + r·Q⁻¹(δ)`` (δ(ε) ≤ P[L > ε] for the privacy
    loss L ~ N(r²/2, r²)); the returned value is the bracket's safe (upper) end.  ε = 0 where
    ``delta ≥ δ(0) = 2Φ(r/2) − 1``; ``r = 0`` gives 0 and ``r = inf`` gives inf.
    Broadcasts ``delta`` against ``r``.
    """
    delta = _check_delta(delta)
    r = _check_r(r)
    delta, r = np.broadcast_arrays(delta, r)
    finite = (r > 0) & np.isfinite(r)
    rs = np.where(finite, r, 1.0)
    ld = np.log(delta)
    with np.errstate(over="ignore", invalid="ignore"):
        hi = np.maximum(_tail_eps(delta, rs), 0.0) * (1.0 + 1e-9) + 1e-300
    zero = log_delta_gaussian(0.0, rs) <= ld

    def f(e):
        return log_delta_gaussian(e, rs) - ld

    if np.any(finite & ~zero & ~(f(hi) < 0)):
        raise UncertifiedError("exact Gaussian ε: could not bracket ε(δ)")
    lo, hi = bisect(f, np.zeros_like(hi), hi, increasing=False)
    out = np.where(zero, 0.0, next_up(hi))
    out = np.where(r == 0, 0.0, out)
    out = np.where(np.isposinf(r), np.inf, out)
    return out[()] if out.ndim == 0 else out


def sigma_gaussian(eps, delta, sensitivity=1.0):
    """The smallest noise σ (rounded up) that makes the Gaussian mechanism (ε, δ)-DP, exactly.

    Balle & Wang 2018, Thm 8 / Alg. 1 in spirit (docs/math.md §2.6): δ(ε; r) is increasing in r = Δ/σ,
    so bisect for the largest r with δ(ε; r) ≤ δ and return ``Δ / r`` from the bracket's safe (lower)
    end of r.  Valid for every ε ≥ 0 (unlike Dwork–Roth's ``sqrt(2 log(1.25/δ))Δ/ε``, which needs
    ε < 1).  Broadcasts ``eps``, ``delta`` and ``sensitivity``.
    """
    eps = np.asarray(eps, dtype=float)
    if np.any(np.isnan(eps)) or np.any(eps < 0) or np.any(np.isinf(eps)):
        raise InputError("--epsilon: must be a finite number >= 0")
    delta = _check_delta(delta)
    sens = np.asarray(sensitivity, dtype=float)
    if np.any(~(sens > 0)) or np.any(np.isinf(sens)):
        raise InputError("sensitivity: must be a finite number > 0")
    eps, delta, sens = np.broadcast_arrays(eps, delta, sens)
    ld = np.log(delta)
    z = -special.ndtri(delta)
    with np.errstate(invalid="ignore", divide="ignore"):
        r_lo = np.sqrt(z * z + 2.0 * eps) - z
        r_lo = np.where(z > 0, 2.0 * eps / (np.sqrt(z * z + 2.0 * eps) + z), r_lo) * (1.0 - 1e-9)

    def f(r):
        return log_delta_gaussian(eps, r) - ld

    r_hi = np.maximum(2.0 * r_lo, 1.0)
    for _ in range(80):
        bad = ~(f(r_hi) > 0)
        if not np.any(bad):
            break
        r_hi = np.where(bad, 2.0 * r_hi, r_hi)
    else:
        raise UncertifiedError("Gaussian calibration: could not bracket σ")
    if np.any(f(r_lo) > 0):
        raise UncertifiedError("Gaussian calibration: the tail bound did not bracket σ")
    lo, _ = bisect(f, r_lo, r_hi, increasing=True)
    with np.errstate(divide="ignore", over="ignore"):  # σ past double range: inf (no finite noise)
        out = next_up(sens / lo, 2)
    return out[()] if out.ndim == 0 else out
