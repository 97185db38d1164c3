"""The certified bracket of a privacy loss distribution question, and what the PLD accountants share.

Every answer is a :class:`Bracket` ``(lower, estimate, upper)``.  What is guaranteed (details in
:mod:`dpcalc.engine.pld.epsilon`): ``lower <= ε(δ) <= upper`` for the exact privacy profile of the
composition (likewise for δ(ε)).  The upper end comes from a pessimistic ("connect-the-dots")
discretisation whose discrete pair dominates the true pair (Doroshenko et al. 2022), composed by FFT
with truncation and wrap-around bounded by Chernoff bounds and FFT round-off bounded by an
a-posteriori noise-floor estimate (Koskela et al. 2020; Gopi, Lee & Wutschitz 2021 for the error
budget); the lower end uses a Hoeffding coupling of the same discretisation.  The estimate is the
centred (mean-shift corrected) value and lies inside the bracket.  Exponential tilting lets δ go
down to 1e-300 (see :mod:`dpcalc.engine.pld.convolution`).

A pair is given by its directions (lists of components, docs/math.md §0); its bracket is that of the
worse direction (:func:`_eps_worst`, :func:`_delta_worst`, :func:`_delta_worst_at`).  Where a component's
loss model only dominates its pair (:attr:`~dpcalc.engine.mechanisms.loss_models.LossModel.dominates_only`, as random allocation's
rounds, docs/math.md §3.10), the lower end bounds the models, not the true profile: the pair's bracket then
has no lower end (nan).

The accountants built on this: DP-SGD's (:mod:`dpcalc.engine.dpsgd.pld_accounting`) and the composition of
catalogue mechanisms (:mod:`dpcalc.engine.composition.pld`).
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

from dpcalc.engine._numerics import require
from dpcalc.engine.pld.delta import delta_bracket
from dpcalc.engine.pld.epsilon import epsilon_bracket
from dpcalc.engine.pld.grid import RDP_HINT
from dpcalc.engine.pld.profile import delta_brackets
from dpcalc.errors import InputError, UncertifiedError

#: Largest number of compositions accepted per mechanism.
MAX_COUNT = 10**8


class Bracket(NamedTuple):
    """A certified bracket: ``lower <= true value <= upper`` and an ``estimate`` in between."""

    lower: object
    estimate: object
    upper: object


def _check_delta(delta, name="--delta"):
    """δ in [0, 1): δ = 0 asks for the largest privacy loss (see :func:`dpcalc.engine.composition.pld._zero_delta`)."""
    return require(
        delta, lambda d: (d >= 0) & (d < 1), f"{name}: must lie in [0, 1)", show=lambda v: f"{v:g}"
    )


_INF_BRACKET = (math.inf, math.inf, math.inf)


def _unbounded(dirs) -> bool:
    """Whether some direction's composed loss is unbounded (a mass at +∞, or an unbounded largest loss)."""
    return any(c.model.inf_mass > 0 or not math.isfinite(c.model.loss_max) for d in dirs for c in d)


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


def dominates_only(dirs) -> bool:
    """Whether some component of the directions ``dirs`` has a loss model that only dominates its pair
    (:attr:`~dpcalc.engine.mechanisms.loss_models.LossModel.dominates_only`): then a lower end bounds the
    models, not the mechanism."""
    return any(c.model.dominates_only for d in dirs for c in d)


def _pair(dirs, bracket) -> tuple:
    """``bracket`` as the pair's answer: no lower end (nan) where a model only dominates its pair
    (:func:`dominates_only`; random allocation's rounds, docs/math.md §3.10)."""
    if not dominates_only(dirs):
        return tuple(bracket)
    lower, estimate, upper = bracket
    return (np.full(np.shape(lower), np.nan) if np.ndim(lower) else math.nan), estimate, upper


def _worst(brackets) -> tuple:
    return tuple(max(b[i] for b in brackets) for i in range(3))


def _eps_worst(dirs, delta, eps_error, memory_cap) -> tuple:
    """ε bracket of the worse direction; a direction whose upper end falls below the lower end of
    one already computed cannot change the answer, so it is not refined further."""
    out = []
    for d in dirs:
        below = max(b[0] for b in out) if out else None
        out.append(epsilon_bracket(d, delta, eps_error, memory_cap, below=below))
    return _pair(dirs, _worst(out))


def _delta_worst(dirs, eps, eps_error, memory_cap, key=None) -> tuple:
    """δ brackets (arrays) of the worse direction at an array of ε, one composition per direction
    (:func:`~dpcalc.engine.pld.profile.delta_brackets`); a later direction's bracket whose upper end is
    below the lower end found so far cannot change the worst, so it need not be tight."""
    out = []
    for d in dirs:
        below = np.max([b[0] for b in out], axis=0) if out else None
        k = None if key is None else (key, len(out))
        out.append(delta_brackets(d, eps, eps_error, memory_cap, below=below, key=k))
    return _pair(dirs, tuple(np.max([b[i] for b in out], axis=0) for i in range(3)))


def _delta_worst_at(dirs, eps: float, eps_error, memory_cap) -> tuple:
    """δ bracket of the worse direction at one ε (each direction on a grid of its own)."""
    return _pair(dirs, _worst([delta_bracket(d, eps, eps_error, memory_cap) for d in dirs]))


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


def _floor_refusal(what: str, rounds: str, hint: str) -> InputError:
    """The refusal of a δ at or below the certified round-off and tail mass of random-allocation rounds."""
    return InputError(
        f"{what}: the {rounds} rounds' certified round-off and tail mass reach this δ; use a larger --delta or "
        f"{hint}"
    )
