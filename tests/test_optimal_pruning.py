"""Certifying only the best orders of a curve gives the same minimum as certifying every order.

The optimal conversion (Asoodeh et al.) is certified per order; over a curve only the orders whose
*estimate* is within a hair of the best can attain the minimum, so only they are certified
(dpcalc.engine.conversion.methods.eps_optimal_min).  Checked against the unpruned computation (every
order certified) on random curves of the shapes DP-SGD, compose and convert produce.
"""

import numpy as np
import pytest

from dpcalc.engine.conversion import methods as conversions
from dpcalc.engine.dpsgd import accounting
from dpcalc.engine.orders import DEFAULT_ORDERS


def _unpruned(alphas, rdp, delta):
    vals = conversions.eps_optimal(alphas, rdp, delta[..., None])
    return conversions._best(alphas, vals)


def _random_curves(seed, n):
    rng = np.random.default_rng(seed)
    a = DEFAULT_ORDERS
    kind = rng.integers(0, 3, n)
    scale = 10.0 ** rng.uniform(-9, 2, n)
    # Gaussian-like (linear in α), subsampled-like (flat then steep), and pure-DP-like (saturating) curves
    lin = scale[:, None] * a
    steep = scale[:, None] * a * np.exp(np.minimum(a / rng.uniform(5, 500, n)[:, None], 50.0))
    sat = np.minimum(scale[:, None] * a, 10 * scale[:, None])
    rdp = np.where(kind[:, None] == 0, lin, np.where(kind[:, None] == 1, steep, sat))
    delta = 10.0 ** rng.uniform(-12, -1, n)
    return a, rdp, delta


@pytest.mark.parametrize("seed", range(6))
def test_curve_minimum_equals_the_unpruned_one(seed):
    a, rdp, delta = _random_curves(seed, 120)
    got = conversions.eps_from_curve(a, rdp, delta, method="optimal")
    want = _unpruned(a, rdp, delta)
    assert np.array_equal(got.value, want.value)
    assert np.array_equal(got.index, want.index)
    assert np.array_equal(got.at_edge, want.at_edge)


def test_dpsgd_window_equals_the_unpruned_window():
    """DP-SGD's windowed search (orders around the closed form's best) gives what certifying every
    order of the same windows gives: compared on a random grid of (q, σ, steps, δ)."""
    rng = np.random.default_rng(3)
    n = 150
    q = 10.0 ** rng.uniform(-3.5, -0.3, n)
    sigma = rng.uniform(0.5, 5, n)
    steps = np.round(10.0 ** rng.uniform(1, 6, n))
    delta = 10.0 ** rng.uniform(-10, -3, n)
    per_step = accounting.rdp_per_step(q, sigma, DEFAULT_ORDERS)
    total = steps[:, None] * per_step
    got = accounting.eps_of_curve(DEFAULT_ORDERS, total, delta, "optimal")
    # the window's unpruned value can only be >= the full-curve minimum, and the pruned one equals it
    # wherever the window holds the full-curve optimum
    full = _unpruned(DEFAULT_ORDERS, total, delta)
    inside = np.abs(got.index - full.index) <= accounting.OPTIMAL_STRIDE
    assert np.all(got.value >= full.value)
    assert np.array_equal(got.value[inside], full.value[inside])
    assert inside.mean() > 0.9


def _window_args(seed, n=200):
    """(α, ζ, δ, closed form) of random DP-SGD curves, 17 orders around the closed form's best (as DP-SGD)."""
    rng = np.random.default_rng(seed)
    q = 10.0 ** rng.uniform(-3.5, -0.3, n)
    sigma = rng.uniform(0.5, 5, n)
    steps = np.round(10.0 ** rng.uniform(1, 6.5, n))
    delta = 10.0 ** rng.uniform(-12, -2, n)
    total = steps[:, None] * accounting.rdp_per_step(q, sigma, DEFAULT_ORDERS)
    closed = conversions.eps_asoodeh(DEFAULT_ORDERS, total, delta[:, None])
    start = np.clip(np.argmin(closed, axis=1) - 8, 0, DEFAULT_ORDERS.size - 17)
    idx = start[:, None] + np.arange(17)
    take = lambda x: np.take_along_axis(x, idx, axis=1)  # noqa: E731
    return DEFAULT_ORDERS[idx], take(total), np.broadcast_to(delta[:, None], idx.shape), take(closed)


@pytest.mark.parametrize("seed", range(3))
def test_estimates_stop_early_only_above_their_floor(seed):
    """eps_estimate's ``floor``: an element it stops early has its full estimate above the floor; every
    other element's estimate (and minimiser) is bit for bit the one without a floor."""
    from dpcalc.engine.conversion import optimal as oc

    a, z, d, closed = (x.ravel() for x in _window_args(seed))
    work = (z > 0) & np.isfinite(z) & (closed > 0) & np.isfinite(closed)
    a, z, d, closed = a[work], z[work], d[work], closed[work]
    rng = np.random.default_rng(seed)
    floor = closed * rng.uniform(0.3, 1.2, closed.size)
    e_full, t_full = oc.eps_estimate(a, z, d, closed)
    e, t = oc.eps_estimate(a, z, d, closed, floor=floor)
    early = np.isnan(t) & ~np.isnan(t_full)
    assert 0.2 < early.mean() < 0.95  # the probe does stop many, not all
    assert np.all(e_full[early] > floor[early]) and np.array_equal(e[early], floor[early])
    assert np.array_equal(e[~early], e_full[~early])
    assert np.array_equal(t[~early], t_full[~early], equal_nan=True)


def test_early_stops_leave_the_per_order_values_unchanged(monkeypatch):
    """eps_optimal_min with the early stops gives the per-order values it gives without them."""
    from dpcalc.engine.conversion import optimal as oc

    a, z, d, _ = _window_args(7, 300)
    got = conversions.eps_optimal_min(a, z, d)
    plain = oc.eps_estimate
    monkeypatch.setattr(oc, "eps_estimate", lambda *args, floor=None: plain(*args))
    want = conversions.eps_optimal_min(a, z, d)
    assert np.array_equal(got, want)
