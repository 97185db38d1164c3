"""(ε, δ) privacy filters and odometers at the rate of advanced composition, for budgets chosen adaptively.

Whitehouse, Ramdas, Rogers & Wu, "Fully-Adaptive Composition in Differential Privacy" (ICML 2023, PMLR
202:36990–37007; arXiv:2203.05481).  An analyst runs steps that are (ε_m, δ_m)-DP given the past, choosing
(ε_m, δ_m) — and when to stop — from the answers.  The classical advanced composition bound (Dwork, Rothblum
& Vadhan 2010) needs the ε_m fixed in advance; WRRW give, for adaptively chosen ones:

* a **filter** (their filter for approximate DP, obtained through their approximate-zCDP filter): with targets
  (ε, δ_tail + δ_sum), run step n only while ``√(2 log(1/δ_tail) V_n) + V_n/2 ≤ ε`` and ``Σ_{m≤n} δ_m ≤ δ_sum``,
  V_n = Σ_{m≤n} ε_m² including the step itself; the interaction is then (ε, δ_tail + δ_sum)-DP.  The
  constant matches advanced composition (ε²/2 is the zCDP of ε-DP, Bun & Steinke 2016, arXiv:1605.02065,
  Prop. 3.3, against ε(e^ε − 1) in Dwork–Rothblum–Vadhan);
* **odometers** from time-uniform concentration of the privacy loss, among them the normal-mixture bound
  ``V_n/2 + √(2(V_n + ρ) log((1/δ_tail)√((V_n + ρ)/ρ)))``, tight near a variance V chosen in advance
  through ρ, and a stitched bound tight at all times up to a log log factor (not implemented here).

We could read only the paper's abstract here, not its theorems: the two formulas above are the ones we
recall from the paper, so every function below also says how it follows from cited lemmas, and its validity
does not rest on our recollection: the privacy-loss argument below proves both.

*The loss argument.*  (1) Each (ε_m, δ_m)-DP step is a post-processing (by a kernel that may depend on the
past) of the generalised randomized response pair of Kairouz, Oh & Viswanath 2015 (arXiv:1311.0776,
Thm 2.1), which outputs a "fail" symbol with probability δ_m and otherwise randomized response with
ε_m; so the interaction is a post-processing of an adaptive sequence of such pairs, and it suffices to bound
that.  (2) Off the fail event, whose probability is at most Σ δ_m ≤ δ_sum over the steps counted, the loss
of step m is ±ε_m with mean ε_m tanh(ε_m/2) ≤ ε_m²/2 and, by Hoeffding's lemma (range 2ε_m), conditionally
sub-Gaussian with variance proxy ε_m²; so ``exp(λ S_n − λ² V_n/2)`` is a supermartingale for every real
λ, where S_n is the loss minus its compensator and the loss is at most ``S_n + V_n/2``.  (3) The filter:
at the stopping time, V ≤ v*, and Markov's inequality with λ = t/v* gives
``P(S ≥ t) ≤ exp(−t²/(2v*))``, i.e. t = √(2 v* log(1/δ_tail)).  The odometer: mixing λ over N(0, 1/ρ)
gives the supermartingale ``√(ρ/(V_n + ρ)) exp(S_n²/(2(V_n + ρ)))`` (Robbins 1970's normal mixture), and
Ville's inequality (1939) bounds its crossing of 1/δ_tail by δ_tail at all times at once.  (4) A loss
bound ε̂ (a function of the view) that holds except with probability δ gives, for every event A of views,
``P(A) ≤ E_Q[e^{ε̂} 1_A] + δ``: (ε̂, δ)-DP, read at the value reported for the realised view.

Steps are given as arrays (ε_i, δ_i) in the order proposed; everything is vectorised (running sums by
cumsum; the filter's admissions loop over refusal events, not rows).  Budgets are rounded down, ε bounds up.
"""

from __future__ import annotations

import math

import numpy as np

from dpcalc.engine._numerics import next_up
from dpcalc.engine._roots import bisect
from dpcalc.engine.adaptive.gdp import admit_within, exact_square, running_sum_up
from dpcalc.errors import InputError

_U = float(np.finfo(float).eps) / 2.0


def check_steps(eps_i, delta_i) -> tuple[np.ndarray, np.ndarray]:
    """Per-step (ε_i, δ_i) as two 1-D float arrays of one length (``delta_i`` may be a scalar): ε_i finite
    ≥ 0, δ_i in [0, 1)."""
    e = np.atleast_1d(np.asarray(eps_i, dtype=float))
    if e.ndim != 1:
        raise InputError("eps_i: give a 1-D list of per-step ε")
    d = np.asarray(delta_i, dtype=float)
    try:
        d = np.broadcast_to(d, e.shape).astype(float)
    except ValueError:
        raise InputError(f"delta_i: expected {e.size} values (one per step), got shape {d.shape}") from None
    if not np.all(np.isfinite(e) & (e >= 0)):
        raise InputError("eps_i: every ε must be a finite number >= 0")
    if not np.all((d >= 0) & (d < 1)):
        raise InputError("delta_i: every δ must lie in [0, 1)")
    return e, d


def split_delta(delta_budget: float, tail_fraction: float = 0.5) -> tuple[float, float]:
    """``(δ_tail, δ_sum)`` with ``δ_tail + δ_sum ≤ δ_budget``: δ_tail = tail_fraction·δ (rounded down) for the
    concentration bound, the rest (rounded down) for the steps' Σδ_i."""
    d = float(delta_budget)
    f = float(tail_fraction)
    if not (0.0 < d < 1.0):
        raise InputError(f"--delta: must lie in (0, 1), got {delta_budget!r}")
    if not (0.0 < f <= 1.0):
        raise InputError(f"tail_fraction: must lie in (0, 1], got {tail_fraction!r}")
    tail = float(np.nextafter(d * f, 0.0))
    rest = float(np.nextafter(d - tail, 0.0)) if f < 1.0 else 0.0
    return tail, max(rest, 0.0)


def advanced_rate(sum_sq, delta_tail):
    """``√(2 log(1/δ_tail)·V) + V/2``, rounded up: the ε the filter certifies for a sum of squares V = Σε_m²
    (WRRW 2023, arXiv:2203.05481, filter for approximate DP, as recalled; proved in the module docstring)."""
    v = np.asarray(sum_sq, dtype=float)
    lg = -math.log(float(delta_tail))
    with np.errstate(over="ignore", invalid="ignore"):
        out = np.sqrt(2.0 * lg * v) + 0.5 * v
    return next_up(out * (1.0 + 8.0 * _U))


def sum_sq_budget(eps_budget, delta_tail) -> float:
    """The largest V (rounded down) with ``√(2 log(1/δ_tail) V) + V/2 ≤ ε``: with L = log(1/δ_tail),
    ``V* = 2(√(L + ε) − √L)² = 2ε²/(√(L + ε) + √L)²`` (the quadratic in √(V/2) solved in its stable form)."""
    eps = float(eps_budget)
    if not (math.isfinite(eps) and eps > 0):
        raise InputError(f"--epsilon: the budget ε must be a finite number > 0, got {eps_budget!r}")
    lg = -math.log(float(delta_tail))
    v = 2.0 * eps * eps / (math.sqrt(lg + eps) + math.sqrt(lg)) ** 2
    return float(np.nextafter(v * (1.0 - 16.0 * _U), 0.0))


def filter_runs(
    eps_i, delta_i, eps_budget, delta_budget, *, tail_fraction=0.5, halt=False, with_basic=False
) -> np.ndarray:
    """Which steps the (ε, δ) filter runs (WRRW 2023, arXiv:2203.05481, their filter for approximate DP at
    the rate of advanced composition, as recalled; the proof is the module docstring's loss argument).

    With ``(δ_tail, δ_sum) = split_delta(delta_budget, tail_fraction)``, step n runs iff, over the steps that
    ran before it and itself, ``√(2 log(1/δ_tail) Σε_m²) + Σε_m²/2 ≤ eps_budget`` — equivalently
    ``Σε_m² ≤ V*`` (:func:`sum_sq_budget`) — and ``Σδ_m ≤ δ_sum`` (sums bounded above, budgets rounded
    down).  The steps that run are together ``(eps_budget, delta_budget)``-DP.  ``halt=True`` is the paper's
    stopping time (nothing runs after the first refusal); ``halt=False`` (default) lets later steps that fit
    run, a refused step being the (0, 0)-DP step the analyst could have chosen instead (the argument needs
    only that the run steps' sums stay within budget on every path).

    ``with_basic=True`` (our addition, not in WRRW) also runs a step when basic composition keeps
    ``Σε_m ≤ eps_budget`` (still with ``Σδ_m ≤ δ_sum``): on every path the run steps then end with
    Σε ≤ ε or Σε² ≤ V*.  Proof: off the fail event the loss is at most Σε_m, so a loss above ε forces
    Σε > ε, hence Σε² ≤ V*, and the supermartingale bound of step (3) applies on that event:
    ``P(L > ε, no fail) ≤ P(S ≥ ε − V*/2, V ≤ V*) ≤ δ_tail``.  Useful for a few large steps, where the
    rate is worse than Σε (e.g. ε_m = 0.25 at ε = 1, δ = 1e-6: no step by the rate, four by Σε).

    Returns a bool array (n,).
    """
    e, d = check_steps(eps_i, delta_i)
    tail, rest = split_delta(delta_budget, tail_fraction)
    v_star = sum_sq_budget(eps_budget, tail)
    hi, lo = exact_square(e)
    zeros = np.zeros_like(d)
    costs = np.stack([hi, d], axis=1)
    low = np.stack([lo, zeros], axis=1)
    if not with_basic:
        return admit_within(costs, low, np.array([v_star, rest]), halt=halt)
    # three sums decided together, step by step: (Σε² ≤ V* or Σε ≤ ε) and Σδ ≤ δ_sum
    return admit_within(
        np.stack([hi, e, d], axis=1),
        np.stack([lo, zeros, zeros], axis=1),
        np.array([v_star, float(eps_budget), rest]),
        halt=halt,
        fits=_rate_or_basic,
    )


def _rate_or_basic(sums, budgets):
    """``(Σε² ≤ V* or Σε ≤ ε) and Σδ ≤ δ_sum`` on rows of (Σε², Σε, Σδ)."""
    return ((sums[:, 0] <= budgets[0]) | (sums[:, 1] <= budgets[1])) & (sums[:, 2] <= budgets[2])


def filter_epsilon(eps_i, delta_i, delta_budget, *, tail_fraction=0.5, with_basic=False) -> np.ndarray:
    """The smallest filter budget ε that would admit all of the first n steps (as a prefix), rounded up:
    ``advanced_rate(Σ_{m≤n} ε_m², δ_tail)`` (or its minimum with Σ_{m≤n} ε_m, ``with_basic``), ``inf``
    where ``Σ_{m≤n} δ_m > δ_sum``.  Reads the filter's rate for a schedule (e.g. to compare it with basic
    composition); it is *not* a running bound for an adaptively stopped interaction (for that,
    :func:`odometer_epsilon`)."""
    e, d = check_steps(eps_i, delta_i)
    tail, rest = split_delta(delta_budget, tail_fraction)
    v = running_sum_up(*exact_square(e))
    out = advanced_rate(v, tail)
    if with_basic:
        out = np.minimum(out, running_sum_up(e))
    return np.where(running_sum_up(d) <= rest, out, np.inf)


def mixture_rho(v_target, delta_tail) -> np.ndarray:
    """The ρ that makes the normal-mixture odometer tightest at ``V = v_target`` (chosen before the
    interaction).  The boundary's square ``(V + ρ)(2L + log((V + ρ)/ρ))`` (L = log(1/δ_tail)) is minimised in
    ρ where ``x − log(1 + x) = 2L`` with x = V/ρ (set the derivative to 0), solved by bisection on
    [2L, 2L + log(4L + 3) + 1].  Any ρ > 0 is valid; this one only optimises.  Vectorised over ``v_target``."""
    v = np.asarray(v_target, dtype=float)
    if not np.all(np.isfinite(v) & (v > 0)):
        raise InputError("v_target: must be a finite number > 0")
    lg = -math.log(float(delta_tail))
    lo = np.full(v.shape, 2.0 * lg)
    hi = lo + math.log(4.0 * lg + 3.0) + 1.0
    _, x = bisect(lambda t: t - np.log1p(t) - 2.0 * lg, lo, hi, increasing=True)
    return v / x


def mixture_bound(sum_sq, delta_tail, rho) -> np.ndarray:
    """``V/2 + √(2(V + ρ) log((1/δ_tail) √((V + ρ)/ρ)))``, rounded up: the normal-mixture bound on the
    privacy loss after variance V, valid at all times at once except with probability δ_tail (WRRW 2023,
    arXiv:2203.05481, mixture odometer, as recalled; derivation in the module docstring, step 3)."""
    v = np.asarray(sum_sq, dtype=float)
    r = float(rho)
    if not (math.isfinite(r) and r > 0):
        raise InputError(f"rho: must be a finite number > 0, got {rho!r}")
    lg = -math.log(float(delta_tail))
    with np.errstate(over="ignore", invalid="ignore"):
        w = v + r
        inner = 2.0 * w * (lg + 0.5 * np.log(w / r))
        out = 0.5 * v + np.sqrt(inner)
    return next_up(out * (1.0 + 16.0 * _U))


def odometer_epsilon(
    eps_i,
    delta_i,
    delta_total,
    *,
    rho=None,
    v_target=None,
    tail_fraction=0.5,
    with_basic=False,
) -> np.ndarray:
    """Running ε after each step, valid at every stopping time, with δ = ``delta_total`` (WRRW 2023,
    arXiv:2203.05481, privacy odometer from the normal-mixture boundary, as recalled).

    With ``(δ_tail, δ_sum) = split_delta(delta_total, tail_fraction)`` and V_n = Σ_{m≤n} ε_m² (bounded above):
    ``ε_n = mixture_bound(V_n, δ_tail, ρ)`` while ``Σ_{m≤n} δ_m ≤ δ_sum``, and ``inf`` from the first step
    where the δ_m exceed it.  ρ > 0 must be fixed before the interaction: give it, or ``v_target`` (the Σε²
    at which the bound should be tightest; :func:`mixture_rho`).  ``with_basic=True`` reports
    ``min(ε_n, Σ_{m≤n} ε_m)``: off the fail event the loss is at most Σε_m on every path (step (2) of the
    module docstring), so both bounds hold together and their minimum is valid with the same δ (basic
    composition alone would need only Σδ_m, without δ_tail).  Validity: the module docstring, steps (1)–(4).
    Returns an array (n,)."""
    e, d = check_steps(eps_i, delta_i)
    tail, rest = split_delta(delta_total, tail_fraction)
    if (rho is None) == (v_target is None):
        raise InputError("odometer: give exactly one of rho and v_target (fixed before the interaction)")
    r = float(mixture_rho(v_target, tail)) if rho is None else float(rho)
    v = running_sum_up(*exact_square(e))
    out = mixture_bound(v, tail, r)
    if with_basic:
        out = np.minimum(out, running_sum_up(e))
    return np.where(running_sum_up(d) <= rest, out, np.inf)
