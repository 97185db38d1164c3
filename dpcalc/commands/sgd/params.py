"""The parameters of ``dpcalc sgd-epsilon`` (docs/math.md §3): :class:`SgdEpsilonParams`, and the accountants
and conversions it offers."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from dpcalc.commands.choices import SGD_ACCOUNTANTS, SGD_CONVERSIONS

#: The accountants and conversions offered (dpcalc.commands.choices, read by --help without numpy).
ACCOUNTANTS = SGD_ACCOUNTANTS
CONVERSIONS = SGD_CONVERSIONS


@dataclass(frozen=True)
class SgdEpsilonParams:
    """The inputs of ``dpcalc sgd-epsilon``: each numeric field a sequence of values (a sweep) or None.

    Give ``sigma`` (the noise multiplier), the sample rate (``sample_rate``, or ``batch_size`` with
    ``dataset_size``), the length (``steps``, or ``epochs``) and ``delta``.  With ``target_epsilon``,
    leave out ``sigma`` (to get the smallest one) or the length (to get the largest number of steps).
    ``accountant`` is one of :data:`ACCOUNTANTS` or ``"all"``; ``conversion`` one of
    :data:`CONVERSIONS`; ``sampling`` ``"poisson"``, ``"fixed-size"``, ``"truncated-poisson"`` (with
    ``max_batch_size``), ``"shuffle"``, ``"balls-in-bins"`` or ``"random-allocation"``; ``neighbors``
    ``"add-remove"`` or ``"replace-one"`` (None: the usual one for the sampling); ``eps_error`` the
    width of the PLD bracket (a number, or a sequence of one number).
    """

    delta: Sequence[float]
    sigma: Sequence[float] | None = None
    sample_rate: Sequence[float] | None = None
    batch_size: Sequence[int] | None = None
    dataset_size: Sequence[int] | None = None
    max_batch_size: Sequence[int] | None = None
    steps: Sequence[int] | None = None
    epochs: Sequence[float] | None = None
    target_epsilon: Sequence[float] | None = None
    accountant: str = "rdp"
    conversion: str = "optimal"
    sampling: str = "poisson"
    neighbors: str | None = None
    eps_error: float | Sequence[float] | None = None
    tuning: object | None = None  # a dpcalc.engine.composition.tuning.TuningRuns (--tuning-runs)
    mc_samples: int | None = None  # --method mc (balls-in-bins): Monte Carlo samples per direction
    confidence: float | None = None  # --method mc: the probability with which its ε holds
    seed: int | None = None  # --method mc: the seed of the sampling
    #: gradient accumulation (--physical-batch-size, --accumulation-steps): (B, A) when ``batch_size`` is
    #: the logical batch B·A they make (noise once per optimizer step); named in the caption only
    accumulation: tuple[int, int] | None = None
    #: --noise-std S --clip-norm C: ((S, ...), C) when ``sigma`` is S/C (dpcalc.commands.noise_std); named in the
    #: caption only
    noise_std: tuple[tuple[float, ...], float] | None = None
    #: --group-size K: what the run promises a person who contributed K examples (1: one example, today's
    #: rows), one value or a sequence (a sweep); the accountants rdp and pld then give the tight mixture
    #: (Poisson sampling), rdp-group and dp-group the generic group routes (dpcalc.commands.sgd.group)
    group_size: int | Sequence[int] = 1
    #: --epsilon: δ at each of these ε instead of ε at ``delta`` (None: ε is asked; :mod:`dpcalc.commands.sgd.delta`)
    epsilon: Sequence[float] | None = None
    #: --release: "full" (every step released: what the accountants bound) or "last-iterate", which adds the
    #: last-iterate heuristic's row (Steinke et al. 2025; an estimate, never a bound)
    release: str = "full"
