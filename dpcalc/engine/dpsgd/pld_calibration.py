"""The inverse questions with the tight accountant (docs/math.md §7; DP-SGD's Poisson-subsampled
Gaussian, add/remove neighbours): the smallest noise multiplier, the largest number of steps and the
largest sample rate (or batch size) whose *certified* PLD ε is within a target.

Each search starts from the RDP answer (cheap and close: RDP's ε lies above the exact one, so the tight
answer lies on the far side of it) and runs :func:`dpcalc.engine.pld.search.boundary`: few PLD
evaluations, interpolation in (log x, log ε), and a confirmation one tolerance step away.  Every value
returned is one at which the certified upper end of the PLD bracket was computed and found at or below
the target (soundness); the neighbour one step further was computed and found above it.
"""

from __future__ import annotations

import math
import warnings

import numpy as np

from dpcalc.engine import _special
from dpcalc.engine._numerics import sorted_unique
from dpcalc.engine.dpsgd import accounting, noise_calibration, rate_budget, step_budget
from dpcalc.engine.dpsgd.pld_accounting import sgd_epsilon_pld, sgd_epsilon_pld_remove
from dpcalc.engine.pld.bracket import MAX_COUNT
from dpcalc.engine.pld.search import SIGMA_RANGE, _answer, _check_target, _held, _search
from dpcalc.errors import DpcalcWarning

#: The Rényi orders of the RDP answers a search starts from (whole numbers: the cheap part of the series).
START_ORDERS = sorted_unique(np.concatenate([np.arange(2.0, 64.0), np.round(np.geomspace(64, 4096, 20))]))


def _pld(q, sigma, steps, delta, eps_error, setting=None):
    """``(upper, Found)`` of DP-SGD's PLD bracket (:func:`_held`); ``setting``: the keywords of
    :func:`sgd_epsilon_pld` beyond plain Poisson sampling under add/remove (``neighbors``, ``dataset_size``
    and ``max_batch_size``)."""
    return _held(lambda: sgd_epsilon_pld(q, sigma, steps, delta, eps_error, **(setting or {})))


def _steer(q, sigma, steps, delta, eps_error):
    """``(upper, Found)`` of the "remove" direction alone: for the locating stage of a search only."""
    return _held(lambda: sgd_epsilon_pld_remove(q, sigma, steps, delta, eps_error))


def _rdp_start_eps(q, sigma, steps, delta) -> float:
    """DP-SGD's RDP ε on :data:`START_ORDERS` (Balle et al.'s conversion)."""
    return float(
        accounting.epsilon_rdp(
            q, sigma, steps, delta, conversion="balle", orders=START_ORDERS, warn=False
        ).epsilon
    )


def _rdp_slope(eps_of, x: float) -> float | None:
    """d log ε / d log x of an RDP answer at ``x`` (a hint for the PLD search's first move), or None."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DpcalcWarning)
        v0, v1 = float(eps_of(x)), float(eps_of(x * 1.01))
    if not (0 < v0 < math.inf and 0 < v1 < math.inf) or v0 == v1:
        return None
    return (math.log(v1) - math.log(v0)) / math.log(1.01)


def _nothing_fits(least: str, q, sigma) -> None:
    where = f"sample rate {q:g}, " if q is not None else ""
    warnings.warn(
        f"--target-epsilon: even {least} exceeds the target ({where}noise multiplier {sigma:g}; "
        "the row has no epsilon)",
        DpcalcWarning,
        stacklevel=4,
    )


def _per_row(fn, arrays):
    """``fn(*row)`` -> 4 numbers for every row of the broadcast ``arrays`` (distinct rows once)."""
    arrays = np.broadcast_arrays(*(np.asarray(x, float) for x in arrays))
    shape = arrays[0].shape
    out = np.full((4, arrays[0].size), np.nan)
    cache: dict = {}
    for i, key in enumerate(zip(*(a.ravel() for a in arrays))):
        if key not in cache:
            cache[key] = fn(*(float(k) for k in key))
        out[:, i] = cache[key]
    return tuple(o.reshape(shape) for o in out)


def calibrate_noise_pld(q, steps, delta, target, *, rtol=1e-3, eps_error=None, setting=None):
    """Smallest σ (within a factor 1 + rtol) with the PLD upper ε of DP-SGD at or below ``target``,
    for every (q, steps, δ, target) of the broadcast inputs.  Returns ``(sigma, (lower, estimate,
    upper))`` at σ, arrays of the broadcast shape; σ = inf where no σ up to 1e12 meets the target.
    ``setting`` (see :func:`_pld`): another sampler or relation; the search then starts from plain Poisson
    sampling's RDP answer and is not steered by the "remove" direction alone."""

    def one(q, steps, delta, target):
        _check_target(target)
        # the start only steers: whole orders and the math module's lgamma (no scipy import, ~0.15 s)
        with _special.light_start():
            start, _ = noise_calibration.calibrate_noise(
                q, steps, delta, target, conversion="balle", rtol=1e-3, orders=START_ORDERS
            )
            start = float(start) if np.isfinite(start) else 1.0
            slope = _rdp_slope(lambda s: _rdp_start_eps(q, s, steps, delta), start)
        found = _search(
            lambda err: lambda s: _pld(q, s, steps, delta, err, setting),
            eps_error,
            target,
            start,
            slope_hint=slope,
            steer=None if setting else lambda err: lambda s: _steer(q, s, steps, delta, err),
            ok_above=True,
            lo=SIGMA_RANGE[0],
            hi=SIGMA_RANGE[1],
            rtol=rtol,
        )
        return _answer(math.inf if found.x is None else found.x, found)

    sigma, lower, est, upper = _per_row(one, (q, steps, delta, target))
    return sigma, (lower, est, upper)


def max_steps_pld(q, sigma, delta, target, *, eps_error=None, steps_max=MAX_COUNT, setting=None):
    """Largest number of steps T (at most ``steps_max``) with the PLD upper ε of DP-SGD at or below
    ``target``; 0 where even one step misses it.  Returns ``(steps, (lower, estimate, upper))`` at T
    (nan where T = 0), arrays of the broadcast shape.  ``setting``: as :func:`calibrate_noise_pld`."""

    def one(q, sigma, delta, target):
        _check_target(target)
        with warnings.catch_warnings():  # the RDP answer is only a starting point
            warnings.simplefilter("ignore", DpcalcWarning)
            start, _ = step_budget.max_steps(q, sigma, delta, target, conversion="balle")
        start = float(start) if float(start) >= 1 else 1.0
        found = _search(
            lambda err: lambda t: _pld(q, sigma, t, delta, err, setting),
            eps_error,
            target,
            start,
            steer=None if setting else lambda err: lambda t: _steer(q, sigma, t, delta, err),
            ok_above=False,
            lo=1.0,
            hi=float(steps_max),
            integer=True,
        )
        if found.x is None:
            _nothing_fits("one step", q, sigma)
        return _answer(0.0 if found.x is None else found.x, found)

    steps, lower, est, upper = _per_row(one, (q, sigma, delta, target))
    return steps, (lower, est, upper)


def max_sample_rate_pld(
    sigma, steps, delta, target, *, dataset_size=None, epochs=None, eps_error=None, rtol=1e-4, setting=None
):
    """Largest sample rate q in (0, 1] (within a factor 1 + rtol) with the PLD upper ε of DP-SGD at or
    below ``target``; with ``dataset_size`` N, the largest batch size B (q = B/N, a whole number in
    [1, N]).  With ``epochs`` E instead of ``steps`` the run has ceil(E/q) steps, which shrink as q
    grows.  Returns ``(q, (lower, estimate, upper))`` (q = 0 where nothing meets the target).
    ``setting``: as :func:`calibrate_noise_pld`."""
    steps = np.nan if steps is None else steps
    epochs = np.nan if epochs is None else epochs
    n_all = np.nan if dataset_size is None else dataset_size

    def one(sigma, steps, epochs, n, delta, target):
        _check_target(target)
        whole = math.isfinite(n)

        def q_of(x):
            return x / n if whole else x

        def t_of(x):  # the run's steps at rate (or batch size) x, as the forward command counts them
            if math.isfinite(steps):
                return steps
            return max(math.ceil(epochs * n / x if whole else epochs / x), 1)

        with warnings.catch_warnings():  # the RDP answer is only a starting point
            warnings.simplefilter("ignore", DpcalcWarning)
            start, _ = rate_budget.max_sample_rate(
                sigma,
                steps if math.isfinite(steps) else None,
                delta,
                target,
                epochs=epochs if math.isfinite(epochs) else None,
                dataset_size=n if whole else None,
                conversion="balle",
            )
        start = float(start)
        start = start * n if whole else start
        found = _search(
            lambda err: lambda x: _pld(q_of(x), sigma, t_of(x), delta, err, setting),
            eps_error,
            target,
            max(start, 1.0 if whole else 1e-12),
            steer=None if setting else lambda err: lambda x: _steer(q_of(x), sigma, t_of(x), delta, err),
            ok_above=False,
            lo=1.0 if whole else 1e-12,
            hi=n if whole else 1.0,
            integer=whole,
            rtol=rtol,
        )
        if found.x is None:
            _nothing_fits("a batch of one" if whole else "a sample rate of 1e-12", None, sigma)
        return _answer(0.0 if found.x is None else q_of(found.x), found)

    q, lower, est, upper = _per_row(one, (sigma, steps, epochs, n_all, delta, target))
    return q, (lower, est, upper)
