"""What a mechanism module declares: its spec keys and the privacy descriptions every accountant reads.

A kind of mechanism is one module in this package that defines ``MECHANISM``, an instance of a
:class:`Mechanism` subclass.  It states, in one place:

* its MECHANISM-spec grammar (``kind``, kind ``aliases``, ``keys`` with domains, defaults and key
  aliases, keys of which exactly ``one_of`` must be given) — read by :mod:`dpcalc.input.spec`;
* its Rényi-DP curve per release (:meth:`Mechanism.rdp`) — read by ``compose --method rdp``,
  ``odometer`` and the ledger;
* its privacy-loss-distribution pair (:meth:`Mechanism.pld_pair`: the pessimistic and optimistic
  discretisations are built from it by :mod:`dpcalc.engine.pld`) — read by ``compose --method pld``;
* its per-release (ε, δ) where it has one (:meth:`Mechanism.per_release`) — read by the basic,
  advanced and optimal composition theorems;
* its largest privacy loss where that is bounded (:meth:`Mechanism.max_loss`, its pure ε) — read at
  δ = 0 by ``compose`` and the PLD accountant;
* whether it is a plain Gaussian (:meth:`Mechanism.gaussian_ratio`, for the exact Gaussian profile)
  and which neighbouring relation it fixes (:meth:`Mechanism.relation`).

Every kind that does not declare ``q`` itself also takes :data:`SUBSAMPLING_KEYS` (``q``, ``sampling``):
such a spec is answered by :class:`dpcalc.engine.mechanisms.subsampling.Subsampled` around the kind
(docs/math.md §2.11), which may use the kind's own :meth:`Mechanism.subsampled_rdp` and
:meth:`Mechanism.subsampled_pld_pair` where it has them.

:mod:`dpcalc.engine.mechanisms.catalogue` collects the modules (like dp_accounting's ``DpEvent``, read
by each accountant).  Adding a mechanism is one module here and its tests.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from dpcalc.errors import InputError
from dpcalc.lazy import lazy_module

# exact arithmetic, only for the specs and group sizes that ask for it (one DP-SGD query does not)
_decimal = lazy_module("decimal")
_fractions = lazy_module("fractions")

_EPS = float(np.finfo(float).eps)

#: Domains a key's value may be checked against (by :mod:`dpcalc.input.spec`), and how they read in errors.
DOMAINS = {
    "pos": "a finite number > 0",
    "nonneg": "a finite number >= 0",
    "q": "a number in (0, 1]",
    "p": "a number in (1/2, 1)",
    "delta": "a number in [0, 1)",
    "path": "a file path (relative to the current directory)",
    "list": "finite numbers separated by '|' (e.g. 0|1|2)",
}


@dataclass(frozen=True)
class Key:
    """One key of a spec: its canonical ``name``, its domain ``check`` (a key of :data:`DOMAINS`, or
    ``"choice"`` with ``choices``; ``"path"`` keeps the text as given), its ``default`` (``None``: required unless in a one-of group
    or ``optional``) and the other spellings it accepts (``aliases``)."""

    name: str
    check: str
    default: object = None
    aliases: tuple[str, ...] = ()
    choices: tuple[str, ...] = ()
    #: an optional key with no default: ``None`` when left out (and then left out of labels)
    optional: bool = False


#: The keys every kind takes for subsampling unless it declares its own ``q`` (docs/math.md §2.11;
#: :mod:`dpcalc.engine.mechanisms.subsampling`).  ``sampling`` is only allowed with ``q``.
SUBSAMPLING_KEYS = (
    Key("q", "q", aliases=("sample_rate", "sample-rate")),
    Key("sampling", "choice", "poisson", choices=("poisson", "fixed-size")),
)


def check_alphas(alphas) -> np.ndarray:
    """Rényi orders as a 1-D float array (all >= 1)."""
    a = np.atleast_1d(np.asarray(alphas, dtype=float))
    if a.ndim != 1 or np.any(np.isnan(a)) or np.any(a < 1):
        raise InputError("alphas: Rényi orders must be >= 1")
    return a


def decimal(x) -> _fractions.Fraction:
    """The number a double was written as: its shortest decimal (``0.1`` for the double nearest 0.1), exactly."""
    return _fractions.Fraction(_decimal.Decimal(repr(float(x))))


def up(value, scale):
    """``value`` raised by 16 ulps of ``scale`` (safe-side rounding of a closed form)."""
    return value + 16.0 * _EPS * np.abs(scale)


def whole(params: dict, given: dict, fail, name: str, top: int, top_text: str) -> int:
    """``params[name]`` as an int, after checking it is a whole number in ``[1, top]`` (``fail`` otherwise,
    quoting the value as given and the range as ``[1, top_text]``)."""
    v = params[name]
    if not (float(v).is_integer() and 1 <= v <= top):
        fail(f"bad value {name}={given.get(name, v)!r} (must be a whole number in [1, {top_text}])")
    return int(v)


class Mechanism:
    """A kind of mechanism (see the module docstring).  Subclasses set the class attributes and
    override the methods that apply; the defaults say "not available" with a reason."""

    #: canonical kind name, as written in specs and shown in labels
    kind: str = ""
    #: other names of the kind
    aliases: tuple[str, ...] = ()
    #: the keys besides ``count``, in canonical order
    keys: tuple[Key, ...] = ()
    #: keys of which exactly one must be given
    one_of: tuple[str, ...] = ()
    #: the keys a label shows (default: all)
    label_keys: tuple[str, ...] | None = None
    #: place in listings (error messages, help): smaller first
    order: int = 100
    #: the key ``compose`` solves for when a spec leaves it out (``--epsilon`` with ``--delta``), and its
    #: direction: ``+1`` when a larger value is more private (a noise scale), ``-1`` when a smaller one is
    #: (a per-release ε); ``None``: nothing to calibrate
    noise: tuple[str, int] | None = None

    def complete(self, params: dict, given: dict, fail) -> dict:
        """Derived parameters after parsing (``given``: the raw texts; ``fail(msg)`` raises)."""
        return params

    def rdp(self, params: dict, alphas: np.ndarray) -> np.ndarray:
        """The Rényi-DP curve of one release at the orders ``alphas`` (an upper bound, ``inf`` where the
        divergence is unbounded).  Only called when :meth:`rdp_refusal` is ``None``."""
        raise NotImplementedError

    def rdp_refusal(self, params: dict) -> str | None:
        """Why this mechanism has no Rényi-DP curve (completing "<spec> ..."), or ``None``."""
        return None

    def pld_pair(self, params: dict):
        """``(model, model_other_direction_or_None)``: the privacy loss models of the dominating pair
        (:class:`dpcalc.engine.mechanisms.loss_models.LossModel`), the second ``None`` when the pair is
        symmetric; ``None`` when this kind has no privacy loss distribution here.  Raises
        :class:`InputError` for settings it does not cover."""
        return None

    def pld_dominated(self, params: dict) -> str | None:
        """Where :meth:`pld_pair`'s models only dominate the mechanism (``dominates_only``: a pair no instance
        of it attains, so a PLD bracket's lower end and estimate are of the models, not of the mechanism),
        what they are, for a row's note; None where the pair is the mechanism's own (attained)."""
        return None

    def per_release(self, params: dict):
        """``((ε, δ), None)`` for one release where the mechanism has a natural (ε, δ), else ``(None, reason)``.

        Gaussian-type mechanisms have no pure ε, and any (ε, δ) for them would be a choice of δ split;
        we do not make that choice silently.
        """
        return None, f"{self.kind} has no per-release (epsilon, delta); give it as a dp: spec"

    def max_loss(self, params: dict):
        """``((lower, upper), None)``: the largest privacy loss of one release (its pure ε, the ess sup of the
        loss of its dominating pair, D_∞) lies in ``[lower, upper]``, exact fractions
        (equal where it is known exactly); or ``(None, reason)`` where the loss is unbounded, so that no
        finite ε holds at δ = 0 (docs/math.md §2.7).  The default says unbounded: a kind claims a bound
        only by overriding this."""
        return None, f"the privacy loss of {self.kind} is unbounded"

    def gaussian_ratio(self, params: dict) -> float | None:
        """``Δ/σ`` if one release is a plain Gaussian mechanism (exact profile: Balle & Wang 2018), else ``None``."""
        return None

    def subsampled_rdp(self, params: dict, q: float, sampling: str, alphas):
        """This kind's own RDP curve on a subsample (rate ``q``, ``sampling`` poisson or fixed-size), or
        ``None`` to use the generic amplification bounds of :mod:`dpcalc.engine.mechanisms.subsampling`."""
        return None

    def subsampled_pld_pair(self, params: dict, q: float):
        """This kind's own pair of loss models under Poisson subsampling at rate ``q`` < 1, or ``None``
        for the generic transform of :mod:`dpcalc.engine.mechanisms.subsampling_pld`."""
        return None

    def relation(self, params: dict) -> str | None:
        """The neighbouring relation this mechanism's analysis fixes (e.g. by its sampling), or ``None``
        when it holds for whichever relation the sensitivity was computed under."""
        return None
