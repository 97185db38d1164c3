"""Subsampling of any mechanism (``KIND:...,q=Q[,sampling=...]``; docs/math.md §2.11).

References are independent of the code under test: dp_accounting's PLD of the Poisson-subsampled
Laplace mechanism (pessimistic and optimistic, fine grid), exact enumeration of composed two- and
four-point pairs (subsampled randomized response and (ε, δ)-DP), exact Rényi divergences of the
subsampled randomized-response pair and mpmath quadrature for the subsampled Laplace pair, and the
exact RDP of the subsampled Gaussian (Mironov, Talwar & Zhang 2019) as a floor for the generic bound.
"""

from __future__ import annotations

import itertools
import logging
import math

import mpmath
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.special import gammaln

from dpcalc.engine.composition.pld import compose_pld
from dpcalc.engine.mechanisms import catalogue
from dpcalc.engine.mechanisms.gaussian import rdp_gaussian
from dpcalc.engine.mechanisms.subsampling import rdp_amplified
from dpcalc.engine.orders import DEFAULT_ORDERS
from dpcalc.errors import InputError
from dpcalc.input.spec import parse_mechanism

ORDERS = np.array([1.0, 1.5, 2.0, 2.5, 3.0, 4.0, 7.5, 16.0, 32.0, 64.0, 256.0, 2000.0, np.inf])


def _rdp(text, alphas=ORDERS):
    return catalogue.rdp_curve(parse_mechanism(text), alphas)


def _pld(text, **kw):
    return compose_pld([parse_mechanism(text)], **kw)


# ----------------------------------------------------------------- PLD against references


@pytest.mark.parametrize(
    "scale,q,n,delta", [(1.0, 0.01, 1000, 1e-6), (2.0, 0.1, 100, 1e-5), (0.5, 0.3, 10, 1e-3)]
)
def test_laplace_pld_bracket_against_dp_accounting(scale, q, n, delta):
    from dp_accounting.pld import privacy_loss_distribution as pld

    logging.getLogger().setLevel(logging.ERROR)  # dp_accounting warns about its optimistic algorithm
    b = _pld(f"laplace:scale={scale},q={q},count={n}", delta=delta)
    kw = dict(sampling_prob=q, value_discretization_interval=1e-4)
    hi = pld.from_laplace_mechanism(scale, **kw).self_compose(n).get_epsilon_for_delta(delta)
    lo = (
        pld.from_laplace_mechanism(scale, pessimistic_estimate=False, **kw)
        .self_compose(n)
        .get_epsilon_for_delta(delta)
    )
    # dp_accounting's pessimistic value is >= the truth, its optimistic one <= it: the brackets overlap
    assert b.lower <= hi and b.upper >= lo
    assert b.lower <= b.estimate <= b.upper
    assert b.upper <= hi + 1e-3 * hi  # and ours is as tight as the peer's fine grid


def _composed_delta(p, r, n, eps):
    """``Σ_x (P^n(x) − e^ε R^n(x))_+`` for distributions on k points, by multinomial enumeration."""
    k = len(p)
    with np.errstate(divide="ignore"):
        lp, lr = np.log(np.asarray(p, float)), np.log(np.asarray(r, float))
    total = 0.0
    for c in itertools.product(range(n + 1), repeat=k - 1):
        if sum(c) > n:
            continue
        cnt = np.array([*c, n - sum(c)], dtype=float)
        lc = gammaln(n + 1) - np.sum(gammaln(cnt + 1))
        with np.errstate(invalid="ignore"):
            a = lc + np.sum(np.where(cnt > 0, cnt * lp, 0.0))
            b = lc + np.sum(np.where(cnt > 0, cnt * lr, 0.0))
        total += max(math.exp(a) - math.exp(eps + b), 0.0)
    return total


def _mix(q, p, r):
    return [q * a + (1 - q) * b for a, b in zip(p, r)]


@pytest.mark.parametrize("e0,q,n,eps", [(1.0, 0.1, 100, 1.0), (2.0, 0.05, 400, 1.5), (0.5, 0.5, 50, 1.0)])
def test_randomized_response_pld_against_exact_enumeration(e0, q, n, eps):
    pp = 1.0 / (1.0 + math.exp(-e0))
    p, r = [pp, 1 - pp], [1 - pp, pp]
    m = _mix(q, p, r)
    ref = max(_composed_delta(m, r, n, eps), _composed_delta(r, m, n, eps))
    b = _pld(f"rr:epsilon={e0},q={q},count={n}", epsilon=eps)
    assert b.lower <= ref <= b.upper * (1 + 1e-9)
    assert b.upper - b.lower <= 0.02 * ref


def test_approx_dp_pld_against_exact_enumeration():
    e, d, q, n, eps = 1.0, 1e-3, 0.2, 12, 1.0
    z = 1 + math.exp(e)
    p = [d, (1 - d) * math.exp(e) / z, (1 - d) / z, 0.0]
    r = [0.0, (1 - d) / z, (1 - d) * math.exp(e) / z, d]
    m = _mix(q, p, r)
    ref = max(_composed_delta(m, r, n, eps), _composed_delta(r, m, n, eps))
    b = _pld(f"dp:epsilon={e},delta={d},q={q},count={n}", epsilon=eps)
    assert b.lower <= ref <= b.upper * (1 + 1e-9)


def test_fixed_size_pld_is_refused_naming_the_key():
    with pytest.raises(InputError, match="sampling=fixed-size"):
        _pld("laplace:scale=1,q=0.1,sampling=fixed-size", delta=1e-5)


# ----------------------------------------------------------------- RDP against references


def _renyi_two_point(a, p, r):
    """D_α(p‖r) exactly (mpmath) for finite α > 1; KL at α = 1."""
    mpmath.mp.dps = 40
    if a == 1:
        return float(sum(mpmath.mpf(x) * mpmath.log(mpmath.mpf(x) / y) for x, y in zip(p, r)))
    s = sum(mpmath.mpf(x) ** a * mpmath.mpf(y) ** (1 - a) for x, y in zip(p, r))
    return float(mpmath.log(s) / (a - 1))


@pytest.mark.parametrize("e0,q", [(1.0, 0.1), (3.0, 0.01), (0.3, 0.6)])
@pytest.mark.parametrize("sampling", ["poisson", "fixed-size"])
def test_randomized_response_rdp_above_exact_divergences(e0, q, sampling):
    pp = 1.0 / (1.0 + math.exp(-e0))
    p, r = [pp, 1 - pp], [1 - pp, pp]
    m = _mix(q, p, r)
    z = _rdp(f"rr:epsilon={e0},q={q},sampling={sampling}")
    for a, v in zip(ORDERS, z):
        if not math.isfinite(a):
            assert v >= math.log1p(q * math.expm1(e0)) * (1 - 1e-12)
            continue
        exact = max(_renyi_two_point(a, m, r), _renyi_two_point(a, r, m))
        assert v >= exact * (1 - 1e-12)
        assert v <= _rdp(f"rr:epsilon={e0}", np.array([a]))[0] * (1 + 1e-12)  # never above the base


def test_laplace_rdp_above_quadrature():
    b, q = 1.0, 0.05
    mpmath.mp.dps = 30

    def lap(x, mu):
        return mpmath.exp(-abs(x - mu) / b) / (2 * b)

    z = _rdp(f"laplace:scale={b},q={q}", np.array([2.0, 3.5, 8.0]))
    for a, v in zip([2.0, 3.5, 8.0], z):

        def rem(x, a=a):
            return (q * lap(x, 1) + (1 - q) * lap(x, 0)) ** a * lap(x, 0) ** (1 - a)

        def add(x, a=a):
            return lap(x, 0) ** a * (q * lap(x, 1) + (1 - q) * lap(x, 0)) ** (1 - a)

        pts = [-mpmath.inf, 0, 1, mpmath.inf]
        exact = max(float(mpmath.log(mpmath.quad(f, pts)) / (a - 1)) for f in (rem, add))
        assert exact <= v <= 2.0 * exact + 1e-12


@pytest.mark.parametrize("sigma,q", [(1.0, 0.01), (2.0, 0.1), (0.8, 0.3)])
def test_generic_poisson_bound_is_above_the_exact_subsampled_gaussian(sigma, q):
    from dpcalc.engine.mechanisms import sgm

    a = np.array([1.5, 2.0, 3.0, 5.5, 10.0, 40.0, 300.0])
    generic = rdp_amplified(lambda x: rdp_gaussian(sigma, 1.0, x), q, "poisson", a)
    exact = np.asarray(sgm.rdp_poisson(q, sigma, a), float)
    assert np.all(generic >= exact * (1 - 1e-12))
    # fixed-size, replace-one: the pair (qN(1) + (1−q)N(0), N(0)) is one of the pairs it covers
    generic_wor = rdp_amplified(lambda x: rdp_gaussian(sigma, 1.0, x), q, "fixed-size", a)
    assert np.all(generic_wor >= exact * (1 - 1e-12))


@pytest.mark.parametrize("text", ["laplace:scale=1,q=0.01,count=1000", "rr:epsilon=1,q=0.1,count=100"])
def test_rdp_never_below_the_pld_lower_end(text):
    delta = 1e-6
    z = catalogue.rdp_curve(parse_mechanism(text), DEFAULT_ORDERS)
    a = DEFAULT_ORDERS[DEFAULT_ORDERS > 1]
    eps_rdp = float(np.min(z[DEFAULT_ORDERS > 1] + math.log(1 / delta) / (a - 1)))  # Mironov 2017 Prop. 3
    b = _pld(text, delta=delta)
    assert eps_rdp >= b.lower


# ----------------------------------------------------------------- identities


@pytest.mark.parametrize("sampling", ["poisson", "fixed-size"])
def test_gaussian_with_q_is_the_subsampled_gaussian(sampling):
    g = _rdp(f"gaussian:sigma=1.3,q=0.02,sampling={sampling}", DEFAULT_ORDERS)
    s = _rdp(f"subsampled-gaussian:q=0.02,sigma=1.3,sampling={sampling}", DEFAULT_ORDERS)
    assert np.array_equal(g, s)
    if sampling == "poisson":
        bg = _pld("gaussian:sigma=1.3,q=0.02,count=50", delta=1e-6)
        bs = _pld("subsampled-gaussian:q=0.02,sigma=1.3,count=50", delta=1e-6)
        assert (bg.lower, bg.upper) == (bs.lower, bs.upper)
    assert catalogue.relations([parse_mechanism(f"gaussian:sigma=1,q=0.1,sampling={sampling}")]) == {sampling}
    assert catalogue.gaussian_r2([parse_mechanism("gaussian:sigma=1,q=0.1")]) is None  # not a plain Gaussian


@pytest.mark.parametrize(
    "base",
    ["laplace:scale=1.5", "rr:epsilon=0.7", "dp:epsilon=1", "discrete-laplace:scale=2", "zcdp:rho=0.1"],
)
def test_q_one_is_the_base_mechanism(base):
    s0, s1 = parse_mechanism(base + ",count=7"), parse_mechanism(base + ",q=1,count=7")
    assert np.array_equal(catalogue.rdp_curve(s0, DEFAULT_ORDERS), catalogue.rdp_curve(s1, DEFAULT_ORDERS))
    assert catalogue.per_release_dp(s0) == catalogue.per_release_dp(s1)
    assert catalogue.max_loss([s0])[0] == catalogue.max_loss([s1])[0]
    if not base.startswith("zcdp"):
        assert compose_pld([s0], delta=1e-6) == compose_pld([s1], delta=1e-6)


def test_per_release_and_max_loss_are_amplified():
    s = parse_mechanism("laplace:scale=2,q=0.05")
    (eps, delta), _ = catalogue.per_release_dp(s)
    ref = float(mpmath.log(1 + mpmath.mpf("0.05") * (mpmath.e ** mpmath.mpf("0.5") - 1)))
    assert ref <= eps <= ref * (1 + 1e-14) and delta == 0.0
    lo, _ = catalogue.max_loss([s], lower=True)
    hi, _ = catalogue.max_loss([s])
    assert lo <= ref <= hi and float(hi - lo) < 1e-12
    (eps, delta), _ = catalogue.per_release_dp(parse_mechanism("dp:epsilon=1,delta=1e-6,q=0.1"))
    assert delta >= 1e-7 and delta <= 1e-7 * (1 + 1e-12)
    assert eps >= math.log1p(0.1 * math.expm1(1.0))
    assert catalogue.max_loss([parse_mechanism("dp:epsilon=1,delta=1e-6,q=0.1")])[0] is None


def test_labels():
    assert parse_mechanism("laplace:scale=1,q=0.01,count=3").label() == (
        "laplace:scale=1.0,sensitivity=1.0,q=0.01,sampling=poisson,count=3"
    )
    assert (
        parse_mechanism("sgm:q=0.01,sigma=1").label()
        == "subsampled-gaussian:q=0.01,sigma=1.0,sampling=poisson,count=1"
    )
    assert "q" not in parse_mechanism("laplace:scale=1").params


@pytest.mark.parametrize(
    "text,token",
    [
        ("laplace:scale=1,q=0", "bad value q='0'"),
        ("laplace:scale=1,q=1.5", "bad value q='1.5'"),
        ("rr:epsilon=1,q=0.1,sampling=foo", "bad value sampling='foo'"),
        ("laplace:scale=1,sampling=poisson", "key 'sampling' needs q"),
        ("gaussian:sigma=1,q=abc", "bad value q='abc'"),
    ],
)
def test_spec_errors_name_the_token(text, token):
    with pytest.raises(InputError, match=token.replace("(", r"\(")):
        parse_mechanism(text)


# ----------------------------------------------------------------- properties

_KINDS = st.sampled_from(
    ["laplace:scale={n}", "rr:epsilon={e}", "discrete-laplace:scale={n}", "zcdp:rho={r}"]
)
_A = np.array([1.0, 1.3, 2.0, 3.0, 6.5, 20.0, 100.0, 5000.0, np.inf])


@settings(max_examples=30)
@given(
    kind=_KINDS,
    noise=st.floats(0.05, 50.0),
    q1=st.floats(1e-6, 1.0),
    q2=st.floats(1e-6, 1.0),
    sampling=st.sampled_from(["poisson", "fixed-size"]),
)
def test_rdp_monotone_in_q_and_noise_and_never_nan(kind, noise, q1, q2, sampling):
    lo, hi = sorted([q1, q2])
    spec = kind.format(n=noise, e=1.0 / noise, r=0.5 / noise)
    z_lo = _rdp(f"{spec},q={lo!r},sampling={sampling}", _A)
    z_hi = _rdp(f"{spec},q={hi!r},sampling={sampling}", _A)
    assert not np.any(np.isnan(z_lo)) and np.all(z_lo >= 0)
    assert np.all(z_lo <= z_hi * (1 + 1e-9) + 1e-300)
    louder = kind.format(n=noise * 2, e=0.5 / noise, r=0.25 / noise)
    assert np.all(_rdp(f"{louder},q={hi!r},sampling={sampling}", _A) <= z_hi * (1 + 1e-9) + 1e-300)


@settings(max_examples=8)
@given(q1=st.floats(0.001, 0.5), q2=st.floats(0.001, 0.5), n=st.integers(1, 200))
def test_pld_monotone_in_q_and_count(q1, q2, n):
    lo, hi = sorted([q1, q2])
    b_lo = _pld(f"laplace:scale=1,q={lo!r},count={n}", delta=1e-5)
    b_hi = _pld(f"laplace:scale=1,q={hi!r},count={n}", delta=1e-5)
    b_more = _pld(f"laplace:scale=1,q={hi!r},count={n + 10}", delta=1e-5)
    for b in (b_lo, b_hi, b_more):
        assert not any(math.isnan(v) for v in b) and b.lower <= b.upper
    assert b_lo.lower <= b_hi.upper and b_hi.lower <= b_more.upper


# ----------------------------------------------------------------- command line


def _csv(res):
    import csv
    import io

    assert res.exit_code == 0, res.stderr
    return list(csv.DictReader(io.StringIO(res.stdout)))


def test_compose_basic_row_sums_the_amplified_epsilon(invoke):
    rows = _csv(
        invoke(
            [
                "compose",
                "laplace:scale=2,q=0.05,count=10",
                "--delta",
                "1e-6",
                "--method",
                "basic",
                "-f",
                "csv",
            ]
        )
    )
    ref = 10 * float(mpmath.log(1 + mpmath.mpf("0.05") * mpmath.expm1(mpmath.mpf("0.5"))))
    assert ref <= float(rows[0]["epsilon"]) <= ref * (1 + 1e-12)


def test_compose_refuses_mixed_samplings(invoke):
    res = invoke(
        ["compose", "laplace:scale=1,q=0.1", "rr:epsilon=1,q=0.1,sampling=fixed-size", "--delta", "1e-5"]
    )
    assert res.exit_code == 2 and "sampling=poisson" in res.stderr and "sampling=fixed-size" in res.stderr


def test_calibrating_a_subsampled_gaussian_uses_the_subsampled_accounting(invoke):
    sub = _csv(
        invoke(["compose", "gaussian:q=0.01,count=1000", "--epsilon", "1", "--delta", "1e-5", "-f", "csv"])
    )
    plain = _csv(invoke(["compose", "gaussian:count=1000", "--epsilon", "1", "--delta", "1e-5", "-f", "csv"]))
    assert sub[0]["method"] != "exact"
    assert float(sub[0]["sigma"]) < float(plain[0]["sigma"]) / 10
    check = _pld(f"gaussian:sigma={sub[0]['sigma']},q=0.01,count=1000", delta=1e-5)
    assert check.upper <= 1.0
