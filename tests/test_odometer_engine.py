"""The odometer and filter mathematics (dpcalc.engine.adaptive.odometer) against docs/math.md §6 and brute force."""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dpcalc.engine.adaptive import odometer as o
from dpcalc.errors import InputError

Q, SIGMA, STEPS_PER_EPOCH, DELTA = 0.01024, 1.0, 98, 1e-6


def dp_accounting_sgm(alphas):
    """Per-step Poisson-SGM RDP from dp_accounting (an independent implementation; test-only)."""
    from dp_accounting.rdp import rdp_privacy_accountant as r

    return np.asarray(r._compute_rdp_poisson_subsampled_gaussian(Q, SIGMA, np.asarray(alphas)), dtype=float)


def mpmath_zeta_opt(alpha, eps, delta):
    """ζ_α^ε(δ) = ε + log M/(α − 1), M minimised over p by a root of dM/dp (docs/math.md §1.3; 50 digits)."""
    import mpmath as mp

    with mp.workdps(50):
        a, e, d = mp.mpf(alpha), mp.mpf(eps), mp.mpf(delta)
        E = mp.e**e

        def M(p):
            return p**a * (p - d) ** (1 - a) + (1 - p) ** a * (E - p + d) ** (1 - a)

        def dM(p):
            return (
                a * p ** (a - 1) * (p - d) ** (1 - a)
                + (1 - a) * p**a * (p - d) ** (-a)
                - a * (1 - p) ** (a - 1) * (E - p + d) ** (1 - a)
                - (1 - a) * (1 - p) ** a * (E - p + d) ** (-a)
            )

        p = mp.findroot(dM, (5 * d, 50 * d), solver="anderson")
        return e + mp.log(M(p)) / (a - 1)


def brute_force_bound(alphas, rdp, delta, gam):
    """Eq. (5) with the smallest level found by walking up the ladder (plain Python floats)."""
    m = len(alphas)
    best = math.inf
    for a, r, g in zip(alphas, rdp, gam):
        if not math.isfinite(r):
            continue
        f = 1
        while r > g * 2.0 ** (f - 1):
            f += 1
        best = min(best, g * 2.0 ** (f - 1) + math.log(2 * m * f * f / delta) / (a - 1))
    return best


def test_orders_match_the_paper_and_the_code():
    assert len(o.PAPER_ORDERS) == 38 and o.PAPER_ORDERS[0] == 1.25 and o.PAPER_ORDERS[35] == 10.0
    assert list(o.PAPER_ORDERS[-2:]) == [16.0, 32.0]
    assert len(o.CODE_ORDERS) == 34 and o.CODE_ORDERS[0] == 2.25 and o.CODE_ORDERS[31] == 10.0


@pytest.mark.parametrize(
    "epochs, gamma_kind, want, want_alpha, want_level",
    [
        (20, "code", 4.6550, 7.75, 2),  # docs/math.md §6.3: the paper's 4.7 at epoch 20
        (6, "code", 3.2047, 8.5, 1),
        (20, "paper", 4.8093, None, None),
        (6, "paper", 4.3721, None, None),
    ],
)
def test_paper_odometer_numbers_code_orders(epochs, gamma_kind, want, want_alpha, want_level):
    a = o.CODE_ORDERS
    r = dp_accounting_sgm(a) * STEPS_PER_EPOCH * epochs
    b = o.odometer_bound(a, r, DELTA, gamma_kind)
    assert round(float(b.value), 4) == want
    if want_alpha is not None:
        assert float(b.alpha) == want_alpha and float(b.level) == want_level


def test_plain_rdp_reproduces_5_7624_with_mironov():
    from dpcalc.engine.conversion.methods import eps_from_curve

    for a in (o.CODE_ORDERS, o.PAPER_ORDERS):
        r = dp_accounting_sgm(a) * STEPS_PER_EPOCH * 50
        b = eps_from_curve(a, r, DELTA, method="mironov")
        assert round(float(b.value), 4) == 5.7624 and float(b.alpha) == 5.75


def test_bound_matches_brute_force_on_the_paper_run():
    for a in (o.CODE_ORDERS, o.PAPER_ORDERS):
        per = dp_accounting_sgm(a)
        for kind in o.GAMMAS:
            g = o.gamma(a, DELTA, kind)
            for epochs in range(1, 51):
                r = per * STEPS_PER_EPOCH * epochs
                want = brute_force_bound(list(a), list(r), DELTA, list(g))
                got = float(o.odometer_bound(a, r, DELTA, kind).value)
                assert want <= got <= want * (1 + 1e-15)


def test_vectorised_over_leading_axes():
    a = o.PAPER_ORDERS
    r = np.outer(np.arange(1, 7), dp_accounting_sgm(a) * 98).reshape(2, 3, a.size)
    b = o.odometer_bound(a, r, DELTA)
    assert b.value.shape == (2, 3)
    for i in range(2):
        for j in range(3):
            assert b.value[i, j] == o.odometer_bound(a, r[i, j], DELTA).value


rdp_values = st.floats(min_value=0.0, max_value=1e6, allow_nan=False, allow_infinity=False)


@settings(max_examples=60, deadline=None)
@given(st.lists(rdp_values, min_size=1, max_size=38), st.floats(1e-12, 0.5), st.sampled_from(o.GAMMAS))
def test_level_is_the_smallest_rung_above_the_spend(values, delta, kind):
    a = o.PAPER_ORDERS[: len(values)]
    r = np.array(values)
    g = o.gamma(a, delta, kind)
    f = o.odometer_level(r, g)
    top = o.ladder(g, f)
    assert np.all(r <= top)
    below = o.ladder(g, np.maximum(f - 1, 1))
    assert np.all((f == 1) | (r > below))
    want = brute_force_bound(list(a), values, delta, list(g))
    got = float(o.odometer_bound(a, r, delta, kind).value)
    assert want <= got <= want * (1 + 1e-15)


@settings(max_examples=40, deadline=None)
@given(st.lists(st.lists(rdp_values, min_size=5, max_size=5), min_size=1, max_size=20), st.floats(1e-10, 0.1))
def test_running_bound_never_decreases_and_respects_the_floor(steps, delta):
    a = np.array([1.5, 2.0, 4.0, 8.0, 32.0])
    g = o.gamma(a, delta)
    floor = np.min(g + np.log(2 * a.size / delta) / (a - 1))
    spent = np.zeros(a.size)
    last = 0.0
    for s in steps:
        spent = spent + np.array(s)
        v = float(o.odometer_bound(a, spent, delta).value)
        assert v >= last and v >= floor
        last = v


def test_unbounded_orders_are_skipped_and_all_unbounded_is_inf():
    a = np.array([2.0, 4.0, 8.0])
    b = o.odometer_bound(a, np.array([0.1, np.inf, np.inf]), 1e-5)
    assert float(b.alpha) == 2.0 and np.isfinite(b.value)
    b = o.odometer_bound(a, np.array([np.inf, np.inf, np.inf]), 1e-5)
    assert np.isinf(b.value) and np.isnan(b.alpha)


@pytest.mark.parametrize("delta", [0.0, 1.0, -1e-3, float("nan")])
def test_delta_outside_0_1_is_an_input_error(delta):
    with pytest.raises(InputError, match="--delta"):
        o.odometer_bound(o.PAPER_ORDERS, np.zeros(38), delta)


@pytest.mark.parametrize("alphas", [[], [1.0, 2.0], [2.0, 2.0], [2.0, np.inf]])
def test_bad_orders_are_input_errors(alphas):
    with pytest.raises(InputError, match="--alphas"):
        o.check_orders(alphas)


# -- filters ------------------------------------------------------------------------------------
def test_paper_filter_budget_vector():
    # docs/math.md §6.1: α = 10, ε = 1, δ = 1e-5 gives ε_RDP = −0.2792 (Lécuyer/Mironov form);
    # §1.5: ε Mironov at (10, 0.5) is 1.7792139405522476, so the exact value is 1 − 1.2792139405522476
    exact = 1.0 - (1.7792139405522476 - 0.5)
    b = o.filter_budgets([10.0], 1.0, 1e-5, rule="paper")
    assert b[0] <= exact and b[0] == pytest.approx(exact, rel=1e-14)


def test_union_budgets_with_one_order_are_the_section_1_4_values():
    # with |Λ| = 1 the union bound costs nothing: the four DP → RDP values of docs/math.md §1.4
    mir = o.filter_budgets([10.0], 1.0, 1e-5, rule="union", conversion="mironov")[0]
    balle = o.filter_budgets([10.0], 1.0, 1e-5, rule="union", conversion="balle")[0]
    asoodeh = o.filter_budgets([10.0], 1.0, 1e-5, rule="union", conversion="asoodeh")[0]
    opt = o.filter_budgets([10.0], 1.0, 1e-5, rule="union", conversion="optimal")[0]
    assert mir == pytest.approx(-0.2792139406, abs=1e-10)
    assert balle == pytest.approx(0.0819893632, abs=1e-10)
    assert asoodeh == pytest.approx(0.0819893632, abs=1e-10)  # max(g, f) = g here
    exact = float(mpmath_zeta_opt(10, 1, "1e-5"))
    assert exact == pytest.approx(0.1253827486, abs=1e-10)  # the §1.4 vector
    assert 0.0819893632 - 1e-10 <= opt <= exact  # never above the exact ζ_opt


def test_union_budgets_pay_log_of_the_number_of_orders():
    a = o.PAPER_ORDERS
    got = o.filter_budgets(a, 2.0, 1e-6, rule="union", conversion="mironov")
    want = 2.0 - np.log(a.size / 1e-6) / (a - 1)
    assert np.all(got <= want) and np.allclose(got, want, rtol=1e-14, atol=0)
    paper = o.filter_budgets(a, 2.0, 1e-6, rule="paper")
    assert np.all(got < paper)  # the union bound is the price of validity
    for conv in ("balle", "asoodeh", "optimal"):
        tighter = o.filter_budgets(a, 2.0, 1e-6, rule="union", conversion=conv)
        assert np.all(tighter >= got)


@settings(max_examples=40, deadline=None)
@given(
    st.lists(st.lists(st.floats(0.0, 0.5), min_size=4, max_size=4), min_size=1, max_size=30),
    st.sampled_from(["union", "paper"]),
)
def test_filter_matches_a_plain_loop_and_keeps_one_order_within_budget(steps, rule):
    a = np.array([2.0, 4.0, 8.0, 16.0])
    budgets = o.filter_budgets(a, 3.0, 1e-3, rule=rule, conversion="mironov")
    curves = np.array(steps)
    ran = o.run_filter(curves, budgets)
    spent = [0.0] * 4
    for i, c in enumerate(steps):
        ok = any(spent[k] + c[k] <= budgets[k] for k in range(4))
        assert ran[i] == ok
        if ok:
            spent = [spent[k] + c[k] for k in range(4)]
    if ran.any():  # Cor. 1's invariant: some order ends within its budget
        assert any(spent[k] <= budgets[k] for k in range(4))


def test_accountant_with_filter_counts_only_steps_that_ran():
    a = np.array([2.0, 4.0, 8.0])
    acct = o.Accountant(a, 1e-3, conversion="mironov", filter_epsilon=3.0)
    big = np.full(3, 10.0)
    small = np.full(3, 0.01)
    rows = [acct.add(c) for c in (small, big, small)]
    assert [r["run"] for r in rows] == [True, False, True]
    assert np.allclose(acct.spent, 0.02, rtol=1e-12)


# -- soundness against the exact privacy loss of Gaussian compositions --------------------------
def exact_gaussian_delta(mu, eps):
    """δ(ε) of a composition of Gaussian mechanisms with Σ Δ²/σ² = 2μ (its privacy loss is N(μ, 2μ)):
    Balle & Wang 2018 Thm 8 (docs/math.md §2.6), an independent closed form."""
    from scipy.special import ndtr

    s = math.sqrt(2 * mu)
    return float(ndtr(-eps / s + s / 2) - math.exp(eps) * ndtr(-eps / s - s / 2))


@settings(max_examples=40, deadline=None)
@given(st.lists(st.floats(0.3, 50.0), min_size=1, max_size=15), st.sampled_from([1e-3, 1e-6, 1e-9]))
def test_odometer_and_filter_bounds_hold_for_gaussian_runs(sigmas, delta):
    a = o.PAPER_ORDERS
    acct = o.Accountant(a, delta, conversion="mironov")
    filt = o.Accountant(a, delta, conversion="optimal", filter_epsilon=2.0)
    mu = mu_f = 0.0
    for s in sigmas:
        curve = a / (2 * s * s)
        row = acct.add(curve)
        mu += 1 / (2 * s * s)
        assert exact_gaussian_delta(mu, row["epsilon"]) <= delta  # the odometer's (ε, δ) holds
        if filt.add(curve)["run"]:
            mu_f += 1 / (2 * s * s)
        if mu_f > 0:
            assert exact_gaussian_delta(mu_f, 2.0) <= delta  # the filter's (2, δ) holds


# -- the plain RDP column, computed incrementally (dpcalc.engine.adaptive.plain) ------------------
def _curves(kind, n, alphas):
    from dpcalc.commands.odometer.command import Curves
    from dpcalc.input.spec import parse_mechanism

    specs = {
        "gaussians": [f"gaussian:sigma={20 + i % 7}" for i in range(n)],
        "mixed": [
            ["laplace:scale=50", "sgm:q=0.01,sigma=1,count=10", "rr:epsilon=0.01", "gaussian:sigma=40"][i % 4]
            for i in range(n)
        ],
        "jumps": [("gaussian:sigma=3" if i % 50 == 49 else "laplace:scale=400") for i in range(n)],
    }[kind]
    cv = Curves(alphas)
    return np.array([cv.of_spec(parse_mechanism(s)) for s in specs])


@pytest.mark.parametrize("kind", ["gaussians", "mixed", "jumps"])
@pytest.mark.parametrize("batch", [1, 7, 300])
def test_plain_bound_equals_eps_from_curve_row_by_row(kind, batch):
    """The same floats, orders and edge flags as the exact conversion at every order, whatever the batches."""
    from dpcalc.engine.adaptive.plain import PlainBound
    from dpcalc.engine.conversion import methods as conversions

    a = o.PAPER_ORDERS
    n = 90 if batch == 1 else 600
    sums = o.running_sums(_curves(kind, n, a))
    p = PlainBound(a, 1e-6)
    got = [p.rows(sums[s : s + batch]) for s in range(0, n, batch)]
    value = np.concatenate([g.value for g in got])
    alpha = np.concatenate([g.alpha for g in got])
    edge = np.concatenate([g.at_edge for g in got])
    rows = np.arange(0, n, 3 if batch == 1 else 11)
    ref = conversions.eps_from_curve(a, sums[rows], 1e-6, method="optimal")
    assert value[rows].tolist() == ref.value.tolist()
    assert np.array_equal(alpha[rows], ref.alpha)
    assert edge[rows].tolist() == ref.at_edge.tolist()


def test_add_many_gives_the_rows_of_add_one_by_one_and_the_old_per_row_formula():
    from dpcalc.engine.conversion import methods as conversions

    a = o.PAPER_ORDERS
    curves = _curves("mixed", 40, a)
    one = o.Accountant(a, 1e-6)
    rows1 = [one.add(c) for c in curves]
    many = o.Accountant(a, 1e-6)
    rows2 = many.add_many(curves[:13]) + many.add_many(curves[13:])
    assert rows1 == rows2
    sums = o.running_sums(curves)
    for k in (0, 17, 39):  # the definition: the bounds of the running sum after step k + 1
        odo = o.odometer_bound(a, sums[k], 1e-6)
        plain = conversions.eps_from_curve(a, sums[k], 1e-6, method="optimal")
        assert rows1[k]["epsilon"] == float(odo.value) and rows1[k]["epsilon_rdp"] == float(plain.value)
        assert rows1[k]["alpha_rdp"] == float(plain.alpha) and rows1[k]["rdp_at_edge"] == bool(plain.at_edge)


def test_add_many_with_a_filter_matches_run_filter():
    a = o.CODE_ORDERS
    curves = _curves("jumps", 120, a)
    acct = o.Accountant(a, 1e-6, filter_epsilon=1.0)
    rows = acct.add_many(curves)
    budgets = o.filter_budgets(a, 1.0, 1e-6)
    assert [r["run"] for r in rows] == o.run_filter(curves, budgets).tolist()
    assert not all(r["run"] for r in rows)
