"""MMCC's inverse question: the smallest noise multiplier whose MMCC bound meets a target ε (docs/math.md §12.4).

MMCC's certified ε falls as σ grows (its posterior bounds, tail thresholds and row mixtures all weaken with
the noise; tested in tests/test_mmcc.py), so the smallest σ is found by the monotone search of
:func:`dpcalc.engine.pld.search.boundary` between a start steered by DP-SGD (σ at the target for Poisson
sampling at the same rate and steps, times ‖C·1‖/√n) and the unamplified Gaussian's σ, which
always meets the target (MMCC is never above it).  Every answer is a σ whose MMCC bound was computed and found
within the target; the search also computes σ/(1 + rtol), reported when it missed.

Each evaluation is one MMCC computation, its work bounded by :data:`dpcalc.engine.matrix.mmcc.MAX_WORK`; the
search as a whole stops at :data:`SEARCH_WORK` (an evaluation beyond it, or one refused for its own work,
counts as a miss — so the answer stays a computed, certified σ, and the note says the search was cut short).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from dpcalc.engine.matrix import mmcc, mmcc_posterior, mmcc_row_laws
from dpcalc.engine.pld.search import boundary
from dpcalc.errors import InputError

#: The most work of one noise search, in MMCC's elementary operations (about 50 s).
SEARCH_WORK = 2.4e9
#: The most MMCC evaluations of one search.
MAX_EVALUATIONS = 16
#: The smallest target ε of a search (below it each MMCC computation's PLD grid alone takes longer than a
#: search allows).
MIN_TARGET = 0.01
#: The PLD's memory cap in each MMCC computation of a search (bytes): a computation that needs more is not run
#: (it counts as a miss), which bounds the time of each.
SEARCH_MEMORY_CAP = 128 * 1024**2
#: The smallest δ of a search (below it the tail events' thresholds, at δ/2 split over the pairs, reach so far
#: that each MMCC computation's PLD takes seconds).
MIN_DELTA = 1e-30
#: The PLD bracket's width during a search, relative to the target (absolute: far below the target, where the
#: search starts, ε need not be known to 0.5 % of itself — the PLD of a tiny ε is the slow one).
SEARCH_EPS_ERROR = 0.005


def search_eps_error(target: float, eps_error=None, delta: float = 1.0) -> float:
    """The bracket width of each MMCC computation of a search: ``eps_error`` if given, else 0.5 % of the
    target (absolute); a target below :data:`MIN_TARGET` or a δ below :data:`MIN_DELTA` is refused."""
    if delta < MIN_DELTA:
        raise InputError(
            f"--delta: mmcc's searches take δ >= {MIN_DELTA:g}, got {delta:g} (each MMCC computation at so small "
            "a δ takes longer than a search allows; ask for ε at a given --noise-multiplier instead)"
        )
    if target < MIN_TARGET:
        raise InputError(
            f"--target-epsilon: mmcc's searches take a target of at least {MIN_TARGET:g}, got {target:g} (each "
            "MMCC computation at so small an ε takes longer than a search allows)"
        )
    return SEARCH_EPS_ERROR * target if eps_error is None else eps_error


@dataclass
class Calibrated:
    """The smallest σ found (None: none within the range), its MMCC answer, and how the search went."""

    sigma: float | None
    answer: mmcc.MMCC | None
    evaluations: int
    cut_short: bool
    neighbour_missed: bool


def mmcc_sigma(
    C: np.ndarray,
    p: float,
    target: float,
    delta: float,
    *,
    start: float,
    hi: float,
    rtol: float,
    eps_error=None,
    unamplified_sensitivity=None,
    label: str = "C",
) -> Calibrated:
    """The smallest σ in [start/10⁶, ``hi``] with MMCC's certified ε(``delta``) <= ``target`` (module
    docstring); ``hi`` must meet the target (the unamplified Gaussian's σ does)."""
    C = np.asarray(C, float)
    eps_error = search_eps_error(target, eps_error, delta)
    pairs = mmcc_posterior.find_pairs(C, p)
    rows = mmcc_row_laws.row_work(C)
    spent = [0.0]
    cut = [False]

    def test(sigma: float):
        work = mmcc_posterior.tail_work(pairs, sigma) + rows
        if spent[0] + work > SEARCH_WORK:
            cut[0] = True
            return math.inf, None
        spent[0] += work
        try:
            (ans,) = mmcc.mmcc_epsilon(
                C,
                p,
                sigma,
                delta,
                eps_error=eps_error,
                unamplified_sensitivity=unamplified_sensitivity,
                label=label,
                pairs=pairs,
                memory_cap=SEARCH_MEMORY_CAP,
            )
        except (InputError, OverflowError):  # refused (its work) or out of range: not computed, not certified
            cut[0] = True
            return math.inf, None
        return ans.upper, ans

    start = min(max(start, hi * 1e-6), hi)
    found = boundary(
        _recorded(test, seen := {}),
        target,
        start,
        ok_above=True,
        lo=hi * 1e-6,
        hi=hi,
        rtol=rtol,
        first_step=1.1,
        max_evaluations=MAX_EVALUATIONS,
    )
    if found.x is None:
        return Calibrated(None, None, found.evaluations, cut[0], False)
    floor = found.x / (1.0 + rtol) * (1.0 - 1e-9)
    missed = any(floor <= x < found.x and v > target for x, v in seen.items())
    return Calibrated(found.x, found.info, found.evaluations, cut[0], missed)


def work(C: np.ndarray, p: float, sigma: float) -> float:
    """The elementary operations of one MMCC evaluation at σ (its tail bounds and row laws)."""
    return mmcc_posterior.tail_work(mmcc_posterior.find_pairs(C, p), sigma) + mmcc_row_laws.row_work(C)


def _recorded(test, seen: dict):
    """``test``, each computed value kept in ``seen`` (σ → ε; refused evaluations are not kept)."""

    def run(x):
        value, info = test(x)
        if info is not None:
            seen[x] = value
        return value, info

    return run
