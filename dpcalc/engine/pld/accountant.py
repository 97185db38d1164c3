"""Tight accounting with privacy loss distributions (PLD): the public entry points.

* :func:`sgd_epsilon_pld` / :func:`sgd_delta_pld` — DP-SGD (Poisson-subsampled Gaussian, add/remove
  neighbours: both directions are composed and the worse is reported; Mironov, Talwar & Zhang 2019,
  docs/math.md §3.2; Zhu, Dong & Wang 2022).
* :func:`compose_pld` — heterogeneous lists of mechanisms (gaussian, laplace, randomized-response, dp,
  subsampled-gaussian), each with a count; ``MechanismSpec`` objects from :mod:`dpcalc.spec`, or
  ``(kind, params, count)`` tuples / dicts.

Every answer is a :class:`Bracket` ``(lower, estimate, upper)``.  What is guaranteed (details in
:mod:`dpcalc.engine.pld.epsilon`): ``lower <= ε(δ) <= upper`` for the exact privacy profile of the
composition (likewise for δ(ε)).  The upper end comes from a pessimistic ("connect-the-dots")
discretisation whose discrete pair dominates the true pair (Doroshenko et al. 2022), composed by FFT
with truncation and wrap-around bounded by Chernoff bounds and FFT round-off bounded by an
a-posteriori noise-floor estimate (Koskela et al. 2020; Gopi, Lee & Wutschitz 2021 for the error
budget); the lower end uses a Hoeffding coupling of the same discretisation.  The estimate is the
centred (mean-shift corrected) value and lies inside the bracket.  Exponential tilting lets δ go
down to 1e-300 (see :mod:`dpcalc.engine.pld.convolution`).

Reference formulas: docs/math.md §0 (hockey-stick divergence, neighbouring relations), §2.6 (the exact
Gaussian profile, used in the tests), §3.2 (the subsampled Gaussian's pair).

Vectorisation: each distinct configuration needs its own grid and FFT, so the entry points loop over
the broadcast configurations (a Python loop over rows, by necessity; each row is vectorised inside).
Many ε for one configuration (a privacy profile) share one composition per direction
(:mod:`dpcalc.engine.pld.profile`, docs/math.md §7.7).
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

from dpcalc.engine._numerics import require
from dpcalc.engine.composition.merge import Merged, merge_exact
from dpcalc.engine.mechanisms import gaussian, subsampled_gaussian
from dpcalc.engine.mechanisms.loss_models import approx_dp
from dpcalc.engine.pld.delta import delta_bracket
from dpcalc.engine.pld.epsilon import epsilon_bracket
from dpcalc.engine.pld.grid import DEFAULT_MEMORY_CAP, DEFAULT_REL_ERROR, RDP_HINT, Component
from dpcalc.engine.pld.profile import delta_brackets
from dpcalc.errors import InputError, UncertifiedError

__all__ = [
    "Bracket",
    "DEFAULT_MEMORY_CAP",
    "DEFAULT_REL_ERROR",
    "compose_pld",
    "sgd_delta_pld",
    "sgd_epsilon_pld",
]

#: Largest number of compositions accepted per mechanism.
MAX_COUNT = 10**8
#: Most distinct mechanisms in one composition (after :func:`~dpcalc.engine.composition.merge.merge_exact`):
#: each costs its own grid, cumulant evaluations and transform in every attempt (about 0.1–0.5 s each).
MAX_MECHANISMS = 16


class Bracket(NamedTuple):
    """A certified bracket: ``lower <= true value <= upper`` and an ``estimate`` in between."""

    lower: object
    estimate: object
    upper: object


def _check_delta(delta, name="--delta"):
    """δ in [0, 1): δ = 0 asks for the largest privacy loss (see :func:`_zero_delta`)."""
    return require(
        delta, lambda d: (d >= 0) & (d < 1), f"{name}: must lie in [0, 1)", show=lambda v: f"{v:g}"
    )


_INF_BRACKET = (math.inf, math.inf, math.inf)


def _unbounded(dirs) -> bool:
    """Whether some direction's composed loss is unbounded (a mass at +∞, or an unbounded largest loss)."""
    return any(c.model.inf_mass > 0 or not math.isfinite(c.model.loss_max) for d in dirs for c in d)


def _zero_delta(specs, lower=False):
    """ε at δ = 0 of a list of mechanisms: the largest privacy loss of the composition, ``Σ count·ε_j``
    (the ess sup of a sum of independent losses is the sum of their ess sups, so this is exact for the
    dominating pairs; Dwork & Roth 2014, Thm 3.16 for the bound; docs/math.md §2.7), as ``(total, None)``
    with ``total`` an exact Fraction never below it (``lower=True``: never above it), or ``(None, reason)``
    where some loss is unbounded: ε = ∞."""
    from types import SimpleNamespace

    from dpcalc.engine.mechanisms.catalogue import lookup, max_loss

    canon = []
    for spec in specs:  # the fields max_loss reads (the engine does not import the spec parser above it)
        kind, params, count, text = _spec_fields(spec)
        canon.append(
            SimpleNamespace(kind=lookup(kind).kind, params=params, count=int(count), text=text or kind)
        )
    return max_loss(canon, lower)


def _check_eps(eps, name="--epsilon"):
    return require(
        eps,
        lambda e: (e >= 0) & np.isfinite(e),
        f"{name}: must be a finite number >= 0",
        show=lambda v: f"{v:g}",
    )


def _check_eps_error(eps_error):
    if eps_error is None:
        return None
    v = float(eps_error)
    if not (v > 0 and math.isfinite(v)):
        raise InputError(f"--eps-error: must be a finite number > 0, got {eps_error}")
    return v


def _check_count(count, name="count") -> int:
    c = float(count)
    if not (c >= 1 and c == math.floor(c)):
        raise InputError(f"{name}: must be an integer >= 1, got {count}")
    if c > MAX_COUNT:
        raise InputError(f"{name}: at most {MAX_COUNT:.0e} compositions are supported, got {count:g}")
    return int(c)


def _sgm_directions(
    q: float, sigma: float, steps: int, neighbors: str = "add-remove", trunc=None, delta=None
):
    """The directions of DP-SGD's pair, each a list of components; ``trunc``: None (Poisson), ``(N, B)``
    (truncated Poisson) or an :class:`_Allocation` (``delta``, when the question is ε(δ), sets the
    precision its rounds need)."""
    if isinstance(trunc, _Allocation):  # allocation rounds (docs/math.md §3.10)
        from dpcalc.engine.dpsgd.allocation import rounds
        from dpcalc.engine.dpsgd.allocation_pld import run_directions

        n = None if math.isnan(trunc.dataset_size) else trunc.dataset_size
        t, k, r = (int(v) for v in rounds(q, steps, trunc.sampling, n))
        return run_directions(sigma, t, k, r, delta)
    if trunc is not None:  # truncated Poisson batches: a revealed mixture per step (docs/math.md §3.7)
        from dpcalc.engine.mechanisms.sgm.truncated_poisson import loss_directions

        return [[Component(d[0], steps)] for d in loss_directions(q, sigma, *trunc, neighbors)]
    if neighbors == "replace-one":  # one symmetric pair (docs/math.md §3.5)
        from dpcalc.engine.mechanisms.sgm_replace_loss import sgm_replace_loss

        return [[Component(sgm_replace_loss(q, sigma), steps)]]
    if q == 1.0:
        return [[Component(gaussian.loss_model(sigma), steps)]]
    return [
        [Component(subsampled_gaussian.loss_model(q, sigma, "remove"), steps)],
        [Component(subsampled_gaussian.loss_model(q, sigma, "add"), steps)],
    ]


def _worst(brackets) -> tuple:
    return tuple(max(b[i] for b in brackets) for i in range(3))


def _eps_worst(dirs, delta, eps_error, memory_cap) -> tuple:
    """ε bracket of the worse direction; a direction whose upper end falls below the lower end of
    one already computed cannot change the answer, so it is not refined further."""
    out = []
    for d in dirs:
        below = max(b[0] for b in out) if out else None
        out.append(epsilon_bracket(d, delta, eps_error, memory_cap, below=below))
    return _worst(out)


def _delta_worst(dirs, eps, eps_error, memory_cap, key=None) -> tuple:
    """δ brackets (arrays) of the worse direction at an array of ε, one composition per direction
    (:func:`~dpcalc.engine.pld.profile.delta_brackets`); a later direction's bracket whose upper end is
    below the lower end found so far cannot change the worst, so it need not be tight."""
    out = []
    for d in dirs:
        below = np.max([b[0] for b in out], axis=0) if out else None
        k = None if key is None else (key, len(out))
        out.append(delta_brackets(d, eps, eps_error, memory_cap, below=below, key=k))
    return tuple(np.max([b[i] for b in out], axis=0) for i in range(3))


def _sgd_args(q, sigma, steps):
    q = np.asarray(q, dtype=float)
    sigma = np.asarray(sigma, dtype=float)
    steps = np.asarray(steps, dtype=float)
    if np.any(~((q > 0) & (q <= 1))):
        raise InputError(f"--sample-rate: must lie in (0, 1], got {q[~((q > 0) & (q <= 1))].ravel()[0]:g}")
    if np.any(~((sigma > 0) & np.isfinite(sigma))):
        bad = sigma[~((sigma > 0) & np.isfinite(sigma))].ravel()[0]
        raise InputError(f"--noise-multiplier: must be a finite number > 0, got {bad:g}")
    for s in np.unique(steps):
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
    sampling="poisson",
) -> Bracket:
    """ε(δ) bracket of DP-SGD: ``steps`` compositions of the Poisson-subsampled Gaussian with sampling
    rate ``q`` and noise multiplier ``sigma`` (add/remove neighbours, worse direction reported; with
    ``neighbors="replace-one"`` the symmetric replace-one pair of docs/math.md §3.5).  With ``dataset_size`` N
    and ``max_batch_size`` B (broadcast with the rest): truncated Poisson batches (docs/math.md §3.7).
    ``sampling="balls-in-bins"`` or ``"random-allocation"`` (add/remove; N optional): the certified PLD of
    the allocation rounds (docs/math.md §3.10) — an upper bound only: ``lower`` is nan there.

    Arguments broadcast; returns a :class:`Bracket` of arrays of the broadcast shape.  ``eps_error``
    is the target bracket width (``upper − lower``); default 0.5 % of ε.  ``memory_cap`` (bytes)
    bounds one computation; a request above it raises :class:`InputError` naming ``--eps-error``.
    One grid and FFT per distinct configuration (a loop over configurations).
    """
    trunc = _truncation(dataset_size, max_batch_size, sampling)
    return _sgd_epsilon(
        q, sigma, steps, delta, eps_error, memory_cap, neighbors, directions=None, trunc=trunc
    )


class _Allocation(NamedTuple):
    """An allocation sampler and its dataset size N (nan when not given: ⌊1/q⌋ steps an epoch)."""

    sampling: str
    dataset_size: object


def _truncation(dataset_size, max_batch_size, sampling="poisson"):
    """``(N, B)`` arrays of truncated Poisson sampling, an :class:`_Allocation` of an allocation sampler, or
    None (plain Poisson)."""
    from dpcalc.engine.dpsgd.allocation import SAMPLINGS

    if sampling in SAMPLINGS:
        return _Allocation(
            sampling, np.asarray(np.nan if dataset_size is None else dataset_size, dtype=float)
        )
    if max_batch_size is None:
        return None
    if dataset_size is None:
        raise InputError("--sampling truncated-poisson needs --dataset-size")
    return np.asarray(dataset_size, dtype=float), np.asarray(max_batch_size, dtype=float)


def sgd_epsilon_pld_remove(
    q, sigma, steps, delta, eps_error=None, *, memory_cap=DEFAULT_MEMORY_CAP
) -> Bracket:
    """As :func:`sgd_epsilon_pld`, for the "remove" direction of the pair alone: its lower end is a lower
    bound on DP-SGD's ε, its upper end is **not** an upper bound (the "add" direction is left out).  For
    steering the inverse searches (it usually is the worse direction, at half the cost), never reported."""
    return _sgd_epsilon(q, sigma, steps, delta, eps_error, memory_cap, "add-remove", directions=1)


def _sgd_epsilon(q, sigma, steps, delta, eps_error, memory_cap, neighbors, directions, trunc=None) -> Bracket:
    """The body of :func:`sgd_epsilon_pld` (``directions=None``: all of the pair's) and
    :func:`sgd_epsilon_pld_remove` (``directions=1``: the first, "remove")."""
    q, sigma, steps = _sgd_args(q, sigma, steps)
    delta = _check_delta(delta)
    eps_error = _check_eps_error(eps_error)

    def solve(dirs, d):
        if d == 0 and _unbounded(dirs):  # the "remove" direction's loss is unbounded: ε(0) = ∞, exactly
            return _INF_BRACKET
        return _eps_worst(dirs[:directions], d, eps_error, memory_cap)

    return _per_config(q, sigma, steps, delta, solve, neighbors, trunc, target_is_delta=True)


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
    sampling="poisson",
) -> Bracket:
    """δ(ε) bracket of DP-SGD (as :func:`sgd_epsilon_pld`, with ``epsilon`` given instead of δ)."""
    q, sigma, steps = _sgd_args(q, sigma, steps)
    epsilon = _check_eps(epsilon)
    eps_error = _check_eps_error(eps_error)
    trunc = _truncation(dataset_size, max_batch_size, sampling)
    if trunc is None and epsilon.size > 1 and all(np.unique(a).size == 1 for a in (q, sigma, steps)):
        # one configuration, many ε (a privacy profile): one composition per direction
        shape = np.broadcast_shapes(q.shape, sigma.shape, steps.shape, epsilon.shape)
        q1, s1, t1 = float(q.ravel()[0]), float(sigma.ravel()[0]), int(steps.ravel()[0])
        what = f"sample rate {q1:g}, noise multiplier {s1:g}, {t1} steps"
        dirs = _sgm_directions(q1, s1, t1, neighbors)
        key = ("sgd", q1, s1, t1, neighbors)
        out = _in_range(what, lambda: _delta_worst(dirs, epsilon.ravel(), eps_error, memory_cap, key))
        return Bracket(*(np.broadcast_to(o.reshape(epsilon.shape), shape).copy() for o in out))
    return _per_config(
        q,
        sigma,
        steps,
        epsilon,
        lambda dirs, e: _worst([delta_bracket(d, e, eps_error, memory_cap) for d in dirs]),
        neighbors,
        trunc,
    )


def _in_range(what: str, compute):
    """``compute()``, with the failures of a grid that cannot hold the privacy loss (a loss beyond double
    range, mass lost by the discretisation) turned into one :class:`InputError` that says so."""
    try:
        return compute()
    except InputError:
        raise
    except UncertifiedError as exc:
        if "lost mass" not in str(exc):
            raise
        reason = "the discretisation cannot hold its privacy loss"
    except (OverflowError, ValueError, ZeroDivisionError, FloatingPointError):
        reason = "its privacy loss is beyond the range of double precision"
    raise InputError(f"PLD accounting of {what}: {reason} (ε would be very large); use {RDP_HINT}") from None


def _per_config(
    q, sigma, steps, target, solve, neighbors="add-remove", trunc=None, target_is_delta=False
) -> Bracket:
    """Broadcast (q, σ, steps, target[, N, B | N]) and run ``solve(directions, target)`` once per distinct
    configuration (each needs its own grid and FFT, so this is a loop over configurations)."""
    alloc = isinstance(trunc, _Allocation)
    rows = [] if trunc is None else [trunc.dataset_size] if alloc else list(trunc)
    arrays = [q, sigma, steps, target] + rows
    shape = np.broadcast_shapes(*(a.shape for a in arrays))
    flat = [np.broadcast_to(a, shape).ravel() for a in arrays]
    out = np.empty((3, flat[0].size))
    cache = {}
    for i in range(flat[0].size):
        key = tuple(a[i] for a in flat)
        if key not in cache:
            q1, s1, t1, x1 = float(key[0]), float(key[1]), int(key[2]), float(key[3])
            if trunc is None:
                tr = None
            else:
                tr = _Allocation(trunc.sampling, float(key[4])) if alloc else (float(key[4]), float(key[5]))
            what = f"sample rate {q1:g}, noise multiplier {s1:g}, {t1} steps"
            hint = x1 if target_is_delta else None
            cache[key] = _in_range(
                what,
                lambda a=(q1, s1, t1), x=x1, tr=tr, d=hint: solve(_sgm_directions(*a, neighbors, tr, d), x),
            )
            if alloc:
                cache[key] = _allocation_answer(cache[key], what)
        out[:, i] = cache[key]
    return Bracket(*(o.reshape(shape) for o in out))


def _allocation_answer(bracket, what: str) -> tuple:
    """An allocation sampler's bracket: its upper end only (the rounds' models dominate the pair, so the
    lower end bounds the model, not the true profile); an infinite upper end means the neglected mass
    (round-off, tails) is as large as the δ asked, which is a refusal, not an answer."""
    _, est, upper = bracket
    if not math.isfinite(upper):
        raise _floor_refusal(f"PLD accounting of {what}", "allocation", "--accountant rdp")
    return math.nan, est, upper


# ------------------------------------------------------------------------------------ mechanism lists


def _spec_fields(spec):
    if isinstance(spec, Merged):
        return spec.kind, dict(spec.params), spec.count, spec.text
    if isinstance(spec, dict):
        return spec["kind"], dict(spec.get("params", {})), spec.get("count", 1), spec.get("text", "")
    if isinstance(spec, tuple):
        kind, params, *rest = spec
        return kind, dict(params), (rest[0] if rest else 1), ""
    return spec.kind, dict(spec.params), spec.count, getattr(spec, "text", "")


def _models(spec):
    """``(count, model, model_other_direction_or_None, extra)`` for one mechanism spec, from the catalogue;
    ``extra``: the mass at +∞ a dominating (upper-bound-only) model adds per release, else None."""
    from dpcalc.engine.mechanisms.catalogue import pld_pair

    kind, p, count, text = _spec_fields(spec)
    label = f"mechanism {text!r}: " if text else f"{kind}: "
    count = _check_count(count, label + "count")
    try:
        pair = pld_pair(kind, p)
    except KeyError as e:
        raise InputError(label + f"missing parameter {e.args[0]}") from None
    except InputError as e:
        raise InputError(label + str(e)) from None
    if pair is None:
        raise InputError(label + f"kind {kind!r} has no privacy loss distribution here; use {RDP_HINT}")
    return count, pair[0], pair[1], (pair[2] if len(pair) > 2 else None)


def _directions(specs, items=None):
    """The directions of a composition of specs (``items``: their :func:`_models`, when already read)."""
    items = [_models(s) for s in specs] if items is None else items
    if not items:
        raise InputError("compose: give at least one mechanism")
    remove = [Component(m1, c) for c, m1, _, _ in items]
    add = [Component(m2 if m2 is not None else m1, c) for c, m1, m2, _ in items]
    extras = [Component(approx_dp(0.0, x), c) for c, _, _, x in items if x]
    if all(m2 is None for _, _, m2, _ in items):
        return [remove + extras]
    return [remove + extras, add + extras]


def _floor_refusal(what: str, rounds: str, hint: str) -> InputError:
    """The refusal of a δ at or below the certified round-off and tail mass of random-allocation rounds."""
    return InputError(
        f"{what}: the {rounds} rounds' certified round-off and tail mass reach this δ; use a larger --delta or "
        f"{hint}"
    )


def _merged(specs) -> list:
    """``specs`` as :class:`~dpcalc.engine.composition.merge.Merged` records, identical releases and plain
    Gaussians merged exactly; refused above :data:`MAX_MECHANISMS` distinct ones."""
    from types import SimpleNamespace

    fields = []
    for kind, params, count, text in map(_spec_fields, specs):
        label = f"mechanism {text!r}: " if text else f"{kind}: "
        fields.append(
            SimpleNamespace(kind=kind, params=params, count=_check_count(count, label + "count"), text=text)
        )
    out = merge_exact(fields)
    if len(out) > MAX_MECHANISMS:
        raise InputError(
            f"MECHANISM: {len(out)} distinct mechanisms (after merging identical specs and plain Gaussians), "
            f"above the limit of {MAX_MECHANISMS} for privacy loss distributions (each needs its own grid); "
            f"use {RDP_HINT}"
        )
    return out


def compose_pld(specs, delta=None, epsilon=None, eps_error=None, *, memory_cap=DEFAULT_MEMORY_CAP) -> Bracket:
    """Bracket of ε(δ) (give ``delta``) or of δ(ε) (give ``epsilon``) for a heterogeneous composition.

    ``specs``: ``MechanismSpec`` objects or ``(kind, params, count)`` tuples or dicts with kinds
    gaussian (sigma, sensitivity), laplace (scale, sensitivity), randomized-response (p or epsilon),
    dp (epsilon, delta), subsampled-gaussian (q, sigma; Poisson, add/remove).  Asymmetric pairs
    (subsampled Gaussian) are composed in both directions together with the symmetric ones, and the
    worse is reported.  ``delta``/``epsilon`` may be arrays (one computation per δ; many ε share one
    composition per direction, docs/math.md §7.7).
    """
    if (delta is None) == (epsilon is None):
        raise InputError("compose: give exactly one of --delta and --epsilon")
    from dpcalc.engine.composition.theorems import at_least
    from dpcalc.engine.mechanisms.catalogue import float_down, float_up

    eps_error = _check_eps_error(eps_error)
    specs = _merged(specs)
    items = _in_range("these mechanisms", lambda: [_models(s) for s in specs])
    dirs = _directions(specs, items)
    # random allocation's models only dominate its pair: the bracket's lower end bounds the models, not the
    # composition, and is not reported
    upper_only = any(x is not None for *_, x in items)
    if delta is not None:
        vals = _check_delta(delta)
        fn = epsilon_bracket
    else:
        vals = _check_eps(epsilon)
        fn = delta_bracket
    flat = vals.ravel()
    out = np.empty((3, flat.size))
    # the largest privacy loss (None: unbounded), for δ = 0 and for the ε beyond which δ = 0
    top = _zero_delta(specs)[0] if delta is None or np.any(flat == 0) else None
    if delta is None:  # δ(ε) at many ε: one composition per direction (privacy profile)
        need = [i for i, v in enumerate(flat) if top is None or not at_least(float(v), top)]
        if len(need) > 1:
            out[:] = 0.0  # ε >= every loss: δ = 0
            key = ("compose", repr([_spec_fields(s)[:3] for s in specs]))
            out[:, need] = _in_range(
                "these mechanisms", lambda: _delta_worst(dirs, flat[need], eps_error, memory_cap, key)
            )
            flat = flat[:0]  # all done
    for i, v in enumerate(flat):
        if delta is not None and v == 0:  # ε(0) is the largest privacy loss, exactly
            low = None if top is None else _zero_delta(specs, lower=True)[0]
            out[:, i] = _INF_BRACKET if top is None else (float_down(low), float_up(top), float_up(top))
        elif delta is None and top is not None and at_least(float(v), top):  # ε >= every loss: δ = 0
            out[:, i] = 0.0
        elif delta is not None:
            out[:, i] = _in_range(
                "these mechanisms", lambda v=float(v): _eps_worst(dirs, v, eps_error, memory_cap)
            )
        else:
            out[:, i] = _in_range(
                "these mechanisms",
                lambda v=float(v): _worst([fn(d, v, eps_error, memory_cap) for d in dirs]),
            )
    if upper_only:
        if delta is not None and not np.all(np.isfinite(out[2]) | (vals.ravel() == 0)):  # (δ = 0: ε = ∞)
            raise _floor_refusal("compose", "random-allocation", RDP_HINT)
        out[0] = np.nan
    if vals.ndim == 0:
        return Bracket(float(out[0, 0]), float(out[1, 0]), float(out[2, 0]))
    return Bracket(*(o.reshape(vals.shape) for o in out))
