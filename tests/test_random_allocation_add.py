"""The add direction of random allocation by the Laplace transform (docs/math.md §3.8,
dpcalc.engine.mechanisms.random_allocation.rdp_add): never below independent high-precision values, and close."""

from __future__ import annotations

import math

import mpmath as mp
import numpy as np
import pytest

from dpcalc.engine.mechanisms.random_allocation.rdp_add import (
    log_laplace_lognormal_upper,
    log_moment_add_upper,
)


def _phi(mu, u):
    """E[exp(−u e^{μz − μ²/2})], z ~ N(0, 1), by 40-digit quadrature split where the integrand turns."""
    with mp.workdps(40):
        c = mp.mpf(mu) ** 2 / 2

        def f(z):
            return mp.exp(-z * z / 2 - u * mp.exp(mu * z - c)) / mp.sqrt(2 * mp.pi)

        cuts = [float((mp.log(mp.mpf(x) / u) + c) / mu) for x in (1e-3, 0.1, 1, 10)]
        return mp.quad(f, sorted({-60.0, 40.0, *(max(-60.0, min(40.0, v)) for v in cuts)}))


@pytest.mark.parametrize("sigma", [0.5, 1.1, 4.0])
def test_laplace_transform_bound(sigma):
    mu = 1.0 / sigma
    u = np.array([1e-4, 0.01, 0.3, 1.0, 7.0, 60.0])
    up = log_laplace_lognormal_upper(mu, u)
    for ui, lv in zip(u, up):
        ref = float(mp.log(_phi(mu, float(ui))))
        assert lv >= ref
        assert lv <= ref + 1e-5 * max(1.0, abs(ref))
    assert log_laplace_lognormal_upper(mu, np.array([0.0]))[0] == 0.0


def _exact_log_moment(sigma, t, beta):
    """log E[W^{−β}] = log ∫ s^{β−1} φ(s/t)^t ds − log Γ(β), the inner φ by 200-point Gauss–Hermite (smooth
    integrand) and the outer integral by adaptive quadrature: an independent reference, not a bound."""
    from scipy import integrate, special

    mu = 1.0 / sigma
    x, w = np.polynomial.hermite_e.hermegauss(200)
    w = w / math.sqrt(2 * math.pi)

    def f(s):
        return s ** (beta - 1) * float(np.sum(w * np.exp(-(s / t) * np.exp(mu * x - mu * mu / 2)))) ** t

    v, _ = integrate.quad(f, 0, np.inf, limit=800)
    return math.log(v) - special.gammaln(beta)


@pytest.mark.parametrize("sigma,t", [(1.1, 234), (0.8, 50), (2.0, 1000), (0.6, 8)])
def test_moment_bound_above_and_close_to_the_exact_value(sigma, t):
    alphas = np.array([2.0, 3.0, 5.0, 8.0, 12.0])
    up = log_moment_add_upper(sigma, t, alphas)
    for a, u in zip(alphas, up):
        ref = _exact_log_moment(sigma, t, a - 1.0)
        assert u >= ref
        assert u / (a - 1.0) <= ref / (a - 1.0) * 1.3 + 2e-3  # the divergence within 30 % (+ 2e-3)


def test_orders_outside_are_infinite():
    out = log_moment_add_upper(1.0, 10, np.array([1.0, np.inf, 0.5]))
    assert np.all(np.isinf(out))


@pytest.mark.parametrize("sigma,t", [(1.1, 234), (0.8, 50)])
def test_tight_at_typical_dp_sgd_settings(sigma, t):
    """Where DP-SGD runs (σ about 1, an epoch of tens to hundreds of steps) the bound is within 6 % of the
    exact log-moment at the orders that decide ε (α = 4..12; 2 % from α = 8)."""
    alphas = np.array([4.0, 6.0, 8.0, 12.0])
    up = log_moment_add_upper(sigma, t, alphas)
    for a, u in zip(alphas, up):
        assert u <= _exact_log_moment(sigma, t, a - 1.0) * (1.06 if a < 8 else 1.02)
