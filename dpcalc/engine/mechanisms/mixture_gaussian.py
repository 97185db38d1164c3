"""The mixture-of-Gaussians mechanism: on D it outputs ``Σ_i p_i N(c_i, σ²)``, on its neighbour ``N(0, σ²)``
(docs/math.md §2.14; dp_accounting's ``MixtureOfGaussiansDpEvent``).

Specs (kind aliases ``mog``, ``mixture-of-gaussians``)::

    mixture-gaussian:sigma=S,sensitivities=C1|C2|...,probs=P1|P2|...[,q=Q]
    mixture-gaussian:sigma=S,group=K,q=Q

The first form gives the mixture itself (``sensitivities`` alias ``sens``; ``probs`` alias
``probabilities``, ``sampling_probs``): sensitivities ``>= 0``, probabilities ``>= 0`` summing to 1 within
:data:`PROB_TOLERANCE` (then divided by their sum), at most :data:`MAX_COMPONENTS`; with ``q=Q`` the
mechanism runs on a Poisson subsample of rate Q (the mixture ``(1−Q)N(0, σ²) + Q·Σ p_i N(c_i, σ²)``, as
``q`` means for every kind, docs/math.md §2.11).  The second form is one step of DP-SGD for a user who
contributed ``K`` examples (``group`` alias ``examples``), each sampled independently with probability
``Q`` (Poisson sampling; clipping norm 1): ``c_i = i``, ``p_i = C(K, i) Q^i (1−Q)^{K−i}`` (Ganesh 2024,
arXiv:2401.10294, Thm 3.1).  ``group=1`` is the subsampled Gaussian.  This kind declares ``q`` itself, so
the generic subsampling of §2.11 does not wrap it.

Neighbours: add/remove-one (the mixture is the remove direction; the add direction is the swap), as the
Poisson-subsampled Gaussian.  Rényi DP: :mod:`~dpcalc.engine.mechanisms.mixture_gaussian_rdp` (its
certified quadrature: :mod:`~dpcalc.engine.mechanisms.mixture_gaussian_quad`); privacy loss:
:mod:`~dpcalc.engine.mechanisms.mixture_gaussian_loss` (both directions).  A single component is the
Gaussian mechanism with that sensitivity.
"""

from __future__ import annotations

import math

import numpy as np

from dpcalc.engine.mechanisms.base import Key, Mechanism, whole
from dpcalc.engine.mechanisms.gaussian_loss import gaussian_loss
from dpcalc.engine.mechanisms.mixture_gaussian_loss import mixture_loss
from dpcalc.engine.mechanisms.mixture_gaussian_rdp import rdp_mixture
from dpcalc.engine.mechanisms.mixture_gaussian_terms import MixtureTerms
from dpcalc.errors import InputError

#: The most components a mixture may have (``group`` at most one less).
MAX_COMPONENTS = 1000
#: How far from 1 the probabilities may sum (they are then divided by their sum).
PROB_TOLERANCE = 1e-9


def _entries(value) -> list[float]:
    """A list key's value (canonical ``a|b|c`` text from the parser, or a sequence from a library call)."""
    if isinstance(value, str):
        return [float(v) for v in value.split("|")]
    return [float(v) for v in np.atleast_1d(np.asarray(value, dtype=float))]


def _raise(msg: str):
    raise InputError(f"mixture-gaussian: {msg}")


def binomial_weights(k: int, q: float) -> list[float]:
    """``C(k, i) q^i (1−q)^{k−i}`` for ``i = 0..k``, in log space."""
    if q == 1.0:
        return [0.0] * k + [1.0]
    lq, l1q = math.log(q), math.log1p(-q)
    lg = math.lgamma(k + 1)
    return [
        math.exp(lg - math.lgamma(i + 1) - math.lgamma(k - i + 1) + i * lq + (k - i) * l1q)
        for i in range(k + 1)
    ]


def components(params: dict, given: dict | None = None, fail=_raise) -> tuple[list[float], list[float]]:
    """The mixture of a spec's parameters: ``(sensitivities, probabilities)``, the probabilities summing to 1
    (``q`` applied).  ``fail(msg)`` raises, naming the key and the entry at fault."""
    given = given or {}
    q = params.get("q")
    if params.get("group") is not None:
        k = whole(params, given, fail, "group", MAX_COMPONENTS - 1, str(MAX_COMPONENTS - 1))
        return [float(i) for i in range(k + 1)], binomial_weights(k, float(q))

    def raw(name):
        return given.get(
            name,
            params[name] if isinstance(params[name], str) else "|".join(map(repr, _entries(params[name]))),
        )

    sens, probs = _entries(params["sensitivities"]), _entries(params["probs"])
    if len(sens) > MAX_COMPONENTS or len(probs) > MAX_COMPONENTS:
        name = "sensitivities" if len(sens) > MAX_COMPONENTS else "probs"
        n = max(len(sens), len(probs))
        fail(f"key {name!r} has {n} entries, above the limit of {MAX_COMPONENTS} components")
    if len(sens) != len(probs):
        fail(
            f"sensitivities has {len(sens)} entries and probs has {len(probs)}: give one probability per sensitivity"
        )
    for name, vals in (("sensitivities", sens), ("probs", probs)):
        for i, v in enumerate(vals, start=1):
            if not math.isfinite(v):
                fail(f"bad value {name}={raw(name)!r} (entry {i}, {v!r}, is not a finite number)")
            if v < 0:
                fail(f"bad value {name}={raw(name)!r} (entry {i}, {v!r}, is negative; must be >= 0)")
            if name == "probs" and v > 1:
                fail(f"bad value probs={raw(name)!r} (entry {i}, {v!r}, is above 1)")
    total = math.fsum(probs)
    if not abs(total - 1.0) <= PROB_TOLERANCE:
        fail(
            f"bad value probs={raw('probs')!r} (the probabilities sum to {total!r}, not 1 within {PROB_TOLERANCE:g})"
        )
    probs = [p / total for p in probs]
    if not any(c > 0 and p > 0 for c, p in zip(sens, probs)):
        fail(
            "no component has sensitivity > 0 and probability > 0 (the two outputs would be the same "
            "distribution): give at least one"
        )
    if q is not None and q < 1.0:
        sens = [0.0, *sens]
        probs = [1.0 - q, *(q * p for p in probs)]
    return sens, probs


def terms_of(params: dict) -> MixtureTerms:
    """The :class:`MixtureTerms` of a spec's parameters (σ and the mixture)."""
    c, p = components(params)
    return MixtureTerms(params["sigma"], c, p)


class MixtureGaussian(Mechanism):
    noise = ("sigma", 1)
    kind = "mixture-gaussian"
    aliases = ("mog", "mixture-of-gaussians")
    keys = (
        Key("sigma", "pos", aliases=("noise_multiplier", "noise-multiplier", "standard_deviation")),
        Key("sensitivities", "list", aliases=("sens",), optional=True),
        Key("probs", "list", aliases=("probabilities", "sampling_probs"), optional=True),
        Key("group", "pos", aliases=("examples",), optional=True),
        Key("q", "q", aliases=("sample_rate", "sample-rate"), optional=True),
    )
    order = 42

    def complete(self, params, given, fail):
        explicit = [k for k in ("sensitivities", "probs") if k in params]
        if explicit and "group" in params:
            fail(f"keys {explicit[0]} and group both given (give sensitivities and probs, or group and q)")
        if not explicit and "group" not in params:
            fail("missing keys: give sensitivities=C1|C2|...,probs=P1|P2|... (or group=K,q=Q)")
        if len(explicit) == 1:
            other = "probs=P1|P2|..." if explicit[0] == "sensitivities" else "sensitivities=C1|C2|..."
            fail(f"key {explicit[0]!r} needs {other} (one probability per sensitivity)")
        if "group" in params and "q" not in params:
            fail("key 'group' needs q=Q (the probability with which each of the group's examples is sampled)")
        components(params, given, fail)
        return params

    def _single(self, params):
        c, p = components(params)
        live = [x for x, w in zip(c, p) if w > 0]
        return live[0] if len(live) == 1 else None

    def rdp(self, params, alphas):
        return rdp_mixture(terms_of(params), alphas).reshape(np.shape(alphas))

    def pld_pair(self, params):
        single = self._single(params)
        if single is not None:
            return gaussian_loss(params["sigma"], single), None
        t = terms_of(params)
        return mixture_loss(t, "remove"), mixture_loss(t, "add")

    def gaussian_ratio(self, params):
        single = self._single(params)
        return None if single is None else single / params["sigma"]

    def relation(self, params):
        return None if self._single(params) is not None else "poisson"

    def max_loss(self, params):
        return None, "the mixture of Gaussians' privacy loss is unbounded"


MECHANISM = MixtureGaussian()
