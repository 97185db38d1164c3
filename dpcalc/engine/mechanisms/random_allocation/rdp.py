"""One round of random allocation (balls-in-bins): an RDP upper bound (docs/math.md §3.8).

Each example is used in exactly ``k`` of the ``t`` steps of a round, the k-subset chosen uniformly at random
and independently per example (k = 1: the data is partitioned into t batches, "balls-in-bins").  Neighbours:
add/remove one example; sensitivity 1 (clipped gradients of norm <= 1), Gaussian noise σ per step.

Feldman & Shenfeld 2025, "Privacy amplification by random allocation", arXiv:2502.08202 (numbering of the
NeurIPS 2025 text): Thm 3.1 reduces the adaptive t-step algorithm to the allocation of its dominating
randomizer, for the Gaussian N(1, σ²) vs N(0, σ²) (Claim D.3), through one post-processing map applied to
both distributions, so every Rényi divergence, in both directions, is bounded by that of the pair
(μ = 1/σ, in units of the noise)

    P = (1/t) Σ_i N(μ e_i, I_t)   (with the example),     Q = N(0, I_t)   (without).

Lemma 3.2: a uniform k-subset of [t] is one uniform step in each block of a uniformly random split of [t]
into k blocks; given the split the k blocks are independent 1-of-|block| allocations, so (quasi-convexity of
the mixture) the RDP of k-of-t is at most the sum of the blocks' RDP.  Blocks of sizes m = ⌊t/k⌋ and m+1
(r = t − km of the latter) are used exactly here (the paper states ⌊t/k⌋ for all blocks, assuming k | t).

* **remove** D_α(P‖Q): Thm 4.4 / Cor. 4.6 (exact at integer α >= 2), ``M_α = α!·[z^α] g(z)^t`` with
  ``g(z) = Σ_j e^{j(j−1)μ²/2} z^j/(j!·t^j)`` (the paper's sum over integer partitions, regrouped);
  fractional orders by the chord of the convex α ↦ log M_α (Wang, Balle & Kasiviswanathan 2019,
  arXiv:1808.00087, Cor. 10).
* **add** D_α(Q‖P): the Jensen step of Lemma F.3 / Thm 4.5 (W = P/Q >= its geometric mean) gives
  ``(α−1)μ²/(2t) + μ²/2``; two sharper bounds derived here are used where smaller: a Taylor expansion of
  W^{−(α−1)} around E W = 1 with a lower-tail bound (:func:`_log_add_taylor`), and, up to α = 64, the
  Laplace-transform bound of :mod:`dpcalc.engine.mechanisms.random_allocation.rdp_add` (near exact).
* both are capped by the unamplified α μ²/2 per block (joint convexity), exact for k = t.

The result composes: ``rounds`` independent rounds have RDP ``rounds · rdp`` (Mironov 2017, Prop. 1); a run's
rounds and their ε are :mod:`dpcalc.engine.dpsgd.allocation`'s.
"""

from __future__ import annotations

import math

import numpy as np

from dpcalc.engine._special import lazy_special as special
from dpcalc.engine.mechanisms.random_allocation.rdp_add import log_moment_add_upper
from dpcalc.errors import InputError
from dpcalc.lazy import lazy_module

decimal = lazy_module("decimal")  # the exact moment sums, only when random allocation is asked for

#: Largest integer order at which the multinomial formula is evaluated; above it the unamplified cap.
MAX_INT_ORDER = 256
#: Largest order at which the add direction's Laplace-transform bound is evaluated.
LAPLACE_MAX_ORDER = 64.0
_U = np.finfo(float).eps


def _check(sigma, t, k, alphas):
    sigma = np.asarray(sigma, dtype=float)
    t = np.asarray(t, dtype=float)
    k = np.asarray(k, dtype=float)
    alphas = np.atleast_1d(np.asarray(alphas, dtype=float))
    if alphas.ndim != 1:
        raise InputError("alphas: must be a 1-d list of orders")
    if np.any(~(sigma > 0)) or np.any(~np.isfinite(sigma)):
        raise InputError("sigma: must be a finite number > 0")
    if np.any(~np.isfinite(t)) or np.any(t < 1) or np.any(t != np.floor(t)):
        raise InputError("t: the number of steps must be an integer >= 1")
    if np.any(~np.isfinite(k)) or np.any(k < 1) or np.any(k != np.floor(k)):
        raise InputError("k: the number of steps per example must be an integer >= 1")
    if np.any(k > t):
        raise InputError("k: must not exceed t")
    if np.any(~(alphas > 1)):
        raise InputError("alphas: orders must be > 1 (and may be inf)")
    return sigma, t, k, alphas


def _log_conv(a, b, deg):
    """log-coefficients of the product of two power series given by log-coefficients (truncated at deg)."""
    n = np.arange(deg + 1)
    idx = n[None, :] - n[:, None]  # [i, m] -> m - i
    valid = idx >= 0
    terms = np.where(valid, a[:, None] + b[np.where(valid, idx, 0)], -np.inf)
    return special.logsumexp(terms, axis=0)


def log_moments_remove(sigma: float, t: int, deg: int) -> np.ndarray:
    """Upper bounds on ``log E_Q[(P/Q)^n]``, n = 0..deg, for the 1-of-t pair (P = (1/t) Σ_i N(e_i/σ, I_t),
    Q = N(0, I_t)); rounding error bounded and added.

    Feldman & Shenfeld 2025, arXiv:2502.08202, Lemma F.1 / Thm 4.4 / Cor. 4.6: expanding
    (Σ_i e^{x_i/σ−1/(2σ²)})^n multinomially and using E e^{a x/σ} = e^{a²/(2σ²)} gives
    ``E_Q[(P/Q)^n] = n!·t^{−n} Σ_{a ∈ ℕ^t, |a| = n} Π_i e^{a_i(a_i−1)/(2σ²)}/a_i! = n!·[z^n] g(z)^t`` with
    ``g(z) = Σ_j e^{j(j−1)/(2σ²)} z^j/(j!·t^j)``; g^t by repeated squaring in log space (all terms positive,
    no cancellation).
    """
    j = np.arange(deg + 1, dtype=float)
    logc = j * (j - 1.0) / (2.0 * sigma**2) - special.gammaln(j + 1.0) - j * math.log(t)
    result = None
    base = logc
    e = int(t)
    while e:
        if e & 1:
            result = base if result is None else _log_conv(result, base, deg)
        e >>= 1
        if e:
            base = _log_conv(base, base, deg)
    logm = result + special.gammaln(j + 1.0)
    # Rounding (u = machine epsilon): coefficient n of a product depends on coefficients <= n only; each
    # log-space convolution adds at most (n+4)u + 3u·B_n to its log (B_n: the largest |log coefficient| of
    # index <= n in the chain, at most that of g or of g^t since c_0 = 1 makes them grow with the power),
    # and inherits the errors of its factors, which double per squaring: after the chain (length <= t + 2)
    # at most (2t+2)((n+4)u + 6u·B_n), plus 4u·B_n for the final additions.
    absmax = np.maximum(np.abs(logc), np.maximum(np.abs(result), np.abs(logm)))
    bn = 1.0 + np.maximum.accumulate(np.where(np.isfinite(absmax), absmax, 0.0))
    margin = _U * ((2.0 * t + 2.0) * ((j + 4.0) + 6.0 * bn) + 4.0 * bn)
    out = logm + margin
    out[0] = 0.0
    out[1] = 0.0  # E_Q[P/Q] = 1 exactly
    return out


def _rdp_remove_one(sigma: float, t: int, alphas: np.ndarray) -> np.ndarray:
    """Remove-direction RDP of one 1-of-t allocation (upper bound), at every order in ``alphas``."""
    cap = alphas / (2.0 * sigma**2)
    fin = np.isfinite(alphas) & (alphas <= MAX_INT_ORDER)
    out = cap.copy()
    if t == 1 or not np.any(fin):
        return out
    deg = int(np.ceil(np.max(alphas[fin])))
    logm = log_moments_remove(sigma, t, deg)
    a = alphas[fin]
    n = np.floor(a).astype(int)
    frac = a - n
    hi = np.minimum(n + 1, deg)
    chord = (1.0 - frac) * logm[n] + frac * logm[hi]  # convexity of α ↦ log M_α (equal at integers)
    with np.errstate(over="ignore"):
        val = chord / (a - 1.0)
    out[fin] = np.minimum(val, cap[fin])
    return out


def _blocks(per_block, sigma, t, k, alphas):
    """Σ over the k blocks of ``per_block(sigma, size, alphas)``: k − r blocks of ⌊t/k⌋ steps, r = t mod k of
    ⌊t/k⌋ + 1 (Lemma 3.2 of Feldman & Shenfeld 2025, arXiv:2502.08202, with exact block sizes)."""
    sigma, t, k = np.broadcast_arrays(sigma, t, k)
    m = np.floor(t / k)
    r = t - k * m
    out = (k - r)[..., None] * per_block(sigma, m, alphas)
    if np.any(r > 0):
        big = per_block(sigma, np.where(r > 0, m + 1.0, m), alphas)
        out = out + np.where(r[..., None] > 0, r[..., None] * big, 0.0)
    return out


#: Block curves already computed, by (bound, σ, block size, orders): a search over the steps or epochs of a run
#: asks the same blocks again and again (the run's curve is a sum of identical blocks); pure functions of their
#: arguments, so a cached curve is the curve.  At most :data:`_MEMO_SIZE` entries (the oldest dropped).
_MEMO: dict = {}
_MEMO_SIZE = 512


def _memo(one, sigma: float, n: int, alphas: np.ndarray) -> np.ndarray:
    key = (one.__name__, sigma, n, alphas.tobytes())
    hit = _MEMO.get(key)
    if hit is None:
        while len(_MEMO) >= _MEMO_SIZE:
            _MEMO.pop(next(iter(_MEMO)))
        hit = _MEMO[key] = np.asarray(one(sigma, n, alphas), dtype=float)
    return hit


def _per_distinct(one, sigma, m, alphas):
    """``one(σ, m, alphas)`` for every distinct (σ, m) of the broadcast arrays, spread back to their shape."""
    out = np.empty(sigma.shape + alphas.shape)
    keys = np.stack([sigma.ravel(), m.ravel()], axis=1)
    uniq, inv = np.unique(keys, axis=0, return_inverse=True)
    rows = np.array([_memo(one, float(s), int(n), alphas) for s, n in uniq]).reshape(len(uniq), -1)
    out.reshape(-1, alphas.size)[:] = rows[inv.ravel()]
    return out


def _remove_blocks(sigma, m, alphas):
    return _per_distinct(_rdp_remove_one, sigma, m, alphas)


def rdp_random_allocation_remove(sigma, t, k, alphas) -> np.ndarray:
    """Remove-direction RDP bound D_α(P‖Q) of one k-of-t random allocation of the Gaussian mechanism.

    Feldman & Shenfeld 2025, arXiv:2502.08202, Thm 4.4 / Cor. 4.6 (exact at integer orders 2..MAX_INT_ORDER,
    rounding error added), the convex chord between integers (Wang, Balle & Kasiviswanathan 2019, Cor. 10),
    Lemma 3.2 for k > 1 (exact block sizes); above MAX_INT_ORDER the unamplified k·α/(2σ²).
    Shape ``broadcast(sigma, t, k).shape + (len(alphas),)``.
    """
    sigma, t, k, alphas = _check(sigma, t, k, alphas)
    return _blocks(_remove_blocks, sigma, t, k, alphas)


#: Grid of thresholds w0 of the add-direction bound (the bound is valid for each; the minimum is taken).
_W0 = np.concatenate([np.arange(1, 20) / 20.0, 1.0 - np.geomspace(0.04, 1e-4, 13)])
#: Hölder exponents p of the lower-tail bound (each valid; the minimum is taken).
_P = np.array([1.25, 1.5, 2.0, 3.0, 5.0, 10.0, 30.0, 100.0])
#: Even Taylor orders n of the add-direction bound.
_NS = (2, 4, 6, 8, 10, 12)


def _central_moments_w(mu2: float, t: int, nmax: int) -> tuple[np.ndarray, np.ndarray]:
    """(lower, upper) bounds on the central moments v_j = E(W − 1)^j, j = 0..nmax, of W = (1/t) Σ_i Y_i with
    Y_i iid lognormal e^{μ x − μ²/2}, E Y^i = e^{i(i−1)μ²/2}: raw moments -> cumulants of Y (all >= 0, the
    lognormal being infinitely divisible) -> cumulants κ_j/t^{j−1} of W -> central moments, in decimal
    arithmetic with enough digits to absorb the cancellation, then rounded outwards to floats."""
    x = decimal.Decimal(mu2) / 2
    lg = max(0.0, -math.log10(mu2)) if mu2 > 0 else 0.0
    prec = 60 + int(nmax * lg) + int(nmax * nmax * mu2 / 4.0)
    with decimal.localcontext() as ctx:
        ctx.prec = prec
        r = [(x * (i * (i - 1))).exp() for i in range(nmax + 1)]
        kap = [decimal.Decimal(0)] * (nmax + 1)
        for n in range(1, nmax + 1):
            kap[n] = r[n] - sum(math.comb(n - 1, j - 1) * kap[j] * r[n - j] for j in range(1, n))
        td = decimal.Decimal(int(t))
        kw = [decimal.Decimal(0), decimal.Decimal(0)] + [kap[j] / td ** (j - 1) for j in range(2, nmax + 1)]
        v = [decimal.Decimal(1), decimal.Decimal(0)]
        for n in range(2, nmax + 1):
            v.append(sum(math.comb(n - 1, j - 1) * kw[j] * v[n - j] for j in range(2, n + 1)))
    vf = np.array([float(z) for z in v])
    return vf * (1.0 - 1e-12), vf * (1.0 + 1e-12)


def _log_add_taylor(beta, mu2, t, vlo, vhi):
    """Upper bound on ``log E_Q[W^{−β}]`` (β > 0, an array) with W = (1/t) Σ_i Y_i, Y_i = e^{μ x_i − μ²/2},
    x ~ N(0, I_t) (docs/math.md §3.8), given bounds ``vlo <= v_j <= vhi`` on the central moments of W.
    With f(w) = w^{−β} and a threshold 0 < w0 < 1:

    * on {W >= w0}, Taylor's theorem at 1 with Lagrange remainder (f^{(n)} = (β)_n w^{−β−n} > 0 and
      decreasing for even n) gives f(W) <= Σ_{j<n} (β)_j/j!·(1−W)^j + (β)_n/n!·w0^{−β−n}(W−1)^n, a
      polynomial >= 0 on [0, 1), so E[f(W); W >= w0] <= 1 + Σ_{2<=j<n} (−1)^j (β)_j/j!·v_j
      + (β)_n/n!·w0^{−β−n}·v_n (n = 2, 4, …, 12; odd j with the lower bounds on v_j);
    * on {W < w0}: AM–GM, W >= e^{ȳ}, ȳ = mean of μx_i − μ²/2 ~ N(−μ²/2, μ²/t), gives
      E[f(W); W < w0] <= E[e^{−βȳ}; ȳ < log w0] (closed form) and, by Hölder,
      <= (E e^{−pβȳ})^{1/p}·P(W < w0)^{1−1/p} with the Chernoff bound P(W < w0) <= e^{−t(1−w0)²/(2e^{μ²})}
      (e^{−v} <= 1 − v + v²/2 for v >= 0).
    The minimum over n, w0 ∈ _W0 and p ∈ _P is returned (each is a valid bound); float rounding is bounded
    and added."""
    b = np.asarray(beta, dtype=float)[:, None]
    lw0 = np.log(_W0)[None, :]
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        # lower tail: ȳ ~ N(m, s²);  E[e^{−βȳ}; ȳ < L] = e^{−βm+β²s²/2} Φ((L−m+βs²)/s)
        m = -mu2 / 2.0
        s2 = mu2 / t
        tail1 = -b * m + b**2 * s2 / 2.0 + special.log_ndtr((lw0 - m + b * s2) / math.sqrt(s2))
        lprob = -t * (1.0 - _W0) ** 2 / (2.0 * math.exp(mu2))
        pb = _P[None, None, :] * b[..., None]
        tail2 = (-pb * m + pb**2 * s2 / 2.0) / _P + (1.0 - 1.0 / _P) * lprob[None, :, None]
        tail = np.exp(np.minimum(tail1, np.min(tail2, axis=-1)))  # (A, W)
        lr = [np.zeros_like(b)]  # log (β)_j / j!
        for j in range(1, max(_NS) + 1):
            lr.append(lr[-1] + np.log(b + j - 1.0) - math.log(j))
        best = np.full(b.shape[0], np.inf)
        for n in _NS:
            terms = [
                (1.0 if j % 2 == 0 else -1.0) * np.exp(lr[j] + np.log(vhi[j] if j % 2 == 0 else vlo[j]))
                for j in range(2, n)
            ]
            ssum = np.sum(terms, axis=0) if terms else np.zeros_like(b)
            sabs = np.sum(np.abs(terms), axis=0) if terms else np.zeros_like(b)
            rem = np.exp(lr[n] - (b + n) * lw0 + np.log(vhi[n]))
            xval = ssum + rem + tail
            xval = xval + 32.0 * _U * (sabs + rem + tail)
            val = np.where(xval > -1.0, np.log1p(np.maximum(xval, -1.0 + 1e-300)), np.inf)
            val = np.where(np.isnan(val), np.inf, val)
            best = np.minimum(best, np.min(val, axis=-1))
    return best * (1.0 + 256.0 * _U)


def _add_one(sigma: float, t: int, alphas: np.ndarray) -> np.ndarray:
    """Add-direction RDP bound of one 1-of-t allocation at every order in ``alphas``."""
    s2 = 2.0 * sigma**2
    with np.errstate(over="ignore", invalid="ignore"):
        per = np.minimum((alphas - 1.0) / (t * s2) + 1.0 / s2, alphas / s2)  # Jensen (Lemma F.3); unamplified
    fin = np.isfinite(alphas)
    if t > 1 and np.any(fin):
        mu2 = 1.0 / sigma**2
        vlo, vhi = _central_moments_w(mu2, t, max(_NS))
        a = alphas[fin]
        taylor = _log_add_taylor(a - 1.0, mu2, float(t), vlo, vhi) / (a - 1.0)
        per[fin] = np.minimum(per[fin], taylor)
        # the Laplace-transform bound (dpcalc.engine.mechanisms.random_allocation.rdp_add), near exact at the
        # orders that decide ε; above LAPLACE_MAX_ORDER the others (and the remove direction) decide
        near = fin & (alphas <= LAPLACE_MAX_ORDER)
        if np.any(near):
            lap = log_moment_add_upper(sigma, t, alphas[near]) / (alphas[near] - 1.0)
            per[near] = np.minimum(per[near], lap)
    return per


def _add_blocks(sigma, m, alphas):
    return _per_distinct(_add_one, sigma, m, alphas)


def rdp_random_allocation_add(sigma, t, k, alphas) -> np.ndarray:
    """Add-direction RDP bound D_α(Q‖P) of one k-of-t random allocation of the Gaussian mechanism, every
    real α > 1 (Lemma 3.2 of Feldman & Shenfeld 2025, arXiv:2502.08202, for k > 1, exact block sizes).

    Per 1-of-t' block, the minimum of (a) ``(α−1)/(2t'σ²) + 1/(2σ²)``: the Jensen step of the paper's
    Lemma F.3 (W = P/Q >= Π_i (e^{μx_i−μ²/2})^{1/t'}), the RDP form of its Thm 4.5 / Cor. 4.6 add bound;
    (b) the unamplified α/(2σ²); (c) the Taylor / lower-tail bound of :func:`_log_add_taylor` and (d) the
    Laplace-transform bound of :func:`dpcalc.engine.mechanisms.random_allocation.rdp_add.log_moment_add_upper` (both
    derived in docs/math.md §3.8, not in the paper).  Equals the plain Gaussian k·α/(2σ²) at k = t.
    """
    sigma, t, k, alphas = _check(sigma, t, k, alphas)
    return _blocks(_add_blocks, sigma, t, k, alphas)


def rdp_random_allocation(sigma, t, k, alphas) -> np.ndarray:
    """RDP upper bound (max of add and remove, add/remove-one neighbours) of ONE k-of-t random allocation of
    the Gaussian mechanism with noise multiplier σ (sensitivity 1); composes additively over rounds.

    Feldman & Shenfeld 2025, "Privacy amplification by random allocation", arXiv:2502.08202: Thm 3.1 (Gaussian
    dominating pair), Lemma 3.2 (k > 1), Thm 4.4 / Cor. 4.6 (remove, exact at integer orders), Lemma F.3 /
    Thm 4.5 (add) sharpened as in :func:`rdp_random_allocation_add`.  Returns shape
    ``broadcast(sigma, t, k).shape + (len(alphas),)``; never NaN (inf at α = inf).  Rényi divergences are
    non-decreasing in the order, so the bound at α is also the least of the bounds at the orders above it
    (van Erven & Harremoës 2014, Thm 3): taken here, it makes the curve non-decreasing where the pieces
    of the bound meet (the add direction's cap below α = 2 is flat up to rounding).
    """
    out = np.maximum(
        rdp_random_allocation_remove(sigma, t, k, alphas), rdp_random_allocation_add(sigma, t, k, alphas)
    )
    a = np.atleast_1d(np.asarray(alphas, dtype=float)).reshape(-1)
    order = np.argsort(a, kind="stable")
    right = np.minimum.accumulate(np.take(out, order, axis=-1)[..., ::-1], axis=-1)[..., ::-1]
    result = np.empty_like(right)
    result[..., order] = right
    return result
