"""The discrete Laplace and discrete Gaussian kinds (docs/math.md §2.8): closed forms against mpmath brute
force over the integers, compose's PLD bracket against the exact hockey-stick sum and against dp_accounting,
and the CLI's spec errors."""

import math

import mpmath as mp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dpcalc.engine.composition.pld import compose_pld
from dpcalc.engine.conversion import methods as conversions
from dpcalc.engine.mechanisms import catalogue
from dpcalc.engine.mechanisms.discrete_gaussian import loss_model as dg_model
from dpcalc.engine.mechanisms.discrete_gaussian import rdp_discrete_gaussian
from dpcalc.engine.mechanisms.discrete_laplace import loss_model as dl_model
from dpcalc.engine.mechanisms.discrete_laplace import rdp_discrete_laplace
from dpcalc.engine.orders import DEFAULT_ORDERS
from dpcalc.input.spec import parse_mechanism

mp.mp.dps = 40

# ------------------------------------------------------------------------------ brute force (mpmath)


def _dl_pmf(b, d):
    """P(k) and Q(k) = P(k − Δ) of discrete Laplace noise of scale b, as functions of k (mpmath)."""
    r = mp.exp(-1 / mp.mpf(b))
    c = (1 - r) / (1 + r)
    return (lambda k: c * r ** abs(k)), (lambda k: c * r ** abs(k - d))


def _dg_pmf(s, d, kmax):
    """P(k) and Q(k) = P(k − Δ) of the discrete Gaussian N_Z(0, σ²), normalised by a sum over |j| <= kmax."""
    s2 = 2 * mp.mpf(s) ** 2
    z = mp.fsum(mp.exp(-(mp.mpf(j) ** 2) / s2) for j in range(-kmax, kmax + 1))
    return (lambda k: mp.exp(-(mp.mpf(k) ** 2) / s2) / z), (lambda k: mp.exp(-(mp.mpf(k - d) ** 2) / s2) / z)


def _loss_distribution(p, q, ks):
    """The privacy loss distribution {loss: P-mass} of (P, Q), summed over the integers ``ks``; losses are
    keyed by a rounded float (the exact losses sit on a lattice, far coarser than the rounding)."""
    out = {}
    for k in ks:
        pk, qk = p(k), q(k)
        loss = mp.log(pk / qk)
        key = round(float(loss), 9)
        m, lv = out.get(key, (mp.mpf(0), loss))
        out[key] = (m + pk, lv)
    return list(out.values())


def _compose(dist, count):
    """The ``count``-fold convolution of a loss distribution [(mass, loss)], merging equal losses."""
    total = [(mp.mpf(1), mp.mpf(0))]
    for _ in range(count):
        acc = {}
        for m1, l1 in total:
            for m2, l2 in dist:
                key = round(float(l1 + l2), 9)
                m, lv = acc.get(key, (mp.mpf(0), l1 + l2))
                acc[key] = (m + m1 * m2, lv)
        total = list(acc.values())
    return total


def _delta(dist, eps):
    """The hockey-stick divergence δ(ε) = E_P[(1 − e^{ε−L})_+] of a loss distribution (mpmath)."""
    eps = mp.mpf(eps)
    return mp.fsum(m * (1 - mp.exp(eps - lv)) for m, lv in dist if lv > eps)


def _renyi(p, q, ks, alpha):
    alpha = mp.mpf(alpha)
    if alpha == 1:
        return mp.fsum(p(k) * mp.log(p(k) / q(k)) for k in ks)
    return mp.log(mp.fsum(p(k) ** alpha * q(k) ** (1 - alpha) for k in ks)) / (alpha - 1)


def _dl_exact_delta(b, d, count, eps):
    p, q = _dl_pmf(b, d)
    n = int(80 * b) + d + 20  # r^n < e^{−80}: far below what the comparison resolves
    return _delta(_compose(_loss_distribution(p, q, range(-n, n + d + 1)), count), eps)


def _dg_exact_delta(s, d, count, eps):
    kmax = int(40 * s) + 2 * d + 10
    p, q = _dg_pmf(s, d, kmax)
    return _delta(_compose(_loss_distribution(p, q, range(-kmax, kmax + 1)), count), eps)


def _bracket(text, **kw):
    lo, est, hi = compose_pld([parse_mechanism(text)], **kw)
    return float(lo), float(est), float(hi)


# ------------------------------------------------------------------------------ discrete Laplace


@pytest.mark.parametrize("b,d", [(1.0, 1), (2.5, 4), (10.0, 3), (0.7, 5), (50.0, 2), (3.0, 1)])
def test_discrete_laplace_atoms_are_a_distribution_matching_brute_force(b, d):
    model = dl_model(b, d)
    assert abs(float(np.sum(model.atoms_mass)) - 1.0) <= 1e-14
    assert model.inf_mass == 0.0 and model.loss_max == d / b
    p, q = _dl_pmf(b, d)
    n = int(80 * b) + d + 20
    exact = {round(float(lv), 9): m for m, lv in _loss_distribution(p, q, range(-n, n + d + 1))}
    got = dict(zip(np.round(model.atoms_loc, 9), model.atoms_mass))
    assert set(got) == set(exact)
    for key, m in exact.items():
        assert got[key] == pytest.approx(float(m), rel=1e-13)


@pytest.mark.parametrize("b,d", [(1.0, 1), (3.0, 1), (2.5, 4), (10.0, 3), (0.7, 5), (50.0, 2)])
def test_discrete_laplace_rdp_closed_form_is_the_brute_force_sum(b, d):
    alphas = [1.0, 1.25, 1.5, 2.0, 5.0, 32.0]
    got = rdp_discrete_laplace(b, d, alphas)
    p, q = _dl_pmf(b, d)
    n = int(80 * b) + d + 20
    ks = range(-n, n + d + 1)
    for a, g in zip(alphas, got):
        exact = float(_renyi(p, q, ks, a))
        assert exact <= g <= exact * (1 + 1e-9) + 1e-300  # an upper bound, tight
    assert rdp_discrete_laplace(b, d, [math.inf])[0] == d / b


def test_discrete_laplace_large_sensitivity_merges_negligible_atoms_upwards():
    model = dl_model(0.5, 10**6)  # c·r^k underflows long before k = Δ
    assert model.atoms_loc.size < 400
    assert abs(float(np.sum(model.atoms_mass)) - 1.0) <= 1e-14
    assert float(np.max(model.atoms_loc)) == 2e6
    assert np.all(np.isfinite(rdp_discrete_laplace(0.5, 10**6, DEFAULT_ORDERS)))


@pytest.mark.parametrize(
    "b,d,count,eps",
    [(1.0, 1, 1, 0.5), (2.5, 4, 1, 1.0), (4.0, 2, 3, 0.8), (10.0, 3, 5, 0.5), (0.7, 5, 2, 9.0)],
)
def test_discrete_laplace_pld_bracket_contains_the_exact_delta(b, d, count, eps):
    exact = float(_dl_exact_delta(b, d, count, eps))
    lo, est, hi = _bracket(f"discrete-laplace:scale={b},sensitivity={d},count={count}", epsilon=eps)
    assert lo <= exact * (1 + 1e-12) and exact <= hi * (1 + 1e-12)
    assert lo <= est <= hi


@pytest.mark.parametrize("b,d,count", [(4.0, 1, 1), (2.5, 3, 10), (0.1, 7, 4)])
def test_discrete_laplace_pure_epsilon_at_delta_zero(b, d, count, invoke):
    spec = parse_mechanism(f"discrete-laplace:scale={b},sensitivity={d},count={count}")
    total, reason = catalogue.max_loss([spec])
    assert reason is None and float(total) == pytest.approx(count * d / b, rel=1e-15)
    lo, _, hi = compose_pld([spec], delta=0.0)
    assert float(lo) <= count * d / b <= float(hi) and float(hi) == pytest.approx(count * d / b, rel=1e-15)
    res = invoke(["compose", spec.text, "--delta", "0", "--method", "basic", "-q"])
    assert res.exit_code == 0 and float(res.stdout) == pytest.approx(count * d / b, rel=1e-14)


@pytest.mark.parametrize("b,d,count,eps", [(2.0, 1, 1, 0.3), (5.0, 2, 10, 1.0), (20.0, 3, 50, 1.5)])
def test_discrete_laplace_pld_agrees_with_dp_accounting(b, d, count, eps):
    from dp_accounting.pld import privacy_loss_distribution as dpa

    def dpa_delta(pessimistic):
        pld = dpa.from_discrete_laplace_mechanism(
            1.0 / b, sensitivity=d, pessimistic_estimate=pessimistic, value_discretization_interval=1e-4
        )
        return (
            float(pld.self_compose(count).get_delta_for_epsilon(eps))
            if count > 1
            else float(pld.get_delta_for_epsilon(eps))
        )

    lo, _, hi = _bracket(f"discrete-laplace:scale={b},sensitivity={d},count={count}", epsilon=eps)
    pess, opt = dpa_delta(True), dpa_delta(False)
    # both brackets hold the true δ (self_compose truncates up to 1e-15 of mass)
    assert opt <= hi + 1e-14 and lo <= pess + 1e-14
    if count <= 10:
        exact = float(_dl_exact_delta(b, d, count, eps))
        assert opt - 1e-14 <= exact <= pess + 1e-14


def test_discrete_laplace_rdp_is_at_most_dp_accounting_where_it_has_the_event():
    import dp_accounting

    event_type = getattr(dp_accounting, "DiscreteLaplaceDpEvent", None)
    if event_type is None:
        pytest.skip("this dp_accounting has no DiscreteLaplaceDpEvent (0.6.0 has none)")
    from dp_accounting.rdp import RdpAccountant

    acc = RdpAccountant(list(DEFAULT_ORDERS))
    acc.compose(event_type(1.0 / 4.0, 2), 10)
    theirs = acc.get_epsilon(1e-6)
    spec = parse_mechanism("discrete-laplace:scale=4,sensitivity=2,count=10")
    ours = conversions.eps_from_curve(DEFAULT_ORDERS, catalogue.rdp_curve(spec, DEFAULT_ORDERS), 1e-6).value
    assert float(ours) <= theirs * (1 + 1e-9)


# ------------------------------------------------------------------------------ discrete Gaussian


@pytest.mark.parametrize("s,d", [(0.5, 1), (1.0, 1), (3.0, 2), (0.05, 1), (200.0, 5)])
def test_discrete_gaussian_atoms_are_a_distribution(s, d):
    model = dg_model(s, d)
    total = float(np.sum(model.atoms_mass)) + model.inf_mass
    assert abs(total - 1.0) <= 1e-13
    assert 0 < model.inf_mass <= 1e-290
    assert np.all(np.isfinite(model.atoms_loc)) and model.loss_max == float(np.max(model.atoms_loc))


@pytest.mark.parametrize(
    "s,d,count,eps",
    [(1.0, 1, 1, 0.5), (0.8, 1, 2, 1.0), (2.0, 2, 3, 0.5), (3.0, 1, 1, 0.1), (0.5, 3, 1, 5.0)],
)
def test_discrete_gaussian_pld_bracket_contains_the_exact_delta(s, d, count, eps):
    exact = float(_dg_exact_delta(s, d, count, eps))
    lo, est, hi = _bracket(f"discrete-gaussian:sigma={s},sensitivity={d},count={count}", epsilon=eps)
    assert lo <= exact * (1 + 1e-12) and exact <= hi * (1 + 1e-12)
    assert lo <= est <= hi


@pytest.mark.parametrize("s,d", [(0.5, 1), (1.0, 2), (2.0, 1), (5.0, 3)])
def test_discrete_gaussian_rdp_curve_is_the_cdp_bound_and_is_sound(s, d):
    alphas = np.array([1.0, 1.5, 2.0, 4.0, 16.0])
    curve = rdp_discrete_gaussian(s, d, alphas)
    np.testing.assert_allclose(curve, alphas * d * d / (2 * s * s), rtol=1e-14)
    assert np.all(curve >= alphas * d * d / (2 * s * s))
    kmax = int(40 * s) + 2 * d + 10
    p, q = _dg_pmf(s, d, kmax)
    for a, z in zip(alphas, curve):  # the true divergence is below the bound (CKS20, Prop. 5)
        assert float(_renyi(p, q, range(-kmax, kmax + 1), a)) <= z


@pytest.mark.parametrize(
    "text", ["discrete-gaussian:sigma=2,count=5", "discrete-gaussian:sigma=5,sensitivity=3"]
)
def test_discrete_gaussian_rdp_epsilon_is_above_the_pld_lower_end(text):
    spec = parse_mechanism(text)
    rdp_eps = conversions.eps_from_curve(
        DEFAULT_ORDERS, catalogue.rdp_curve(spec, DEFAULT_ORDERS), 1e-6
    ).value
    lo, _, hi = compose_pld([spec], delta=1e-6)
    assert float(lo) <= float(rdp_eps)
    assert catalogue.max_loss([spec])[0] is None
    assert catalogue.per_release_dp(spec)[0] is None


@pytest.mark.parametrize("s,d,count,eps", [(1.0, 1, 1, 0.5), (2.0, 2, 4, 1.0), (5.0, 1, 20, 0.7)])
def test_discrete_gaussian_pld_agrees_with_dp_accounting(s, d, count, eps):
    from dp_accounting.pld import privacy_loss_distribution as dpa

    def dpa_delta(pessimistic):
        pld = dpa.from_discrete_gaussian_mechanism(
            s, sensitivity=d, pessimistic_estimate=pessimistic, value_discretization_interval=1e-4
        )
        return (
            float(pld.self_compose(count).get_delta_for_epsilon(eps))
            if count > 1
            else float(pld.get_delta_for_epsilon(eps))
        )

    lo, _, hi = _bracket(f"discrete-gaussian:sigma={s},sensitivity={d},count={count}", epsilon=eps)
    pess, opt = dpa_delta(True), dpa_delta(False)
    # dp_accounting truncates the noise at a tail mass of about 1e-15 (pessimistic: to +∞)
    assert opt <= hi + 1e-13 and lo <= pess + 1e-13
    if count <= 4:
        exact = float(_dg_exact_delta(s, d, count, eps))
        assert opt - 1e-13 <= exact <= pess + 1e-13


@pytest.mark.parametrize("s,d", [(0.01, 1), (0.02, 1), (0.01, 3)])
def test_discrete_gaussian_almost_a_point_mass(s, d):
    """σ so small that only k = 0 carries mass: L = Δ²/(2σ²) almost surely, so ε(δ) = Δ²/(2σ²) + log(1 − δ)
    (the model keeps a second, massless atom: the accountant needs a pair, not a point)."""
    model = dg_model(s, d)
    assert model.atoms_loc.size == 2 and model.atoms_mass[0] == 1.0
    exact = d * d / (2 * s * s) + math.log1p(-1e-5)
    lo, _, hi = _bracket(f"discrete-gaussian:sigma={s},sensitivity={d}", delta=1e-5)
    assert lo <= exact <= hi * (1 + 1e-12) and hi <= exact * (1 + 1e-9)


def test_discrete_gaussian_refuses_a_pld_too_large_to_hold():
    from dpcalc.errors import InputError

    with pytest.raises(InputError, match="atoms"):
        dg_model(1e6, 1)


# ------------------------------------------------------------------------------ properties


@settings(max_examples=8)
@given(
    st.sampled_from(["discrete-laplace:scale", "discrete-gaussian:sigma"]),
    st.floats(0.3, 20.0),
    st.floats(1.05, 3.0),
    st.integers(1, 3),
    st.integers(1, 20),
)
def test_more_noise_or_fewer_releases_never_costs_more(prefix, noise, factor, d, count):
    small = parse_mechanism(f"{prefix}={noise!r},sensitivity={d},count={count}")
    more_noise = parse_mechanism(f"{prefix}={noise * factor!r},sensitivity={d},count={count}")
    more_count = parse_mechanism(f"{prefix}={noise!r},sensitivity={d},count={count + 1}")
    c0, c1, c2 = (catalogue.rdp_curve(x, DEFAULT_ORDERS) for x in (small, more_noise, more_count))
    assert not (np.any(np.isnan(c0)) or np.any(np.isnan(c1)) or np.any(np.isnan(c2)))
    assert np.all(c1 <= c0) and np.all(c0 <= c2)
    b0, b1, b2 = (_bracket(x.text, epsilon=1.0) for x in (small, more_noise, more_count))
    assert not any(math.isnan(v) for v in b0 + b1 + b2)
    # the true δ(1) is monotone, and each bracket holds it
    assert b1[0] <= b0[2] and b0[0] <= b2[2]


# ------------------------------------------------------------------------------ CLI


@pytest.mark.parametrize(
    "spec,token",
    [
        ("discrete-laplace:scale=0", "scale='0'"),
        ("discrete-laplace:scale=inf", "scale='inf'"),
        ("discrete-laplace:scale=2,sensitivity=1.5", "sensitivity='1.5'"),
        ("discrete-laplace:scale=2,sensitivity=0", "sensitivity='0'"),
        ("discrete-gaussian:sigma=-1", "sigma='-1'"),
        ("discrete-gaussian:sigma=2,sens=2.5", "sensitivity='2.5'"),
        ("discrete-gaussian:sigma=2,sensitivity=1e20", "sensitivity='1e20'"),
        ("discrete-gaussian:scale=2", "'scale'"),
    ],
)
def test_spec_errors_exit_2_naming_the_token(invoke, spec, token):
    res = invoke(["compose", spec, "--delta", "1e-5"])
    assert res.exit_code == 2
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and token in lines[0] and spec in lines[0]


def test_compose_methods_rdp_curve_and_odometer(invoke):
    res = invoke(["compose", "discrete-laplace:scale=10,count=100", "--delta", "1e-5", "--method", "all"])
    assert res.exit_code == 0
    rows = {line.split(",")[0]: line for line in res.stdout.splitlines()[1:]}
    for method in ("pld", "rdp", "optimal", "advanced", "basic"):
        assert rows[method].split(",")[2] not in ("", "inf")
    # sensitivity 1: the pair is that of (1/b, 0)-DP, so pld and optimal agree
    assert float(rows["pld"].split(",")[2]) == pytest.approx(float(rows["optimal"].split(",")[2]), rel=1e-9)
    res = invoke(["compose", "discrete-gaussian:sigma=4,count=10", "--rdp-curve", "--alphas", "2,8"])
    assert res.exit_code == 0
    vals = [float(line.split(",")[1]) for line in res.stdout.splitlines()[1:]]
    assert vals == pytest.approx([2 * 10 / 32, 8 * 10 / 32], rel=1e-14)
    events = 'mechanism\ndiscrete-laplace:scale=5\n"discrete-gaussian:sigma=3,sensitivity=2"\n'
    res = invoke(["odometer", "-", "--delta", "1e-6"], input=events)
    assert res.exit_code == 0 and len(res.stdout.strip().splitlines()) == 3


def test_discrete_laplace_refuses_a_pld_too_large_to_hold(invoke):
    from dpcalc.errors import InputError

    with pytest.raises(InputError, match="atoms"):
        dl_model(1e6, 2**53)
    res = invoke(
        ["compose", "discrete-laplace:scale=1e6,sensitivity=10000000", "--delta", "1e-5", "--method", "all"]
    )
    assert res.exit_code == 0
    rows = {line.split(",")[0]: line for line in res.stdout.splitlines()[1:]}
    assert "atoms" in rows["pld"] and rows["optimal"].split(",")[2] not in ("", "inf")
