"""The sensitivity of a strategy C under a participation pattern (docs/math.md §12.2).

An example that takes part in the steps of a set S moves C·G by ``Σ_{j∈S} C e_j g_jᵀ`` (clipped g_j, norm
at most 1), whose squared Frobenius norm is ``Σ_{i,j∈S} G_ij <g_i, g_j>`` with ``G = CᵀC``.  The sensitivity is
its largest value over the sets S the pattern allows and the unit vectors g:

* ``Δ² <= max_S Σ_{i,j∈S} |G_ij|`` always, with equality where G >= 0 on S (every g the same vector);
* single participation: ``Δ = max_j ‖C e_j‖``, exact;
* k participations at least b steps apart (min-separation): exact for Toeplitz C with non-negative,
  non-increasing coefficients, where the worst example takes part at steps 0, b, 2b, … (McKenna et al.
  2024, "Scaling up the banded matrix factorization mechanism for differentially private ML",
  arXiv:2405.13763, Thm 2); exact for a b_C-banded C when b >= b_C (the columns of steps b apart do not
  overlap: the k largest column norms that fit, by a dynamic program); otherwise the certified upper bound
  ``max_S Σ_{i∈S} u_i`` with ``u_i = |G_ii| + max_{S∋i} Σ_{j∈S, j≠i} |G_ij|`` (each a dynamic program over the
  steps), at least the true value since every row sum of |G| over S is at most its u_i;
* cyclic participation over b partitions (cyclic Poisson sampling, Choquette-Choo et al. 2023): an example of
  partition p may take part in the steps p, p + b, p + 2b, …: the largest of ``Σ_{i,j∈L_p}|G_ij|`` over the
  partitions — exact where G >= 0 (all of them taking part is then the worst case);
* Poisson sampling over the whole run (``poisson``, q): any step may be taken, so b = 1 of the cyclic case:
  ``Σ_{i,j}|G_ij|``, which is ``‖C·1‖₂²`` for C >= 0.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass

import numpy as np

from dpcalc.engine.matrix.strategies import Strategy
from dpcalc.errors import InputError

#: The most (steps² × participations) the general dynamic program may take (about 5 s, measured).
MAX_DP_WORK = 2.5e8


@dataclass(frozen=True)
class Participation:
    """How often and how far apart an example takes part: ``single``; ``min-sep`` (at most ``k`` times, at
    least ``b`` steps apart); ``cyclic`` (partitions of b steps apart, each step sampled with probability q;
    ``q`` None: every step of its partition); ``poisson`` (every step sampled with probability q, b = 1);
    ``balls-in-bins`` (every step of one of the b partitions, chosen uniformly at random: its worst case is
    cyclic participation)."""

    kind: str
    k: int = 1
    b: int = 1
    q: float | None = None

    def label(self) -> str:
        if self.kind == "single":
            return "single"
        if self.kind == "min-sep":
            return f"min-sep:k={self.k},b={self.b}"
        if self.kind == "poisson":
            return f"poisson:q={self.q!r}"
        if self.kind == "balls-in-bins":
            return f"balls-in-bins:b={self.b}"
        return f"cyclic-poisson:b={self.b}" + (f",q={self.q!r}" if self.q is not None else "")


@dataclass(frozen=True)
class Sensitivity:
    value: float
    exact: bool
    how: str


def _up(x: float) -> float:
    """``x`` raised by 8 ulps (a sum of squares and its root in floating point, rounded up)."""
    return float(x) * (1 + 8 * 2.220446049250313e-16) + 1e-300


def participations(n: int, p: Participation) -> int:
    """The most participations that fit in n steps."""
    if p.kind == "single":
        return 1
    fit = (n - 1) // p.b + 1
    return min(p.k, fit) if p.kind == "min-sep" else fit


def sensitivity(s: Strategy, p: Participation) -> Sensitivity:
    """Δ of the strategy under the pattern (module docstring): a value, whether it is exact, and why."""
    n = s.n
    norms = s.column_norms()
    k = participations(n, p)
    if k == 1:
        return Sensitivity(_up(float(np.max(norms))), True, "single participation: the largest column norm")
    if p.kind in ("cyclic", "poisson", "balls-in-bins"):
        return _cyclic(s, p.b)
    if s.toeplitz and s.monotone_toeplitz():
        v = np.zeros(n)
        c = s.coef
        for m in range(k):
            start = m * p.b
            seg = c[: max(0, min(c.size, n - start))]
            v[start : start + seg.size] += seg
        return Sensitivity(
            _up(math.sqrt(float(np.sum(v * v)))),
            True,
            f"exact (McKenna et al. 2024, Thm 2: non-negative non-increasing Toeplitz, steps 0, b, …, {k - 1}b)",
        )
    if s.bands is not None and p.b >= s.bands:
        best = _best_spaced(norms**2, k, p.b)
        return Sensitivity(
            _up(math.sqrt(best)),
            True,
            f"exact ({s.bands}-banded C, separation {p.b} >= bands: the columns do not overlap)",
        )
    return _general(s, k, p.b)


def _best_spaced(values: np.ndarray, k: int, b: int) -> float:
    """The largest sum of at most k of ``values`` (non-negative) at indices at least b apart (dynamic program
    over the steps: best[m][j] = best sum of m picks among the first j + 1 steps)."""
    n = values.size
    best = np.zeros((k + 1, n))
    for j in range(n):
        prev = best[:, j - 1] if j > 0 else np.zeros(k + 1)
        back = best[:-1, j - b] if j - b >= 0 else np.zeros(k)
        best[:, j] = prev
        best[1:, j] = np.maximum(prev[1:], back + values[j])
    return float(np.max(best[:, -1]))


def _cyclic(s: Strategy, b: int) -> Sensitivity:
    n = s.n
    if s.toeplitz and bool(np.all(s.coef >= 0)):
        c = np.zeros(n)
        c[: min(s.coef.size, n)] = s.coef[:n]
        blocks = math.ceil(n / b)
        pad = np.zeros(blocks * b)
        pad[:n] = c
        w = np.cumsum(pad.reshape(blocks, b), axis=0).reshape(-1)[:n]  # w[t] = Σ_m c[t − m b]
        sq = np.cumsum(w * w)  # partition p sees w[0 .. n − 1 − p]
        best = float(np.max(sq[n - 1 - np.arange(min(b, n))]))
        return Sensitivity(
            _up(math.sqrt(best)), True, f"exact (non-negative C: every step of the partition, b = {b})"
        )
    g = np.abs(s.gram())
    best = max(float(np.sum(g[np.ix_(idx, idx)])) for idx in (np.arange(p, n, b) for p in range(min(b, n))))
    exact = s.nonnegative
    how = f"{'exact' if exact else 'upper bound'}: Σ|CᵀC| over the steps of a partition, b = {b}"
    return Sensitivity(_up(math.sqrt(best)), exact, how)


def _general(s: Strategy, k: int, b: int) -> Sensitivity:
    """The certified upper bound ``max_S Σ_{i∈S} u_i`` (module docstring)."""
    n = s.n
    if float(n) * n * k > MAX_DP_WORK:
        raise InputError(
            f"the sensitivity of {s.label} over {n} steps with {k} participations needs about {n * n * k:.2g} "
            f"operations, above the limit of {MAX_DP_WORK:.2g}: fewer steps or participations"
        )
    a = np.abs(s.gram())
    left = _side(a, k - 1, b)  # best sum of <= k − 1 entries a[i, j], j <= i − b, spaced >= b
    right = _side(a[::-1, ::-1], k - 1, b)[::-1]
    u = np.diag(a) + left + right
    best = _best_spaced(u, k, b)
    return Sensitivity(
        _up(math.sqrt(best)),
        False,
        "upper bound: Σ over the steps of each row's best Σ|CᵀC| (no theorem makes it exact for this C)",
    )


def _side(a: np.ndarray, m: int, b: int) -> np.ndarray:
    """For every row i: the largest sum of at most m entries a[i, j] at columns j <= i − b spaced >= b (a dynamic
    program over the columns, vectorised over the rows; the last b states kept in a ring)."""
    n = a.shape[0]
    out = np.zeros(n)
    if m <= 0 or b >= n:
        return out
    ring = np.zeros((b, m + 1, n))  # ring[j % b]: the best sums after column j
    zero = np.zeros((m + 1, n))
    at = np.ascontiguousarray(a.T)  # column j as a contiguous row
    for j in range(n - b):  # row i = j + b may use the columns up to j
        back = ring[(j - b) % b] if j >= b else zero  # the state after column j − b
        prev = ring[(j - 1) % b] if j >= 1 else zero
        cur = ring[j % b]  # overwrites the state after column j − b, read above: copy it first
        col = at[j]
        upd = back[:-1] + col
        np.maximum(prev[1:], upd, out=upd)
        cur[0] = prev[0]
        cur[1:] = upd
        out[j + b] = cur[m, j + b]
    return out


def brute_force(gram: np.ndarray, k: int, b: int, cyclic: bool = False) -> float:
    """``max_S Σ_{i,j∈S} |G_ij|`` over every allowed S (a test reference; small n only)."""
    n = gram.shape[0]
    a = np.abs(gram)
    best = 0.0
    if cyclic:
        for p in range(min(b, n)):
            lattice = list(range(p, n, b))
            for r in range(1, len(lattice) + 1):
                for S in itertools.combinations(lattice, r):
                    best = max(best, float(a[np.ix_(S, S)].sum()))
        return best
    for r in range(1, k + 1):
        for S in itertools.combinations(range(n), r):
            if all(S[t + 1] - S[t] >= b for t in range(len(S) - 1)):
                best = max(best, float(a[np.ix_(S, S)].sum()))
    return best
