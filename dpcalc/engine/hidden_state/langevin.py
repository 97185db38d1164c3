"""Privacy dynamics of noisy gradient descent with hidden intermediate models (Langevin).

docs/math.md §5: Chourasia, Ye & Shokri, "Differential Privacy Dynamics of Langevin Diffusion and Noisy
Gradient Descent" (NeurIPS 2021; arXiv 2102.05855), as presented in the authors' talk.  The algorithm is

    θ_{k+1} = Π_C(θ_k − (η/n)·g(θ_k; D) + sqrt(2ησ²)·N(0, I_d)),   g(θ; D) = Σ_i ∇ℓ(θ; x_i),

with only θ_K released, replace-one neighbours (n public) and gradient sensitivity
``S_g = max_{D~D'} sup_θ ‖g(θ; D) − g(θ; D')‖`` (``S_g = 2L`` for an L-Lipschitz loss).

Every bound here is linear in the Rényi order, ``ζ(α) = α·c``; the ``coef_*`` functions return c and the
``rdp_*`` functions ``α·c``.  Arguments broadcast; results have the broadcast shape.
"""

from __future__ import annotations

import numpy as np
from scipy import special

from dpcalc.engine._numerics import check_alpha, next_up, require
from dpcalc.engine._roots import bisect
from dpcalc.engine.hidden_state.iteration import CONVERSIONS, _conversion, min_over_orders
from dpcalc.engine.mechanisms import gaussian_exact as gaussian
from dpcalc.errors import InputError

#: The root u* > 0 of ``u = 2(1 − e^{−u})``, i.e. ``2 + W₀(−2e^{−2})``: the dynamics bound equals the
#: composition baseline at ``ληK/2 = u*`` (docs/math.md §5: K ≈ 159.36 for λ = 1, η = 0.02).
CROSSING_U = float(2.0 + special.lambertw(-2.0 * np.exp(-2.0), 0).real)


def _out(x):
    x = np.asarray(x)
    return x[()] if x.ndim == 0 else x


def _positive(x, option):
    x = np.asarray(x, dtype=float)
    if np.any(~(x > 0)) or np.any(np.isinf(x)):
        raise InputError(f"{option}: must be a finite number > 0")
    return x


def check_conditions(lr, strong_convexity, smoothness, dataset_size):
    """Check the theorem's conditions (docs/math.md §5); raise :class:`InputError` naming the one violated.

    ``η ≤ 1/β`` (step size), ``0 < λ ≤ β`` (a λ-strongly convex, β-smooth loss), ``n ≥ 1`` (a whole number).
    """
    lr = _positive(lr, "--lr")
    lam = _positive(strong_convexity, "--strong-convexity")
    beta = _positive(smoothness, "--smoothness")
    n = np.asarray(dataset_size, dtype=float)
    if np.any(~(n >= 1)) or np.any(np.isinf(n)) or np.any(n != np.floor(n)):
        raise InputError("--dataset-size: the theorem needs a whole number n >= 1")
    lam, beta, lr = np.broadcast_arrays(lam, beta, lr)
    if np.any(lam > beta):
        i = np.argmax(lam > beta)
        raise InputError(
            f"--strong-convexity: the theorem needs 0 < λ <= β (a λ-strongly convex loss is at least "
            f"λ-smooth), got λ = {float(lam.flat[i])!r} > β = {float(beta.flat[i])!r}"
        )
    if np.any(lr * beta > 1.0):
        i = np.argmax(lr * beta > 1.0)
        raise InputError(
            f"--lr: the theorem needs the step size η <= 1/β, got η = {float(lr.flat[i])!r} > 1/β = {float(1.0 / beta.flat[i])!r}"
        )


def _base(sigma, sensitivity, dataset_size):
    """``S_g²/(σ²n²)``, rounded up."""
    sigma = _positive(sigma, "--sigma")
    sens = np.asarray(sensitivity, dtype=float)
    if np.any(~(sens >= 0)) or np.any(np.isinf(sens)):
        raise InputError("--sensitivity: must be a finite number >= 0")
    n = np.asarray(dataset_size, dtype=float)
    with np.errstate(over="ignore", under="ignore"):
        return next_up((sens / (sigma * n)) ** 2, 2)


def _steps(steps):
    k = np.asarray(steps, dtype=float)
    if np.any(~(k >= 0)) or np.any(np.isinf(k)) or np.any(k != np.floor(k)):
        raise InputError("--steps: must be a whole number >= 0")
    return k


def _alpha(alpha):
    return check_alpha(alpha)


def coef_dynamics(sigma, sensitivity, lr, strong_convexity, dataset_size, steps):
    """c of the dynamics bound ``ε(α) = α·S_g²/(λσ²n²)·(1 − e^{−ληK/2})`` (an upper bound, rounded up).

    Chourasia, Ye & Shokri 2021, main theorem (arXiv 2102.05855; docs/math.md §5), valid at every α > 1 for a
    λ-strongly convex, β-smooth loss on a closed convex set with η ≤ 1/β (see :func:`check_conditions`)
    and a data-independent start.  ``1 − e^{−x}`` is ``−expm1(−x)``.
    """
    lam = _positive(strong_convexity, "--strong-convexity")
    lr = _positive(lr, "--lr")
    k = _steps(steps)
    with np.errstate(over="ignore", under="ignore", invalid="ignore", divide="ignore"):
        # where x = ληK/2 underflows, (1 − e^{−x})/λ <= ηK/2 (its x → 0 limit) takes its place; 0·∞ (an
        # infinite base) is ∞: neither may round to 0 (a NaN there was printed as ε = 0)
        x = lam * lr * k / 2.0
        base = _base(sigma, sensitivity, dataset_size)
        c = np.where(x > 1e-250, base / lam * -np.expm1(-x), base * (lr * k / 2.0))
        c = np.where(k == 0, 0.0, np.where(np.isnan(c), np.inf, c))
    return _out(next_up(c, 4))


def coef_lower(sigma, sensitivity, lr, dataset_size, steps):
    """c of Chourasia et al.'s lower bound ``α·S_g²/(4σ²n²)·(1 − e^{−ηK})`` (rounded down).

    A **lower bound** on the true Rényi privacy loss of noisy GD on ``ℓ(θ; x) = ‖θ − x‖²/2`` (λ = β = 1):
    neighbouring datasets exist whose loss is at least this (arXiv 2102.05855; docs/math.md §5, §8 item 9).
    It is never a guarantee; it shows how far any upper bound is from the truth.
    """
    lr = _positive(lr, "--lr")
    k = _steps(steps)
    with np.errstate(over="ignore", under="ignore", invalid="ignore"):
        c = _base(sigma, sensitivity, dataset_size) / 4.0 * -np.expm1(-lr * k)
        c = np.where(np.isnan(c), 0.0, c)  # 0·∞ (K = 0 with an infinite base): 0 is always a lower bound
    return _out(np.nextafter(c * (1.0 - 8 * np.finfo(float).eps), 0.0))


def coef_exact_squared(sigma, sensitivity, lr, dataset_size, steps):
    """c of the exact Rényi divergence for ``ℓ = ‖θ−x‖²/2`` on ℝ^d from a fixed θ0 (docs/math.md §5).

    ``α S_g²(2−η)(1−c)/(4σ²n²(1+c))`` with ``c = (1−η)^K`` (η ≤ 1); a plain evaluation, for comparison.
    """
    lr = _positive(lr, "--lr")
    k = _steps(steps)
    with np.errstate(over="ignore", under="ignore", divide="ignore"):
        logc = k * np.log1p(-np.minimum(lr, 1.0))
        frac = -np.expm1(logc) / (1.0 + np.exp(logc))
        return _out(_base(sigma, sensitivity, dataset_size) * (2.0 - lr) / 4.0 * frac)


def coef_composition(sigma, sensitivity, lr, dataset_size, steps):
    """c of the composition baseline ``K·α·η·S_g²/(4σ²n²)`` (every iterate released; rounded up).

    Each step is a Gaussian mechanism with sensitivity ηS_g/n and noise std √(2η)σ (Mironov 2017,
    Table II; RDP composition, Prop. 1); the projection is post-processing (docs/math.md §5).
    """
    lr = _positive(lr, "--lr")
    k = _steps(steps)
    with np.errstate(over="ignore", under="ignore", invalid="ignore"):
        c = k * lr * _base(sigma, sensitivity, dataset_size) / 4.0
        c = np.where(k == 0, 0.0, np.where(np.isnan(c), np.inf, c))
    return _out(next_up(c, 4))


def crossing_steps(lr, strong_convexity):
    """The K at which the dynamics bound equals the composition baseline: ``K* = 2u*/(λη)``.

    Both bounds are linear in α, so K* does not depend on α, σ, S_g or n: with u = ληK/2 the equality
    ``(1 − e^{−u})/λ = Kη/4`` reads ``u = 2(1 − e^{−u})``, whose positive root is :data:`CROSSING_U`
    (≈ 1.5936).  Composition is the smaller bound for K < K*, the dynamics bound for K > K*
    (docs/math.md §5: K* ≈ 159.36 for λ = 1, η = 0.02).
    """
    lam = _positive(strong_convexity, "--strong-convexity")
    lr = _positive(lr, "--lr")
    with np.errstate(over="ignore", divide="ignore"):  # λη below double range: K* = inf
        return _out(2.0 * CROSSING_U / (lam * lr))


def rdp(alpha, coef):
    """``ζ(α) = α·c`` (rounded up)."""
    with np.errstate(over="ignore"):
        return _out(next_up(_alpha(alpha) * np.asarray(coef, dtype=float)))


def eps_linear_curve(delta, coef, *, conversion="asoodeh"):
    """ε at ``delta`` of a mechanism that is ``(α, α·c)``-RDP for every α > 1 (docs/math.md §1, §1.6).

    The per-order conversion ``eps_<conversion>`` of :mod:`dpcalc.engine.conversion.methods`, minimised over
    continuous α (a geometric grid around Mironov's optimum ``1 + √(log(1/δ)/c)``, then golden
    section).  ``c = 0`` gives 0.  Returns ``(ε, α)``.
    """
    d = require(delta, lambda x: (x > 0) & (x < 1), "--delta: must lie in (0, 1)", show=None)
    c = np.asarray(coef, dtype=float)
    d, c = np.broadcast_arrays(d, c)
    conv = _conversion(conversion, "eps")
    ok = (c > 0) & np.isfinite(c)
    cs = np.where(ok, c, 1.0)
    # Mironov's α* − 1 = √(log(1/δ)/c) for a linear curve, in log space
    log_opt = 0.5 * (np.log(-np.log(d)) - np.log(cs))
    log_lo, log_hi = _order_range(log_opt)

    def fn(a):
        extra = (1,) * (np.ndim(a) - cs.ndim)
        return conv(a, cs.reshape(cs.shape + extra) * a, d.reshape(d.shape + extra))

    value, a = min_over_orders(fn, log_lo, log_hi, points=96)
    value = np.where(ok, value, np.where(c > 0, np.inf, 0.0))
    a = np.where(ok, a, np.nan)
    return _out(value), _out(a)


def _order_range(log_opt):
    """``log(α − 1)`` bounds of the order search around ``log_opt``, kept where orders are representable."""
    lo = np.clip(log_opt - np.log(1e4), np.log(1e-9), np.log(1e12))
    hi = np.clip(log_opt + np.log(100.0), np.log(1e-7), np.log(1e14))
    return lo, hi


def delta_linear_curve(eps, coef, *, conversion="asoodeh"):
    """δ at ``eps`` of a mechanism that is ``(α, α·c)``-RDP for every α > 1 (docs/math.md §1, §1.6).

    The per-order ``delta_<conversion>`` of :mod:`dpcalc.engine.conversion.methods`, minimised over continuous
    α around the Mironov optimum ``1 + ε/(2c)`` of ``(α−1)(αc − ε)``.  ``c = 0`` gives 0.  Returns ``(δ, α)``.
    """
    e = require(eps, lambda x: (x >= 0) & ~np.isinf(x), "--epsilon: must be a finite number >= 0", show=None)
    c = np.asarray(coef, dtype=float)
    e, c = np.broadcast_arrays(e, c)
    conv = _conversion(conversion, "delta")
    ok = (c > 0) & np.isfinite(c)
    cs = np.where(ok, c, 1.0)
    with np.errstate(over="ignore"):
        # Mironov's optimum α − 1 = (ε − c)/(2c) of (α−1)(αc − ε), kept away from 0
        a_opt = np.maximum(e / (2.0 * cs) - 0.5, 0.0) + 1e-3 / np.sqrt(cs) + 1e-6
    log_lo, log_hi = _order_range(np.log(a_opt))

    def fn(a):
        extra = (1,) * (np.ndim(a) - cs.ndim)
        return conv(a, cs.reshape(cs.shape + extra) * a, e.reshape(e.shape + extra))

    value, a = min_over_orders(fn, log_lo, log_hi, points=96)
    value = np.where(ok, value, np.where(c > 0, 1.0, 0.0))
    a = np.where(ok, a, np.nan)
    return _out(value), _out(a)


def eps_gaussian_coef(delta, coef):
    """Exact ε(δ) (rounded up) of a Gaussian mechanism with Rényi curve α·c, i.e. ``r = √(2c)`` (§2.6).

    K Gaussian steps compose exactly to one Gaussian (their privacy-loss distributions are Gaussian),
    so this is the tight ε of the composition baseline (Balle & Wang 2018, Thm 8).
    """
    c = np.asarray(coef, dtype=float)
    return gaussian.eps_gaussian(delta, next_up(np.sqrt(c)) * next_up(np.sqrt(2.0)))


def eps_gaussian_coef_lower(delta, coef):
    """A lower bound (rounded down) on ε(δ) of a Gaussian pair with Rényi curve at least α·c (§2.6).

    For ``ℓ = ‖θ−x‖²/2`` on ℝ^d from a fixed θ0, θ_K and θ'_K are Gaussians with one covariance, whose
    Rényi curve is ``α μ²/2``; Chourasia et al.'s lower bound gives ``μ ≥ √(2c)``, and the exact δ(ε) of
    a Gaussian pair increases in μ (Balle & Wang 2018, Thm 8).  So this ε is a lower bound on that
    pair's ε(δ): never a guarantee.
    """
    d = require(delta, lambda x: (x > 0) & (x < 1), "--delta: must lie in (0, 1)", show=None)
    c = np.asarray(coef, dtype=float)
    d, c = np.broadcast_arrays(d, c)
    r = np.nextafter(np.sqrt(2.0) * np.sqrt(c) * (1.0 - 4 * np.finfo(float).eps), 0.0)
    rs = np.where(r > 0, r, 1.0)
    ld = np.log(d)
    zero = gaussian.log_delta_gaussian(0.0, rs) <= ld
    with np.errstate(over="ignore", invalid="ignore"):
        hi = np.maximum(rs * rs / 2.0 - rs * special.ndtri(d), 1e-300) * (1.0 + 1e-9) + 1e-300

    def f(e):
        return gaussian.log_delta_gaussian(e, rs) - ld

    lo, _ = bisect(f, np.zeros_like(hi), hi, increasing=False)
    # log_delta_gaussian carries evaluation noise of ~1e-13 in log δ (a few 1e-15 in ε): step down past it
    out = np.maximum(lo * (1.0 - 1e-12), 0.0)
    out = np.where(zero | (r == 0), 0.0, out)
    out = np.where(np.isposinf(r), np.inf, out)
    return _out(out)


__all__ = [
    "CONVERSIONS",
    "CROSSING_U",
    "check_conditions",
    "coef_composition",
    "coef_dynamics",
    "coef_exact_squared",
    "coef_lower",
    "crossing_steps",
    "eps_gaussian_coef",
    "eps_gaussian_coef_lower",
    "delta_linear_curve",
    "eps_linear_curve",
    "rdp",
]
