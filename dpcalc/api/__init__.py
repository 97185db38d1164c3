"""dpcalc as a Python library: the questions of the command line, as functions on arrays.

A small, stable facade over :mod:`dpcalc.engine` (numpy and scipy only; nothing here prints).  Every
function broadcasts its numeric arguments (scalars or numpy arrays).  Every function that answers a
privacy question returns a :class:`Bound` whose ``value`` is certified and rounded to the safe side:
an upper bound on ε, δ or a true-positive rate; for an inverse question, a parameter that provably
meets the target (the noise multiplier, the number of steps or the sample rate of a DP-SGD run,
the Rényi level that certifies (ε, δ)).  ``lower`` and ``estimate`` are filled in where the method
brackets the exact value (privacy loss distributions), and ``alpha`` is the Rényi order that attains
an RDP-based bound.  :func:`rdp_curve` returns a Rényi curve (an array) and :func:`mechanism` a parsed
spec.  Where a function takes mechanisms, a ``DpEvent`` of dp-accounting (or its JSON object) stands for the
mechanisms it composes (docs/math.md §2.16).

Errors: bad input (a value outside its domain, a fractional count, nan, a wrong type or an unknown
method) raises :class:`dpcalc.errors.InputError` (a ``ValueError``) naming the parameter, e.g.
``steps: must be a whole number >= 1, got 10.5``; a bound that cannot be certified raises
:class:`dpcalc.errors.UncertifiedError`.  A call broadcasts to at most :data:`MAX_VALUES` values.

    from dpcalc import api
    api.sgd_epsilon(sample_rate=0.01, noise_multiplier=1.1, steps=10_000, delta=1e-5).value

The mathematics each function uses is stated in docs/math.md; the engine modules it calls cite the
papers.  Anything more specialised (amplification by iteration, Langevin dynamics, odometers, the
individual conversions) is in the engine packages, named by topic: ``dpcalc.engine.conversion``,
``.mechanisms``, ``.composition``, ``.pld``, ``.dpsgd``, ``.hidden_state``, ``.adaptive``.
"""

from __future__ import annotations

from dpcalc.api.accountant import Accountant
from dpcalc.api.composition import compose, mechanism, rdp_curve
from dpcalc.api.contract import MAX_VALUES, Bound  # noqa: F401  (MAX_VALUES: the limit the docstring names)
from dpcalc.api.conversions import delta_from_rdp, epsilon_from_rdp, rdp_from_dp
from dpcalc.api.dpsgd import sgd_epsilon, sgd_noise_multiplier, sgd_sample_rate, sgd_steps
from dpcalc.api.tradeoff import compose_tpr, sgd_tpr

__all__ = [
    "Accountant",
    "Bound",
    "compose",
    "compose_tpr",
    "delta_from_rdp",
    "epsilon_from_rdp",
    "mechanism",
    "rdp_curve",
    "rdp_from_dp",
    "sgd_epsilon",
    "sgd_noise_multiplier",
    "sgd_sample_rate",
    "sgd_steps",
    "sgd_tpr",
]
