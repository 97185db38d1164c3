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
"""

from __future__ import annotations

import math

import numpy as np

from dpcalc.engine.dpsgd.balls_in_bins_mc import epsilon_of_directions
from dpcalc.engine.dpsgd.balls_in_bins_samples import _Direction
from dpcalc.engine.matrix.strategies import Strategy
from dpcalc.errors import InputError

#: The most doubles in one block of samples (memory below ~150 MB with the temporaries).
_BLOCK = 4_000_000
#: The relative rounding allowance added to every sampled loss (the log-sum-exp in floating point).
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


def _direction(losses: np.ndarray) -> _Direction:
    up = losses + _ROUND * (1.0 + np.abs(losses))
    return _Direction(up, 1.0, lambda e: 0.0 * e, -math.inf)


def directions(K: np.ndarray, sigma: float, samples: int, stream: tuple[int, int]):
    """The two directions' sample sets at σ (remove: ℓ under P; add: −ℓ under Q), from the random streams
    ``(seed, k)`` and ``(seed, k + 1)`` of ``stream = (seed, k)`` (independent streams for distinct k)."""
    a = K / (sigma * sigma)
    root = _root(a)
    seed, k = int(stream[0]), int(stream[1])
    rem = _direction(_losses(a, root, samples, np.random.default_rng([seed, k]), True))
    add = _direction(-_losses(a, root, samples, np.random.default_rng([seed, k + 1]), False))
    return rem, add


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
):
    """(ε upper bounds, ε estimates) of the strategy ``s`` under balls-in-bins participation over ``b`` bins,
    at each (σ, δ) of the broadcast ``sigma`` and ``delta``: each ε is an upper bound with probability >=
    ``confidence`` over the sampling (``inf`` where the samples cannot certify δ: the floor is about
    log(1/(1 − confidence))/samples).  One sample set per distinct σ (``seed`` fixes it) serves every δ.
    Needs C >= 0 entrywise (module docstring)."""
    if not s.nonnegative:
        raise InputError(
            f"balls-in-bins by Monte Carlo needs C >= 0 entrywise; {s.label} has negative entries"
        )
    K = mode_gram(s, b) if gram is None else gram
    sig, dl = (x.ravel() for x in np.broadcast_arrays(np.asarray(sigma, float), np.asarray(delta, float)))
    upper, estimate = np.empty(sig.size), np.empty(sig.size)
    for value in np.unique(sig):
        rem, add = directions(K, float(value), samples, (seed, 0))
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
):
    """(δ upper bounds, δ estimates) of the pair (module docstring) at noise σ and each ε of ``eps``, from the
    sample set :func:`epsilon_mc` draws for that σ (the same ``seed``): the worse direction's Chernoff–Hoeffding
    bound at ``confidence`` and its empirical mean.  Each upper bound holds with probability >= ``confidence``
    over the sampling, at its own ε (the direction that attains the true δ there is the one that matters); not
    jointly over several ε.  Needs C >= 0 entrywise."""
    if not s.nonnegative:
        raise InputError(
            f"balls-in-bins by Monte Carlo needs C >= 0 entrywise; {s.label} has negative entries"
        )
    K = mode_gram(s, b) if gram is None else gram
    eps = np.atleast_1d(np.asarray(eps, float))
    rem, add = directions(K, float(sigma), samples, (seed, 0))
    upper = np.maximum(rem.upper(eps, confidence), add.upper(eps, confidence))
    estimate = np.maximum(rem.estimate(eps), add.estimate(eps))
    return upper.reshape(eps.shape), estimate.reshape(eps.shape)
