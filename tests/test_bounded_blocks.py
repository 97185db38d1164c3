"""Blocks that bound a sweep's memory keep every bit: the closed forms convert a chunk's curves a block of
curves at a time (``methods.CLOSED_BLOCK``), and the exact conversion's probe runs a block of elements at a
time (``optimal.PROBE_BLOCK``).  Each is checked against the one call over the whole array it replaces."""

from __future__ import annotations

import numpy as np
import pytest

from dpcalc.engine.conversion import closed_form, methods, optimal
from dpcalc.engine.orders import DEFAULT_ORDERS

_FORMS = {
    "asoodeh": closed_form.eps_asoodeh,
    "balle": closed_form.eps_balle,
    "mironov": closed_form.eps_mironov,
}


def _curves(rng, rows):
    """(rows × orders) RDP levels over six decades, with 0 and +∞ among them."""
    rdp = 10.0 ** rng.uniform(-4, 2, (rows, DEFAULT_ORDERS.size))
    rdp[rng.random(rdp.shape) < 0.01] = np.inf
    rdp[rng.random(rdp.shape) < 0.01] = 0.0
    return rdp


@pytest.mark.parametrize("kind", sorted(_FORMS))
@pytest.mark.parametrize("delta_shape", ["per row", "one"])
def test_closed_forms_by_blocks_are_one_call(kind, delta_shape):
    rng = np.random.default_rng(len(kind))
    per = methods.CLOSED_BLOCK // DEFAULT_ORDERS.size
    rdp = _curves(rng, 2 * per + 37)  # two whole blocks and a part
    delta = 10.0 ** rng.uniform(-12, -2, rdp.shape[0]) if delta_shape == "per row" else 1e-5
    blocked = methods.eps_per_order(DEFAULT_ORDERS, rdp, delta, kind)
    whole = _FORMS[kind](DEFAULT_ORDERS, rdp, np.broadcast_to(delta, rdp.shape[:1])[:, None])
    assert blocked.shape == rdp.shape
    np.testing.assert_array_equal(blocked, whole)


def test_closed_forms_keep_the_shape_of_stacked_curves():
    rng = np.random.default_rng(7)
    per = methods.CLOSED_BLOCK // DEFAULT_ORDERS.size
    rdp = _curves(rng, 3 * per).reshape(3, per, DEFAULT_ORDERS.size)
    delta = 10.0 ** rng.uniform(-12, -2, (3, 1))  # broadcast over the middle axis
    got = methods.eps_per_order(DEFAULT_ORDERS, rdp, delta, "balle")
    np.testing.assert_array_equal(got, closed_form.eps_balle(DEFAULT_ORDERS, rdp, delta[..., None]))


def test_probe_by_blocks_is_one_call(monkeypatch):
    rng = np.random.default_rng(3)
    n = 5000
    alpha = rng.choice(DEFAULT_ORDERS[DEFAULT_ORDERS > 1.0], n)
    rdp = 10.0 ** rng.uniform(-3, 1.5, n)
    ld = np.log(10.0 ** rng.uniform(-12, -1, n))
    eps = 10.0 ** rng.uniform(-2, 1.5, n)
    monkeypatch.setattr(optimal, "PROBE_BLOCK", 10 * n)
    whole = optimal._root_above(alpha, rdp, ld, eps)
    assert 0 < whole.sum() < n  # both answers occur
    monkeypatch.setattr(optimal, "PROBE_BLOCK", 333)
    np.testing.assert_array_equal(optimal._root_above(alpha, rdp, ld, eps), whole)
