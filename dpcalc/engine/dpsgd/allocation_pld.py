"""The privacy loss distribution of one random-allocation round, certified (docs/math.md §3.10).

One round: each example is used in exactly one of ``t`` steps, the step uniformly random (balls-in-bins
epochs; the blocks of k-of-t random allocation).  Feldman & Shenfeld 2025 (arXiv:2502.08202, Thm 3.1 and
Claim D.3) show that the adaptive round is a post-processing, applied to both sides, of the pair (μ = 1/σ)

    P = (1/t) Σ_i N(μ e_i, I_t)   (with the example),     Q = N(0, I_t)   (without),

so this pair's privacy profiles (both directions) bound the round's, and rounds compose as dominating
pairs (Zhu, Dong & Wang 2022, Thm 10).  With ``X_j = exp(μ y_j − μ²/2)`` (i.i.d. lognormal under Q, mean 1)
and ``S = Σ_j X_j`` the likelihood ratio is ``W = dP/dQ = S/t``, so both profiles of R rounds are
expectations over the law of S under Q alone:

    remove  δ(ε) = E_Q[(Π_r W_r − e^ε)_+],        add  δ(ε) = E_Q[(1 − e^ε Π_r W_r)_+].

The first is increasing and convex in every X_j separately, the second decreasing and convex.  This module
replaces the law of X by a discrete one on the grid ``hℤ`` that dominates it in the matching order, computes
the law of S by exact-arithmetic-bounded FFT convolution, and returns each direction as a loss model whose
finite atoms are the grid values of the loss and whose mass at +∞ carries every neglected event:

* **spread**: the mass of X in each bin ``[x_k, x_{k+1}]`` goes to the two ends with the bin's conditional
  mean (a mean-preserving spread, convex order), then a small share is moved up (remove) or down (add) to
  cover the rounding of that mean — increasing-convex (decreasing-convex) dominance.
* **tail of X**: above ``x_max`` (event B), bounded analytically: ``P(B) <= E_Q[X; X > x_max] + (t − 1)
  Q(X > x_max)``, ``Q(B) <= t·Q(X > x_max)``; on B the loss is put at +∞ (each round's δ grows by at most
  that mass: the hockey-stick integrand is at most the likelihood ratio, resp. at most 1).
* **cut of S**: after every convolution the top of the partial sum is dropped while its P-weight
  ``(s + (t − j)·E X̂)/t`` (j summands so far; Q-weight 1 for add) stays within a budget; the dropped weight
  goes to +∞.
* **round-off**: the bin masses are computed as differences of log Φ with a stated relative error; every FFT
  convolution carries Higham's bound (Accuracy and Stability of Numerical Algorithms, 2nd ed., Thm 24.2:
  relative 2-norm error ``log₂n·η/(1 − log₂n·η)``, η = 10u here, doubled) propagated through the
  powering in ℓ1; the total goes to +∞ as well.

Every neglected piece makes δ larger, so the loss models dominate the round in both directions; the
accountant's discretisation and composition (:mod:`dpcalc.engine.pld`) then bound R rounds.
"""

from __future__ import annotations

import math
from functools import lru_cache

import numpy as np
from scipy import fft as sfft
from scipy import special

from dpcalc.engine.mechanisms import gaussian
from dpcalc.engine.mechanisms.loss_models import LossModel
from dpcalc.errors import InputError

_U = float(np.finfo(float).eps) / 2.0
#: Relative accuracy of the spread: grid step h = SPREAD·sd(X) (the added variance is h²/4 per term).
SPREAD = 0.02
#: Largest number of grid points of X accepted; beyond it the round is refused.
MAX_POINTS = 1 << 21
#: The grid of X is refined below the spread's step (for the mass at S = 0) up to this many points.
SOFT_POINTS = 1 << 19
#: The loss grid the atoms are gathered onto (far finer than the accountant's).
MERGE_STEP = 5e-4
#: Each round's neglected P-mass (tail of X, cut of S) is at most this (then the round-off bound).
TAIL = 1e-10


def _log_mass(za, zb):
    """``log(Φ(zb) − Φ(za))`` for za < zb (elementwise) with a bound on its relative error: the lower
    tail's log Φ where zb <= 0, the upper tail's where not (no cancellation in either)."""
    left = zb <= 0.0
    with np.errstate(divide="ignore", invalid="ignore"):
        la = np.where(left, special.log_ndtr(za), special.log_ndtr(-zb))
        lb = np.where(left, special.log_ndtr(zb), special.log_ndtr(-za))
        gap = la - lb  # <= 0
        out = lb + np.log(-np.expm1(gap))
        # log_ndtr is accurate to a few ulps of its value: the difference loses |la|+|lb| ulps
        rel = 16.0 * _U * (1.0 + (np.abs(la) + np.abs(lb)) / np.maximum(-gap, 1e-300))
    rel = np.where(np.isfinite(la), rel, 16.0 * _U)
    return out, np.minimum(rel, 1.0)


def _grid(mu: float, t: int, tail: float):
    """``(h, K)``: the grid step of X and the number of bins below x_max = K·h."""
    sd = math.sqrt(math.expm1(mu * mu))
    z = -special.ndtri(tail / (2.0 * t))  # E_Q[X; X > x] = Φ̄(z − μ) with z = (ln x + μ²/2)/μ
    x_max = max(math.exp(mu * (z + mu) - 0.5 * mu * mu), 2.0 + 10.0 * sd)
    h = SPREAD * sd
    # S = 0 (every term in the first bin) is an infinite loss of the add direction: a finer step keeps its
    # mass below the tail where the grid allows (it matters for short rounds only; its mass is counted)
    h_zero = math.exp(mu * float(special.ndtri((0.5 * tail) ** (1.0 / t))) - 0.5 * mu * mu)
    h = min(h, max(h_zero, x_max / SOFT_POINTS))
    k = int(math.ceil(x_max / h))
    if k > MAX_POINTS:
        raise InputError(
            f"--accountant pld: random allocation at noise multiplier {1.0 / mu:g} needs a grid of {k:.2g} "
            "points (below about 0.7 the likelihood ratio's lognormal tail is too heavy); use --accountant rdp"
        )
    return h, k


def _spread_law(mu: float, h: float, k: int, up: bool):
    """The discrete law of X on ``0, h, .., K·h`` (Q-masses of the body X <= K·h), its ℓ1 error bound,
    and the analytic tail quantities ``(Q(X > x_max), E_Q[X; X > x_max])``."""
    x = np.arange(k + 1) * h
    with np.errstate(divide="ignore"):
        lx = np.log(x)
    z = (lx + 0.5 * mu * mu) / mu  # Q(X <= x) = Φ(z)
    zp = z - mu  # E_Q[X; X <= x] = Φ(z − μ)
    lm, rm = _log_mass(z[:-1], z[1:])
    lp, rp = _log_mass(zp[:-1], zp[1:])
    mass = np.exp(lm)
    with np.errstate(invalid="ignore"):
        mean = np.where(mass > 0, np.exp(lp - lm), x[:-1] + 0.5 * h)
    mean = np.clip(mean, x[:-1], x[1:])
    share = (mean - x[:-1]) / h  # fraction sent to the upper end (mean-preserving)
    cover = (rm + rp) * x[1:] / h + 8.0 * _U * (x[1:] / h + 1.0)  # the rounding of that fraction
    share = np.clip(share + cover if up else share - cover, 0.0, 1.0)
    p = np.zeros(k + 1)
    p[:-1] += mass * (1.0 - share)
    p[1:] += mass * share
    err = 2.0 * float(np.sum(rm * mass))
    err_w = 2.0 * float(np.sum(rm * mass * x[1:]))
    q_tail = math.exp(special.log_ndtr(-float(z[-1]))) * (1.0 + 1e-12)
    m_tail = math.exp(special.log_ndtr(-float(zp[-1]))) * (1.0 + 1e-12)
    return p, (err, err_w), q_tail, m_tail


def _fft_err(a, b, c, n_fft: int) -> float:
    """ℓ1 bound on the round-off of ``c = a * b`` computed by FFT (Higham 2002, Thm 24.2, doubled)."""
    lg = math.log2(n_fft)
    kappa = 2.0 * lg * 10.0 * _U / (1.0 - lg * 10.0 * _U)
    n2 = lambda v: float(np.sqrt(np.sum(v * v)))  # noqa: E731
    n1 = lambda v: float(np.sum(np.abs(v)))  # noqa: E731
    l2 = 2.0 * (kappa * (n2(a) * n1(b) + n1(a) * n2(b)) + (kappa + 4.0 * _U) * n2(c))
    return math.sqrt(c.size) * l2


def _conv(a, b):
    """``a * b`` by FFT (negative round-off clipped) and the ℓ1 bound on its round-off."""
    n = a.size + b.size - 1
    nf = sfft.next_fast_len(n, real=True)
    fa = sfft.rfft(a, nf)
    c = sfft.irfft(fa * (fa if b is a else sfft.rfft(b, nf)), nf)[:n]
    return np.maximum(c, 0.0), _fft_err(a, b, c, nf)


def _cut_points(p, h: float, t: int, mean_x: float, weighted: bool, per_node: float):
    """``c(j)``: a point above which the partial sum of j terms carries at most ``per_node`` weight, by
    Chernoff's bound on the discrete law (the untruncated sum bounds every truncated one):
    ``E[w(S_j); S_j > c] <= e^{−θc} E[w(S_j) e^{θS_j}]`` with the P-weight ``w(s) = (s + (t − j)·E X̂)/t`` or
    ``w = 1``, minimised over a grid of θ (sums of positive terms in log space)."""
    # upper bounds of the two moment functions from the masses gathered at the right ends of <= 4096 cells
    step = max(1, -(-p.size // 4096))
    cells = -(-p.size // step)
    pc = np.zeros(cells * step)
    pc[: p.size] = p
    pc = pc.reshape(cells, step).sum(axis=1)
    x = (np.arange(cells) * step + step - 1) * h
    theta = np.geomspace(1e-4, 20.0, 96)
    with np.errstate(divide="ignore"):
        lp, lx = np.log(pc), np.log(x)
    terms = lp[None, :] + theta[:, None] * x[None, :]
    lm0 = special.logsumexp(terms, axis=1) + 8.0 * _U * (1.0 + np.abs(theta) * x[-1])
    lm1 = special.logsumexp(terms + lx[None, :], axis=1) + 8.0 * _U * (1.0 + np.abs(theta) * x[-1])
    log_budget = math.log(per_node)

    def at(j: int) -> float:
        if weighted:
            a = np.log(j) + lm1 + (j - 1) * lm0
            b = math.log((t - j) * mean_x) + j * lm0 if t > j else np.full(theta.size, -np.inf)
            la = np.logaddexp(a, b) - math.log(t)
        else:
            la = j * lm0
        return float(np.min((la - log_budget) / theta))

    return at


def _power(p, err0: float, t: int, h: float, mean_x: float, weighted: bool, budget: float, t_all: int):
    """Law of S = X̂_1 + .. + X̂_t (Q-masses on ``0, h, 2h, ..``), the ℓ1 bound on its round-off, and the
    weight dropped by the cuts (P-weight when ``weighted`` (remove), Q-mass otherwise), by powering."""
    nodes = 2 * max(1, int(t).bit_length())
    per_node = budget / nodes
    cut_at = _cut_points(p, h, t_all, mean_x, weighted, per_node)
    dropped = 0.0

    def conv(a, ea, ja, b, eb, jb):
        nonlocal dropped
        j = ja + jb
        c, f = _conv(a, b)
        e = float(np.sum(a)) * eb + float(np.sum(b)) * ea + ea * eb + f
        keep = int(math.ceil(cut_at(j) / h)) + 1
        if keep < c.size:
            dropped += per_node
            c = c[:keep]
        return c, e, j

    res, eres, jres = None, 0.0, 0
    base, ebase, jbase = p, err0, 1
    m = int(t)
    while True:
        if m & 1:
            if res is None:
                res, eres, jres = base.copy(), ebase, jbase
            else:
                res, eres, jres = conv(res, eres, jres, base, ebase, jbase)
        m >>= 1
        if not m:
            break
        base, ebase, jbase = conv(base, ebase, jbase, base, ebase, jbase)
    return res, eres, dropped


@lru_cache(maxsize=64)
def round_loss_models(sigma: float, t: int, tail: float = TAIL) -> tuple[LossModel, LossModel, float]:
    """``(remove, add, extra)`` for one 1-of-t allocation round at noise multiplier σ (module doc): loss
    models with finite atoms at the grid values of ``±log(S/t)`` and their unaccounted mass at +∞, and
    ``extra``, the further mass at +∞ that bounds the neglected events and the round-off (compose it as
    :func:`~dpcalc.engine.mechanisms.loss_models.approx_dp` ``(0, extra)``, once per round).  ``t = 1`` is
    the Gaussian mechanism (its exact model, extra 0)."""
    sigma, t = float(sigma), int(t)
    if not (sigma > 0 and math.isfinite(sigma)):
        raise InputError(f"--noise-multiplier: must be a finite number > 0, got {sigma:g}")
    if t < 1:
        raise InputError(f"allocation round: t must be >= 1, got {t}")
    if t == 1:
        g = gaussian.loss_model(sigma)
        return g, g, 0.0
    mu = 1.0 / sigma
    h, k = _grid(mu, t, tail)
    x = np.arange(k + 1) * h
    extras, models = [], []
    for up in (True, False):
        p, (e0, e0_w), q_tail, m_tail = _spread_law(mu, h, k, up)
        mean_x = float(np.sum(p * x))
        # the sum of the other t − 1 terms; the cuts are charged with the P-weight (remove) or Q-mass (add)
        rest, err, dropped = _power(p, e0, t - 1, h, mean_x, weighted=up, budget=0.5 * tail, t_all=t)
        if up:  # remove: the P-law of S is the size-biased term plus the rest (E_Q[W f(S)], W = S/t)
            law, e1 = _conv(x * p, rest)
            err = err * float(np.sum(x * p)) + e1 + e0_w * float(np.sum(rest))
            tail_mass = m_tail + (t - 1) * q_tail
        else:
            law, e1 = _conv(p, rest)
            err = err + e1 + e0 * float(np.sum(rest))
            tail_mass = t * q_tail
        s = np.arange(law.size) * h
        keep = (law > 0) & (s > 0)
        loc = np.log(s[keep] / t)
        loc = loc if up else -loc
        loc = loc + 4.0 * _U * (np.abs(loc) + 1.0)  # rounding of the logarithm, towards larger losses
        mass = law[keep]
        inf = max(1.0 - float(np.sum(mass)), 0.0)
        extras.append(tail_mass + dropped + err)
        models.append(_merged(f"allocation-{'remove' if up else 'add'}(σ={sigma:g},t={t})", loc, mass, inf))
    return models[0], models[1], max(extras)


def _merged(name: str, loc, mass, inf: float) -> LossModel:
    """The atoms gathered onto the loss grid ``MERGE_STEP·ℤ`` by the accountant's own dominating split
    (connect the dots, :func:`~dpcalc.engine.pld.discretise.discretise`): far fewer atoms, and a pair that
    still dominates (the accountant's grid is coarser, so this costs nothing it would not lose anyway)."""
    from dpcalc.engine.pld.discretise import discretise

    fine = LossModel(name, loc, mass, None, min(inf, 1.0), float(loc.min()), float(loc.max()))
    ia, ib = int(math.floor(fine.loss_min / MERGE_STEP)), int(math.ceil(fine.loss_max / MERGE_STEP))
    d = discretise(fine, MERGE_STEP, ia, max(ib, ia + 1))
    nz = d.p > 0
    at = d.losses()[nz]
    return LossModel(name, at, d.p[nz], None, d.inf_mass, float(at.min()), float(at.max()))


def run_directions(sigma: float, t: int, k: int, rounds: int):
    """The two directions ``[remove, add]`` of a run of ``rounds`` rounds in which each example is in k of
    t steps (Lemma 3.2 of Feldman & Shenfeld 2025: given a uniformly random split of the t steps into k
    blocks of ⌊t/k⌋ or ⌊t/k⌋ + 1 steps, the blocks are independent 1-of-block rounds; the split is the same
    on both sides, so by joint convexity the profile is at most that of the blocks' composition), each a
    list of accountant components; the neglected mass rides along as ``approx_dp(0, extra)`` per block."""
    from dpcalc.engine.mechanisms.loss_models import approx_dp
    from dpcalc.engine.pld.grid import Component

    t, k, rounds = int(t), int(k), int(rounds)
    m, r = divmod(t, k)
    blocks = [(m, (k - r) * rounds), (m + 1, r * rounds)]
    out = [[], []]
    for size, count in blocks:
        if count == 0:
            continue
        remove, add, extra = round_loss_models(float(sigma), size)
        out[0].append(Component(remove, count))
        out[1].append(Component(add, count))
        if extra > 0:
            for d in out:
                d.append(Component(approx_dp(0.0, extra), count))
    return out
