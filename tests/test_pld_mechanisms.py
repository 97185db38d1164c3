"""PLD brackets for Laplace, randomized response, (ε, δ)-DP and heterogeneous lists.

Exact references are computed here independently: the Laplace hockey-stick divergence by mpmath
quadrature of ``(p − e^ε q)_+``; k-fold (ε0, δ0)-DP / randomized response by the binomial expansion of
the composed privacy loss (Kairouz, Oh & Viswanath 2015).  Mixed lists are compared with
dp-accounting's PLD accountant (test-only dependency).
"""

import math

import mpmath as mp
import pytest

from dpcalc.engine.composition.pld import compose_pld
from dpcalc.errors import InputError
from dpcalc.input.spec import parse_mechanisms

mp.mp.dps = 40


def laplace_delta_quad(eps, b, sens=1.0):
    """δ(ε) of the Laplace mechanism by quadrature, with the kink of (p − e^ε q)_+ as a breakpoint."""
    with mp.workdps(40):
        p = lambda x: mp.e ** (-abs(x - sens) / b) / (2 * b)  # noqa: E731
        q = lambda x: mp.e ** (-abs(x) / b) / (2 * b)  # noqa: E731
        f = lambda x: max(p(x) - mp.e**eps * q(x), 0)  # noqa: E731
        kink = min(max((sens + b * eps) / 2, 0), sens)  # where the privacy loss (|x|-|x-s|)/b equals ε
        return float(mp.quad(f, [-mp.inf, 0, kink, sens, mp.inf]))


def laplace_delta_closed(eps, b, sens=1.0):
    """δ(ε) = 1 − exp(−(s/b − ε)/2) for 0 <= ε <= s/b (the loss is (|x|−|x−s|)/b; integrate p − e^ε q)."""
    with mp.workdps(40):
        return float(max(1 - mp.e ** (-(mp.mpf(sens) / b - eps) / 2), 0))


@pytest.mark.parametrize("b,eps", [(1.0, 0.5), (1.0, 0.0), (2.0, 0.1), (0.5, 1.5)])
def test_laplace_references_agree(b, eps):
    assert laplace_delta_quad(eps, b) == pytest.approx(laplace_delta_closed(eps, b), rel=1e-12, abs=1e-300)


@pytest.mark.parametrize("b,eps", [(1.0, 0.5), (1.0, 0.0), (2.0, 0.1), (0.5, 1.5)])
def test_single_laplace_delta(b, eps):
    ref = laplace_delta_closed(eps, b)
    got = compose_pld([("laplace", {"scale": b}, 1)], epsilon=eps)
    assert got.lower <= ref <= got.upper
    assert got.upper - got.lower <= 0.02 * ref + 1e-12


def kov_delta(eps, eps0, delta0, k):
    """Exact δ(ε) of k-fold (ε0, δ0)-DP (binomial expansion of the dominating pair)."""
    eps, eps0 = mp.mpf(eps), mp.mpf(eps0)
    p_lo = 1 / (1 + mp.e**eps0)
    keep = (1 - mp.mpf(delta0)) ** k
    s = mp.mpf(0)
    for i in range(k + 1):
        loss = (k - 2 * i) * eps0
        if loss > eps:
            s += mp.binomial(k, i) * (1 - p_lo) ** (k - i) * p_lo**i * (1 - mp.e ** (eps - loss))
    return 1 - keep + keep * s


def kov_eps(delta, eps0, delta0, k):
    lo, hi = mp.mpf(0), mp.mpf(k * eps0)
    if kov_delta(0, eps0, delta0, k) <= delta:
        return 0.0
    for _ in range(120):
        mid = (lo + hi) / 2
        if kov_delta(mid, eps0, delta0, k) > delta:
            lo = mid
        else:
            hi = mid
    return float(hi)


@pytest.mark.parametrize(
    "eps0,delta0,k,delta",
    [(1.0, 0.0, 1, 1e-5), (0.5, 0.0, 20, 1e-5), (0.1, 1e-7, 200, 1e-4), (1.0986122886681098, 0.0, 7, 1e-3)],
)
def test_approx_dp_composition_matches_kov(eps0, delta0, k, delta):
    got = compose_pld([("dp", {"epsilon": eps0, "delta": delta0}, k)], delta=delta)
    ref = kov_eps(delta, eps0, delta0, k)
    assert got.lower <= ref <= got.upper
    assert got.lower <= got.estimate <= got.upper


def test_randomized_response_is_pure_dp():
    """RR with p=0.75 is (log 3, 0)-DP; one release at δ=1e-5 has ε = log 3 exactly."""
    got = compose_pld([("randomized-response", {"p": 0.75}, 1)], delta=1e-5)
    assert got.lower <= math.log(3) <= got.upper
    assert got.upper - math.log(3) <= 0.005 * math.log(3)
    k5 = compose_pld([("randomized-response", {"epsilon": math.log(3)}, 5)], delta=1e-3)
    ref = kov_eps(1e-3, math.log(3), 0.0, 5)
    assert k5.lower <= ref <= k5.upper


def test_delta_mass_beyond_target_gives_infinite_epsilon():
    """10 releases of (1, 1e-3)-DP have δ ≥ 1 − (1 − 1e-3)^10 ≈ 0.00995 at every ε."""
    got = compose_pld([("dp", {"epsilon": 1.0, "delta": 1e-3}, 10)], delta=1e-3)
    assert got.upper == math.inf and got.lower == math.inf
    d = compose_pld([("dp", {"epsilon": 1.0, "delta": 1e-3}, 10)], epsilon=100.0)
    ref = 1 - (1 - 1e-3) ** 10
    assert d.lower <= ref * (1 + 1e-9) and d.upper >= ref * (1 - 1e-9)


dp_accounting = pytest.importorskip("dp_accounting")


def test_mixed_list_against_dp_accounting():
    from dp_accounting.pld import privacy_loss_distribution as pld

    specs = parse_mechanisms(
        [
            "sgm:q=0.01,sigma=1.0,count=500",
            "gaussian:sigma=8,count=20",
            "laplace:scale=20,count=10",
            "rr:p=0.6,count=3",
        ]
    )
    vdi = 1e-4
    ref_pld = (
        pld.from_gaussian_mechanism(1.0, sampling_prob=0.01, value_discretization_interval=vdi)
        .self_compose(500)
        .compose(pld.from_gaussian_mechanism(8.0, value_discretization_interval=vdi).self_compose(20))
        .compose(pld.from_laplace_mechanism(20.0, value_discretization_interval=vdi).self_compose(10))
        .compose(pld.from_randomized_response(0.8, 2, value_discretization_interval=vdi).self_compose(3))
    )
    ref = ref_pld.get_epsilon_for_delta(1e-6)
    got = compose_pld(specs, delta=1e-6)
    assert got.lower <= got.estimate <= got.upper
    assert got.lower <= ref  # dp-accounting's pessimistic value is an upper bound
    assert abs(got.estimate - ref) <= 0.005 * ref


def test_laplace_composition_against_dp_accounting():
    from dp_accounting.pld import privacy_loss_distribution as pld

    ref = (
        pld.from_laplace_mechanism(4.0, sensitivity=1.0, value_discretization_interval=1e-4)
        .self_compose(50)
        .get_epsilon_for_delta(1e-6)
    )
    got = compose_pld([("laplace", {"scale": 4.0}, 50)], delta=1e-6)
    assert got.lower <= ref
    assert abs(got.estimate - ref) <= 0.005 * ref


@pytest.mark.parametrize(
    "spec,match",
    [
        (("zcdp", {"rho": 0.1}, 1), "the RDP accountant"),
        (("gaussian", {"sigma": 0.0}, 1), "sigma"),
        (("subsampled-gaussian", {"q": 1.5, "sigma": 1.0}, 1), "q"),
        (("subsampled-gaussian", {"q": 0.1, "sigma": 1.0, "sampling": "fixed-size"}, 1), "Poisson"),
        (("gaussian", {"sigma": 1.0}, 0), "count"),
        (("gaussian", {"sigma": 1.0}, 2.5), "count"),
    ],
)
def test_bad_mechanisms_are_input_errors(spec, match):
    with pytest.raises(InputError, match=match):
        compose_pld([spec], delta=1e-5)


def test_needs_exactly_one_target():
    with pytest.raises(InputError):
        compose_pld([("gaussian", {"sigma": 1.0}, 1)])
    with pytest.raises(InputError):
        compose_pld([("gaussian", {"sigma": 1.0}, 1)], delta=1e-5, epsilon=1.0)
    with pytest.raises(InputError, match="--delta"):
        compose_pld([("gaussian", {"sigma": 1.0}, 1)], delta=1.5)
