"""DP-SGD's tight accountant: privacy loss distributions (PLD) of the sampler's steps, composed.

* :func:`sgd_epsilon_pld` / :func:`sgd_delta_pld` — DP-SGD (Poisson-subsampled Gaussian, add/remove
  neighbours: both directions are composed and the worse is reported; Mironov, Talwar & Zhang 2019,
  docs/math.md §3.2; Zhu, Dong & Wang 2022); replace-one neighbours (§3.5), truncated Poisson batches
  (§3.7) and the allocation samplers' rounds (§3.10).  Each sampler's pair of a run is its own
  (:meth:`dpcalc.engine.samplers.base.Sampler.pld_directions`, the table :mod:`dpcalc.engine.samplers`).

Every answer is a :class:`~dpcalc.engine.pld.bracket.Bracket` ``(lower, estimate, upper)``
(:mod:`dpcalc.engine.pld.bracket` says what is guaranteed).

Reference formulas: docs/math.md §0 (hockey-stick divergence, neighbouring relations), §2.6 (the exact
Gaussian profile, used in the tests), §3.2 (the subsampled Gaussian's pair).

Vectorisation: each distinct configuration needs its own grid and FFT, so the entry points loop over
the broadcast configurations (a Python loop over rows, by necessity; each row is vectorised inside).
Many ε for one configuration (a privacy profile) share one composition per direction
(:mod:`dpcalc.engine.pld.profile`, docs/math.md §7.7).
"""

from __future__ import annotations

import numpy as np

from dpcalc.engine._numerics import sorted_unique
from dpcalc.engine.mechanisms.mixture_loss import MixtureLossModel
from dpcalc.engine.pld.bracket import (
    _INF_BRACKET,
    Bracket,
    _check_count,
    _check_delta,
    _check_eps,
    _check_eps_error,
    _delta_worst,
    _delta_worst_at,
    _eps_worst,
    _floor_refusal,
    _in_range,
    _pair,
    _unbounded,
    dominates_only,
)
from dpcalc.engine.pld.grid import DEFAULT_MEMORY_CAP
from dpcalc.engine.samplers import catalogue
from dpcalc.engine.samplers.base import Sampler
from dpcalc.errors import InputError

__all__ = ["sgd_delta_pld", "sgd_epsilon_pld", "sgd_epsilon_pld_remove"]


def _sgm_directions(
    q: float, sigma: float, steps: int, neighbors: str = "add-remove", sampler=None, config=(), delta=None
):
    """The directions of DP-SGD's pair, each a list of components: the sampler's (plain Poisson when None;
    ``config``: one row of its :meth:`~dpcalc.engine.samplers.base.Sampler.pld_config`; ``delta``, when the
    question is ε(δ), may set the precision)."""
    sampler = sampler or catalogue.sampler("poisson")
    return sampler.pld_directions(q, sigma, steps, neighbors, config, delta)


def _sgd_args(q, sigma, steps):
    q = np.asarray(q, dtype=float)
    sigma = np.asarray(sigma, dtype=float)
    steps = np.asarray(steps, dtype=float)
    if np.any(~((q > 0) & (q <= 1))):
        raise InputError(f"--sample-rate: must lie in (0, 1], got {q[~((q > 0) & (q <= 1))].ravel()[0]:g}")
    if np.any(~((sigma > 0) & np.isfinite(sigma))):
        bad = sigma[~((sigma > 0) & np.isfinite(sigma))].ravel()[0]
        raise InputError(f"--noise-multiplier: must be a finite number > 0, got {bad:g}")
    for s in sorted_unique(steps):
        _check_count(s, "--steps")
    return q, sigma, steps


def sgd_epsilon_pld(
    q,
    sigma,
    steps,
    delta,
    eps_error=None,
    *,
    memory_cap=DEFAULT_MEMORY_CAP,
    neighbors="add-remove",
    dataset_size=None,
    max_batch_size=None,
    sampling=None,
) -> Bracket:
    """ε(δ) bracket of DP-SGD: ``steps`` compositions of the Poisson-subsampled Gaussian with sampling
    rate ``q`` and noise multiplier ``sigma`` (add/remove neighbours, worse direction reported; with
    ``neighbors="replace-one"`` the symmetric replace-one pair of docs/math.md §3.5).  With ``dataset_size`` N
    and ``max_batch_size`` B (broadcast with the rest): truncated Poisson batches (docs/math.md §3.7).
    ``sampling="balls-in-bins"`` or ``"random-allocation"`` (add/remove; N optional): the certified PLD of
    the allocation rounds (docs/math.md §3.10) — an upper bound only: ``lower`` is nan there.  ``sampling``
    (None: truncated Poisson where ``max_batch_size`` is given, else Poisson) names the sampler.

    Arguments broadcast; returns a :class:`Bracket` of arrays of the broadcast shape.  ``eps_error``
    is the target bracket width (``upper − lower``); default 0.5 % of ε.  ``memory_cap`` (bytes)
    bounds one computation; a request above it raises :class:`InputError` naming ``--eps-error``.
    One grid and FFT per distinct configuration (a loop over configurations).
    """
    sampler, config = _setting(sampling, dataset_size, max_batch_size)
    return _sgd_epsilon(q, sigma, steps, delta, eps_error, memory_cap, neighbors, None, sampler, config)


def _setting(sampling, dataset_size, max_batch_size) -> tuple[Sampler, tuple]:
    """The sampler (``sampling``; None: truncated Poisson where a cap is given, else Poisson) and the arrays
    its pair reads per configuration (:meth:`~dpcalc.engine.samplers.base.Sampler.pld_config`)."""
    if sampling is None:
        sampling = "poisson" if max_batch_size is None else "truncated-poisson"
    sampler = catalogue.sampler(sampling, "pld")
    return sampler, sampler.pld_config(dataset_size, max_batch_size)


def sgd_epsilon_pld_remove(
    q, sigma, steps, delta, eps_error=None, *, memory_cap=DEFAULT_MEMORY_CAP
) -> Bracket:
    """As :func:`sgd_epsilon_pld`, for the "remove" direction of the pair alone: its lower end is a lower
    bound on DP-SGD's ε, its upper end is **not** an upper bound (the "add" direction is left out).  For
    steering the inverse searches (it usually is the worse direction, at half the cost), never reported."""
    return _sgd_epsilon(q, sigma, steps, delta, eps_error, memory_cap, "add-remove", directions=1)


def _sgd_epsilon(
    q, sigma, steps, delta, eps_error, memory_cap, neighbors, directions, sampler=None, config=()
) -> Bracket:
    """The body of :func:`sgd_epsilon_pld` (``directions=None``: all of the pair's) and
    :func:`sgd_epsilon_pld_remove` (``directions=1``: the first, "remove")."""
    q, sigma, steps = _sgd_args(q, sigma, steps)
    delta = _check_delta(delta)
    eps_error = _check_eps_error(eps_error)

    def solve(dirs, d):
        if d == 0 and _unbounded(dirs):  # the "remove" direction's loss is unbounded: ε(0) = ∞, exactly
            return _pair(dirs, _INF_BRACKET)
        return _eps_worst(dirs[:directions], d, eps_error, memory_cap)

    return _per_config(q, sigma, steps, delta, solve, neighbors, sampler, config, target_is_delta=True)


def sgd_delta_pld(
    q,
    sigma,
    steps,
    epsilon,
    eps_error=None,
    *,
    memory_cap=DEFAULT_MEMORY_CAP,
    neighbors="add-remove",
    dataset_size=None,
    max_batch_size=None,
    sampling=None,
) -> Bracket:
    """δ(ε) bracket of DP-SGD (as :func:`sgd_epsilon_pld`, with ``epsilon`` given instead of δ)."""
    q, sigma, steps = _sgd_args(q, sigma, steps)
    epsilon = _check_eps(epsilon)
    eps_error = _check_eps_error(eps_error)
    sampler, config = _setting(sampling, dataset_size, max_batch_size)
    if epsilon.size > 1 and all(np.unique(a).size == 1 for a in (q, sigma, steps, *config)):
        # one configuration, many ε (a privacy profile): one composition per direction
        shape = np.broadcast_shapes(
            q.shape, sigma.shape, steps.shape, epsilon.shape, *(c.shape for c in config)
        )
        q1, s1, t1 = float(q.ravel()[0]), float(sigma.ravel()[0]), int(steps.ravel()[0])
        row = tuple(float(np.ravel(c)[0]) for c in config)
        what = f"sample rate {q1:g}, noise multiplier {s1:g}, {t1} steps"
        dirs = _sgm_directions(q1, s1, t1, neighbors, sampler, row)
        key = ("sgd", q1, s1, t1, neighbors, sampler.name, row) if config else ("sgd", q1, s1, t1, neighbors)
        out = _in_range(
            what,
            lambda: _solved(
                lambda d, e: _delta_worst(d, e, eps_error, memory_cap, key), dirs, epsilon.ravel(), what
            ),
        )
        return Bracket(*(np.broadcast_to(o.reshape(epsilon.shape), shape).copy() for o in out))
    return _per_config(
        q,
        sigma,
        steps,
        epsilon,
        lambda dirs, e: _delta_worst_at(dirs, e, eps_error, memory_cap),
        neighbors,
        sampler,
        config,
    )


def _per_config(
    q, sigma, steps, target, solve, neighbors="add-remove", sampler=None, config=(), target_is_delta=False
) -> Bracket:
    """Broadcast (q, σ, steps, target, *config) and run ``solve(directions, target)`` once per distinct
    configuration (each needs its own grid and FFT, so this is a loop over configurations)."""
    arrays = [q, sigma, steps, target, *config]
    shape = np.broadcast_shapes(*(a.shape for a in arrays))
    flat = [np.broadcast_to(a, shape).ravel() for a in arrays]
    out = np.empty((3, flat[0].size))
    cache = {}
    for i in range(flat[0].size):
        key = tuple(a[i] for a in flat)
        if key not in cache:
            q1, s1, t1, x1 = float(key[0]), float(key[1]), int(key[2]), float(key[3])
            row = tuple(float(v) for v in key[4:])
            what = f"sample rate {q1:g}, noise multiplier {s1:g}, {t1} steps"
            hint = x1 if target_is_delta else None
            cache[key] = _in_range(
                what,
                lambda a=(q1, s1, t1), x=x1, c=row, d=hint, w=what: _solved(
                    solve, _sgm_directions(*a, neighbors, sampler, c, d), x, w
                ),
            )
        out[:, i] = cache[key]
    return Bracket(*(o.reshape(shape) for o in out))


def _solved(solve, dirs, target, what: str) -> tuple:
    """``solve(dirs, target)``.  Where the models only dominate the pair (the allocation rounds', truncated
    Poisson's revealed mixture: :func:`~dpcalc.engine.pld.bracket.dominates_only`) the bracket keeps its upper
    end only: its lower end and its estimate are of the models, not of the run (nan).  Where the allocation
    rounds' models count their neglected mass (round-off, tails) at +∞, an infinite upper end means that mass
    is as large as the δ asked, which is a refusal, not an answer."""
    bracket = solve(dirs, target)
    if not dominates_only(dirs):
        return bracket
    lower, estimate, upper = bracket
    models = [c.model for d in dirs for c in d]
    rounds = any(m.dominates_only and not isinstance(m, MixtureLossModel) for m in models)
    if rounds and not np.all(np.isfinite(upper)):
        raise _floor_refusal(f"PLD accounting of {what}", "allocation", "--method rdp")
    nan = np.full(np.shape(estimate), np.nan) if np.ndim(estimate) else np.nan
    return (np.full(np.shape(lower), np.nan) if np.ndim(lower) else np.nan), nan, upper
