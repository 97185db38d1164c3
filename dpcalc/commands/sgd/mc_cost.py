"""The Monte Carlo accountant's defaults and cost (``sgd-epsilon --method mc``; pure Python, so that a question
only estimating its work, or not asking for Monte Carlo at all, loads none of :mod:`dpcalc.commands.sgd.mc`)."""

from __future__ import annotations

#: --method mc: Monte Carlo samples per direction, and the confidence of its ε (defaults).
MC_SAMPLES = 1_000_000
MC_CONFIDENCE = 0.95

#: The Monte Carlo accountant's cost on one core, measured on the development machine (2 cores, shared) with a
#: margin: CPU seconds per sample and direction, per normal draw of a sample (its steps, K·m), the extra per sample
#: of the rejection samplers of epochs of 2 or 3 steps, and per configuration (the placing of the conditioning,
#: the inversion).
MC_SECONDS_PER_SAMPLE = 5e-6
MC_SECONDS_PER_DRAW = 1.5e-8
MC_SECONDS_SHORT_EPOCH = 8e-6
MC_SECONDS_PER_CONFIG = 0.3


def mc_seconds(samples: float, steps: float, epoch_steps: float | None = None) -> float:
    """Estimated CPU seconds on one core of the Monte Carlo accountant (``--method mc``) for one configuration,
    both directions: ``samples`` per direction of a run of ``steps`` normal draws a sample (the epochs times the
    steps per epoch, K·m); ``epoch_steps`` (m, if known) adds the slower rejection sampling of epochs of 2 or 3
    steps.  Linear in the samples and the steps: the batches' work, plus a fixed part per configuration."""
    per = MC_SECONDS_PER_SAMPLE + MC_SECONDS_PER_DRAW * float(steps)
    if epoch_steps is not None and 1 < epoch_steps <= 3:
        per += MC_SECONDS_SHORT_EPOCH
    return 2.0 * float(samples) * per + MC_SECONDS_PER_CONFIG
