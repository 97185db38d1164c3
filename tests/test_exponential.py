"""The exponential mechanism as an ε-bounded-range mechanism (docs/math.md §2.12).

References are independent of the module: the generalised randomized response GRR_t of Dong, Durfee &
Rogers 2020 (arXiv:1909.13830) evaluated with mpmath and maximised over t by ternary search or a grid,
the zCDP bound of Cesar & Rogers 2021, the ε-DP randomized-response curve, and Kairouz–Oh–Viswanath's
composition of ε-DP (a bounded-range mechanism is ε-DP, so it may never do worse).
"""

import math

import mpmath as mp
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from dpcalc.commands.compose.command import compose
from dpcalc.engine.mechanisms.exponential import loss_model, profile, rdp_exponential
from dpcalc.engine.mechanisms.randomized_response import rdp_randomized_response
from dpcalc.errors import InputError
from dpcalc.input.spec import parse_mechanism

mp.mp.dps = 40


def _grr(eps, t):
    """P-mass of the loss t (the rest at t − ε) of GRR_t."""
    return (1 - mp.e ** (t - eps)) / (1 - mp.e ** (-eps))


def _renyi_grr(eps, alpha, t):
    p = _grr(eps, t)
    if alpha == 1:
        return p * t + (1 - p) * (t - eps)
    q = p * mp.e ** (-t)  # Q-mass of the loss t
    return mp.log(q * mp.e ** (alpha * t) + (1 - q) * mp.e ** (alpha * (t - eps))) / (alpha - 1)


def _max_over_t(f, eps):
    """max of a unimodal f on [0, ε] by ternary search (mpmath)."""
    lo, hi = mp.mpf(0), mp.mpf(eps)
    for _ in range(150):
        m1, m2 = lo + (hi - lo) / 3, hi - (hi - lo) / 3
        if f(m1) < f(m2):
            lo = m1
        else:
            hi = m2
    return f((lo + hi) / 2)


@pytest.mark.parametrize("eps", [0.001, 0.1, 1.0, 5.0, 40.0])
def test_rdp_is_the_largest_renyi_divergence_of_grr_t(eps):
    alphas = np.array([1.0, 1.01, 1.5, 2.0, 10.0, 100.0, 1e4])
    got = rdp_exponential(eps, alphas)
    for a, v in zip(alphas, got):
        ref = _max_over_t(lambda t, a=a: _renyi_grr(mp.mpf(eps), mp.mpf(a), t), mp.mpf(eps))
        assert v >= ref  # an upper bound
        assert v <= ref * (1 + 1e-6) + 1e-300  # and a tight one (the zCDP cap at tiny ε is within 2e-7)


def test_rdp_caps_and_is_below_epsilon_dp():
    alphas = np.geomspace(1.01, 1e4, 60)
    for eps in (0.05, 0.5, 3.0):
        z = rdp_exponential(eps, alphas)
        assert np.all(z <= alphas * eps * eps / 8 * (1 + 1e-12))  # Cesar & Rogers: ε²/8-zCDP
        assert np.all(z <= eps)
        rr = rdp_randomized_response(1 / (1 + math.exp(-eps)), alphas, eps=eps)
        assert np.all(z <= rr * (1 + 1e-12))  # ε-BR is ε-DP; RR(ε) is the worst ε-DP curve
        assert np.all(z[1:] >= z[:-1] * (1 - 1e-14))
    assert rdp_exponential(2.0, [math.inf])[0] == 2.0


@pytest.mark.parametrize("eps", [0.1, 1.0, 4.0])
def test_profile_is_the_pointwise_largest_grr_profile(eps):
    """δ*(ε') = max_t δ_t(ε') with δ_t(ε') = q_t(e^t − e^{ε'})_+ (mpmath over a grid of t, which bounds the
    max from below, and at the maximiser t = (ε + ε')/2)."""
    e = mp.mpf(eps)
    for ep in np.linspace(0, eps, 7):
        ep_m = mp.mpf(float(ep))

        def dt(t, ep_m=ep_m):
            q = _grr(e, t) * mp.e ** (-t)
            return max(q * (mp.e**t - mp.e**ep_m), 0)

        grid = max(dt(e * j / 400) for j in range(1, 400))
        best = dt((e + ep_m) / 2)
        assert grid <= best * (1 + 1e-12)
        assert float(best) == pytest.approx(float(profile(eps, float(ep))), rel=1e-12, abs=1e-300)


@pytest.mark.parametrize("eps", [0.3, 2.0])
def test_pld_bracket_holds_the_profile_of_one_release(eps):
    from dpcalc.engine.composition.pld import compose_pld

    targets = np.linspace(0.0, eps * 0.95, 5)
    b = compose_pld([parse_mechanism(f"exponential:epsilon={eps}")], epsilon=targets)
    ref = profile(eps, targets)
    # the envelope only dominates ε-BR mechanisms (composed, no one of them attains it): no lower end, no estimate
    assert np.all(np.isnan(np.asarray(b.lower))) and np.all(np.isnan(np.asarray(b.estimate)))
    assert np.all(np.asarray(b.upper) >= ref * (1 - 1e-12))
    # the dominating pair is a distribution: E_P[e^{-L}] = 1 and total mass 1 (quadrature, mpmath)
    m = loss_model(eps)
    dens = lambda x: mp.e ** (m.piece.log_pdf(np.array([float(x)]))[0])  # noqa: E731
    assert float(mp.quad(dens, [-eps, eps])) == pytest.approx(1.0, rel=1e-12)
    assert float(mp.quad(lambda x: dens(x) * mp.e ** (-x), [-eps, eps])) == pytest.approx(1.0, rel=1e-12)


def _ddr_nonadaptive_delta(eps, k, eps_g, nt=120):
    """Dong, Durfee & Rogers 2020's optimal non-adaptive δ of k ε-BR mechanisms, max over t of the k-fold
    GRR_t (binomial sum, mpmath), over a grid of t: a lower bound on the adaptive optimum."""
    e, g = mp.mpf(eps), mp.mpf(eps_g)
    best = mp.mpf(0)
    for j in range(1, nt):
        t = e * j / nt
        p = _grr(e, t)
        s = mp.mpf(0)
        for i in range(k + 1):
            loss = (k - i) * t + i * (t - e)
            if loss > g:
                s += mp.binomial(k, i) * p ** (k - i) * (1 - p) ** i * (1 - mp.e ** (g - loss))
        best = max(best, s)
    return best


def test_default_compose_beats_plain_epsilon_dp_and_stays_above_the_optimum():
    res = compose(["exponential:epsilon=0.1,count=100"], [1e-6], None, "best")
    got = res.columns["epsilon"][0]
    plain = compose(["rr:epsilon=0.1,count=100"], [1e-6], None, "best").columns["epsilon"][0]
    assert got < 0.6 * plain  # Kairouz–Oh–Viswanath for 100 (0.1, 0)-DP releases: 4.77
    # never below the optimal non-adaptive composition (which the adaptive one can only exceed)
    assert _ddr_nonadaptive_delta(0.1, 100, got) <= 1e-6
    assert got <= 1.1 * 2.25  # and close to it: the non-adaptive optimum is about 2.25 here
    assert "bounded range" in res.caption


def test_every_method_is_sound_against_the_nonadaptive_optimum():
    res = compose(["exponential:epsilon=0.5,count=20"], [1e-5], None, "all")
    rows = dict(zip(res.columns["method"], res.columns["epsilon"]))
    for m in ("pld", "rdp", "optimal", "advanced", "basic"):
        assert rows[m] is not None
        assert _ddr_nonadaptive_delta(0.5, 20, rows[m]) <= 1e-5


def test_pure_epsilon_and_delta_zero_beyond_it():
    res = compose(["exponential:epsilon=0.25,count=8"], [0.0], None, "best")
    assert res.columns["epsilon"][0] == 2.0
    res = compose(["exponential:epsilon=0.25,count=8"], None, [2.0], "all")
    assert all(v in (0.0, None) for v in res.columns["delta"])


@pytest.mark.parametrize(
    "text, token",
    [
        ("exponential:epsilon=0", "epsilon=0"),
        ("exponential:epsilon=-1", "epsilon=-1"),
        ("exponential:scale=1", "'scale'"),
        ("exponential", "epsilon"),
    ],
)
def test_spec_errors_name_the_token(text, token):
    with pytest.raises(InputError, match=token):
        parse_mechanism(text)


@given(
    e1=st.floats(1e-12, 1e4),
    ratio=st.floats(1.0, 3.0),
    alpha=st.sampled_from([1.0, 1.01, 1.5, 3.0, 32.0, 1e3]),
)
def test_rdp_monotone_in_epsilon(e1, ratio, alpha):
    z1, z2 = rdp_exponential(e1, [alpha])[0], rdp_exponential(e1 * ratio, [alpha])[0]
    assert np.isfinite(z1) and z1 >= 0
    assert z2 >= z1 * (1 - 1e-9)
