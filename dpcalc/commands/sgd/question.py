"""What ``dpcalc sgd-epsilon`` is asked, decided once: :func:`ask` checks the inputs and returns a
:class:`Question` — the inputs resolved, the sampler, the accountants that answer, the one quantity solved for
and the work it costs.  Everything after it (the rows, their columns, caption and notes, the picture) reads the
question instead of asking again (docs/math.md §3).

The checks run in the order the command line has always reported them: the combination of rate, noise, length,
δ and the target; what the sampler needs; the Monte Carlo accountant's options; a person's accountants
(``--group-size``); the accountants of ``--method``.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from dpcalc.commands.choices import SGD_ACCOUNTANTS
from dpcalc.commands.sgd import work
from dpcalc.commands.sgd.mc_cost import MC_CONFIDENCE, MC_SAMPLES
from dpcalc.commands.sgd.params import SgdEpsilonParams
from dpcalc.engine.samplers import catalogue
from dpcalc.engine.samplers.base import Sampler
from dpcalc.errors import InputError
from dpcalc.input.group_size import check_group_size
from dpcalc.lazy import lazy_module

#: the person-level samplers of --group-size (loaded when a group is asked about)
person_samplers = lazy_module("dpcalc.engine.samplers.person")

#: The smallest --target-epsilon when solving for the noise multiplier or the sample rate (bounded work:
#: smaller targets made the searches evaluate ε ever closer to 0, minutes per configuration).
TARGET_MIN = 1e-3

#: Accountants that ``--method all`` leaves out: Monte Carlo is slow, and a bound with a confidence only.
ON_REQUEST = ("mc",)
#: Accountants that need --dataset-size to apply (the bassily reference: its formula involves n).
NEED_N = ("bassily",)

#: The generic routes of a person's privacy, by accountant name (beside the tight rdp and pld).
GROUP_ACCOUNTANTS = ("rdp-group", "dp-group")
#: What ``--method all`` runs with --group-size K > 1, in order (those that apply).
GROUP_ALL = ("rdp", "pld", *GROUP_ACCOUNTANTS)

#: The row of ``--release last-iterate``: the heuristic of Steinke et al. 2025 (an estimate, not a bound).
LAST_ITERATE = "last-iterate"

#: The quantity ``--target-epsilon`` (or a risk target) solves for -> the options that give it.
UNKNOWNS = {
    "sigma": "--noise-multiplier",
    "steps": "--steps/--epochs",
    "q": "--sample-rate/--batch-size",
}


@dataclass(frozen=True)
class Question:
    """One sgd-epsilon question: ``params`` resolved (the neighbouring relation, ``eps_error`` as a number, the
    Monte Carlo defaults, ``group_size`` a tuple), the ``sampler`` (its entry in :mod:`dpcalc.engine.samplers`),
    the ``accountants`` that answer, what ``--target-epsilon`` solves for (``solve``: None, ``"sigma"``,
    ``"steps"`` or ``"q"``) and the estimated CPU seconds of the whole sweep on one core (``seconds``)."""

    params: SgdEpsilonParams
    sampler: Sampler
    accountants: tuple[str, ...]
    solve: str | None
    seconds: float

    @property
    def at_eps(self) -> bool:
        """δ at ε is asked (``--epsilon``), not ε at δ."""
        return self.params.epsilon is not None

    @property
    def answer(self) -> str:
        """The column that answers the question (never an estimate): ε or δ, or the quantity solved for."""
        rate = "batch_size" if self.params.dataset_size is not None else "sample_rate"
        return {"sigma": "noise_multiplier", "steps": "steps", "q": rate}.get(
            self.solve, "delta" if self.at_eps else "epsilon"
        )

    @property
    def derived(self) -> tuple[str, ...]:
        """The columns each accountant finds for itself with --target-epsilon, besides the answer (see
        :mod:`dpcalc.render.configs`): the epochs within the steps found; the sample rate, batch size and the
        length not given (steps from --epochs, or the epochs within --steps)."""
        if self.solve == "steps":
            return ("epochs",)
        if self.solve == "q":
            return ("sample_rate", "batch_size", "steps" if self.params.epochs is not None else "epochs")
        return ()

    @property
    def person(self) -> bool:
        """Whether any row is a person's (``--group-size`` K > 1, or a group route asked for)."""
        return max(self.params.group_size) > 1 or any(n in GROUP_ACCOUNTANTS for n in self.accountants)

    @property
    def strict(self) -> bool:
        """One accountant alone answers, so its refusal of a configuration is an error, not a row."""
        return len(self.accountants) == 1


def ask(params: SgdEpsilonParams) -> Question:
    """The question ``params`` asks, checked before any work: :class:`~dpcalc.errors.InputError` (a usage error
    naming the option at fault) for an impossible combination."""
    sampler = catalogue.sampler(params.sampling)
    neighbors = params.neighbors if params.neighbors is not None else sampler.default_relation
    p = params
    solve = _solved_for(p)
    check_inputs(p, sampler)
    _check_mc(p, sampler, solve)
    p = replace(p, group_size=group_sizes(p.group_size))
    names = None
    if max(p.group_size) > 1 or p.accountant in GROUP_ACCOUNTANTS:  # a person with K examples
        sampler.check_relation(neighbors)
        names = _group_accountants(p, sampler, neighbors)
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
    if p.release != "full":
        _check_last_iterate(p, sampler, neighbors, solve)
        names = [*names, LAST_ITERATE]
    eps_error = eps_error_of(p, "pld" in names)
    if p.accountant == "mc":  # the Monte Carlo accountant's defaults (reproducible: a fixed seed)
        p = replace(
            p,
            mc_samples=MC_SAMPLES if p.mc_samples is None else p.mc_samples,
            confidence=MC_CONFIDENCE if p.confidence is None else p.confidence,
            seed=0 if p.seed is None else p.seed,
        )
    p = replace(p, neighbors=neighbors, eps_error=eps_error)
    return Question(p, sampler, tuple(names), solve, work.sweep_seconds(p, names, solve, sampler))


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


def left_out(p) -> list[str]:
    """The quantities of :data:`UNKNOWNS` that ``p`` does not give (a target solves for exactly one of them)."""
    given = {
        "q": p.sample_rate is not None or p.batch_size is not None,
        "sigma": p.sigma is not None,
        "steps": p.steps is not None or p.epochs is not None,
    }
    return [name for name in ("q", "sigma", "steps") if not given[name]]


def _solved_for(p):
    """What ``--target-epsilon`` solves for (None: ε is asked), with the checks of the combination of
    rate, noise, length, δ and --tuning-runs."""
    if p.sample_rate is not None and p.batch_size is not None:
        raise InputError("give either --sample-rate or --batch-size with --dataset-size, not both")
    if p.steps is not None and p.epochs is not None:
        raise InputError("give either --steps or --epochs, not both")
    left = left_out(p)
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
        if "q" in left:
            raise InputError("give --sample-rate, or --batch-size with --dataset-size")
        if "sigma" in left:
            raise InputError("missing option --noise-multiplier (or give --target-epsilon to solve for it)")
        if "steps" in left:
            raise InputError("give --steps or --epochs (or --target-epsilon to solve for the steps)")
    else:
        if len(left) != 1:
            raise InputError(
                "with --target-epsilon, leave out exactly one option to solve for: --noise-multiplier, "
                "--steps/--epochs, or --sample-rate/--batch-size"
                + (" (give --dataset-size to solve for the batch size)" if len(left) > 1 else "")
            )
        solve = left[0]
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


def _check_last_iterate(p, sampler, neighbors, solve) -> None:
    """``--release last-iterate``: the heuristic's setting (Steinke et al. 2025, arXiv:2410.06186: Poisson
    sampling, a person is one example added or removed) and its questions (ε or δ of a run, not a target: a
    heuristic is no bound to calibrate to)."""
    if p.release not in ("full", "last-iterate"):
        raise _invalid("--release", f"{p.release!r} is not one of 'full', 'last-iterate'")
    if sampler.name != "poisson" or neighbors != "add-remove":
        raise InputError(
            "--release last-iterate: the heuristic of Steinke et al. 2025 is for Poisson sampling with add/remove "
            f"neighbours, not --sampling {sampler.name} with {neighbors}"
        )
    if solve is not None:
        raise InputError(
            "--release last-iterate cannot be used with --target-epsilon (a heuristic is not a bound to solve for)"
        )
    if max(p.group_size) > 1 or p.tuning is not None:
        raise InputError("--release last-iterate: for one example's run (no --group-size, no --tuning-runs)")


def _group_accountants(p, sampler, neighbors) -> list[str]:
    """The accountants to run for a person with ``p.group_size`` examples (a tuple: a sweep of K), refusing
    one that does not apply (a usage error naming what is missing).  With ``--method all`` the tight rows
    run where they apply to some K > 1 of the sweep (a K where they do not gets rows that say why)."""
    ks = p.group_size
    if p.tuning is not None:
        raise InputError("--group-size cannot be used with --tuning-runs")
    generic = sampler.covers("rdp", neighbors)
    refusals = [(k, person_samplers.tight_refusal(sampler, neighbors, k)) for k in ks if k > 1]
    tight = not refusals or any(why is None for _, why in refusals)
    if p.accountant == "all":
        names = [a for a in GROUP_ALL if (generic if a in GROUP_ACCOUNTANTS else tight)]
        if not names:
            person_samplers.grouped_sampler(sampler, max(ks))  # raises: no Rényi curve to group
            raise InputError(refusals[0][1])
        return names
    if p.accountant in GROUP_ACCOUNTANTS:
        if not generic:
            person_samplers.grouped_sampler(sampler, max(ks))
            raise InputError(f"--method {p.accountant}: the example-level rdp accountant does not apply here")
        return [p.accountant]
    if p.accountant in ("rdp", "pld"):
        for k, why in refusals:
            if why is not None:
                raise InputError(f"--method {p.accountant} with --group-size {k}: {why}")
        return [p.accountant]
    raise InputError(
        f"--method {p.accountant} with --group-size {max(ks)}: an example-level formula; for a person use "
        "rdp, pld (Poisson sampling), rdp-group, dp-group or all"
    )
