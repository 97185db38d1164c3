"""Privacy curves of the mechanisms a MECHANISM spec names (formulas.md §1.4, §2.5, §3.2, §3.3).

* :func:`rdp_curve` — the Rényi-DP curve of ``count`` copies of one mechanism (Mironov 2017, Table II and
  Prop. 1), on a grid of orders; :func:`total_rdp` sums the curves of several mechanisms (§2.4).
* :func:`per_release_dp` — the (ε, δ) of one release where a mechanism has a natural one (pure-DP
  mechanisms and ``dp`` specs), for basic/advanced/optimal composition; ``None`` plus the reason elsewhere.
* :func:`gaussian_r2` — ``Σ count·Δ²/σ²`` of an all-Gaussian composition (one Gaussian with
  ``r = sqrt(r2)``, formulas.md §2.6), ``None`` if some mechanism is not a plain Gaussian.

Values are upper bounds: the closed forms are evaluated in log space and raised by a few ulps of their
own magnitude, so floating-point rounding never lowers a curve.
"""

from __future__ import annotations

import numpy as np

from dpcalc.errors import InputError

_EPS = float(np.finfo(float).eps)


def _alphas(alphas) -> np.ndarray:
    a = np.atleast_1d(np.asarray(alphas, dtype=float))
    if a.ndim != 1 or np.any(np.isnan(a)) or np.any(a < 1):
        raise InputError("alphas: Rényi orders must be >= 1")
    return a


def _up(value, scale):
    """``value`` raised by 16 ulps of ``scale`` (safe-side rounding of a closed form)."""
    return value + 16.0 * _EPS * np.abs(scale)


def rdp_gaussian(sigma, sensitivity, alphas):
    """``ζ(α) = αΔ²/(2σ²)`` (Mironov 2017, Table II; formulas.md §2.5 — the square on Δ, unlike seed 001)."""
    a = _alphas(alphas)
    with np.errstate(over="ignore"):
        z = a * (sensitivity / sigma) ** 2 / 2.0
    return _up(z, z)


def rdp_laplace(scale, sensitivity, alphas):
    """Laplace mechanism with λ = b/Δ (Mironov 2017, Table II; formulas.md §2.5).

    α > 1: ``log((α/(2α−1))e^{(α−1)/λ} + ((α−1)/(2α−1))e^{−α/λ})/(α−1)`` as a 2-term logaddexp;
    α = 1: ``1/λ + e^{−1/λ} − 1``; α = ∞: ``1/λ``.  Always capped at ``1/λ`` (the pure-DP level).
    """
    a = _alphas(alphas)
    inv = sensitivity / scale  # 1/λ
    mid = (a > 1) & np.isfinite(a)
    am = np.where(mid, a, 2.0)
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        t1 = np.log(am) - np.log(2 * am - 1) + (am - 1) * inv
        t2 = np.log(am - 1) - np.log(2 * am - 1) - am * inv
        num = np.logaddexp(t1, t2)
        z = _up(num, 1.0 + np.abs(t1)) / (am - 1)
    kl = inv + np.expm1(-inv)
    out = np.where(mid, z, np.where(a == 1, _up(kl, inv), inv))
    return np.minimum(out, inv)


def rdp_randomized_response(p, alphas, eps=None):
    """Binary randomized response, truthful with probability p > 1/2 (formulas.md §2.5).

    α > 1: ``log(p^α(1−p)^{1−α} + (1−p)^α p^{1−α})/(α−1)`` (logaddexp); α = 1: ``(2p−1)·log(p/(1−p))``;
    α = ∞: ``log(p/(1−p))``.  Capped at ``log(p/(1−p))`` and floored at 0.  Give ``eps`` (the log-odds)
    too for accuracy when p is close to 1/2.
    """
    a = _alphas(alphas)
    if eps is None:
        lp, lq = np.log(p), np.log1p(-p)
        eps = lp - lq
    else:  # from the log-odds ε = log(p/(1−p)): accurate for tiny ε, where p rounds to 1/2
        lp, lq = -np.logaddexp(0.0, -eps), -np.logaddexp(0.0, eps)
    mid = (a > 1) & np.isfinite(a)
    am = np.where(mid, a, 2.0)
    with np.errstate(over="ignore", invalid="ignore"):
        t1 = am * lp + (1 - am) * lq
        t2 = am * lq + (1 - am) * lp
        num = np.logaddexp(t1, t2)
        z = _up(num, 1.0 + np.abs(t1) + np.abs(t2)) / (am - 1)
    kl = (2 * p - 1) * eps
    out = np.where(mid, z, np.where(a == 1, _up(kl, kl), eps))
    return np.maximum(np.minimum(out, _up(eps, eps)), 0.0)


def rdp_pure_dp(eps, alphas):
    """The tight RDP curve of an ε-DP mechanism: that of randomized response with p = e^ε/(1+e^ε).

    formulas.md §1.4: ``ζ = log((e^{αε} + e^{(1−α)ε})/(1+e^ε))/(α−1)``, which is below both ``ε`` and
    ``αε²/2`` (Bun–Steinke).  Why it holds for every ε-DP mechanism: the privacy loss L lies in [−ε, ε]
    and satisfies ``E_P[e^{−L}] = 1``; ``E_P[e^{(α−1)L}]`` is a convex function of ``e^{−L}``, so it is
    largest when L takes only the values ±ε — which is randomized response.
    """
    a = _alphas(alphas)
    if eps == 0:
        return np.zeros_like(a)
    p = 1.0 / (1.0 + np.exp(-eps))
    return rdp_randomized_response(p, a, eps=eps)


def rdp_zcdp(rho, alphas):
    """ρ-zCDP is ``(α, ρα)``-RDP for every α > 1 (Bun–Steinke 2016, Def. 1.1); ∞ at α = ∞ unless ρ = 0."""
    a = _alphas(alphas)
    with np.errstate(invalid="ignore"):
        z = np.where(np.isinf(a), np.inf if rho > 0 else 0.0, rho * a)
    return _up(z, z)


def rdp_curve(spec, alphas) -> np.ndarray:
    """The total RDP curve of ``spec.count`` copies of one mechanism, shape ``(len(alphas),)``.

    ``spec`` is a :class:`dpcalc.spec.MechanismSpec`.  Composition adds curves (Mironov 2017, Prop. 1;
    formulas.md §2.4).  ``inf`` where the divergence is unbounded.  ``dp`` specs with δ > 0 have no
    RDP curve (formulas.md §1.4): :class:`~dpcalc.errors.InputError`.
    Subsampled Gaussian: :mod:`dpcalc.engine.dpsgd.sgm` (Poisson: add/remove neighbours, formulas.md §3.2;
    fixed-size sampling without replacement: replace-one neighbours, §3.3).
    """
    a = _alphas(alphas)
    p = spec.params
    kind = spec.kind
    if kind == "gaussian":
        z = rdp_gaussian(p["sigma"], p["sensitivity"], a)
    elif kind == "laplace":
        z = rdp_laplace(p["scale"], p["sensitivity"], a)
    elif kind == "randomized-response":
        z = rdp_randomized_response(p["p"], a, eps=p["epsilon"])
    elif kind == "zcdp":
        z = rdp_zcdp(p["rho"], a)
    elif kind == "dp":
        if p["delta"] > 0:
            raise InputError(
                f"mechanism {spec.text!r}: an (ε, δ)-DP mechanism with δ > 0 has no Rényi-DP curve"
            )
        z = rdp_pure_dp(p["epsilon"], a)
    elif kind == "subsampled-gaussian":
        from dpcalc.engine.dpsgd import sgm

        fn = sgm.rdp_poisson if p["sampling"] == "poisson" else sgm.rdp_without_replacement
        z = np.asarray(fn(p["q"], p["sigma"], a), dtype=float).reshape(a.shape)
    else:  # pragma: no cover - the parser knows every kind
        raise InputError(f"mechanism {spec.text!r}: unknown kind {kind!r}")
    with np.errstate(invalid="ignore", over="ignore"):
        total = np.where(z == 0, 0.0, z * spec.count)
    return _up(total, total) if spec.count > 1 else total


def total_rdp(specs, alphas) -> np.ndarray:
    """``Σ_j rdp_curve(spec_j, alphas)`` (formulas.md §2.4)."""
    a = _alphas(alphas)
    total = np.zeros_like(a)
    for s in specs:  # a loop over mechanisms, not over rows
        total = total + rdp_curve(s, a)
    return _up(total, total) if len(specs) > 1 else total


def per_release_dp(spec):
    """``((ε, δ), None)`` for one release of a mechanism with a natural (ε, δ), else ``(None, reason)``.

    Laplace: ``(Δ/b, 0)``; randomized response: ``(log(p/(1−p)), 0)``; ``dp``: its own ``(ε, δ)``.
    Gaussian, subsampled Gaussian and zCDP mechanisms have no pure ε, and any (ε, δ) for them would be a
    choice of δ split; we do not make that choice silently (use ``rdp`` or ``exact``, or give ``dp:`` specs).
    """
    p = spec.params
    if spec.kind == "laplace":
        eps = p["sensitivity"] / p["scale"]
        if not np.isfinite(eps):
            return None, "sensitivity/scale overflows: no finite per-release epsilon"
        return (eps, 0.0), None
    if spec.kind == "randomized-response":
        return (p["epsilon"], 0.0), None
    if spec.kind == "dp":
        return (p["epsilon"], p["delta"]), None
    return None, f"{spec.kind} has no per-release (epsilon, delta); give it as a dp: spec"


def gaussian_r2(specs):
    """``Σ count·(Δ/σ)²`` if every spec is a plain ``gaussian`` (one Gaussian with r = sqrt of it), else ``None``."""
    if not all(s.kind == "gaussian" for s in specs):
        return None
    r2 = 0.0
    for s in specs:
        r2 += s.count * (s.params["sensitivity"] / s.params["sigma"]) ** 2
    return r2 * (1.0 + 8.0 * _EPS * len(specs))
