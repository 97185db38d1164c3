"""The PLD bracket is relative to ε, with no absolute floor (tiny ε as tight as large ones, still certified).

Reference: one step of the Poisson-subsampled Gaussian (add/remove neighbours, docs/math.md §3.2), whose
privacy profile has a closed form.  The loss ``L(x) = ±log(1 − q + q e^{(2x−1)/(2σ²)})`` is monotone in
``x``, so the hockey-stick divergence ``δ(ε) = E_P[(1 − e^{ε−L})_+]`` is ``P(x beyond x*) − e^ε Q(x beyond
x*)`` with ``x*`` where ``L = ε``, in erfc (mpmath, 60 digits; checked against direct quadrature of the
divergence below).  The exact ε(δ) is the worse direction's, solved by bisection in mpmath.

Before this change the default width was 0.5 % of max(ε, 0.02): ε = 3.50e-7 came out as 1.70e-5 (48×)
and 4.29e-6 as 9.5e-5 (22×).
"""

import csv
import io
import math
import warnings

import mpmath as mp
import numpy as np
import pytest

from dpcalc.engine.dpsgd.pld_accounting import _sgm_directions, sgd_delta_pld, sgd_epsilon_pld
from dpcalc.engine.mechanisms import subsampled_gaussian as sgm
from dpcalc.engine.pld import convolution as C
from dpcalc.engine.pld.discretise import _loss_slack, choose_range, split_bias_max
from dpcalc.engine.pld.epsilon import _cross
from dpcalc.engine.pld.grid import TINY_SPREAD, spread
from dpcalc.errors import DpcalcWarning

mp.mp.dps = 60


def _sf(z):
    """P(N(0, 1) > z)."""
    return mp.erfc(z / mp.sqrt(2)) / 2


def delta_exact(eps, q, sigma, direction):
    """δ(ε) of one step of the subsampled Gaussian (one direction), closed form in mpmath."""
    q, s, eps = mp.mpf(q), mp.mpf(sigma), mp.mpf(eps)
    if direction == "remove":  # P = (1−q)N(0,σ²) + qN(1,σ²), Q = N(0,σ²); L increasing in x
        xs = s**2 * mp.log((mp.exp(eps) - (1 - q)) / q) + mp.mpf(1) / 2
        return (1 - q) * _sf(xs / s) + q * _sf((xs - 1) / s) - mp.exp(eps) * _sf(xs / s)
    # add: P = N(0,σ²), Q = (1−q)N(0,σ²) + qN(1,σ²); L decreasing in x, L > ε iff x < x*
    a = mp.exp(-eps) - (1 - q)
    if a <= 0:
        return mp.mpf(0)
    xs = s**2 * mp.log(a / q) + mp.mpf(1) / 2
    p_below = 1 - _sf(xs / s)
    q_below = (1 - q) * (1 - _sf(xs / s)) + q * (1 - _sf((xs - 1) / s))
    return p_below - mp.exp(eps) * q_below


def delta_worse(eps, q, sigma):
    return max(delta_exact(eps, q, sigma, "remove"), delta_exact(eps, q, sigma, "add"))


def epsilon_exact(q, sigma, delta):
    """The exact ε(δ) (worse direction) by bisection; 0 when δ >= δ(0)."""
    d = mp.mpf(delta)
    if delta_worse(0, q, sigma) <= d:
        return mp.mpf(0)
    lo, hi = mp.mpf(0), mp.mpf("1e-14")
    while delta_worse(hi, q, sigma) > d:
        lo, hi = hi, 2 * hi
    for _ in range(120):
        mid = (lo + hi) / 2
        if delta_worse(mid, q, sigma) > d:
            lo = mid
        else:
            hi = mid
    return hi


def loss_sd(q, sigma, direction):
    """Standard deviation of the loss under P (mpmath quadrature)."""
    q, s = mp.mpf(q), mp.mpf(sigma)

    def loss(x):
        v = mp.log1p(q * mp.expm1((2 * x - 1) / (2 * s * s)))
        return v if direction == "remove" else -v

    def pdf(x):
        n0 = mp.npdf(x, 0, s)
        return (1 - q) * n0 + q * mp.npdf(x, 1, s) if direction == "remove" else n0

    pts = [-40 * s, -10 * s, 0, 1, 10 * s, 40 * s]
    m1 = mp.quad(lambda x: pdf(x) * loss(x), pts)
    m2 = mp.quad(lambda x: pdf(x) * loss(x) ** 2, pts)
    return float(mp.sqrt(m2 - m1**2))


# ------------------------------------------------------------------------ the reference itself


@pytest.mark.parametrize("direction", ["remove", "add"])
@pytest.mark.parametrize(
    "q,sigma,eps", [(1.309e-6, 7.498, 3.5e-7), (1.23e-6, 2.119, 1e-9), (1e-3, 1.0, 0.01)]
)
def test_closed_form_matches_quadrature_of_the_hockey_stick_divergence(q, sigma, eps, direction):
    """The erfc form equals E_P[(1 − e^{ε−L})_+] integrated over x (mpmath quadrature)."""
    Q, S, E = mp.mpf(q), mp.mpf(sigma), mp.mpf(eps)

    def integrand(x):
        v = mp.log1p(Q * mp.expm1((2 * x - 1) / (2 * S * S)))
        loss = v if direction == "remove" else -v
        n0 = mp.npdf(x, 0, S)
        p = (1 - Q) * n0 + Q * mp.npdf(x, 1, S) if direction == "remove" else n0
        return p * max(mp.mpf(0), -mp.expm1(E - loss))

    # split at the kink x* where L(x) = ε (found by root finding, independently of the closed form)
    def gap(x):
        v = mp.log1p(Q * mp.expm1((2 * x - 1) / (2 * S * S)))
        return (v if direction == "remove" else -v) - E

    lo_x, hi_x = -60 * S, 60 * S
    for _ in range(400):  # bisection: L is monotone in x
        mid = (lo_x + hi_x) / 2
        if (gap(mid) > 0) == (direction == "remove"):
            hi_x = mid
        else:
            lo_x = mid
    pts = sorted({-60 * S, -20 * S, -5 * S, mp.mpf(0), mp.mpf(1) / 2, mp.mpf(1), 5 * S, 20 * S, 60 * S, lo_x})
    quad = mp.quad(integrand, pts, maxdegree=10)
    closed = delta_exact(eps, q, sigma, direction)
    assert abs(quad - closed) <= mp.mpf("1e-9") * closed


def test_the_two_reported_examples_have_the_stated_exact_epsilon():
    assert f"{float(epsilon_exact(1.309e-6, 7.498, 2.98e-9)):.3g}" == "3.5e-07"
    assert f"{float(epsilon_exact(1.23e-6, 2.119, 2.39e-10)):.3g}" == "4.29e-06"


# ------------------------------------------------------------------------ ε(δ): tiny ε, relative width

CASES = [
    (1.309e-6, 7.498, 2.98e-9),  # the reported example: ε = 3.50e-7 (was 1.70e-5)
    (1.23e-6, 2.119, 2.39e-10),  # the reported example: ε = 4.29e-6 (was 9.5e-5)
    (1e-5, 1.0, 1e-8),
    (3e-6, 4.0, 1e-7),
    (1e-6, 1.0, 1e-12),  # δ far below the FFT floor: no transform for one mechanism used once
    (1e-5, 0.5, 1e-9),  # heavy tail (σ = 0.5)
    (5e-6, 10.0, 1e-8),
    (1e-7, 1.5, 1e-10),
    (1e-5, 2.0, 1e-6),
]


@pytest.mark.parametrize("q,sigma,delta", CASES)
def test_one_step_upper_end_is_certified_and_within_one_percent(q, sigma, delta):
    exact = float(epsilon_exact(q, sigma, delta))
    assert exact > 0
    with warnings.catch_warnings():
        warnings.simplefilter("error", DpcalcWarning)  # the default tolerance is met
        b = sgd_epsilon_pld(q, sigma, 1, delta)
    lo, est, up = float(b.lower), float(b.estimate), float(b.upper)
    assert lo <= exact <= up  # certified both ways
    assert up <= 1.01 * exact
    assert lo <= est <= up
    assert up - lo <= 0.005 * est * (1 + 1e-9)  # 0.5 % of ε, however small ε is


@pytest.mark.parametrize(
    "argv,delta_s",
    [
        (["--sigma", "7.498", "--sample-rate", "1.309e-06", "--steps", "1", "--delta", "2.98e-9"], "2.98e-9"),
        (
            ["--sigma", "2.119", "--sample-rate", "1.23e-06", "--steps", "1", "--delta", "2.39e-10"],
            "2.39e-10",
        ),
    ],
)
def test_cli_examples(invoke, argv, delta_s):
    r = invoke(["sgd-epsilon", *argv, "--method", "all", "-f", "csv"])
    assert r.exit_code == 0, r.stderr
    pld = {row["method"]: row for row in csv.DictReader(io.StringIO(r.stdout))}["pld"]
    exact = float(epsilon_exact(float(argv[3]), float(argv[1]), float(delta_s)))
    up, lo = float(pld["epsilon"]), float(pld["epsilon_lower"])
    assert lo <= exact <= up <= 1.01 * exact


@pytest.mark.parametrize("q,sigma,steps,delta", [(1e-6, 1.0, 1000, 1e-9), (1e-5, 1.0, 10_000, 1e-6)])
def test_many_steps_of_tiny_losses_meet_the_relative_width(q, sigma, steps, delta):
    """Tiny losses composed: the window and the Chernoff bounds need θ far beyond the usual range, and
    the heavy upper tail misleads the quadrature cumulant.  The δ(ε) direction, computed separately,
    must agree with both ends: δ(ε_upper) <= δ <= δ(ε_lower)."""
    with warnings.catch_warnings():
        warnings.simplefilter("error", DpcalcWarning)
        b = sgd_epsilon_pld(q, sigma, steps, delta)
    lo, est, up = float(b.lower), float(b.estimate), float(b.upper)
    assert 0 < lo <= est <= up and up - lo <= 0.005 * est * (1 + 1e-9)
    assert float(sgd_delta_pld(q, sigma, steps, up).lower) <= delta
    assert float(sgd_delta_pld(q, sigma, steps, lo).upper) >= delta


# ------------------------------------------------------------------------ ε = 0 and ε near 0


def test_delta_at_or_above_delta0_gives_exactly_zero():
    q, sigma = 1.23e-6, 2.119
    d0 = float(delta_worse(0, q, sigma))
    for d in (1.01 * d0, 3.0 * d0):
        b = sgd_epsilon_pld(q, sigma, 1, d)
        assert float(b.lower) == float(b.estimate) == float(b.upper) == 0.0


@pytest.mark.parametrize("frac", [0.999, 0.99, 0.9])
def test_delta_just_below_delta0_terminates_certified(frac):
    """ε → 0 as δ → δ(0): the width is 0.5 % of max(ε, TINY_SPREAD × the loss's spread), reached
    without a warning, and the upper end still holds."""
    q, sigma = 1.23e-6, 2.119
    d = frac * float(delta_worse(0, q, sigma))
    exact = float(epsilon_exact(q, sigma, d))
    sd = max(loss_sd(q, sigma, "remove"), loss_sd(q, sigma, "add"))
    with warnings.catch_warnings():
        warnings.simplefilter("error", DpcalcWarning)
        b = sgd_epsilon_pld(q, sigma, 1, d)
    lo, up = float(b.lower), float(b.upper)
    assert lo <= exact <= up
    assert up - lo <= 0.005 * max(exact, TINY_SPREAD * sd) * 1.01


def test_spread_matches_quadrature():
    for q, sigma in [(1.23e-6, 2.119), (1e-3, 1.0)]:
        for comps, direction in zip(_sgm_directions(q, sigma, 1), ("remove", "add")):
            assert spread(comps) == pytest.approx(loss_sd(q, sigma, direction), rel=1e-4)


# ------------------------------------------------------------------------ explicit tolerance, memory cap


def test_explicit_eps_error_still_sets_the_width():
    q, sigma, delta = 1.309e-6, 7.498, 2.98e-9
    exact = float(epsilon_exact(q, sigma, delta))
    fine = sgd_epsilon_pld(q, sigma, 1, delta, eps_error=1e-9)
    assert float(fine.lower) <= exact <= float(fine.upper) and float(fine.upper - fine.lower) <= 1e-9
    coarse = sgd_epsilon_pld(q, sigma, 1, delta, eps_error=1e-4)  # wider than ε itself: allowed
    assert float(coarse.lower) <= exact <= float(coarse.upper) and float(coarse.upper - coarse.lower) <= 1e-4
    assert float(coarse.upper) > 10 * exact  # it really is the coarse grid


def test_memory_cap_coarsens_the_default_with_a_warning_instead_of_refusing():
    q, sigma, delta = 1.23e-6, 2.119, 2.39e-10
    exact = float(epsilon_exact(q, sigma, delta))
    with pytest.warns(DpcalcWarning, match="wider than the requested"):
        b = sgd_epsilon_pld(q, sigma, 1, delta, memory_cap=1e6)
    assert float(b.lower) <= exact <= float(b.upper) < 2 * exact


def test_delta_direction_coarsens_under_the_memory_cap_with_a_warning():
    q, sigma = 1.23e-6, 2.119
    exact = float(delta_worse(0, q, sigma))
    with pytest.warns(DpcalcWarning, match="coarser than the default"):
        b = sgd_delta_pld(q, sigma, 1, 0.0, memory_cap=3e5)
    assert float(b.lower) <= exact <= float(b.upper) <= 1.001 * exact


# ------------------------------------------------------------------------ δ(ε): the same, relative


@pytest.mark.parametrize("q,sigma,delta", CASES[:3])
def test_delta_of_tiny_epsilon_is_certified_and_within_one_percent(q, sigma, delta):
    eps = float(epsilon_exact(q, sigma, delta))
    exact = float(delta_worse(eps, q, sigma))
    b = sgd_delta_pld(q, sigma, 1, eps)
    assert float(b.lower) <= exact <= float(b.upper) <= 1.01 * exact


@pytest.mark.parametrize("q,sigma", [(1.309e-6, 7.498), (1.23e-6, 2.119), (1e-3, 1.0)])
def test_delta_at_zero_is_certified_and_tight(q, sigma):
    exact = float(delta_worse(0, q, sigma))
    b = sgd_delta_pld(q, sigma, 1, 0.0)
    assert float(b.lower) <= exact <= float(b.upper) <= 1.001 * exact
    assert float(b.lower) >= 0.99 * exact


# ------------------------------------------------------------------------ rounding terms at tiny h


@pytest.mark.parametrize("q", [0.5, 1e-3, 1e-6, 1e-10, 1e-20, 1e-100])
@pytest.mark.parametrize("sigma", [0.3, 1.0, 10.0, 300.0])
def test_loss_slack_covers_the_loss_maps_rounding(q, sigma):
    """|computed L(x) − exact L(x)| at the bin anchors (x = x_of_loss(grid point)) is within the
    discretisation's loss_slack, against mpmath.  (8 ulps of the largest loss was short by 2× at
    q = 1e-8 and 30× at q = 1e-300.)"""
    Q, S = mp.mpf(q), mp.mpf(sigma)
    for direction in ("remove", "add"):
        m = sgm.loss_model(q, sigma, direction)
        pc = m.piece
        h0 = 1e-3 * q
        ia0, ib0 = choose_range(m, h0, -70.0)
        h = (ib0 - ia0) * h0 * 1e-6
        a, b = ia0 * h0, ib0 * h0
        ia, ib = math.floor(a / h), math.ceil(b / h)
        eps = np.unique(np.linspace(ia, ib, 300).astype(np.int64)) * h
        with np.errstate(all="ignore"):
            x = np.clip(np.asarray(pc.x_of_loss(eps), dtype=float), pc.x_lo, pc.x_hi)
            got = np.asarray(pc.loss(x), dtype=float)
        ok = np.isfinite(got) & (x > pc.x_lo) & (x < pc.x_hi)
        worst = 0.0
        for xi, gi in zip(x[ok], got[ok]):
            v = mp.log1p(Q * mp.expm1((2 * mp.mpf(float(xi)) - 1) / (2 * S * S)))
            worst = max(worst, float(abs(mp.mpf(float(gi)) - (v if direction == "remove" else -v))))
        assert worst <= _loss_slack(m, ia * h, ib * h, h)


def test_split_bias_bound_holds_for_tiny_steps():
    """b_max(h) = max_t [h(1 − a(t)) − t] (about h²/8) is bounded above for h down to 1e-12."""
    for h in np.geomspace(1e-12, 1.0, 25):
        H = mp.mpf(float(h))
        t = H - mp.log(mp.expm1(H) / H)
        exact = H * (1 - (mp.exp(H - t) - 1) / mp.expm1(H)) - t
        assert split_bias_max(float(h)) >= exact


@pytest.mark.parametrize("x0", [1.7e-6, -3.1e-4, 0.37, 2.5])
@pytest.mark.parametrize("h", [1e-14, 1e-11, 1e-6])
def test_interpolated_crossing_is_rounded_to_the_safe_side(x0, h):
    """v linear in e^x on [x0, x0 + h]: the upper crossing is >= the exact one, the lower <= it, also
    when h is below 1e-7·|x0| (the 1e-9·h margin alone falls short of the sum's rounding there)."""
    for f in (0.013, 0.37, 0.5, 0.91):
        v0, v1 = 1e-9, 1e-9 * 0.2
        t = v0 - f * (v0 - v1)
        lv0, lv1, lt = math.log(v0), math.log(v1), math.log(t)
        X0, H = mp.mpf(x0), mp.mpf(h)
        frac = (mp.mpf(v0) - mp.e ** mp.mpf(lt)) / (mp.mpf(v0) - mp.e ** mp.mpf(lv1))
        exact = X0 + mp.log1p(frac * mp.expm1(H))
        assert _cross(lv0, lv1, lt, x0, h, upper=True) >= exact
        assert _cross(lv0, lv1, lt, x0, h, upper=False) <= exact


def test_theta_grid_is_unchanged_for_usual_spreads():
    """The Chernoff θ grid only grows for tiny spreads (usual answers stay bit-identical)."""
    comps = _sgm_directions(0.01, 1.0, 1000)[0]
    from dpcalc.engine.pld.grid import _prepare

    _, plds, _ = _prepare(comps, 0.01, math.log(1e-5), 1.0, 1.0, 2**31)
    assert np.array_equal(C.thetas(plds, [1000]), np.geomspace(1e-4, 3e3, 49))
