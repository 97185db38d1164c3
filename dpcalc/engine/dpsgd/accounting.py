"""DP-SGD accounting: (q, σ, steps, δ) → ε (docs/math.md §3, §1.6).

Accountants (one entry each in :data:`ACCOUNTANTS`, all with the signature of :func:`epsilon_rdp`):

* ``rdp``: the exact per-step RDP curve of the subsampled Gaussian (:mod:`dpcalc.engine.mechanisms.sgm`; MTZ 2019 for
  Poisson sampling, WBK 2019 for sampling without replacement), times the number of steps (RDP composition,
  Mironov 2017 Prop. 1), converted to (ε, δ) and minimised over the orders (docs/math.md §1.6).
* ``abadi``: the moments-accountant closed form ε = ρT + √(4ρT·log(1/δ)), ρ = q²/((1−q)σ²) (Abadi et al.
  2016 Lemma 3's leading term, as in Asoodeh's talk "Privacy Analysis of Iterative Algorithms via
  f-divergences"; docs/math.md §3.1) — **asymptotic**, with its validity conditions reported in ``valid``.
* ``bassily``: the noise formula of Bassily–Smith–Thakurta 2014 as in Bellet's slides ("Differentially
  Private Machine Learning", Journées de Statistique 2022; docs/math.md §3.4), solved for ε — a reference
  row, valid only where it yields ε <= 1.

Neighbouring relations and sampling (docs/math.md §0): ``noise_multiplier`` is the noise standard deviation
divided by the clipping norm C.  Each sampler (:mod:`dpcalc.engine.samplers`, one table) says which
relations a theorem covers for it, and its Rényi curve of a run: Poisson sampling under add/remove-one
(sensitivity C, exact) or replace-one (:mod:`dpcalc.engine.mechanisms.sgm.replace`, docs/math.md §3.5);
fixed-size batches (sampling without replacement) under replace-one (sensitivity 2C, so the theorem sees
σ/2); truncated Poisson, balls-in-bins and random allocation (§3.7, §3.8).  A pair no theorem covers
raises :class:`InputError`.

Inverse questions live beside this module: :mod:`dpcalc.engine.dpsgd.noise_calibration` (the smallest σ
whose ε <= target) and :mod:`dpcalc.engine.dpsgd.step_budget` (the largest step count whose ε <= target).
"""

from __future__ import annotations

import math
import warnings
from typing import NamedTuple

import numpy as np

from dpcalc.engine._special import light_active
from dpcalc.engine.conversion.of_curve import CONVERSIONS, OPTIMAL_STRIDE, eps_of_curve  # noqa: F401 (re-exported)
from dpcalc.engine.dpsgd.rdp_deferred import eps_poisson_rdp
from dpcalc.engine.mechanisms.base import up
from dpcalc.engine.mechanisms.group import log_group_delta
from dpcalc.engine.orders import DEFAULT_ORDERS
from dpcalc.engine.samplers import catalogue
from dpcalc.engine.samplers.poisson import Poisson
from dpcalc.errors import DpcalcWarning, InputError


class Epsilon(NamedTuple):
    """ε with the order that attains it (nan where not applicable), whether that order is at the edge of the
    grid, and whether the bound's conditions hold (always True for ``rdp``)."""

    epsilon: np.ndarray
    alpha: np.ndarray
    at_edge: np.ndarray
    valid: np.ndarray


def check_whole(x, name: str, lo: float = 0.0) -> None:
    """:class:`InputError` naming ``name`` unless every value of ``x`` is a whole number >= ``lo`` (nan and
    +inf pass: they propagate as "no value" and an infinite ε)."""
    x = np.asarray(x, dtype=float)
    bad = (x < lo) | (np.isfinite(x) & (x != np.floor(x)))
    if np.any(bad):
        raise InputError(f"{name}: must be a whole number >= {lo:g}, got {float(x[bad].flat[0])!r}")


# ------------------------------------------------------------------------------------------------------
# settings


def check_setting(sampling: str, neighbors: str, accountant: str | None = "rdp"):
    """Refuse a (sampling, neighbouring relation) pair that no implemented theorem covers (a sampler of
    :mod:`dpcalc.engine.samplers` that ``accountant`` answers: by default one with a Rényi curve; None: any);
    returns the sampler."""
    sampler = catalogue.sampler(sampling, accountant)
    sampler.check_relation(neighbors)
    return sampler


def sensitivity_factor(neighbors: str) -> float:
    """ℓ₂ sensitivity of the clipped-gradient sum in units of the clipping norm (docs/math.md §0)."""
    return 2.0 if neighbors == "replace-one" else 1.0


def rdp_per_step(
    q,
    sigma,
    alphas=DEFAULT_ORDERS,
    *,
    sampling="poisson",
    neighbors="add-remove",
    dataset_size=None,
    max_batch_size=None,
):
    """Per-step RDP curve of DP-SGD, shape ``broadcast(q, sigma).shape + (len(alphas),)``: the sampler's
    (:meth:`dpcalc.engine.samplers.base.Sampler.rdp_step`; Poisson: exact, MTZ 2019, docs/math.md §3.2;
    fixed-size: the WBK 2019 bound at σ/2, §3.3; Poisson/replace-one: the weak-triangle bound, §3.5;
    truncated Poisson with ``dataset_size`` N and ``max_batch_size`` B broadcast with q: the revealed
    mixture, §3.7).  The allocation samplers have a curve per round, not per step.
    """
    sampler = check_setting(sampling, neighbors)
    return sampler.rdp_step(q, sigma, alphas, neighbors, dataset_size, max_batch_size)


# ------------------------------------------------------------------------------------------------------
# accountants


def _bcast(*xs):
    return np.broadcast_arrays(*(np.asarray(x, dtype=float) for x in xs))


def rdp_total(
    q,
    sigma,
    steps,
    alphas=DEFAULT_ORDERS,
    *,
    sampling="poisson",
    neighbors="add-remove",
    dataset_size=None,
    max_batch_size=None,
):
    """The Rényi DP of a whole DP-SGD run, shape ``broadcast(q, σ, steps).shape + (len(alphas),)``: the
    sampler's curve of a run (:meth:`dpcalc.engine.samplers.base.Sampler.rdp_run`: steps × the per-step
    curve of :func:`rdp_per_step`, or rounds × the per-round bound of random allocation, docs/math.md §3.8;
    ``dataset_size`` and ``max_batch_size`` broadcast with the rows).  The curve the rdp accountant converts."""
    q, sigma, steps = _bcast(q, sigma, steps)
    alphas = np.asarray(alphas, dtype=float)
    sampler = check_setting(sampling, neighbors)
    return sampler.rdp_run(q, sigma, steps, alphas, neighbors, dataset_size, max_batch_size)


_ERF = np.frompyfunc(math.erf, 1, 1)


def tv_lower(q, sigma) -> np.ndarray:
    """A lower bound on the total variation distance (δ at ε = 0) of the worst neighbouring pair of any run
    of the Poisson-subsampled Gaussian at rate ``q`` and noise multiplier ``sigma``, under add/remove or
    replace-one: its first step alone is a post-processing of the run, and the pair (1 − q)N(0, σ²) + qN(1, σ²)
    against N(0, σ²) (or the two mixtures with N(0, σ²) and N(1, σ²), for replace-one: gradients 1 apart)
    has total variation q·TV(N(1, σ²), N(0, σ²)) = q·erf(1/(2√2·σ)) (Balle & Wang 2018, Thm 8 at ε = 0).
    Rounded down (math.erf within an ulp, two products: 8 ulps off).  Arrays broadcast; no scipy."""
    q = np.asarray(q, dtype=float)
    sigma = np.asarray(sigma, dtype=float)
    with np.errstate(divide="ignore"):
        x = 1.0 / (2.0 * math.sqrt(2.0) * sigma)
    erf = np.asarray(_ERF(x), dtype=float)
    return np.maximum(q * erf * (1.0 - 8.0 * float(np.finfo(float).eps)), 0.0)


def epsilon_rdp(
    q,
    sigma,
    steps,
    delta,
    *,
    sampling="poisson",
    neighbors="add-remove",
    conversion="optimal",
    dataset_size=None,
    max_batch_size=None,
    orders=DEFAULT_ORDERS,
    warn=True,
) -> Epsilon:
    """ε of ``steps`` DP-SGD steps by RDP accounting (docs/math.md §3.2/§3.3, §2.4 composition, §1 conversion).

    All of q, sigma, steps, delta broadcast; the RDP curve is computed once per distinct (q, σ).
    Warns (DpcalcWarning) where the best order is the first or last of ``orders``.
    """
    q, sigma, steps, delta = _bcast(q, sigma, steps, delta)
    orders = np.asarray(orders, dtype=float)
    sampler = check_setting(sampling, neighbors)
    if isinstance(sampler, Poisson) and neighbors == "add-remove" and not light_active():
        # the same answer, with the costly lone fractional orders computed only where they can matter
        b = eps_poisson_rdp(q, sigma, steps, delta, orders, conversion)
    else:
        total = sampler.rdp_run(q, sigma, steps, orders, neighbors, dataset_size, max_batch_size)
        b = eps_of_curve(orders, total, delta, conversion)
    b = b._replace(at_edge=b.at_edge & (b.value > 0))  # ε = 0 cannot improve
    if warn and np.any(b.at_edge):
        lo = np.any(b.at_edge & (b.index == 0))
        where = "lowest" if lo else "highest"
        warnings.warn(
            f"the best Rényi order is the {where} of the grid ({orders.min():g}..{orders.max():g}): "
            "a wider grid of orders could give a smaller ε",
            DpcalcWarning,
            stacklevel=2,
        )
    return Epsilon(b.value, b.alpha, b.at_edge, np.ones(b.value.shape, dtype=bool))


def abadi_rho(q, sigma):
    """ρ = q²/((1−q)σ²): the per-step RDP slope of Abadi et al. 2016 Lemma 3's leading term (§3.1)."""
    q, sigma = _bcast(q, sigma)
    with np.errstate(divide="ignore", over="ignore", invalid="ignore"):
        return np.where(q >= 1, np.inf, q * q / ((1.0 - q) * sigma * sigma))


def epsilon_abadi(q, sigma, steps, delta, *, sampling="poisson", neighbors="add-remove", **_) -> Epsilon:
    """Abadi et al. 2016 moments accountant in closed form, as in Asoodeh's talk "Privacy Analysis of
    Iterative Algorithms via f-divergences" (docs/math.md §3.1):
    ``ε = ρT + √(4ρT·log(1/δ))`` at ``α* = 1 + √(log(1/δ)/(ρT))`` — the classic conversion of the linear
    curve (α, αρT).  **Asymptotic**: ``valid`` is σ >= 1, q < 1/(16σ) and α* − 1 <= σ²·log(1/(qσ))
    (Lemma 3's conditions on λ = α − 1); outside them it is not a bound.  Poisson sampling, add/remove only.
    """
    if not applies("abadi", sampling, neighbors):
        raise InputError(
            "--method abadi: the moments accountant (Abadi et al. 2016) is for Poisson sampling with "
            "add/remove-one neighbours only"
        )
    q, sigma, steps, delta = _bcast(q, sigma, steps, delta)
    rho_t = abadi_rho(q, sigma) * steps
    with np.errstate(divide="ignore"):
        ld = -np.log(delta)  # δ = 0: ε = ∞
    with np.errstate(divide="ignore", over="ignore", invalid="ignore"):
        eps = rho_t + np.sqrt(4.0 * rho_t * ld)
        alpha = 1.0 + np.sqrt(ld / rho_t)
        lam_max = sigma * sigma * np.log(1.0 / (q * sigma))
        valid = (sigma >= 1.0) & (q < 1.0 / (16.0 * sigma)) & (alpha - 1.0 <= lam_max)
    eps = np.nextafter(eps, np.inf)
    return Epsilon(eps, alpha, np.zeros(eps.shape, dtype=bool), valid)


def epsilon_bassily(
    q, sigma, steps, delta, *, sampling="fixed-size", neighbors="replace-one", dataset_size=None, **_
) -> Epsilon:
    """The Bassily–Smith–Thakurta 2014 noise formula as in Bellet's 2022 slides ("Differentially
    Private Machine Learning", Journées de Statistique 2022; docs/math.md §3.4),
    solved for ε: the slide adds N(0, s²) to the averaged gradient of a batch of m = qn with
    ``s = 16L·√(T·ln(2/δ)·ln(1.25T/(δn)))/(nε)``; with the clipping norm C = L the noise multiplier is
    σ = m·s/L, so ``ε = 16q·√(T·ln(2/δ)·ln(1.25T/(δn)))/σ``.  Its theorem needs ε <= 1 (and 1.25T > δn):
    ``valid`` says where.  A reference row; the constant is as on the slide, unverified (§3.4).
    Fixed-size batches, replace-one neighbours (the slide's Δ = 2L/m).
    """
    if not applies("bassily", sampling, neighbors):
        raise InputError(
            "--method bassily: the Bassily-Smith-Thakurta analysis is for fixed-size batches with "
            "replace-one neighbours (use --sampling fixed-size --neighbors replace-one)"
        )
    if dataset_size is None:
        raise InputError("--dataset-size: needed by the bassily reference (its formula involves n)")
    q, sigma, steps, delta, n = _bcast(q, sigma, steps, delta, dataset_size)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        inner = 1.25 * steps / (delta * n)
        root = np.sqrt(steps * np.log(2.0 / delta) * np.log(inner))
        eps = 16.0 * q * root / sigma
        valid = (inner > 1.0) & (eps <= 1.0)
    eps = np.where(inner > 1.0, np.nextafter(eps, np.inf), np.nan)
    return Epsilon(eps, np.full(eps.shape, np.nan), np.zeros(eps.shape, dtype=bool), valid)


#: The δ' the (ε, δ) group route tries: δ/K times 10^(−j/4), j = 0..; 60 decades down (at least 1e-300).
GROUP_DELTA_STEPS = 241


def epsilon_dp_group(
    q,
    sigma,
    steps,
    delta,
    *,
    group_size,
    sampling="poisson",
    neighbors="add-remove",
    conversion="optimal",
    dataset_size=None,
    max_batch_size=None,
    orders=DEFAULT_ORDERS,
    warn=True,
) -> Epsilon:
    """ε for a person with ``group_size`` K examples by the (ε, δ) group conversion (Vadhan 2017, "The
    complexity of differential privacy", Lemma 2.2: (ε', δ')-DP gives (Kε', K·e^((K−1)ε')·δ')-DP for K
    examples) of the example-level rdp bound: the smallest K·ε'(δ') (rounded up) over the δ' of
    :data:`GROUP_DELTA_STEPS` with K·e^((K−1)ε')·δ' <= δ, where ε'(δ') is :func:`epsilon_rdp`'s ε at δ'.
    Every δ' that passes the test certifies its K·ε', so the minimum over any set of them is a bound; inf
    where none passes.  The comparison people use today (docs/math.md §3.11), not a tight bound."""
    k = int(group_size)
    if k == 1:  # (ε, δ) itself
        kw = dict(dataset_size=dataset_size, max_batch_size=max_batch_size, orders=orders, warn=warn)
        return epsilon_rdp(
            q, sigma, steps, delta, sampling=sampling, neighbors=neighbors, conversion=conversion, **kw
        )
    q, sigma, steps, delta = _bcast(q, sigma, steps, delta)
    orders = np.asarray(orders, dtype=float)
    total = rdp_total(
        q,
        sigma,
        steps,
        orders,
        sampling=sampling,
        neighbors=neighbors,
        dataset_size=dataset_size,
        max_batch_size=max_batch_size,
    )
    shrink = 10.0 ** (-np.arange(GROUP_DELTA_STEPS) / 4.0)
    d = np.maximum(delta[..., None] / k * shrink, 1e-300)
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        e = eps_of_curve(orders, total[..., None, :], d, conversion).value
        ok = (delta[..., None] > 0) & np.isfinite(e) & (log_group_delta(k, e, d) <= np.log(delta)[..., None])
        ke = np.where(ok, up(k * e, k * e), np.inf)
    value = np.asarray(np.min(ke, axis=-1))
    n = value.shape
    return Epsilon(value, np.full(n, np.nan), np.zeros(n, bool), np.ones(n, bool))


#: name → function(q, sigma, steps, delta, *, sampling, neighbors, conversion, dataset_size, ...) -> Epsilon
#: (dp-group also takes ``group_size``).  Adding an accountant is one entry here.
ACCOUNTANTS = {
    "rdp": epsilon_rdp,
    "abadi": epsilon_abadi,
    "bassily": epsilon_bassily,
    "dp-group": epsilon_dp_group,
}
#: Which accountants use ``--conversion`` (the others have their own fixed conversion).
USES_CONVERSION = {"rdp", "dp-group"}


def applies(accountant: str, sampling: str, neighbors: str) -> bool:
    """Whether an accountant covers a (sampling, neighbours) setting, as the sampler's table entry says."""
    sampler = catalogue.lookup(sampling)
    return sampler is not None and sampler.covers(accountant, neighbors)


def epsilon(accountant, q, sigma, steps, delta, **kw) -> Epsilon:
    """Dispatch to :data:`ACCOUNTANTS`."""
    if accountant not in ACCOUNTANTS:
        raise InputError(f"--method: must be one of {', '.join(ACCOUNTANTS)}, got {accountant!r}")
    check_whole(steps, "steps")
    for name in ("dataset_size", "max_batch_size"):
        if kw.get(name) is not None:
            check_whole(kw[name], name, 1.0)
    return ACCOUNTANTS[accountant](q, sigma, steps, delta, **kw)


__all__ = [
    "ACCOUNTANTS",
    "Epsilon",
    "applies",
    "check_setting",
    "check_whole",
    "epsilon",
    "epsilon_abadi",
    "epsilon_bassily",
    "epsilon_dp_group",
    "epsilon_rdp",
    "eps_of_curve",
    "rdp_per_step",
    "rdp_total",
]
