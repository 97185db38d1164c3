"""The optimal Rényi-curve → trade-off conversion (dpcalc.engine.conversion.rdp_tradeoff) against
independent references: a 40-digit mpmath solve of the binary-test constraints, the exact Gaussian trade-off
curve Φ(Φ⁻¹(1 − a) − μ), riskcal's zCDP values, and dpcalc's older profile route (tradeoff.rdp_tpr)."""

from __future__ import annotations

import mpmath
import numpy as np
import pytest

from dpcalc.engine import tradeoff
from dpcalc.engine.conversion import rdp_tradeoff as rt
from dpcalc.engine.conversion import zcdp_tradeoff as zt
from dpcalc.engine.mechanisms import sgm
from dpcalc.engine.orders import DEFAULT_ORDERS
from dpcalc.errors import InputError

mpmath.mp.dps = 40


def _mp_root(excess, lo):
    """Smallest b in [lo, 1 − a] with excess(b) <= 0 (excess decreasing), bisected on log b."""
    if excess(lo) <= 0:
        return lo
    llo, lhi = (mpmath.log(lo) if lo > 0 else mpmath.mpf(-2000)), mpmath.mpf(0)
    for _ in range(120):
        mid = (llo + lhi) / 2
        if excess(mpmath.exp(mid)) > 0:
            llo = mid
        else:
            lhi = mid
    return mpmath.exp(llo)


def _mp_beta(orders, curve, a, kl=None):
    """β from the constraints as written in the papers, in 40 digits: the largest root over the orders of
    (1−b)^λ a^{1−λ} + b^λ (1−a)^{1−λ} <= e^{(λ−1)ρ} and a^λ (1−b)^{1−λ} + (1−a)^λ b^{1−λ} <= e^{(λ−1)ρ}
    (and the two KL forms <= κ)."""
    a = mpmath.mpf(float(a))
    tiny = mpmath.mpf(10) ** -900
    best = mpmath.mpf(0)
    for lam, rho in zip(orders, curve):
        lam, c = mpmath.mpf(float(lam)), (mpmath.mpf(float(lam)) - 1) * mpmath.mpf(float(rho))

        def g_a(b, lam=lam, c=c):
            return mpmath.log((1 - b) ** lam * a ** (1 - lam) + b**lam * (1 - a) ** (1 - lam)) - c

        def g_b(b, lam=lam, c=c):
            return mpmath.log(a**lam * (1 - b) ** (1 - lam) + (1 - a) ** lam * b ** (1 - lam)) - c

        best = max(best, _mp_root(g_a, tiny), _mp_root(g_b, tiny))
    if kl is not None:
        k = mpmath.mpf(kl)

        def k_fwd(b):
            return (1 - b) * mpmath.log((1 - b) / a) + b * mpmath.log(b / (1 - a)) - k

        def k_rev(b):
            return a * mpmath.log(a / (1 - b)) + (1 - a) * mpmath.log((1 - a) / b) - k

        best = max(best, _mp_root(k_fwd, tiny), _mp_root(k_rev, tiny))
    return best


def _gauss_beta(a, mu):
    """The exact type-II error of the Gaussian mechanism with μ = Δ/σ: Φ(Φ⁻¹(1 − a) − μ), 40 digits."""
    return mpmath.ncdf(-mpmath.sqrt(2) * mpmath.erfinv(2 * mpmath.mpf(float(a)) - 1) - mu)


def _sgm_curve(q, sigma, steps, orders):
    return steps * np.asarray(sgm.rdp_poisson(q, sigma, orders), float)


CASES = [  # (orders, curve, kl): a Gaussian, a DP-SGD curve at a few orders, one order with a KL bound
    (np.array([1.5, 4.0, 32.0]), np.array([1.5, 4.0, 32.0]) * 0.5, None),
    (np.array([2.0, 8.0, 64.0, 512.0]), _sgm_curve(0.02, 1.1, 300, np.array([2.0, 8.0, 64.0, 512.0])), None),
    (np.array([3.0]), np.array([2.0]), 0.4),
]


@pytest.mark.parametrize("orders,curve,kl", CASES)
def test_matches_an_mpmath_solve_and_never_exceeds_it(orders, curve, kl):
    fpr = np.array([1e-10, 0.01, 0.5, 1 - 1e-9])
    beta = rt.beta_from_rdp(orders, curve, fpr, kl=kl)
    tpr = rt.tpr_from_rdp(orders, curve, fpr, kl=kl)
    for a, b, t in zip(fpr, beta, tpr):
        ref = _mp_beta(orders, curve, a, kl)
        assert b <= ref and t >= 1 - ref, (a, b, t, ref)  # sound: β rounded down, TPR up
        # tight: within the solve's tolerance (1e-12 on the logit) and the round-off allowances
        assert b >= ref * (1 - 1e-9), (a, b, ref)
        assert t <= (1 - ref) * (1 + 1e-9), (a, t, ref)


@pytest.mark.parametrize("mu", [0.1, 0.5, 1.0, 2.0, 5.0])
def test_never_above_the_gaussian_truth(mu):
    """The Gaussian mechanism's Rényi curve is λμ²/2 (ρ-zCDP with ρ = μ²/2): any valid lower bound on β
    lies below Φ(Φ⁻¹(1 − a) − μ), and its TPR bound above 1 − that."""
    fpr = np.array([1e-12, 1e-6, 1e-3, 0.05, 0.3, 0.7, 0.99])
    curve = DEFAULT_ORDERS * mu**2 / 2
    beta, tpr = rt.beta_from_rdp(DEFAULT_ORDERS, curve, fpr), rt.tpr_from_rdp(DEFAULT_ORDERS, curve, fpr)
    beta_z, tpr_z = zt.beta_from_zcdp(mu**2 / 2, fpr), zt.tpr_from_zcdp(mu**2 / 2, fpr)
    for i, a in enumerate(fpr):
        truth = _gauss_beta(a, mu)
        assert beta[i] <= truth and beta_z[i] <= truth, (a, mu)
        assert tpr[i] >= 1 - truth and tpr_z[i] >= 1 - truth, (a, mu)
    # the continuum of orders (and the KL limit) can only add constraints to the 225 default ones
    assert np.all(beta_z >= beta)


# riskcal (interpretable-dp/riskcal at 108104a): get_beta_from_zcdp(0.5, [0.1, 0.2, 0.3]), i.e. its
# per-order solver (src/riskcal/analysis/rdp/pure.py) over its 999 orders from 1 to 1024, run by us
RISKCAL_NOW = np.array([0.51627168, 0.33856894, 0.22861767])
# the values printed in that function's docstring (introduced in riskcal commit 3914384)
RISKCAL_PUBLISHED = np.array([0.517, 0.34, 0.232])


def test_zcdp_against_riskcal():
    beta = zt.beta_from_zcdp(0.5, np.array([0.1, 0.2, 0.3]))
    # riskcal returns the upper end of a 1e-9 bracket per order, on a grid of orders: ours (the continuum)
    # is at least its value less that bracket, and not far above it
    assert np.all(beta >= RISKCAL_NOW - 2e-9) and np.all(beta <= RISKCAL_NOW + 1e-6)
    assert abs(beta[0] - RISKCAL_PUBLISHED[0]) <= 1e-3


@pytest.mark.parametrize("i", [1, 2])
def test_published_riskcal_values_at_020_030_are_not_zcdp_bounds(i):
    """riskcal's docstring says β = 0.34 and 0.232 at FPR 0.2 and 0.3 (ρ = 0.5); its earlier solver also
    used orders τ in [0.5, 1) with D_τ <= τρ, which ρ-zCDP (orders > 1) does not imply.  A witness: the pair
    Bern(a), Bern(1 − b) with b a little above our β is 0.5-zCDP (checked in mpmath on a grid of orders
    with room to spare, and beyond it D_λ <= D_∞ < λρ), yet its test has type-II error b below the value
    printed (or any value rounding to it); it does break D_τ <= τρ at some τ in [0.5, 1)."""
    a = mpmath.mpf([0.1, 0.2, 0.3][i])
    ours = zt.beta_from_zcdp(0.5, float(a))
    b = mpmath.mpf(float(ours)) + mpmath.mpf("2e-4")
    assert b < RISKCAL_PUBLISHED[i] - 5e-4  # below anything that rounds to the printed value
    p, q = (a, 1 - a), (1 - b, b)

    def renyi(lam, x, y):
        if lam == 1:
            return sum(u * mpmath.log(u / v) for u, v in zip(x, y))
        return mpmath.log(sum(u**lam * v ** (1 - lam) for u, v in zip(x, y))) / (lam - 1)

    worst = max(
        max(renyi(lam, p, q), renyi(lam, q, p)) / lam
        for lam in [mpmath.mpf(1)] + [1 + mpmath.mpf(10) ** (k / 25 - 4) for k in range(176)]
    )
    assert worst < mpmath.mpf("0.4999")
    d_inf = max(max(mpmath.log(u / v) for u, v in zip(x, y)) for x, y in ((p, q), (q, p)))
    assert d_inf < mpmath.mpf(0.5) * (1 + mpmath.mpf(10) ** 3)
    taus = [mpmath.mpf(k) / 100 for k in range(50, 100)]
    assert any(max(renyi(t, p, q), renyi(t, q, p)) > t * mpmath.mpf(0.5) for t in taus)


def test_tighter_than_the_profile_route():
    """β_old = 1 − the TPR bound of the curve's (ε, δ) profile (tradeoff.rdp_profile, profile_tpr: the route
    tradeoff.rdp_tpr took before it became the optimal conversion) never exceeds the new β: the binary pair at
    the new β meets every order's constraint, so every (ε, δ) derived from the curve."""
    fpr = np.array([1e-10, 1e-6, 1e-3, 0.01, 0.1, 0.2, 0.3, 0.5, 0.9])
    for curve in (DEFAULT_ORDERS * 0.5, _sgm_curve(0.1, 2.0, 100, DEFAULT_ORDERS)):
        tpr_old = tradeoff.profile_tpr(fpr, *tradeoff.rdp_profile(DEFAULT_ORDERS, curve, fpr))
        assert np.all(rt.tpr_from_rdp(DEFAULT_ORDERS, curve, fpr) <= tpr_old)
        assert np.all(rt.beta_from_rdp(DEFAULT_ORDERS, curve, fpr) >= 1 - tpr_old)


def test_the_curve_is_the_largest_single_order_answer():
    """β of a curve = max over its orders of the one-order β (the intersection of the single-order regions):
    each order alone as one curve (the others inf), all in one call."""
    orders = DEFAULT_ORDERS[::9]
    curve = _sgm_curve(0.05, 1.0, 200, orders)
    fpr = np.array([1e-9, 1e-4, 0.05, 0.4, 0.95])
    alone = np.where(np.eye(orders.size, dtype=bool), curve, np.inf)
    per_order = rt.beta_from_rdp(orders, alone, fpr)
    assert per_order.shape == (orders.size, fpr.size)
    joint = rt.beta_from_rdp(orders, curve, fpr)
    np.testing.assert_allclose(joint, per_order.max(axis=0), rtol=1e-10)  # the solve's tolerance


def test_edges():
    orders = np.array([2.0, 10.0])
    curve = np.array([0.3, 1.5])
    assert list(rt.beta_from_rdp(orders, curve, [0.0, 1.0])) == [1.0, 0.0]
    assert list(rt.tpr_from_rdp(orders, curve, [0.0, 1.0])) == [0.0, 1.0]
    # ρ = 0 at some order: P = Q, β = 1 − a exactly (rounded down)
    a = np.array([1e-9, 0.1, 0.7])
    b0 = rt.beta_from_rdp(orders, np.array([0.0, 1.5]), a)
    assert np.all(b0 <= [1 - mpmath.mpf(float(x)) for x in a]) and np.all(b0 >= 1 - a - 2.3e-16)
    assert np.all(rt.tpr_from_rdp(orders, np.array([0.0, 1.5]), a) == a)
    assert np.all(zt.beta_from_zcdp(0.0, a) == b0)
    # no bound at any order: nothing is certified; inf at some orders is the same as leaving them out
    assert np.all(rt.beta_from_rdp(orders, np.array([np.inf, np.inf]), a) == 0.0)
    assert np.all(rt.tpr_from_rdp(orders, np.array([np.inf, np.inf]), a) == 1.0)
    assert np.all(zt.beta_from_zcdp(np.inf, a) == 0.0)
    np.testing.assert_array_equal(
        rt.beta_from_rdp(orders, np.array([np.inf, 1.5]), a), rt.beta_from_rdp(orders[1:], curve[1:], a)
    )
    # huge and tiny ρ: no warnings (they are errors here), β in [0, 1 − a]
    assert np.all(rt.beta_from_rdp(orders, np.array([1e6, 1e300]), a) == 0.0)
    assert np.all(zt.beta_from_zcdp(1e6, a) == 0.0)
    tiny = rt.beta_from_rdp(orders, np.array([1e-300, 1e-300]), a)
    assert np.all(tiny <= 1 - a) and np.all(tiny >= (1 - a) * (1 - 1e-6))


def test_monotone_in_fpr_and_shapes():
    fpr = np.geomspace(1e-12, 0.999, 60)
    curves = np.stack([DEFAULT_ORDERS * r for r in (0.01, 0.5, 8.0)]).reshape(3, 1, -1)
    beta = rt.beta_from_rdp(DEFAULT_ORDERS, curves, fpr)
    assert beta.shape == (3, 1, fpr.size)
    assert np.all(np.diff(beta, axis=-1) <= 0) and np.all(beta <= 1 - fpr)
    tpr = rt.tpr_from_rdp(DEFAULT_ORDERS, curves, fpr)
    assert np.all(np.diff(tpr, axis=-1) >= 0) and np.all(tpr >= fpr)
    np.testing.assert_array_equal(beta[1, 0], rt.beta_from_rdp(DEFAULT_ORDERS, curves[1, 0], fpr))
    assert rt.beta_from_rdp(DEFAULT_ORDERS, curves[1, 0], 0.1).shape == ()
    assert zt.beta_from_zcdp(np.array([[0.1, 1.0]]), fpr).shape == (1, 2, fpr.size)


@pytest.mark.parametrize(
    "orders,curve,fpr",
    [
        ([1.0, 2.0], [0.1, 0.2], 0.1),
        ([2.0, np.inf], [0.1, 0.2], 0.1),
        ([2.0, 3.0], [0.1, -0.2], 0.1),
        ([2.0, 3.0], [0.1, np.nan], 0.1),
        ([2.0, 3.0], [0.1], 0.1),
        ([2.0, 3.0], [0.1, 0.2], 1.5),
    ],
)
def test_bad_input(orders, curve, fpr):
    with pytest.raises(InputError):
        rt.beta_from_rdp(orders, curve, fpr)


def test_bad_zcdp_input():
    with pytest.raises(InputError):
        zt.beta_from_zcdp(-0.1, 0.1)
    with pytest.raises(InputError):
        zt.beta_from_zcdp(0.1, -0.1)
