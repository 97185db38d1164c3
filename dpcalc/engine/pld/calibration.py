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
from typing import NamedTuple

import numpy as np

from dpcalc.engine.pld.accountant import MAX_COUNT, sgd_epsilon_pld, sgd_epsilon_pld_remove
from dpcalc.engine.pld.search import boundary
from dpcalc.errors import DpcalcWarning, InputError

#: The noise multipliers searched.
SIGMA_RANGE = (1e-6, 1e12)
#: The Rényi orders of the RDP answers a search starts from (whole numbers: the cheap part of the series).
START_ORDERS = np.unique(np.concatenate([np.arange(2.0, 64.0), np.round(np.geomspace(64, 4096, 20))]))


def _check_target(target: float) -> None:
    if not (target > 0 and math.isfinite(target)):
        raise InputError(f"--target-epsilon: must be a finite number > 0, got {target:g}")


def _pld(q, sigma, steps, delta, eps_error, setting=None):
    """``(upper, Found)`` of DP-SGD's PLD bracket (:func:`_held`); ``setting``: the keywords of
    :func:`sgd_epsilon_pld` beyond plain Poisson sampling under add/remove (``neighbors``, ``dataset_size``
    and ``max_batch_size``)."""
    return _held(lambda: sgd_epsilon_pld(q, sigma, steps, delta, eps_error, **(setting or {})))


def _steer(q, sigma, steps, delta, eps_error):
    """``(upper, Found)`` of the "remove" direction alone: for the locating stage of a search only."""
    return _held(lambda: sgd_epsilon_pld_remove(q, sigma, steps, delta, eps_error))


def _held(compute):
    """``(upper, Found)`` of the bracket ``compute()`` returns; a configuration the accountant cannot
    certify (a refusal) counts as missing every target.  Warnings (a bracket wider than asked) are held
    in the answer, and given once for the point the search returns (:func:`_answer`), not for every
    point tried."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", DpcalcWarning)
        try:
            b = compute()
        except InputError:
            return math.inf, _Found((math.nan, math.nan, math.nan), ())
    held = tuple(w.message for w in caught if issubclass(w.category, DpcalcWarning))
    return float(b.upper), _Found((float(b.lower), float(b.estimate), float(b.upper)), held)


class _Found(NamedTuple):
    bracket: tuple
    warnings: tuple


#: The bracket width (relative to the target) of the first, locating stage of a search.
COARSE = 0.02
#: Its tolerance, in multiples of the search's own.
COARSE_RTOL_FACTOR = 20
#: The coarse upper end's excess over the fine one, relative to ε, per (width/ε)² (0.13–0.21 measured
#: on DP-SGD configurations; see tests/test_pld_inverse.py).
COARSE_EXCESS = 0.16


def _locate(test, aim, start, slope_hint, lo, hi, rtol):
    """``(crossing, slope)`` of ``test``'s value through ``aim``, from two or three coarse evaluations:
    at ``start``, where ``slope_hint`` (d log ε / d log x, e.g. the RDP curve's) predicts the crossing,
    and, when the line through those two may be off by more than a quarter of ``rtol`` (its error
    grows like the product of the two points' distances from the crossing, times the curvature of
    log ε in log x: at most about 3 on DP-SGD curves), at the line's crossing.  ``None`` when the
    points do not give a usable line (then the coarse search runs instead)."""
    pts = []

    def add(x):
        v = test(x)[0]
        if not (0 < v < math.inf):
            return False
        pts.append((math.log(x), math.log(v)))
        return True

    if not add(start):
        return None
    step = max(-2.0, min(2.0, (math.log(aim) - pts[0][1]) / slope_hint))
    if abs(step) < 1e-6 or not add(min(max(start * math.exp(step), lo), hi)):
        return None
    while True:
        (a0, b0), (a1, b1) = sorted(pts, key=lambda p: abs(p[1] - math.log(aim)))[:2]
        if b1 == b0 or a1 == a0:
            return None
        slope = (b1 - b0) / (a1 - a0)
        if not slope * slope_hint > 0:
            return None
        x = a0 + (math.log(aim) - b0) / slope
        error = 3.0 * 0.5 * abs((x - a0) * (x - a1)) / abs(slope)
        if error <= 0.25 * rtol or len(pts) == 3:
            break
        if not add(min(max(math.exp(x), lo), hi)):
            return None
    x = math.exp(x)
    # a usable line predicts a crossing near its points (the hint was close)
    return (x, slope) if abs(math.log(x) - a0) < 0.05 and lo <= x <= hi else None


def _search(make, eps_error, target, start, *, integer=False, rtol=1e-4, slope_hint=None, steer=None, **kw):
    """:func:`~dpcalc.engine.pld.search.boundary` of ``make(eps_error)`` (a test at the requested
    accuracy), located first with ``make(COARSE × target)``.

    A coarse bracket costs a quarter of a fine one, and its upper end is still certified and close to
    the fine one (the upper end's excess grows like the square of the width: about 6e-5 of ε at a
    width of 2 %).  So the coarse search finds the crossing to within a few tolerances, and the
    fine search, started there with the neighbour as its first step, usually ends after two
    evaluations.  Every answer is decided by evaluations at the requested accuracy.

    ``steer``: a cheaper test for the locating stage only (e.g. the worse direction of the pair alone,
    whose upper end is not a bound); ``slope_hint``: d log ε / d log x near ``start`` (:func:`_locate`)."""
    kw = dict(kw, integer=integer, rtol=rtol)
    coarse = COARSE * target
    if eps_error is None or eps_error < coarse:
        # the locating stage needs the crossing to a few tolerances only: the fine stage finishes it
        # aimed where the fine upper end will cross: the coarse upper end lies above the fine one by
        # about COARSE_EXCESS × (width/ε)² of ε (measured; it only steers, the fine stage decides)
        aim = target * (1.0 + COARSE_EXCESS * COARSE**2)
        line = None
        if slope_hint and not integer:
            # two coarse evaluations: the start, then where the hint's slope predicts the crossing;
            # the line through them lands within a fraction of a percent of it
            line = _locate((steer or make)(coarse), aim, start, slope_hint, kw["lo"], kw["hi"], rtol)
        if line is not None:
            x, slope = line
        else:
            located = boundary(
                (steer or make)(coarse), aim, start, **dict(kw, rtol=COARSE_RTOL_FACTOR * rtol)
            )
            x, slope = located.crossing, located.slope
            if located.x is not None:
                start = located.x
                lo_x, hi_x = sorted((located.x, x if x is not None else located.x))
                if not (x is not None and lo_x <= x <= hi_x * (1 + 1e-9) and abs(math.log(x / start)) < 0.05):
                    x = None
            else:
                x = slope = None
        if x is not None:
            # start half a tolerance on the side that meets the target: then the first step, the
            # neighbour, most often lands on the other side and the search is over
            ok_above = kw.get("ok_above")
            half = math.sqrt(1.0 + rtol)
            if integer:
                start = float(math.ceil(x) if ok_above else math.floor(x))
            else:
                start = x * half if ok_above else x / half
        if x is not None or line is None and located.x is not None:
            kw["first_step"] = 1.0 + 1e-12 if integer else 1.0 + rtol
            kw["slope"] = slope
    return boundary(make(eps_error), target, start, **kw)


def _rdp_start_eps(q, sigma, steps, delta) -> float:
    """DP-SGD's RDP ε on :data:`START_ORDERS` (Balle et al.'s conversion)."""
    from dpcalc.engine.dpsgd import accounting

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


def _answer(x, found) -> tuple:
    """``(x, lower, estimate, upper)`` of a search's answer, giving the warnings held at that point."""
    if found.x is None:
        return (x, math.nan, math.nan, math.nan)
    for message in found.info.warnings:
        warnings.warn(message, DpcalcWarning, stacklevel=3)
    return (x, *found.info.bracket)


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
        from dpcalc.engine import _special
        from dpcalc.engine.dpsgd import noise_calibration

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
        from dpcalc.engine.dpsgd import step_budget

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
        from dpcalc.engine.dpsgd import rate_budget

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


def calibrate_compose_pld(
    fill, delta, target, *, rtol=1e-4, eps_error=None, start=1.0, ok_above=True, lo=None, hi=None
):
    """Smallest σ (within a factor 1 + rtol) such that the PLD upper ε(δ) of the composition
    ``fill(σ)`` (a list of mechanism specs, the σ put into the spec or specs that left it out) is at
    or below ``target``.  Returns ``(sigma, lower, estimate, upper)``; σ = inf where no σ up to 1e12
    meets the target.

    Any other parameter the privacy grows with (a Laplace scale) is searched the same way; with
    ``ok_above=False`` (a per-release ε: smaller is more private) the *largest* value in ``[lo, hi]``
    is returned, and 0 where none meets the target."""
    from dpcalc.engine.pld.accountant import compose_pld

    _check_target(target)
    lo = SIGMA_RANGE[0] if lo is None else lo
    hi = SIGMA_RANGE[1] if hi is None else hi

    def make(err):
        return lambda sigma: _held(lambda: compose_pld(fill(sigma), delta=delta, eps_error=err))

    found = _search(make, eps_error, target, start, ok_above=ok_above, lo=lo, hi=hi, rtol=rtol)
    return _answer((math.inf if ok_above else 0.0) if found.x is None else found.x, found)
