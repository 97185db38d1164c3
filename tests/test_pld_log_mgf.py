"""DiscretePLD.log_mgf_bound, the cumulant bound behind every Chernoff tail of the PLD accountant: never below
the exact log Σ p_i e^{t·l_i} (mpmath, 60 digits, the doubles taken exactly), even where the exponents'
parts are hundreds of times the result (tiny masses at large losses, steep tilts), and within 1e-11 of it."""

import mpmath
import numpy as np
import pytest

from dpcalc.engine.pld.discretise import DiscretePLD

mpmath.mp.dps = 60


def _pld(seed: int, n: int, h: float, start: int) -> DiscretePLD:
    rng = np.random.default_rng(seed)
    p = np.exp(rng.uniform(np.log(1e-300), 0.0, n))  # masses from 1e-300 to 1
    p[rng.integers(0, n, n // 10)] = 0.0  # and some empty bins
    return DiscretePLD(h=h, start=start, p=p, inf_mass=0.0, bad_mass=0.0, mean_shift=0.0, loss_slack=0.0)


def _exact(d: DiscretePLD, t: float):
    h, t = mpmath.mpf(d.h), mpmath.mpf(t)
    terms = [mpmath.mpf(float(pi)) * mpmath.exp(t * (d.start + i) * h) for i, pi in enumerate(d.p) if pi > 0]
    return mpmath.log(mpmath.fsum(terms))


@pytest.mark.parametrize("seed,n,h,start", [(0, 400, 0.05, -200), (1, 300, 0.37, 1200), (2, 500, 1e-3, -250)])
def test_never_below_the_exact_cumulant(seed, n, h, start):
    d = _pld(seed, n, h, start)
    # blocks of 64 points (small |t|h), 32 … 2, and single points (|t|h > 64: 400 × 0.37)
    ts = np.array([-400.0, -40.0, -1.5, 0.0, 0.3, 2.0, 11.0, 40.0, 400.0])
    got = d.log_mgf_bound(ts)
    for t, g in zip(ts, got):
        ref = _exact(d, t)
        assert g >= ref, (t, g, ref)
        assert g - ref <= 1e-11 * (1 + abs(ref)), (t, g, ref)


def test_block_sizes_cover_the_tilts():
    from dpcalc.engine.pld.discretise import _BLOCK_MAX, _BLOCK_REACH, _block_size

    for reach in [0.0, 1e-6, 0.5, 1.0, 2.1, 30.0, 64.0, 65.0, 1e4]:
        b = _block_size(reach)
        assert 1 <= b <= _BLOCK_MAX and (b == 1 or reach * (b - 1) <= _BLOCK_REACH)
        assert b == _BLOCK_MAX or reach * (2 * b - 1) > _BLOCK_REACH  # the largest such power of two


def test_empty_and_zero_blocks():
    d = _pld(3, 300, 0.01, 0)
    d.p[64:192] = 0.0  # two whole blocks of 64 empty
    ts = np.array([-5.0, 0.0, 5.0])
    for t, g in zip(ts, d.log_mgf_bound(ts)):
        ref = _exact(d, t)
        assert ref <= g <= ref + 1e-11 * (1 + abs(ref))
    empty = DiscretePLD(
        h=0.1, start=0, p=np.zeros(10), inf_mass=1.0, bad_mass=0.0, mean_shift=0.0, loss_slack=0.0
    )
    assert np.all(empty.log_mgf_bound(ts) == -np.inf)
