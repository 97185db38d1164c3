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
the law of S by FFT convolutions with a bound on their round-off, and returns each direction as a loss
model whose finite atoms are the grid values of the loss and whose mass at +∞ carries every neglected event:

* **spread**: the mass of X in each bin ``[x_k, x_{k+1}]`` goes to the two ends with the bin's conditional
  mean (a mean-preserving spread, convex order), then a small share is moved up (remove) or down (add) to
  cover the rounding of that mean — increasing-convex (decreasing-convex) dominance.
* **tail of X**: above ``x_max`` (event B), bounded analytically: ``P(B) <= E_Q[X; X > x_max] + (t − 1)
  Q(X > x_max)``, ``Q(B) <= t·Q(X > x_max)``; on B the loss is put at +∞ (each round's δ grows by at most
  that mass: the hockey-stick integrand is at most the likelihood ratio, resp. at most 1).
* **cut of S**: after every convolution the top of the partial sum is dropped while its P-weight
  ``(s + (t − j)·E X̂)/t`` (j summands so far; Q-weight 1 for add) stays within a budget; the dropped weight
  goes to +∞.
* **round-off**: the bin masses (Gauss–Legendre integrals of positive terms) are raised by their relative
  error bound (a larger measure only raises δ's nonnegative integrands; the excess total is scaled out and
  counted); every FFT convolution carries Higham's bound (Accuracy and Stability of Numerical Algorithms,
  2nd ed., Thm 24.2: relative 2-norm error ``log₂n·η/(1 − log₂n·η)``, η = 10u here, doubled) propagated
  through the powering in ℓ1; the total goes to +∞ as well.  Where the double-precision bound would take
  more than 5 % of the δ asked, the convolutions run in long double (u = 2⁻⁶⁴ on x86).

Every neglected piece makes δ larger, so the loss models dominate the round in both directions; the
accountant's discretisation and composition (:mod:`dpcalc.engine.pld`) then bound R rounds.
"""

from __future__ import annotations

import math
from dataclasses import replace
from functools import lru_cache
from typing import NamedTuple

import numpy as np

from dpcalc.engine._numerics import gauss_legendre
from dpcalc.engine._special import lazy_fft as sfft
from dpcalc.engine._special import lazy_special as special
from dpcalc.engine.mechanisms.gaussian_loss import gaussian_loss
from dpcalc.engine.mechanisms.loss_models import LossModel, gather_atoms
from dpcalc.errors import InputError

_U = float(np.finfo(float).eps) / 2.0
#: The unit round-off of the convolutions (x86 long double: 2⁻⁶⁴; double where long double is double).
_UL = float(np.finfo(np.longdouble).eps) / 2.0
#: Relative accuracy of the spread: grid step h = SPREAD·sd(X) (the added variance is h²/4 per term).
SPREAD = 0.02
#: Largest number of grid points of X accepted; beyond it the round is refused.
MAX_POINTS = 1 << 21
#: Largest number of grid points of the law of S = X_1 + .. + X_t (about t/h; its FFTs take time and memory
#: in proportion: 1.5e6 points take about 7 s and 350 MB); longer rounds are refused up front.
MAX_SUM_POINTS = 1.5e6
#: The grid of X is refined below the spread's step (for the mass at S = 0) up to this many points.
SOFT_POINTS = 1 << 19
#: The loss grid the atoms are gathered onto (far finer than the accountant's).
MERGE_STEP = 5e-4
#: Each round's neglected P-mass (tail of X, cut of S) is at most this (then the round-off bound); in
#: extended precision the round-off is far smaller, and so is the tail asked for.
TAIL = 1e-10
PRECISE_TAIL = 1e-12


#: 8-point Gauss–Legendre on panels of at most this width in z (the standard normal's variable).
_PANEL = 0.05
_CHUNK = 1 << 18  # panels per block (bounds the temporary memory)


def _bin_integrals(z, shift: float):
    """``∫ φ(u − shift) du`` over each bin ``[z_i, z_{i+1}]`` (``z_0 = −∞``) and a bound on its relative
    error.  The first bin is Φ(z_1 − shift); the others by composite 8-point Gauss–Legendre on panels of
    width <= 0.05: a sum of positive terms (rounding <= (terms + 2) ulps; the quadrature error, below
    w^16·|He_16|/(16!·17·10^5) relative, is far smaller), so no bin loses digits to cancellation, however small."""
    k = z.size - 1
    out = np.empty(k)
    rel = np.empty(k)
    l0 = float(special.log_ndtr(z[1] - shift))
    out[0] = math.exp(l0)
    rel[0] = 4.0 * _U * (2.0 + abs(l0))  # exp of a log with a few ulps of error
    za, zb = z[1:-1], z[2:]
    n = np.maximum(1, np.ceil((zb - za) / _PANEL)).astype(np.int64)
    rel[1:] = 4.0 * _U * (8.0 * n + 16.0)
    bins = np.repeat(np.arange(za.size), n)
    first = np.repeat(np.cumsum(n) - n, n)
    sums = np.empty(bins.size)
    gx, gw = gauss_legendre(8)
    for c0 in range(0, bins.size, _CHUNK):
        b = bins[c0 : c0 + _CHUNK]
        j = np.arange(c0, c0 + b.size) - first[c0 : c0 + _CHUNK]
        w = (zb[b] - za[b]) / n[b]
        nodes = (za[b] + w * j)[:, None] + (0.5 * w)[:, None] * (gx + 1.0)[None, :] - shift
        vals = np.exp(-0.5 * nodes * nodes) * (gw[None, :] * (0.5 * w / math.sqrt(2.0 * math.pi))[:, None])
        sums[c0 : c0 + b.size] = vals.sum(axis=1)
    out[1:] = np.add.reduceat(sums, np.cumsum(n) - n) if za.size else out[1:]
    return out, rel


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
    if t / h > MAX_SUM_POINTS:  # the law of S (mean t) lives on about t/h points: bounded work up front
        raise InputError(
            f"--method pld: random allocation in rounds of {t} steps at noise multiplier {1.0 / mu:g} needs "
            f"the law of a sum on about {t / h:.2g} points (at most {MAX_SUM_POINTS:.2g}: rounds of at most about "
            f"{math.floor(MAX_SUM_POINTS * h):d} steps at this noise); use --method rdp"
        )
    if k > MAX_POINTS:
        raise InputError(
            f"--method pld: random allocation at noise multiplier {1.0 / mu:g} needs a grid of {k:.2g} "
            "points (below about 0.7 the likelihood ratio's lognormal tail is too heavy); use --method rdp"
        )
    return h, k


class _Bins(NamedTuple):
    """The bins of X on ``0, h, .., K·h``: the grid, each bin's Q-mass and conditional mean with their
    relative error bounds, and the analytic tail quantities ``(Q(X > x_max), E_Q[X; X > x_max])``; shared by
    both directions' spreads."""

    x: np.ndarray
    mass: np.ndarray
    rm: np.ndarray
    mean: np.ndarray
    rp: np.ndarray
    q_tail: float
    m_tail: float


def _bins(mu: float, h: float, k: int) -> _Bins:
    x = np.arange(k + 1) * h
    with np.errstate(divide="ignore"):
        lx = np.log(x)
    z = (lx + 0.5 * mu * mu) / mu  # Q(X <= x) = Φ(z); E_Q[X; X <= x] = Φ(z − μ)
    mass, rm = _bin_integrals(z, 0.0)
    pmean, rp = _bin_integrals(z, mu)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = np.where(mass > 0, pmean / mass, x[:-1] + 0.5 * h)
    mean = np.clip(mean, x[:-1], x[1:])
    q_tail = math.exp(special.log_ndtr(-float(z[-1]))) * (1.0 + 1e-12)
    m_tail = math.exp(special.log_ndtr(-float(z[-1] - mu))) * (1.0 + 1e-12)
    return _Bins(x, mass, rm, mean, rp, q_tail, m_tail)


def _spread_law(b: _Bins, h: float, up: bool) -> np.ndarray:
    """The discrete law of X on the grid (Q-masses of the body X <= K·h, each raised by its rounding bound:
    a larger measure only raises the nonnegative integrands of δ): each bin's mass split between its ends
    with the bin's mean, the share sent up raised (remove) or lowered (add) by that mean's rounding bound."""
    x = b.x
    share = (b.mean - x[:-1]) / h  # fraction sent to the upper end (mean-preserving)
    cover = (b.rm + b.rp + 4.0 * _U) * x[1:] / h + 8.0 * _U * (
        x[1:] / h + 1.0
    )  # the rounding of that fraction
    share = np.clip(share + cover if up else share - cover, 0.0, 1.0)
    mass = b.mass * (1.0 + b.rm + 8.0 * _U)  # covers the masses' error and the rounding of the split below
    p = np.zeros(x.size)
    p[:-1] += mass * (1.0 - share)
    p[1:] += mass * share
    return p


def _fft_err(a, b, c, n_fft: int, u: float) -> float:
    """ℓ1 bound on the round-off of ``c = a * b`` computed by FFT with unit round-off u (Higham 2002,
    Thm 24.2, doubled)."""
    lg = math.log2(n_fft)
    kappa = 2.0 * lg * 10.0 * u / (1.0 - lg * 10.0 * u)
    n2 = lambda v: float(np.sqrt(np.sum(v * v)))  # noqa: E731
    n1 = lambda v: float(np.sum(np.abs(v)))  # noqa: E731
    l2 = 2.0 * (kappa * (n2(a) * n1(b) + n1(a) * n2(b)) + (kappa + 4.0 * u) * n2(c))
    return math.sqrt(c.size) * float(l2)


def _conv(a, b, precise: bool = False):
    """``a * b`` by FFT (negative round-off clipped) and the ℓ1 bound on its round-off; ``precise``: in
    extended precision (long double), 4–5 times slower, about 2000 times less round-off on x86."""
    dtype = np.longdouble if precise else float
    a = np.asarray(a, dtype=dtype)
    b = a if b is a else np.asarray(b, dtype=dtype)
    n = a.size + b.size - 1
    nf = sfft.next_fast_len(n, real=True)
    fa = sfft.rfft(a, nf)
    c = sfft.irfft(fa * (fa if b is a else sfft.rfft(b, nf)), nf)[:n]
    return np.maximum(c, 0.0), _fft_err(a, b, c, nf, _UL if precise else _U)


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


def _power(p, t: int, h: float, mean_x: float, weighted: bool, budget: float, t_all: int, precise: bool):
    """Law of S = X̂_1 + .. + X̂_t (Q-masses on ``0, h, 2h, ..``), the ℓ1 bound on its round-off, and the
    weight dropped by the cuts (P-weight when ``weighted`` (remove), Q-mass otherwise), by powering."""
    nodes = 2 * max(1, int(t).bit_length())
    per_node = budget / nodes
    cut_at = _cut_points(p, h, t_all, mean_x, weighted, per_node)
    dropped = 0.0

    def conv(a, ea, ja, b, eb, jb):
        nonlocal dropped
        j = ja + jb
        c, f = _conv(a, b, precise)
        e = float(np.sum(a)) * eb + float(np.sum(b)) * ea + ea * eb + f
        keep = int(math.ceil(cut_at(j) / h)) + 1
        if keep < c.size:
            dropped += per_node
            c = c[:keep]
        return c, e, j

    res, eres, jres = None, 0.0, 0
    base, ebase, jbase = p, 0.0, 1
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
def round_loss_models(
    sigma: float, t: int, tail: float = TAIL, precise: bool = False
) -> tuple[LossModel, LossModel, float]:
    """``(remove, add, extra)`` for one 1-of-t allocation round at noise multiplier σ (module doc): loss
    models with finite atoms at the grid values of ``±log(S/t)`` and their unaccounted mass at +∞, and
    ``extra``, the further mass at +∞ that bounds the neglected events and the round-off (compose it as
    :func:`~dpcalc.engine.mechanisms.loss_models.approx_dp` ``(0, extra)``, once per round).  ``precise``:
    convolutions in long double (for δ near the double round-off's floor).  ``t = 1`` is the Gaussian
    mechanism (its exact model, extra 0).  The models are marked ``dominates_only`` (t = 1 too, as every
    round's): a bracket computed from them has no lower end."""
    sigma, t = float(sigma), int(t)
    if not (sigma > 0 and math.isfinite(sigma)):
        raise InputError(f"--noise-multiplier: must be a finite number > 0, got {sigma:g}")
    if t < 1:
        raise InputError(f"allocation round: t must be >= 1, got {t}")
    if t == 1:
        g = replace(gaussian_loss(sigma), dominates_only=True)
        return g, g, 0.0
    mu = 1.0 / sigma
    h, k = _grid(mu, t, tail)
    bins = _bins(mu, h, k)
    x, q_tail, m_tail = bins.x, bins.q_tail, bins.m_tail
    extras, models = [], []
    for up in (True, False):
        p = _spread_law(bins, h, up)
        mean_x = float(np.sum(p * x))
        # the sum of the other t − 1 terms; the cuts are charged with the P-weight (remove) or Q-mass (add)
        rest, err, dropped = _power(p, t - 1, h, mean_x, up, 0.5 * tail, t, precise)
        if up:  # remove: the P-law of S is the size-biased term plus the rest (E_Q[W f(S)], W = S/t)
            law, e1 = _conv(x * p * (1.0 + 4.0 * _U), rest, precise)
            err = err * float(np.sum(x * p)) * (1.0 + 4.0 * _U) + e1
            tail_mass = m_tail + (t - 1) * q_tail
        else:
            law, e1 = _conv(p, rest, precise)
            err = err + e1
            tail_mass = t * q_tail
        law = law.astype(float) * (1.0 + 4.0 * _U)  # rounded to doubles, upwards
        s = np.arange(law.size) * h
        keep = (law > 0) & (s > 0)
        loc = np.log(s[keep] / t)
        loc = loc if up else -loc
        loc = loc + 4.0 * _U * (np.abs(loc) + 1.0)  # rounding of the logarithm, towards larger losses
        mass = law[keep]
        total = float(np.sum(mass))
        scale = 0.0
        if total > 1.0:  # the raised masses: δ of the model is at most total^R times that of the scaled one,
            mass = mass * ((1.0 - 4.0 * _U) / total)  # which is within 2(total − 1) per round of it
            scale = 2.0 * (total - 1.0) + 8.0 * _U
        inf = max(1.0 - float(np.sum(mass)), 0.0)
        extras.append(tail_mass + dropped + err + scale)
        models.append(_merged(f"allocation-{'remove' if up else 'add'}(σ={sigma:g},t={t})", loc, mass, inf))
    return models[0], models[1], max(extras)


def _merged(name: str, loc, mass, inf: float) -> LossModel:
    """The atoms gathered onto the loss grid ``MERGE_STEP·ℤ`` by the accountant's own dominating split
    (connect the dots, :func:`~dpcalc.engine.mechanisms.loss_models.gather_atoms`, as
    :func:`~dpcalc.engine.pld.discretise.discretise` splits atoms): far fewer atoms, and a pair that still
    dominates (the accountant's grid is coarser, so this costs nothing it would not lose anyway)."""
    ia, ib = int(math.floor(float(loc.min()) / MERGE_STEP)), int(math.ceil(float(loc.max()) / MERGE_STEP))
    ib = max(ib, ia + 1)
    p, above, _, _ = gather_atoms(loc, mass, MERGE_STEP, ia, ib)
    nz = p > 0
    at = ((ia + np.arange(p.size)) * MERGE_STEP)[nz]
    inf_mass = min(float(min(inf, 1.0)) + above, 1.0)
    return LossModel(name, at, p[nz], None, inf_mass, float(at.min()), float(at.max()), dominates_only=True)
