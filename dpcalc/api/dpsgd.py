"""DP-SGD (docs/math.md §3, §7): ε of a run, and the noise multiplier, steps or sample rate that meet a target
ε."""

from __future__ import annotations

from dpcalc.api.contract import MAX_WHOLE, Bound, broadcast, choice, contract, optional, real
from dpcalc.api.spread import spreadable
from dpcalc.engine.dpsgd import accounting, noise_calibration, rate_budget, step_budget
from dpcalc.engine.dpsgd.pld_accounting import sgd_epsilon_pld
from dpcalc.engine.dpsgd.pld_calibration import calibrate_noise_pld, max_sample_rate_pld, max_steps_pld
from dpcalc.engine.samplers import catalogue
from dpcalc.engine.samplers.person import grouped_sampler, person_sampler
from dpcalc.errors import InputError
from dpcalc.input.group import check_group_size

_SGD_CONVERSIONS = ("optimal", "balle", "mironov")


def _sgd_common(sample_rate, noise_multiplier, steps, delta, *, delta_zero=True):
    return (
        real("sample_rate", sample_rate, lo=0, hi=1, lo_open=True) if sample_rate is not None else None,
        real("noise_multiplier", noise_multiplier, lo=0, lo_open=True)
        if noise_multiplier is not None
        else None,
        real("steps", steps, lo=1, whole=True) if steps is not None else None,
        real("delta", delta, lo=0, hi=1, lo_open=not delta_zero, hi_open=True),
    )


@contract
@spreadable("sample_rate", "noise_multiplier", "steps", "delta", "dataset_size", "max_batch_size")
def sgd_epsilon(
    sample_rate,
    noise_multiplier,
    steps,
    delta,
    *,
    accountant: str = "rdp",
    conversion: str = "optimal",
    sampling: str = "poisson",
    neighbors: str | None = None,
    dataset_size=None,
    max_batch_size=None,
    eps_error=None,
    group_size=1,
) -> Bound:
    """ε of DP-SGD: ``steps`` (a whole number >= 1) steps at sampling rate q in (0, 1] and noise
    multiplier σ > 0, at ``delta`` in [0, 1).

    ``accountant``: ``rdp`` (exact RDP of the subsampled Gaussian: Mironov, Talwar & Zhang 2019 for
    Poisson sampling; Wang, Balle & Kasiviswanathan 2019 for ``sampling="fixed-size"``), converted by
    ``conversion`` (optimal, balle, mironov); or ``pld`` (a certified bracket; Poisson sampling, plain or
    truncated; for the allocation samplers a certified upper bound with no lower end, §3.10).
    ``sampling`` also takes ``"truncated-poisson"`` (with ``dataset_size`` N and ``max_batch_size`` B,
    whole numbers, docs/math.md §3.7), ``"balls-in-bins"`` and ``"random-allocation"`` (§3.8);
    ``neighbors`` (add-remove or replace-one) defaults to replace-one for fixed-size sampling and
    add-remove otherwise.  The closed forms that are not bounds (Abadi et al.'s asymptotic formula,
    Bassily et al.'s reference) are in :mod:`dpcalc.engine.dpsgd.accounting`.  Arguments broadcast.
    ``group_size`` K (a whole number in [1, 10000]): the guarantee for a person who contributed K examples
    (docs/math.md §3.11): ``rdp`` and ``pld`` by the mixture of Ganesh 2024, Thm 3.1 (Poisson sampling,
    add/remove; tight), ``rdp-group`` and ``dp-group`` by the generic group routes (the RDP group property,
    Mironov 2017, Prop. 2; the (ε, δ) group conversion, Vadhan 2017, Lemma 2.2) of the example-level bound.
    docs/math.md §3, §7.
    """
    accountant = choice("accountant", accountant, ("rdp", "pld", "rdp-group", "dp-group"))
    k = check_group_size(group_size, "group_size")
    conversion = choice("conversion", conversion, _SGD_CONVERSIONS)
    sampling = choice("sampling", sampling, catalogue.names("rdp"))  # the samplers with a Rényi curve
    sampler = catalogue.sampler(sampling)
    if neighbors is None:
        neighbors = sampler.default_relation
    neighbors = choice("neighbors", neighbors, ("add-remove", "replace-one"))
    sample_rate, noise_multiplier, steps, delta = _sgd_common(sample_rate, noise_multiplier, steps, delta)
    dataset_size = optional("dataset_size", dataset_size, lo=1, whole=True)
    max_batch_size = optional("max_batch_size", max_batch_size, lo=1, whole=True)
    eps_error = optional("eps_error", eps_error, lo=0, lo_open=True, single=True)
    broadcast(
        sample_rate=sample_rate,
        noise_multiplier=noise_multiplier,
        steps=steps,
        delta=delta,
        dataset_size=dataset_size,
        max_batch_size=max_batch_size,
    )
    run = {"dataset_size": dataset_size, "max_batch_size": max_batch_size}
    args = (sample_rate, noise_multiplier, steps, delta)
    if accountant == "dp-group":
        e = accounting.epsilon(
            "dp-group",
            *args,
            group_size=k,
            conversion=conversion,
            sampling=sampling,
            neighbors=neighbors,
            **run,
        )
        return Bound(e.epsilon)
    if accountant == "rdp-group" or k > 1:
        sampler.check_relation(neighbors)
        if accountant == "rdp-group":
            accountant, sampler = "rdp", grouped_sampler(sampler, k)
        else:
            sampler = person_sampler(sampler, neighbors, k)
        sampling = sampler
    if accountant == "pld":
        if not sampler.covers("pld"):
            raise InputError(
                "accountant: pld is for Poisson sampling (plain or truncated) and random allocation"
            )
        lower, estimate, upper = sgd_epsilon_pld(
            sample_rate,
            noise_multiplier,
            steps,
            delta,
            eps_error,
            neighbors=neighbors,
            sampling=sampling,
            **run,
        )
        return Bound(upper, lower, estimate)

    e = accounting.epsilon(
        "rdp",
        sample_rate,
        noise_multiplier,
        steps,
        delta,
        conversion=conversion,
        sampling=sampling,
        neighbors=neighbors,
        warn=False,
        **run,
    )
    return Bound(e.epsilon, alpha=e.alpha)


def _target(target_epsilon):
    return real("target_epsilon", target_epsilon, lo=0, lo_open=True)


def _rtol(rtol):
    return real("rtol", rtol, lo=1e-10, hi=0.5, single=True)


@contract
@spreadable("sample_rate", "steps", "delta", "target_epsilon")
def sgd_noise_multiplier(
    sample_rate,
    steps,
    delta,
    target_epsilon,
    *,
    accountant: str = "rdp",
    conversion: str = "optimal",
    rtol=1e-4,
    eps_error=None,
) -> Bound:
    """The smallest noise multiplier (within a factor 1 + rtol, rounded up) whose DP-SGD ε at ``delta``
    (in (0, 1)) is at most ``target_epsilon`` (> 0), Poisson sampling: by exact RDP and ``conversion``,
    or with ``accountant="pld"`` by the certified upper end of the PLD bracket.  ``value``: the noise
    multiplier.  Arguments broadcast; ``rtol`` in [1e-10, 0.5]."""
    accountant = choice("accountant", accountant, ("rdp", "pld"))
    conversion = choice("conversion", conversion, _SGD_CONVERSIONS)
    sample_rate, _, steps, delta = _sgd_common(sample_rate, None, steps, delta, delta_zero=False)
    target_epsilon, rtol = _target(target_epsilon), _rtol(rtol)
    eps_error = optional("eps_error", eps_error, lo=0, lo_open=True, single=True)
    broadcast(sample_rate=sample_rate, steps=steps, delta=delta, target_epsilon=target_epsilon)
    if accountant == "pld":
        sigma, _ = calibrate_noise_pld(
            sample_rate, steps, delta, target_epsilon, rtol=rtol, eps_error=eps_error
        )
        return Bound(sigma)

    sigma, _ = noise_calibration.calibrate_noise(
        sample_rate, steps, delta, target_epsilon, conversion=conversion, rtol=rtol
    )
    return Bound(sigma)


@contract
@spreadable("sample_rate", "noise_multiplier", "delta", "target_epsilon")
def sgd_steps(
    sample_rate,
    noise_multiplier,
    delta,
    target_epsilon,
    *,
    accountant: str = "rdp",
    conversion: str = "optimal",
    eps_error=None,
) -> Bound:
    """The largest number of DP-SGD steps whose ε at ``delta`` (in (0, 1)) is at most ``target_epsilon``
    (> 0), Poisson sampling; 0 where even one step exceeds it: by exact RDP and ``conversion``, or with
    ``accountant="pld"`` by the certified upper end of the PLD bracket.  ``value``: the steps.
    Arguments broadcast."""
    accountant = choice("accountant", accountant, ("rdp", "pld"))
    conversion = choice("conversion", conversion, _SGD_CONVERSIONS)
    sample_rate, noise_multiplier, _, delta = _sgd_common(
        sample_rate, noise_multiplier, None, delta, delta_zero=False
    )
    target_epsilon = _target(target_epsilon)
    eps_error = optional("eps_error", eps_error, lo=0, lo_open=True, single=True)
    broadcast(
        sample_rate=sample_rate, noise_multiplier=noise_multiplier, delta=delta, target_epsilon=target_epsilon
    )
    if accountant == "pld":
        steps, _ = max_steps_pld(sample_rate, noise_multiplier, delta, target_epsilon, eps_error=eps_error)
        return Bound(steps)

    steps, _ = step_budget.max_steps(
        sample_rate, noise_multiplier, delta, target_epsilon, conversion=conversion
    )
    return Bound(steps)


@contract
@spreadable("noise_multiplier", "delta", "target_epsilon", "steps", "epochs", "dataset_size")
def sgd_sample_rate(
    noise_multiplier,
    delta,
    target_epsilon,
    *,
    steps=None,
    epochs=None,
    dataset_size=None,
    accountant: str = "rdp",
    conversion: str = "optimal",
    rtol=1e-4,
    eps_error=None,
) -> Bound:
    """The largest sample rate (within a factor 1 + rtol) whose DP-SGD ε at ``delta`` (in (0, 1)) is at
    most ``target_epsilon`` (> 0), Poisson sampling, for ``steps`` steps (a whole number >= 1) or
    ``epochs`` epochs (in (0, 2^53]; then the run has ceil(epochs / q) steps); with ``dataset_size`` N (a whole
    number) the largest batch size B, returned as q = B/N.  ``value``: the rate; 0 where nothing fits.
    ``accountant``: ``rdp`` or ``pld`` (certified upper end).  Arguments broadcast."""
    if (steps is None) == (epochs is None):
        raise InputError("sgd_sample_rate: give exactly one of steps and epochs")
    accountant = choice("accountant", accountant, ("rdp", "pld"))
    conversion = choice("conversion", conversion, _SGD_CONVERSIONS)
    _, noise_multiplier, steps, delta = _sgd_common(None, noise_multiplier, steps, delta, delta_zero=False)
    target_epsilon, rtol = _target(target_epsilon), _rtol(rtol)
    epochs = optional(
        "epochs", epochs, lo=0, hi=MAX_WHOLE, lo_open=True
    )  # steps >= epochs stay whole doubles
    dataset_size = optional("dataset_size", dataset_size, lo=1, whole=True)
    eps_error = optional("eps_error", eps_error, lo=0, lo_open=True, single=True)
    broadcast(
        noise_multiplier=noise_multiplier,
        delta=delta,
        target_epsilon=target_epsilon,
        steps=steps,
        epochs=epochs,
        dataset_size=dataset_size,
    )
    if accountant == "pld":
        q, _ = max_sample_rate_pld(
            noise_multiplier,
            steps,
            delta,
            target_epsilon,
            dataset_size=dataset_size,
            epochs=epochs,
            eps_error=eps_error,
            rtol=rtol,
        )
        return Bound(q)

    q, _ = rate_budget.max_sample_rate(
        noise_multiplier,
        steps,
        delta,
        target_epsilon,
        epochs=epochs,
        dataset_size=dataset_size,
        conversion=conversion,
        rtol=rtol,
    )
    return Bound(q)
