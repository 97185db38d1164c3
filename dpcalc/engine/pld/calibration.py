"""Noise calibration with the tight accountant: the smallest noise multiplier whose *certified* PLD ε
is within a target (docs/math.md §7; DP-SGD's Poisson-subsampled Gaussian, add/remove neighbours).

The search starts from the RDP answer (cheap, and close: RDP's ε lies above the exact one, so the
tight σ is at or below it), checks that the PLD upper end meets the target there (moving up if not),
finds a σ below it where the upper end misses the target, and bisects in log σ to a relative
``rtol``.  Every σ returned is one at which the certified upper end of the PLD bracket was computed
and found at or below the target (soundness), and σ/(1 + rtol) one at which it was found above.
"""

from __future__ import annotations

import math

import numpy as np

from dpcalc.engine.pld.accountant import sgd_epsilon_pld
from dpcalc.errors import InputError

#: How far the search may move σ away from its start (each way) before giving up.
_MAX_EXPANSIONS = 60


def calibrate_noise_pld(q, steps, delta, target, *, rtol=1e-3, eps_error=None):
    """Smallest σ (within a factor 1 + rtol) with the PLD upper ε of DP-SGD at or below ``target``,
    for every (q, steps, δ, target) of the broadcast inputs.  Returns ``(sigma, (lower, estimate,
    upper))`` at σ, arrays of the broadcast shape; σ = inf where no σ up to 1e12 meets the target."""
    q, steps, delta, target = np.broadcast_arrays(*(np.asarray(x, float) for x in (q, steps, delta, target)))
    shape = q.shape
    out = np.full((4, q.size), np.nan)
    cache: dict = {}
    for i, key in enumerate(zip(q.ravel(), steps.ravel(), delta.ravel(), target.ravel())):
        if key not in cache:
            cache[key] = _one(*key, rtol=rtol, eps_error=eps_error)
        out[:, i] = cache[key]
    sigma, lower, est, upper = (o.reshape(shape) for o in out)
    return sigma, (lower, est, upper)


def _one(q, steps, delta, target, *, rtol, eps_error):
    from dpcalc.engine.dpsgd import noise_calibration

    if not (target > 0 and math.isfinite(target)):
        raise InputError(f"--target-epsilon: must be a finite number > 0, got {target:g}")

    def upper(sigma):
        b = sgd_epsilon_pld(q, sigma, steps, delta, eps_error)
        return float(b.upper), (float(b.lower), float(b.estimate), float(b.upper))

    start, _ = noise_calibration.calibrate_noise(q, steps, delta, target, conversion="balle", rtol=1e-3)
    hi = float(start) if np.isfinite(start) else 1.0
    u, b_hi = upper(hi)
    for _ in range(_MAX_EXPANSIONS):
        if u <= target:
            break
        hi *= 1.25
        if hi > 1e12:
            return math.inf, math.nan, math.nan, math.nan
        u, b_hi = upper(hi)
    else:  # pragma: no cover - 1.25^60 covers any start
        return math.inf, math.nan, math.nan, math.nan
    lo = hi / 1.1
    for _ in range(_MAX_EXPANSIONS):
        if lo < 1e-6:
            return hi, *b_hi
        u, b = upper(lo)
        if u > target:
            break
        hi, b_hi = lo, b
        lo = hi / 1.5
    while hi / lo > 1.0 + rtol:
        mid = math.sqrt(lo * hi)
        u, b = upper(mid)
        if u <= target:
            hi, b_hi = mid, b
        else:
            lo = mid
    return hi, *b_hi
