"""The checks of ``dpcalc sgd-epsilon``'s inputs before any work (:mod:`dpcalc.commands.sgd.epsilon`): the
combination of options, what the sampler needs and which accountants answer it (the sampler table,
:mod:`dpcalc.engine.samplers`), the Monte Carlo accountant's options, and the bounded work of a sweep
(docs/math.md §3).  The checks run in the order the command line has always reported them.
"""

from __future__ import annotations

import math
from dataclasses import replace

from dpcalc.commands import sweep
from dpcalc.commands.choices import SGD_ACCOUNTANTS
from dpcalc.commands.sgd import rows as sgd_rows
from dpcalc.commands.sgd.group import GROUP_ACCOUNTANTS, GROUP_SECONDS, group_names
from dpcalc.engine.samplers import catalogue
from dpcalc.errors import InputError
from dpcalc.input.group import check_group_size

#: --method mc: Monte Carlo samples per direction, and the confidence of its ε (defaults).
MC_SAMPLES = 1_000_000
MC_CONFIDENCE = 0.95

#: The smallest --target-epsilon when solving for the noise multiplier or the sample rate (bounded work:
#: smaller targets made the searches evaluate ε ever closer to 0, minutes per configuration).
TARGET_MIN = 1e-3

#: CPU seconds per configuration of each accountant at its default flags, measured (benchmarks/) with a
#: margin: the rdp accountant's is the sampler's (``Sampler.rdp_seconds``: a Rényi curve per configuration,
#: or shared across the steps, the epochs and δ where ``Sampler.curve_reused``), the Monte Carlo
#: accountant's per sample.
SECONDS_EACH = {"abadi": 1e-4, "bassily": 1e-4, "pld": 0.1, "shuffle": 2.5e-3}
#: a forward rdp row sharing its curve costs this beside its share of the curve (about 7,000 rows a second)
RDP_SECONDS_PER_ROW = 1.5e-4
#: --target-epsilon: a search costs about this many evaluations of ε per configuration (the sample rate's
#: more: each evaluation a new curve); the pld accountant's calibration reuses its distributions.
SEARCH_FACTOR = {"sigma": 10, "steps": 15, "q": 100}
PLD_SEARCH_FACTOR = {"sigma": 3, "steps": 3, "q": 10}

#: Accountants that ``--method all`` leaves out: Monte Carlo is slow, and a bound with a confidence only.
ON_REQUEST = ("mc",)
#: Accountants that need --dataset-size to apply (the bassily reference: its formula involves n).
NEED_N = ("bassily",)


def checked(p):
    """The inputs with the neighbouring relation and ``eps_error`` resolved (and the Monte Carlo
    accountant's defaults), the accountants to run, what to solve for (None, ``"sigma"``, ``"steps"`` or
    ``"q"``) and the sampler (its entry in :mod:`dpcalc.engine.samplers`)."""
    sampler = catalogue.sampler(p.sampling)
    neighbors = p.neighbors if p.neighbors is not None else sampler.default_relation
    solve = _question(p)
    check_inputs(p, sampler)
    _check_mc(p, sampler, solve)
    p = replace(p, group_size=group_sizes(p.group_size))
    names = None
    if max(p.group_size) > 1 or p.accountant in GROUP_ACCOUNTANTS:  # a person with K examples
        sampler.check_relation(neighbors)
        names = group_names(p, sampler, neighbors, solve)
    if names is None:
        names = sampler.own_accountants(p.accountant, neighbors, solve, p.tuning)
    if names is None and p.accountant == "all":
        names = [a for a in SGD_ACCOUNTANTS if _runs_with_all(a, sampler, neighbors, p.dataset_size)]
    elif names is None:
        names = [p.accountant]
    if p.accountant == "pld" and not sampler.covers("pld") and max(p.group_size) == 1:
        raise InputError(
            "--method pld: the privacy loss distribution here is for Poisson sampling (plain or truncated) "
            f"and random allocation; use --method rdp for --sampling {p.sampling}"
        )
    eps_error = eps_error_of(p, "pld" in names)
    if p.accountant == "mc":  # the Monte Carlo accountant's defaults (reproducible: a fixed seed)
        p = replace(
            p,
            mc_samples=MC_SAMPLES if p.mc_samples is None else p.mc_samples,
            confidence=MC_CONFIDENCE if p.confidence is None else p.confidence,
            seed=0 if p.seed is None else p.seed,
        )
    return replace(p, neighbors=neighbors, eps_error=eps_error), names, solve, sampler


def eps_error_of(p, pld: bool):
    """``p.eps_error`` as one number (None where not given): a sequence of one value (the command line's
    Grid) is unpacked, a longer one refused naming --eps-error, and --eps-error without a pld row (``pld``
    false) refused.  Every question of sgd-epsilon reads it through here (the engine takes a number)."""
    eps_error = p.eps_error
    if eps_error is None:
        return None
    if not pld:
        raise InputError("--eps-error applies to --method pld (or all)")
    if not isinstance(eps_error, (int, float)):
        if len(eps_error) != 1:
            raise _invalid("--eps-error", "takes a single value, not a list or range")
        eps_error = eps_error[0]
    return float(eps_error)


def group_sizes(value) -> tuple[int, ...]:
    """--group-size as a tuple of whole numbers in [1, MAX_GROUP_SIZE] (one value or a sequence)."""
    values = [value] if isinstance(value, (int, float)) else list(value)
    if not values:
        raise InputError("--group-size: give at least one value")
    return tuple(check_group_size(k) for k in values)


def _question(p):
    """What ``--target-epsilon`` solves for (None: ε is asked), with the checks of the combination of
    rate, noise, length, δ and --tuning-runs."""
    if p.sample_rate is not None and p.batch_size is not None:
        raise InputError("give either --sample-rate or --batch-size with --dataset-size, not both")
    if p.steps is not None and p.epochs is not None:
        raise InputError("give either --steps or --epochs, not both")
    rate_given = p.sample_rate is not None or p.batch_size is not None
    length_given = p.steps is not None or p.epochs is not None
    if p.batch_size is not None and p.dataset_size is None:
        raise InputError("--batch-size needs --dataset-size (the sample rate is batch size / dataset size)")
    solve = None
    if getattr(p, "epsilon", None) is not None:  # δ at ε (--epsilon): a question of its own
        if p.delta is not None:
            raise InputError("give exactly one of --delta (to get ε) or --epsilon (to get δ)")
        for option, value in (("--target-epsilon", p.target_epsilon), ("--tuning-runs", p.tuning)):
            if value is not None:
                raise InputError(f"--epsilon cannot be used with {option} (it is answered at --delta)")
    if p.target_epsilon is None:
        if not rate_given:
            raise InputError("give --sample-rate, or --batch-size with --dataset-size")
        if p.sigma is None:
            raise InputError("missing option --noise-multiplier (or give --target-epsilon to solve for it)")
        if not length_given:
            raise InputError("give --steps or --epochs (or --target-epsilon to solve for the steps)")
    else:
        left_out = [not rate_given, p.sigma is None, not length_given]
        if sum(left_out) != 1:
            raise InputError(
                "with --target-epsilon, leave out exactly one option to solve for: --noise-multiplier, "
                "--steps/--epochs, or --sample-rate/--batch-size"
                + (" (give --dataset-size to solve for the batch size)" if sum(left_out) > 1 else "")
            )
        solve = "q" if not rate_given else ("sigma" if p.sigma is None else "steps")
    if solve is not None and p.delta is not None and 0 in p.delta:
        raise _invalid(
            "--delta",
            "0 with --target-epsilon: the subsampled Gaussian's privacy loss is unbounded, so no finite ε "
            "holds at δ = 0 and nothing meets the target; give δ > 0",
        )
    if solve in ("sigma", "q") and min(p.target_epsilon) < TARGET_MIN:
        raise _invalid(
            "--target-epsilon",
            f"{min(p.target_epsilon):g} is below {TARGET_MIN:g} when solving for the "
            f"{'noise multiplier' if solve == 'sigma' else 'sample rate'}: the search evaluates ε ever closer "
            "to 0, where the accountants' certified ε is not computed within bounded work",
        )
    if p.batch_size is not None:
        bad = [(b, n) for b in p.batch_size for n in p.dataset_size if b > n]
        if bad:
            raise _invalid("--dataset-size", f"{bad[0][1]} is smaller than the batch size {bad[0][0]}")
    if p.tuning is not None:
        if solve not in (None, "sigma"):
            raise InputError(
                "--tuning-runs with --target-epsilon solves for the noise multiplier only: give the sample rate "
                "and the length, and leave out --noise-multiplier"
            )
        if p.accountant not in ("rdp", "all"):
            raise InputError(
                f"--tuning-runs applies to --method rdp (or all), not {p.accountant}: its bound is an RDP bound"
            )
    return solve


def check_inputs(p, sampler) -> None:
    """What the sampler needs (``Sampler.needs``: truncated Poisson's N and cap) and does not answer
    (--tuning-runs), and ``--max-batch-size`` belonging to the samplers that take it."""
    if p.max_batch_size is not None and not sampler.takes_max_batch_size:
        takers = [s.name for s in catalogue.CATALOGUE.values() if s.takes_max_batch_size]
        raise InputError(
            f"--max-batch-size applies to {' and '.join(f'--sampling {t}' for t in takers)} only"
        )
    sampler.check_inputs(p.dataset_size, p.max_batch_size, p.tuning)


def _invalid(option: str, message: str) -> InputError:
    """An error about one option's value, worded as the command line words a bad option value."""
    return InputError(f"Invalid value for '{option}': {message}")


def _runs_with_all(name, sampler, neighbors, dataset_size) -> bool:
    """Whether ``--method all`` runs ``name`` for the sampler (its table entry says which answer it)."""
    if name in ON_REQUEST or (name in NEED_N and dataset_size is None):
        return False
    return sampler.covers(name, neighbors)


def _check_mc(p, sampler, solve) -> None:
    """``--method mc`` (its samplers only, ε only) and its options, which belong to it."""
    if p.accountant != "mc":
        for option, value in (
            ("--mc-samples", p.mc_samples),
            ("--confidence", p.confidence),
            ("--seed", p.seed),
        ):
            if value is not None:
                raise InputError(f"{option} applies to --method mc (the Monte Carlo accountant) only")
        return
    if not sampler.covers("mc"):
        which = " or ".join(f"--sampling {name}" for name in catalogue.names("mc"))
        raise InputError(f"--method mc: the Monte Carlo accountant is for {which}")
    if solve is not None:
        raise InputError(
            "--method mc does not answer --target-epsilon (each ε costs a Monte Carlo run); use --method rdp"
        )
    if p.tuning is not None:
        raise InputError("--tuning-runs applies to --method rdp, not mc")
    if p.seed is not None and not 0 <= p.seed < 2**63:  # the command line's option checks it too
        raise InputError(f"--seed: {p.seed} is out of range: must be a whole number in [0, 2^63 − 1]")


def _swept_k(value):
    """--group-size's values when given beyond the default K = 1 (a sweep axis), else None."""
    ks = group_sizes(value)
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
        "--group-size": _swept_k(getattr(p, "group_size", 1)),
    }
    return {k: v for k, v in options.items() if v is not None}


def check_sweep(p, names, solve, sampler) -> float:
    """Refuse, before any work, a sweep of more rows than :data:`dpcalc.commands.sweep.MAX_ROWS`; return the
    estimated CPU seconds of the whole sweep on one core (:func:`work_seconds`)."""
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
        return sgd_rows.mc_seconds(p.mc_samples or MC_SAMPLES, longest_run(p))
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


def work_seconds(p, names, solve, sizes: dict[str, int], sampler=None) -> float:
    """The estimated CPU seconds on one core of the configurations ``sizes`` (option -> number of values) under
    the accountants ``names`` (the costs measured in benchmarks/, with a margin)."""
    if p.tuning is not None:
        return 0.0  # bounded by --tuning-runs' own limits
    sampler = sampler or catalogue.sampler(p.sampling)
    ks = group_sizes(getattr(p, "group_size", 1))
    each = 0.0
    for name in names:
        # a person's rows (dpcalc.commands.sgd.group) for K > 1; K = 1 rows are the example-level ones
        person = [k for k in ks if k > 1 or name in GROUP_ACCOUNTANTS]
        cost = GROUP_SECONDS[name] * len(person) / len(ks) if person else 0.0
        if len(person) < len(ks):
            cost += _example_cost(p, name, solve, sizes, sampler) * (len(ks) - len(person)) / len(ks)
        each += cost * (PLD_SEARCH_FACTOR if name == "pld" else SEARCH_FACTOR).get(solve, 1)
    return each * math.prod(sizes.values())
