"""Exact RDP of the Poisson-subsampled Gaussian (dpcalc.engine.mechanisms.sgm.rdp_poisson; docs/math.md §3.2).

References: docs/math.md §3.2's table (mpmath quadrature), dp_accounting 0.6.0 at integer orders, exact
binomial sums and quadrature in mpmath, and hypothesis properties over the whole supported range.
"""

from __future__ import annotations

import math

import mpmath as mp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dpcalc.engine.mechanisms.sgm import rdp_poisson
from dpcalc.engine.orders import DEFAULT_ORDERS

# docs/math.md §3.2: (q, σ, α, exact value from quadrature / the signed series)
TABLE = [
    (0.01, 1.1, 1.5, 9.554528556016e-05),
    (0.01, 1.1, 2, 1.285100816052e-04),
    (0.01, 1.1, 2.5, 1.620774093309e-04),
    (0.01, 1.1, 8.5, 6.298401019065e-04),
    (0.01, 1.1, 32, 8.469416433676e00),
    (0.01024, 1.0, 8.5, 1.175253149018e-03),
    (0.01024, 1.0, 10, 4.631626662121e-02),
    (0.04, 4.0, 1.5, 7.729190174208e-05),
    (0.1, 0.5, 64.5, 1.266611537244e02),
]


@pytest.mark.parametrize("q,sigma,alpha,exact", TABLE)
def test_formulas_table(q, sigma, alpha, exact):
    got = rdp_poisson(q, sigma, [alpha])[0]
    # the table has 13 significant digits and matches quadrature to 2e-9 relative
    assert got == pytest.approx(exact, rel=1e-8)


def test_fractional_beats_dp_accounting_absolute_series():
    # dp_accounting adds |terms| at fractional orders: +27% at q=0.04, σ=4, α=1.5 (docs/math.md §3.2)
    from dp_accounting.rdp.rdp_privacy_accountant import _compute_rdp_poisson_subsampled_gaussian as ref

    ours = rdp_poisson(0.04, 4.0, [1.5])[0]
    theirs = ref(0.04, 4.0, [1.5])[0]
    assert theirs / ours == pytest.approx(1.2656, abs=1e-3)


def _dp_accounting_int(q, sigma, orders):
    from dp_accounting.rdp.rdp_privacy_accountant import _compute_rdp_poisson_subsampled_gaussian as ref

    return np.asarray(ref(q, sigma, orders), dtype=float)


def test_integer_orders_agree_with_dp_accounting():
    orders = np.array([2, 3, 4, 5, 8, 11, 16, 32, 63, 128, 256, 512, 1024], dtype=float)
    qs = np.geomspace(1e-6, 0.99, 9)
    sigmas = np.geomspace(0.05, 100.0, 9)
    ours = rdp_poisson(qs[:, None], sigmas[None, :], orders)
    checked = 0
    for i, q in enumerate(qs):
        for j, s in enumerate(sigmas):
            ref = _dp_accounting_int(q, s, orders)
            # dp_accounting sums A (not A − 1) over α+1 terms: its own rounding error is about
            # α·eps/log A relative, below 1e-10 only where log A >= α·1e-5 (mpmath checks the rest below)
            ok = np.isfinite(ref) & ((orders - 1) * ref >= orders * 1e-5)
            np.testing.assert_allclose(ours[i, j, ok], ref[ok], rtol=1e-10, atol=0)
            checked += int(ok.sum())
    assert checked > 400


def _exact_int(q, sigma, a, dps=60):
    mp.mp.dps = dps
    q, s = mp.mpf(q), mp.mpf(sigma)
    terms = (
        mp.binomial(a, k) * (1 - q) ** (a - k) * q**k * mp.expm1(mp.mpf(k * k - k) / (2 * s * s))
        for k in range(2, a + 1)
    )
    return mp.log1p(mp.fsum(terms)) / (a - 1)


@pytest.mark.parametrize(
    "q,sigma,alpha",
    [
        (0.5, 1e4, 10000),  # tiny RDP at the top order: needs the A − 1 form
        (1e-9, 1.0, 10000),
        (0.3, 2.0, 10000),
        (0.01, 0.01, 5000),
        (0.0065, 50.0, 256),
        (0.0019, 25.0, 1024),
        (1e-9, 1e4, 64),  # RDP ~ 1e-26
        (0.999, 0.5, 3000),
    ],
)
def test_integer_orders_exact_sum_mpmath(q, sigma, alpha):
    exact = float(_exact_int(q, sigma, alpha))
    got = rdp_poisson(q, sigma, [alpha])[0]
    assert got >= exact * (1 - 1e-15)  # an upper bound
    assert got == pytest.approx(exact, rel=2e-10)


def _quad(q, sigma, alpha, dps=30):
    """D_α(μ‖μ0) by mpmath quadrature, with breakpoints at the integrand's peak (docs/math.md §3.2)."""
    mp.mp.dps = dps
    q, s, a = mp.mpf(q), mp.mpf(sigma), mp.mpf(alpha)

    def log_f(z):
        return -(z**2) / (2 * s**2) + a * mp.log(1 - q + q * mp.exp((2 * z - 1) / (2 * s**2)))

    # locate the peak of the integrand on a coarse grid, then integrate around it
    zs = [float(-40 * sigma + 0.5 * i * sigma) for i in range(int(2 * 40 * 2) + 1)]
    zs += [float(k) for k in np.linspace(0, alpha + 40 * sigma, 400)]
    peak = max(zs, key=lambda z: float(log_f(mp.mpf(z))))
    pts = sorted(
        {
            -mp.inf,
            mp.mpf(peak) - 20 * s,
            mp.mpf(peak) - 5 * s,
            mp.mpf(peak),
            mp.mpf(peak) + 5 * s,
            mp.mpf(peak) + 20 * s,
            mp.mpf(0),
            mp.inf,
        }
    )
    norm = 1 / (s * mp.sqrt(2 * mp.pi))
    big = log_f(mp.mpf(peak))
    val = mp.quad(lambda z: mp.exp(log_f(z) - big), pts)
    return (mp.log(val * norm) + big) / (a - 1)


@pytest.mark.parametrize(
    "q,sigma,alpha",
    [
        # where the series gives up or keeps few digits, the quadrature of A − 1 answers
        (0.4723665527410147, 20.085536923187668, 1.01),
        (0.5, 100.0, 1.3),
        (1e-9, 1.0, 1.5),  # RDP ~ 1e-18
        (0.01, 1000.0, 150.5),
        (0.01, 1.1, 1.1),
        (0.01, 1.1, 1.5),
        (0.2, 2.0, 3.7),
        (0.05, 0.8, 7.3),
        (0.001, 1.5, 20.5),
        (0.1, 5.0, 1.3),
        (0.5, 3.0, 2.5),
    ],
)
def test_fractional_orders_quadrature(q, sigma, alpha):
    exact = float(_quad(q, sigma, alpha))
    got = rdp_poisson(q, sigma, [alpha])[0]
    assert got == pytest.approx(exact, rel=1e-8)
    assert got >= exact * (1 - 1e-9)


def test_special_cases():
    r = rdp_poisson([0.0, 1.0, 0.3], [1.0, 2.0, 0.0], [2.0, 3.5])
    assert np.all(r[0] == 0.0)
    np.testing.assert_allclose(r[1], np.array([2.0, 3.5]) / 8.0, rtol=1e-15)
    assert np.all(np.isposinf(r[2]))


def test_orders_beyond_ten_thousand():
    # peer measurements: per-step RDP at q=0.01, σ=1: α=1e5 → 49995.4 (opacus gives nan, dp_accounting ok)
    r = rdp_poisson(0.01, 1.0, [1024.0, 4096.5, 1e5, 1e6 + 0.5])
    assert np.all(np.isfinite(r))
    assert r[0] == pytest.approx(507.39, abs=0.01)
    assert r[2] == pytest.approx(49995.4, abs=0.1)
    assert r[3] == pytest.approx(499996.0, abs=1.0)


def test_shapes_broadcast():
    r = rdp_poisson(np.array([0.01, 0.02])[:, None], np.array([1.0, 2.0, 3.0]), [2.0, 2.5, 10.0, 100.0])
    assert r.shape == (2, 3, 4)
    single = rdp_poisson(0.02, 3.0, [2.0, 2.5, 10.0, 100.0])
    np.testing.assert_array_equal(r[1, 2], single)


ORDERS = DEFAULT_ORDERS[::7]


@settings(max_examples=25, deadline=None)
@given(
    lq=st.floats(min_value=math.log(1e-9), max_value=0.0),
    ls=st.floats(min_value=math.log(0.01), max_value=math.log(1e4)),
)
def test_no_nan_and_monotone_in_order(lq, ls):
    q, s = math.exp(lq), math.exp(ls)
    r = rdp_poisson(q, s, ORDERS)
    assert not np.any(np.isnan(r))
    assert np.all(r >= 0)
    assert np.all(np.diff(r) >= 0)


@settings(max_examples=20, deadline=None)
@given(
    lq=st.floats(min_value=math.log(1e-9), max_value=math.log(0.5)),
    ls=st.floats(min_value=math.log(0.05), max_value=math.log(1e3)),
    f=st.floats(min_value=1.01, max_value=2.0),
)
def test_monotone_in_q_and_sigma(lq, ls, f):
    q, s = math.exp(lq), math.exp(ls)
    base = rdp_poisson(q, s, ORDERS)
    more_q = rdp_poisson(min(q * f, 1.0), s, ORDERS)
    more_s = rdp_poisson(q, s * f, ORDERS)
    fin = np.isfinite(base)
    assert np.all(more_q[fin] >= base[fin] * (1 - 1e-9))
    assert np.all(more_s <= base * (1 + 1e-9) + 1e-300)


def test_math_module_path_matches_scipy(monkeypatch):
    # small queries use math.lgamma/math.erfc (no scipy import at start-up); large ones scipy.special
    import dpcalc.engine._special as _sgm_special
    import dpcalc.engine.mechanisms.sgm as sgm

    q = np.array([1e-6, 0.01, 0.3, 0.9])[:, None]
    s = np.array([0.3, 1.0, 20.0])
    orders = DEFAULT_ORDERS[::3]
    with_scipy = rdp_poisson(q, s, orders)
    from dpcalc.engine.mechanisms.sgm import rdp_without_replacement

    monkeypatch.setattr(_sgm_special, "_SCIPY_MIN", 10**12)
    with sgm.light_start():
        with_math = rdp_poisson(q, s, orders)
        wor_math = rdp_without_replacement(q, s, orders)
    monkeypatch.undo()
    # where (α−1)·RDP = log A is tiny, A ≈ 1 leaves the fractional series few significant digits: both paths
    # return valid upper bounds padded by their rounding allowance (within 1% there), elsewhere they agree
    well = (orders - 1) * with_scipy >= 1e-6
    np.testing.assert_allclose(with_math[well], with_scipy[well], rtol=1e-9)
    np.testing.assert_allclose(with_math[~well], with_scipy[~well], rtol=1e-2)
    np.testing.assert_allclose(wor_math, rdp_without_replacement(q, s, orders), rtol=1e-10)


def test_full_light_path_takes_every_array():
    """light_start sends arrays below _SCIPY_MIN to the math module and larger ones to scipy; with ``full`` every
    array goes to the math module, also in a block opened inside it."""
    import dpcalc.engine._special as sp

    x = np.linspace(-35.0, 8.0, 1200)
    math_path = np.asarray(sp._log_ndtr_u(x), dtype=float)
    scipy_path = sp.lazy_special.log_ndtr(x)
    assert not np.array_equal(math_path, scipy_path)  # the two routines are told apart by their bits
    with sp.light_start():
        np.testing.assert_array_equal(sp._log_ndtr(x), scipy_path)
        np.testing.assert_array_equal(sp._log_ndtr(x[:99]), math_path[:99])
        with sp.light_start(full=True):
            np.testing.assert_array_equal(sp._log_ndtr(x), math_path)
        np.testing.assert_array_equal(sp._log_ndtr(x), scipy_path)
    with sp.light_start(full=True):
        with sp.light_start():  # the wider block's path
            np.testing.assert_array_equal(sp._log_ndtr(x), math_path)
    np.testing.assert_array_equal(sp._log_ndtr(x[:10]), scipy_path[:10])  # outside: scipy
