"""Amplified BandMF, per partition: the run itself, not only the DP-SGD that dominates it (docs/math.md §12.3).

Cyclic Poisson sampling over b partitions (step i uses partition i mod b, each of its examples with probability
q, independently at every step) and a b_C-banded lower-triangular C with b_C <= b.  An example of partition k
takes part in the steps L_k = {k, k + b, k + 2b, …}; the column C e_j of such a step is non-zero only in the
rows j … j + b_C − 1, inside the block of rows [j, j + b), so the columns of L_k have disjoint row supports.
Given everything released before row j, the block [j, j + b) is the other examples' contribution (a function
of the rows before each row: the same bijection under both neighbours) plus B_j · C e_j g_jᵀ plus Gaussian
noise, B_j ~ Bernoulli(q), ‖g_j‖ <= 1, g_j chosen from the earlier blocks: a Poisson-subsampled Gaussian with
noise multiplier σ / ‖C e_j‖.  So the run, for that example, is the adaptive composition of those
subsampled Gaussians over j ∈ L_k — exactly, in the worst case the tool always takes (every other gradient
zero, g_j one unit vector: projecting each block onto C e_j gives the pair itself).  ε of the run is the largest
over the partitions of the ε of its composition (Choquette-Choo et al. 2023, arXiv:2306.08153, Thm 4 bounds it
by the DP-SGD of ⌈n/b⌉ steps at σ / max_j ‖C e_j‖, which dominates every partition's composition).

:func:`partition_plan` finds the compositions to compute: every partition's multiset of column-norm classes, the
partitions dominated by another (their norms, sorted, no larger one by one and no more of them) left out, and
certified bounds ``lo <= ‖C e_j‖ <= hi`` for the classes kept.  :func:`tight_epsilon` computes, per (σ, δ),
the certified PLD bracket of each kept partition: the upper end with σ / hi rounded down, the lower end with
σ / lo rounded up (one computation where the two agree), then the largest of each.
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from dpcalc.engine.composition.pld import compose_pld
from dpcalc.engine.dpsgd.pld_accounting import sgd_delta_pld, sgd_epsilon_pld
from dpcalc.engine.matrix.sensitivity import Participation
from dpcalc.engine.matrix.strategies import Strategy

#: The most components (distinct noise multipliers, summed over the partitions kept) composed per
#: (σ, δ); beyond it the row is Thm 4's alone, with no lower end or estimate.
MAX_COMPONENTS = 64


@dataclass(frozen=True)
class Plan:
    """The compositions of the run (module docstring): ``parts`` one per partition kept, each a tuple of
    ``(lo, hi, count)`` (bounds on a column norm, the number of the partition's steps with it), largest
    first; ``partitions`` how many partitions there are; ``largest_hi`` an upper bound on max_j ‖C e_j‖
    (Thm 4's); ``why`` None, or why the per-partition composition is not computed (then ``parts`` is empty)."""

    parts: tuple
    partitions: int
    largest_hi: float
    why: str | None = None

    @property
    def components(self) -> int:
        return sum(len(p) for p in self.parts)

    def is_thm4(self, steps: int) -> bool:
        """Whether the one partition kept is Thm 4's DP-SGD itself: ``steps`` steps, every column's norm bounded
        by the largest bound — its upper end is then the same computation as Thm 4's."""
        return (
            len(self.parts) == 1
            and len(self.parts[0]) == 1
            and self.parts[0][0][1:] == (self.largest_hi, steps)
        )


def _float_down(x: Fraction) -> float:
    f = float(x)
    return float(np.nextafter(f, -math.inf)) if Fraction(f) > x else f


def _float_up(x: Fraction) -> float:
    f = float(x)
    return float(np.nextafter(f, math.inf)) if Fraction(f) < x else f


def _sqrt_bounds(num: int, half_shift: int) -> tuple[float, float]:
    """Floats ``lo <= sqrt(num) / 2**half_shift <= hi`` (num >= 0 an integer), both exact when it is."""
    extra = max(0, (130 - num.bit_length()) // 2 + 1)  # the integer root carries >= 64 bits
    r = math.isqrt(num << (2 * extra))  # r <= sqrt(num)·2^extra < r + 1
    den = 1 << (half_shift + extra)
    lo = _float_down(Fraction(r, den))
    hi = lo if r * r == num << (2 * extra) else _float_up(Fraction(r + 1, den))
    return lo, hi


#: The most Toeplitz coefficients whose squares are summed exactly (in integers, about 1 µs each); beyond, the
#: floating-point sums widened by a bound on their rounding.
EXACT_TERMS = 4096


def _toeplitz_bounds(coef: np.ndarray, lengths) -> dict[int, tuple[float, float]]:
    """``{L: (lo, hi)}``: bounds on sqrt(Σ_{t<L} c_t²).  Up to :data:`EXACT_TERMS` terms the squares are summed
    exactly in integers (each c_t is m_t / 2^k_t, so the sum is an integer over 2^(2K), K = max k_t): exact
    bounds, equal where the norm is a double (C = I: 1); beyond, the running floating-point sum, whose relative
    error is at most (L + 2)·2^-52 after the square root (L products, L − 1 additions of non-negative terms, a
    correctly rounded root)."""
    top = max(lengths)
    if top > EXACT_TERMS:
        sums = np.sqrt(np.cumsum(coef[:top] ** 2))
        return {L: _widened(float(sums[L - 1]), (L + 2) * 2.0**-52) for L in lengths}
    ratios = [float(c).as_integer_ratio() for c in coef[:top]]
    shifts = [d.bit_length() - 1 for _, d in ratios]
    K = max(shifts)
    want = set(lengths)
    acc, out = 0, {}
    for t, ((m, _), k) in enumerate(zip(ratios, shifts)):
        acc += (m * m) << (2 * (K - k))
        if t + 1 in want:
            out[t + 1] = _sqrt_bounds(acc, K)
    return out


def _dense_norms(C: np.ndarray) -> tuple[np.ndarray, float]:
    """The floating-point column norms of a dense C and a bound on their relative rounding error (n products
    and n − 1 additions, each within 2^-53 relative, then a correctly rounded square root: within
    (n + 2)·2^-52 in all)."""
    return np.sqrt(np.sum(C * C, axis=0)), (C.shape[0] + 2) * 2.0**-52


def _widened(v: float, rel: float) -> tuple[float, float]:
    return float(np.nextafter(v * (1 - rel), 0.0)), float(np.nextafter(v * (1 + rel), math.inf))


def largest_norm(s: Strategy) -> float:
    """An upper bound on max_j ‖C e_j‖: exact (the double itself) where the norm is a double — C = I gives 1;
    inf beyond double range."""
    if s.coef is not None:
        top = min(s.n, s.coef.size)
        try:
            return _toeplitz_bounds(s.coef, [top])[top][1]
        except OverflowError:
            return math.inf
    norms, rel = _dense_norms(s.dense)
    return _widened(float(np.max(norms)), rel)[1]


def partition_plan(s: Strategy, p: Participation) -> Plan:
    """The compositions to compute for ``s`` under cyclic Poisson sampling ``p`` (module docstring); the
    strategy is banded with at most ``p.b`` bands (:func:`dpcalc.engine.matrix.accounting.bandmf_refusal`)."""
    n, b = s.n, p.b
    # a key per column, ordered as its norm: a larger key never has a smaller norm bound
    if s.coef is not None:  # column j holds c_0 … c_{L−1}, L = min(n − j, len(coef)): its key is L
        keys = np.minimum(n - np.arange(n), s.coef.size).astype(np.int64)
    else:  # a file: its floating-point norm, ranked
        norms, rel = _dense_norms(s.dense)
        values, keys = np.unique(norms, return_inverse=True)
        keys = keys.astype(np.int64).reshape(-1) + 1
    m = -(-n // b)
    table = np.full(m * b, 0, dtype=np.int64)  # 0: no step (the last round is short)
    table[:n] = keys
    rows = -np.sort(-table.reshape(m, b).T, axis=1)  # row k: partition k's keys, largest first
    # the maximal rows: a row of the largest sum left is dominated by no other row left (integer keys: a row
    # dominating another has a larger sum, or is equal); each pick removes the rows it dominates, itself too
    alive = np.ones(rows.shape[0], dtype=bool)
    sums = rows.sum(axis=1)
    kept = []
    while alive.any():
        if len(kept) >= MAX_COMPONENTS:
            return _fallback(s, b, f"more than {MAX_COMPONENTS} partitions with different column norms")
        i = int(np.flatnonzero(alive)[np.argmax(sums[alive])])
        kept.append(rows[i])
        alive &= ~np.all(rows <= rows[i], axis=1)
    counts = [Counter(int(k) for k in r if k > 0) for r in kept]
    if sum(len(c) for c in counts) > MAX_COMPONENTS:
        return _fallback(
            s,
            b,
            f"{sum(len(c) for c in counts)} distinct noise multipliers, above the limit of {MAX_COMPONENTS}",
        )
    need = sorted({k for c in counts for k in c} | {int(keys.max())})
    try:
        if s.coef is not None:
            bounds = _toeplitz_bounds(s.coef, need)
        else:
            bounds = {k: _widened(float(values[k - 1]), rel) for k in need}
    except OverflowError:
        return _fallback(s, b, "a column norm beyond the range of double precision")
    if any(not (lo > 0 and math.isfinite(hi)) for lo, hi in bounds.values()):
        return _fallback(s, b, "a column norm beyond the range of double precision")
    parts = tuple(tuple((*bounds[k], c[k]) for k in sorted(c, reverse=True)) for c in counts)
    return Plan(parts, b, bounds[int(keys.max())][1])


def _fallback(s: Strategy, b: int, why: str) -> Plan:
    return Plan((), b, largest_norm(s), why)


def multiplier_down(sigma: float, norm: float) -> float:
    """The largest double at most σ / norm (exactly: a smaller multiplier, a larger ε); 0 for an infinite norm
    (refused by the accountants as a noise multiplier)."""
    if not math.isfinite(norm) or not math.isfinite(sigma):
        return sigma / norm
    return _float_down(Fraction(sigma) / Fraction(norm))


def multiplier_up(sigma: float, norm: float) -> float:
    """The smallest double at least σ / norm."""
    if not math.isfinite(norm) or not math.isfinite(sigma):
        return sigma / norm
    return _float_up(Fraction(sigma) / Fraction(norm))


def _bracket(q: float, comps, eps_error, *, delta=None, epsilon=None) -> tuple:
    """(lower, estimate, upper) of the composition of Poisson-subsampled Gaussians ``comps`` = ((multiplier,
    count), …): of ε at ``delta`` (floats), or of δ at each ε of ``epsilon`` (arrays, the privacy profile: one
    composition per direction for all of them).  DP-SGD's accountant for one multiplier (the same numbers as
    ``sgd-epsilon``), else the composition of the ``subsampled-gaussian`` kind (both directions, the worse
    reported)."""
    at = {"delta": delta} if epsilon is None else {"epsilon": np.asarray(epsilon, float)}
    if len(comps) == 1:
        ((eff, count),) = comps
        if epsilon is None:
            r = sgd_epsilon_pld(q, eff, count, delta, eps_error)
        else:
            r = sgd_delta_pld(q, eff, count, at["epsilon"], eps_error)
    else:
        specs = [("subsampled-gaussian", {"q": q, "sigma": eff}, count) for eff, count in comps]
        r = compose_pld(specs, eps_error=eps_error, **at)
    if epsilon is None:
        return float(r.lower), float(r.estimate), float(r.upper)
    return tuple(np.asarray(v, float).reshape(at["epsilon"].shape) for v in (r.lower, r.estimate, r.upper))


def _worst(plan: Plan, q: float, sigma: float, eps_error, **at) -> tuple:
    """``(lower, estimate, upper)``: the largest over the partitions kept of their certified brackets (module
    docstring; ``at``: ``delta=`` for ε, ``epsilon=`` for δ), the estimate moved inside [lower, upper]."""
    lows, ests, ups = [], [], []
    for part in plan.parts:
        down = tuple((multiplier_down(sigma, hi), c) for _, hi, c in part)
        up = tuple((multiplier_up(sigma, lo), c) for lo, _, c in part)
        lo_u, est_u, up_u = _bracket(q, down, eps_error, **at)
        lo_l = lo_u if up == down else _bracket(q, up, eps_error, **at)[0]
        lows.append(lo_l)
        ests.append(est_u)
        ups.append(up_u)
    lower, upper = np.max(lows, axis=0), np.max(ups, axis=0)
    return lower, np.minimum(np.maximum(np.max(ests, axis=0), lower), upper), upper


def partition_epsilon(plan: Plan, q: float, sigma: float, delta: float, eps_error=None):
    """``(lower, estimate, upper)`` of the run's ε at (σ, δ): the largest over the partitions kept of their
    certified brackets (module docstring), the estimate moved inside [lower, upper]."""
    return tuple(float(v) for v in _worst(plan, q, sigma, eps_error, delta=delta))


def partition_delta(plan: Plan, q: float, sigma: float, eps, eps_error=None):
    """``(lower, estimate, upper)`` arrays of the run's privacy profile δ(ε) at σ and each ε of ``eps``: the
    run's δ(ε) is the largest over the partitions of their δ(ε) (an example of any partition is the one that
    differs), each bracketed as :func:`partition_epsilon`'s (σ/hi rounded down for the upper end, σ/lo rounded
    up for the lower end)."""
    return _worst(plan, q, sigma, eps_error, epsilon=np.atleast_1d(np.asarray(eps, float)))


__all__ = [
    "MAX_COMPONENTS",
    "Plan",
    "largest_norm",
    "multiplier_down",
    "multiplier_up",
    "partition_delta",
    "partition_epsilon",
    "partition_plan",
]
