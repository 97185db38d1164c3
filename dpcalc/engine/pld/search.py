"""The boundary of a monotone, expensive, certified test: where the PLD upper end of ε crosses a target
as one parameter (the noise multiplier, the number of steps, the sample rate or batch size) moves.

Each evaluation is a whole PLD computation (a tenth of a second or more), so the search makes few:
it starts from a cheap guess (the RDP answer), expands geometrically until the crossing is bracketed,
then interpolates in (log x, log ε) — ε is close to a power of x, so the line through two points lands
near the crossing — nudged to the side that meets the target, and confirms with the neighbouring
point (one tolerance step away).  Where interpolation stalls it bisects.

Soundness does not depend on the interpolation: the value returned is one at which the certified
upper end was computed and found at or below the target; the neighbour one tolerance step further
was computed and found above it (or is outside the allowed range).

The inverse questions of the accountants (docs/math.md §7: DP-SGD's in
:mod:`dpcalc.engine.dpsgd.pld_calibration`, a composition's in :mod:`dpcalc.engine.composition.pld`) run
:func:`_search`: the crossing located with coarse brackets (cheap, and their upper ends still certified),
then decided by :func:`boundary` at the requested accuracy.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable
from typing import NamedTuple

from dpcalc.errors import DpcalcWarning, InputError


class Boundary(NamedTuple):
    """``x``: the extreme value meeting the target (None if none in range); ``info``: what the test
    returned there; ``evaluations``: how many tests were run."""

    x: float | None
    info: object
    evaluations: int
    slope: float | None = None
    crossing: float | None = None


def boundary(
    test: Callable[[float], tuple[float, object]],
    target: float,
    start: float,
    *,
    ok_above: bool,
    lo: float,
    hi: float,
    integer: bool = False,
    rtol: float = 1e-4,
    first_step: float = 1.1,
    slope: float | None = None,
    max_evaluations: int = 80,
) -> Boundary:
    """The extreme ``x`` in ``[lo, hi]`` with ``test(x)[0] <= target``: the smallest such x when the test
    is met for large x (``ok_above``, e.g. the noise multiplier), the largest when it is met for small
    x (steps, sample rate).  ``test(x)`` returns ``(value, info)``; a value of inf (or nan) counts as
    missing the target.  ``integer``: x is a whole number and the neighbour is x ± 1; otherwise the
    neighbour is x·(1 + rtol)^(∓1).  The answer is None when even the most favourable end of the
    range misses the target; the favourable end itself when the whole range meets it.

    ``first_step``: the factor of the first move away from ``start`` (the expected distance of the
    answer from the guess); later moves follow the secant through the points seen, at least doubling.
    Near the crossing each round evaluates a pair of neighbours (one tolerance step apart) around the
    secant's prediction: when the pair straddles the target the search is over.  ``slope``: d log
    value / d log x if known (say from a coarser search), used while only one point has been seen.
    The answer carries the slope of its last secant and the secant's crossing, for a finer search to
    start from.
    """
    seen: dict[float, tuple[float, object]] = {}

    def ev(x: float) -> float:
        if x not in seen:
            v, info = test(x)
            v = float(v)
            seen[x] = (v if v == v else math.inf, info)
        return seen[x][0]

    def ok(v: float) -> bool:
        return v <= target

    sign = -1.0 if ok_above else 1.0  # the direction of x in which the test gets harder to meet

    def done(good: float, bad: float) -> bool:
        if integer:
            return abs(bad - good) <= 1.0
        return max(good, bad) / min(good, bad) <= 1.0 + rtol * 1.0000001

    x = _fit(start, lo, hi, integer)
    good, bad = (x, None) if ok(ev(x)) else (None, x)
    # expand until the crossing is bracketed (or the range ends): towards the secant's crossing (a
    # pair of neighbours around it) where the points seen predict one, else by ``factor``
    factor = first_step
    while good is None or bad is None:
        if len(seen) >= max_evaluations:
            break
        here = good if bad is None else bad
        towards = sign if bad is None else -sign  # from a good point towards harder x, and back
        guess = _secant(seen, target, slope)
        if guess is not None and guess > 0 and 1.0 < (guess / here) ** towards < 16.0:
            moved = False
            for p in _pair(guess, rtol, integer, nearest=here):
                p = _fit(p, lo, hi, integer)
                if (p - here) * towards <= 0 or (not integer and abs(math.log(p / here)) < 0.25 * rtol):
                    continue  # not beyond here (by a quarter of a tolerance step at least)
                if not integer and abs(math.log(p / here)) < 2.0 * rtol:  # just beyond: the neighbour
                    p = _fit(here * (1.0 + rtol) ** towards, lo, hi, integer)
                moved = True
                if ok(ev(p)):
                    good = p
                else:
                    bad = p
                if good is not None and bad is not None:
                    break
                here = p  # the pair's second point is judged from the first (its neighbour if close)
            if moved:
                continue
        nxt = _fit(here * factor if towards > 0 else here / factor, lo, hi, integer)
        if nxt == here and integer:
            nxt = _fit(here + towards, lo, hi, integer)
        if nxt == here:  # the range ends: all of it meets the target, or none of it
            return Boundary(good, seen[good][1] if good is not None else None, len(seen))
        if ok(ev(nxt)):
            good = nxt
        else:
            bad = nxt
        factor = min(factor * factor, 1e6)
    if good is None:
        return Boundary(None, None, len(seen))
    if bad is None:  # evaluations ran out while expanding: the best found is still sound
        return Boundary(good, seen[good][1], len(seen))
    # shrink: a pair of neighbours around the secant's crossing (through the two points nearest it),
    # or around the mid-point when the secant is no help
    stalls = 0
    while not done(good, bad) and len(seen) < max_evaluations:
        a, b = min(good, bad), max(good, bad)
        guess = _secant(seen, target, slope) if stalls < 2 else None
        if guess is None or not (a < guess < b):
            guess = _between(good, bad, integer)
            stalls = 0
        if guess is None:
            break
        pair = _pair(guess, rtol, integer)
        width = math.log(b / a)
        for p in pair:
            p = _fit(p, lo, hi, integer)
            lo_now, hi_now = min(good, bad), max(good, bad)
            if not (lo_now < p < hi_now):
                continue
            if ok(ev(p)):
                good = p
            else:
                bad = p
        new_width = math.log(max(good, bad) / min(good, bad))
        stalls = stalls + 1 if new_width > 0.5 * width else 0
    return Boundary(good, seen[good][1], len(seen), _slope(seen, target), _secant(seen, target, slope))


def _pair(guess: float, rtol: float, integer: bool, nearest: float | None = None) -> list[float]:
    """Two neighbours one tolerance step apart around ``guess`` (the one nearer ``nearest`` first)."""
    if integer:
        pair = [float(math.floor(guess)), float(math.floor(guess)) + 1.0]
    else:
        half = math.sqrt(1.0 + rtol)
        pair = [guess / half, guess * half]
    if nearest is not None:
        pair.sort(key=lambda p: abs(p - nearest))
    return pair


def _between(good: float, bad: float, integer: bool) -> float | None:
    """A point strictly between ``good`` and ``bad`` (the geometric or integer mid-point), or None."""
    a, b = min(good, bad), max(good, bad)
    if integer:
        mid = float(math.floor((a + b) / 2.0))
        return mid if a < mid < b else None
    mid = math.sqrt(a * b)
    return mid if a < mid < b else None


def _nearest(seen: dict, target: float) -> list:
    """``(x, value)`` of the evaluated points with finite positive values, nearest the target first."""
    pts = [(abs(math.log(v / target)), x, v) for x, (v, _) in seen.items() if 0 < v < math.inf]
    return [(x, v) for _, x, v in sorted(pts)]


def _secant(seen: dict, target: float, slope: float | None = None) -> float | None:
    """The crossing of log target by the line through the two evaluated points whose values are
    nearest it (in log value), or through the one point seen with the given ``slope``; or None."""
    pts = _nearest(seen, target)
    if len(pts) >= 2:
        (x0, v0), (x1, v1) = pts[0], pts[1]
        return _interpolate(x0, v0, x1, v1, target)
    if pts and slope:
        x0, v0 = pts[0]
        return _exp_or_none(math.log(x0) + (math.log(target) - math.log(v0)) / slope)
    return None


def _exp_or_none(y: float) -> float | None:
    """``e^y``, or None where that is beyond double range (a line that never reaches the target there)."""
    return math.exp(y) if y < 709.0 else None


def _slope(seen: dict, target: float) -> float | None:
    """d log value / d log x through the two points nearest the target (None if not available)."""
    pts = _nearest(seen, target)
    if len(pts) < 2 or pts[0][0] == pts[1][0]:
        return None
    (x0, v0), (x1, v1) = pts[0], pts[1]
    return (math.log(v1) - math.log(v0)) / (math.log(x1) - math.log(x0))


def _fit(x: float, lo: float, hi: float, integer: bool) -> float:
    x = min(max(x, lo), hi)
    if integer:
        x = float(math.floor(x + 0.5))
        x = min(max(x, math.ceil(lo)), math.floor(hi))
    return float(x)


def _interpolate(x0: float, v0: float, x1: float, v1: float, target: float) -> float | None:
    """Where the line through (log x0, log v0) and (log x1, log v1) reaches log target (None when the
    values do not allow it: infinite or non-positive values, a flat line)."""
    if not (0 < v0 < math.inf and 0 < v1 < math.inf and target > 0):
        return None
    a0, a1 = math.log(x0), math.log(x1)
    b0, b1 = math.log(v0), math.log(v1)
    if b1 == b0:
        return None
    t = (math.log(target) - b0) / (b1 - b0)
    return _exp_or_none(a0 + t * (a1 - a0))


# ------------------------------------------------------------- the two-stage search of an inverse question
#: The noise multipliers searched.
SIGMA_RANGE = (1e-6, 1e12)


def _check_target(target: float) -> None:
    if not (target > 0 and math.isfinite(target)):
        raise InputError(f"--target-epsilon: must be a finite number > 0, got {target:g}")


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


def _answer(x, found) -> tuple:
    """``(x, lower, estimate, upper)`` of a search's answer, giving the warnings held at that point."""
    if found.x is None:
        return (x, math.nan, math.nan, math.nan)
    for message in found.info.warnings:
        warnings.warn(message, DpcalcWarning, stacklevel=3)
    return (x, *found.info.bracket)
