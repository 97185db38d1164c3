"""MMCC's posterior bounds (step 3 of :mod:`dpcalc.engine.matrix.mmcc`, docs/math.md §12.4): the (row, step)
pairs that need a tail event, the certified tail thresholds τ_ij and the bounds p̃_ij they give.

Choquette-Choo, Ganesh, Steinke & Thakurta 2024, "Privacy amplification for matrix mechanisms", ICLR 2024,
arXiv:2310.15526 (Thm 3.1: the tail events are its bad event).  For C >= 0 the posterior odds of b_j = 1 given
the rows before row i are at most the prior odds times ``exp((T_ij − s_ij²/2)/σ²)`` with ``T_ij = ⟨θ_{<i},
C_{<i,j}⟩`` and ``s_ij = ‖C_{<i,j}‖``, whatever else is revealed; on the event ``T_ij <= τ_ij``, with τ_ij a
certified upper quantile of T_ij under P at level δ_tail / (number of pairs), b_j is then at most a
Bernoulli(p̃_ij).  Pairs with s_ij = 0 (step j not yet in any earlier row) need no event: p̃ = p.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from dpcalc.engine._special import lazy_special as special
from dpcalc.errors import InputError

#: The tail grid: h = σ·s_ij / TAIL_STEPS (each weight of T_ij rounded up to it).
TAIL_STEPS = 100
#: Bisection steps of each tail threshold (the bracket shrinks 2^-BISECTIONS of its width).
BISECTIONS = 36
#: The most entries of C and its Gram matrix held at once (m·n + n·n doubles: 400 MB).
MAX_CELLS = 5e7
#: The most elementary operations of the pair scan (about 10 s).
MAX_SCAN = 2e8
#: The most entries of one block of the vectorised tail dynamic program.
_CHUNK = 2_000_000


@dataclass
class Pairs:
    """The (row, step) pairs that need a tail event (C_ij > 0 and step j in an earlier row), each with the id of
    its key: the distinct ``(s_ij², sorted weights G⁽ⁱ⁾_{jk} > 0)`` (the law of T_ij depends on nothing else)."""

    rows: np.ndarray
    cols: np.ndarray
    key: np.ndarray
    s2: list = field(default_factory=list)
    weights: list = field(default_factory=list)


def find_pairs(C: np.ndarray, p: float) -> Pairs:
    """The pairs of step 3 (module docstring), scanning the rows in order with the Gram matrix of the rows
    before (G⁽ⁱ⁾ = C_{<i}ᵀ C_{<i}, updated on each row's support)."""
    m, n = C.shape
    if float(m + n) * n > MAX_CELLS:
        raise InputError(
            f"--steps: mmcc holds C ({m}×{n}) and its Gram matrix, above the limit of {MAX_CELLS:.2g} entries"
        )
    nnz = np.count_nonzero(C)
    used = np.count_nonzero(np.any(C != 0, axis=0))
    if (nnz - used) * float(n) > MAX_SCAN:
        raise InputError(
            f"--method mmcc: {nnz - used} (row, step) pairs need a tail bound, about {(nnz - used) * n:.2g} "
            f"operations, above the limit of {MAX_SCAN:.2g}: fewer steps or a banded strategy"
        )
    G = np.zeros((n, n))
    rows, cols, keys = [], [], []
    out = Pairs(np.empty(0, int), np.empty(0, int), np.empty(0, int))
    ids: dict = {}
    amplified = 0.0 < p < 1.0
    for i in range(m):
        nz = np.flatnonzero(C[i])
        if amplified:
            J = nz[G[nz, nz] > 0]
            if J.size:
                block = G[J]
                for r, j in enumerate(J):
                    w = np.sort(block[r][block[r] > 0])
                    key = (float(G[j, j]), w.tobytes())
                    k = ids.get(key)
                    if k is None:
                        k = ids[key] = len(out.s2)
                        out.s2.append(float(G[j, j]))
                        out.weights.append(w)
                    rows.append(i)
                    cols.append(int(j))
                    keys.append(k)
        c = C[i, nz]
        G[np.ix_(nz, nz)] += np.outer(c, c)
    out.rows, out.cols, out.key = (np.asarray(a, dtype=int) for a in (rows, cols, keys))
    return out


def _tail_grids(pairs: Pairs, sigma: float):
    """Per key: its standard deviation σ·s (rounded up), grid h and the weights in grid units (rounded up)."""
    sd = sigma * np.sqrt(np.asarray(pairs.s2)) * (1 + 1e-12)
    h = sd / TAIL_STEPS
    units = []
    for w, hk in zip(pairs.weights, h):
        k = np.ceil(w / hk).astype(np.int64)
        k = np.where(k * hk < w, k + 1, k)
        units.append(k)
    return sd, h, units


def tail_work(pairs: Pairs, sigma: float) -> float:
    """The elementary operations of :func:`tail_thresholds` at noise σ (the dynamic programs and bisections)."""
    if not pairs.s2:
        return 0.0
    _, _, units = _tail_grids(pairs, sigma)
    return float(sum((u.size + BISECTIONS) * (u.sum() + 1.0) for u in units))


def tail_thresholds(pairs: Pairs, p: float, sigma: float, delta_pair: float) -> np.ndarray:
    """τ per key: a certified upper quantile of ``T = σ s Z + Σ_k w_k b_k`` (b_k ~ Bernoulli(p), Z ~ N(0, 1))
    at level ``delta_pair``: Pr_P[T > τ] <= delta_pair (step 3; Choquette-Choo et al. 2024, Thm 3.1's bad event).

    The law of ``Σ_k w_k b_k`` is computed on the grid h = σ s / :data:`TAIL_STEPS` with every weight rounded
    up (a stochastically larger sum), vectorised over the keys; then ``Pr[T > τ] <= Σ_w Pr[W = w] Φ̄((τ − w)/σs)``
    is bisected in τ, keeping the end whose tail is below ``delta_pair·(1 − 10⁻⁶)`` (the margin covers the
    rounding of the sums, each a sum of non-negative terms)."""
    K = len(pairs.s2)
    tau = np.empty(K)
    if K == 0:
        return tau
    sd, h, units = _tail_grids(pairs, sigma)
    size = np.array([u.sum() + 1 for u in units])
    order = np.argsort(size, kind="stable")
    target = delta_pair * (1 - 1e-6)
    z_lo = -special.ndtri(delta_pair)
    z_hi = -special.ndtri(0.5 * delta_pair)
    start = 0
    while start < K:  # blocks of keys of similar grid sizes, at most _CHUNK entries each
        stop = start + 1
        while stop < K and (stop + 1 - start) * size[order[stop]] <= _CHUNK:
            stop += 1
        idx = order[start:stop]
        M = int(size[idx].max())
        L = max(units[k].size for k in idx)
        kmat = np.zeros((idx.size, L), dtype=np.int64)
        for r, k in enumerate(idx):
            kmat[r, : units[k].size] = units[k]
        D = np.zeros((idx.size, M))
        D[:, 0] = 1.0
        ar = np.arange(M)
        for t in range(L):
            live = np.flatnonzero(kmat[:, t] > 0)
            if not live.size:
                continue
            sub = D[live]
            src = ar[None, :] - kmat[live, t][:, None]
            moved = np.take_along_axis(sub, np.maximum(src, 0), axis=1)
            moved[src < 0] = 0.0
            D[live] = sub * (1.0 - p) + moved * p
        vals = ar[None, :] * h[idx][:, None]
        s = sd[idx][:, None]
        lo = sd[idx] * z_lo
        hi = (size[idx] - 1) * h[idx] + sd[idx] * z_hi
        for _ in range(BISECTIONS):
            mid = 0.5 * (lo + hi)
            tail = np.sum(D * special.ndtr((vals - mid[:, None]) / s), axis=1)
            ok = tail <= target
            hi = np.where(ok, mid, hi)
            lo = np.where(ok, lo, mid)
        tau[idx] = hi
        start = stop
    return tau


def posterior_bounds(pairs: Pairs, p: float, sigma: float, delta_pair: float) -> np.ndarray:
    """p̃ per key: ``1 / (1 + ((1−p)/p) e^{−ε})`` with ``ε = (τ − s²/2)/σ²`` (step 3), rounded up."""
    tau = tail_thresholds(pairs, p, sigma, delta_pair)
    s2 = np.asarray(pairs.s2) * (1 - 1e-12)
    eps = (tau - s2 / 2) / sigma**2
    pt = special.expit(eps + math.log(p) - math.log1p(-p)) * (1 + 1e-12)
    return np.minimum(pt, 1.0)


def p_tilde_matrix(C: np.ndarray, pairs: Pairs, per_key: np.ndarray, p: float) -> np.ndarray:
    """The bounds p̃_ij on C's support (p where no event is needed), 0 off it."""
    pt = np.where(C != 0, p, 0.0)
    if pairs.rows.size:
        pt[pairs.rows, pairs.cols] = per_key[pairs.key]
    return pt
