"""The deferred lone fractional orders of the Poisson-subsampled Gaussian (dpcalc.engine.mechanisms.sgm.deferred,
dpcalc.engine.dpsgd.rdp_deferred): the answer is the full curve's, value and order, bit for bit.

Reference: the full curve of rdp_poisson times the steps, converted by eps_of_curve (every order computed).
"""

from __future__ import annotations

import numpy as np
import pytest

from dpcalc.engine.conversion.of_curve import eps_of_curve
from dpcalc.engine.dpsgd.accounting import epsilon_rdp
from dpcalc.engine.dpsgd.rdp_deferred import eps_poisson_rdp
from dpcalc.engine.mechanisms.sgm import rdp_poisson
from dpcalc.engine.mechanisms.sgm.deferred import DeferredCurve, lone_fractional
from dpcalc.engine.mechanisms.sgm.poisson import frac_log_a
from dpcalc.engine.orders import DEFAULT_ORDERS
from dpcalc.engine.samplers.base import run_curve
from dpcalc.errors import InputError

#: a grid with lone fractional orders low down too (2.5 between 2 and 3, 7.25 with 7 not in the grid)
ODD_ORDERS = np.array(
    [1.5, 2.0, 2.5, 3.0, 4.0, 5.0, 6.0, 7.25, 8.0, 12.0, 20.5, 32.0, 64.0, 90.1, 200.0, 251.8, 400.5]
)


def _rows(rng, n):
    q = np.exp(rng.uniform(np.log(1e-4), np.log(0.9), n))
    sigma = rng.uniform(0.4, 6.0, n)
    steps = np.round(np.exp(rng.uniform(0.0, np.log(3e6), n)))
    delta = np.exp(rng.uniform(np.log(1e-12), np.log(1e-2), n))
    # repeated pairs with several step counts, as a sweep has them; and the special cases
    q[:6] = q[6:12]
    sigma[:6] = sigma[6:12]
    q[12], q[13], sigma[14], sigma[15] = 0.0, 1.0, 0.0, 1e200
    return q, sigma, steps, delta


def _full(q, sigma, steps, delta, orders, conversion):
    return eps_of_curve(orders, run_curve(steps, rdp_poisson(q, sigma, orders)), delta, conversion)


def test_lone_fractional_orders():
    assert list(DEFAULT_ORDERS[lone_fractional(DEFAULT_ORDERS)]) == [
        69.7, 82.7, 90.1, 98.2, 116.5, 138.3, 150.7, 164.1, 178.8, 194.8, 212.2, 231.2, 251.8, 274.3, 298.9
    ]  # fmt: skip
    # 1.5 (⌊α⌋ = 1), 400.5 (above the series) and orders sharing their interval are never deferred
    assert list(ODD_ORDERS[lone_fractional(ODD_ORDERS)]) == [2.5, 7.25, 20.5, 90.1, 251.8]


@pytest.mark.parametrize("orders", [DEFAULT_ORDERS, ODD_ORDERS], ids=["default", "odd"])
@pytest.mark.parametrize("conversion", ["optimal", "balle", "mironov"])
def test_same_answer_as_the_full_curve(orders, conversion):
    q, sigma, steps, delta = _rows(np.random.default_rng(7), 60)
    got = eps_poisson_rdp(q, sigma, steps, delta, orders, conversion)
    want = _full(q, sigma, steps, delta, orders, conversion)
    for name in ("value", "alpha", "index", "at_edge"):
        np.testing.assert_array_equal(getattr(got, name), getattr(want, name), err_msg=name)


def test_bounds_bracket_the_full_curve_and_refining_everything_gives_it():
    q, sigma, _, _ = _rows(np.random.default_rng(3), 40)
    curve = DeferredCurve(q, sigma, DEFAULT_ORDERS)
    full = rdp_poisson(q, sigma, DEFAULT_ORDERS)
    assert np.all(curve.lower <= full) and np.all(full <= curve.upper)
    assert np.any(curve.lower[:, curve.deferred] < full[:, curve.deferred])  # the bounds are not the values
    assert np.any(full[:, curve.deferred] < curve.upper[:, curve.deferred])
    np.testing.assert_array_equal(curve.refine(np.ones(full.shape, dtype=bool)), full)
    # nothing refined: the orders not deferred are already the full curve's (no stale row here)
    assert not np.any(curve.stale)
    none = curve.refine(np.zeros(full.shape, dtype=bool))
    np.testing.assert_array_equal(none[:, ~curve.deferred], full[:, ~curve.deferred])


def test_the_library_call_takes_the_deferred_path_and_agrees(monkeypatch):
    q, sigma, steps, delta = _rows(np.random.default_rng(11), 30)
    calls = []
    real = DeferredCurve.refine
    monkeypatch.setattr(DeferredCurve, "refine", lambda self, need: calls.append(1) or real(self, need))
    e = epsilon_rdp(q, sigma, steps, delta, warn=False)
    assert calls
    want = _full(q, sigma, steps, delta, DEFAULT_ORDERS, "optimal")
    np.testing.assert_array_equal(e.epsilon, want.value)
    np.testing.assert_array_equal(e.alpha, want.alpha)


def test_a_fractional_order_does_not_depend_on_the_others_computed_with_it():
    # the premise of computing only some orders: the series (with its shared log Γ per order and its
    # compaction) and the quadrature give an element the bits it gets alone
    rng = np.random.default_rng(2)
    n = 40
    q = np.exp(rng.uniform(np.log(1e-4), np.log(0.6), n))
    s = rng.uniform(0.4, 6.0, n)
    a = rng.choice(DEFAULT_ORDERS[(DEFAULT_ORDERS != np.floor(DEFAULT_ORDERS)) & (DEFAULT_ORDERS <= 300)], n)
    together, ok = frac_log_a(q, s, a)
    assert ok.any() and (a > 150).any()
    for i in range(n):
        alone, _ = frac_log_a(q[i : i + 1], s[i : i + 1], a[i : i + 1])
        assert alone[0] == together[i], (q[i], s[i], a[i])


def test_an_unknown_conversion_is_named_as_the_conversion():
    with pytest.raises(InputError, match="^--conversion: must be one of"):
        epsilon_rdp(0.01, 1.0, 1000, 1e-5, conversion="bogus")
