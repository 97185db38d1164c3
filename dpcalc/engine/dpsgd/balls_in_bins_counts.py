"""DP-SGD with balls-in-bins batches: the losses of the Monte-Carlo samples kept as counts on a fixed grid of
losses, and the upper confidence bounds on δ(ε) of each direction from those counts (docs/math.md §3.9).

The samples are :mod:`dpcalc.engine.dpsgd.balls_in_bins_samples`'s (its module doc has the construction: the
dominating pair of Chua, Ghazi, Harrison, Leeman, Kamath, Kumar, Manurangsi, Sinha & Zhang 2025, AISTATS,
"Balls-and-Bins Sampling for DP-SGD", arXiv:2412.16802, and its rare-event conditioning); each term of
δ_remove(ε) = E_P[(1 − e^{ε−L})_+] and δ_add(ε) lies in [0, 1].  The upper confidence bound is the
Chernoff–Hoeffding bound in KL form (:func:`kl_upper`; Hoeffding 1963, Thm 1; the bound the paper uses): for n
i.i.d. [0,1]-valued terms with mean μ, P(mean ≤ a) ≤ exp(−n·kl(a‖μ)) for a < μ, so U = max{μ : n·kl(mean‖μ) ≤
log(1/α)} is >= μ with probability >= 1 − α, and U is non-decreasing in the empirical mean.

**The grid of losses** (fixed before sampling, the same for every configuration): a positive loss is
counted in the bin of its float64 value with all but the top 16 bits of its mantissa dropped — 2^16 bins per
binade, each [a, a·(1 + 2^−16)) — losses in (0, 2^−24] in the first bin, losses <= 0 in a bin of their own,
+inf or NaN in a last bin.  A bin's terms are bounded by the term at its upper edge (the terms
(1 − e^{ε−L})_+ are non-decreasing in L; +inf or NaN: 1), with the edge raised by an allowance for the
floating-point error of a computed loss (:func:`loss_allowance`).  So each sample's term is replaced by a
value at least as large, a deterministic function of the sample in [0, 1]: these values are i.i.d. with a
mean at least the true one, and the KL bound on their mean is an upper confidence bound on δ at the same
confidence (equivalently: the bound is non-decreasing in the mean).  The tilted add direction weights the
term by w = Z^m e^{λS}, decreasing in the loss L = log(m/S): a bin is bounded by min(1, w at its lower edge,
lowered by the allowance) times the term at its upper edge (min with 1: the term is non-zero only where
S < m e^{−ε₀}, where w <= 1 after the normalisation by B).  The rounding moves a loss up by at most a
relative 2^−16 (about 1.5e−5; at most 6e−8 absolute near 0), so the ε found is the ε of slightly larger
losses: higher by a hair, never lower.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from dpcalc.engine._special import lazy_special as special

#: Relative allowance for rounding in sums, probabilities and the KL bisection.
_ROUND = 1e-9

#: Mantissa bits the grid of losses keeps: 2^16 bins per binade (a loss rounded up by a relative 2^−16 at most).
GRID_BITS = 16
_GRID_SHIFT = 52 - GRID_BITS
#: Positive losses at or below this share the first bin (0, 2^−24·(1 + 2^−16)).
GRID_LOW = 2.0**-24
_GRID_BASE = int(np.array(GRID_LOW).view(np.int64)) >> _GRID_SHIFT


def _kl(p, q):
    """kl(p‖q) of Bernoulli laws."""
    return special.rel_entr(p, q) + special.rel_entr(1.0 - p, 1.0 - q)


def kl_upper(mean, n, confidence):
    """Upper confidence bound on the mean of n i.i.d. [0,1]-valued variables from their empirical mean:
    ``max{μ >= mean : n·kl(mean‖μ) <= log(1/(1−confidence))}`` (Hoeffding 1963, Thm 1, KL form; the bound
    Chua et al. 2025, arXiv:2412.16802, use).  Holds with probability >= confidence; non-decreasing in ``mean``.
    Bisection ended on the upper side, then raised by a rounding allowance."""
    mean = np.clip(np.asarray(mean, dtype=float) * (1.0 + _ROUND), 0.0, 1.0)
    level = -math.log1p(-float(confidence)) / n
    lo, hi = mean.copy(), np.ones_like(mean)
    with np.errstate(divide="ignore", invalid="ignore"):
        for _ in range(80):
            mid = 0.5 * (lo + hi)
            ok = _kl(mean, mid) <= level
            lo = np.where(ok, mid, lo)
            hi = np.where(ok, hi, mid)
    return np.minimum(hi * (1.0 + _ROUND), 1.0)


# ------------------------------------------------------------------------------------ counts on the grid


@dataclass
class LossCounts:
    """The losses of some samples as counts on the grid of losses (module doc): ``index`` (sorted, distinct)
    and ``count`` of the positive finite losses' bins, ``nonpositive`` losses <= 0 (or −inf), ``top`` losses
    +inf or NaN.  Small, and merged exactly (integer sums) in any order (:func:`merge`)."""

    index: np.ndarray
    count: np.ndarray
    nonpositive: int = 0
    top: int = 0

    @property
    def samples(self) -> int:
        return int(self.count.sum()) + self.nonpositive + self.top


def bin_losses(losses) -> LossCounts:
    """The counts of ``losses`` on the grid (module doc)."""
    x = np.asarray(losses, dtype=float).ravel()
    nonpositive = int(np.count_nonzero(x <= 0))
    positive = x[(x > 0) & np.isfinite(x)]
    top = x.size - nonpositive - positive.size  # +inf and NaN
    if positive.size == 0:
        return LossCounts(np.zeros(0, np.int64), np.zeros(0, np.int64), nonpositive, top)
    idx = np.maximum(positive.view(np.int64) >> _GRID_SHIFT, _GRID_BASE) - _GRID_BASE
    lo = int(idx.min())
    span = int(idx.max()) - lo + 1
    if span <= 4 * idx.size + 65536:
        c = np.bincount(idx - lo, minlength=span)
        nz = np.flatnonzero(c)
        return LossCounts(nz + lo, c[nz].astype(np.int64), nonpositive, top)
    index, count = np.unique(idx, return_counts=True)
    return LossCounts(index.astype(np.int64), count.astype(np.int64), nonpositive, top)


def merge(parts) -> LossCounts:
    """The counts of several parts together (exact: integer sums; the same in any order)."""
    parts = list(parts)
    if not parts:
        return LossCounts(np.zeros(0, np.int64), np.zeros(0, np.int64))
    idx = np.concatenate([p.index for p in parts]).astype(np.int64, copy=False)
    cnt = np.concatenate([p.count for p in parts]).astype(np.int64, copy=False)
    nonpositive = sum(p.nonpositive for p in parts)
    top = sum(p.top for p in parts)
    if idx.size == 0:
        return LossCounts(idx, cnt, nonpositive, top)
    order = np.argsort(idx, kind="stable")
    idx, cnt = idx[order], cnt[order]
    starts = np.flatnonzero(np.concatenate(([True], idx[1:] != idx[:-1])))
    return LossCounts(idx[starts], np.add.reduceat(cnt, starts), nonpositive, top)


class Merger:
    """Counts added one part at a time (a batch's blocks, a direction's batches), compacted now and then so
    that memory stays near the size of the merged counts: amortised O(size · log size)."""

    def __init__(self):
        self.done = merge([])
        self.pending: list[LossCounts] = []
        self.size = 0

    def add(self, part: LossCounts) -> None:
        self.pending.append(part)
        self.size += part.index.size
        if self.size > max(1 << 20, 2 * self.done.index.size):
            self._compact()

    def _compact(self) -> None:
        self.done = merge([self.done, *self.pending])
        self.pending, self.size = [], 0

    def result(self) -> LossCounts:
        self._compact()
        return self.done


def _edges(index: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The (lower, upper) edges of the grid's bins ``index`` (the first bin's lower edge is 0)."""
    base = (index.astype(np.int64) + _GRID_BASE) << _GRID_SHIFT
    lower = base.view(np.float64).copy()
    upper = (base + (1 << _GRID_SHIFT)).view(np.float64)
    lower[index == 0] = 0.0
    return lower, upper


def loss_allowance(rho: float, tau: float):
    """The allowance for the floating-point error of a computed loss L: ``rho·(1 + |L|) + tau``; a bin's
    upper edge is raised and its lower edge lowered by the allowance at its upper edge."""
    return lambda x: rho * (1.0 + np.abs(x)) + tau


def sgd_allowance(sigma: float, m: int, k: int):
    """:func:`loss_allowance` of a DP-SGD loss Σ_k ℓ_k (a max-shifted log-sum-exp of m terms per epoch,
    summed over K epochs, its intermediate numbers up to about K·(1/σ² + log m) + |L|): 2^−40·(m + 8) relative
    to 1 + |L| + K·(1/σ² + log m + 1) — thousands of times the error of the computation."""
    rho = 2.0**-40 * (m + 8)
    return loss_allowance(rho, rho * k * (1.0 / (sigma * sigma) + math.log(m) + 1.0))


class _Binned:
    """The terms' bounds of one direction's counts: bins with their upper edges (raised by the allowance), the
    losses <= 0 as a bin with upper edge 0 (raised likewise: sound at every ε, also ε < 0), +inf/NaN as a bin
    whose term is 1."""

    def __init__(self, counts: LossCounts, allowance):
        lower, upper = _edges(counts.index)
        pad = allowance(upper)
        zero = float(allowance(np.zeros(1))[0])
        self.upper = np.concatenate(([zero], upper + pad, [np.inf]))
        self.lower = np.concatenate(([-np.inf], np.maximum(lower - pad, 0.0), [np.inf]))
        self.count = np.concatenate(([counts.nonpositive], counts.count, [counts.top])).astype(float)
        keep = self.count > 0
        self.upper, self.lower, self.count = self.upper[keep], self.lower[keep], self.count[keep]
        self.n = counts.samples
        # the largest loss's bound (inf if a loss was +inf or NaN): the inversion searches beyond it
        self.max_loss = float(self.upper[-1]) if self.upper.size else 0.0

    def tail(self, eps: float):
        """The bins whose term can be non-zero at ``eps`` (upper edge above it)."""
        i = int(np.searchsorted(self.upper, eps, side="right"))
        return self.upper[i:], self.lower[i:], self.count[i:]


def _terms(eps: float, upper: np.ndarray) -> np.ndarray:
    """1 − e^{ε − U} (1 where U = inf)."""
    with np.errstate(over="ignore"):
        return -np.expm1(eps - upper)


class _Tilted:
    """Add direction of one epoch under the tilted law: δ_add(ε) <= B·U(mean of w·g/B) for ε >= ε₀ with
    w = Z^m e^{λS} and B = Z̄^m e^{λ m e^{−ε₀}} >= w on {S < m e^{−ε₀}} (the only place where g > 0).  The
    losses L = log(m/S) are counts on the grid: a bin's weighted term is at most min(1, w at its lower edge)
    times the term at its upper edge (module doc)."""

    def __init__(self, counts: LossCounts, m, lam, log_b, eps_from, allowance):
        self.bins = _Binned(counts, allowance)
        self.n = self.bins.n
        self.m = m
        self.lam = lam
        self.log_b = log_b
        self.eps_from = eps_from
        self.max_loss = self.bins.max_loss

    def mean(self, eps):
        eps = np.atleast_1d(np.asarray(eps, dtype=float))
        out = np.empty(eps.shape)
        cap = self.m * math.exp(-self.eps_from)
        for i, e in enumerate(eps.ravel()):
            if e < self.eps_from:
                out.flat[i] = 1.0
                continue
            upper, lower, count = self.bins.tail(e)
            with np.errstate(over="ignore"):
                w = np.minimum(np.exp(self.lam * (self.m * np.exp(-lower) - cap)), 1.0)
            out.flat[i] = np.dot(count, w * _terms(e, upper)) / self.n
        return out

    def upper(self, eps, confidence):
        eps = np.atleast_1d(np.asarray(eps, dtype=float))
        u = math.exp(self.log_b) * kl_upper(np.minimum(self.mean(eps), 1.0), self.n, confidence)
        return np.where(eps >= self.eps_from, np.minimum(u, 1.0), 1.0)

    def estimate(self, eps):
        eps = np.atleast_1d(np.asarray(eps, dtype=float))
        return np.where(eps >= self.eps_from, math.exp(self.log_b) * self.mean(eps), 0.0)


class _Direction:
    """One direction's counts with the conditioning: p(E), β(ε) and the validity start ε₀."""

    def __init__(self, counts: LossCounts, p_event, beta, eps_from, allowance):
        self.bins = _Binned(counts, allowance)
        self.n = self.bins.n
        self.p = p_event
        self.beta = beta
        self.eps_from = eps_from
        self.max_loss = self.bins.max_loss

    def mean(self, eps):
        eps = np.atleast_1d(np.asarray(eps, dtype=float))
        out = np.empty(eps.shape)
        for i, e in enumerate(eps.ravel()):
            upper, _, count = self.bins.tail(e)
            out.flat[i] = np.dot(count, _terms(e, upper)) / self.n
        return out

    def upper(self, eps, confidence):
        eps = np.atleast_1d(np.asarray(eps, dtype=float))
        u = self.p * kl_upper(self.mean(eps), self.n, confidence) + self.beta(eps)
        return np.where(eps >= self.eps_from, np.minimum(u, 1.0), 1.0)

    def estimate(self, eps):
        eps = np.atleast_1d(np.asarray(eps, dtype=float))
        return np.where(eps >= self.eps_from, self.p * self.mean(eps), 0.0)
