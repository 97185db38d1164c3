"""MMCC: amplification by Poisson sampling for the matrix mechanism C·G + Z (docs/math.md §12.4).

Choquette-Choo, Ganesh, Steinke & Thakurta 2024, "Privacy amplification for matrix mechanisms", ICLR 2024,
arXiv:2310.15526.  Each example takes part in every step independently with probability p (Poisson sampling
over the whole run); C is non-negative with its rows in release order (lower triangular; the tree's dyadic
nodes sorted by their end, shorter first).  The steps, each proved in docs/math.md §12.4:

1. **Dominating pair** (Thm 4.8, with Cor. 4.7 reducing vectors to scalars): the run is dominated by
   ``P = Σ_b p^|b| (1−p)^{n−|b|} N(C b, σ² I)`` against ``Q = N(0, σ² I)``, b ∈ {0, 1}ⁿ the steps the
   differing example takes part in.
2. **Conditional composition** (Thm 3.1): if, outside an event of probability at most δ_tail under the
   first distribution, every row's conditional pair given the rows before it is dominated by a fixed pair,
   then ``H_{e^ε}`` of the run is at most that of the product of the fixed pairs plus δ_tail, each direction.
3. **Posterior bound** (:func:`tail_thresholds`): for C >= 0 the posterior odds of b_j = 1 given the rows
   before row i are at most the prior odds times ``exp((T_ij − s_ij²/2)/σ²)`` with ``T_ij = ⟨θ_{<i},
   C_{<i,j}⟩`` and ``s_ij = ‖C_{<i,j}‖``, whatever else is revealed; on the event ``T_ij <= τ_ij``, with τ_ij
   a certified upper quantile of T_ij under P at level δ_tail / (number of pairs), b_j is then at most a
   Bernoulli(p̃_ij).  Pairs with s_ij = 0 (step j not yet in any earlier row) need no event: p̃ = p.
4. **Row laws** (:func:`row_laws`): by sequential coupling row i's sensitivity ``Σ_j C_ij b_j`` given the
   earlier rows is stochastically at most ``Σ_j C_ij B_j``, B_j ~ Bernoulli(p̃_ij) independent, and the
   mixture of Gaussians is monotone in the stochastic order of its sensitivity in both directions (Lemma B.4):
   so any stochastically larger law — weights rounded up to a grid, mass moved up, the upper envelope of
   several rows' laws — dominates too.
5. **Composition**: the certified PLD of the row mixtures (:func:`dpcalc.engine.composition.pld.compose_pld`,
   the ``mixture-gaussian`` kind, identical rows composed by count, both directions), ε taken at δ − δ_tail.

δ_tail is :data:`TAIL_FRACTION` of δ where some pair needs an event, else 0.  The pre-declared alternative
δ_tail = 0 makes every p̃ = 1, the unamplified Gaussian mechanism with sensitivity ‖C·1‖₂, whose ε is exact;
the smaller of the two is reported (each is a valid bound, so their minimum is).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from fractions import Fraction

import numpy as np

from dpcalc.engine._special import lazy_special as special
from dpcalc.engine.composition.pld import compose_pld
from dpcalc.engine.matrix.strategies import MAX_DENSE_STEPS, Strategy
from dpcalc.engine.mechanisms.gaussian_exact import delta_gaussian, eps_gaussian
from dpcalc.errors import InputError

#: The share of δ spent on the tail events (where some pair needs one).
TAIL_FRACTION = 0.5
#: The tail grid: h = σ·s_ij / TAIL_STEPS (each weight of T_ij rounded up to it).
TAIL_STEPS = 100
#: The row grid: about Σ_j C_ij / ROW_STEPS (each C_ij rounded up to it; exact for integer-like rows).
ROW_STEPS = 1000
#: The most atoms of one row law (beyond it the values are rounded up to a coarser grid).
MAX_ATOMS = 250
#: The most distinct row laws composed, and the most atoms over all of them (beyond either, neighbouring laws
#: — by their largest value, then their mean — are merged into their upper envelope, cheapest first).
MAX_LAWS = 12
ATOM_BUDGET = 1000
#: Mass at the top of a law moved onto its largest value (stochastically larger: sound).
NEGLIGIBLE = 1e-30
#: Bisection steps of each tail threshold (the bracket shrinks 2^-BISECTIONS of its width).
BISECTIONS = 36
#: The most entries of C and its Gram matrix held at once (m·n + n·n doubles: 400 MB).
MAX_CELLS = 5e7
#: The most elementary operations of the pair scan, and of the tail and row dynamic programs (each about 10 s).
MAX_SCAN = 2e8
MAX_WORK = 1.2e9
#: The most entries of one block of the vectorised tail dynamic program.
_CHUNK = 2_000_000
_EPS_MACH = float(np.finfo(float).eps)


def causal_matrix(s: Strategy) -> np.ndarray:
    """C with its rows in release order: the Toeplitz strategies and a file's C as they are (lower
    triangular); the binary tree's complete dyadic nodes sorted by their last step, shorter first."""
    if s.n > MAX_DENSE_STEPS:
        raise InputError(f"--steps: mmcc is computed for at most {MAX_DENSE_STEPS} steps, got {s.n}")
    m = sum(s.n >> level for level in range(s.n.bit_length())) if s.label == "tree" else s.n
    if float(m + s.n) * s.n > MAX_CELLS:  # find_pairs's limit, checked before C is formed
        raise InputError(
            f"--steps: mmcc holds C ({m}×{s.n}) and its Gram matrix, above the limit of {MAX_CELLS:.2g} entries"
        )
    if s.dense is not None:
        return np.asarray(s.dense, float)
    if s.coef is not None:
        n, c = s.n, s.coef
        i = np.arange(n)
        d = i[:, None] - i[None, :]
        full = np.zeros(n)
        full[: min(c.size, n)] = c[:n]
        return np.where(d >= 0, full[np.clip(d, 0, n - 1)], 0.0)
    if s.label == "tree":
        return tree_matrix(s.n)
    raise InputError(f"--strategy {s.label!r}: mmcc needs the matrix C itself")


def tree_matrix(n: int) -> np.ndarray:
    """The binary tree's rows (the complete dyadic intervals [a·2^l, (a+1)·2^l) within n steps), sorted by the
    end of the interval, shorter first (the order DP-FTRL releases them)."""
    levels = np.arange(max(0, n.bit_length()))
    size = 1 << levels
    starts = np.concatenate([np.arange(n // L) * L for L in size])
    lengths = np.concatenate([np.full(n // L, L) for L in size])
    order = np.lexsort((lengths, starts + lengths))
    starts, lengths = starts[order], lengths[order]
    cols = np.arange(n)
    return ((cols >= starts[:, None]) & (cols < (starts + lengths)[:, None])).astype(float)


@dataclass
class Pairs:
    """The (row, step) pairs that need a tail event (C_ij > 0 and step j in an earlier row), each with the id of
    its key: the distinct ``(s_ij², sorted weights G⁽ⁱ⁾_{jk} > 0)`` (the law of T_ij depends on nothing else)."""

    rows: np.ndarray
    cols: np.ndarray
    key: np.ndarray
    s2: list = field(default_factory=list)
    weights: list = field(default_factory=list)


def check_nonnegative(C: np.ndarray, label: str) -> None:
    if np.any(C < 0):
        raise InputError(
            f"--strategy {label!r}: mmcc needs C >= 0 entrywise (Choquette-Choo et al. 2024); this C has "
            "negative entries"
        )


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


def _row_law(c: np.ndarray, q: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """A law stochastically at least ``Σ_j c_j B_j``, B_j ~ Bernoulli(q_j) independent (c_j > 0): ``(values,
    masses)``, values increasing.  Weights that are integer multiples of one power of two are exact;
    otherwise each is rounded up to a grid of about Σc / :data:`ROW_STEPS` and the values raised by 10⁻¹²
    (relative).  The masses' rounding is covered by lowering the distribution function by its error bound."""
    keep = q > 0
    c, q = c[keep], q[keep]
    if not c.size:
        return np.zeros(1), np.ones(1)
    det = q >= 1.0
    rand = ~det
    u = 2.0 ** math.floor(math.log2(float(c.min())))
    units = c / u
    exact = bool(np.all(units == np.floor(units))) and float(units.sum()) <= 4 * ROW_STEPS
    if exact:
        h, k, base, margin = u, units.astype(np.int64), float(units[det].sum()) * u, 1.0
    else:
        wr = c[rand]
        if wr.size:
            wmin = float(wr.min())
            h = wmin / math.ceil(wmin / (float(wr.sum()) / ROW_STEPS))
            k = np.ceil(c / h).astype(np.int64)
            k = np.where(k * h < c, k + 1, k)
        else:
            h, k = 1.0, np.zeros(c.size, dtype=np.int64)
        base, margin = math.fsum(c[det].tolist()), 1.0 + 1e-12
    kr, qr = k[rand], q[rand]
    dist = np.zeros(int(kr.sum()) + 1)
    dist[0] = 1.0
    top = 0
    for kk, qq in zip(kr.tolist(), qr.tolist()):
        cur = dist[: top + 1].copy()
        dist[: top + 1] = cur * (1.0 - qq)
        dist[kk : kk + top + 1] += cur * qq
        top += kk
    atoms = np.flatnonzero(dist > 0)
    masses = dist[atoms]
    values = (base + atoms * h) * margin
    if kr.size > 1:  # lower the distribution function by the bound on its rounding error
        err = (2.0 * kr.size + atoms.size + 8) * _EPS_MACH
        masses = _lower_cdf(masses, err)
    return values, masses


def _lower_cdf(masses: np.ndarray, err: float) -> np.ndarray:
    """Masses whose distribution function is the given one lowered by ``err`` (mass moved to the top)."""
    cdf = np.maximum(np.cumsum(masses) - err, 0.0)
    cdf[-1] = 1.0
    return np.diff(cdf, prepend=0.0)


def _trim(values: np.ndarray, masses: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The law with its top mass below :data:`NEGLIGIBLE` moved onto its largest value and, beyond
    :data:`MAX_ATOMS` atoms, its values rounded up to a coarser grid (both stochastically larger)."""
    keep = masses > 0
    values, masses = values[keep], masses[keep]
    tail = np.cumsum(masses[::-1])[::-1]  # mass at or above each atom
    cut = np.flatnonzero(tail <= NEGLIGIBLE)
    if cut.size and cut[0] < values.size - 1:
        first = cut[0]
        masses = np.concatenate([masses[:first], [tail[first]]])
        values = np.concatenate([values[:first], [values[-1]]])
    if values.size > MAX_ATOMS:
        # kept: the heaviest half and the largest value in each of MAX_ATOMS/2 equal slices of [0, max]; every
        # other atom moves up to the next kept one (at most one slice up)
        keep = np.zeros(values.size, dtype=bool)
        half = MAX_ATOMS // 2
        keep[np.argsort(masses, kind="stable")[-half:]] = True
        bins = np.minimum((values / values[-1] * half).astype(np.int64), half - 1)
        keep[np.flatnonzero(np.diff(bins, append=half))] = True
        slot = np.cumsum(keep[::-1])[::-1]  # kept atoms at or above each atom
        target = np.flatnonzero(keep)[keep.sum() - slot]  # the lowest kept atom at or above
        masses = np.bincount(target, weights=masses, minlength=values.size)[keep]
        values = values[keep]
    return values, masses


def _envelope(laws: list) -> tuple[np.ndarray, np.ndarray]:
    """The upper envelope of laws: the law whose distribution function is their minimum (stochastically at
    least each), lowered by the rounding error of the sums."""
    support = np.unique(np.concatenate([v for v, _ in laws]))
    cdf = np.ones(support.size)
    for v, m in laws:
        f = np.concatenate([[0.0], np.cumsum(m)])[np.searchsorted(v, support, side="right")]
        cdf = np.minimum(cdf, f)
    cdf = np.maximum(cdf - (support.size + 8) * _EPS_MACH * 4, 0.0)
    cdf[-1] = 1.0
    return _trim(support, np.diff(cdf, prepend=0.0))


def row_laws(C: np.ndarray, pt: np.ndarray) -> list[tuple[np.ndarray, np.ndarray, int]]:
    """The dominating laws of the rows (step 4): ``(values, masses, count)``, identical rows counted together,
    rows of sensitivity 0 left out, and at most :data:`MAX_LAWS` laws of :data:`ATOM_BUDGET` atoms in all
    (beyond either, the neighbouring pair of laws whose rows gain the least mean sensitivity in their upper
    envelope is merged, repeatedly; the laws sorted by their largest value, then their mean)."""
    seen: dict = {}
    for i in range(C.shape[0]):  # one law per distinct (weights, p̃) row
        nz = np.flatnonzero(C[i])
        key = (C[i, nz].tobytes(), pt[i, nz].tobytes())
        if key in seen:
            seen[key][2] += 1
            continue
        v, m = _trim(*_row_law(C[i, nz], pt[i, nz]))
        seen[key] = [v, m, 1]
    laws: dict = {}
    for v, m, cnt in seen.values():
        if v.size == 1 and v[0] == 0:
            continue
        key = (v.tobytes(), m.tobytes())
        if key in laws:
            laws[key][2] += cnt
        else:
            laws[key] = [v, m, cnt]
    out = [tuple(x) for x in laws.values()]
    out.sort(key=lambda x: (float(x[0][-1]), float(np.dot(x[0], x[1]))))
    if len(out) > 4 * MAX_LAWS:  # first into runs of neighbours in that order
        out = [_merge([out[r] for r in run]) for run in np.array_split(np.arange(len(out)), 4 * MAX_LAWS)]

    def cost(a, b):  # the mean sensitivity the rows of a and b gain in their envelope
        env = _merge([a, b])
        mean = float(np.dot(env[0], env[1]))
        return sum(x[2] * (mean - float(np.dot(x[0], x[1]))) for x in (a, b)), env

    costs = [cost(out[r], out[r + 1]) for r in range(len(out) - 1)]
    while len(out) > MAX_LAWS or sum(x[0].size for x in out) > ATOM_BUDGET:
        r = min(range(len(costs)), key=lambda k: costs[k][0])
        out[r : r + 2] = [costs[r][1]]
        del costs[r]
        if r < len(costs):
            costs[r] = cost(out[r], out[r + 1])
        if r > 0:
            costs[r - 1] = cost(out[r - 1], out[r])
    return out


def _merge(group) -> tuple:
    """Laws ``(values, masses, count)`` replaced by their upper envelope, counts added."""
    if len(group) == 1:
        return group[0]
    v, m = _envelope([(g[0], g[1]) for g in group])
    return v, m, sum(g[2] for g in group)


def row_work(C: np.ndarray) -> float:
    """A bound on the operations of the row dynamic programs (rows × nonzeros × grid)."""
    nnz = np.count_nonzero(C, axis=1).astype(float)
    return float(np.sum(nnz * (ROW_STEPS + 4 * nnz)))


def specs_of(laws, sigma: float) -> list:
    """The laws as mechanism specs of :func:`~dpcalc.engine.composition.pld.compose_pld`: a single value is the
    Gaussian mechanism, ``{0, v}`` the Poisson-subsampled Gaussian (noise σ/v rounded down), else the
    ``mixture-gaussian`` kind."""
    specs = []
    for v, m, cnt in laws:
        if v.size == 1:
            specs.append(("gaussian", {"sigma": sigma, "sensitivity": float(v[0])}, cnt))
        elif v.size == 2 and v[0] == 0:
            s = sigma / float(v[1])
            if s * float(v[1]) > sigma:
                s = float(np.nextafter(s, 0.0))
            specs.append(("subsampled-gaussian", {"q": float(m[1]), "sigma": s}, cnt))
        else:
            specs.append(
                (
                    "mixture-gaussian",
                    {"sigma": sigma, "sensitivities": tuple(v.tolist()), "probs": tuple(m.tolist())},
                    cnt,
                )
            )
    return specs


@dataclass
class MMCC:
    """One answer: the ε bracket (``upper`` the certified bound on the run; ``lower`` and ``estimate`` those of
    the construction composed — the row laws under p̃, which dominates the run — so of the run only where
    ``of_run``), the δ spent on the tail events, the number of pairs that needed one, the largest p̃, and the
    row laws composed."""

    upper: float
    lower: float
    estimate: float
    tail_delta: float
    pairs: int
    max_p_tilde: float
    laws: int
    unamplified: bool
    of_run: bool = False


def laws_are_the_run(C: np.ndarray, p: float, laws, sigma: float) -> bool:
    """Whether the laws composed are the run's own, so that the PLD bracket's lower end and estimate are the
    run's: every row and every column of C holds at most one non-zero entry (no pair needs a tail event, p̃ = p:
    the rows are independent Poisson-subsampled Gaussians, exactly the run in its worst case), every law is
    {0, C_ij} with mass p on C_ij itself (not rounded up, no envelope) and σ / C_ij is a double (the noise
    multiplier of :func:`specs_of` not rounded).  C = I: DP-SGD."""
    nz = C != 0
    if not 0 < p < 1 or np.any(nz.sum(axis=0) > 1) or np.any(nz.sum(axis=1) > 1):
        return False
    want: dict = {}
    for v in C[nz].tolist():
        want[v] = want.get(v, 0) + 1
    got: dict = {}
    for v, m, cnt in laws:
        if v.size != 2 or v[0] != 0 or m[1] != p:
            return False
        got[float(v[1])] = got.get(float(v[1]), 0) + cnt
    return got == want and all(Fraction(sigma) / Fraction(v) == Fraction(sigma / v) for v in want)


def _check_work(C: np.ndarray, pairs: Pairs, sigma, label: str) -> None:
    """Refuse (before any work) where the tail bounds and row laws at every σ of ``sigma`` pass :data:`MAX_WORK`."""
    sigma = np.atleast_1d(np.asarray(sigma, float))
    work = sum(tail_work(pairs, float(s)) for s in sigma) + row_work(C) * sigma.size
    if work > MAX_WORK:
        raise InputError(
            f"--method mmcc: {label} over {C.shape[1]} steps needs about {work:.2g} operations (tail bounds of "
            f"{len(pairs.s2)} distinct pairs, {C.shape[0]} rows, {sigma.size} points), above the limit of "
            f"{MAX_WORK:.2g}: more noise, fewer steps or a banded strategy"
        )


def _construction(C: np.ndarray, p: float, pairs: Pairs, sigma: float, tail: float):
    """Steps 3–5 at noise σ with the tail events at total probability ``tail`` (0 where no pair needs one):
    ``(row laws, p̃ matrix)``."""
    n_pairs = int(pairs.rows.size)
    per_key = posterior_bounds(pairs, p, sigma, tail / n_pairs) if n_pairs else np.empty(0)
    pt = p_tilde_matrix(C, pairs, per_key, p)
    return row_laws(C, pt), pt


def _unamplified(C: np.ndarray, sensitivity) -> float:
    """An upper bound on ‖C·1‖₂ (``sensitivity`` if given)."""
    if sensitivity is None:
        return float(np.linalg.norm(C.sum(axis=1))) * (1 + 1e-12)
    return float(sensitivity)


def _checked(C, p, label) -> np.ndarray:
    C = np.asarray(C, float)
    check_nonnegative(C, label)
    if not 0 < p <= 1:
        raise InputError(f"--participation: the sample rate must be in (0, 1], got {p!r}")
    return C


def mmcc_epsilon(
    C: np.ndarray,
    p: float,
    sigma,
    delta,
    *,
    eps_error=None,
    unamplified_sensitivity=None,
    label="C",
    pairs: Pairs | None = None,
    memory_cap: int | None = None,
) -> list[MMCC]:
    """ε(δ) of MMCC (module docstring) at each (σ, δ) of the broadcast arrays; ``unamplified_sensitivity``:
    an upper bound on ‖C·1‖₂ (computed, rounded up, when None); ``pairs``: :func:`find_pairs` of (C, p) if
    already known (a search reuses them); ``memory_cap``: the PLD's (its default when None)."""
    C = _checked(C, p, label)
    sigma, delta = (
        a.ravel() for a in np.broadcast_arrays(np.asarray(sigma, float), np.asarray(delta, float))
    )
    pairs = find_pairs(C, p) if pairs is None else pairs
    _check_work(C, pairs, sigma, label)
    unamplified_sensitivity = _unamplified(C, unamplified_sensitivity)
    out = []
    for s, d in zip(sigma.tolist(), delta.tolist()):
        n_pairs = int(pairs.rows.size)
        tail = TAIL_FRACTION * d if n_pairs else 0.0
        laws, pt = _construction(C, p, pairs, s, tail)
        cap = {} if memory_cap is None else {"memory_cap": memory_cap}
        b = compose_pld(specs_of(laws, s), delta=d - tail, eps_error=eps_error, **cap)
        exact = float(eps_gaussian(d, unamplified_sensitivity / s))
        up, lo, est = float(b.upper), float(b.lower), float(b.estimate)
        use_exact = exact < up
        if use_exact:
            up, lo, est = exact, min(lo, exact), min(est, exact)
        of_run = n_pairs == 0 and laws_are_the_run(C, p, laws, s)
        out.append(
            MMCC(up, lo, est, tail, n_pairs, float(pt.max()) if pt.size else p, len(laws), use_exact, of_run)
        )
    return out


@dataclass
class Profile:
    """MMCC's bound on the run's privacy profile at one σ (docs/math.md §12.4): the tail events at total
    probability ``tail`` fixed in advance, so that for **every** ε, H_{e^ε} of the run is at most that of the row
    laws composed plus ``tail`` (Thm 3.1 holds at each ε with the same events), and at most the unamplified
    Gaussian's δ(ε) at μ = ‖C·1‖₂/σ (step 7, the pre-declared alternative).  ``of_run``: the laws are the run's
    own (:func:`laws_are_the_run`; then no pair needs an event and ``tail`` is 0), so the PLD's lower end and
    estimate are the run's."""

    specs: list
    tail: float
    mu: float
    pairs: int
    max_p_tilde: float
    laws: int
    of_run: bool
    eps_error: float | None = None
    memory_cap: int | None = None

    def _cap(self) -> dict:
        return {} if self.memory_cap is None else {"memory_cap": self.memory_cap}

    def delta(self, eps) -> tuple:
        """``(lower, estimate, upper)`` arrays of δ at each ε of ``eps``: the upper end the smaller of the two
        bounds (the PLD's upper end plus the tail, rounded up; the unamplified Gaussian's), the lower end and
        estimate nan unless ``of_run``."""
        eps = np.atleast_1d(np.asarray(eps, float))
        b = compose_pld(self.specs, epsilon=eps, eps_error=self.eps_error, **self._cap())
        up = np.asarray(b.upper, float).reshape(eps.shape)
        if self.tail > 0:
            up = np.nextafter(up + self.tail, np.inf)
        up = np.minimum(np.minimum(up, np.asarray(delta_gaussian(eps, self.mu), float)), 1.0)
        if not self.of_run:
            nan = np.full(eps.shape, np.nan)
            return nan, nan.copy(), up
        lo = np.minimum(np.asarray(b.lower, float).reshape(eps.shape), up)
        est = np.clip(np.asarray(b.estimate, float).reshape(eps.shape), lo, up)
        return lo, est, up

    def epsilon(self, delta: float) -> float:
        """An upper bound on ε at ``delta`` from the same bound (inf where ``delta`` is not above the tail and
        the unamplified Gaussian's is infinite)."""
        exact = float(eps_gaussian(delta, self.mu))
        if delta <= self.tail:
            return exact
        b = compose_pld(self.specs, delta=delta - self.tail, eps_error=self.eps_error, **self._cap())
        return min(float(b.upper), exact)


def mmcc_profile(
    C: np.ndarray,
    p: float,
    sigma: float,
    tail: float,
    *,
    eps_error=None,
    unamplified_sensitivity=None,
    label="C",
    pairs: Pairs | None = None,
    memory_cap: int | None = None,
) -> Profile:
    """MMCC's privacy profile (:class:`Profile`) at noise σ with the tail events at total probability ``tail``
    (used only where some pair needs an event; any value in (0, 1) gives a valid bound, a smaller one larger
    row laws).  The arguments as :func:`mmcc_epsilon`'s."""
    C = _checked(C, p, label)
    if not 0 < tail < 1:
        raise InputError(f"mmcc: the tail probability must be in (0, 1), got {tail!r}")
    pairs = find_pairs(C, p) if pairs is None else pairs
    _check_work(C, pairs, sigma, label)
    n_pairs = int(pairs.rows.size)
    tail = tail if n_pairs else 0.0
    laws, pt = _construction(C, p, pairs, float(sigma), tail)
    mu = float(np.nextafter(_unamplified(C, unamplified_sensitivity) / float(sigma), np.inf))
    of_run = n_pairs == 0 and laws_are_the_run(C, p, laws, float(sigma))
    return Profile(
        specs_of(laws, float(sigma)),
        tail,
        mu,
        n_pairs,
        float(pt.max()) if pt.size else p,
        len(laws),
        of_run,
        eps_error,
        memory_cap,
    )


__all__ = [
    "MMCC",
    "Profile",
    "causal_matrix",
    "laws_are_the_run",
    "mmcc_epsilon",
    "mmcc_profile",
    "tree_matrix",
]
