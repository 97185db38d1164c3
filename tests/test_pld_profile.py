"""δ(ε) at many ε from one PLD composition (dpcalc.engine.pld.profile, docs/math.md §7.7).

References: the exact Gaussian profile (docs/math.md §2.6, Balle & Wang 2018) evaluated with mpmath
independently of the engine; for DP-SGD and mixed lists, the one-ε computation (a different grid,
tilt and window), whose certified bracket must overlap the batch one; the exact Gaussian trade-off
curve Φ(Φ⁻¹(α) + μ) (Dong, Roth & Su 2022) for the CLI's --fpr.
"""

import math

import mpmath as mp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dpcalc.engine.composition.pld import _directions, compose_pld
from dpcalc.engine.dpsgd.pld_accounting import sgd_delta_pld
from dpcalc.engine.pld import profile
from dpcalc.engine.pld.delta import delta_bracket
from dpcalc.engine.pld.profile import delta_brackets


def exact_delta(eps, r):
    """δ(ε) of the Gaussian mechanism with r = Δ/σ, at 50 digits."""
    with mp.workdps(50):
        eps, r = mp.mpf(eps), mp.mpf(r)
        return float(mp.ncdf(r / 2 - eps / r) - mp.e**eps * mp.ncdf(-r / 2 - eps / r))


def exact_tpr(alpha, mu):
    with mp.workdps(50):
        return float(mp.ncdf(mp.sqrt(2) * mp.erfinv(2 * mp.mpf(alpha) - 1) + mu))


def _fresh():
    profile._CACHE.clear()


GAUSS = [("gaussian", {"sigma": 5.0, "sensitivity": 1.0}, 40)]  # r = √40/5


@pytest.mark.parametrize("eps", [np.linspace(0.0, 6.0, 12), np.array([0.3, 0.31, 1.0, 2.5, 4.0])])
def test_gaussian_batch_contains_exact(eps):
    _fresh()
    r = math.sqrt(40) / 5.0
    lo, est, up = compose_pld(GAUSS, epsilon=eps)
    for e, a, m, b in zip(eps, lo, est, up):
        d = exact_delta(e, r)
        assert a <= d * (1 + 1e-9) and d <= b * (1 + 1e-9), (e, a, d, b)
        assert a <= m <= b
        if d > 1e-12:  # the bracket is tight where the profile is in the FFT's reach
            assert b - a <= 0.1 * d, (e, a, d, b)


@settings(max_examples=15)
@given(st.lists(st.floats(0.0, 5.0), min_size=2, max_size=8))
def test_gaussian_batch_any_eps_array(eps):
    _fresh()  # a grid built for this array (not one reused from an earlier example)
    r = math.sqrt(40) / 5.0
    eps = np.array(eps)
    lo, _, up = compose_pld(GAUSS, epsilon=eps)
    for e, a, b in zip(eps, lo, up):
        d = exact_delta(e, r)
        assert a <= d * (1 + 1e-9) and d <= b * (1 + 1e-9), (e, a, d, b)


def _overlap_and_width(batch, single, factor):
    for (a, b), (c, d) in zip(zip(batch[0], batch[2]), single):
        assert a <= d and c <= b, ((a, b), (c, d))  # both certified: they must overlap
        if d > 1e-12:
            assert b - a <= factor * (d - c) + 1e-3 * d, ((a, b), (c, d))


@pytest.mark.parametrize(
    "q,sigma,steps,eps",
    [
        (0.004267, 1.1, 1000, np.linspace(0.0, 1.06, 12)),
        (0.01, 0.8, 300, np.array([0.5, 1.0, 2.0, 3.0, 5.0])),
        (1.0, 2.0, 4, np.array([0.1, 0.5, 1.5])),  # q = 1: one Gaussian, r = √4/2 = 1
    ],
)
def test_sgd_batch_overlaps_single(q, sigma, steps, eps):
    _fresh()
    batch = sgd_delta_pld(q, sigma, steps, eps)
    single = [tuple(float(x) for x in sgd_delta_pld(q, sigma, steps, e))[::2] for e in eps]
    assert np.all(batch.lower <= batch.estimate) and np.all(batch.estimate <= batch.upper)
    _overlap_and_width(batch, single, 3.0)
    if q == 1.0:
        for e, a, b in zip(eps, batch.lower, batch.upper):
            d = exact_delta(e, 1.0)
            assert a <= d * (1 + 1e-9) and d <= b * (1 + 1e-9)


def test_mixed_batch_overlaps_single_and_reuses_grid():
    _fresh()
    specs = [
        ("laplace", {"scale": 20.0, "sensitivity": 1.0}, 30),
        ("gaussian", {"sigma": 8.0, "sensitivity": 1.0}, 20),
        ("subsampled-gaussian", {"q": 0.05, "sigma": 1.0}, 50),
    ]
    eps = np.linspace(0.0, 3.0, 10)
    batch = compose_pld(specs, epsilon=eps)
    single = [tuple(float(x) for x in compose_pld(specs, epsilon=float(e)))[::2] for e in eps]
    _overlap_and_width(batch, single, 3.0)
    # a later call inside the first one's range reads the same grid (one entry per direction)
    n = len(profile._CACHE)
    again = compose_pld(specs, epsilon=eps[2:7] + 0.05)
    assert len(profile._CACHE) == n
    single = [tuple(float(x) for x in compose_pld(specs, epsilon=float(e)))[::2] for e in eps[2:7] + 0.05]
    _overlap_and_width(again, single, 3.0)


def test_one_direction_falls_back_where_noisy():
    """Far down the profile (δ ~ 5e-20, below a small tilt's FFT floor) the per-ε computation is
    used: the bracket stays tight relative to δ."""
    _fresh()
    (comp,) = _directions(GAUSS)
    eps = np.array([0.0, 1.0, 12.0])
    lo, _, up = delta_brackets(comp, eps)
    r = math.sqrt(40) / 5.0
    d = exact_delta(12.0, r)
    assert d < 1e-16 and lo[2] <= d <= up[2] and up[2] - lo[2] <= 0.5 * d
    single = delta_bracket(comp, 12.0)
    assert (lo[2], up[2]) == (single[0], single[2])  # the same computation


def test_cli_fpr_pld_above_exact_gaussian(invoke):
    """compose gaussian --fpr (PLD route): tpr_upper never below the exact trade-off curve."""
    _fresh()
    res = invoke(
        [
            "compose",
            "gaussian:sigma=5,count=40",
            "--fpr",
            "1e-6,1e-4,1e-2,0.2",
            "--method",
            "pld",
            "-f",
            "csv",
            "--columns",
            "fpr,tpr_lower,tpr_upper",
        ]
    )
    assert res.exit_code == 0, res.output
    rows = [line.split(",") for line in res.output.strip().splitlines()[1:]]
    assert len(rows) == 4
    mu = math.sqrt(40) / 5.0
    for fpr, lo, up in ((float(x) for x in row) for row in rows):
        t = exact_tpr(fpr, mu)
        assert float(lo) <= t * (1 + 1e-9) and t <= up * (1 + 1e-9), (fpr, lo, t, up)
        assert up - lo <= 0.05 * t
