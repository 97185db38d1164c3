"""RDP bound for sampling without replacement (dpcalc.engine.mechanisms.sgm.rdp_without_replacement; docs/math.md §3.3).

References: docs/math.md §3.3 test vectors and dp_accounting 0.6.0 (``_compute_rdp_sample_wor_gaussian``),
which implements the same WBK 2019 bound.
"""

from __future__ import annotations

import math

import mpmath as mp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dpcalc.engine.mechanisms.sgm import rdp_without_replacement
from dpcalc.engine.orders import DEFAULT_ORDERS

VECTORS = [
    (0.01, 1.1, 2, 4.56932269307418e-4),
    (0.01, 1.1, 3, 6.970023520157e-4),
    (0.01, 1.1, 8, 2.042153123843e-3),
    (0.01, 1.1, 32, 8.491776020153),
    (0.01, 1.1, 2.5, 6.169789911129e-4),
    (0.01, 10.0, 64, 1.3295605953577e-4),
]


@pytest.mark.parametrize("q,sigma,alpha,value", VECTORS)
def test_formulas_vectors(q, sigma, alpha, value):
    assert rdp_without_replacement(q, sigma, [alpha])[0] == pytest.approx(value, rel=1e-12)


def test_agrees_with_dp_accounting_where_it_is_well_conditioned():
    from dp_accounting.rdp.rdp_privacy_accountant import _compute_rdp_sample_wor_gaussian as ref

    # dp_accounting's iterated log-space differences are accurate at small σ and moderate orders
    # (elsewhere they cancel badly: see the mpmath test below); α > 256 uses no differences at all
    orders = np.array([1.5, 2, 3, 4.5, 7, 16, 24.5, 32, 300, 512.5, 1024])
    qs = [1e-5, 1e-3, 0.02, 0.2, 0.7]
    sigmas = [0.3, 0.6, 0.9, 1.5]
    ours = rdp_without_replacement(np.array(qs)[:, None], np.array(sigmas), orders)
    for i, q in enumerate(qs):
        for j, s in enumerate(sigmas):
            theirs = np.asarray(ref(q, s, orders), dtype=float)
            # RDP is non-decreasing in α, so a bound at a higher order also bounds a lower one; dpcalc
            # applies that (dp_accounting's bound jumps up where it drops the forward differences, α > 256)
            theirs = np.minimum.accumulate(theirs[::-1])[::-1]
            fin = np.isfinite(theirs)
            np.testing.assert_allclose(ours[i, j, fin], theirs[fin], rtol=1e-9)


def _wor_exact(q, sigma, a):
    """docs/math.md §3.3's display, in 80-digit arithmetic (the forward differences summed exactly)."""
    mp.mp.dps = 80
    q, s = mp.mpf(q), mp.mpf(sigma)

    def eps(j):
        return mp.mpf(j) / (2 * s * s)

    def z(i):
        return mp.mpf(1) if i <= 1 else mp.exp((i - 1) * eps(i))

    def delta(n):
        return abs(mp.fsum((-1) ** (n - i) * mp.binomial(n, i) * z(i) for i in range(n + 1)))

    tot = 1 + q**2 * mp.binomial(a, 2) * min(4 * mp.expm1(eps(2)), 2 * mp.exp(eps(2)))
    for j in range(3, a + 1):
        lo, hi = delta(2 * (j // 2)), delta(2 * ((j + 1) // 2))
        tot += q**j * mp.binomial(a, j) * min(4 * mp.sqrt(lo * hi), 2 * mp.exp((j - 1) * eps(j)))
    return float(mp.log(tot) / (a - 1))


@pytest.mark.parametrize(
    "q,sigma,alpha",
    [(0.2, 8.0, 64), (0.2, 40.0, 100), (0.7, 8.0, 101), (0.7, 40.0, 64), (0.01, 1.1, 100), (0.05, 3.0, 40)],
)
def test_exact_forward_differences_mpmath(q, sigma, alpha):
    # dp_accounting gets (0.7, 40, 64) wrong by 9x (0.2637 vs 0.02918); dpcalc integrates Δ_l instead
    exact = _wor_exact(q, sigma, alpha)
    got = rdp_without_replacement(q, sigma, [alpha])[0]
    assert got >= exact * (1 - 1e-15)
    assert got == pytest.approx(exact, rel=1e-8)


def test_special_cases_and_shape():
    r = rdp_without_replacement(np.array([0.0, 1.0, 0.5]), np.array([1.0, 2.0, 0.0]), [2.0, 3.0, 10.5])
    assert r.shape == (3, 3)
    assert np.all(r[0] == 0)
    np.testing.assert_allclose(r[1], np.array([2.0, 3.0, 10.5]) / 8.0)
    assert np.all(np.isposinf(r[2]))


def test_end_to_end_dp_accounting():
    # docs/math.md §3.3: 512 of 50000, σ=1 (replace-one sensitivity), 4900 steps, δ=1e-5 → ε = 8.9602
    from dpcalc.engine.conversion import methods as conversions
    from dpcalc.engine.orders import DP_ACCOUNTING_ORDERS

    rdp = rdp_without_replacement(512 / 50000, 1.0, DP_ACCOUNTING_ORDERS) * 4900
    eps = conversions.eps_from_curve(DP_ACCOUNTING_ORDERS, rdp, 1e-5, "balle").value
    assert eps == pytest.approx(8.9602, abs=1e-4)


@settings(max_examples=15, deadline=None)
@given(
    lq=st.floats(min_value=math.log(1e-9), max_value=0.0),
    ls=st.floats(min_value=math.log(0.01), max_value=math.log(1e4)),
)
def test_no_nan_monotone(lq, ls):
    r = rdp_without_replacement(math.exp(lq), math.exp(ls), DEFAULT_ORDERS[::9])
    assert not np.any(np.isnan(r))
    assert np.all(r >= 0)
    assert np.all(np.diff(r) >= 0)
