"""Fully adaptive composition of Gaussian mechanisms under μ-GDP: a filter, the exact (ε, δ) profile of
μ-GDP, and an odometer built from a ladder of filters.

**The filter (Smith & Thakurta 2022, "Fully Adaptive Composition for Gaussian Differential Privacy",
arXiv:2210.17520, main theorem).**  An analyst interacts with a data set in rounds; in round i it picks,
as any function of the answers so far, a mechanism that is μ_i-GDP (a Gaussian mechanism with ℓ₂-sensitivity
Δ_i and noise σ_i is μ_i = Δ_i/σ_i-GDP; Dong, Roth & Su 2022, arXiv:1905.02383, Thm 2.7).  If every
realisation of the interaction keeps ``Σ_i μ_i² ≤ μ²``, the whole interaction is μ-GDP: the same parameter
as non-adaptive composition (Dong, Roth & Su 2022, Cor. 3.3).  In the language of Rogers, Roth, Ullman &
Vadhan 2016 (arXiv:1605.08294) this is a filter that sums the squares of the budgets and compares them with a
threshold.  (We could read only the paper's abstract and introduction here, where the result is summarised
as above; the theorem's number and exact wording could not be checked.)

*Refused steps.*  :func:`gdp_filter` answers a step only if the squares of the steps that ran, plus its own,
stay within μ²; otherwise it refuses, and a refused step costs nothing: its output (the word "refused") is a
function of the budgets alone, which are functions of the past answers, so it is a 0-GDP mechanism.  The
theorem's condition then holds on every realisation, so later steps that fit may still run
(``halt=False``, the default).  ``halt=True`` stops at the first refusal instead (the stopping-time form of
Rogers et al.'s filters).  Both are covered by the theorem.

**The odometer.**  Smith & Thakurta give a filter, not a running bound; a running bound valid at every
stopping time is built here from a ladder of their filters, by the argument of Lécuyer 2021
(arXiv:2103.01379, Thm 2), where it turns Rényi filters into an odometer: see :func:`gdp_odometer_epsilon`.
Neither Smith & Thakurta's abstract and introduction nor Whitehouse et al.'s abstract (the parts we could
read) mention a GDP odometer.
:func:`gdp_odometer` is the plain running μ = √Σμ_i², a valid GDP parameter only for a schedule fixed in
advance (or as the budget of a filter fixed in advance), not for an adaptively stopped interaction.

**No PLD / f-DP filter.**  Tran, Koskela, Räisä & Honkela 2026 (arXiv:2602.06756, "f-Differential Privacy
Filters: Validity and Approximate Solutions") show that the natural f-DP filter — compose the trade-off
curves (equivalently the privacy-loss distributions) of the steps along the realised path and stop when the
prescribed curve would be crossed — is invalid under fully adaptive composition in general, so exact
PLD/FFT accounting cannot be used to run a filter.  They characterise when it is valid and give only an
approximate, central-limit-based GDP filter for subsampled Gaussians (asymptotic in the sampling rate, and
optimistic at realistic rates), which is not a certified bound, so dpcalc offers the Rényi filter, the GDP
filter of this module and the (ε, δ) filter of :mod:`dpcalc.engine.adaptive.approx_dp`.

Everything is vectorised with numpy (the filter's admissions loop over refusal events, never over rows); values
are rounded to the safe side: sums of squares up, budgets and μ from (ε, δ) down, ε and δ up.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

from dpcalc.engine._numerics import next_up
from dpcalc.engine.mechanisms.gaussian_exact import delta_gaussian, eps_gaussian, sigma_gaussian
from dpcalc.errors import InputError, UncertifiedError

_U = float(np.finfo(float).eps) / 2.0  # unit roundoff 2^-53
#: Σ_{j≥1} 6/(π² j²) = 1: the share of δ given to rung j of the odometer's ladder, rounded down.
_ZETA2_INV = float(np.nextafter(6.0 / math.pi**2, 0.0))
#: The first window of steps examined by :func:`admit_within` (doubled while no step is refused).
_WINDOW = 64


# ---------------------------------------------------------------------------------------------------------
# input checks and safe sums


def check_mus(mus, name: str = "mus") -> np.ndarray:
    """Per-step GDP parameters as a 1-D float array of finite values >= 0 (:class:`InputError` otherwise)."""
    m = np.atleast_1d(np.asarray(mus, dtype=float))
    if m.ndim != 1:
        raise InputError(f"{name}: give a 1-D list of per-step values")
    if not np.all(np.isfinite(m) & (m >= 0)):
        raise InputError(f"{name}: every value must be a finite number >= 0")
    return m


def _check_positive(x, name: str) -> float:
    v = float(x)
    if not (math.isfinite(v) and v > 0):
        raise InputError(f"{name}: must be a finite number > 0, got {x!r}")
    return v


def _check_delta(delta, name: str = "--delta") -> float:
    d = float(delta)
    if not (0.0 < d < 1.0):
        raise InputError(f"{name}: must lie in (0, 1), got {delta!r}")
    return d


def two_sum_error(a, b):
    """The exact rounding error of ``fl(a + b)``: ``a + b = fl(a + b) + e`` (Knuth's TwoSum; Higham 2002,
    "Accuracy and Stability of Numerical Algorithms", §4.3, Alg. 4.4), elementwise, round-to-nearest."""
    a = np.asarray(a, dtype=float)
    b = np.asarray(b, dtype=float)
    with np.errstate(invalid="ignore", over="ignore"):
        s = a + b
        bb = s - a
        return (a - (s - bb)) + (b - bb)


def add_up(a, b):
    """``a + b`` rounded up: ``fl(a + b)``, moved one ulp up only where the addition was inexact."""
    a = np.asarray(a, dtype=float)
    b = np.asarray(b, dtype=float)
    with np.errstate(invalid="ignore", over="ignore"):
        s = a + b
    return np.where(two_sum_error(a, b) > 0, next_up(s), s)


def exact_square(x) -> tuple[np.ndarray, np.ndarray]:
    """``(hi, lo)`` with ``x² ≤ hi + lo`` and equality where it can be certified: ``hi = fl(x²)`` and ``lo`` its
    exact error by Dekker's product (Veltkamp's split; Higham 2002, §4.3 / Dekker 1971) for 2^-400 ≤ x ≤
    2^500; outside that range (where the split could underflow or overflow) ``hi = fl(x²)`` rounded up and
    ``lo = 0``.  x = 0 gives (0, 0)."""
    x = np.asarray(x, dtype=float)
    with np.errstate(over="ignore", invalid="ignore"):
        hi = x * x
        c = 134217729.0 * x  # 2^27 + 1
        xh = c - (c - x)
        xl = x - xh
        lo = ((xh * xh - hi) + 2.0 * xh * xl) + xl * xl
    safe = (x >= 2.0**-400) & (x <= 2.0**500)
    hi = np.where(safe | (x == 0), hi, next_up(hi))
    lo = np.where(safe, lo, 0.0)
    return hi, lo


def square_down(x) -> np.ndarray:
    """``x²`` rounded down (exactly ``fl(x²)`` where that is not above the square)."""
    x = np.asarray(x, dtype=float)
    hi, lo = exact_square(x)
    safe = (x >= 2.0**-400) & (x <= 2.0**500)
    with np.errstate(over="ignore"):
        plain = x * x
    return np.where(safe, np.where(lo >= 0, hi, np.nextafter(hi, 0.0)), np.nextafter(plain, 0.0))


def cumsum_bound(start, start_corr, hi, lo=None) -> tuple[np.ndarray, np.ndarray]:
    """Running sums of ``start + start_corr + Σ_{m≤k} (hi_m + lo_m)`` down the first axis, as ``(s, corr)``:
    ``s_k`` is the floating-point running sum of ``start`` and the ``hi`` terms, and ``corr_k`` an upper bound
    on the rest of the exact sum (``start_corr``, the exact rounding errors of the additions and the ``lo``
    terms), 0 where all of them are 0, so that the exact sum is at most ``add_up(s_k, corr_k)`` and equals
    ``s_k`` where ``corr_k = 0``.

    The errors of the sequential sum are recovered exactly by TwoSum (:func:`two_sum_error`) from the sums
    themselves (``np.cumsum`` adds in order; this is checked); their own sum, with the ``lo`` terms, is
    bounded above by its floating-point value plus ``2(k+1)u·Σ(|e| + |lo|)`` (Higham 2002, §4.2, Eq. 4.4:
    any summation order errs by at most γ_{k−1}·Σ|t|).  ``hi``, ``lo``: shape (k, R); ``start``,
    ``start_corr``: shape (R,)."""
    hi = np.asarray(hi, dtype=float)
    lo = np.zeros_like(hi) if lo is None else np.asarray(lo, dtype=float)
    k = hi.shape[0]
    with np.errstate(invalid="ignore", over="ignore"):
        sums = np.cumsum(np.concatenate([np.asarray(start, dtype=float)[None], hi]), axis=0)
        before, s = sums[:-1], sums[1:]
        if not np.array_equal(s, before + hi, equal_nan=True):
            raise UncertifiedError("running sums: np.cumsum did not add in order; no bound certified")
        terms = two_sum_error(before, hi) + lo
        terms = np.where(np.isnan(terms), 0.0, terms)  # an infinite sum: s is inf already
        mags = np.abs(two_sum_error(before, hi)) + np.abs(lo)
        mags = np.where(np.isnan(mags), 0.0, mags)
        slack = 2.0 * (np.arange(1, k + 1) + 1.0)[:, None] * _U * np.cumsum(mags, axis=0)
        slack = np.where(slack > 0, next_up(slack), 0.0)
        corr = add_up(add_up(np.asarray(start_corr, dtype=float)[None], np.cumsum(terms, axis=0)), slack)
    return s, corr


def running_sum_up(x, lo=None) -> np.ndarray:
    """Upper bounds on the exact running sums ``Σ_{m≤n} (x_m + lo_m)`` of a 1-D array (exact where
    certifiable; :func:`cumsum_bound`)."""
    x = np.asarray(x, dtype=float)
    low = None if lo is None else np.asarray(lo, dtype=float)[:, None]
    s, corr = cumsum_bound(np.zeros(1), np.zeros(1), x[:, None], low)
    return add_up(s, corr)[:, 0]


def _all_within(sums, budgets):
    return np.all(sums <= budgets, axis=1)


def admit_within(hi, lo, budgets, *, halt: bool = False, fits=_all_within) -> np.ndarray:
    """Which steps a sum filter runs: step n runs iff, for every resource r, the exact costs
    ``hi + lo`` of the steps that ran before it plus its own sum to at most ``budgets[r]`` (tested on the
    upper bound of :func:`cumsum_bound`, which is the exact sum wherever that is certifiable).  Another
    rule may be given as ``fits(sums, budgets) -> bool per row``; it must be monotone (a row that fails
    keeps failing when any sum grows).

    ``hi``, ``lo``: shape (n,) or (n, R), ``hi + lo`` the exact non-negative costs (``lo`` may be None);
    ``budgets``: shape () or (R,), already rounded down.  ``halt=False``: a refused step costs nothing and
    later steps that fit still run; ``halt=True``: nothing runs after the first refusal.  Returns a bool
    array of shape (n,).

    The decisions are sequential (each depends on the earlier ones), but the work is vectorised: from the
    current position, a window of steps (doubled while all fit) is taken; steps that do not fit even alone
    in the remaining room are refused at once (the room only shrinks), the others' running sums are a
    cumsum, every step before the first one that overflows runs, that one is refused, and the scan resumes
    after it.  The Python loop runs once per refusal that follows an admitted step (or per window), not per
    step.
    """
    h = np.asarray(hi, dtype=float)
    h = h.reshape(h.shape[0], -1)
    low = np.zeros_like(h) if lo is None else np.asarray(lo, dtype=float).reshape(h.shape)
    b = np.broadcast_to(np.asarray(budgets, dtype=float).reshape(-1), (h.shape[1],))
    n, width = h.shape
    zero = np.zeros(width)
    if halt:
        s, corr = cumsum_bound(zero, zero, h, low)
        ok = fits(add_up(s, corr), b)
        return np.logical_and.accumulate(ok) if n else ok
    ran = np.zeros(n, dtype=bool)
    spent, spent_corr, count = zero, zero, 0
    pos, window = 0, _WINDOW
    while pos < n:
        end = min(n, pos + window)
        # a superset of the steps that fit alone (the exact test follows): the floating-point spent sum is
        # within γ_count of the exact one (Higham 2002, Eq. 4.4), and the sums only grow
        loose = b * (1.0 + 4.0 * (count + 8) * _U) + np.finfo(float).tiny
        cand = np.flatnonzero(fits(spent + h[pos:end], loose))
        if cand.size == 0:
            pos, window = end, 2 * window
            continue
        s, corr = cumsum_bound(spent, spent_corr, h[pos + cand], low[pos + cand])
        ok = fits(add_up(s, corr), b)
        first_bad = int(np.argmin(ok)) if not ok.all() else cand.size
        ran[pos + cand[:first_bad]] = True
        if first_bad:
            spent, spent_corr, count = s[first_bad - 1], corr[first_bad - 1], count + first_bad
        if first_bad == cand.size:
            pos, window = end, 2 * window
        else:
            refused = int(cand[first_bad])
            pos, window = pos + refused + 1, max(_WINDOW, 2 * (refused + 1))
    return ran


# ---------------------------------------------------------------------------------------------------------
# the (ε, δ) profile of μ-GDP


def gdp_delta(eps, mu):
    """δ(ε) of μ-GDP, exactly (an upper bound, rounded up): ``Φ(−ε/μ + μ/2) − e^ε Φ(−ε/μ − μ/2)`` (Dong, Roth &
    Su 2022, arXiv:1905.02383, Cor. 2.13; the same curve as the Gaussian mechanism's profile of Balle & Wang
    2018, arXiv:1805.06530, Thm 8, with r = μ), by
    :func:`dpcalc.engine.mechanisms.gaussian_exact.delta_gaussian`.  Broadcasts ``eps`` against ``mu``."""
    return delta_gaussian(eps, mu)


def gdp_epsilon(delta, mu):
    """The smallest ε (rounded up) with δ(ε) ≤ ``delta`` for μ-GDP (Dong, Roth & Su 2022, arXiv:1905.02383,
    Cor. 2.13), by :func:`dpcalc.engine.mechanisms.gaussian_exact.eps_gaussian` (Balle & Wang 2018, Thm 8,
    inverted by bisection).  μ = 0 gives 0.  Broadcasts ``delta`` against ``mu``."""
    return eps_gaussian(delta, mu)


def mu_of(eps, delta):
    """The largest μ (rounded down) at which μ-GDP is (ε, δ)-DP: the root of ``δ(ε; μ) = δ`` (Dong, Roth & Su
    2022, arXiv:1905.02383, Cor. 2.13), so that a budget given as (ε, δ) becomes a GDP budget.

    δ(ε; μ) is increasing in μ, and μ-GDP is exactly the privacy of a Gaussian mechanism with Δ/σ = μ (Balle &
    Wang 2018, Thm 8), so ``μ = 1/σ`` with σ the calibrated noise of
    :func:`dpcalc.engine.mechanisms.gaussian_exact.sigma_gaussian` (sensitivity 1, rounded up); the division
    is rounded down by one more ulp.  Valid for ε ≥ 0 and δ in (0, 1); broadcasts."""
    sigma = np.asarray(sigma_gaussian(eps, delta, 1.0), dtype=float)
    with np.errstate(divide="ignore"):
        out = np.nextafter(1.0 / sigma, 0.0)
    return out[()] if out.ndim == 0 else out


def mus_from_sigmas(sigmas, sensitivity=1.0) -> np.ndarray:
    """``μ_i = Δ/σ_i`` for Gaussian mechanisms (Dong, Roth & Su 2022, arXiv:1905.02383, Thm 2.7), rounded up."""
    s = np.atleast_1d(np.asarray(sigmas, dtype=float))
    if not np.all(s > 0) or np.any(np.isnan(s)):
        raise InputError("sigmas: every noise σ must be a number > 0")
    d = np.asarray(sensitivity, dtype=float)
    if not np.all(np.isfinite(d) & (d >= 0)):
        raise InputError("sensitivity: must be a finite number >= 0")
    return next_up(d / s)


# ---------------------------------------------------------------------------------------------------------
# the filter and the plain running μ


def gdp_filter(mus, budget_mu, *, halt: bool = False) -> np.ndarray:
    """Which steps the μ-GDP filter runs (Smith & Thakurta 2022, arXiv:2210.17520, main theorem).

    Step n runs iff ``Σ_{m<n, m ran} μ_m² + μ_n² ≤ μ²`` for the real numbers the doubles stand for: the
    squares are exact (Dekker's product, :func:`exact_square`) and the sum's rounding errors are recovered
    exactly (TwoSum, :func:`cumsum_bound`), so the test is exact except where the error terms themselves
    had to be rounded (then up, within about n·1e-32 relative): a step so close to the edge may be refused
    where exact arithmetic would admit it, never the reverse.  μ² is rounded down (:func:`square_down`).
    ``halt=False``: a refused step costs nothing and later steps that fit still run (see the module
    docstring); ``halt=True``: the filter stops at the first refusal.  The steps that run are together
    ``budget_mu``-GDP, whatever the analyst's adaptive choices.  Returns a bool array like ``mus``.
    """
    m = check_mus(mus)
    mu = _check_positive(budget_mu, "budget μ")
    hi, lo = exact_square(m)
    return admit_within(hi, lo, square_down(mu), halt=halt)


def gdp_odometer(mus) -> np.ndarray:
    """The running μ = √(Σ_{m≤n} μ_m²) after each step, rounded up (an upper bound).

    This is the GDP parameter of the first n steps only if the μ_m were fixed in advance (Dong, Roth & Su
    2022, Cor. 3.3), or if it is read as the budget a filter fixed in advance would need.  For an interaction
    that chooses its budgets, or when to stop, from the answers, use :func:`gdp_odometer_epsilon`."""
    m = check_mus(mus)
    return sqrt_up(running_sum_up(*exact_square(m)))


def sqrt_up(x) -> np.ndarray:
    """``√x`` rounded up: ``fl(√x)``, moved one ulp up unless its square is certified to be at least x."""
    x = np.asarray(x, dtype=float)
    r = np.sqrt(x)
    hi, lo = exact_square(r)
    exact_enough = (hi > x) | ((hi == x) & (lo >= 0))
    return np.where(exact_enough, r, next_up(r))


# ---------------------------------------------------------------------------------------------------------
# the odometer: a ladder of filters


class LadderBound(NamedTuple):
    """The GDP odometer's bound after each step: ``epsilon`` (ε at δ), the ``level`` j reached, its rung
    ``mu`` (the budget of filter j) and that rung's share ``delta`` of δ."""

    epsilon: np.ndarray
    level: np.ndarray
    mu: np.ndarray
    delta: np.ndarray


def ladder_rung(level, first_mu: float, ratio: float = 2.0) -> np.ndarray:
    """The budget μ_j of filter j: ``μ_j = first_mu · ratio^{(j−1)/2}`` (so μ_j² grows by ``ratio`` a rung)."""
    j = np.asarray(level, dtype=float)
    with np.errstate(over="ignore"):
        return first_mu * np.power(ratio, (j - 1.0) / 2.0)


def ladder_delta(level, delta: float) -> np.ndarray:
    """Rung j's share of δ: ``δ_j = 6δ/(π² j²)`` rounded down, so that ``Σ_j δ_j ≤ δ``."""
    j = np.asarray(level, dtype=float)
    return np.nextafter(np.nextafter(delta * _ZETA2_INV / (j * j), 0.0), 0.0)


def ladder_level(sum_sq, first_mu: float, ratio: float = 2.0) -> np.ndarray:
    """The level reached: the smallest j ≥ 1 with ``sum_sq ≤ μ_j²`` (μ_j² rounded down), vectorised."""
    s = np.asarray(sum_sq, dtype=float)
    b1 = first_mu * first_mu
    with np.errstate(divide="ignore", invalid="ignore"):
        guess = np.ceil(np.log(np.maximum(s, np.finfo(float).tiny) / b1) / math.log(ratio)) + 1.0
    j = np.clip(np.where(np.isfinite(guess), guess, 1.0), 1.0, 1e6)

    def within(level):
        return s <= square_down(ladder_rung(level, first_mu, ratio))

    for _ in range(3):  # the logarithm may round either way: move up while outside, down while inside
        j = np.where(within(j), j, j + 1.0)
    for _ in range(3):
        j = np.where((j > 1.0) & within(j - 1.0), j - 1.0, j)
    finite = np.isfinite(s)
    if not np.all(within(j) | ~finite):
        raise UncertifiedError("GDP odometer: the ladder has no rung for this sum (ratio too close to 1)")
    return np.where(finite, j, np.inf)


def gdp_odometer_epsilon(mus, delta: float, *, first_mu: float, ratio: float = 2.0) -> LadderBound:
    """A running (ε, δ)-DP bound of an adaptive sequence of μ_i-GDP steps, valid at every stopping time.

    Construction (Lécuyer 2021, arXiv:2103.01379, Thm 2 and its proof, with GDP filters in place of Rényi
    ones): a ladder of GDP filters fixed before the interaction, filter j with budget
    ``μ_j = first_mu·ratio^{(j−1)/2}`` (:func:`ladder_rung`) and ``δ_j = 6δ/(π² j²)`` (:func:`ladder_delta`,
    Σ_j δ_j ≤ δ).  After step n the level is the smallest j with ``Σ_{m≤n} μ_m² ≤ μ_j²``
    (:func:`ladder_level`, on the rounded-up sum) and the bound is ``ε_n = ε_{μ_j}(δ_j)``, the exact ε of
    μ_j-GDP at δ_j (:func:`gdp_epsilon`).

    Why it is valid.  Let T be the analyst's (data-dependent) stopping time and C_j the event that the
    final level is j, a function of the view.  On C_j the view has the same probability under the real
    interaction as under filter j run in halting mode (that filter never intervened), and filter j's
    interaction is μ_j-GDP (Smith & Thakurta 2022, arXiv:2210.17520, main theorem), hence (ε_j, δ_j)-DP.
    So for every event A of views, ``P(A) = Σ_j P_j(A ∩ C_j) ≤ Σ_j [e^{ε_j} Q(A ∩ C_j) + δ_j]
    ≤ E_Q[e^{ε_T} 1_A] + δ`` (and with P and Q swapped): the interaction is (ε, δ)-DP with ε the value the
    odometer reports for the realised view.  The ladder must not depend on the data: ``first_mu`` and
    ``ratio`` are fixed before the first answer.

    ``mus``: the steps' μ_i (all run: an odometer never refuses).  Returns a :class:`LadderBound` of arrays
    of shape (n,).  The bound is at least ``gdp_epsilon(δ, √Σμ²)``; once Σμ² > first_mu², the rung is at most
    √ratio times the running μ.
    """
    m = check_mus(mus)
    d = _check_delta(delta)
    mu1 = _check_positive(first_mu, "first_mu")
    r = float(ratio)
    if not (math.isfinite(r) and r > 1.0):
        raise InputError(f"ratio: must be a finite number > 1, got {ratio!r}")
    sums = running_sum_up(*exact_square(m))
    level = ladder_level(sums, mu1, r)
    rung = ladder_rung(level, mu1, r)
    share = ladder_delta(level, d)
    finite = np.isfinite(level)
    eps = np.asarray(gdp_epsilon(np.where(finite, share, d), np.where(finite, rung, 0.0)), dtype=float)
    return LadderBound(np.where(finite, eps, np.inf), level, rung, share)
