"""The privacy profile of a Rényi curve through its optimal trade-off curve (engine/conversion/rdp_profile.py):
sound against exact Gaussian profiles (mpmath), a brute-force grid of the conversion's own curve and DP-SGD's
certified PLD lower ends; never above the per-order conversion; strictly below it where the two differ."""

from __future__ import annotations

import mpmath
import numpy as np
import pytest
from scipy import special

from dpcalc.engine.conversion import rdp_profile as rp
from dpcalc.engine.conversion import rdp_tradeoff as rt
from dpcalc.engine.conversion.methods import delta_from_curve
from dpcalc.engine.dpsgd.pld_accounting import sgd_delta_pld
from dpcalc.engine.mechanisms import sgm
from dpcalc.engine.orders import DEFAULT_ORDERS

mpmath.mp.dps = 40
EPS = np.array([0.0, 0.3, 1.0, 3.0])
ORDERS = np.asarray(DEFAULT_ORDERS, float)


def _gauss_delta(eps, mu):
    """δ(ε) of the Gaussian mechanism with μ = Δ/σ, 40 digits: Φ(−ε/μ + μ/2) − e^ε Φ(−ε/μ − μ/2)."""
    e, m = mpmath.mpf(float(eps)), mpmath.mpf(float(mu))
    return mpmath.ncdf(-e / m + m / 2) - mpmath.exp(e) * mpmath.ncdf(-e / m - m / 2)


def _mp_feasible(orders, curve, a, t):
    """Whether Bern(t) vs Bern(a) meets every order's Rényi bound in both directions (40 digits)."""
    a, t = mpmath.mpf(float(a)), mpmath.mpf(float(t))
    for lam, rho in zip(orders, curve):
        lam = mpmath.mpf(float(lam))
        for p, q in ((t, a), (a, t)):
            s = p**lam * q ** (1 - lam) + (1 - p) ** lam * (1 - q) ** (1 - lam)
            if mpmath.log(s) / (lam - 1) > mpmath.mpf(float(rho)):
                return False
    return True


@pytest.mark.parametrize("mu", [0.3, 1.0, 2.0])
def test_bracket_holds_a_feasible_point_just_below_the_curve(mu):
    orders = np.array([1.5, 3.0, 8.0, 32.0])
    curve = orders * mu**2 / 2
    fpr = np.array([1e-9, 1e-4, 0.02, 0.3, 0.8])
    low, up = rt.tpr_bracket_from_rdp(orders, curve, fpr)
    assert np.all(low <= up) and np.all(up - low <= 1e-8 * np.maximum(up, 1e-300) + 1e-15)
    assert np.array_equal(up, rt.tpr_from_rdp(orders, curve, fpr))
    for a, t in zip(fpr, low):
        assert _mp_feasible(orders, curve, a, t), (a, t)  # the lower end is achieved by a feasible pair


@pytest.mark.parametrize("mu", [0.2, 1.0, 3.0])
def test_profile_of_a_known_concave_curve(mu):
    """The Gaussian trade-off curve Φ(Φ⁻¹(a) + μ) read by delta_from_tpr: never below its exact profile, and
    within 1e-7 of it."""

    def bracket(a):
        t = special.ndtr(special.ndtri(a) + mu)
        return t * (1 - 1e-13), np.minimum(t * (1 + 1e-13) + 1e-300, 1.0)

    got = rp.delta_from_tpr(bracket, EPS)
    for e, d in zip(EPS, got):
        truth = _gauss_delta(e, mu)
        assert d >= truth and d <= truth + 1e-7, (e, d, truth)


@pytest.mark.parametrize("mu", [0.1, 0.5, 1.0, 2.0])
def test_never_below_the_gaussian_and_never_above_the_per_order_conversion(mu):
    curve = ORDERS * mu**2 / 2
    got = rp.delta_from_rdp(ORDERS, curve, EPS)
    zcdp = rp.delta_from_zcdp(mu**2 / 2, EPS)
    per_order = np.asarray(delta_from_curve(ORDERS, curve, EPS, "optimal").value, float)
    assert np.all(got <= per_order) and np.all(zcdp <= per_order)
    for i, e in enumerate(EPS):
        truth = _gauss_delta(e, mu)
        assert got[i] >= truth and zcdp[i] >= truth, (e, got[i], zcdp[i], truth)


def test_strictly_below_the_per_order_conversion_for_large_rho():
    """ρ = 2: every order at once and both directions lower the advantage δ(0) from 0.868 (the best single
    order of dpcalc's 225) to 0.834."""
    per_order = float(np.asarray(delta_from_curve(ORDERS, 2.0 * ORDERS, np.array([0.0]), "optimal").value)[0])
    got = float(rp.delta_from_zcdp(2.0, np.array([0.0]))[0])
    assert per_order > 0.86 and got < 0.835
    assert got >= float(_gauss_delta(0.0, 2.0))  # μ = 2: 2Φ(1) − 1 = 0.683


@pytest.mark.parametrize("q,sigma,steps", [(0.01, 1.0, 1000), (0.1, 0.6, 100), (1.0, 1.0, 1)])
def test_at_least_the_brute_force_grid_and_dp_sgds_pld_lower_end(q, sigma, steps):
    curve = steps * np.asarray(sgm.rdp_poisson(q, sigma, ORDERS), float)
    got = rp.delta_from_rdp(ORDERS, curve, EPS)
    # the conversion's own curve on a fine grid, from below: its profile can only be above the grid's
    a = np.unique(np.concatenate([np.linspace(0, 1, 1001), np.geomspace(1e-30, 1e-2, 300)]))
    low, _ = rt.tpr_bracket_from_rdp(ORDERS, curve, a)
    values = low[:, None] - a[:, None] * np.exp(EPS)
    grid = np.max(values, axis=0)
    for j, i in enumerate(np.argmax(values, axis=0)):  # then zoom twice between the best point's neighbours
        x = a
        for _ in range(2):
            x = np.linspace(x[max(i - 1, 0)], x[min(i + 1, x.size - 1)], 201)
            v = rt.tpr_bracket_from_rdp(ORDERS, curve, x)[0] - x * np.exp(EPS[j])
            i, grid[j] = int(np.argmax(v)), max(grid[j], float(np.max(v)))
    assert np.all(got >= grid), (got, grid)
    assert np.all(got <= np.maximum(grid, 0) + 1e-6 * np.maximum(grid, 1e-3)), (got, grid)
    # the run's true δ(ε) is at least PLD's certified lower end (remove and add directions both)
    pld = sgd_delta_pld(q, sigma, steps, EPS, 1e-2)
    assert np.all(got >= np.asarray(pld.lower, float)), (got, pld.lower)


def test_kl_and_shapes():
    """KL <= ρ adds a constraint: never looser; ε of any shape comes back in that shape."""
    orders = rp.ZCDP_ORDERS
    eps = np.array([[0.0, 0.5], [1.0, 2.0]])
    with_kl = rp.delta_from_rdp(orders, 0.5 * orders, eps, kl=0.5)
    without = rp.delta_from_rdp(orders, 0.5 * orders, eps)
    assert with_kl.shape == eps.shape and np.all(with_kl <= without)
    assert np.all(np.diff(with_kl.ravel()) <= 0)  # non-increasing in ε
    assert rp.delta_from_zcdp(0.5, 1.0).shape == ()
