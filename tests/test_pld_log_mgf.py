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
    ts = np.array([-40.0, -1.5, 0.0, 0.3, 2.0, 11.0, 40.0])
    got = d.log_mgf_bound(ts)
    for t, g in zip(ts, got):
        ref = _exact(d, t)
        assert g >= ref, (t, g, ref)
        assert g - ref <= 1e-11 * (1 + abs(ref)), (t, g, ref)
