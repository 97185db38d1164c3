"""Balls-in-bins participation with correlated noise: Monte-Carlo upper confidence bounds on ε (docs/math.md
§12.5).

Every example is put in one of b bins uniformly at random, independently, and takes part in the steps
i ≡ bin (mod b) — jax_privacy's ``BallsInBinsSampling``: the same bin in every cycle of b steps.  For a
non-negative strategy C the run is dominated, in both directions, by the pair

    P = (1/b) Σ_s N(m_s, σ² I)  against  Q = N(0, σ² I),   m_s = C x_s,  x_s = Σ_{i ≡ s (mod b)} e_i

(Choquette-Choo, Ganesh, Haque, Steinke & Thakurta 2025, "Near exact privacy amplification for matrix
mechanisms", ICLR, arXiv:2410.06266; the reduction of vector gradients to one direction needs C >= 0, as in
MMCC: Choquette-Choo et al. 2024, arXiv:2310.15526, Cor. 4.7; the Monte-Carlo accountant is Chua et al. 2025,
arXiv:2412.16802).  The loss ℓ = log dP/dQ depends on the output y only through u = Mᵀy (M = [m_0 … m_{b−1}]):
with K = MᵀM, u ~ N(0, σ²K) under Q and N(K e_s, σ²K) under P's component s, and
ℓ = log((1/b) Σ_s exp((u_s − K_ss/2)/σ²)) — so a sample costs O(b²), whatever the steps n.

δ_remove(ε) = E_P[(1 − e^{ε−ℓ})_+] and δ_add(ε) = E_Q[(1 − e^{ε+ℓ})_+], each term in [0, 1]: the empirical
mean of n samples is turned into an upper confidence bound by the Chernoff–Hoeffding bound in KL form
(Hoeffding 1963, Thm 1), and ε is inverted as for DP-SGD's balls-in-bins rows
(:func:`dpcalc.engine.dpsgd.balls_in_bins_mc.epsilon_of_directions`, docs/math.md §3.9).

The samples are drawn as DP-SGD's (:mod:`dpcalc.engine.dpsgd.balls_in_bins_samples`, docs/math.md §12.5): in
batches of a size fixed by b and the number of samples, batch j of direction d (0 remove, 1 add) from
``SeedSequence(seed, spawn_key=(d, j))`` — the same streams for every σ, as one sample set per σ was before —
each batch returning the counts of its losses on the fixed grid of losses, merged exactly.  A ``mapper`` may run
the batches anywhere (a pool, a cluster): the numbers for a seed are the same bit for bit, and memory does not grow
with the samples.  Every term of a bin is bounded by the term at the bin's upper edge, raised by an allowance for
the floating-point error of the loss (:func:`allowance`), so the bound keeps its confidence.
"""

from __future__ import annotations

import functools
import math

import numpy as np

from dpcalc.engine.dpsgd import balls_in_bins_counts as bc
from dpcalc.engine.dpsgd import balls_in_bins_samples as bs
from dpcalc.engine.dpsgd.balls_in_bins_mc import epsilon_of_directions
from dpcalc.engine.matrix.strategies import Strategy
from dpcalc.errors import InputError

#: The most doubles in one block of samples (memory below ~150 MB with the temporaries).
_BLOCK = 4_000_000
#: The least relative rounding allowance of a sampled loss (the log-sum-exp in floating point; :func:`allowance`).
_ROUND = 1e-10
#: The most work of the mode Gram matrix of a Toeplitz strategy (bins × steps).
MAX_GRAM_WORK = 2e8
#: The most bins (b × b matrices: K, a and its root, 34 MB each at the limit).
MAX_BINS = 2048


def work(samples: int, bins: int) -> float:
    """The cost of one direction in units of about 25 ns: a b-vector of normals times a b×b triangle, and a
    log-sum-exp of b terms, per sample."""
    return float(samples) * bins * (1.0 + bins / 400.0)


def mode_gram(s: Strategy, b: int) -> np.ndarray:
    """K = MᵀM, K_st = Σ_{i ≡ s, j ≡ t (mod b)} (CᵀC)_ij (b × b) — for a Toeplitz C from w[t] = Σ_m c[t − mb]
    (m_s is w shifted by s: K_st = Σ_{u=0}^{n−1−max(s,t)} w[u + |t−s|] w[u]), else from CᵀC."""
    n = s.n
    if not 1 <= b <= n:
        raise InputError(f"--participation: balls-in-bins b = {b} bins must be between 1 and the {n} steps")
    if b > MAX_BINS:
        raise InputError(f"--participation: the Monte Carlo row takes at most {MAX_BINS} bins, got b = {b}")
    if s.coef is None:
        return _blocks_summed(s.gram(), b)
    if float(b) * n > MAX_GRAM_WORK:
        raise InputError(
            f"--participation: balls-in-bins over {n} steps with b = {b} bins needs {float(b) * n:.3g} operations "
            f"for the bins' Gram matrix, above {MAX_GRAM_WORK:.3g}: fewer steps or bins"
        )
    c = np.zeros(n)
    c[: min(s.coef.size, n)] = s.coef[:n]
    k = math.ceil(n / b)
    pad = np.zeros(k * b)
    pad[:n] = c
    w = np.cumsum(pad.reshape(k, b), axis=0).reshape(-1)[:n]
    K = np.zeros((b, b))
    for d in range(b):
        tail = np.cumsum(w[d:] * w[: n - d])  # tail[j] = Σ_{u <= j} w[u + d] w[u]
        t = np.arange(d, b)
        K[t - d, t] = K[t, t - d] = tail[n - 1 - t]
    return K


def _blocks_summed(g: np.ndarray, b: int) -> np.ndarray:
    """Σ over the b×b blocks of g (n × n, the last blocks partial): one row block at a time (memory b·n)."""
    n = g.shape[0]
    whole = (n // b) * b
    K = np.zeros((b, b))
    for start in range(0, n, b):
        rows = g[start : start + b]
        part = rows[:, :whole].reshape(rows.shape[0], n // b, b).sum(axis=1)
        part[:, : n - whole] += rows[:, whole:]
        K[: rows.shape[0]] += part
    return K


def _losses(a: np.ndarray, root: np.ndarray, n: int, rng: np.random.Generator, signal: bool) -> np.ndarray:
    """n samples of ℓ = log((1/b) Σ_s exp(v_s − a_ss/2)), v = root·z (+ a e_s, s uniform, under P), a = K/σ²."""
    b = a.shape[0]
    half = 0.5 * np.diag(a)
    out = np.empty(n)
    block = max(1, _BLOCK // b)
    for start in range(0, n, block):
        m = min(block, n - start)
        v = rng.standard_normal((m, b)) @ root.T
        if signal:
            v += a[rng.integers(b, size=m)]
        v -= half
        top = v.max(axis=1)
        out[start : start + m] = top + np.log(np.exp(v - top[:, None]).sum(axis=1)) - math.log(b)
    return out


def _root(a: np.ndarray) -> np.ndarray:
    """A square root R with R Rᵀ = a (Cholesky; a symmetric eigen-root if rounding makes a look singular)."""
    try:
        return np.linalg.cholesky(a)
    except np.linalg.LinAlgError:
        vals, vecs = np.linalg.eigh(a)
        return vecs * np.sqrt(np.clip(vals, 0.0, None))


def allowance(a: np.ndarray):
    """The allowance for the floating-point error of a loss ℓ with a = K/σ² (:func:`bc.loss_allowance`):
    relative max(10⁻¹⁰, 2⁻⁴⁰(b + 8)) to 1 + |ℓ| + 2·max a_ss + 8·√(max a_ss) (the size of the numbers the
    log-sum-exp of b terms works with) — thousands of times the error of the computation."""
    b = a.shape[0]
    amax = float(np.max(np.diag(a)))
    rho = max(_ROUND, 2.0**-40 * (b + 8))
    return bc.loss_allowance(rho, rho * (2.0 * amax + 8.0 * math.sqrt(amax)))


def batch_rows(b: int, samples: int) -> int:
    """The samples of each batch: about :data:`bs.BATCH_DRAWS` units of :func:`work` (a function of b and the
    number of samples only, never of the processes)."""
    return bs.batch_rows(b * (1.0 + b / 400.0), samples)


def _batch(K: np.ndarray, root_k: np.ndarray, task) -> bc.LossCounts:
    """One batch: ``task = (sigma, seed, direction, index, rows)``; the counts of its losses (remove: ℓ under P;
    add: −ℓ under Q).  K and its root are the only arrays sent with it (b × b)."""
    sigma, seed, direction, index, rows = task
    a = K / (sigma * sigma)
    root = root_k / sigma
    rng = bs.stream(seed, direction, index)
    sign = 1.0 if direction == 0 else -1.0
    return bs._binned_batch(
        lambda r: sign * _losses(a, root, r, rng, direction == 0), rows, max(1, _BLOCK // a.shape[0])
    )


def directions_at(K: np.ndarray, sigmas, samples: int, seed: int, mapper=None) -> list:
    """The two directions' bounds (remove: ℓ under P; add: −ℓ under Q) at each noise of ``sigmas``, from
    ``samples`` samples per direction drawn in batches through ``mapper`` (module docstring): one list of
    batches for every σ and both directions, so that a pool or a cluster shares them all."""
    sigmas = [float(x) for x in sigmas]
    rows = batch_rows(K.shape[0], samples)
    tasks = [
        (sig, int(seed), d, j, r) for sig in sigmas for d in (0, 1) for j, r in bs.batches(samples, rows)
    ]
    mapper = mapper or bs._serial
    mergers: dict = {}
    fn = functools.partial(_batch, K, _root(K))
    for task, part in zip(tasks, mapper(fn, tasks, [t[-1] for t in tasks])):
        mergers.setdefault((task[0], task[2]), bc.Merger()).add(part)
    out = []
    for sig in sigmas:
        pad = allowance(K / (sig * sig))
        rem, add = (
            bc._Direction(mergers[(sig, d)].result(), 1.0, lambda e: 0.0 * e, -math.inf, pad) for d in (0, 1)
        )
        out.append((rem, add))
    return out


def samples_to_certify(delta: float, confidence: float) -> float:
    """The least number of samples per direction with which the plain sampler can certify ``delta`` (a finite
    ε): its bound beyond every sampled loss is the KL bound of a mean of 0, 1 − (1 − c)^{1/n} (Hoeffding 1963,
    Thm 1), so below this count ε is inf whatever the draws — about log(1/(1 − c))/δ (docs/math.md §12.5)."""
    return bs.samples_for_floor(delta, confidence)


def epsilon_mc(
    s: Strategy,
    b: int,
    sigma,
    delta,
    *,
    samples: int,
    confidence: float,
    seed: int,
    gram: np.ndarray | None = None,
    mapper=None,
):
    """(ε upper bounds, ε estimates) of the strategy ``s`` under balls-in-bins participation over ``b`` bins,
    at each (σ, δ) of the broadcast ``sigma`` and ``delta``: each ε is an upper bound with probability >=
    ``confidence`` over the sampling (``inf`` where the samples cannot certify δ: the floor is about
    log(1/(1 − confidence))/samples: :func:`samples_to_certify`).  One sample set per distinct σ (``seed`` fixes
    it) serves every δ; ``mapper`` runs the batches (module docstring), the numbers do not depend on it.  Needs
    C >= 0 entrywise (module docstring)."""
    if not s.nonnegative:
        raise InputError(
            f"balls-in-bins by Monte Carlo needs C >= 0 entrywise; {s.label} has negative entries"
        )
    K = mode_gram(s, b) if gram is None else gram
    sig, dl = (x.ravel() for x in np.broadcast_arrays(np.asarray(sigma, float), np.asarray(delta, float)))
    upper, estimate = np.empty(sig.size), np.empty(sig.size)
    values = np.unique(sig)
    for value, (rem, add) in zip(values, directions_at(K, values, samples, seed, mapper)):
        for i in np.flatnonzero(sig == value):
            upper[i], estimate[i] = epsilon_of_directions(rem, add, float(dl[i]), confidence)
    return upper, estimate


def delta_mc(
    s: Strategy,
    b: int,
    sigma: float,
    eps,
    *,
    samples: int,
    confidence: float,
    seed: int,
    gram: np.ndarray | None = None,
    mapper=None,
):
    """(δ upper bounds, δ estimates) of the pair (module docstring) at noise σ and each ε of ``eps``, from the
    sample set :func:`epsilon_mc` draws for that σ (the same ``seed``): the worse direction's Chernoff–Hoeffding
    bound at ``confidence`` and its empirical mean.  Each upper bound holds with probability >= ``confidence``
    over the sampling, at its own ε (the direction that attains the true δ there is the one that matters); not
    jointly over several ε.  ``mapper`` runs the batches (module docstring).  Needs C >= 0 entrywise."""
    if not s.nonnegative:
        raise InputError(
            f"balls-in-bins by Monte Carlo needs C >= 0 entrywise; {s.label} has negative entries"
        )
    K = mode_gram(s, b) if gram is None else gram
    eps = np.atleast_1d(np.asarray(eps, float))
    ((rem, add),) = directions_at(K, [float(sigma)], samples, seed, mapper)
    upper = np.maximum(rem.upper(eps, confidence), add.upper(eps, confidence))
    estimate = np.maximum(rem.estimate(eps), add.estimate(eps))
    return upper.reshape(eps.shape), estimate.reshape(eps.shape)
