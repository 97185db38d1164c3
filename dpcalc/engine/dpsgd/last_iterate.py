"""The last-iterate heuristic of DP-SGD: a HEURISTIC, not a privacy bound (Steinke, Nasr, Ganesh, Balle,
Choquette-Choo, Jagielski, Hayes, Thakurta, Smith & Terzis, "The Last Iterate Advantage: Empirical Auditing
and Principled Heuristic Analysis of Differentially Private SGD", ICLR 2025, arXiv:2410.06186, Thm 1).

T steps of DP-SGD with Poisson sampling at rate q, noise multiplier σ and clipping norm 1, of which only
the last iterate is released.  If every loss is linear, the last iterate is a post-processing of the sum of
the canary's T clipped gradients (one each time it is sampled) plus the sum of the T noise vectors, and
its privacy is exactly that of the pair (Thm 1), written here after scaling by σ√T:

    P = Σ_k Bin(k; T, q) · N(μ_k, 1),   μ_k = k / (σ√T),        Q = N(0, 1).

The heuristic's ε(δ) is the smallest ε with both hockey-stick divergences δ_{P‖Q}(ε) and δ_{Q‖P}(ε) at
most δ.  It is exact for linear losses only: for other losses it is NOT an upper bound (the paper gives
counterexamples), and it is not monotone in T (one step of σ = 0.5, q = 0.01 leaks more than 20 steps do,
so a model that forgets all but its last step escapes it): it must be shown as a heuristic, never as a
guarantee.

The log-likelihood ratio ``llr(x) = logsumexp_k(log w_k + μ_k x − μ_k²/2)`` is convex and increasing, so
``{P > e^ε Q}`` is a half-line and both divergences are sums of Gaussian tails at one threshold x:

    δ_{P‖Q} = Σ_k w_k Φ̄(x − μ_k) − e^ε Φ̄(x)       at ε = llr(x),
    δ_{Q‖P} = Φ(x) − e^ε Σ_k w_k Φ(x − μ_k)         at ε = −llr(x)   (0 for ε >= −log w_0 = −T log(1−q)).

They are evaluated term by term as sums of nonnegative Gaussian divergences (:meth:`_Mixture.at_threshold`),
in logs (``log_ndtr``, logsumexp), over arrays of configurations × retained k; ε(δ) solves for the
threshold x (one bisection per direction), δ(ε) brackets the x with ``llr(x) = ±ε`` (:func:`_llr_bracket`).
Soundness of the numbers (upper bounds on the heuristic, never below it):

* The binomial is cut to ``k_lo <= k <= k_hi``, each tail beyond carrying at most a small fraction of the
  δ in question (found on scipy's binomial tails ``bdtr``/``bdtrc``; twice the computed tail is used).  The
  kept weights are not renormalised, so ``P_K <= P``: then ``δ(Q‖P) <= δ(Q‖P_K)`` and
  ``δ(P‖Q) <= δ(P_K‖Q) + (dropped mass)``, and both are what is computed.  Where the Q‖P side decides and
  e^ε times the dropped mass is not negligible, :func:`last_iterate_delta` widens the cut.
* The weights come from Loader's saddle-point form of the binomial (``stirlerr`` and ``bd0``), within a
  stated error η (a few hundred ulps at T = 10^6, where ``lgamma`` differences lose about 9 digits); the
  mixture with the computed weights P̃ has ``(1 − η) P̃ <= P <= (1 + η) P̃``, so δ is raised by 1 + 2η and
  ε by 2η.
* A threshold is used only on its safe side of llr's rounding error; each Gaussian divergence is raised by
  the rounding of its two terms times their cancellation; ε is rounded up by one ulp at the end.
"""

from __future__ import annotations

import math

import numpy as np

from dpcalc.engine._numerics import log_sub, logsumexp, next_up, require
from dpcalc.engine._roots import bisect_active
from dpcalc.engine._special import lazy_special as special
from dpcalc.errors import UncertifiedError

_U = float(np.finfo(float).eps)
_LOG_2PI = math.log(2.0 * math.pi)
_LOG2 = math.log(2.0)
#: Each dropped binomial tail carries at most 2^-42 of the δ in question.
_TAIL_BITS = 42.0
#: The δ function first cuts the tails at e^-80 (δ unknown yet), then at 2^-42 δ where δ is smaller.
_FIRST_LOG_TAIL = -80.0
#: Below this log tail mass a side is kept whole (the tail would underflow a double).
_KEEP_ALL = -700.0
#: The δ function cuts no finer than this: its δ below ~e^-700 is reported as (about) e^-700 or as the
#: smallest subnormal, not computed (doubles end near e^-745).
_FLOOR = -699.0
#: Configurations × retained terms evaluated at once.
_BLOCK = 1 << 21
#: Error allowed for the log weights (0 < k < T), in ulps: this many times 1 + log(1 + T), plus 8 ulps of
#: |log w_k|.  Loader's form against mpmath within 14 standard deviations of the mean: at most 2.3e-13 at
#: T = 10^6 (q from 1e-3 to 0.999), where this allows 6e-13.
_WEIGHT_ULPS = 128.0
#: Bisection stops once the bracket on the threshold x is this narrow (plus 4e-16 relative).
_XTOL = 1e-14


# ------------------------------------------------------------------------------------------------------
# inputs


def _args(sigma, q, steps):
    sigma = require(
        sigma, lambda s: (s > 0) & np.isfinite(s), "--noise-multiplier: must be a finite number > 0"
    )
    q = require(q, lambda p: (p > 0) & (p <= 1), "--sample-rate: must lie in (0, 1]")
    steps = require(
        steps,
        lambda t: (t >= 1) & (t == np.floor(t)) & (t <= 2.0**53),
        "--steps: must be a whole number >= 1",
    )
    return sigma, q, steps


# ------------------------------------------------------------------------------------------------------
# binomial weights


def _stirlerr(n):
    """``log n! − ((n + ½) log n − n + ½ log 2π)`` for whole n >= 1: its asymptotic series above 15, the
    defining difference (``gammaln``) below (Loader 2000, "Fast and accurate computation of binomial
    probabilities", Bell Labs technical note)."""
    n = np.asarray(n, dtype=float)
    big = n > 15
    nb = np.where(big, n, 16.0)
    nn = nb * nb
    series = (1 / 12 - (1 / 360 - (1 / 1260 - (1 / 1680 - 1 / (1188 * nn)) / nn) / nn) / nn) / nb
    ns = np.where(big, 1.0, n)
    direct = special.gammaln(ns + 1.0) - (ns + 0.5) * np.log(ns) + ns - 0.5 * _LOG_2PI
    return np.where(big, series, direct)


def _bd0(x, m):
    """The deviance term ``x log(x/m) + m − x`` >= 0 (x > 0), by its series in ``v = (x−m)/(x+m)`` where
    |v| < 0.1, so that no cancellation is left (Loader 2000, the deviance ``bd0``)."""
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        d = x - m
        near = np.abs(d) < 0.1 * (x + m)
        v = np.where(near, d / (x + m), 0.0)
        total = d * v
        term = 2.0 * x * v
        v2 = v * v
        for j in range(1, 12):  # |v| < 1/11: the 12th term is below 1e-24 of the first
            term = term * v2
            total = total + term / (2 * j + 1)
        far = x * np.log(x / m) + m - x
    return np.where(near, total, far)


def _log_binom_pmf(k, n, q):
    """``log Bin(k; n, q)`` for whole ``0 <= k <= n``, by Loader's saddle-point form (Loader 2000:
    ``stirlerr(n) − stirlerr(k) − stirlerr(n−k) − bd0(k, nq) − bd0(n−k, n(1−q)) + ½ log(n/(2π k (n−k)))``),
    accurate to a few ulps of its terms, unlike differences of ``lgamma`` at n = 10^6."""
    k, n, q = np.broadcast_arrays(np.asarray(k, float), np.asarray(n, float), np.asarray(q, float))
    mid = (k > 0) & (k < n)
    ks = np.where(mid, k, 1.0)
    nk = np.where(mid, n - k, 1.0)
    nn = np.where(mid, n, 2.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        inner = (
            _stirlerr(nn)
            - _stirlerr(ks)
            - _stirlerr(nk)
            - _bd0(ks, nn * q)
            - _bd0(nk, nn * (1.0 - q))
            + 0.5 * np.log(nn / (2.0 * math.pi * ks * nk))
        )
        edge = np.where(k == 0, n * np.log1p(-q), n * np.log(q))
    return np.where(mid, inner, edge)


def _kept_range(n, q, log_m):
    """``(k_lo, k_hi, dropped)`` for K ~ Bin(n, q): k_lo the largest k with ``P(K < k) <= e^{log_m}``, k_hi
    the smallest k >= max(k_lo, 1) with ``P(K > k) <= e^{log_m}``, by integer bisection on scipy's binomial
    tails (``bdtr``, ``bdtrc``); ``dropped`` is twice the sum of the two computed tails (an upper bound on
    the mass left out).  Where the allowance is below e^-700 everything is kept."""
    ni = n.astype(np.int64)
    m = np.exp(np.maximum(log_m, _KEEP_ALL))
    lo, hi = np.zeros_like(ni), ni + 1  # P(K < lo) <= m < P(K < hi)
    while np.any(hi - lo > 1):
        mid = (lo + hi) // 2
        ok = special.bdtr(np.maximum(mid - 1, 0), ni, q) <= m
        lo, hi = np.where(ok, mid, lo), np.where(ok, hi, mid)
    k_lo = np.where(log_m < _KEEP_ALL, 0, lo)
    lo, hi = np.full_like(ni, -1), ni.copy()  # P(K > lo) > m >= P(K > hi)
    while np.any(hi - lo > 1):
        mid = (lo + hi) // 2
        ok = special.bdtrc(np.maximum(mid, 0), ni, q) <= m
        lo, hi = np.where(ok, lo, mid), np.where(ok, mid, hi)
    k_hi = np.where(log_m < _KEEP_ALL, ni, np.maximum(np.maximum(hi, k_lo), 1))  # one μ_k > 0 at least
    low = np.where(k_lo > 0, special.bdtr(np.maximum(k_lo - 1, 0), ni, q), 0.0)
    high = np.where(k_hi < ni, special.bdtrc(k_hi, ni, q), 0.0)
    return k_lo, k_hi, 2.0 * (low + high)


# ------------------------------------------------------------------------------------------------------
# the mixture of a block of configurations


class _Mixture:
    """The retained components of P for configurations (σ, q, T) with their cut ``[k_lo, k_hi]``, one row
    each, padded to a common width with weight 0: ``lw`` log weights, ``mu`` means, ``c = lw − μ²/2`` (the
    lines whose logsumexp is llr), ``log_dropped`` the log of the dropped mass, ``log_w0 = T log(1−q)``."""

    def __init__(self, sigma, q, steps, k_lo, k_hi, dropped):
        width = int(np.max(k_hi - k_lo)) + 1
        k = k_lo[:, None] + np.arange(width)[None, :]
        keep = k <= k_hi[:, None]
        kf = np.where(keep, k, k_lo[:, None]).astype(float)
        self.mu = np.where(keep, kf / (sigma * np.sqrt(steps))[:, None], 0.0)
        self.lw = np.where(keep, _log_binom_pmf(kf, steps[:, None], q[:, None]), -np.inf)
        self.c = self.lw - 0.5 * self.mu * self.mu
        self.mu_max = np.max(self.mu, axis=1)
        lw_abs = np.where(keep, np.abs(self.lw), 0.0)
        inner = (kf > 0) & (kf < steps[:, None])
        ulps = (
            _WEIGHT_ULPS * (1.0 + np.log1p(steps))[:, None]
            + 8.0 * lw_abs
            + 2.0 * np.abs(kf - (steps * q)[:, None])
        )
        #: the weights' relative error: P <= (1 + η) P̃ and P >= (1 − η) P̃ for the computed mixture P̃
        self.eta = np.max(np.where(inner, ulps, 4.0 * lw_abs), axis=1) * _U
        self.dz = 2.0 * _U * (lw_abs + 0.5 * self.mu * self.mu)  # rounding of c_k
        with np.errstate(divide="ignore"):
            self.log_w0 = steps * np.log1p(-q)
            self.log_dropped = np.log(dropped)
        self.log_count = np.log(np.sum(keep, axis=1))

    def llr(self, x, r):
        """``(llr, error)`` for rows ``r``: ``llr(x) = log (dP_K/dQ)(x) = m + log1p(Σ_{k≠top} e^{z_k − m})``
        over the lines ``z_k = c_k + μ_k x``, their maximum m = z_top taken out exactly (so that llr keeps its
        digits where the k = 0 line dominates, near log w_0 ≈ 0), and twice a first-order bound on its error
        (as the llr of the computed weights): ``Σ_k p_k dz_k`` (p_k = e^{z_k − llr}, dz_k the rounding of
        z_k) plus an ulp per unit of each ``|z_k − m|``, of the sum and of the result."""
        x2 = x[:, None]
        z = self.c[r] + self.mu[r] * x2
        top = np.argmax(z, axis=1)[:, None]
        m = np.take_along_axis(z, top, axis=1)
        with np.errstate(invalid="ignore", over="ignore"):
            d = z - m
            e = np.exp(d)
            np.put_along_axis(e, top, 0.0, axis=1)
            rest = np.sum(e, axis=1)
            llr = m[:, 0] + np.log1p(rest)
            dz = self.dz[r] + 4.0 * _U * self.mu[r] * np.abs(x2)
            dz_top = np.take_along_axis(dz, top, axis=1)[:, 0]
            spread = np.sum(np.where(e > 0, e * (dz + _U * (np.abs(d) + 3.0)), 0.0), axis=1)
        err = 2.0 * ((dz_top + spread) / (1.0 + rest) + _U * (np.abs(llr) + rest))
        return llr, err

    def at_threshold(self, x, r, direction, dropped=True):
        """``(log δ raised, ε raised)`` of one direction when x is its threshold, the ε at which the bound on
        δ holds.  With ``ε_k = μ_k x − μ_k²/2`` (component k's own log ratio at x) and llr = log Σ w_k e^{ε_k}:

            P‖Q, ε = llr(x):   δ = Σ_k w_k (Φ̄(x − μ_k) − e^{ε_k} Φ̄(x)),
            Q‖P, ε = −llr(x):  δ = e^{−llr} Σ_k w_k (e^{ε_k} Φ(x) − Φ(x − μ_k)),

        each bracket the Gaussian mechanism's divergence at its own threshold x, so >= 0 (0 for k = 0): the
        sums have no cancellation between components (only each Gaussian's own, as in Balle & Wang 2018,
        Thm 8).  Each bracket is raised by the rounding of its two log terms times its cancellation; the sum
        by the weights' error η (P <= (1 + η) P̃, P >= (1 − η) P̃: δ times 1 + 2η, ε shifted by 2η), llr's error
        and, for P‖Q, the dropped mass (``dropped=False``: without it)."""
        llr, err = self.llr(x, r)
        mu, x2 = self.mu[r], x[:, None]
        ek = mu * x2 - 0.5 * mu * mu
        if direction == "pq":
            la, lb = special.log_ndtr(mu - x2), ek + special.log_ndtr(-x)[:, None]
        else:
            la, lb = ek + special.log_ndtr(x)[:, None], special.log_ndtr(x2 - mu)
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            rel = np.expm1(16.0 * _U * (1.0 + np.abs(la) + np.abs(lb) + mu * np.abs(x2)))
            lh = log_sub(la, np.minimum(lb, la))
            up = np.logaddexp(lh, np.log(2.0 * rel) + np.logaddexp(la, lb))
            up = np.where(mu > 0, np.minimum(up, la + np.log1p(2.0 * rel)), -np.inf)
        eta = self.eta[r]
        ld = logsumexp(self.lw[r] + up, axis=1) + np.log1p(2.0 * eta) + 8.0 * _U * self.log_count[r]
        if direction == "pq":
            extra = self.log_dropped[r] if dropped else np.full(x.shape, -np.inf)
            return np.logaddexp(ld, extra), llr + err + 2.0 * eta
        return ld - llr + err, -llr + err + 2.0 * eta


def _llr_bracket(mix, r, t, slack):
    """A bracket ``(lo, hi, ok)`` on the x with ``llr(x) = t`` (rows ``r``), where llr is counted with
    ``slack`` times its error bound (``g = llr + slack · error − t``): ``g(lo) <= 0 < g(hi)`` and the width is
    at most :data:`_XTOL` + 4e-16 |x|.  So with slack = +1 the true llr(lo) is at most t, with slack = −1 the
    true llr(hi) is above t.  The upper end starts at the smallest root of the lines ``c_k + μ_k x`` (llr lies
    above each of them), moved up if the slack asks; the lower end steps down from it, doubling the step,
    until g <= 0; then bisection (llr is increasing; the error bound only bends it by ulps).  ``ok`` is
    False where 64 doublings found no end."""

    def g(x, i):
        llr, err = mix.llr(x, r[i])
        return llr + slack * err - t[i]

    every = np.arange(r.size)
    with np.errstate(divide="ignore", invalid="ignore"):
        roots = np.where(mix.mu[r] > 0, (t[:, None] - mix.c[r]) / mix.mu[r], np.inf)
    hi = np.min(roots, axis=1)
    lo = hi - 1.0
    ok = np.zeros(r.size, dtype=bool)
    step = np.ones(r.size)
    for _ in range(64):
        bad = ~(g(hi, every) > 0)
        if not np.any(bad):
            break
        hi, step = np.where(bad, hi + step, hi), np.where(bad, 2.0 * step, step)
    for _ in range(64):
        ok = g(lo, every) <= 0
        if np.all(ok):
            break
        lo = np.where(ok, lo, hi - 2.0 * (hi - lo))
    ok &= g(hi, every) > 0
    lo, hi = bisect_active(g, lo, hi, xtol=_XTOL)
    return lo, hi, ok


# ------------------------------------------------------------------------------------------------------
# rows: configurations × their own ε or δ, solved block by block


def _by_block(sigma, q, steps, log_m, solve, n_out):
    """Run ``solve(mix, r, rows) -> tuple of n_out arrays`` over blocks of rows sharing mixtures, and gather
    the outputs (flat arrays, one value per row).  The rows' distinct configurations get one mixture row each;
    blocks keep rows × width near :data:`_BLOCK`."""
    key = np.stack([sigma, q, steps, log_m], axis=1)
    uniq, inv = np.unique(key, axis=0, return_inverse=True)
    inv = inv.reshape(-1)
    k_lo, k_hi, dropped = _kept_range(uniq[:, 2], uniq[:, 1], uniq[:, 3])
    width = (k_hi - k_lo + 1).astype(np.int64)
    out = [np.empty(sigma.size) for _ in range(n_out)]
    for cfgs in _blocks(width):
        mix = _Mixture(uniq[cfgs, 0], uniq[cfgs, 1], uniq[cfgs, 2], k_lo[cfgs], k_hi[cfgs], dropped[cfgs])
        local = np.full(uniq.shape[0], -1)
        local[cfgs] = np.arange(cfgs.size)
        rows = np.nonzero(local[inv] >= 0)[0]
        step = max(1, _BLOCK // int(np.max(width[cfgs])))
        for s in range(0, rows.size, step):
            chunk = rows[s : s + step]
            for o, v in zip(out, solve(mix, local[inv[chunk]], chunk)):
                o[chunk] = v
    return out


def _blocks(width):
    """Index arrays of configurations, sorted by width and grouped so that count × width stays within
    :data:`_BLOCK` (a wider one alone)."""
    order = np.argsort(width, kind="stable")
    start = 0
    while start < order.size:
        stop = start + 1
        while stop < order.size and (stop + 1 - start) * width[order[stop]] <= _BLOCK:
            stop += 1
        yield order[start:stop]
        start = stop


# ------------------------------------------------------------------------------------------------------
# δ(ε)


def _delta_solve(eps):
    def solve(mix, r, rows):
        inf = np.isposinf(eps[rows])
        e = np.where(inf, 0.0, eps[rows])
        with np.errstate(invalid="ignore"):
            none = e >= -mix.log_w0[r]  # P >= w_0 Q: δ_{Q‖P}(ε) = 0 for ε >= −log w_0
        # P‖Q at a threshold whose true llr is at most ε (δ is decreasing in ε): an upper bound on δ(ε)
        lo, _, ok = _llr_bracket(mix, r, e - 2.0 * mix.eta[r], 1.0)
        with np.errstate(divide="ignore"):  # no such threshold: δ <= TV <= P(K >= 1) = 1 − w_0
            tv = np.log(-np.expm1(mix.log_w0[r])) + 4.0 * _U
        kept = np.where(ok, mix.at_threshold(lo, r, "pq", dropped=False)[0], tv)  # δ_{P_K‖Q}
        pq = np.logaddexp(kept, mix.log_dropped[r])
        # Q‖P at a threshold whose true llr is above −ε (its ε' = −llr below ε)
        _, hi, ok = _llr_bracket(mix, r, np.where(none, 0.0, 2.0 * mix.eta[r] - e), -1.0)
        qp, _ = mix.at_threshold(hi, r, "qp")
        qp = np.where(none | inf, -np.inf, np.where(ok, qp, 0.0))
        return np.where(inf, -np.inf, pq), qp, np.where(inf, -np.inf, kept), mix.log_dropped[r]

    return solve


def last_iterate_delta(eps, sigma, q, steps, *, directions=False):
    """δ(ε) of the last-iterate heuristic (Steinke et al. 2025, arXiv:2410.06186, Thm 1: exact for linear
    losses only, NOT an upper bound on DP-SGD's privacy in general): ``max(δ_{P‖Q}(ε), δ_{Q‖P}(ε))`` for
    ``P = Σ_k Bin(k; T, q) N(k/(σ√T), 1)`` and ``Q = N(0, 1)``, rounded up.

    For each ε the thresholds ``x*`` (``llr(x*) = ε``) and ``x**`` (``llr(x**) = −ε``) of the increasing
    log-likelihood ratio are bracketed between the smallest root of its lines ``log w_k + μ_k x − μ_k²/2``
    and a point found below it by doubling steps, then found by bisection to 1e-14 (:func:`_llr_bracket`).
    The bracket's end whose true llr is surely on the safe side (counting llr's rounding error) is taken,
    x* from below and x** from above: there the closed form is the exact δ at an ε' <= ε, which bounds
    δ(ε) since δ decreases in ε.  The binomial is cut where each tail is below e^-80, then (where δ is
    smaller) below 2^-42 δ, or 2^-42 e^-ε δ where δ_{Q‖P} decides, δ estimated from the kept components;
    the dropped mass is added to δ_{P‖Q} (module doc).  The rounding margin grows with |log δ| and with each
    Gaussian term's cancellation (small μ_k = k/(σ√T)): against mpmath (40 random configurations,
    T <= 300), within a relative 5e-10 of the heuristic's exact δ for δ >= 1e-20, 1.3e-8 at 1e-246; below
    about 1e-300 the bound is the dropped mass (e^-700) or the smallest subnormal.  ``eps``, ``sigma``,
    ``q`` and ``steps`` broadcast; ε = inf gives 0.  ``directions=True`` returns ``(δ_{P‖Q}, δ_{Q‖P})``
    instead of their maximum (P‖Q: the canary's gradients present, tested against their absence; each
    rounded up).
    """
    eps = require(eps, lambda e: e >= 0, "--epsilon: must be a number >= 0")
    sigma, q, steps = _args(sigma, q, steps)
    eps, sigma, q, steps = np.broadcast_arrays(eps, sigma, q, steps)
    shape = eps.shape
    e, s, p, t = (np.ascontiguousarray(a, dtype=float).reshape(-1) for a in (eps, sigma, q, steps))
    log_m = np.full(e.size, _FIRST_LOG_TAIL)
    both = np.full((2, e.size), np.nan)
    todo = np.arange(e.size)
    for _ in range(4):  # the cut for δ > 1e-300 is final at the second pass (the first one estimates δ)
        pq, qp, kept, log_dropped = _by_block(
            s[todo], p[todo], t[todo], log_m[todo], _delta_solve(e[todo]), 4
        )
        both[0, todo], both[1, todo] = pq, qp
        estimate = np.maximum(kept, qp)  # δ of the kept components: within a tiny fraction of the uncut one
        scale = np.where(qp >= kept, np.minimum(e[todo], 700.0), 0.0)  # e^ε × dropped mass where Q‖P decides
        loose = (log_dropped + scale > estimate - 32.0 * _LOG2) & (log_m[todo] > _FLOOR)
        if not np.any(loose):
            break
        target = estimate[loose] - _TAIL_BITS * _LOG2 - scale[loose]
        log_m[todo[loose]] = np.maximum(np.minimum(log_m[todo[loose]] - 1.0, target), _FLOOR)
        todo = todo[loose]
    with np.errstate(over="ignore"):
        out = np.where(np.isneginf(both), 0.0, np.minimum(next_up(np.exp(both)), 1.0))
    out = out.reshape((2,) + shape)
    if directions:
        return (out[0][()], out[1][()]) if len(shape) == 0 else (out[0], out[1])
    out = np.maximum(out[0], out[1])
    return out[()] if out.ndim == 0 else out


# ------------------------------------------------------------------------------------------------------
# ε(δ)


def _epsilon_solve(log_delta, delta):
    def solve(mix, r, rows):
        ldt = log_delta[rows]
        n = rows.size
        every = np.arange(n)
        x0_lo = _llr_bracket(mix, r, -2.0 * mix.eta[r], 1.0)[0]  # true llr(x0_lo) <= −2η: P's ε' <= 0
        x0_hi = _llr_bracket(mix, r, 2.0 * mix.eta[r], -1.0)[1]  # true llr(x0_hi) > 2η

        def f_pq(x, i):  # decreasing in x
            return mix.at_threshold(x, r[i], "pq")[0] - ldt[i]

        def f_qp(x, i):  # increasing in x
            return mix.at_threshold(x, r[i], "qp")[0] - ldt[i]

        # P‖Q: ε = llr(x) for x >= x0; the smallest x with δ <= target, its ε from the bracket's upper end
        need = f_pq(x0_lo, every) > 0  # else δ(0) <= δ(llr(x0_lo)) <= target: ε = 0
        far = mix.mu_max[r] - special.ndtri(delta[rows] / 4.0)  # P_K(X > far) <= δ/4
        far = _widen(f_pq, far, far - x0_lo, lambda v: v < 0)
        _, hi = bisect_active(f_pq, np.where(need, x0_lo, far), far, increasing=False, xtol=_XTOL)
        eps_pq = np.where(need, mix.at_threshold(hi, r, "pq")[1], 0.0)
        # Q‖P: ε = −llr(x) for x <= x0; the largest x with δ <= target, its ε from the bracket's lower end
        need = f_qp(x0_hi, every) > 0  # else δ(0) <= δ(−llr(x0_hi)) <= target: ε = 0
        near = np.minimum(special.ndtri(delta[rows] / 4.0), x0_hi - 1.0)  # Q(X < near) <= δ/4
        near = _widen(f_qp, near, near - x0_hi, lambda v: v <= 0)
        lo, _ = bisect_active(f_qp, near, np.where(need, x0_hi, near), increasing=True, xtol=_XTOL)
        eps_qp = np.where(need, mix.at_threshold(lo, r, "qp")[1], 0.0)
        return np.maximum(eps_pq, 0.0), np.maximum(eps_qp, 0.0), mix.log_dropped[r]

    return solve


def _widen(f, x, step, good):
    """Move x by doubling multiples of ``step`` until ``good(f(x))`` (an end of a bisection bracket)."""
    every = np.arange(x.size)
    step = np.where(step != 0, step, 1.0)
    for _ in range(60):
        bad = ~good(f(x, every))
        if not np.any(bad):
            return x
        x = np.where(bad, x + step, x)
        step = 2.0 * step
    raise UncertifiedError("last-iterate heuristic: could not bracket ε(δ)")


def last_iterate_epsilon(delta, sigma, q, steps):
    """ε(δ) of the last-iterate heuristic (Steinke et al. 2025, arXiv:2410.06186, Thm 1: exact for linear
    losses only, NOT an upper bound on DP-SGD's privacy in general): the smallest ε with both
    ``δ_{P‖Q}(ε) <= δ`` and ``δ_{Q‖P}(ε) <= δ`` for ``P = Σ_k Bin(k; T, q) N(k/(σ√T), 1)``, ``Q = N(0, 1)``.

    Each direction is solved for its threshold x instead of ε: at ``ε = llr(x)`` (P‖Q) and ``ε = −llr(x)``
    (Q‖P) the divergence is a closed form in x (module doc), monotone in x, so one bisection in x per
    direction (to 1e-14) finds the threshold whose δ (raised by its rounding error and the dropped binomial
    mass) is within the target, and ε is read from the bracket's safe end, raised by llr's rounding error and
    one ulp: rounded up.  The answer is the larger of the two.  The binomial is cut where each tail carries
    at most 2^-42 δ: that makes δ_{P‖Q} at most 2^-40 δ above the uncut one, and δ_{Q‖P} (computed with the
    kept weights, P_K <= P) at most e^ε 2^-40 δ above it; the P‖Q side decided in every configuration tried
    (3000 random ones, T up to 3000), so ε is within a relative ~1e-11 of the heuristic's exact ε there.
    ``delta``, ``sigma``, ``q`` and ``steps`` broadcast (arrays of configurations).
    """
    delta = require(delta, lambda d: (d > 0) & (d < 1), "--delta: must lie in (0, 1)")
    sigma, q, steps = _args(sigma, q, steps)
    delta, sigma, q, steps = np.broadcast_arrays(delta, sigma, q, steps)
    shape = delta.shape
    d, s, p, t = (np.ascontiguousarray(a, dtype=float).reshape(-1) for a in (delta, sigma, q, steps))
    ld = np.log(d)
    log_m = ld - _TAIL_BITS * _LOG2
    pq, qp, _ = _by_block(s, p, t, log_m, _epsilon_solve(ld, d), 3)
    out = np.where(np.maximum(pq, qp) > 0, next_up(np.maximum(pq, qp)), 0.0).reshape(shape)
    return out[()] if out.ndim == 0 else out
