"""The μ-GDP filter and odometers (Smith & Thakurta 2022) against exact rational brute force, mpmath and dp_accounting."""

from fractions import Fraction

import mpmath
import numpy as np
import pytest
from dp_accounting.pld import privacy_loss_distribution as pldm

from dpcalc.engine.adaptive import gdp
from dpcalc.errors import InputError

mpmath.mp.dps = 50


def _bruteforce(mus, budget, halt=False):
    """The filter's rule in exact rational arithmetic, one step at a time."""
    b2 = Fraction(float(budget)) ** 2
    spent, stopped, out = Fraction(0), False, []
    for m in mus:
        c = Fraction(float(m)) ** 2
        ok = not stopped and spent + c <= b2
        if ok:
            spent += c
        elif halt:
            stopped = True
        out.append(ok)
    return np.array(out, dtype=bool)


def _mp_delta(eps, mu):
    eps, mu = mpmath.mpf(eps), mpmath.mpf(mu)
    return mpmath.ncdf(-eps / mu + mu / 2) - mpmath.exp(eps) * mpmath.ncdf(-eps / mu - mu / 2)


def _mp_eps(delta, mu):
    """ε of μ-GDP at δ: bisection on the exact profile (decreasing in ε) at 50 digits."""
    lo, hi = mpmath.mpf(0), mpmath.mpf(mu) ** 2 / 2 + mpmath.mpf(mu) * 40
    if _mp_delta(0, mu) <= delta:
        return mpmath.mpf(0)
    for _ in range(200):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if _mp_delta(mid, mu) > delta else (lo, mid)
    return hi


def _cases():
    rng = np.random.default_rng(20260501)
    yield np.array([0.5] * 5), 1.0  # exact tie: four run
    yield np.array([0.6, 0.8, 0.1, 0.5, 0.3]), 1.0  # fl(0.6)² + fl(0.8)² > 1 exactly
    yield np.full(101, 0.1), 1.0  # fl(0.1)² · 100 > 1 exactly: the 100th step is refused
    yield np.full(17, 0.25), 1.0  # 16 run exactly
    # at the edge, where plain floating-point sums of fl(μ²) decide wrongly in either direction
    yield np.full(24, 0.28031973111511554), 1.3443662030884167  # 23 fit exactly (plain floats: 22)
    yield np.full(28, 0.11487182572383518), 0.6078445670264402  # 27 fit exactly (plain floats: 28)
    for _ in range(6):
        n = int(rng.integers(50, 400))
        big = rng.uniform(0.2, 0.9, n)
        small = rng.uniform(0.0, 0.05, n)
        mus = np.where(rng.random(n) < 0.3, big, small)
        yield mus, float(rng.uniform(0.5, 2.0))
    # long, to exercise the growing windows and many refusals after admitted steps
    n = 4000
    yield np.where(rng.random(n) < 0.5, rng.uniform(0.0, 0.02, n), rng.uniform(0.1, 0.3, n)), 1.5


@pytest.mark.parametrize("halt", [False, True])
def test_filter_is_exactly_the_rule(halt):
    for mus, budget in _cases():
        got = gdp.gdp_filter(mus, budget, halt=halt)
        np.testing.assert_array_equal(got, _bruteforce(mus, budget, halt))


def test_filter_continues_after_refusal_and_halts_when_asked():
    mus = [0.9, 0.9, 0.3, 0.2]  # 0.81 runs, 0.81 does not fit, 0.09 and 0.04 do
    assert gdp.gdp_filter(mus, 1.0).tolist() == [True, False, True, True]
    assert gdp.gdp_filter(mus, 1.0, halt=True).tolist() == [True, False, False, False]
    # the steps that ran stay within the budget, exactly
    ran = np.asarray(mus)[gdp.gdp_filter(mus, 1.0)]
    assert sum(Fraction(float(m)) ** 2 for m in ran) <= 1


def test_odometer_is_the_exact_running_mu_rounded_up():
    rng = np.random.default_rng(7)
    mus = rng.uniform(0.0, 0.5, 300)
    got = gdp.gdp_odometer(mus)
    exact = np.cumsum([Fraction(float(m)) ** 2 for m in mus])
    for g, s in zip(got, exact, strict=True):
        ref = mpmath.sqrt(mpmath.mpf(s.numerator) / s.denominator)
        assert mpmath.mpf(float(g)) >= ref
        assert mpmath.mpf(float(g)) <= ref * (1 + mpmath.mpf("5e-16"))
    assert gdp.gdp_odometer([0.5] * 4)[-1] == 1.0  # exactly representable: not bumped
    assert gdp.gdp_odometer([0.6, 0.8])[-1] == np.nextafter(1.0, 2.0)  # exact value just above 1


@pytest.mark.parametrize("delta", [1e-5, 1e-9])
def test_odometer_epsilon_is_the_exact_gdp_conversion(delta):
    mus = np.array([0.3, 0.1, 0.7, 0.25, 1.2])
    mu = gdp.gdp_odometer(mus)
    got = gdp.gdp_epsilon(delta, mu)
    for g, m in zip(got, mu, strict=True):
        ref = _mp_eps(delta, float(m))
        assert mpmath.mpf(float(g)) >= ref
        assert float(g) == pytest.approx(float(ref), rel=1e-12)


def test_fixed_schedule_is_exact_gaussian_composition():
    """On a fixed schedule the running μ is that of one Gaussian with σ_eff = 1/√Σσ_i⁻² (Balle & Wang 2018,
    Thm 8): against mpmath at σ_eff and dp_accounting's composed PLD (a pessimistic discretisation, so a
    bracket: the exact δ(ε) ≤ PLD's δ(ε) ≤ the exact δ(ε − k·h) + k·(truncated tail mass))."""
    sigmas = np.array([1.5, 2.0, 3.0, 0.9])
    mu = float(gdp.gdp_odometer(gdp.mus_from_sigmas(sigmas))[-1])
    sigma_eff = 1.0 / mpmath.sqrt(sum(1 / mpmath.mpf(s) ** 2 for s in sigmas))
    assert mu == pytest.approx(float(1 / sigma_eff), rel=1e-15)
    h, tail = 1e-4, 1e-15
    pld = None
    for s in sigmas:
        one = pldm.from_gaussian_mechanism(
            float(s),
            value_discretization_interval=h,
            pessimistic_estimate=True,
            log_mass_truncation_bound=-50,
        )
        pld = one if pld is None else pld.compose(one)
    for eps in (0.0, 0.5, 1.0, 3.0):
        ours = float(gdp.gdp_delta(eps, mu))
        exact = _mp_delta(eps, 1 / sigma_eff)
        assert mpmath.mpf(ours) >= exact
        assert ours == pytest.approx(float(exact), rel=1e-12)
        theirs = pld.get_delta_for_epsilon(eps)
        assert ours <= theirs <= float(_mp_delta(eps - len(sigmas) * h, 1 / sigma_eff)) + len(sigmas) * tail


@pytest.mark.parametrize(("eps", "delta"), [(0.5, 1e-5), (1.0, 1e-5), (3.0, 1e-8), (0.0, 0.01), (8.0, 1e-10)])
def test_mu_of_round_trips(eps, delta):
    mu = float(gdp.mu_of(eps, delta))
    assert _mp_delta(eps, mu) <= delta  # the safe side: μ-GDP really is (ε, δ)-DP
    assert _mp_delta(eps, mu * (1 + 1e-12)) > delta  # and μ is the largest such, to 1e-12
    assert float(gdp.gdp_delta(eps, mu)) == pytest.approx(delta, rel=1e-9)
    assert float(gdp.gdp_epsilon(delta, mu)) == pytest.approx(eps, rel=1e-9, abs=1e-12)


def test_ladder_shares_are_below_their_exact_values():
    """δ_j ≤ 6δ/(π² j²) for every rung (checked on a sample up to j = 10⁸), whose sum over j ≥ 1 is δ."""
    rng = np.random.default_rng(3)
    js = np.concatenate([np.arange(1, 101), rng.integers(101, 10**8, 200)])
    for delta in (1e-6, 0.3):
        shares = gdp.ladder_delta(js.astype(float), delta)
        for k, got in zip(js, shares, strict=True):
            ref = 6 * mpmath.mpf(delta) / (mpmath.pi**2 * int(k) ** 2)
            assert mpmath.mpf(float(got)) <= ref
            assert float(got) == pytest.approx(float(ref), rel=1e-14)
    assert mpmath.nsum(lambda k: 6 / (mpmath.pi**2 * k**2), [1, mpmath.inf]) == pytest.approx(1, rel=1e-40)


def test_ladder_odometer_levels_and_values():
    rng = np.random.default_rng(11)
    mus = rng.uniform(0.0, 0.4, 120)
    delta, first, ratio = 1e-6, 0.3, 2.0
    out = gdp.gdp_odometer_epsilon(mus, delta, first_mu=first, ratio=ratio)
    sums = np.cumsum([Fraction(float(m)) ** 2 for m in mus])
    for n in (0, 5, 30, 119):
        # the level by brute force: the smallest j with Σμ² ≤ μ_j² (exact rationals, the rung as a double)
        j = 1
        while sums[n] > Fraction(float(gdp.ladder_rung(j, first, ratio))) ** 2:
            j += 1
        assert out.level[n] == j
        rung = float(gdp.ladder_rung(j, first, ratio))
        share = 6 * mpmath.mpf(delta) / (mpmath.pi**2 * j**2)
        ref = _mp_eps(share, rung)
        assert mpmath.mpf(float(out.epsilon[n])) >= ref
        assert float(out.epsilon[n]) == pytest.approx(float(ref), rel=1e-9)
        # never below the filter's ε at the running μ with the whole δ
        assert out.epsilon[n] >= gdp.gdp_epsilon(delta, gdp.gdp_odometer(mus)[n])
    assert np.all(np.diff(out.epsilon) >= 0)


def test_inputs_are_checked():
    with pytest.raises(InputError):
        gdp.gdp_filter([0.1, -0.2], 1.0)
    with pytest.raises(InputError):
        gdp.gdp_filter([0.1], 0.0)
    with pytest.raises(InputError):
        gdp.gdp_odometer_epsilon([0.1], 1.0, first_mu=0.5)
    with pytest.raises(InputError):
        gdp.gdp_odometer_epsilon([0.1], 1e-5, first_mu=0.5, ratio=1.0)
    with pytest.raises(InputError):
        gdp.mus_from_sigmas([1.0, 0.0])
