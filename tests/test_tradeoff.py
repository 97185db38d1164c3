"""The trade-off engine (dpcalc.engine.tradeoff): TPR bounds against independent references — the exact
μ-GDP curve in 40-digit mpmath, the exact Gaussian profile, and dp_accounting's PLD of DP-SGD."""

from __future__ import annotations

import math

import mpmath
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dpcalc.engine import tradeoff
from dpcalc.engine.composition.pld import compose_pld
from dpcalc.engine.dpsgd.pld_accounting import sgd_delta_pld, sgd_epsilon_pld
from dpcalc.engine.mechanisms import sgm
from dpcalc.engine.mechanisms.gaussian_exact import delta_gaussian
from dpcalc.engine.orders import DEFAULT_ORDERS
from dpcalc.input.spec import parse_mechanisms

mpmath.mp.dps = 40
ALPHAS = np.array([1e-12, 1e-9, 1e-6, 1e-4, 1e-2, 0.1, 0.5, 0.9, 0.999999])


def _gdp_exact(a: float, mu: float) -> mpmath.mpf:
    """Φ(Φ⁻¹(α) + μ) in 40 digits (Dong, Roth & Su 2022, Eq. (2.3))."""
    z = mpmath.sqrt(2) * mpmath.erfinv(2 * mpmath.mpf(a) - 1)
    return mpmath.ncdf(z + mu)


@pytest.mark.parametrize("mu", [0.05, 0.5, 1.0, 3.0, 8.0])
def test_gaussian_tpr_exact_to_1e6_and_never_below(mu):
    got = tradeoff.gaussian_tpr(ALPHAS, mu)
    for a, g in zip(ALPHAS, got):
        ref = _gdp_exact(float(a), mu)
        assert g >= ref, (a, mu)
        assert float((g - ref) / ref) <= 1e-6, (a, mu)
    lo = tradeoff.gaussian_tpr_lower(ALPHAS, mu)
    assert all(float(v) <= _gdp_exact(float(a), mu) for a, v in zip(ALPHAS, lo))


def test_profile_of_the_exact_gaussian_profile_brackets_the_curve():
    """The profile formula over a dense ε grid of the exact Gaussian profile never undercuts Φ(Φ⁻¹(α)+μ)
    (it is a bound) and comes within 1e-3; the lower end never passes it (both ends from exact δ)."""
    mu = 1.3
    eps = np.linspace(0.0, 15.0, 30001)
    d = delta_gaussian(eps, mu)
    hi = tradeoff.profile_tpr(ALPHAS, eps, d)
    lo = tradeoff.profile_tpr_lower(ALPHAS, eps, d * (1 - 1e-9), d * (1 + 1e-9))
    for a, h, low in zip(ALPHAS, hi, lo):
        ref = float(_gdp_exact(float(a), mu))
        assert low <= ref * (1 + 1e-12) and h >= ref * (1 - 1e-12)
        assert h <= ref * (1 + 1e-3) and low >= ref * (1 - 1e-2)


def test_pld_route_on_a_gaussian_contains_the_exact_curve():
    specs = parse_mechanisms(["gaussian:sigma=10,count=100"])  # μ = 1
    fpr = np.array([1e-8, 1e-5, 1e-2, 0.3])
    eps, lo, est, up = tradeoff.pld_profile(
        lambda e: compose_pld(specs, epsilon=e), compose_pld(specs, delta=1e-11).upper, fpr
    )
    tl, te, tu = tradeoff.bracket_from_profile(fpr, eps, lo, est, up)
    for a, low, e, high in zip(fpr, tl, te, tu):
        ref = float(_gdp_exact(float(a), 1.0))
        assert low <= ref <= high
        assert low <= e <= high
        assert high <= ref * 1.002 and low >= ref * 0.9


def _dp_accounting_tpr(q, sigma, steps, fpr, pessimistic=True):
    """The profile-based TPR from dp_accounting's PLD (both directions), on a dense ε grid."""
    from dp_accounting.pld import privacy_loss_distribution as pldlib

    pld = pldlib.from_gaussian_mechanism(
        sigma,
        sampling_prob=q,
        value_discretization_interval=2e-4,
        pessimistic_estimate=pessimistic,
        use_connect_dots=pessimistic,
    ).self_compose(steps)
    eps = np.linspace(0.0, 6.0, 1201)
    delta = np.clip(np.asarray(pld.get_delta_for_epsilon(eps), float), 0.0, 1.0)
    return tradeoff.profile_tpr(fpr, eps, delta), eps, delta


@pytest.mark.parametrize("q,sigma,steps", [(0.01, 1.0, 300), (0.05, 2.0, 100)])
def test_sgd_pld_bracket_contains_dp_accounting(q, sigma, steps):
    pytest.importorskip("dp_accounting")
    fpr = np.array([1e-7, 1e-4, 1e-2, 0.2])
    eps, lo, est, up = tradeoff.pld_profile(
        lambda e: sgd_delta_pld(q, sigma, steps, e),
        float(sgd_epsilon_pld(q, sigma, steps, 1e-10).upper),
        fpr,
    )
    tl, _, tu = tradeoff.bracket_from_profile(fpr, eps, lo, est, up)
    ref_hi, _, _ = _dp_accounting_tpr(q, sigma, steps, fpr, pessimistic=True)
    ref_lo, _, _ = _dp_accounting_tpr(q, sigma, steps, fpr, pessimistic=False)
    # dp_accounting's pessimistic value is itself an upper bound at its discretisation: ours may be below it
    # by that discretisation only; its optimistic value never exceeds the truth, so never our upper end
    assert np.all(tl <= ref_hi)
    assert np.all(ref_hi <= tu * (1 + 2e-3))
    assert np.all(ref_lo <= tu)
    # the RDP route is a bound too: never below the PLD lower end (nor the optimistic reference)
    curve = steps * np.asarray(sgm.rdp_poisson(q, sigma, DEFAULT_ORDERS), float)
    e_r, d_r = tradeoff.rdp_profile(DEFAULT_ORDERS, curve, fpr)
    rdp = tradeoff.profile_tpr(fpr, e_r, d_r)
    assert np.all(rdp >= tl) and np.all(rdp >= ref_lo)


def test_clt_mu_matches_the_formula_and_is_near_the_tight_curve():
    q, sigma, steps = 0.004, 1.1, 10000
    mu = float(tradeoff.clt_mu(q, sigma, steps))
    assert mu == pytest.approx(q * math.sqrt(steps * (math.exp(1 / sigma**2) - 1)), rel=1e-14)


@settings(max_examples=40)
@given(
    a=st.floats(1e-12, 0.999999),
    b=st.floats(1e-12, 0.999999),
    mu=st.floats(0.0, 20.0),
    dmu=st.floats(0.0, 5.0),
)
def test_gaussian_monotone_and_at_least_fpr(a, b, mu, dmu):
    lo, hi = sorted((a, b))
    t = tradeoff.gaussian_tpr(np.array([lo, hi]), mu)
    assert not np.any(np.isnan(t))
    assert t[0] <= t[1] and t[0] >= lo and t[1] >= hi and t[1] <= 1.0
    assert tradeoff.gaussian_tpr(lo, mu + dmu) >= tradeoff.gaussian_tpr(lo, mu) * (1 - 1e-12)


def _rdp_tpr(q, sigma, steps, fpr):
    curve = steps * np.asarray(sgm.rdp_poisson(q, sigma, DEFAULT_ORDERS), float)
    return tradeoff.profile_tpr(fpr, *tradeoff.rdp_profile(DEFAULT_ORDERS, curve, fpr))


@settings(max_examples=5)
@given(
    q=st.floats(0.001, 0.2),
    sigma=st.floats(0.6, 5.0),
    steps=st.integers(1, 3000),
    more=st.floats(1.0, 3.0),
)
def test_rdp_route_monotone_in_alpha_noise_and_steps(q, sigma, steps, more):
    fpr = np.array([1e-12, 1e-8, 1e-4, 1e-2, 0.5, 0.99])
    base = _rdp_tpr(q, sigma, steps, fpr)
    assert not np.any(np.isnan(base))
    assert np.all(np.diff(base) >= 0) and np.all(base >= fpr) and np.all(base <= 1)
    # every profile bound is monotone in the profile: more noise, fewer steps: never a larger bound
    assert np.all(_rdp_tpr(q, sigma * more, steps, fpr) <= base * (1 + 1e-9))
    assert np.all(_rdp_tpr(q, sigma, int(steps * more) + 1, fpr) >= base * (1 - 1e-9))


@settings(max_examples=60)
@given(
    eps=st.lists(st.floats(0.0, 50.0), min_size=1, max_size=8),
    delta=st.lists(st.floats(0.0, 1.0), min_size=1, max_size=8),
    a=st.floats(1e-12, 0.999999),
)
def test_profile_bounds_never_nan_and_ordered(eps, delta, a):
    n = min(len(eps), len(delta))
    e = np.sort(np.array(eps[:n]))
    d = np.sort(np.array(delta[:n]))[::-1]  # a non-increasing profile
    hi = tradeoff.profile_tpr([a], e, d)
    lo = tradeoff.profile_tpr_lower([a], e, d, d)
    assert not np.isnan(hi).any() and not np.isnan(lo).any()
    assert a <= lo[0] <= 1.0 and a <= hi[0] <= 1.0


def test_lower_end_survives_repeated_and_nearly_equal_eps():
    """A refined grid can hold ε a few ulps apart: their chords (0/0) must be ignored, not taken as δ = 0."""
    mu = 1.0
    near = np.linspace(0.05, 0.3, 20)  # ε one ulp apart whose e^ε are equal doubles
    e = np.sort(np.concatenate([np.linspace(0.0, 8.0, 200), near, np.nextafter(near, 9.0)]))
    assert np.any(np.diff(np.exp(e)) == 0)
    d = delta_gaussian(e, mu)
    fpr = np.array([1e-6, 1e-3, 0.1])
    lo = tradeoff.profile_tpr_lower(fpr, e, d * (1 - 1e-6), d * (1 + 1e-6))
    ref = np.array([float(_gdp_exact(a, mu)) for a in fpr])
    assert np.all(lo <= ref) and np.all(lo >= 0.95 * ref)
