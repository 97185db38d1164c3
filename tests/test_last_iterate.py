"""The last-iterate heuristic (Steinke et al. 2025, arXiv:2410.06186, Thm 1) against independent references:
mpmath sums (and one quadrature) of both hockey-stick divergences of P = Σ_k Bin(k; T, q) N(k/(σ√T), 1)
and Q = N(0, 1), dp_accounting 0.6.0's subsampled-Gaussian and mixture-of-Gaussians privacy losses, the
exact Gaussian mechanism (q = 1), the binomial weights in mpmath, published reference values, and the
full-release PLD accountant (which the heuristic stays below)."""

import math

import mpmath
import numpy as np
import pytest
from dp_accounting.pld import privacy_loss_mechanism as plm

from dpcalc.engine.dpsgd.last_iterate import _log_binom_pmf, last_iterate_delta, last_iterate_epsilon
from dpcalc.engine.dpsgd.pld_accounting import sgd_epsilon_pld
from dpcalc.engine.mechanisms.gaussian_exact import delta_gaussian, eps_gaussian
from dpcalc.errors import InputError

mpmath.mp.dps = 30


# ------------------------------------------------------------------------------------------------------
# an independent mpmath reference: the whole binomial (weights below 1e-45 left out), roots by findroot


def _mixture(sigma, q, steps):
    sigma, q = mpmath.mpf(sigma), mpmath.mpf(q)
    a = 1 / (sigma * mpmath.sqrt(steps))
    comps = []
    for k in range(steps + 1):
        w = mpmath.binomial(steps, k) * q**k * (1 - q) ** (steps - k)
        if w > mpmath.mpf("1e-45"):
            comps.append((w, k * a))
    return comps


def _llr(comps, x):
    return mpmath.log(mpmath.fsum(w * mpmath.exp(m * x - m * m / 2) for w, m in comps))


def _root(comps, t):
    lo, hi = mpmath.mpf(-1), mpmath.mpf(1)
    for _ in range(200):
        if _llr(comps, lo) <= t:
            break
        lo *= 2
    while _llr(comps, hi) < t:
        hi *= 2
    return mpmath.findroot(lambda x: _llr(comps, x) - t, (lo, hi), solver="anderson")


def _mp_pq(comps, eps):
    x = _root(comps, eps)
    return mpmath.fsum(w * mpmath.ncdf(m - x) for w, m in comps) - mpmath.exp(eps) * mpmath.ncdf(-x)


def _mp_qp(comps, eps):
    if comps[0][1] == 0 and -eps <= mpmath.log(comps[0][0]):
        return mpmath.mpf(0)
    x = _root(comps, -eps)
    return mpmath.ncdf(x) - mpmath.exp(eps) * mpmath.fsum(w * mpmath.ncdf(x - m) for w, m in comps)


def _mp_delta(comps, eps):
    eps = mpmath.mpf(eps)
    return max(_mp_pq(comps, eps), _mp_qp(comps, eps))


_CONFIGS = [(1.0, 0.01, 1000), (0.8, 0.02, 500), (0.5, 0.01, 20), (2.0, 0.1, 50), (1.0, 0.3, 3)]


@pytest.fixture(scope="module")
def mixtures():
    return {c: _mixture(*c) for c in _CONFIGS}


# ------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("sigma", "q", "steps", "delta", "expected", "tol"),
    [
        (1.0, 0.01, 1000, 1e-5, 1.27776, 5e-6),
        (0.8, 0.02, 500, 1e-6, 2.90651, 5e-6),
        (1.0, 1.0, 1, 1e-5, 4.377178, 5e-7),
    ],
)
def test_reference_values(sigma, q, steps, delta, expected, tol):
    assert last_iterate_epsilon(delta, sigma, q, steps) == pytest.approx(expected, abs=tol)


@pytest.mark.parametrize("config", _CONFIGS)
def test_both_directions_against_mpmath(mixtures, config):
    comps = mixtures[config]
    eps = np.array([0.0, 0.005, 0.3, 2.0, 6.0])
    pq, qp = last_iterate_delta(eps, *config, directions=True)
    for i, e in enumerate(eps):
        for got, exact in ((pq[i], _mp_pq(comps, mpmath.mpf(e))), (qp[i], _mp_qp(comps, mpmath.mpf(e)))):
            if exact == 0:
                assert got == 0.0
            else:  # the rounding margin grows with |log δ| (module doc)
                assert exact <= got <= exact * (1 + (2e-10 if exact > 1e-20 else 5e-9))


@pytest.mark.parametrize("config", _CONFIGS)
def test_epsilon_is_rounded_up_and_tight(mixtures, config):
    comps = mixtures[config]
    for delta in (1e-2, 1e-5, 1e-10):
        eps = last_iterate_epsilon(delta, *config)
        assert _mp_delta(comps, eps) <= delta
        assert _mp_delta(comps, eps * (1 - 1e-9)) > delta


def test_closed_form_against_quadrature():
    """The threshold sums equal the integral of (p − e^ε q)_+ (and of (q − e^ε p)_+), by mpmath.quad."""
    sigma, q, steps, eps = 0.7, 0.05, 12, 0.4  # below −log w_0 = 0.615: δ_{Q‖P} > 0
    comps = _mixture(sigma, q, steps)

    def p(x):
        return mpmath.fsum(w * mpmath.npdf(x, m, 1) for w, m in comps)

    x1, x2 = _root(comps, mpmath.mpf(eps)), _root(comps, -mpmath.mpf(eps))
    e = mpmath.exp(eps)
    quad_pq = mpmath.quad(lambda x: p(x) - e * mpmath.npdf(x), [x1, x1 + 5, mpmath.inf])
    quad_qp = mpmath.quad(lambda x: mpmath.npdf(x) - e * p(x), [-mpmath.inf, x2 - 5, x2])
    pq, qp = last_iterate_delta(eps, sigma, q, steps, directions=True)
    assert quad_pq <= pq <= quad_pq * (1 + 1e-10)
    assert quad_qp <= qp <= quad_qp * (1 + 1e-10)


@pytest.mark.parametrize(("sigma", "q"), [(1.0, 0.01), (0.5, 0.2), (2.0, 0.5)])
def test_one_step_is_the_subsampled_gaussian(sigma, q):
    """T = 1: dp_accounting's exact profiles of the Poisson-subsampled Gaussian (REMOVE = P‖Q, ADD = Q‖P)."""
    eps = np.array([0.0, 0.1, 1.0, 3.0])
    pq, qp = last_iterate_delta(eps, sigma, q, 1, directions=True)
    for adjacency, got in ((plm.AdjacencyType.REMOVE, pq), (plm.AdjacencyType.ADD, qp)):
        loss = plm.GaussianPrivacyLoss(
            sigma, 1.0, sampling_prob=q, adjacency_type=adjacency, pessimistic_estimate=False
        )
        ref = np.array([loss.get_delta_for_epsilon(float(e)) for e in eps])
        np.testing.assert_allclose(got, ref, rtol=1e-10, atol=0)
        assert np.all(got >= ref * (1 - 1e-14))
    # ε(δ): the same, against dp_accounting's profile
    delta = 1e-6
    e = last_iterate_epsilon(delta, sigma, q, 1)
    remove = plm.GaussianPrivacyLoss(sigma, 1.0, sampling_prob=q, pessimistic_estimate=False)
    assert remove.get_delta_for_epsilon(e) <= delta < remove.get_delta_for_epsilon(e * (1 - 1e-9))


def test_add_direction_against_dp_accounting_mixture():
    """T = 30: dp_accounting's mixture of Gaussians, ADD adjacency, is the Q‖P side."""
    sigma, q, steps = 1.3, 0.2, 30
    w = [math.comb(steps, k) * q**k * (1 - q) ** (steps - k) for k in range(steps + 1)]
    loss = plm.MixtureGaussianPrivacyLoss(
        sigma * math.sqrt(steps),
        list(map(float, range(steps + 1))),
        w,
        adjacency_type=plm.AdjacencyType.ADD,
        pessimistic_estimate=False,
        log_mass_truncation_bound=-200,
    )
    eps = np.array([0.2, 0.5, 2.0])
    ref = loss.get_delta_for_epsilon(eps)
    _, qp = last_iterate_delta(eps, sigma, q, steps, directions=True)
    np.testing.assert_allclose(qp, ref, rtol=1e-10)


@pytest.mark.parametrize("steps", [1, 7, 1000, 10**6])
@pytest.mark.parametrize("sigma", [0.5, 2.0])
def test_full_sampling_is_the_gaussian_mechanism(steps, sigma):
    """q = 1: the Gaussian mechanism with sensitivity T and noise σ√T, μ = √T/σ (Balle & Wang 2018)."""
    r = math.sqrt(steps) / sigma
    for delta in (1e-5, 1e-10):
        assert last_iterate_epsilon(delta, sigma, 1.0, steps) == pytest.approx(
            eps_gaussian(delta, r), rel=1e-10
        )
    eps = np.array([0.0, 1.0, 3.0])
    np.testing.assert_allclose(last_iterate_delta(eps, sigma, 1.0, steps), delta_gaussian(eps, r), rtol=1e-10)


def test_binomial_weights_at_a_million_steps():
    """Loader's form against mpmath within 14 standard deviations (lgamma differences are off by ~2e-9)."""
    for n, q in ((10**6, 0.01), (10**6, 0.5), (10**6, 1e-3), (37, 0.3)):
        sd = math.sqrt(n * q * (1 - q))
        ks = np.unique(np.clip(np.round(n * q + sd * np.linspace(-14, 14, 15)), 0, n))
        got = _log_binom_pmf(ks, float(n), q)
        for k, g in zip(ks, got):
            exact = mpmath.log(mpmath.binomial(n, int(k))) + k * mpmath.log(q) + (n - k) * mpmath.log1p(-q)
            assert abs(g - exact) < 128 * 2.0**-52 * (1 + math.log1p(n))  # the allowance of the module


def test_many_steps_against_mpmath():
    """T = 10^5: the mpmath sum over the k carrying all but 1e-45 of the binomial."""
    sigma, q, steps, delta = 1.0, 0.002, 10**5, 1e-8
    comps = _mixture_window(sigma, q, steps)
    eps = last_iterate_epsilon(delta, sigma, q, steps)
    assert _mp_delta(comps, eps) <= delta < _mp_delta(comps, eps * (1 - 1e-9))


def _mixture_window(sigma, q, steps):
    sd = math.sqrt(steps * q * (1 - q))
    lo, hi = max(0, int(steps * q - 16 * sd)), min(steps, int(steps * q + 16 * sd))
    a = 1 / (mpmath.mpf(sigma) * mpmath.sqrt(steps))
    lq, l1q = mpmath.log(q), mpmath.log1p(-mpmath.mpf(q))
    comps = []
    for k in range(lo, hi + 1):
        w = mpmath.exp(
            mpmath.loggamma(steps + 1)
            - mpmath.loggamma(k + 1)
            - mpmath.loggamma(steps - k + 1)
            + k * lq
            + (steps - k) * l1q
        )
        if w > mpmath.mpf("1e-45"):
            comps.append((w, k * a))
    return comps


def test_large_steps_run_and_are_consistent():
    """T = 10^6 and δ = 1e-10: ε(δ) and δ(ε) agree (δ(ε) is at δ, above it just below ε).  Each rounds its
    own way (δ(ε) may carry one more bisection step, 1e-14 in x): agreement to 1e-12 of δ."""
    for q in (0.01, 0.001):
        eps = last_iterate_epsilon(1e-10, 1.0, q, 10**6)
        assert last_iterate_delta(eps, 1.0, q, 10**6) <= 1e-10 * (1 + 1e-12)
        assert last_iterate_delta(eps * (1 - 1e-9), 1.0, q, 10**6) > 1e-10


def test_monotone_in_delta_and_sigma():
    deltas = np.geomspace(1e-12, 0.5, 12)
    e = last_iterate_epsilon(deltas, 1.0, 0.01, 1000)
    assert np.all(np.diff(e) < 0)
    sigmas = np.array([0.4, 0.6, 0.8, 1.0, 1.5, 2.0, 4.0])
    e = last_iterate_epsilon(1e-5, sigmas, 0.01, 1000)
    assert np.all(np.diff(e) < 0)


def test_monotone_in_steps_only_past_a_point():
    """ε grows with T once T is past a few dozen steps here, but the heuristic is not monotone in T: one step
    of σ = 0.5 (the subsampled Gaussian, checked against dp_accounting) leaks more than 20 steps do.  So a
    model that ignores all but its last step (the paper's counterexample) is not covered by it."""
    steps = np.array([50, 100, 200, 500, 1000, 2000, 5000, 10**4])
    for sigma, q in ((1.0, 0.01), (0.5, 0.01), (2.0, 0.1)):
        e = last_iterate_epsilon(1e-5, sigma, q, steps)
        assert np.all(np.diff(e) > 0)
    one, twenty = last_iterate_epsilon(1e-5, 0.5, 0.01, np.array([1, 20]))
    remove = plm.GaussianPrivacyLoss(0.5, 1.0, sampling_prob=0.01, pessimistic_estimate=False)
    assert remove.get_delta_for_epsilon(2.0 * twenty) > 1e-5  # one step is above twice the 20-step value
    assert one > 3.0 * twenty


@pytest.mark.parametrize(("sigma", "q", "steps", "delta"), [(1.0, 0.01, 1000, 1e-5), (0.8, 0.02, 500, 1e-6)])
def test_below_the_full_release(sigma, q, steps, delta):
    """Releasing every iterate (PLD accounting of T subsampled Gaussians) costs more: the heuristic is below
    even the lower end of the PLD bracket."""
    full = sgd_epsilon_pld(q, sigma, steps, delta)
    assert last_iterate_epsilon(delta, sigma, q, steps) < float(full.lower)


def test_vectorised_equals_scalar():
    delta = np.array([[1e-3], [1e-7]])
    sigma = np.array([0.7, 1.0, 3.0])
    grid = last_iterate_epsilon(delta, sigma, 0.01, np.array([10, 1000, 3]))
    assert grid.shape == (2, 3)
    for i in range(2):
        for j, (s, t) in enumerate(zip(sigma, (10, 1000, 3))):
            assert grid[i, j] == pytest.approx(
                last_iterate_epsilon(float(delta[i, 0]), s, 0.01, t), rel=1e-13
            )
    eps = np.array([0.1, 1.0, 4.0])
    d = last_iterate_delta(eps, 1.0, 0.01, 1000)
    assert d.shape == (3,)
    for i, e in enumerate(eps):
        assert d[i] == pytest.approx(last_iterate_delta(float(e), 1.0, 0.01, 1000), rel=1e-13)


def test_edges_and_errors():
    assert last_iterate_delta(np.inf, 1.0, 0.01, 100) == 0.0
    assert isinstance(last_iterate_epsilon(1e-5, 1.0, 0.01, 100), float)
    assert last_iterate_epsilon(0.9, 1.0, 0.001, 10) == 0.0  # δ(0) = TV < 0.9
    pq, qp = last_iterate_delta(0.0, 1.0, 0.01, 100, directions=True)
    assert pq == pytest.approx(qp, rel=1e-10)  # ε = 0: both are the total variation distance
    for bad in (
        lambda: last_iterate_epsilon(0.0, 1.0, 0.01, 10),
        lambda: last_iterate_epsilon(1.0, 1.0, 0.01, 10),
        lambda: last_iterate_epsilon(1e-5, 0.0, 0.01, 10),
        lambda: last_iterate_epsilon(1e-5, 1.0, 0.0, 10),
        lambda: last_iterate_epsilon(1e-5, 1.0, 1.5, 10),
        lambda: last_iterate_epsilon(1e-5, 1.0, 0.01, 2.5),
        lambda: last_iterate_epsilon(1e-5, 1.0, 0.01, 0),
        lambda: last_iterate_delta(-0.1, 1.0, 0.01, 10),
    ):
        with pytest.raises(InputError):
            bad()
