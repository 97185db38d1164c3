"""DP-SGD accounting (dpcalc.engine.dpsgd.accounting): ε against dp_accounting and docs/math.md §3, properties, inverses."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dpcalc.engine.dpsgd import accounting as sgd
from dpcalc.engine.dpsgd import noise_calibration, step_budget
from dpcalc.engine.orders import DEFAULT_ORDERS, DP_ACCOUNTING_ORDERS
from dpcalc.errors import DpcalcWarning, InputError

# (q, σ, steps, δ): 24 configurations spanning q 1e-6..1, σ 0.5..100, steps 1..1e9, δ 1e-12..1e-3
CONFIGS = [
    (1e-6, 1.0, 1e9, 1e-10),
    (1e-5, 0.8, 1e7, 1e-9),
    (1e-4, 1.0, 1e7, 1e-5),
    (1e-3, 0.6, 1e5, 1e-6),
    (1e-3, 5.0, 1e6, 1e-8),
    (256 / 60000, 1.1, 14063, 1e-5),
    (0.01, 1.0, 10000, 1e-6),
    (0.01, 2.0, 100, 1e-5),
    (0.01, 0.7, 1000, 1e-5),
    (0.02, 20.0, 1e6, 1e-7),
    (0.04, 4.0, 1000, 1e-5),
    (0.04, 4.0, 10000, 1e-5),
    (0.05, 1.5, 500, 1e-3),
    (0.1, 1.0, 100, 1e-5),
    (0.1, 3.0, 5000, 1e-12),
    (0.2, 8.0, 2000, 1e-6),
    (0.3, 1.2, 10, 1e-5),
    (0.5, 2.0, 50, 1e-5),
    (0.5, 100.0, 1e6, 1e-5),
    (0.9, 5.0, 200, 1e-6),
    (1.0, 1.0, 1, 1e-5),
    (1.0, 10.0, 1000, 1e-5),
    (512 / 50000, 1.0, 4900, 1e-6),
    (1e-4, 50.0, 1e9, 1e-6),
]


def _dp_accounting_eps(q, sigma, steps, delta):
    import dp_accounting
    from dp_accounting.rdp import rdp_privacy_accountant as rdp

    acc = rdp.RdpAccountant()
    acc.compose(dp_accounting.PoissonSampledDpEvent(q, dp_accounting.GaussianDpEvent(sigma)), int(steps))
    return acc.get_epsilon(delta)


def test_end_to_end_balle_agrees_with_dp_accounting():
    q, s, t, d = (np.array(c) for c in zip(*CONFIGS))
    same_grid = sgd.epsilon_rdp(
        q, s, t, d, conversion="balle", orders=DP_ACCOUNTING_ORDERS, warn=False
    ).epsilon
    finer = sgd.epsilon_rdp(q, s, t, d, conversion="balle", warn=False).epsilon
    for i, cfg in enumerate(CONFIGS):
        theirs = _dp_accounting_eps(*cfg)
        assert same_grid[i] == pytest.approx(theirs, rel=2e-3), cfg
        # dp_accounting over-reports at fractional orders (absolute-value series); a finer grid only lowers ε
        assert same_grid[i] <= theirs * (1 + 1e-8), cfg  # (our safe-side rounding allowances: < 1e-8)
        assert finer[i] <= same_grid[i] * (1 + 1e-9), cfg


def test_formulas_end_to_end_vectors():
    q = 512 / 50000
    e6 = sgd.epsilon_rdp(q, 1.0, 4900, 1e-6, conversion="balle", orders=DP_ACCOUNTING_ORDERS)
    e5 = sgd.epsilon_rdp(q, 1.0, 4900, 1e-5, conversion="balle", orders=DP_ACCOUNTING_ORDERS)
    assert e6.epsilon == pytest.approx(5.1941, abs=1e-4) and e6.alpha == 5.5
    assert e5.epsilon == pytest.approx(4.6628, abs=1e-4) and e5.alpha == 5.1
    # replace-one: dp_accounting's noise multiplier is relative to the replace-one sensitivity (2C), so its
    # σ = 1 is dpcalc's noise multiplier 2 (docs/math.md §3.3: 8.9602)
    w = sgd.epsilon_rdp(
        q,
        2.0,
        4900,
        1e-5,
        sampling="fixed-size",
        neighbors="replace-one",
        conversion="balle",
        orders=DP_ACCOUNTING_ORDERS,
    )
    assert w.epsilon == pytest.approx(8.9602, abs=1e-4)
    # docs/math.md §3.1: the exact curve at q=0.04, σ=4, T=1000, δ=1e-5
    assert sgd.epsilon_rdp(0.04, 4.0, 1000, 1e-5, conversion="mironov").epsilon == pytest.approx(
        1.6228, abs=1e-4
    )
    assert sgd.epsilon_rdp(0.04, 4.0, 1000, 1e-5, conversion="balle").epsilon == pytest.approx(
        1.3536, abs=1e-4
    )
    opt = sgd.epsilon_rdp(0.04, 4.0, 1000, 1e-5, conversion="optimal").epsilon
    assert opt <= sgd.epsilon_rdp(0.04, 4.0, 1000, 1e-5, conversion="balle").epsilon


@pytest.mark.parametrize(
    "steps,value", [(1000, 2.294384070732055), (2500, 3.7234544506), (10000, 7.9677422345)]
)
def test_abadi_vectors(steps, value):
    e = sgd.epsilon_abadi(0.04, 4.0, steps, 1e-5)
    assert e.epsilon == pytest.approx(value, rel=1e-10)
    assert not e.valid  # q = 0.04 >= 1/(16σ) = 0.015625 (docs/math.md §3.1)
    assert sgd.abadi_rho(0.04, 4.0) == pytest.approx(1.0416666666666667e-4, rel=1e-15)


def test_abadi_validity_conditions():
    ok = sgd.epsilon_abadi(0.001, 2.0, 1e6, 1e-5)  # α* = 7.8 <= σ² log(1/(qσ)) = 24.9
    assert ok.valid
    assert not sgd.epsilon_abadi(0.001, 0.9, 1e6, 1e-5).valid  # σ < 1
    # α* − 1 beyond σ² log(1/(qσ)) (Lemma 3's λ range): few steps, tiny ρT
    assert not sgd.epsilon_abadi(0.001, 2.0, 1, 1e-5).valid


def test_bassily_vector():
    # docs/math.md §3.4: L=1, T=1000, n=10000, ε=0.5, δ=1e-6 → noise 1.3204590079144478 (the formula on
    # Bellet's 2022 slides) on the averaged gradient; with a batch of m = 100 (q = 0.01) that is the noise
    # multiplier 132.04590079144478
    e = sgd.epsilon_bassily(0.01, 132.04590079144478, 1000, 1e-6, dataset_size=10000)
    assert e.epsilon == pytest.approx(0.5, rel=1e-12)
    assert e.valid
    assert not sgd.epsilon_bassily(0.01, 13.2, 1000, 1e-6, dataset_size=10000).valid  # ε > 1


@pytest.mark.parametrize(
    "sampling,neighbors,word",
    [("fixed-size", "add-remove", "--sampling")],  # poisson/replace-one: tests/test_samplers.py
)
def test_refused_combinations(sampling, neighbors, word):
    with pytest.raises(InputError, match=word):
        sgd.epsilon_rdp(0.01, 1.0, 100, 1e-5, sampling=sampling, neighbors=neighbors)


def test_abadi_refuses_fixed_size():
    with pytest.raises(InputError, match="abadi"):
        sgd.epsilon_abadi(0.01, 1.0, 100, 1e-5, sampling="fixed-size", neighbors="replace-one")


def test_edge_warning():
    with pytest.warns(DpcalcWarning, match="highest"):
        sgd.epsilon_rdp(1e-4, 30.0, 100, 1e-8, conversion="balle")
    with warnings.catch_warnings():
        warnings.simplefilter("error", DpcalcWarning)
        zero = sgd.epsilon_rdp(1e-9, 1e4, 1, 1e-5)  # the optimal conversion certifies ε = 0: no warning
    assert zero.epsilon == 0


@settings(max_examples=12, deadline=None)
@given(
    lq=st.floats(min_value=math.log(1e-9), max_value=0.0),
    ls=st.floats(min_value=math.log(0.01), max_value=math.log(1e4)),
    lt=st.floats(min_value=0.0, max_value=math.log(1e12)),
    ld=st.floats(min_value=math.log(1e-15), max_value=math.log(0.5)),
)
def test_no_nan_anywhere(lq, ls, lt, ld):
    q, s, t, d = math.exp(lq), math.exp(ls), float(round(math.exp(lt))), math.exp(ld)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DpcalcWarning)
        for conv in ("optimal", "balle", "mironov"):
            e = sgd.epsilon_rdp(q, s, t, d, conversion=conv)
            assert not np.isnan(e.epsilon) and e.epsilon >= 0
        w = sgd.epsilon_rdp(q, s, t, d, sampling="fixed-size", neighbors="replace-one", conversion="balle")
        assert not np.isnan(w.epsilon) and w.epsilon >= 0


@settings(max_examples=8, deadline=None)
@given(
    lq=st.floats(min_value=math.log(1e-6), max_value=math.log(0.5)),
    ls=st.floats(min_value=math.log(0.3), max_value=math.log(100.0)),
    lt=st.floats(min_value=0.0, max_value=math.log(1e8)),
    f=st.floats(min_value=1.05, max_value=3.0),
)
def test_monotone_in_q_steps_and_inverse_sigma(lq, ls, lt, f):
    q, s, t = math.exp(lq), math.exp(ls), float(round(math.exp(lt)))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DpcalcWarning)
        e = sgd.epsilon_rdp(
            np.array([q, min(q * f, 1.0), q, q]),
            np.array([s, s, s, s * f]),
            np.array([t, t, math.ceil(t * f), t]),
            1e-6,
        ).epsilon
    tol = 1e-9
    assert e[1] >= e[0] * (1 - tol)
    assert e[2] >= e[0] * (1 - tol)
    assert e[3] <= e[0] * (1 + tol)


def test_calibration_round_trip_sweep():
    q = np.array([256 / 60000, 0.01, 0.001, 0.1, 0.04])
    t = np.array([14063, 10000, 100000, 100, 1000])
    target = np.array([3.0, 1.0, 8.0, 0.5, 2.0])
    rtol = 1e-4
    for conv in ("balle", "optimal"):
        sigma, e = noise_calibration.calibrate_noise(q, t, 1e-5, target, rtol=rtol, conversion=conv)
        assert np.all(np.isfinite(sigma))
        again = sgd.epsilon_rdp(q, sigma, t, 1e-5, conversion=conv, warn=False).epsilon
        np.testing.assert_allclose(again, e.epsilon, rtol=1e-9)
        assert np.all(e.epsilon <= target)
        below = sgd.epsilon_rdp(q, sigma / (1 + rtol), t, 1e-5, conversion=conv, warn=False).epsilon
        assert np.all(below > target)


def test_calibration_peers_value():
    # peer measurements: dp_accounting's RDP calibration at config A, ε = 3, δ = 1e-5 → σ = 1.0140
    sigma, _ = noise_calibration.calibrate_noise(
        256 / 60000, 14063, 1e-5, 3.0, conversion="balle", orders=DP_ACCOUNTING_ORDERS
    )
    assert sigma == pytest.approx(1.0140, abs=1e-4)


def test_calibration_abadi_closed_form():
    # ε = ρT + √(4ρT log(1/δ)) solved for ρT, then σ = q/√((1−q)ρ)
    q, t, d, target = 0.001, 10000, 1e-5, 1.0
    ld = math.log(1 / d)
    x = (math.sqrt(4 * ld + 4 * target) - math.sqrt(4 * ld)) / 2  # √(ρT)
    sigma_exact = q / math.sqrt((1 - q) * x * x / t)
    sigma, e = noise_calibration.calibrate_noise(q, t, d, target, accountant="abadi", rtol=1e-6)
    assert sigma == pytest.approx(sigma_exact, rel=2e-6)
    assert sigma >= sigma_exact * (1 - 1e-12) and e.epsilon <= target


def test_unreachable_target_gives_inf():
    # Mironov's conversion never goes below log(1/δ)/(α_max − 1) ≈ 0.0023 on the grid of orders, whatever
    # the noise: a target below it is unreachable (with the optimal conversion it is reachable: σ ≈ 1.8e9)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DpcalcWarning)
        sigma, _ = noise_calibration.calibrate_noise(0.5, 1e6, 1e-10, 1e-4, conversion="mironov")
    assert np.isposinf(sigma)


def test_max_steps_round_trip():
    q = np.array([0.04, 0.01, 1e-4, 0.5])
    s = np.array([4.0, 1.0, 2.0, 0.5])
    target = np.array([2.0, 1.0, 3.0, 0.1])
    for acc in ("rdp", "abadi"):
        with pytest.warns(DpcalcWarning, match="even one step exceeds the target for 1 row"):  # the last one
            t, e = step_budget.max_steps(q, s, 1e-5, target, accountant=acc)
        assert t[3] == 0 and np.all(t[:3] >= 1)
        assert sgd.epsilon(acc, q[3], s[3], 1, 1e-5, warn=False).epsilon > target[3]
        # the same batch as max_steps evaluates (tiny per-step RDP is only certified to ~1e-5 relative, so a
        # different batch may round differently in the last digits)
        here = sgd.epsilon(acc, q, s, np.maximum(t, 1), 1e-5, warn=False).epsilon
        nxt = sgd.epsilon(acc, q, s, t + 1, 1e-5, warn=False).epsilon
        assert np.all(here[:3] <= target[:3]) and np.all(nxt[:3] > target[:3])
        np.testing.assert_allclose(here[:3], e[:3], rtol=1e-12)


def test_better_conversion_more_iterations_claim():
    # Asoodeh's talk "Privacy Analysis of Iterative Algorithms via f-divergences": "a better conversion rule
    # gives 100 more iterations" at q=0.04, σ=4 (δ=1e-5).  The closed form with the classic conversion allows
    # far fewer steps than the exact curve with Balle's conversion.
    t_abadi, _ = step_budget.max_steps(0.04, 4.0, 1e-5, 2.0, accountant="abadi")
    t_balle, _ = step_budget.max_steps(0.04, 4.0, 1e-5, 2.0, conversion="balle")
    t_opt, _ = step_budget.max_steps(0.04, 4.0, 1e-5, 2.0, conversion="optimal")
    assert t_abadi < t_balle <= t_opt
    # the Abadi closed form is invertible: ρT = (√(log(1/δ) + ε) − √log(1/δ))²
    ld = math.log(1e5)
    assert t_abadi == math.floor((math.sqrt(ld + 2.0) - math.sqrt(ld)) ** 2 / sgd.abadi_rho(0.04, 4.0))


def test_default_orders_shape_and_sweep():
    e = sgd.epsilon_rdp(np.array([0.01, 0.02])[:, None], np.array([1.0, 2.0, 4.0]), 1000, 1e-5, warn=False)
    assert e.epsilon.shape == (2, 3)
    assert DEFAULT_ORDERS.size == 225


@pytest.mark.parametrize("conversion", ["mironov", "balle", "optimal"])
def test_calibration_meets_target_for_every_conversion(conversion):
    """The returned σ meets the target and σ/(1 + rtol) does not (every conversion, incl. mironov)."""
    import numpy as np

    q, steps, delta, target = (
        np.array([0.004267, 0.01]),
        np.array([14063.0, 1000.0]),
        1e-5,
        np.array([3.0, 1.0]),
    )
    sig, _ = noise_calibration.calibrate_noise(q, steps, delta, target, conversion=conversion)
    at = sgd.epsilon("rdp", q, sig, steps, delta, conversion=conversion, warn=False).epsilon
    below = sgd.epsilon("rdp", q, sig / (1 + 1e-4), steps, delta, conversion=conversion, warn=False).epsilon
    assert np.all(at <= target) and np.all(below > target)


def test_whole_number_parameters_are_checked_in_the_engine():
    # issue 27: steps=10.5 was accepted by the library
    from dpcalc.engine.dpsgd import accounting, noise_calibration, rate_budget
    from dpcalc.errors import InputError

    with pytest.raises(InputError, match="steps: must be a whole number"):
        accounting.epsilon("rdp", 0.01, 1.1, 10.5, 1e-5)
    with pytest.raises(InputError, match="steps: must be a whole number"):
        accounting.epsilon("rdp", 0.01, 1.1, -1, 1e-5)
    with pytest.raises(InputError, match="dataset_size: must be a whole number"):
        accounting.epsilon(
            "rdp", 0.01, 1.1, 10, 1e-5, sampling="truncated-poisson", dataset_size=100.5, max_batch_size=3
        )
    with pytest.raises(InputError, match="steps: must be a whole number"):
        noise_calibration.calibrate_noise(0.01, 10.5, 1e-5, 1.0)
    with pytest.raises(InputError, match="steps: must be a whole number"):
        rate_budget.max_sample_rate(1.1, 10.5, 1e-5, 1.0)
    with pytest.raises(InputError, match="dataset_size: must be a whole number"):
        rate_budget.max_sample_rate(1.1, 10, 1e-5, 1.0, dataset_size=1000.5)
    # whole numbers given as floats are fine, and give what the integers give
    a = accounting.epsilon("rdp", 0.01, 1.1, 10.0, 1e-5).epsilon
    assert a == accounting.epsilon("rdp", 0.01, 1.1, 10, 1e-5).epsilon
