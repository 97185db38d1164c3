"""DP-SGD with balls-in-bins batches: Monte-Carlo upper confidence bounds on δ(ε) and ε(δ)
(docs/math.md §3.9).

Each epoch has ``m`` steps and every example goes to one of them uniformly at random, independently;
add/remove-one neighbours, sensitivity 1, noise σ.  The dominating pair of Chua, Ghazi, Harrison, Leeman,
Kamath, Kumar, Manurangsi, Sinha & Zhang 2025 (AISTATS, "Balls-and-Bins Sampling for DP-SGD",
arXiv:2412.16802) is sampled in both directions with exact rare-event conditioning, and each direction's
δ(ε) bounded with the Chernoff–Hoeffding bound in KL form (Hoeffding 1963, Thm 1), by
:mod:`dpcalc.engine.dpsgd.balls_in_bins_samples` (its module doc has the construction).

The samples are drawn in batches of a size fixed by the configuration, each from its own stream
``SeedSequence(seed, spawn_key=(direction, batch))``, and each batch returns the counts of its losses on a fixed
grid, merged exactly: a ``mapper`` (``mapper(fn, items, weights)``, default: in this process, in order) may run
the batches anywhere — a pool, a cluster — and the numbers for a seed are the same bit for bit.  Memory does not
grow with the samples.

For a fixed sample set every term is non-increasing in ε, and so are β(ε) and the conditioning, so the
upper bound U(ε) is non-increasing in ε: the ε found by bisection (the smallest with U(ε) <= δ, ended on
the safe side) is an upper bound on the true ε with the same confidence (docs/math.md §3.9).
The bound of the worse direction is the one that matters, so each direction uses the full confidence.
"""

from __future__ import annotations

import math

import numpy as np

from dpcalc.engine.dpsgd.balls_in_bins_samples import _directions, check_width, samples_needed
from dpcalc.engine.dpsgd.pld_accounting import sgd_epsilon_pld_remove
from dpcalc.errors import InputError

#: Default seed: the numbers are reproducible unless another seed is asked for.
DEFAULT_SEED = 20250103
#: Default number of Monte-Carlo samples per direction.
DEFAULT_SAMPLES = 100_000
#: Default confidence of the upper bounds.
DEFAULT_CONFIDENCE = 0.95


def _check_int(x, name, lo):
    x = np.asarray(x, dtype=float)
    bad = ~(np.isfinite(x) & (x >= lo) & (x == np.floor(x)))
    if np.any(bad):
        raise InputError(f"{name}: must be an integer >= {lo}, got {x[bad].ravel()[0]:g}")
    return x


def _check_args(sigma, m, epochs, samples, confidence):
    sigma = np.asarray(sigma, dtype=float)
    bad = ~(np.isfinite(sigma) & (sigma > 0))
    if np.any(bad):
        raise InputError(f"sigma: must be a finite number > 0, got {sigma[bad].ravel()[0]:g}")
    m = _check_int(m, "m", 1)
    epochs = _check_int(epochs, "epochs", 1)
    if not (isinstance(samples, (int, np.integer)) and samples >= 2):
        raise InputError(f"samples: must be an integer >= 2, got {samples!r}")
    if not (0.0 < float(confidence) < 1.0):
        raise InputError(f"confidence: must lie in (0, 1), got {confidence!r}")
    check_width(float(np.max(m * epochs)))
    return sigma, m, epochs


def delta_balls_in_bins_mc(
    sigma,
    m,
    epochs,
    epsilon,
    *,
    samples=DEFAULT_SAMPLES,
    confidence=DEFAULT_CONFIDENCE,
    seed=DEFAULT_SEED,
    mapper=None,
):
    """(δ upper bound, δ estimate) of ``epochs`` epochs of DP-SGD with balls-in-bins batches of ``m`` steps,
    noise multiplier ``sigma``, add/remove-one neighbours (the worse direction).

    Dominating pair: Chua et al. 2025, AISTATS, arXiv:2412.16802 (P = (1/m)Σ_i N(e_i, σ²I) vs
    Q = N(0, σ²I), both orders); Monte Carlo over ``samples`` draws per direction with the exact rare-event
    conditioning and Bennett remainder of the module doc, and the KL (Hoeffding 1963 Thm 1, as the paper uses it)
    upper confidence bound.  The upper bound holds with probability >= ``confidence`` over the
    sampling; the estimate is unbiased for the conditioned part (it leaves out the remainder β, which is
    below the bound's margin).  Arguments broadcast; one sample set per distinct configuration.  ``mapper``
    runs the batches (module doc); the numbers do not depend on it.
    """
    sigma, m, epochs = _check_args(sigma, m, epochs, samples, confidence)
    epsilon = np.asarray(epsilon, dtype=float)
    bad = ~(np.isfinite(epsilon) & (epsilon >= 0))
    if np.any(bad):
        raise InputError(f"epsilon: must be a finite number >= 0, got {epsilon[bad].ravel()[0]:g}")

    def one(s1, m1, k1, e1):
        rem, add = _directions(s1, m1, k1, e1, samples, float(confidence), seed, mapper=mapper)
        u = max(float(rem.upper(e1, confidence)[0]), float(add.upper(e1, confidence)[0]))
        d = max(float(rem.estimate(e1)[0]), float(add.estimate(e1)[0]))
        return u, d

    return _per_config(one, sigma, m, epochs, epsilon)


def _per_config(one, sigma, m, epochs, x):
    """``one(σ, m, epochs, x)`` -> (upper, estimate) once per distinct configuration of the broadcast
    arguments (each has its own sample set), spread back to their shape (floats for scalar inputs)."""
    arrays = np.broadcast_arrays(sigma, m, epochs, x)
    up, est = np.empty(arrays[0].shape), np.empty(arrays[0].shape)
    cache = {}
    for i in np.ndindex(arrays[0].shape):
        key = tuple(float(a[i]) for a in arrays)
        if key not in cache:
            cache[key] = one(key[0], int(key[1]), int(key[2]), key[3])
        up[i], est[i] = cache[key]
    if up.ndim == 0:
        return float(up), float(est)
    return up, est


def _eps_ref(sigma, m, k, delta):
    """A rough, data-independent guess below the true ε (to place the conditioning): 0.75 × the Poisson PLD
    estimate at q = 1/m, "remove" direction (docs/math.md §3.4); 0 if that fails.  Only the tightness of the
    bound depends on it, never its validity (it is fixed before sampling)."""
    try:
        e = float(np.asarray(sgd_epsilon_pld_remove(1.0 / m, sigma, k * m, delta).estimate))
        return 0.75 * e if math.isfinite(e) else 0.0
    except Exception:  # noqa: BLE001 - a heuristic only
        return 0.0


def _invert(fun, target, lo, hi):
    """Smallest ε in [lo, hi] with fun(ε) <= target for non-increasing fun, ended on the safe (upper) side;
    fun(hi) <= target is required."""
    if fun(lo) <= target:
        return lo
    for _ in range(200):
        if hi - lo <= 1e-7 * max(1.0, hi):
            break
        mid = 0.5 * (lo + hi)
        if fun(mid) <= target:
            hi = mid
        else:
            lo = mid
    return hi


def _epsilon_one(sigma, m, k, delta, n, confidence, seed, mapper=None):
    ref = _eps_ref(sigma, m, k, delta)
    rem, add = _directions(sigma, m, k, ref, n, confidence, seed, delta_target=delta, mapper=mapper)
    return epsilon_of_directions(rem, add, delta, confidence, ref)


def samples_to_certify(sigma, m, epochs, delta, *, samples=DEFAULT_SAMPLES, confidence=DEFAULT_CONFIDENCE):
    """The least number of samples per direction with which :func:`epsilon_balls_in_bins_mc` can certify
    ``delta`` at all (a finite ε), for one configuration (from ``samples`` on; ``samples`` itself if it can).

    This estimator's ε is finite exactly when its bound beyond every sampled loss — the floor
    p(E)·(1 − (1 − c)^{1/n}) + β of the KL upper confidence bound of a mean of 0 (Hoeffding 1963, Thm 1, the
    bound Chua et al. 2025, arXiv:2412.16802, use), with the conditioning chosen for n samples — is within δ:
    below this count ε is inf whatever the draws (:func:`dpcalc.engine.dpsgd.balls_in_bins_samples.samples_needed`;
    about p(E)·log(1/(1 − c))/δ).  It is the count to ask for, not a promise of a tight ε: the KL–Hoeffding
    count for a bound within a factor 1 + η of δ is larger (about log(1/(1 − c))/(δ·η²/(2(1 + η))))."""
    sigma, m, epochs = _check_args(sigma, m, epochs, samples, confidence)
    s1, m1, k1, d1 = float(sigma), int(m), int(epochs), float(delta)
    ref = _eps_ref(s1, m1, k1, d1)
    return samples_needed(s1, m1, k1, ref, d1, float(confidence), samples)


def epsilon_of_directions(rem, add, delta, confidence, ref=0.0):
    """(ε upper bound, ε estimate) at ``delta`` from the two directions' sample sets (objects with
    ``upper(ε, confidence)``, ``estimate(ε)`` and ``max_loss``, each non-increasing in ε for its fixed sample
    set): the smallest ε whose worse direction's bound is within ``delta``, by bisection ended on the upper
    side and one ulp up (``inf`` when the samples cannot certify ``delta``), and the estimate's ε."""

    def upper(e):
        return max(float(rem.upper(e, confidence)[0]), float(add.upper(e, confidence)[0]))

    def estimate(e):
        return max(float(rem.estimate(e)[0]), float(add.estimate(e)[0]))

    top = max(rem.max_loss, add.max_loss, ref, 0.0) + 1.0
    # beyond every sampled loss only the floor p·U(0) + β remains; β decays as ε grows
    hi = top
    while upper(hi) > delta and hi < 1e4:
        hi *= 2.0
    eps_up = math.inf if upper(hi) > delta else _invert(upper, delta, 0.0, hi)
    eps_est = _invert(estimate, delta, 0.0, max(top, 1.0)) if estimate(max(top, 1.0)) <= delta else math.inf
    if math.isfinite(eps_up):
        eps_up = float(np.nextafter(eps_up, np.inf))
    return eps_up, eps_est


def epsilon_balls_in_bins_mc(
    sigma,
    m,
    epochs,
    delta,
    *,
    samples=DEFAULT_SAMPLES,
    confidence=DEFAULT_CONFIDENCE,
    seed=DEFAULT_SEED,
    mapper=None,
):
    """(ε upper bound, ε estimate) at ``delta`` of ``epochs`` balls-in-bins epochs of ``m`` steps, noise
    multiplier ``sigma``, add/remove-one neighbours (Chua et al. 2025, arXiv:2412.16802).

    One sample set per configuration; the δ upper bound U(ε) of :func:`delta_balls_in_bins_mc` is
    non-increasing in ε for that set, so the smallest ε with U(ε) <= δ (bisection ended on the upper side)
    is >= the true ε with probability >= ``confidence``.  Returns ``inf`` when the samples cannot certify
    ``delta`` (the floor p(E)·(1 − (1−confidence)^{1/n}) exceeds it): :func:`samples_to_certify` says how
    many would.  The estimate inverts the δ estimate.  Arguments broadcast; a loop over distinct
    configurations; ``mapper`` runs the batches (module doc), the numbers do not depend on it.
    """
    sigma, m, epochs = _check_args(sigma, m, epochs, samples, confidence)
    delta = np.asarray(delta, dtype=float)
    bad = ~((delta > 0) & (delta < 1))
    if np.any(bad):
        raise InputError(f"delta: must lie in (0, 1), got {delta[bad].ravel()[0]:g}")
    return _per_config(
        lambda s1, m1, k1, d1: _epsilon_one(s1, m1, k1, d1, samples, float(confidence), seed, mapper),
        sigma,
        m,
        epochs,
        delta,
    )
