"""Hypothesis property tests of the RDP ⇄ (ε, δ) conversions (docs/math.md §1).

Tolerances: the closed forms are exact up to their explicit safe-side rounding (16 ulp per log-space summand,
see ``conversions._up``), the optimal conversion up to its certification margin (stated: 1e-10 relative in
the regimes of practical interest).  Where a test needs slack it uses exactly these figures.
"""

from __future__ import annotations

import warnings

import numpy as np
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from dpcalc.engine.conversion import methods as conv

EPS_F = [conv.eps_optimal, conv.eps_asoodeh, conv.eps_balle, conv.eps_mironov]
DELTA_F = [conv.delta_optimal, conv.delta_asoodeh, conv.delta_balle, conv.delta_mironov]

# the brief's wide domain
alphas = st.floats(1.0, 1e5, exclude_min=True)
zetas = st.floats(0.0, 1e4)
deltas = st.floats(1e-300, 1.0, exclude_max=True)
epss = st.floats(0.0, 1e4)
# a practical domain (α δ < 1, moderate values) for the round trips
p_alphas = st.floats(1.1, 1000.0)
p_zetas = st.floats(1e-3, 50.0)
p_deltas = st.floats(-12.0, -1.5).map(lambda x: 10.0**x)

TOL = 1e-10  # stated tolerance of the optimal conversion


@settings(max_examples=30, deadline=None)
@given(alphas, zetas, deltas)
def test_eps_ordering(a, z, d):
    o, s, b, m = (float(f(a, z, d)) for f in EPS_F)
    assert o <= s <= b
    if a > conv.BALLE_MIN_ORDER:  # Balle is ∞ at orders <= 1.01 (dp_accounting's rule)
        assert b <= m


@settings(max_examples=30, deadline=None)
@given(alphas, zetas, epss)
def test_delta_ordering(a, z, e):
    o, s, b, m = (float(f(a, z, e)) for f in DELTA_F)
    assert o <= s <= b
    if a > conv.BALLE_MIN_ORDER:
        assert b <= m


@settings(max_examples=25, deadline=None)
@given(alphas, zetas, deltas, st.floats(1e-6, 10.0))
def test_monotone_in_zeta(a, z, d, r):
    z2 = z * (1.0 + r) + r
    for f in EPS_F:
        e1, e2 = float(f(a, z, d)), float(f(a, z2, d))
        assert e2 >= e1 * (1.0 - TOL)
    for f in DELTA_F:
        d1, d2 = float(f(a, z, d)), float(f(a, z2, d))  # d doubles as an ε here
        assert d2 >= d1 * (1.0 - TOL)


@settings(max_examples=25, deadline=None)
@given(alphas, zetas, deltas, st.floats(1e-6, 10.0))
def test_monotone_in_delta_and_eps(a, z, d, r):
    d2 = min(d * (1.0 + r), 1.0)
    for f in EPS_F:
        assert float(f(a, z, d2)) <= float(f(a, z, d)) * (1.0 + TOL)
    e, e2 = d * 10.0, d * 10.0 * (1.0 + r)
    for f in DELTA_F:
        assert float(f(a, z, e2)) <= float(f(a, z, e)) * (1.0 + TOL)


@settings(max_examples=15, deadline=None)
@given(st.lists(st.tuples(alphas, zetas, deltas), min_size=2, max_size=6))
def test_vectorised_equals_scalar(rows):
    a, z, d = (np.array(x) for x in zip(*rows))
    for f in EPS_F + DELTA_F:
        vec = f(a.reshape(-1, 1), z.reshape(-1, 1), d.reshape(-1, 1))
        assert vec.shape == (len(rows), 1)
        for i in range(len(rows)):
            assert vec[i, 0] == f(a[i], z[i], d[i])  # bit for bit: no cross-talk between elements
    zo = conv.zeta_opt(a, d * 10, d)
    for i in range(len(rows)):
        assert zo[i] == conv.zeta_opt(a[i], d[i] * 10, d[i])


@settings(max_examples=40, deadline=None)
@given(p_alphas, p_zetas, p_deltas)
def test_round_trip_optimal(a, z, d):
    e = float(conv.eps_optimal(a, z, d))
    assume(e > 0.0)  # (at large α the closed form is already exact to ~1e-12 and is what we return)
    d2 = float(conv.delta_optimal(a, z, e))
    # e certifies δ, so the smallest δ at e is <= δ, up to the safe-side rounding of e (which is the closed
    # form's 16 ulp per summand where that is returned), amplified by dlogδ/dε <= α − 1
    assert d2 <= d * (1.0 + TOL + (a - 1.0) * 1e-14 * (1.0 + e))
    assert d2 >= d * (1.0 - 1e-6)
    e2 = float(conv.eps_optimal(a, z, d2))
    assert abs(e2 - e) <= 1e-8 * e


@settings(max_examples=40, deadline=None)
@given(p_alphas, p_zetas, p_deltas)
def test_round_trip_closed_forms(a, z, d):
    for fe, fd in [
        (conv.eps_mironov, conv.delta_mironov),
        (conv.eps_balle, conv.delta_balle),
        (conv.eps_asoodeh, conv.delta_asoodeh),
    ]:
        e = float(fe(a, z, d))
        if e == 0.0:  # KL shortcut: no inverse
            continue
        d2 = float(fd(a, z, e))
        assert abs(d2 - d) <= 1e-9 * d, (fe.__name__, d, d2)


@settings(max_examples=30, deadline=None)
@given(alphas, zetas, deltas, epss)
def test_no_nan_wide_domain(a, z, d, e):
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no numpy RuntimeWarning either
        for f in EPS_F:
            v = float(f(a, z, d))
            assert not np.isnan(v) and v >= 0.0
        for f in DELTA_F:
            v = float(f(a, z, e))
            assert not np.isnan(v) and 0.0 <= v <= 1.0
        v = float(conv.zeta_opt(a, e, d))
        assert not np.isnan(v) and v >= 0.0


@settings(max_examples=40, deadline=None)
@given(alphas, epss, deltas)
def test_zeta_opt_dominates_closed_forms(a, e, d):
    zo = float(conv.zeta_opt(a, e, d))
    for f in (conv.zeta_f, conv.zeta_g, conv.zeta_mironov):
        assert zo >= float(f(a, e, d))


@settings(max_examples=30, deadline=None)
@given(p_alphas, p_zetas, p_deltas)
def test_zeta_opt_inverts_eps_optimal(a, z, d):
    """ε_opt is the smallest ε with ζ_opt(α, ε, δ) >= ζ: at ε_opt the certified ζ reaches ζ."""
    e = float(conv.eps_optimal(a, z, d))
    assume(e > 0.0)
    # >= up to round-off (where the closed form is exact, ε and ζ are both rounded, to opposite sides)
    assert float(conv.zeta_opt(a, e, d)) >= z * (1.0 - 1e-14)
    assert float(conv.zeta_opt(a, e * (1 - 1e-7), d)) < z * (1 + 1e-12)
