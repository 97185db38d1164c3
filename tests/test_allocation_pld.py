"""The certified PLD of random-allocation rounds (dpcalc.engine.mechanisms.random_allocation.round_loss, docs/math.md §3.10):
one round against the exact profile of the pair (quadrature for t = 2, 3; Monte Carlo for t = 234), whole
runs against the RDP bound and Poisson's PLD, and the refusals."""

from __future__ import annotations

import math

import mpmath as mp
import numpy as np
import pytest
from scipy import integrate, special

from dpcalc.engine.dpsgd.accounting import epsilon as sgd_epsilon
from dpcalc.engine.dpsgd.pld_accounting import sgd_delta_pld, sgd_epsilon_pld
from dpcalc.engine.mechanisms.random_allocation import round_loss as A
from dpcalc.engine.pld.delta import delta_bracket
from dpcalc.engine.pld.epsilon import epsilon_bracket
from dpcalc.engine.samplers.allocation import run_directions
from dpcalc.errors import InputError


def _one_round_delta(sigma, t, eps, lower=False):
    """Certified δ(ε) of one 1-of-t round, (remove, add), from the models: the upper ends of the accountant's
    brackets (``lower``: the lower ends, which bound the models' own profile from below)."""
    dirs = run_directions(sigma, t, 1, 1)
    return tuple(float(delta_bracket(d, eps)[0 if lower else 2]) for d in dirs)


def _call(k, mu):
    """E[(X − K)_+] and E[(K − X)_+] for X = exp(μZ − μ²/2), Z ~ N(0, 1) (Black–Scholes), mpmath."""
    if k <= 0:
        return 1 - k, mp.mpf(0)
    d1 = (-mp.log(k) + mu * mu / 2) / mu
    d2 = d1 - mu
    return mp.ncdf(d1) - k * mp.ncdf(d2), k * mp.ncdf(-d2) - mp.ncdf(-d1)


def _exact_t2(sigma, eps):
    """The exact (remove, add) profile of the pair for t = 2: one quadrature over X1, X2 in closed form."""
    mp.mp.dps = 30
    mu = mp.mpf(1) / sigma
    e = mp.e ** mp.mpf(eps)

    def rem(z):
        x1 = mp.e ** (mu * z - mu * mu / 2)
        return mp.npdf(z) * _call(2 * e - x1, mu)[0] / 2

    def add(z):
        x1 = mp.e ** (mu * z - mu * mu / 2)
        return mp.npdf(z) * e / 2 * _call(2 / e - x1, mu)[1]

    cuts = [-mp.inf, -8, -4, -2, 0, 2, 4, 8, 16, mp.inf]
    return float(mp.quad(rem, cuts)), float(mp.quad(add, cuts))


def _exact_t3(sigma, eps):
    """The same for t = 3: two quadratures (scipy, relative accuracy ~1e-10), the third term in closed form."""
    mu = 1.0 / sigma
    e = math.exp(eps)

    def x(z):
        return math.exp(mu * z - mu * mu / 2)

    def inner(z1, z2, add):
        k = (3.0 / e if add else 3.0 * e) - x(z1) - x(z2)
        w = math.exp(-0.5 * (z1 * z1 + z2 * z2)) / (2 * math.pi)
        if k <= 0:
            return 0.0 if add else w * (1 - k) / 3
        d1 = (-math.log(k) + mu * mu / 2) / mu
        d2 = d1 - mu
        if add:
            return w * e / 3 * (k * special.ndtr(-d2) - special.ndtr(-d1))
        return w * (special.ndtr(d1) - k * special.ndtr(d2)) / 3

    out = []
    for add in (False, True):
        v, _ = integrate.dblquad(
            lambda z2, z1, a=add: inner(z1, z2, a), -9, 9, -9, 9, epsabs=1e-14, epsrel=1e-10
        )
        out.append(v)
    return tuple(out)


def _check_round(sigma, t, eps, exact, below):
    """The certified δ of one round is never below the exact profile (up to ``below``, the reference's own
    relative accuracy); the models exceed the pair only by the spread of X (second order in the grid step)
    and the mass they put at +∞, so the lower end of the accountant's bracket of the models' profile is
    within 0.1 % of the exact value plus that mass."""
    ours = _one_round_delta(sigma, t, eps)
    model_lower = _one_round_delta(sigma, t, eps, lower=True)
    remove, add, extra = A.round_loss_models(sigma, t)
    for e, o, lo, m in zip(exact, ours, model_lower, (remove, add)):
        assert o >= e * (1 - below)
        assert lo <= e * 1.001 + m.inf_mass + extra + 1e-12


@pytest.mark.parametrize("sigma", [0.9, 1.1, 2.0])
@pytest.mark.parametrize("eps", [0.0, 0.5, 1.5])
def test_one_round_t2_contains_the_exact_profile(sigma, eps):
    _check_round(sigma, 2, eps, _exact_t2(sigma, eps), 1e-12)


@pytest.mark.parametrize("sigma,eps", [(1.0, 0.3), (1.5, 0.1)])
def test_one_round_t3_contains_the_exact_profile(sigma, eps):
    _check_round(sigma, 3, eps, _exact_t3(sigma, eps), 1e-8)


def test_one_round_t234_against_monte_carlo():
    """The exact profile of a long round by simulation (fixed seed): E_Q[(W − e^ε)_+], E_Q[(1 − e^ε W)_+]."""
    sigma, t, eps = 1.1, 234, 0.05
    mu = 1.0 / sigma
    rng = np.random.default_rng(20261124)
    w = np.concatenate(
        [np.exp(mu * rng.standard_normal((20000, t)) - mu * mu / 2).mean(axis=1) for _ in range(10)]
    )
    ours = _one_round_delta(sigma, t, eps)
    for sample, o in zip((np.maximum(w - math.exp(eps), 0), np.maximum(1 - math.exp(eps) * w, 0)), ours):
        mean, se = float(sample.mean()), float(sample.std() / math.sqrt(sample.size))
        assert o >= mean - 6 * se
        assert o <= mean + 6 * se


def test_t1_is_the_gaussian_and_k_equals_t_is_its_composition():
    r, a, extra = A.round_loss_models(1.3, 1)
    assert extra == 0.0 and r is a
    ours = [float(epsilon_bracket(d, 1e-5)[2]) for d in run_directions(1.3, 5, 5, 1)]
    gauss = float(sgd_epsilon_pld(1.0, 1.3, 5, 1e-5).upper)
    assert ours == pytest.approx([gauss, gauss], rel=1e-9)


def test_models_close_their_mass_and_the_neglected_mass_is_small():
    for sigma, t in ((1.1, 234), (0.9, 50), (3.0, 1000)):
        for m in A.round_loss_models(sigma, t)[:2]:
            total = float(np.sum(m.atoms_mass)) + m.inf_mass  # the remove side's spread adds ~1e-12
            assert 1.0 - 1e-15 <= total <= 1.0 + 1e-10
        assert 0 < A.round_loss_models(sigma, t)[2] < 1e-7


@pytest.mark.parametrize(
    "sigma,epochs,dataset,batch",
    [(1.1, 1, 60000, 256), (1.1, 60, 60000, 256), (0.9, 5, 10000, 100), (2.0, 20, 50000, 500)],
)
def test_runs_below_rdp_and_near_poisson(sigma, epochs, dataset, batch):
    q = batch / dataset
    m = dataset // batch
    steps = m * epochs
    pld = float(sgd_epsilon_pld(q, sigma, steps, 1e-5, sampling="balls-in-bins", dataset_size=dataset).upper)
    rdp = float(
        sgd_epsilon("rdp", q, sigma, steps, 1e-5, sampling="balls-in-bins", dataset_size=dataset).epsilon
    )
    poisson = sgd_epsilon_pld(1.0 / m, sigma, steps, 1e-5)
    assert pld <= rdp
    # Feldman & Shenfeld 2025: random allocation is about as private as Poisson sampling at rate 1/t
    assert pld <= float(poisson.upper) * 1.001
    assert pld >= float(poisson.lower) * 0.8


def test_delta_and_epsilon_agree():
    q, sigma, steps = 256 / 60000, 1.1, 234 * 10
    e = float(sgd_epsilon_pld(q, sigma, steps, 1e-5, sampling="balls-in-bins", dataset_size=60000).upper)
    d = sgd_delta_pld(q, sigma, steps, [e * 0.98, e * 1.001], sampling="balls-in-bins", dataset_size=60000)
    assert float(d.upper[0]) > 1e-5
    assert float(d.upper[1]) <= 1e-5 * 1.001
    assert np.all(np.isnan(d.lower))


def test_monotone_in_noise_and_epochs():
    q = 0.01
    eps = [
        float(sgd_epsilon_pld(q, s, 100 * e, 1e-5, sampling="balls-in-bins").upper)
        for s, e in ((1.0, 2), (1.2, 2), (1.2, 4), (1.5, 4))
    ]
    assert eps[1] < eps[0] and eps[2] > eps[1] and eps[3] < eps[2]


def test_small_delta_switches_to_extended_precision():
    """Where double round-off would take over 5 % of δ the rounds are recomputed in long double, whose
    counted mass is far smaller: δ = 1e-9 over 60 epochs is answered, and ε grows as δ shrinks."""
    double, precise = A.round_loss_models(1.1, 234)[2], A.round_loss_models(1.1, 234, A.PRECISE_TAIL, True)[2]
    assert precise < double / 20
    args = (256 / 60000, 1.1, 234 * 60)
    eps = [
        float(sgd_epsilon_pld(*args, d, sampling="balls-in-bins", dataset_size=60000).upper)
        for d in (1e-8, 1e-9)
    ]
    assert math.isfinite(eps[1]) and eps[1] > eps[0]
    # the two precisions bound the same pair: close where both apply
    both = [
        max(float(epsilon_bracket(d, 1e-5)[2]) for d in run_directions(1.1, 234, 1, 60, delta=x))
        for x in (1e-5, 1e-12)
    ]
    assert both[1] == pytest.approx(both[0], rel=2e-3)


def test_refusals():
    with pytest.raises(InputError, match="round-off and tail mass reach this δ"):
        sgd_epsilon_pld(256 / 60000, 1.1, 234 * 60, 1e-11, sampling="balls-in-bins", dataset_size=60000)
    with pytest.raises(InputError, match="too heavy.*--method rdp"):
        A.round_loss_models(0.3, 100)


def test_long_rounds_are_refused_up_front(invoke):
    # issue 27: rounds of 10^6 steps grew to 14 GB and ended in MemoryError; now refused before any work
    from dpcalc.engine.mechanisms.random_allocation import round_loss as allocation_pld
    from dpcalc.errors import InputError

    with pytest.raises(InputError, match="--method pld.*rounds of 1000000 steps"):
        allocation_pld.round_loss_models(1.1, 10**6)
    args = ["--sigma", "1.1", "--sample-rate", "1e-6", "--steps", "1e7", "--delta", "1e-5"]
    res = invoke(["sgd-epsilon", *args, "--sampling", "random-allocation", "--method", "pld"])
    assert res.exit_code == 2 and res.stdout == "" and len(res.stderr.strip().splitlines()) == 1
    assert "--method" in res.stderr and f"{allocation_pld.MAX_SUM_POINTS:.2g}" in res.stderr
    # the rdp accountant still answers it
    res = invoke(["sgd-epsilon", *args, "--sampling", "random-allocation", "--method", "rdp", "-f", "csv"])
    assert res.exit_code == 0


def test_rounds_within_the_limit_are_answered():
    from dpcalc.engine.mechanisms.random_allocation import round_loss as allocation_pld

    h, _ = allocation_pld._grid(1 / 1.1, 234, allocation_pld.TAIL)
    assert 234 / h < allocation_pld.MAX_SUM_POINTS
    remove, add, extra = allocation_pld.round_loss_models(1.1, 234)
    assert remove.atoms_mass.size > 0 and add.atoms_mass.size > 0 and 0 <= extra < 1e-6
