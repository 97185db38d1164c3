"""MMCC's row laws (step 4 of :mod:`dpcalc.engine.matrix.mmcc`, docs/math.md §12.4): for each row a law
stochastically at least its sensitivity given the earlier rows, rounded up to a grid and trimmed, and the
laws merged into upper envelopes within a budget of laws and atoms.

Choquette-Choo, Ganesh, Steinke & Thakurta 2024, "Privacy amplification for matrix mechanisms", ICLR 2024,
arXiv:2310.15526.  By sequential coupling row i's sensitivity ``Σ_j C_ij b_j`` given the earlier rows is
stochastically at most ``Σ_j C_ij B_j``, B_j ~ Bernoulli(p̃_ij) independent, and the mixture of Gaussians is
monotone in the stochastic order of its sensitivity in both directions (Lemma B.4): so any stochastically
larger law — weights rounded up to a grid, mass moved up, the upper envelope of several rows' laws —
dominates too.
"""

from __future__ import annotations

import math

import numpy as np

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
_EPS_MACH = float(np.finfo(float).eps)


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
