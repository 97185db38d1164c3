"""The work of a ``dpcalc sgd-epsilon`` question, estimated before any is done: the CPU seconds of each
accountant per configuration (measured in benchmarks/, with a margin), the rows a sweep makes (refused only
past :data:`dpcalc.commands.sweep.MAX_ROWS`), and the batches of a Monte Carlo run.  The estimate is said, shown
and capped by :mod:`dpcalc.execution`, never a reason to refuse.
"""

from __future__ import annotations

import math

from dpcalc.commands import sweep
from dpcalc.commands.sgd.mc_cost import MC_SAMPLES, mc_seconds
from dpcalc.lazy import lazy_module

#: the Monte Carlo sampler's batches (loaded when a Monte Carlo run is planned)
_samples = lazy_module("dpcalc.engine.dpsgd.balls_in_bins_samples")

#: CPU seconds per configuration of each accountant at its default flags, measured (benchmarks/) with a
#: margin: the rdp accountant's is the sampler's (``Sampler.rdp_seconds``: a Rényi curve per configuration,
#: or shared across the steps, the epochs and δ where ``Sampler.curve_reused``), the Monte Carlo
#: accountant's per sample.
SECONDS_EACH = {"abadi": 1e-4, "bassily": 1e-4, "pld": 0.1, "shuffle": 2.5e-3, "last-iterate": 0.05}
#: a forward rdp row sharing its curve costs this beside its share of the curve (about 7,000 rows a second)
RDP_SECONDS_PER_ROW = 1.5e-4
#: --target-epsilon: a search costs about this many evaluations of ε per configuration (the sample rate's
#: more: each evaluation a new curve); the pld accountant's calibration reuses its distributions.
SEARCH_FACTOR = {"sigma": 10, "steps": 15, "q": 100}
PLD_SEARCH_FACTOR = {"sigma": 3, "steps": 3, "q": 10}

#: CPU seconds per configuration of a person's rows (--group-size; measured beside start-up,
#: benchmarks/bench_group.py): one certified mixture curve for rdp (0.2-0.3 s), one mixture PLD for pld (0.4-0.9 s
#: at 782-9375 steps), a curve at 2^c times the orders for rdp-group, one example-level curve and its conversion
#: at 241 values of δ' for dp-group.
GROUP_SECONDS = {"rdp": 0.4, "pld": 0.6, "rdp-group": 0.05, "dp-group": 0.05}
#: The generic group routes (their rows cost GROUP_SECONDS at K = 1 too).
_GROUP_ROUTES = ("rdp-group", "dp-group")


def _swept_k(ks):
    """--group-size's values (a tuple) when given beyond the default K = 1 (a sweep axis), else None."""
    return ks if max(ks) > 1 or len(ks) > 1 else None


def swept(p) -> dict:
    """Option -> its values, for the options given (their product is the grid)."""
    options = {
        "--sample-rate": p.sample_rate,
        "--batch-size": p.batch_size,
        "--dataset-size": p.dataset_size,
        "--max-batch-size": p.max_batch_size,
        "--noise-multiplier": p.sigma,
        "--steps": p.steps,
        "--epochs": p.epochs,
        "--delta": p.delta,
        "--epsilon": getattr(p, "epsilon", None),
        "--target-epsilon": p.target_epsilon,
        "--group-size": _swept_k(p.group_size),
    }
    return {k: v for k, v in options.items() if v is not None}


def sweep_seconds(p, names, solve, sampler) -> float:
    """Refuse, before any work, a sweep of more rows than :data:`dpcalc.commands.sweep.MAX_ROWS`; return the
    estimated CPU seconds of the whole sweep on one core (:func:`work_seconds`) of the inputs ``p`` (checked:
    ``group_size`` a tuple) under the accountants ``names``."""
    sizes = {opt: len(v) for opt, v in swept(p).items()}
    sweep.check_rows(sizes, len(names))
    return work_seconds(p, names, solve, sizes, sampler)


def _example_cost(p, name, solve, sizes, sampler) -> float:
    """CPU seconds per configuration of one example-level accountant."""
    if name == "rdp":
        cost = sampler.rdp_seconds
        if solve is None and sampler.curve_reused:
            # one Rényi curve per (rate, noise); the steps, epochs and δ of a sweep reuse it
            configs = math.prod(sizes.values())
            curves = math.prod(
                v
                for k, v in sizes.items()
                if k not in ("--steps", "--epochs", "--delta", "--epsilon", "--group-size")
            )
            cost = cost * curves / configs + RDP_SECONDS_PER_ROW
        return cost
    if name == "mc":
        return mc_seconds(p.mc_samples or MC_SAMPLES, longest_run(p))
    return SECONDS_EACH.get(name, 0.1)


def longest_run(p) -> float:
    """The most steps of any configuration (with --epochs: the epochs times the steps an epoch, 1/q or N/B)."""
    if p.steps is not None:
        return float(max(p.steps))
    if p.epochs is None:
        return 0.0
    if p.sample_rate is not None:
        per_epoch = 1.0 / min(p.sample_rate)
    elif p.batch_size is not None and p.dataset_size is not None:
        per_epoch = max(p.dataset_size) / min(p.batch_size)
    else:
        per_epoch = 1.0
    return float(max(p.epochs)) * math.ceil(per_epoch)


def work_seconds(p, names, solve, sizes: dict[str, int], sampler) -> float:
    """The estimated CPU seconds on one core of the configurations ``sizes`` (option -> number of values) under
    the accountants ``names`` (the costs measured in benchmarks/, with a margin)."""
    if p.tuning is not None:
        return 0.0  # bounded by --tuning-runs' own limits
    ks = p.group_size
    each = 0.0
    for name in names:
        # a person's rows (dpcalc.commands.sgd.group) for K > 1; K = 1 rows are the example-level ones
        person = [k for k in ks if k > 1 or name in _GROUP_ROUTES]
        cost = GROUP_SECONDS[name] * len(person) / len(ks) if person else 0.0
        if len(person) < len(ks):
            cost += _example_cost(p, name, solve, sizes, sampler) * (len(ks) - len(person)) / len(ks)
        each += cost * (PLD_SEARCH_FACTOR if name == "pld" else SEARCH_FACTOR).get(solve, 1)
    return each * math.prod(sizes.values())


def mc_batches(p, rows: int) -> int:
    """The Monte Carlo batches of ``rows`` configurations, both directions (the pieces its samples are spread in:
    :data:`~dpcalc.engine.dpsgd.balls_in_bins_samples.BATCH_DRAWS` normal draws each, at least one a direction)."""
    draws = (p.mc_samples or MC_SAMPLES) * max(1.0, longest_run(p))
    return 2 * rows * max(1, math.ceil(draws / _samples.BATCH_DRAWS))
