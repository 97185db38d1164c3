"""The catalogue of mechanisms, and the accountants' questions asked of any spec.

Each module named in :data:`KIND_MODULES` defines one kind, ``MECHANISM`` (a
:class:`~dpcalc.engine.mechanisms.base.Mechanism`); :data:`CATALOGUE` maps each kind name to it, in
their ``order``.  The spec parser
(:mod:`dpcalc.input.spec`), ``compose``, ``odometer`` and the accountants all read this one catalogue.

Questions of a parsed spec (:class:`dpcalc.input.spec.MechanismSpec`: ``kind``, ``params``, ``count``):

* :func:`rdp_curve` / :func:`total_rdp` — the Rényi-DP curve of ``count`` releases, and of several specs
  (composition adds curves: Mironov 2017, arXiv:1702.07476, Prop. 1; docs/math.md §2.4);
* :func:`per_release_dp` — the (ε, δ) of one release, where it has one;
* :func:`max_loss` — the largest privacy loss of a composition (the sum of its releases' pure ε, exactly),
  where every release's loss is bounded: its ε at δ = 0 (docs/math.md §2.7);
* :func:`gaussian_r2` — ``Σ count·(Δ/σ)²`` of an all-Gaussian composition (one Gaussian with
  ``r = sqrt(r2)``, docs/math.md §2.6), else ``None``;
* :func:`pld_pair` — the privacy loss models of one release (see :mod:`dpcalc.engine.pld`).

Values are upper bounds: closed forms are evaluated in log space and raised by a few ulps of their own
magnitude, so floating-point rounding never lowers a curve.
"""

from __future__ import annotations

import importlib
import math
from fractions import Fraction

import numpy as np

from dpcalc.engine.mechanisms.base import _EPS, Mechanism, check_alphas, up
from dpcalc.engine.mechanisms.group import GROUP_KEY, Grouped
from dpcalc.engine.mechanisms.subsampling import Subsampled
from dpcalc.errors import InputError

#: The modules of this package that each define one kind (``MECHANISM``).  A new mechanism is a new
#: module here, named in this list, and its tests.
KIND_MODULES = (
    "gaussian",
    "discrete_gaussian",
    "laplace",
    "discrete_laplace",
    "randomized_response",
    "exponential",
    "subsampled_gaussian",
    "mixture_gaussian",
    "allocation_round",
    "tree_aggregation",
    "zcdp",
    "rdp_curve",
    "approx_dp",
)


def _load() -> dict[str, Mechanism]:
    found = []
    for name in KIND_MODULES:
        mech = importlib.import_module(f"dpcalc.engine.mechanisms.{name}").MECHANISM
        if not isinstance(mech, Mechanism):  # pragma: no cover - a programming error
            raise TypeError(f"dpcalc.engine.mechanisms.{name}.MECHANISM is not a Mechanism")
        found.append(mech)
    found.sort(key=lambda m: (m.order, m.kind))
    return {m.kind: m for m in found}


#: Kind name -> its :class:`Mechanism`, in listing order.
CATALOGUE: dict[str, Mechanism] = _load()
#: Other name of a kind -> the kind.
KIND_ALIASES: dict[str, str] = {a: m.kind for m in CATALOGUE.values() for a in m.aliases}


def lookup(kind: str) -> Mechanism | None:
    """The mechanism of a kind name or alias (case-insensitive), or ``None``."""
    k = kind.strip().lower()
    return CATALOGUE.get(KIND_ALIASES.get(k, k))


def mechanism(kind: str, params: dict) -> Mechanism:
    """The mechanism answering a parsed spec: the kind's own, or, where the spec gives ``q`` for a kind
    that does not declare it, that kind on a random subsample
    (:class:`~dpcalc.engine.mechanisms.subsampling.Subsampled`, docs/math.md §2.11); where the params hold
    ``group_size``, that mechanism for a person with so many examples by the generic group routes
    (:class:`~dpcalc.engine.mechanisms.group.Grouped`, docs/math.md §2.15)."""
    if params.get(GROUP_KEY) is not None:
        return Grouped(mechanism(kind, {k: v for k, v in params.items() if k != GROUP_KEY}))
    mech = CATALOGUE[kind]
    if params.get("q") is not None and "q" not in {k.name for k in mech.keys}:
        return Subsampled(mech)
    return mech


def rdp_curve(spec, alphas) -> np.ndarray:
    """The total RDP curve of ``spec.count`` copies of one mechanism, shape ``(len(alphas),)``.

    ``inf`` where the divergence is unbounded; :class:`~dpcalc.errors.InputError` where the mechanism
    has no RDP curve (``dp`` specs with δ > 0, docs/math.md §1.4).
    """
    a = check_alphas(alphas)
    mech = mechanism(spec.kind, spec.params)
    refusal = mech.rdp_refusal(spec.params)
    if refusal is not None:
        raise InputError(f"mechanism {spec.text!r} {refusal}")
    z = mech.rdp(spec.params, a)
    with np.errstate(invalid="ignore", over="ignore"):
        total = np.where(z == 0, 0.0, z * spec.count)
    return up(total, total) if spec.count > 1 else total


def rdp_refusal(spec) -> str | None:
    """Why a spec has no RDP curve (``"<spec> has ..."``), or ``None``."""
    refusal = mechanism(spec.kind, spec.params).rdp_refusal(spec.params)
    return None if refusal is None else f"{spec.text} {refusal}"


def total_rdp(specs, alphas) -> np.ndarray:
    """``Σ_j rdp_curve(spec_j, alphas)`` (docs/math.md §2.4)."""
    a = check_alphas(alphas)
    total = np.zeros_like(a)
    for s in specs:  # a loop over mechanisms, not over rows
        total = total + rdp_curve(s, a)
    return up(total, total) if len(specs) > 1 else total


#: Most distinct subsampled specs (``q`` given, or a subsampled kind) in one Rényi curve: each computes its
#: own amplified curve over the orders (series and quadrature, some 10–30 ms), where a plain kind is a closed form.
MAX_RDP_SUBSAMPLED = 256
_SUBSAMPLED_KINDS = ("subsampled-gaussian", "random-allocation")


def rdp_work_refusal(specs) -> str | None:
    """Why the Rényi curve of ``specs`` is refused as too much work (``"MECHANISM: ..."``), or ``None``."""
    n = sum(1 for s in specs if s.params.get("q") is not None or s.kind in _SUBSAMPLED_KINDS)
    if n <= MAX_RDP_SUBSAMPLED:
        return None
    return (
        f"MECHANISM: {n} distinct subsampled specs (after merging identical ones), above the limit of "
        f"{MAX_RDP_SUBSAMPLED} for one Rényi curve (each computes its own amplified curve)"
    )


def per_release_dp(spec):
    """``((ε, δ), None)`` for one release of a mechanism with a natural (ε, δ), else ``(None, reason)``."""
    return mechanism(spec.kind, spec.params).per_release(spec.params)


def max_loss(specs, lower=False):
    """``(total, None)``: ``Σ count·(largest loss of one release)``, the largest privacy loss of the
    composition (the ess sup of a sum of independent losses is the sum of their ess sups), i.e. its ε at
    δ = 0 (Dwork & Roth 2014, Thm 3.16 for the bound; tight for the dominating pairs), as an exact
    :class:`fractions.Fraction` never below it (``lower=True``: never above it); or ``(None, reason)``
    naming the first spec whose loss is unbounded, where no finite ε holds at δ = 0."""
    total = Fraction(0)
    for s in specs:
        bounds, reason = mechanism(s.kind, s.params).max_loss(s.params)
        if bounds is None:
            return None, f"{reason} ({s.text or s.label()})"
        total += s.count * bounds[0 if lower else 1]
    return total, None


def float_up(x) -> float:
    """The smallest double >= the exact number ``x`` (a Fraction); ``inf`` past double range."""
    try:
        f = float(x)
    except OverflowError:
        return math.inf
    return f if f >= x else float(np.nextafter(f, np.inf))


def float_down(x) -> float:
    """The largest double <= the exact number ``x`` (a Fraction); the largest finite double past range."""
    try:
        f = float(x)
    except OverflowError:
        return float(np.finfo(float).max)
    return f if f <= x else float(np.nextafter(f, -np.inf))


def gaussian_r2(specs):
    """``Σ count·(Δ/σ)²`` if every spec is a plain Gaussian (one Gaussian with r = sqrt of it), else ``None``."""
    ratios = [mechanism(s.kind, s.params).gaussian_ratio(s.params) for s in specs]
    if any(r is None for r in ratios):
        return None
    r2 = 0.0
    for s, r in zip(specs, ratios):
        r2 += s.count * (r * r)  # inf past double range (r**2 would raise)
    return r2 * (1.0 + 8.0 * _EPS * len(specs))


def relations(specs) -> set:
    """The neighbouring relations the specs fix (e.g. ``{"poisson"}`` for Poisson-subsampled Gaussians)."""
    return {r for s in specs if (r := mechanism(s.kind, s.params).relation(s.params)) is not None}


def pld_pair(kind: str, params: dict):
    """``(model, other_direction_or_None)`` for one release, or ``None`` if the kind has no PLD here."""
    mech = lookup(kind)
    return None if mech is None else mechanism(mech.kind, params).pld_pair(params)
