"""The (ε, δ) filter and odometer at the advanced-composition rate (Whitehouse, Ramdas, Rogers & Wu 2023) against
a direct evaluation of their conditions (exact rationals and mpmath), the optimal composition of Kairouz, Oh &
Viswanath (a lower bound every valid bound must respect), Dwork–Rothblum–Vadhan, and a simulation."""

import math
from fractions import Fraction

import mpmath
import numpy as np
import pytest

from dpcalc.engine.adaptive import approx_dp as ad
from dpcalc.engine.composition.kov import kov_eps
from dpcalc.errors import InputError

mpmath.mp.dps = 50


def _mp(x):
    x = Fraction(x)
    return mpmath.mpf(x.numerator) / x.denominator


def _rule(eps_i, delta_i, eps_budget, delta_budget, tail_fraction=0.5, halt=False, with_basic=False):
    """The filter's condition evaluated directly, step by step: exact sums, the rate in 50-digit mpmath."""
    tail, rest = ad.split_delta(delta_budget, tail_fraction)
    lg = -mpmath.log(_mp(tail))
    v, t, s, stopped, out = Fraction(0), Fraction(0), Fraction(0), False, []
    for e, d in zip(eps_i, delta_i, strict=True):
        v2, t2, s2 = v + Fraction(float(e)) ** 2, t + Fraction(float(e)), s + Fraction(float(d))
        rate_ok = mpmath.sqrt(2 * lg * _mp(v2)) + _mp(v2) / 2 <= eps_budget
        basic_ok = with_basic and t2 <= Fraction(eps_budget)
        ok = not stopped and (rate_ok or basic_ok) and s2 <= Fraction(rest)
        if ok:
            v, t, s = v2, t2, s2
        elif halt:
            stopped = True
        out.append(ok)
    return np.array(out, dtype=bool)


def test_split_keeps_within_delta():
    for d in (1e-6, 1e-9, 0.3):
        for f in (0.1, 0.5, 0.9, 1.0):
            tail, rest = ad.split_delta(d, f)
            assert Fraction(tail) + Fraction(rest) <= Fraction(d)
            assert tail == pytest.approx(f * d, rel=1e-15)


@pytest.mark.parametrize("with_basic", [False, True])
@pytest.mark.parametrize("halt", [False, True])
def test_filter_is_the_theorem_condition(halt, with_basic):
    rng = np.random.default_rng(5)
    for _ in range(6):
        n = int(rng.integers(40, 300))
        eps = np.where(rng.random(n) < 0.2, rng.uniform(0.2, 0.8, n), rng.uniform(0.0, 0.1, n))
        delta = np.where(rng.random(n) < 0.3, rng.uniform(0, 2e-8, n), 0.0)
        budget, dtot = float(rng.uniform(0.5, 3.0)), float(10 ** rng.uniform(-9, -5))
        got = ad.filter_runs(eps, delta, budget, dtot, halt=halt, with_basic=with_basic)
        np.testing.assert_array_equal(got, _rule(eps, delta, budget, dtot, halt=halt, with_basic=with_basic))
    # exact ties of basic composition: four steps of 0.25 (all exact doubles) fit ε = 1, the rate admits none
    steps = np.full(6, 0.25)
    assert ad.filter_runs(steps, 0.0, 1.0, 1e-6, with_basic=with_basic).sum() == (4 if with_basic else 0)


def test_rate_and_budget_against_mpmath():
    for eps, tail in ((1.0, 5e-7), (0.1, 1e-10), (5.0, 0.01), (20.0, 1e-6)):
        lg = -mpmath.log(mpmath.mpf(tail))
        exact_v = 2 * (mpmath.sqrt(lg + eps) - mpmath.sqrt(lg)) ** 2  # root of √(2LV) + V/2 = ε
        assert mpmath.sqrt(2 * lg * exact_v) + exact_v / 2 == pytest.approx(eps, rel=1e-40)
        got = ad.sum_sq_budget(eps, tail)
        assert _mp(got) <= exact_v
        assert got == pytest.approx(float(exact_v), rel=1e-14)
        for v in (1e-6, 0.01, 1.0, float(got)):
            ref = mpmath.sqrt(2 * lg * _mp(v)) + _mp(v) / 2
            r = float(ad.advanced_rate(v, tail))
            assert _mp(r) >= ref
            assert r == pytest.approx(float(ref), rel=1e-14)


@pytest.mark.parametrize("with_basic", [False, True])
@pytest.mark.parametrize("eps0", [0.01, 0.05, 0.2, 0.5])
def test_filter_never_beats_optimal_composition(eps0, with_basic):
    """A valid filter cannot admit k steps of ε0 within (ε, δ) if the optimal non-adaptive composition of those k
    steps (Kairouz–Oh–Viswanath) already needs more than ε at δ."""
    for budget in (0.5, 1.0, 3.0):
        for delta in (1e-6, 1e-9):
            for delta0 in (0.0, 1e-10):
                runs = ad.filter_runs(
                    np.full(3000, eps0), delta0, budget, delta, halt=True, with_basic=with_basic
                )
                k = int(runs.sum())
                if k:
                    assert kov_eps(eps0, delta0, k, delta) <= budget


@pytest.mark.parametrize("eps0", [0.02, 0.1, 0.5])
def test_odometer_never_beats_optimal_composition(eps0):
    n = 1500
    steps = np.full(n, eps0)
    for delta in (1e-6, 1e-9):
        plain = ad.odometer_epsilon(steps, 0.0, delta, v_target=100 * eps0**2)
        both = ad.odometer_epsilon(steps, 0.0, delta, v_target=100 * eps0**2, with_basic=True)
        assert np.all(both <= plain) and np.all(both <= np.cumsum(steps) * (1 + 1e-15))
        for k in (1, 10, 100, 1000, n):
            assert both[k - 1] >= kov_eps(eps0, 0.0, k, delta)


def test_filter_admits_at_least_advanced_composition():
    """Same constant in the √ term as Dwork–Rothblum–Vadhan (with δ' = δ_tail) and ε²/2 ≤ ε(e^ε − 1) in the
    linear one: the filter admits at least the k that DRV certifies for fixed, identical steps."""
    for eps0 in (0.01, 0.1, 0.3, 1.0):
        for budget in (0.5, 1.0, 4.0):
            delta = 1e-6
            tail, _ = ad.split_delta(delta)
            ks = np.arange(1, 20001)
            drv = math.sqrt(2 * math.log(1 / tail)) * np.sqrt(ks) * eps0 + ks * eps0 * math.expm1(eps0)
            k_drv = int(np.sum(drv <= budget * (1 - 1e-12)))
            k_filter = int(ad.filter_runs(np.full(20000, eps0), 0.0, budget, delta, halt=True).sum())
            assert k_filter >= k_drv


def test_monotone_in_the_budget():
    rng = np.random.default_rng(9)
    eps = rng.uniform(0.0, 0.2, 500)
    counts = [ad.filter_runs(eps, 0.0, b, 1e-6, halt=True).sum() for b in np.linspace(0.2, 6.0, 30)]
    assert np.all(np.diff(counts) >= 0) and counts[-1] > counts[0]
    counts = [ad.filter_runs(eps, 0.0, 2.0, d, halt=True).sum() for d in 10.0 ** np.arange(-12, -1)]
    assert np.all(np.diff(counts) >= 0) and counts[-1] > counts[0]
    v = [ad.sum_sq_budget(b, 1e-6) for b in np.linspace(0.1, 10, 50)]
    assert np.all(np.diff(v) > 0)


def test_where_basic_composition_is_smaller():
    """For k identical steps the rate √(2Lkε0²) + kε0²/2 is below basic kε0 exactly when k > 2L/(1 − ε0/2)²
    (L = log(1/δ_tail)); below that, basic composition is the better bound."""
    delta = 1e-6
    tail, _ = ad.split_delta(delta)
    lg = math.log(1 / tail)
    for eps0 in (0.01, 0.1, 0.5, 1.0, 1.5):
        k_star = 2 * lg / (1 - eps0 / 2) ** 2
        ks = np.arange(1, 400)
        rate = ad.filter_epsilon(np.full(399, eps0), 0.0, delta)
        basic = ks * eps0
        away = np.abs(ks - k_star) > 1e-6 * k_star
        np.testing.assert_array_equal((rate < basic)[away], (ks > k_star)[away])


def test_mixture_bound_and_rho_against_mpmath():
    for tail, v_target in ((5e-7, 1.0), (1e-9, 0.05), (0.01, 10.0)):
        lg = -mpmath.log(mpmath.mpf(tail))
        x = mpmath.findroot(lambda t, lg=lg: t - mpmath.log1p(t) - 2 * lg, 2 * lg + mpmath.log(2 * lg))
        rho = float(ad.mixture_rho(v_target, tail))
        assert rho == pytest.approx(float(v_target / x), rel=1e-12)

        def bound(v, r, tail=tail):
            w = _mp(v) + _mp(r)
            return _mp(v) / 2 + mpmath.sqrt(2 * w * mpmath.log(mpmath.sqrt(w / _mp(r)) / mpmath.mpf(tail)))

        for v in (0.0, 0.3 * v_target, v_target, 7 * v_target):
            got = float(ad.mixture_bound(v, tail, rho))
            assert _mp(got) >= bound(v, rho)
            assert got == pytest.approx(float(bound(v, rho)), rel=1e-14)
        # the chosen ρ is the best at v_target
        best = bound(v_target, rho)
        assert best <= bound(v_target, rho * 1.1) and best <= bound(v_target, rho / 1.1)


def test_odometer_holds_at_all_times_in_simulation():
    """Randomized-response steps (the worst case for pure ε-DP; Kairouz–Oh–Viswanath Thm 2.1) with ε_m chosen
    from the loss so far: the fraction of paths whose loss ever crosses the odometer is below δ_tail."""
    rng = np.random.default_rng(2026)
    paths, steps, tail = 20000, 300, 0.05
    loss = np.zeros(paths)
    v = np.zeros(paths)
    crossed = np.zeros(paths, dtype=bool)
    rho = float(ad.mixture_rho(1.0, tail))
    for _ in range(steps):
        eps = np.where(loss > 0.5, 0.15, 0.05)  # adaptive: larger steps while the loss is high
        up = rng.random(paths) < 1 / (1 + np.exp(-eps))
        loss += np.where(up, eps, -eps)
        v += eps * eps
        crossed |= loss > ad.mixture_bound(v, tail, rho)
    assert crossed.mean() < tail / 2


def test_filter_with_basic_holds_in_simulation():
    """The pathwise rule "rate or basic" with adaptively chosen steps (large while the loss is high) on
    randomized-response steps: the loss at the end exceeds ε on a fraction of paths below δ_tail (0.006 here;
    a budget V* twice too large gives 0.05, four times 0.10)."""
    rng = np.random.default_rng(77)
    paths, steps, budget, tail = 20000, 400, 1.0, 0.05
    v_star = ad.sum_sq_budget(budget, tail)
    loss, v, total = np.zeros(paths), np.zeros(paths), np.zeros(paths)
    for _ in range(steps):
        eps = np.where(loss > 0.3, 0.1, 0.02)
        run = (v + eps * eps <= v_star) | (total + eps <= budget)
        up = rng.random(paths) < 1 / (1 + np.exp(-eps))
        loss += np.where(run, np.where(up, eps, -eps), 0.0)
        v += np.where(run, eps * eps, 0.0)
        total += np.where(run, eps, 0.0)
    assert (loss > budget).mean() < tail


def test_delta_accounting():
    eps = np.full(10, 0.1)
    deltas = np.full(10, 1e-7)
    tail, rest = ad.split_delta(1e-6)  # rest = 5e-7: five steps of 1e-7
    assert ad.filter_runs(eps, deltas, 10.0, 1e-6).sum() == 5
    odo = ad.odometer_epsilon(eps, deltas, 1e-6, rho=1.0)
    assert np.all(np.isfinite(odo[:5])) and np.all(np.isinf(odo[5:]))
    fe = ad.filter_epsilon(eps, deltas, 1e-6)
    assert np.all(np.isfinite(fe[:5])) and np.all(np.isinf(fe[5:]))


def test_inputs_are_checked():
    with pytest.raises(InputError):
        ad.filter_runs([0.1, -0.1], 0.0, 1.0, 1e-6)
    with pytest.raises(InputError):
        ad.filter_runs([0.1], [0.0, 0.0], 1.0, 1e-6)
    with pytest.raises(InputError):
        ad.filter_runs([0.1], 0.0, 1.0, 1.5)
    with pytest.raises(InputError):
        ad.odometer_epsilon([0.1], 0.0, 1e-6)  # neither ρ nor v_target
    with pytest.raises(InputError):
        ad.odometer_epsilon([0.1], 0.0, 1e-6, rho=1.0, v_target=1.0)
