"""Reference vectors for the RDP ⇄ (ε, δ) conversions (docs/math.md §1.1–§1.6), peers, and edge cases."""

from __future__ import annotations

import math

import mpmath as mp
import numpy as np
import pytest

from dpcalc.engine.conversion import methods as conv
from dpcalc.engine.orders import DP_ACCOUNTING_ORDERS
from dpcalc.errors import InputError

REL = 1e-9


def close(x, ref, rel=REL):
    return abs(float(x) - ref) <= rel * abs(ref)


# ---------------------------------------------------------------------------------------------------------
# docs/math.md §1.5 (α=10, ζ=0.5, δ=1e-5 unless stated)


def test_eps_closed_forms_vectors():
    assert close(conv.eps_mironov(10, 0.5, 1e-5), 1.7792139405522476)
    assert close(conv.eps_balle(10, 0.5, 1e-5), 1.4180106367839718)
    assert close(conv._asoodeh_second(np.float64(10), np.float64(0.5), np.float64(1e-5)), 1.5221300370096138)
    assert close(conv.eps_asoodeh(10, 0.5, 1e-5), 1.4180106367839718)


def test_closed_forms_round_up():
    # safe-side rounding: never below the reference value
    assert conv.eps_mironov(10, 0.5, 1e-5) >= 1.7792139405522476
    assert conv.eps_balle(10, 0.5, 1e-5) >= 1.4180106367839718
    assert conv.delta_balle(10, 0.5, 1.5) >= 4.781148664665559e-6


def test_eps_optimal_vector():
    ref = 1.41677039921385
    got = float(conv.eps_optimal(10, 0.5, 1e-5))
    assert ref <= got <= ref * (1 + 1e-10)


def test_delta_vectors_at_eps_1_5():
    assert close(conv.delta_mironov(10, 0.5, 1.5), 1.2340980408667956e-4)
    assert close(conv.delta_balle(10, 0.5, 1.5), 4.781148664665559e-6)
    ref = 4.728055471094112e-6
    got = float(conv.delta_optimal(10, 0.5, 1.5))
    assert ref <= got <= ref * (1 + 1e-9)


def test_alpha_delta_at_least_one_branch():
    ref = 0.083709268125845  # = 1 + log 0.4
    assert close(conv.eps_asoodeh(2, 1, 0.6), ref)
    got = float(conv.eps_optimal(2, 1, 0.6))
    assert ref <= got <= ref * (1 + 1e-12)
    # the inverse on the same branch: δ = 1 − e^{ε−ζ}
    d = float(conv.delta_optimal(2, 1, ref))
    assert close(d, 0.6, 1e-12) and d >= 0.6 * (1 - 1e-14)


def test_zeta_vectors_small_alpha():
    # ζ_opt(α=2, ε=0.5, δ=1e-3); f; g useless here
    z = float(conv.zeta_opt(2, 0.5, 1e-3))
    assert z <= 0.0025955138207 * (1 + 1e-11) and close(z, 0.0025955138207, 1e-10)
    assert close(conv.zeta_f(2, 0.5, 1e-3), 0.0012972331807, 1e-10)
    assert float(conv.zeta_g(2, 0.5, 1e-3)) == pytest.approx(-5.02, abs=0.01)


def test_dp_to_rdp_vector():
    # docs/math.md §1.4: α=10, ε=1, δ=1e-5
    assert close(conv.zeta_mironov(10, 1, 1e-5), -0.2792139406, 1e-9)
    assert close(conv.zeta_g(10, 1, 1e-5), 0.0819893632, 1e-9)
    assert close(conv.zeta_f(10, 1, 1e-5), 0.0659379972, 1e-9)
    z = float(conv.zeta_opt(10, 1, 1e-5))
    assert close(z, 0.1253827486, 1e-9)
    # every candidate is a lower bound of the exact value, and the exact value dominates them all
    for f in (conv.zeta_mironov, conv.zeta_g, conv.zeta_f):
        assert f(10, 1, 1e-5) <= z


def test_tightness_pair_attains_zeta_opt():
    """§1.3 item 1: P=Ber(p*), Q=Ber((p*−δ)e^{−ε}) has D_α(P‖Q) = ζ_opt and E_{e^ε}(P‖Q) = δ (mpmath)."""
    mp.mp.dps = 40
    a, e, d = mp.mpf(10), mp.mpf(1), mp.mpf("1e-5")

    def dphi(p):  # d/dp of p^α (p−δ)^{1−α} + (1−p)^α (e^ε−p+δ)^{1−α}
        x, y, w = p - d, 1 - p, mp.e**e - p + d
        return (
            a * p ** (a - 1) * x ** (1 - a)
            - (a - 1) * p**a * x ** (-a)
            - a * y ** (a - 1) * w ** (1 - a)
            + (a - 1) * y**a * w ** (-a)
        )

    p_star = mp.findroot(dphi, (a * d, 2 * a * d), solver="anderson")
    assert abs(p_star / mp.mpf("1.00029e-4") - 1) < 1e-5
    q = (p_star - d) * mp.e ** (-e)
    renyi = mp.log(p_star**a * q ** (1 - a) + (1 - p_star) ** a * (1 - q) ** (1 - a)) / (a - 1)
    hockey = max(p_star - mp.e**e * q, (1 - p_star) - mp.e**e * (1 - q), 0)
    assert abs(hockey - d) < mp.mpf("1e-30")
    ours = float(conv.zeta_opt(10, 1, 1e-5))
    assert ours <= renyi  # a certified lower bound of ζ_opt
    assert abs(ours - float(renyi)) <= 1e-10 * float(renyi)  # the stated tolerance of the certified value
    assert abs(float(renyi) - 0.1253827486) < 1e-10


# ---------------------------------------------------------------------------------------------------------
# curve level: the Gaussian mechanism on dp_accounting's default orders (docs/math.md §1.5 last rows)


@pytest.mark.parametrize(
    "method,eps,alpha",
    [
        ("mironov", 2.5242630693, 10.6),
        ("balle", 2.1657156590, 9.6),
        ("asoodeh", 2.1657156590, 9.6),
        ("optimal", 2.1657118288, 9.6),
    ],
)
def test_gaussian_curve_vectors(method, eps, alpha):
    rdp = DP_ACCOUNTING_ORDERS / (2 * 2.0**2)
    out = conv.eps_from_curve(DP_ACCOUNTING_ORDERS, rdp, 1e-5, method=method)
    assert abs(float(out.value) - eps) <= 1e-10 * eps + 5e-11
    assert float(out.alpha) == alpha
    assert not bool(out.at_edge)
    assert DP_ACCOUNTING_ORDERS[int(out.index)] == alpha


def test_mironov_linear_curve_closed_form():
    """§1.1: for ζ(α) = cα the optimum over α>1 is ε = c + 2 sqrt(c log(1/δ)); a fine grid approaches it."""
    c, delta = 1 / 8, 1e-5
    alphas = np.linspace(1.5, 40, 200_001)
    out = conv.eps_from_curve(alphas, c * alphas, delta, method="mironov")
    exact = c + 2 * math.sqrt(c * math.log(1 / delta))
    assert exact <= float(out.value) <= exact + 1e-9


# ---------------------------------------------------------------------------------------------------------
# peers: dp_accounting 0.6.0 (test-only)


def test_balle_matches_dp_accounting():
    rdp_acc = pytest.importorskip("dp_accounting.rdp.rdp_privacy_accountant")
    rng = np.random.default_rng(5)
    orders = DP_ACCOUNTING_ORDERS
    for _ in range(40):
        c = 10 ** rng.uniform(-4, 1)
        rdp = c * orders * (1 + 0.2 * rng.uniform(size=orders.size))
        delta = 10 ** rng.uniform(-12, -1)
        ref_eps, ref_order = rdp_acc.compute_epsilon(orders, rdp, delta)
        ours = conv.eps_from_curve(orders, rdp, delta, method="balle")
        assert ref_eps <= float(ours.value) <= ref_eps * (1 + 1e-12) + 1e-15
        if ref_eps > 0:
            assert float(ours.alpha) == ref_order
        eps = 10 ** rng.uniform(-2, 1)
        ref_delta, _ = rdp_acc.compute_delta(orders, rdp, eps)
        ours_d = conv.delta_from_curve(orders, rdp, eps, method="balle")
        # our δ is rounded up by 16 ulp of each log-space summand ((α−1)ζ, (α−1)ε, log h_α, α)
        a, i = float(ours_d.alpha), int(ours_d.index)
        rel = 64 * 2.0**-52 * ((a - 1) * (rdp[i] + eps) + a + 10)
        assert ref_delta <= float(ours_d.value) <= ref_delta * (1 + rel) + 1e-300


def test_optimal_beats_dp_accounting():
    rdp_acc = pytest.importorskip("dp_accounting.rdp.rdp_privacy_accountant")
    orders = DP_ACCOUNTING_ORDERS
    for sigma in (0.7, 1.0, 2.0, 5.0):
        rdp = orders / (2 * sigma**2)
        ref, _ = rdp_acc.compute_epsilon(orders, rdp, 1e-6)
        assert float(conv.eps_from_curve(orders, rdp, 1e-6).value) < ref


# ---------------------------------------------------------------------------------------------------------
# edge cases (docs/math.md §1.2, §1.3)


@pytest.mark.parametrize("method", conv.METHODS)
def test_edge_cases_eps(method):
    f = conv._EPS_FUNCS[method]
    assert f(10, 0.5, 0.0) == np.inf  # δ = 0: no single order certifies it
    assert f(10, 0.0, 1e-5) == 0.0  # ζ = 0: identical outputs
    assert f(10, 0.0, 0.0) == 0.0
    assert f(10, np.inf, 1e-5) == np.inf
    assert f(10, 0.5, 1.0) == 0.0  # δ = 1: every mechanism is (0, 1)-DP
    assert f(10, 1e-12, 0.1) == 0.0 or method == "mironov"  # KL shortcut (δ² > 1 − e^{−ζ})


@pytest.mark.parametrize("method", conv.METHODS)
def test_edge_cases_delta(method):
    f = conv._DELTA_FUNCS[method]
    assert f(10, 0.0, 1.0) == 0.0
    assert f(10, np.inf, 1.0) == 1.0
    assert f(10, 0.5, np.inf) == 0.0
    assert 0.0 < f(10, 0.5, 0.0) <= 1.0
    assert f(10, 0.5, 800.0) > 0.0  # underflow is rounded up to the smallest subnormal, not to 0


def test_balle_skips_orders_near_one():
    assert conv.eps_balle(1.01, 0.001, 1e-5) == np.inf
    assert conv.eps_balle(1.0100001, 0.001, 1e-5) < np.inf
    assert conv.delta_balle(1.005, 0.5, 1.0) == pytest.approx(math.sqrt(1 - math.exp(-0.5)), rel=1e-12)


def test_curve_skips_infinite_orders_and_reports_edges():
    alphas = np.array([2.0, 4.0, 8.0, 16.0])
    rdp = np.array([[0.1, 0.2, 0.4, 0.8], [np.inf, np.inf, 0.4, np.inf], [np.inf] * 4])
    for method in conv.METHODS:
        out = conv.eps_from_curve(alphas, rdp, 1e-5, method=method)
        assert out.value.shape == (3,)
        assert np.isfinite(out.value[:2]).all() and out.value[2] == np.inf
        assert out.alpha[1] == 8.0 and out.index[1] == 2 and not out.at_edge[1]
        assert np.isnan(out.alpha[2]) and out.index[2] == -1 and not out.at_edge[2]
        assert out.at_edge[0]  # ζ linear in α and δ=1e-5: the best order is past 16
        d = conv.delta_from_curve(alphas, rdp, 1.0, method=method)
        assert d.value[2] == 1.0 and d.index[2] == -1
        assert d.alpha[1] == 8.0


def test_curve_broadcasting():
    alphas = DP_ACCOUNTING_ORDERS
    sig = np.array([1.0, 2.0, 4.0])
    rdp = alphas / (2 * sig[:, None] ** 2)  # (3, m)
    deltas = np.array([[1e-5], [1e-8]])  # (2, 1) against (3,)
    out = conv.eps_from_curve(alphas, rdp, deltas)
    assert out.value.shape == out.alpha.shape == out.index.shape == out.at_edge.shape == (2, 3)
    for i, d in enumerate([1e-5, 1e-8]):
        for j in range(3):
            single = conv.eps_from_curve(alphas, rdp[j], d)
            assert out.value[i, j] == single.value and out.alpha[i, j] == single.alpha


@pytest.mark.parametrize(
    "call,match",
    [
        (lambda: conv.eps_optimal(1.0, 0.5, 1e-5), "--alpha"),
        (lambda: conv.eps_balle(0.5, 0.5, 1e-5), "--alpha"),
        (lambda: conv.eps_mironov(10, -0.1, 1e-5), "--rdp"),
        (lambda: conv.eps_asoodeh(10, 0.5, 1.5), "--delta"),
        (lambda: conv.eps_asoodeh(10, 0.5, -1e-5), "--delta"),
        (lambda: conv.delta_optimal(10, 0.5, -1.0), "--epsilon"),
        (lambda: conv.delta_balle(10, np.nan, 1.0), "--rdp"),
        (lambda: conv.zeta_opt(10, 1.0, 2.0), "--delta"),
        (lambda: conv.eps_from_curve([2.0, 3.0], [0.1, 0.2], 1e-5, method="bogus"), "--method"),
        (lambda: conv.eps_from_curve([2.0, 3.0], [0.1, 0.2, 0.3], 1e-5), "--rdp"),
        (lambda: conv.eps_from_curve([1.0, 3.0], [0.1, 0.2], 1e-5), "--alpha"),
    ],
)
def test_input_errors(call, match):
    with pytest.raises(InputError, match=match):
        call()


def test_no_numpy_warnings_on_edges():
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        a = np.array([1.0001, 2, 10, 1e5])
        for m in conv.METHODS:
            conv._EPS_FUNCS[m](a, np.array([0, 1e-300, 1.0, np.inf]), np.array([0, 1e-300, 0.5, 1.0]))
            conv._DELTA_FUNCS[m](a, np.array([0, 1e-300, 1.0, np.inf]), np.array([0, 1e-300, 700.0, np.inf]))
        conv.zeta_opt(a, np.array([0.0, 1e-9, 1.0, 50.0]), np.array([0.0, 1e-300, 0.5, 1.0]))


def test_at_edge_ignores_ties_and_zero():
    alphas = np.array([2.0, 4.0, 8.0])
    # ε = 0 everywhere (KL shortcut): no order is better, nothing to warn about
    out = conv.eps_from_curve(alphas, np.full(3, 1e-9), 0.1, method="balle")
    assert out.value == 0.0 and not out.at_edge
    # a tie between the last order and an interior one is not "at the edge"
    vals = np.array([[3.0, 1.0, 1.0], [3.0, 2.0, 1.0]])
    best = conv._best(alphas, vals)
    assert list(best.at_edge) == [False, True]
    assert list(best.index) == [1, 2]
