"""The tight accountant of a composition of catalogue mechanisms: privacy loss distributions (PLD).

* :func:`compose_pld` — heterogeneous lists of mechanisms (gaussian, laplace, randomized-response, dp,
  subsampled-gaussian, …: every kind whose :func:`~dpcalc.engine.mechanisms.catalogue.pld_pair` is
  offered), each with a count; ``MechanismSpec`` objects from :mod:`dpcalc.input.spec`, or
  ``(kind, params, count)`` tuples / dicts.
* :func:`calibrate_compose_pld` — the smallest σ (or the extreme value of another parameter) whose
  certified ε meets a target (docs/math.md §7), by the search of :mod:`dpcalc.engine.pld.search`.

Every answer is a :class:`~dpcalc.engine.pld.bracket.Bracket` ``(lower, estimate, upper)``
(:mod:`dpcalc.engine.pld.bracket` says what is guaranteed).  Reference formulas: docs/math.md §0
(hockey-stick divergence, neighbouring relations), §2.7 (the largest privacy loss, ε at δ = 0); many ε share
one composition per direction (:mod:`dpcalc.engine.pld.profile`, docs/math.md §7.7).
"""

from __future__ import annotations

import math
from types import SimpleNamespace

import numpy as np

from dpcalc.engine.composition.merge import Merged, merge_exact
from dpcalc.engine.composition.theorems import at_least
from dpcalc.engine.mechanisms.catalogue import float_down, float_up, lookup, max_loss, pld_pair
from dpcalc.engine.mechanisms.loss_models import approx_dp
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
    dominates_only,
)
from dpcalc.engine.pld.grid import DEFAULT_MEMORY_CAP, RDP_HINT, Component
from dpcalc.engine.pld.search import SIGMA_RANGE, _answer, _check_target, _held, _search
from dpcalc.errors import InputError

#: Most distinct mechanisms in one composition (after :func:`~dpcalc.engine.composition.merge.merge_exact`):
#: each costs its own grid, cumulant evaluations and transform in every attempt (about 0.1–0.5 s each).
MAX_MECHANISMS = 16


def _zero_delta(specs, lower=False):
    """ε at δ = 0 of a list of mechanisms: the largest privacy loss of the composition, ``Σ count·ε_j``
    (the ess sup of a sum of independent losses is the sum of their ess sups, so this is exact for the
    dominating pairs; Dwork & Roth 2014, Thm 3.16 for the bound; docs/math.md §2.7), as ``(total, None)``
    with ``total`` an exact Fraction never below it (``lower=True``: never above it), or ``(None, reason)``
    where some loss is unbounded: ε = ∞."""
    canon = []
    for spec in specs:  # the fields max_loss reads (the engine does not import the spec parser above it)
        kind, params, count, text = _spec_fields(spec)
        canon.append(
            SimpleNamespace(kind=lookup(kind).kind, params=params, count=int(count), text=text or kind)
        )
    return max_loss(canon, lower)


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


def _merged(specs) -> list:
    """``specs`` as :class:`~dpcalc.engine.composition.merge.Merged` records, identical releases and plain
    Gaussians merged exactly; refused above :data:`MAX_MECHANISMS` distinct ones."""
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
    eps_error = _check_eps_error(eps_error)
    specs = _merged(specs)
    items = _in_range("these mechanisms", lambda: [_models(s) for s in specs])
    dirs = _directions(specs, items)
    if delta is not None:
        vals = _check_delta(delta)
    else:
        vals = _check_eps(epsilon)
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
            out[:, i] = _pair(
                dirs, _INF_BRACKET if top is None else (float_down(low), float_up(top), float_up(top))
            )
        elif delta is None and top is not None and at_least(float(v), top):  # ε >= every loss: δ = 0
            out[:, i] = 0.0
        elif delta is not None:
            out[:, i] = _in_range(
                "these mechanisms", lambda v=float(v): _eps_worst(dirs, v, eps_error, memory_cap)
            )
        else:
            out[:, i] = _in_range(
                "these mechanisms",
                lambda v=float(v): _delta_worst_at(dirs, v, eps_error, memory_cap),
            )
    # models that only dominate their pair (random allocation's rounds) count their neglected mass at +∞:
    # an infinite upper end means that mass reaches δ, a refusal (at δ = 0, ε = ∞ is the answer)
    finite = np.isfinite(out[2]) | (vals.ravel() == 0)
    if delta is not None and dominates_only(dirs) and not np.all(finite):
        raise _floor_refusal("compose", "random-allocation", RDP_HINT)
    if dominates_only(dirs):  # the models only dominate the composition: its estimate is theirs too
        out[1] = np.nan
    if vals.ndim == 0:
        return Bracket(float(out[0, 0]), float(out[1, 0]), float(out[2, 0]))
    return Bracket(*(o.reshape(vals.shape) for o in out))


def calibrate_compose_pld(
    fill, delta, target, *, rtol=1e-4, eps_error=None, start=1.0, ok_above=True, lo=None, hi=None
):
    """Smallest σ (within a factor 1 + rtol) such that the PLD upper ε(δ) of the composition
    ``fill(σ)`` (a list of mechanism specs, the σ put into the spec or specs that left it out) is at
    or below ``target``.  Returns ``(sigma, lower, estimate, upper)``; σ = inf where no σ up to 1e12
    meets the target.

    Any other parameter the privacy grows with (a Laplace scale) is searched the same way; with
    ``ok_above=False`` (a per-release ε: smaller is more private) the *largest* value in ``[lo, hi]``
    is returned, and 0 where none meets the target."""
    _check_target(target)
    lo = SIGMA_RANGE[0] if lo is None else lo
    hi = SIGMA_RANGE[1] if hi is None else hi

    def make(err):
        return lambda sigma: _held(lambda: compose_pld(fill(sigma), delta=delta, eps_error=err))

    found = _search(make, eps_error, target, start, ok_above=ok_above, lo=lo, hi=hi, rtol=rtol)
    return _answer((math.inf if ok_above else 0.0) if found.x is None else found.x, found)
