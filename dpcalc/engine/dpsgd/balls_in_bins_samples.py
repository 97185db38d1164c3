"""DP-SGD with balls-in-bins batches: the Monte-Carlo sample sets of the dominating pair, conditioned on
rare events, drawn in batches and kept as counts on a fixed grid of losses, and their upper confidence bounds
on δ(ε) (docs/math.md §3.9).

Each epoch has ``m`` steps and every example goes to one of them uniformly at random, independently;
add/remove-one neighbours, sensitivity 1, noise σ.  Chua, Ghazi, Harrison, Leeman, Kamath, Kumar,
Manurangsi, Sinha & Zhang 2025 (AISTATS, "Balls-and-Bins Sampling for DP-SGD", arXiv:2412.16802,
the dominating pair of ABLQ_B) show that one epoch is tightly dominated by

    P = (1/m) Σ_i N(e_i, σ² I_m)   versus   Q = N(0, σ² I_m),

with δ(ε) = max(H_{e^ε}(P‖Q), H_{e^ε}(Q‖P)).  ``epochs`` independent epochs compose: the remove direction
is the pair (P^K, Q^K), the add direction (Q^K, P^K).  With ℓ(x) = log((1/m) Σ_i exp((2x_i − 1)/(2σ²)))
(the loss log dP/dQ, symmetric in the coordinates, so the ball can be put in coordinate 0 of every epoch),

    δ_remove(ε) = E_{x~P^K}[(1 − e^{ε − Σ_k ℓ(x_k)})_+],   δ_add(ε) = E_{x~Q^K}[(1 − e^{ε + Σ_k ℓ(x_k)})_+].

Each term lies in [0, 1].  The upper confidence bound is the Chernoff–Hoeffding bound in KL form
(Hoeffding 1963, Thm 1; the bound the paper uses): for n i.i.d. [0,1]-valued terms with mean
μ, P(mean ≤ a) ≤ exp(−n·kl(a‖μ)) for a < μ, so U = max{μ : n·kl(mean‖μ) ≤ log(1/α)} is >= μ with
probability >= 1 − α, and U is non-decreasing in the empirical mean.

Rare-event conditioning (in the spirit of the paper's importance sampling, made exact): the mean is taken
under the law conditioned on an event E whose probability p(E) is known in closed form, and the part of
δ outside E is bounded deterministically:

* remove: E = {some coordinate of some epoch exceeds t}.  Off E every term e^{a} (a = (2x−1)/(2σ²)) is
  at most b = e^{(2t−1)/(2σ²)}, and by Jensen Σ_k ℓ_k > ε forces Σ_{k,i} e^{a_ki} > K·m·e^{ε/K}; the
  probability of that is bounded by Bennett's inequality (Boucheron, Lugosi & Massart 2013, Thm 2.9)
  with the closed-form truncated log-normal means and variances.  δ <= p(E)·U_E + β(ε).
* add, one epoch (m > 1): an exponential tilt of every coordinate by exp(−λ e^{a}) (exact rejection
  sampling); the likelihood ratio Z(λ)^m e^{λS} is at most B = Z̄^m e^{λ m e^{−ε₀}} wherever the term is
  non-zero (S < m e^{−ε}, ε >= ε₀), so the weighted terms lie in [0, B] and δ_add <= B·U(mean/B).
* add, several epochs: by Jensen −ℓ(x) <= 1/(2σ²) − mean(x)/σ², so the add loss exceeds g₀ only if the
  grand mean of the K·m coordinates (a Gaussian) is below a threshold: E = {that Gaussian event}, exact;
  valid for ε >= g₀.

The conditional laws are sampled exactly (first-exceedance index, truncated normals by inverse CDF or
rejection; for the add direction the grand sum is drawn truncated and the centred coordinates
independently).  p(E), t, λ and g₀ are fixed before sampling, so the bound keeps its confidence.

**Batches and streams.**  The samples of a direction are drawn in batches whose size depends on the
configuration only (:func:`batch_rows`: the run's steps and the number of samples, never the processes), batch
``j`` of direction ``d`` (0 remove, 1 add) from ``numpy.random.default_rng(SeedSequence(seed,
spawn_key=(d, j)))``.  A batch returns counts, not losses (:class:`LossCounts`), and the counts of the batches
are added as integers, so the bound for a seed is the same bit for bit whichever ``mapper`` ran the batches
(in this process, on a pool, on a cluster) and in whatever order, and memory does not grow with the samples.

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

For a fixed sample set every term is non-increasing in ε, and so are β(ε) and the conditioning, so the
upper bound U(ε) is non-increasing in ε (:mod:`dpcalc.engine.dpsgd.balls_in_bins_mc` inverts it).

**Samples needed** (:meth:`Plan.floor`, :func:`samples_needed`): whatever the draws, the bound at ε is at least its
floor p(E)·(1 − (1 − c)^{1/n}) + β(ε) (B·(1 − (1 − c)^{1/n}) for the tilted add direction): the KL bound of an
empirical mean of 0.  Beyond every sampled loss the mean is 0 and the floor is the bound, so ε is finite
exactly when the floor at large ε is within δ: the sample count that certifies δ is where the floor falls to δ
— about p(E)·log(1/(1 − c))/δ, not the larger count the KL bound needs for a given relative accuracy.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import numpy as np

from dpcalc.engine._special import lazy_special as special
from dpcalc.engine.mechanisms.random_allocation.rdp_add import log_laplace_lognormal_upper
from dpcalc.errors import InputError

#: Largest number of float64 entries in one sampled block (about 48 MB; a few temporaries of that size).
_BLOCK = 6_000_000
#: Relative allowance for rounding in sums, probabilities and the KL bisection.
_ROUND = 1e-9
#: Above this conditioning probability the plain (unconditioned) sampler is used.
_P_MAX = 0.5
#: Conditioning events below this probability are not sampled: their probability is the bound.
_P_TINY = 1e-250

#: Mantissa bits the grid of losses keeps: 2^16 bins per binade (a loss rounded up by a relative 2^−16 at most).
GRID_BITS = 16
_GRID_SHIFT = 52 - GRID_BITS
#: Positive losses at or below this share the first bin (0, 2^−24·(1 + 2^−16)).
GRID_LOW = 2.0**-24
_GRID_BASE = int(np.array(GRID_LOW).view(np.int64)) >> _GRID_SHIFT

#: A batch is about this many normal draws (about 0.2 s on one core)...
BATCH_DRAWS = 2**23
#: ...of at least and at most this many samples...
BATCH_ROWS_MIN, BATCH_ROWS_MAX = 256, 2**20
#: ...and a direction has at most this many batches (larger batches for more samples).
MAX_BATCHES = 2**16
#: The most normal draws of one sample (the run's steps, K·m): held in memory at once (about 26 bytes each).
MAX_WIDTH = 2**23


def _serial(fn, items, weights=None):
    """The default mapper: ``fn`` on every item, in order, in this process."""
    return map(fn, items)


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


def _remove_p_event(sigma, m, k, t):
    """P(E) under P^K, E = {some coordinate > t}: 1 − Φ((t−1)/σ)^K Φ(t/σ)^{K(m−1)} (exact, rounded up)."""
    t = np.asarray(t, dtype=float)
    log_none = k * special.log_ndtr((t - 1.0) / sigma) + k * (m - 1) * special.log_ndtr(t / sigma)
    return np.minimum(-np.expm1(log_none) * (1.0 + _ROUND), 1.0)


def _bennett_beta(sigma, m, k, t, eps):
    """Upper bound on P^K(no coordinate > t and Σ_k ℓ_k > ε) by Bennett's inequality (see module doc)."""
    t = np.asarray(t, dtype=float)
    eps = np.asarray(eps, dtype=float)
    s2 = sigma * sigma
    phi = special.ndtr
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        # truncated moments of Y = e^{a} 1{x <= t}, a = (2x − 1)/(2σ²): null x ~ N(0, σ²), signal N(1, σ²)
        m0 = phi((t - 1.0) / sigma)
        q0 = np.exp(1.0 / s2) * phi((t - 2.0) / sigma)
        m1 = np.exp(1.0 / s2) * phi((t - 2.0) / sigma)
        q1 = np.exp(3.0 / s2) * phi((t - 3.0) / sigma)
        mean = k * ((m - 1) * m0 + m1) * (1.0 + 1e-6)
        var = k * ((m - 1) * np.maximum(q0 - m0 * m0, 0.0) + np.maximum(q1 - m1 * m1, 0.0))
        var = var * (1.0 + 1e-6) + 1e-300
        b = np.exp((2.0 * t - 1.0) / (2.0 * s2))
        u = k * m * np.exp(eps / k) - mean
        x = b * u / var
        beta = np.exp(-(var / (b * b)) * ((1.0 + x) * np.log1p(x) - x))
    beta = np.where((u > 0) & np.isfinite(beta), beta, 1.0)
    return np.minimum(beta * (1.0 + 1e-6), 1.0)


def _remove_plan(sigma, m, k, eps_ref, n, confidence, delta_target=None):
    """Threshold t for the remove direction (``inf``: no conditioning), minimising a forecast of the bound
    (the floor p(E)·log(1/α)/n, the relative spread and β at ``eps_ref``); data-independent."""
    lia = -math.log1p(-confidence)
    z = np.linspace(0.0, 14.0, 281)
    t = 1.0 + sigma * z
    p = _remove_p_event(sigma, m, k, t)
    beta = _bennett_beta(sigma, m, k, t, eps_ref)
    cost = p * lia / n + beta
    cost_off = lia / n
    if delta_target is not None:
        cost = cost + np.sqrt(2.0 * delta_target * p * lia / n)
        cost_off += math.sqrt(2.0 * delta_target * lia / n)
    ok = p < _P_MAX
    if not np.any(ok):
        return math.inf
    i = int(np.argmin(np.where(ok, cost, np.inf)))
    return float(t[i]) if cost[i] < cost_off else math.inf


def _epoch_losses(x, sigma, k, m):
    """Σ_k ℓ(x_k) for a (rows, K·m) block (overwrites ``x``)."""
    rows = x.shape[0]
    a = x.reshape(rows, k, m)
    a *= 1.0 / (sigma * sigma)
    mx = a.max(axis=2, keepdims=True)
    a -= mx
    np.exp(a, out=a)
    ell = np.log(a.sum(axis=2)) + mx[:, :, 0] - 1.0 / (2.0 * sigma * sigma) - math.log(m)
    return ell.sum(axis=1)


def _sample_remove(sigma, m, k, t, n, rng):
    """Losses Σ_k ℓ(x_k), x ~ P^K (ball in coordinate 0 of every epoch), conditioned on
    {some coordinate > t} when t is finite (exact: first-exceedance index, then truncated normals)."""
    width = k * m
    mu = np.zeros(width)
    mu[::m] = 1.0
    out = np.empty(n)
    rows_per = max(1, _BLOCK // width)
    if math.isfinite(t):
        log_below = special.log_ndtr((t - mu) / sigma)
        reach = -np.expm1(np.cumsum(log_below))  # P(first exceedance <= j)
    for s in range(0, n, rows_per):
        r = min(rows_per, n - s)
        x = rng.standard_normal((r, width))
        if math.isfinite(t):
            j = np.searchsorted(reach, rng.random(r) * reach[-1], side="left")
            j = np.minimum(j, width - 1)
            zt = (t - mu[j]) / sigma
            x[np.arange(r), j] = -special.ndtri(rng.random(r) * special.ndtr(-zt))  # z > zt
            x *= sigma
            x += mu
            cols = np.arange(width)
            before = cols[None, :] < j[:, None]
            bad = before & (x > t)
            while np.any(bad):
                idx = np.nonzero(bad)
                x[idx] = mu[idx[1]] + sigma * rng.standard_normal(idx[0].size)
                bad[idx] = x[idx] > t
        else:
            x *= sigma
            x += mu
        out[s : s + r] = _epoch_losses(x, sigma, k, m)
    return out


def _add_p_event(sigma, m, k, g0):
    """Q^K(G > g0), G = K/(2σ²) − Σx/(mσ²) ~ N(K/(2σ²), K/(mσ²)): the Jensen bound on the add loss."""
    s0 = m * (k / 2.0 - sigma * sigma * g0)
    log_p = float(special.log_ndtr(s0 / (sigma * math.sqrt(k * m))))
    return min(math.exp(log_p) * (1.0 + _ROUND), 1.0) if log_p > math.log(_P_TINY) else 0.0


def _sample_add(sigma, m, k, g0, n, rng):
    """Losses −Σ_k ℓ(x_k), x ~ Q^K, conditioned on {G > g0} when g0 is finite (grand sum drawn truncated,
    the centred coordinates independently: exact for i.i.d. Gaussians)."""
    width = k * m
    out = np.empty(n)
    rows_per = max(1, _BLOCK // width)
    sd_sum = sigma * math.sqrt(width)
    if math.isfinite(g0):
        cap = special.ndtr(m * (k / 2.0 - sigma * sigma * g0) / sd_sum)
    for s in range(0, n, rows_per):
        r = min(rows_per, n - s)
        x = rng.standard_normal((r, width))
        x *= sigma
        if math.isfinite(g0):
            total = sd_sum * special.ndtri(rng.random(r) * cap)
            x -= x.mean(axis=1, keepdims=True)
            x += (total / width)[:, None]
        out[s : s + r] = -_epoch_losses(x, sigma, k, m)
    return out


def _tilt_z_upper(sigma, lam):
    """A rigorous upper bound on Z(λ) = E[exp(−λ e^{a(x)})], x ~ N(0, σ²), a = (2x − 1)/(2σ²): the Laplace
    transform of the lognormal e^{a}, bounded by the tangent-cell sum of
    :func:`dpcalc.engine.mechanisms.random_allocation.rdp_add.log_laplace_lognormal_upper` (never below the exact
    value; about 1e-6 relative above it where Z is not astronomically small)."""
    if lam == 0.0:
        return 1.0
    return min(1.0, math.exp(float(log_laplace_lognormal_upper(1.0 / sigma, np.array([lam]))[0])))


@functools.lru_cache(maxsize=256)
def _tilt_plan(sigma, m, eps0):
    """λ >= 0 minimising log B(λ) = m(log Z(λ) + λ e^{−ε₀}) (the Chernoff exponent of the add loss)."""
    lams = np.concatenate([[0.0], np.geomspace(1e-2, 50.0, 60)])
    logb = [m * (math.log(_tilt_z_upper(sigma, float(la))) + la * math.exp(-eps0)) for la in lams]
    i = int(np.argmin(logb))
    return float(lams[i]), float(logb[i])


def _sample_add_tilted(sigma, m, lam, n, rng):
    """S = Σ_i e^{a(x_i)} with x_i i.i.d. from N(0, σ²) tilted by exp(−λ e^{a}) (exact rejection sampling)."""
    c = 1.0 / (2.0 * sigma * sigma)
    out = np.empty(n)
    rows_per = max(1, _BLOCK // (2 * m))
    for s in range(0, n, rows_per):
        r = min(rows_per, n - s)
        need = r * m
        kept = []
        while need > 0:
            x = sigma * rng.standard_normal(int(need * 1.2) + 64)
            y = np.exp(x / (sigma * sigma) - c)
            acc = y[rng.random(x.size) < np.exp(-lam * y)]
            kept.append(acc[:need])
            need -= kept[-1].size
        out[s : s + r] = np.concatenate(kept).reshape(r, m).sum(axis=1)
    return out


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


# ------------------------------------------------------------------------------------------------ batches


def batch_rows(width: float, samples: int) -> int:
    """The samples of each batch (the last one takes the rest): about :data:`BATCH_DRAWS` normal draws of
    ``width`` each, within [:data:`BATCH_ROWS_MIN`, :data:`BATCH_ROWS_MAX`], and more where ``samples`` would
    make more than :data:`MAX_BATCHES` batches.  A function of the configuration only."""
    rows = min(BATCH_ROWS_MAX, max(BATCH_ROWS_MIN, int(BATCH_DRAWS // max(width, 1.0))))
    return max(rows, -(-int(samples) // MAX_BATCHES))


def batches(samples: int, rows: int) -> list[tuple[int, int]]:
    """(index, size) of the batches of ``samples`` samples in batches of ``rows``."""
    samples, rows = int(samples), int(rows)
    return [(j, min(rows, samples - j * rows)) for j in range(-(-samples // rows))]


def stream(seed: int, direction: int, index: int) -> np.random.Generator:
    """The random stream of batch ``index`` of ``direction``: ``SeedSequence(seed, spawn_key=(direction,
    index))``, the same on any process."""
    return np.random.default_rng(np.random.SeedSequence(int(seed), spawn_key=(int(direction), int(index))))


def _binned_batch(draw, rows: int, block: int) -> LossCounts:
    """The counts of ``rows`` losses drawn ``block`` at a time by ``draw(r)``: memory of one block."""
    merger = Merger()
    for start in range(0, rows, block):
        merger.add(bin_losses(draw(min(block, rows - start))))
    return merger.result()


def _draw_batch(task) -> LossCounts:
    """One batch of one direction (a module-level function of a small tuple: cheap to send to a worker):
    ``(kind, parameters, seed, direction, index, rows)``."""
    kind, par, seed, direction, index, rows = task
    rng = stream(seed, direction, index)
    if kind == "remove":
        sigma, m, k, t = par
        return _binned_batch(
            lambda r: _sample_remove(sigma, m, k, t, r, rng), rows, max(1, _BLOCK // (k * m))
        )
    if kind == "add":
        sigma, m, k, g0 = par
        return _binned_batch(lambda r: _sample_add(sigma, m, k, g0, r, rng), rows, max(1, _BLOCK // (k * m)))
    sigma, m, lam = par  # tilted: the losses log(m/S)
    with np.errstate(divide="ignore"):
        return _binned_batch(
            lambda r: math.log(m) - np.log(_sample_add_tilted(sigma, m, lam, r, rng)),
            rows,
            max(1, _BLOCK // (2 * m)),
        )


def run_batches(tasks, mapper=None) -> dict:
    """Run the batch ``tasks`` (tuples of :func:`_draw_batch`) through ``mapper`` (default: in this process,
    in order) and merge each direction's counts: {direction: LossCounts}.  The merge is exact, so the result
    does not depend on the mapper."""
    mapper = mapper or _serial
    tasks = list(tasks)
    merged: dict = {}
    results = mapper(_draw_batch, tasks, [t[-1] for t in tasks])
    for task, part in zip(tasks, results):
        merged.setdefault(task[3], Merger()).add(part)
    return {d: mg.result() for d, mg in merged.items()}


def check_width(width: float) -> None:
    """Refuse a sample of more than :data:`MAX_WIDTH` normal draws (one sample is held in memory at once)."""
    if width > MAX_WIDTH:
        raise InputError(
            f"balls-in-bins Monte Carlo: one sample of {width:.0f} steps (epochs × steps per epoch) needs "
            f"{width:.3g} normal draws held in memory at once, more than {MAX_WIDTH:.3g}; use --method rdp or pld"
        )


# ------------------------------------------------------------------------------------------------- the plan


@dataclass(frozen=True)
class Plan:
    """The conditioning of both directions, fixed before sampling (module doc): the remove threshold ``t``
    (inf: none) and the add sampler (``add``: 'tilted' with ``lam``, ``log_b``; 'conditioned' with ``p_add``;
    'tiny' when the add loss cannot pass g₀ but with probability below :data:`_P_TINY`; 'plain'); ``g0`` the
    add direction's validity start."""

    sigma: float
    m: int
    k: int
    t: float
    add: str
    g0: float
    lam: float = 0.0
    log_b: float = 0.0
    p_add: float = 1.0

    @property
    def width(self) -> int:
        return self.k * self.m

    def p_remove(self) -> float:
        return float(_remove_p_event(self.sigma, self.m, self.k, self.t)) if math.isfinite(self.t) else 1.0

    def beta(self):
        """β(ε) of the remove direction."""
        if math.isfinite(self.t):
            return lambda e, s=self.sigma, m=self.m, k=self.k, t=self.t: _bennett_beta(s, m, k, t, e)
        return lambda e: 0.0 * np.asarray(e, dtype=float)

    def tasks(self, samples: int, seed: int) -> list[tuple]:
        """The batches of both directions (:func:`_draw_batch`'s tuples)."""
        rows = batch_rows(self.width, samples)
        out = [
            ("remove", (self.sigma, self.m, self.k, self.t), seed, 0, j, r) for j, r in batches(samples, rows)
        ]
        if self.add == "tilted":
            par, kind = (self.sigma, self.m, self.lam), "tilted"
        elif self.add == "tiny":
            return out
        else:
            par, kind = (
                (self.sigma, self.m, self.k, self.g0 if self.add == "conditioned" else math.inf),
                "add",
            )
        return out + [(kind, par, seed, 1, j, r) for j, r in batches(samples, rows)]

    def directions(self, counts: dict, samples: int):
        """The two directions' bounds from the merged counts of :meth:`tasks`' batches."""
        allowance = sgd_allowance(self.sigma, self.m, self.k)
        rem = _Direction(counts[0], self.p_remove(), self.beta(), -math.inf, allowance)
        if self.add == "tilted":
            add = _Tilted(counts[1], self.m, self.lam, self.log_b, self.g0, allowance)
        elif self.add == "tiny":  # the add loss passes g0 with probability below _P_TINY: that is its bound
            none = LossCounts(np.zeros(0, np.int64), np.zeros(0, np.int64), int(samples), 0)
            add = _Direction(none, _P_TINY, lambda e: 0.0 * e, self.g0, allowance)
        elif self.add == "conditioned":
            add = _Direction(counts[1], self.p_add, lambda e: 0.0 * e, self.g0, allowance)
        else:
            add = _Direction(counts[1], 1.0, lambda e: 0.0 * e, -math.inf, allowance)
        return rem, add

    def floor(self, samples: int, confidence: float) -> float:
        """The least bound at any one ε, whatever the draws, with ``samples`` samples (module doc): the larger
        direction's floor, the remove direction's p(E)·kl_upper(0) + β(ε) at its smallest over a grid of ε
        (β decreases in ε; its numerical form is 1 where e^{ε/K} overflows, so the grid stops at 700·K)."""
        kl0 = float(kl_upper(0.0, samples, confidence))
        add = {
            "tilted": math.exp(self.log_b) * kl0,
            "tiny": _P_TINY * kl0,
            "conditioned": self.p_add * kl0,
            "plain": kl0,
        }[self.add]
        grid = np.concatenate((np.linspace(0.0, 50.0, 501), np.geomspace(50.0, 700.0 * self.k, 200)))
        grid = np.concatenate(([max(self.g0, 0.0)], grid[grid >= self.g0]))
        rem = self.p_remove() * kl0 + float(np.min(np.asarray(self.beta()(grid), dtype=float)))
        return min(1.0, max(rem, add))


def plan(sigma, m, k, eps_ref, n, confidence, delta_target=None) -> Plan:
    """The conditioning of both directions for ``n`` samples (module doc), chosen from ``eps_ref`` (and the
    δ aimed at) before any draw: only the tightness depends on it, never the validity."""
    t = _remove_plan(sigma, m, k, eps_ref, n, confidence, delta_target)
    g0 = max(float(eps_ref), 0.0)
    if k == 1 and m > 1:
        lam, log_b = _tilt_plan(sigma, m, g0)
        if log_b < math.log(_P_MAX):
            return Plan(sigma, m, k, t, "tilted", g0, lam=lam, log_b=log_b)
    p_add = _add_p_event(sigma, m, k, g0)
    if p_add < _P_TINY:
        return Plan(sigma, m, k, t, "tiny", g0)
    if p_add < _P_MAX:
        return Plan(sigma, m, k, t, "conditioned", g0, p_add=p_add)
    return Plan(sigma, m, k, t, "plain", -math.inf)


def _directions(sigma, m, k, eps_ref, n, confidence, seed, delta_target=None, mapper=None):
    """The two directions' bounds from ``n`` samples each, drawn in batches through ``mapper`` (module doc)."""
    check_width(k * m)
    p = plan(sigma, m, k, eps_ref, n, confidence, delta_target)
    return p.directions(run_batches(p.tasks(n, seed), mapper), n)


def samples_for_floor(delta, confidence, scale=1.0, beta=0.0) -> float:
    """The least n with scale·(1 − (1 − c)^{1/n})·(1 + rounding) + beta <= δ (:func:`kl_upper` of a mean of 0,
    the floor of the module doc), checked against :func:`kl_upper` itself; inf when no n gives it."""
    room = (float(delta) - float(beta)) / float(scale)
    if not room > 0:
        return math.inf
    lia = -math.log1p(-float(confidence))
    n = math.ceil(lia / -math.log1p(-min(room / (1.0 + 4 * _ROUND), 1.0 - 1e-16)))
    for _ in range(64):
        if scale * float(kl_upper(0.0, n, confidence)) + beta <= delta:
            return float(n)
        n = math.ceil(n * 1.001) + 1
    return math.inf


def samples_needed(sigma, m, k, eps_ref, delta, confidence, start) -> float:
    """The least number of samples per direction (from ``start`` on, searched by doubling then bisection) whose
    floor, with the conditioning :func:`plan` chooses for that number, is within ``delta``: below it ε is
    inf whatever the draws; from it on the bound can certify ``delta`` (module doc).  inf if no number below
    2^200 does."""

    def ok(n):
        return plan(sigma, m, k, eps_ref, n, confidence, delta).floor(n, confidence) <= delta

    lo, hi = int(start), max(int(start), 2)
    for _ in range(200):
        if ok(hi):
            break
        lo, hi = hi, hi * 2
    else:
        return math.inf
    while hi - lo > max(1, hi // 1000):
        mid = (lo + hi) // 2
        lo, hi = (lo, mid) if ok(mid) else (mid, hi)
    return float(hi)
