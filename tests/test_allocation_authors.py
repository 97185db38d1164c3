"""Random allocation against the paper authors' own package: ``random-allocation`` 1.0.5 (PyPI; Feldman &
Shenfeld, "Privacy amplification by random allocation", arXiv:2502.08202), whose values are recorded here
as reference vectors (it needs numba, matplotlib and pandas, too heavy a test dependency).  Reproduce with

    from random_allocation.comparisons.definitions import PrivacyParams, SchemeConfig
    from random_allocation.random_allocation_scheme.direct import allocation_RDP_remove, allocation_epsilon_direct
    from random_allocation.random_allocation_scheme.combined import allocation_epsilon_combined
    from random_allocation.random_allocation_scheme.lower_bound import allocation_epsilon_lower_bound
    config = SchemeConfig(allocation_direct_alpha_orders=list(range(2, 61)))   # as in their paper_experiments
    params = PrivacyParams(sigma=σ, num_steps=t, num_selected=k, num_epochs=E, delta=δ)

The checks: the exact remove-direction RDP (their Thm 4.4, an independent implementation) agrees; our RDP
ε is at or below theirs (the same theorems; our add direction is tighter, docs/math.md §3.8); our certified
PLD ε (§3.10) is at or below their best bound ("combined") and at or above their lower bound.  Their
experiment 1 (Fig. 1 of the paper: t = 10⁵ steps, one epoch, δ = 1e−10) is among the rows.
"""

from __future__ import annotations

import numpy as np
import pytest

from dpcalc.engine.mechanisms.random_allocation.rdp import rdp_random_allocation_remove
from dpcalc.engine.pld.epsilon import epsilon_bracket
from dpcalc.engine.samplers.allocation import epsilon_random_allocation, run_directions

#: allocation_RDP_remove(α, σ, t): the exact remove-direction RDP of one 1-of-t round.
REMOVE = [
    (2, 1.0, 10, 0.1585650787404287),
    (5, 1.0, 100, 0.04396353703864886),
    (8, 0.8, 234, 0.8006126187833138),
    (16, 1.5, 1000, 0.004482341813780029),
    (32, 2.0, 100000, 4.544436876218946e-05),
]

#: (σ, t, k, E, δ) -> (lower bound, direct (RDP), combined): allocation_epsilon_lower_bound /
#: allocation_epsilon_direct / allocation_epsilon_combined; None where they do not answer (or were not run).
EPSILON = [
    ((0.5, 100000, 1, 1, 1e-10), (2.8228189581863576, 4.568727940809161, None)),
    ((1.0, 100000, 1, 1, 1e-10), (0.006943893360547376, 0.8852825967422933, None)),
    ((2.0, 100000, 1, 1, 1e-10), (0.002, 0.3041510798001339, None)),
    ((1.0, 100000, 10, 1, 1e-10), (None, 1.158710846637478, None)),
    ((2.0, 100000, 10, 1, 1e-10), (None, 0.31258784372027265, None)),
    ((1.1, 234, 1, 1, 1e-5), (0.19176653431892654, 0.7228875981003134, 0.4703801529178367)),
    ((1.1, 234, 1, 60, 1e-5), (None, 2.5486332957970648, 2.5486332957970648)),
    ((0.8, 1000, 1, 1, 1e-6), (0.4383986573252237, 1.505755402518016, 0.7180450142539081)),
    ((1.5, 500, 1, 1, 1e-6), (0.04241673463160398, 0.38215772168101836, 0.20988931060834345)),
    ((2.0, 100, 1, 10, 1e-5), (None, 0.6851270874910256, 0.6851270874910256)),
]


@pytest.mark.parametrize("alpha,sigma,t,theirs", REMOVE)
def test_exact_remove_rdp_agrees(alpha, sigma, t, theirs):
    ours = float(rdp_random_allocation_remove(sigma, t, 1, [alpha])[0])
    assert ours >= theirs * (1 - 1e-9)  # ours is an upper bound (rounded up)
    assert ours <= theirs * (1 + 1e-4)  # their partition sum loses digits at α = 32, t = 1e5


@pytest.mark.parametrize("config,theirs", EPSILON)
def test_rdp_at_or_below_theirs(config, theirs):
    sigma, t, k, epochs, delta = config
    ours = float(epsilon_random_allocation(sigma, t, k, epochs, delta))
    lower, direct, _ = theirs
    assert ours <= direct * (1 + 1e-9)
    if lower is not None:
        assert ours >= lower


@pytest.mark.parametrize("config,theirs", [c for c in EPSILON if c[0][1] <= 1000])
def test_pld_between_their_lower_bound_and_their_best(config, theirs):
    sigma, t, k, epochs, delta = config
    ours = max(float(epsilon_bracket(d, delta)[2]) for d in run_directions(sigma, t, k, epochs))
    lower, direct, combined = theirs
    assert np.isfinite(ours)
    assert ours <= min(v for v in (direct, combined) if v is not None)
    if lower is not None:
        assert ours >= lower
