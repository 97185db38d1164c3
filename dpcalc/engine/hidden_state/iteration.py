"""Privacy amplification by iteration: the last iterate of noisy SGD with hidden intermediate iterates.

docs/math.md §4.  Three bounds for (projected) noisy SGD, ``W_{t+1} = Π_K(W_t − η∇ℓ(W_t; x_{t+1}) + ηZ)``
with ``Z ~ N(0, σ²I)``, one pass over the data (record ``x_t`` is used at step t only), replace-one
neighbours, L-Lipschitz losses:

* **feldman** — Feldman, Mironov, Talwar & Thakurta 2018 (FOCS; arXiv 1808.06651): the contractive noisy
  iteration bound (:func:`rdp_contractive_iteration`) and the randomly-stopped PNSGD bound
  ``ζ(α) = 4αL² log T/(Tσ²)`` for ``α ≤ α* = (1 + √(1 + 2σ²/L²))/2`` (:func:`rdp_feldman`), converted
  to (ε, δ) through :mod:`dpcalc.engine.conversion.methods` and optimised over α ∈ (1, α*].
* **asoodeh** — Asoodeh, Diaz & Calmon (arXiv 2012.11035): E_γ contraction of the Gaussian kernel,
  ``θ_ε(r) = Q(ε/r − r/2) − e^ε Q(ε/r + r/2)`` (the Gaussian mechanism's exact δ, docs/math.md §2.6)
  and ``δ(ε) = θ_ε(2L/σ) / (T (1 − θ_ε((D + 2ηL)/(ησ))))`` (:func:`delta_asoodeh`).
* **composition** — the baseline that releases every iterate: each record enters one Gaussian step
  with shift 2ηL against noise std ησ, i.e. a Gaussian mechanism with ``r = 2L/σ`` (exact, §2.6).

Every function broadcasts its array arguments and returns arrays of the broadcast shape.
"""

from __future__ import annotations

import warnings

import numpy as np
from scipy import special

from dpcalc.engine._numerics import check_alpha, next_up
from dpcalc.engine._roots import bisect, golden_min
from dpcalc.engine.conversion import methods as conversions
from dpcalc.engine.mechanisms import gaussian_exact as gaussian
from dpcalc.errors import DpcalcWarning, InputError

#: ``--feldman-log`` forms of the log factor of FMTT's randomly-stopped bound (docs/math.md §4.2).
LOG_FORMS = ("seed", "harmonic")
#: Per-order conversions (names of :mod:`dpcalc.engine.conversion.methods` functions ``eps_<m>``/``delta_<m>``).
CONVERSIONS = ("optimal", "asoodeh", "balle", "mironov")

_EPS_MACH = float(np.finfo(float).eps)
_TWO_E_MINUS_ONE = 2.0 * np.expm1(1.0)  # the constant 2(e − 1) of the derivation in docs/math.md §4.2


# -- checks ---------------------------------------------------------------------------------------
def _positive(x, name):
    x = np.asarray(x, dtype=float)
    if np.any(~(x > 0)) or np.any(np.isinf(x)):
        raise InputError(f"--{name}: must be a finite number > 0")
    return x


def _steps(steps):
    t = np.asarray(steps, dtype=float)
    if np.any(~(t >= 1)) or np.any(np.isinf(t)) or np.any(t != np.floor(t)):
        raise InputError("--steps: must be a whole number >= 1")
    return t


def _alpha(alpha):
    return check_alpha(alpha)


def _delta(delta):
    d = np.asarray(delta, dtype=float)
    if np.any(~(d > 0)) or np.any(~(d < 1)):
        raise InputError("--delta: must lie in (0, 1)")
    return d


def _epsilon(eps):
    e = np.asarray(eps, dtype=float)
    if np.any(~(e >= 0)) or np.any(np.isinf(e)):
        raise InputError("--epsilon: must be a finite number >= 0")
    return e


def _out(x):
    x = np.asarray(x)
    return x[()] if x.ndim == 0 else x


# -- Feldman et al. 2018 --------------------------------------------------------------------------
def rdp_contractive_iteration(alpha, distance, sigma, steps):
    """Rényi bound of a contractive noisy iteration started from two points ``distance`` apart.

    Feldman, Mironov, Talwar & Thakurta 2018 (arXiv 1808.06651), Thm 1 as restated in docs/math.md §4.1
    (after Asoodeh's talk "Privacy Analysis of Iterative Algorithms via f-divergences"): for
    ``X_{t+1} = ψ_{t+1}(X_t) + Z_{t+1}`` with contractive ψ_t and ``Z ~ N(0, σ²I)``,
    ``D_α(X_T ‖ X'_T) ≤ α‖x0 − x0'‖²/(2σ²T)``.
    """
    alpha = _alpha(alpha)
    sigma = _positive(sigma, "sigma")
    t = _steps(steps)
    d = np.asarray(distance, dtype=float)
    if np.any(~(d >= 0)) or np.any(np.isinf(d)):
        raise InputError("--distance: must be a finite number >= 0")
    with np.errstate(over="ignore", under="ignore"):
        return _out(next_up(alpha / (2.0 * t) * (d / sigma) ** 2, 2))


def alpha_star_minus_one(sigma, lipschitz):
    """``α* − 1 = (√(1 + 2σ²/L²) − 1)/2 = (σ/L)²/(√(1 + 2σ²/L²) + 1)``, without cancellation, rounded down."""
    sigma = _positive(sigma, "sigma")
    lip = _positive(lipschitz, "lipschitz")
    with np.errstate(over="ignore", under="ignore"):
        s = sigma / lip
        sc = np.minimum(s, 1e100)
        out = sc * sc / (np.sqrt(1.0 + 2.0 * sc * sc) + 1.0)
        # for huge σ/L: α* − 1 = s/√2 − 1/2 + O(1/s), and the O(1/s) term is positive
        out = np.where(s > 1e100, s / np.sqrt(2.0) - 0.5, out)
    return _out(np.nextafter(out, 0.0))


def alpha_star(sigma, lipschitz):
    """The largest order of FMTT's randomly-stopped bound: ``α* = (1 + √(1 + 2σ²/L²))/2``.

    It is the larger root of ``σ² = 2α(α − 1)L²`` (docs/math.md §4.2, §8 item 5); rounded down (a safe
    side: the bound is claimed only for α ≤ α*).  For σ ≪ L it rounds to 1 (see
    :func:`alpha_star_minus_one`).
    """
    return _out(np.nextafter(1.0 + alpha_star_minus_one(sigma, lipschitz), 0.0))


def harmonic_number(steps):
    """``H_T = ψ(T + 1) + γ`` (digamma), rounded up; ``H_1 = 1``."""
    t = _steps(steps)
    return _out(next_up(special.digamma(t + 1.0) + np.euler_gamma, 4))


def feldman_log_factor(steps, log_form="seed"):
    """The log factor ``λ_T`` of ``ζ(α) = 4αL²λ_T/(Tσ²)`` (docs/math.md §4.2, §8 item 7).

    * ``"harmonic"``: ``1 + ln T`` (≥ H_T), the conservative form of the derivation in docs/math.md §4.2.
    * ``"seed"``: the ``ln T`` of Feldman et al.'s bound as stated in Asoodeh's talk "Privacy Analysis of
      Iterative Algorithms via f-divergences", wherever the derivation certifies it: with
      ``e^x − 1 ≤ (e−1)x`` the mixture over the stopping time gives ``2(e−1)αL²H_T/(Tσ²)``, which is
      ≤ ``4αL² ln T/(Tσ²)`` once T ≥ 37.  Below that (T = 1 gives ln T = 0, an unsound 0) the factor is
      ``(e−1)H_T/2`` instead, i.e. ``max(ln T, (e−1)H_T/2)`` throughout; a :class:`DpcalcWarning` says so.
    """
    t = _steps(steps)
    if log_form == "harmonic":
        return _out(next_up(1.0 + np.log(t)))
    if log_form != "seed":
        raise InputError(f"--feldman-log: must be one of {', '.join(LOG_FORMS)}, got {log_form!r}")
    lt = np.log(t)
    derived = next_up(0.25 * _TWO_E_MINUS_ONE * harmonic_number(t), 2)
    if np.any(derived > lt):
        warnings.warn(
            "feldman: for T < 37 the log T form 4αL²·log T/(Tσ²) is not certified (T = 1 gives 0); "
            "using 2(e−1)αL²·H_T/(Tσ²) from its derivation (docs/math.md §4.2) there",
            DpcalcWarning,
            stacklevel=2,
        )
    return _out(next_up(np.maximum(lt, derived)))


def rdp_feldman(alpha, sigma, lipschitz, steps, log_form="seed"):
    """RDP of randomly-stopped projected noisy SGD, ``ζ(α) = 4αL²λ_T/(Tσ²)``, for ``α ≤ α*``.

    Feldman et al. 2018 (arXiv 1808.06651) as stated in Asoodeh's talk "Privacy Analysis of Iterative
    Algorithms via f-divergences" (docs/math.md §4.2): f(·, x) convex, L-Lipschitz and β-smooth,
    η ≤ 2/β, output ``X_τ`` with τ uniform on {1..T}, valid **only if** ``σ² ≥ 2α(α−1)L²``, i.e.
    ``α ≤ α*`` (:func:`alpha_star`).  Orders beyond α* get ``inf`` (the theorem gives no bound there).
    ``λ_T`` is :func:`feldman_log_factor`.  Rounded up.
    """
    alpha = _alpha(alpha)
    sigma = _positive(sigma, "sigma")
    lip = _positive(lipschitz, "lipschitz")
    lam = feldman_log_factor(steps, log_form)
    t = _steps(steps)
    with np.errstate(over="ignore"):
        z = next_up(4.0 * alpha * (lip / sigma) ** 2 * lam / t, 4)
    return _out(np.where(alpha - 1.0 <= alpha_star_minus_one(sigma, lip), z, np.inf))


def _conversion(method, kind):
    if method not in CONVERSIONS:
        raise InputError(f"--conversion: must be one of {', '.join(CONVERSIONS)}, got {method!r}")
    return getattr(conversions, f"{kind}_{method}")


def min_over_orders(fn, log_lo, log_hi, *, points: int = 64, iters: int = 60):
    """Minimise ``fn(alpha)`` over ``α − 1 ∈ [e^log_lo, e^log_hi]`` (elementwise), grid then golden section.

    ``fn`` maps an array of orders (shape ``rows + (k,)`` or ``rows``) to values of the same shape;
    every order it is given yields a valid bound, so the minimum found is valid wherever the search
    lands.  The grid is geometric in ``α − 1`` and includes both ends; the golden-section search
    refines between the best grid point's neighbours.  Returns ``(value, alpha)``.
    """
    log_lo, log_hi = np.broadcast_arrays(np.asarray(log_lo, float), np.asarray(log_hi, float))
    u = np.linspace(0.0, 1.0, points)
    grid = 1.0 + np.exp(log_lo[..., None] + (log_hi - log_lo)[..., None] * u)
    grid[..., -1] = 1.0 + np.exp(log_hi)  # exactly the upper end (e.g. α*)
    with np.errstate(invalid="ignore", over="ignore"):
        vals = np.asarray(fn(grid), dtype=float)
    vals = np.where(np.isnan(vals), np.inf, vals)
    i = np.argmin(vals, axis=-1)
    best = np.take_along_axis(vals, i[..., None], -1)[..., 0]
    best_a = np.take_along_axis(grid, i[..., None], -1)[..., 0]
    lo = np.take_along_axis(grid, np.maximum(i - 1, 0)[..., None], -1)[..., 0]
    hi = np.take_along_axis(grid, np.minimum(i + 1, points - 1)[..., None], -1)[..., 0]

    def f(a):
        with np.errstate(invalid="ignore", over="ignore"):
            v = np.asarray(fn(a), dtype=float)
        return np.where(np.isnan(v), np.inf, v)

    a, v = golden_min(f, lo, hi, iters=iters)
    better = v < best
    return np.where(better, v, best), np.where(better, a, best_a)


def _feldman_search(sigma, lipschitz, steps, log_form, target, kind, conversion):
    conv = _conversion(conversion, kind)
    sigma = _positive(sigma, "sigma")
    lip = _positive(lipschitz, "lipschitz")
    t = _steps(steps)
    lam = feldman_log_factor(t, log_form)
    sigma, lip, t, lam, target = np.broadcast_arrays(sigma, lip, t, lam, target)
    with np.errstate(over="ignore"):
        coef = next_up(4.0 * (lip / sigma) ** 2 * lam / t, 4)  # ζ(α) = coef·α
    am1 = alpha_star_minus_one(sigma, lip)
    a_star = np.nextafter(1.0 + am1, 0.0)  # the sum may round up: keep α <= α*
    # σ ≪ L: α* − 1 below 1e-9 leaves no usable order (ε ≥ log(1/δ)/(α*−1) is astronomically large):
    # report the trivial bound (ε = inf, δ = 1) there
    usable = am1 > 1e-9
    log_hi = np.log(np.where(usable, am1, 1.0))
    log_lo = log_hi + np.log(1e-4)
    a_star = np.where(usable, a_star, 2.0)

    def fn(a):
        shape = np.shape(a)
        c = coef.reshape(coef.shape + (1,) * (len(shape) - coef.ndim))
        tg = target.reshape(target.shape + (1,) * (len(shape) - target.ndim))
        a = np.minimum(a, a_star.reshape(c.shape))  # never beyond α*
        return conv(a, c * a, tg)

    value, a = min_over_orders(fn, log_lo, log_hi)
    value = np.where(usable, value, np.inf if kind == "eps" else 1.0)
    a = np.where(usable, np.minimum(a, a_star), 1.0 + am1)
    return _out(value), _out(a)


def eps_feldman(delta, sigma, lipschitz, steps, *, conversion="asoodeh", log_form="seed"):
    """ε at ``delta`` of randomly-stopped PNSGD from FMTT's RDP bound, optimised over α ∈ (1, α*].

    docs/math.md §4.3 ("α* corollary", with the "(α−1)αζ" of Asoodeh's talk read as (α−1)ζ(α), §8 item 5):
    ``ε = inf_{α∈(1,α*]} conv(α, ζ(α), δ)`` with ``conv`` one of :mod:`dpcalc.engine.conversion.methods`'
    per-order ``eps_<conversion>`` (``asoodeh`` is the closed form of Asoodeh et al., arXiv 2008.06529, as
    presented in the same talk).  Returns ``(ε, α)``.
    """
    return _feldman_search(sigma, lipschitz, steps, log_form, _delta(delta), "eps", conversion)


def delta_feldman(eps, sigma, lipschitz, steps, *, conversion="asoodeh", log_form="seed"):
    """δ at ``eps`` from FMTT's RDP bound, minimised over α ∈ (1, α*] (docs/math.md §4.2–4.3).

    Returns ``(δ, α)``; δ from :mod:`dpcalc.engine.conversion.methods`' per-order ``delta_<conversion>``.
    """
    return _feldman_search(sigma, lipschitz, steps, log_form, _epsilon(eps), "delta", conversion)


# -- Asoodeh, Diaz & Calmon -------------------------------------------------------------------------
def log_theta(eps, r):
    """``log θ_ε(r)``, ``θ_ε(r) = Q(ε/r − r/2) − e^ε Q(ε/r + r/2)``, rounded up.

    Asoodeh, Diaz & Calmon (arXiv 2012.11035), the E_γ contraction coefficient of a Gaussian kernel
    whose means differ by at most rσ (docs/math.md §4.3).  It is the Gaussian mechanism's exact δ(ε)
    (Balle & Wang 2018, Thm 8; docs/math.md §2.6): :func:`dpcalc.engine.mechanisms.gaussian_exact.log_delta_gaussian`.
    """
    e = np.asarray(eps, dtype=float)
    r = np.asarray(r, dtype=float)
    with np.errstate(invalid="ignore", over="ignore", divide="ignore"):
        out = np.asarray(gaussian.log_delta_gaussian(e, r), dtype=float)
        # where Φ(r/2 − ε/r) underflows to 0, δ = 0 (gaussian.py can return nan there)
        first = special.log_ndtr(r / 2.0 - e / np.where(r > 0, r, 1.0))
    out = np.where(np.isnan(out) & np.isneginf(first) & (r > 0), -np.inf, out)
    return _out(out)


def log_one_minus_theta(eps, r):
    """``log(1 − θ_ε(r))`` computed directly (no cancellation), rounded down (docs/math.md §2.6, §4.3)."""
    v = np.asarray(gaussian.log_one_minus_delta_gaussian(eps, r), dtype=float)
    e = np.asarray(eps, dtype=float)
    with np.errstate(invalid="ignore"):
        slack = 64.0 * _EPS_MACH * (1.0 + np.abs(v) + np.abs(e))
        out = np.where(np.isfinite(v), np.minimum(v - slack, 0.0), v)
    return _out(out)


def _asoodeh_radii(sigma, lipschitz, lr, diameter):
    sigma = _positive(sigma, "sigma")
    lip = _positive(lipschitz, "lipschitz")
    lr = _positive(lr, "lr")
    diam = _positive(diameter, "diameter")
    with np.errstate(over="ignore", divide="ignore"):
        r1 = next_up(2.0 * lip / sigma)
        r2 = next_up(diam / (lr * sigma) + 2.0 * lip / sigma, 2)  # (D + 2ηL)/(ησ), no inf/inf
    return r1, r2


def log_delta_asoodeh(eps, sigma, lipschitz, lr, steps, diameter=1.0):
    """``log δ(ε)`` of randomly-stopped projected noisy SGD, unclipped (may exceed 0 where vacuous).

    Asoodeh, Diaz & Calmon (arXiv 2012.11035), PNSGD corollary as presented in Asoodeh's talk "Privacy
    Analysis of Iterative Algorithms via f-divergences", with the talk's "1" read as diam(K)
    (docs/math.md §4.3, §8 item 6): K compact convex, ℓ(·, x) L-Lipschitz,
    ``log δ = log θ_ε(2L/σ) − log T − log(1 − θ_ε((D + 2ηL)/(ησ)))``.  Rounded up.
    """
    e = _epsilon(eps)
    t = _steps(steps)
    r1, r2 = _asoodeh_radii(sigma, lipschitz, lr, diameter)
    with np.errstate(invalid="ignore"):
        out = log_theta(e, r1) - np.log(t) - log_one_minus_theta(e, r2)
    # 0/0 (θ_ε(r1) = 0 and 1 − θ_ε(r2) = 0, e.g. r2 = inf): report the vacuous bound
    out = np.where(np.isnan(out), np.inf, out)
    return _out(next_up(out, 4))


def delta_asoodeh(eps, sigma, lipschitz, lr, steps, diameter=1.0):
    """δ(ε) of randomly-stopped PNSGD (:func:`log_delta_asoodeh`), rounded up and clipped to 1."""
    ld = np.asarray(log_delta_asoodeh(eps, sigma, lipschitz, lr, steps, diameter))
    with np.errstate(over="ignore"):
        return _out(np.minimum(next_up(np.exp(np.minimum(ld, 1.0))), 1.0))


def eps_asoodeh(delta, sigma, lipschitz, lr, steps, diameter=1.0):
    """The smallest ε (rounded up) with Asoodeh et al.'s PNSGD ``δ(ε) ≤ delta`` (docs/math.md §4.3).

    ``log δ(ε)`` decreases in ε; bisection on it in log space.  ε = 0 where ``δ(0) ≤ delta``;
    ``inf`` where no finite ε is certified (the bracket cannot be found below 1e300).
    """
    d = _delta(delta)
    e0 = np.zeros(
        np.broadcast_shapes(d.shape, *(np.shape(x) for x in (sigma, lipschitz, lr, steps, diameter)))
    )
    ld = np.log(d) + e0

    def f(e):
        return np.asarray(log_delta_asoodeh(e, sigma, lipschitz, lr, steps, diameter), float) - ld

    zero = f(e0) <= 0
    hi = np.ones_like(e0)
    for _ in range(995):  # 2**995 < 1e300
        bad = ~(f(hi) < 0)
        if not np.any(bad):
            break
        hi = np.where(bad, hi * 2.0, hi)
    unbracketed = ~(f(hi) < 0)
    hi = np.where(unbracketed, 1.0, hi)
    _, up = bisect(f, np.zeros_like(hi), hi, increasing=False)
    out = np.where(zero, 0.0, up)  # the bracket's upper end: f(up) < 0 was evaluated there
    return _out(np.where(unbracketed & ~zero, np.inf, out))


# -- composition baseline (every iterate released) -------------------------------------------------
def composition_radius(sigma, lipschitz):
    """``r = 2L/σ``: with every iterate released, a record enters one Gaussian step (shift 2ηL, std ησ)."""
    sigma = _positive(sigma, "sigma")
    lip = _positive(lipschitz, "lipschitz")
    with np.errstate(over="ignore"):
        return _out(next_up(2.0 * lip / sigma))


def rdp_composition(alpha, sigma, lipschitz):
    """RDP ``2αL²/σ²`` of one-pass noisy SGD with every iterate released (Mironov 2017 Table II; §4.1)."""
    alpha = _alpha(alpha)
    r = composition_radius(sigma, lipschitz)
    with np.errstate(over="ignore"):
        return _out(next_up(alpha * r * r / 2.0))


def delta_composition(eps, sigma, lipschitz):
    """Exact δ(ε) of one-pass noisy SGD with every iterate released: Gaussian, r = 2L/σ (§2.6)."""
    ld = log_theta(_epsilon(eps), composition_radius(sigma, lipschitz))
    with np.errstate(over="ignore"):
        return _out(np.minimum(next_up(np.exp(np.minimum(ld, 0.0))), 1.0))


def eps_composition(delta, sigma, lipschitz):
    """Exact ε(δ) (rounded up) of one-pass noisy SGD with every iterate released (§2.6)."""
    return gaussian.eps_gaussian(_delta(delta), composition_radius(sigma, lipschitz))
