"""dpcalc as a Python library: the questions of the command line, as functions on arrays.

A small, stable facade over :mod:`dpcalc.engine` (numpy and scipy only; nothing here prints).  Every
function broadcasts its numeric arguments (scalars or numpy arrays) and returns a :class:`Bound`:
``value`` is always a certified upper bound (rounded to the safe side), ``lower`` and ``estimate`` are
filled in where the method brackets the exact value (privacy loss distributions), and ``alpha`` is the
Rényi order that attains an RDP-based bound.  Bad input raises :class:`dpcalc.errors.InputError`.

    from dpcalc import api
    api.sgd_epsilon(sample_rate=0.01, noise_multiplier=1.1, steps=10_000, delta=1e-5).value

The mathematics each function uses is stated in docs/math.md; the engine modules it calls cite the
papers.  Anything more specialised (amplification by iteration, Langevin dynamics, odometers, the
individual conversions) is in the engine packages, named by topic: ``dpcalc.engine.conversion``,
``.mechanisms``, ``.composition``, ``.pld``, ``.dpsgd``, ``.hidden_state``, ``.adaptive``.
"""

from __future__ import annotations

from typing import Any, NamedTuple

__all__ = [
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


class Bound(NamedTuple):
    """A privacy bound: ``value`` is a certified upper bound; ``lower``/``estimate`` bracket the exact
    value where the method computes a bracket (else ``None``); ``alpha`` is the attaining Rényi order
    of an RDP-based bound (else ``None``)."""

    value: Any
    lower: Any = None
    estimate: Any = None
    alpha: Any = None


def _orders(alphas):
    from dpcalc.engine.orders import DEFAULT_ORDERS

    return DEFAULT_ORDERS if alphas is None else alphas


def epsilon_from_rdp(alphas, rdp, delta, method: str = "optimal") -> Bound:
    """The smallest ε at ``delta`` certified by a Rényi-DP curve ``rdp`` over the orders ``alphas``
    (the last axis), minimised over the orders.  ``method``: optimal (Asoodeh et al. 2021), asoodeh,
    balle (Balle et al. 2020 / Canonne et al. 2020), mironov (Mironov 2017).  docs/math.md §1."""
    from dpcalc.engine.conversion import methods as conversions

    b = conversions.eps_from_curve(alphas, rdp, delta, method=method)
    return Bound(b.value, alpha=b.alpha)


def delta_from_rdp(alphas, rdp, epsilon, method: str = "optimal") -> Bound:
    """The smallest δ at ``epsilon`` certified by a Rényi-DP curve (as :func:`epsilon_from_rdp`)."""
    from dpcalc.engine.conversion import methods as conversions

    b = conversions.delta_from_curve(alphas, rdp, epsilon, method=method)
    return Bound(b.value, alpha=b.alpha)


def rdp_from_dp(alpha, epsilon, delta):
    """The largest Rényi-DP level at order ``alpha`` that certifies (ε, δ)-DP (Asoodeh et al.'s exact
    conversion, as a certified lower bound: what a privacy filter may spend).  docs/math.md §1.3–§1.4."""
    from dpcalc.engine.conversion import methods as conversions

    return conversions.zeta_opt(alpha, epsilon, delta)


def mechanism(text: str):
    """Parse one MECHANISM spec (``"gaussian:sigma=2,count=10"``; the grammar of ``dpcalc compose``)."""
    from dpcalc.spec import parse_mechanism

    return parse_mechanism(text)


def _specs(mechanisms):
    from dpcalc.spec import MechanismSpec, parse_mechanisms

    if isinstance(mechanisms, (str, MechanismSpec)):
        mechanisms = [mechanisms]
    texts = [m for m in mechanisms if isinstance(m, str)]
    parsed = iter(parse_mechanisms(texts)) if texts else iter(())
    return [next(parsed) if isinstance(m, str) else m for m in mechanisms]


def rdp_curve(mechanisms, alphas=None):
    """The Rényi-DP curve of a composition of mechanisms (specs or their text) at the orders ``alphas``
    (default: dpcalc's 225 orders from 1.01 to 1e4).  Composition adds curves (Mironov 2017, Prop. 1)."""
    from dpcalc.engine.mechanisms.catalogue import total_rdp

    return total_rdp(_specs(mechanisms), _orders(alphas))


def compose(mechanisms, *, delta=None, epsilon=None, method: str = "pld", eps_error=None) -> Bound:
    """ε at ``delta`` (or δ at ``epsilon``) of a composition of mechanisms.

    ``method``: ``pld`` (privacy loss distributions: a certified bracket, the tightest for every kind
    with a loss distribution), ``rdp`` (Rényi-DP curves and the optimal conversion; every kind but
    ``dp`` specs with δ > 0) or ``exact`` (compositions of plain Gaussians: Balle & Wang 2018).
    ``delta``/``epsilon`` may be arrays.  docs/math.md §2, §7.
    """
    import numpy as np

    from dpcalc.errors import InputError

    if (delta is None) == (epsilon is None):
        raise InputError("compose: give exactly one of delta and epsilon")
    specs = _specs(mechanisms)
    if method == "pld":
        from dpcalc.engine.pld.accountant import compose_pld

        lower, estimate, upper = compose_pld(specs, delta=delta, epsilon=epsilon, eps_error=eps_error)
        return Bound(upper, lower, estimate)
    if method == "rdp":
        curve = rdp_curve(specs)
        fn = epsilon_from_rdp if delta is not None else delta_from_rdp
        return fn(_orders(None), curve, delta if delta is not None else epsilon)
    if method == "exact":
        from dpcalc.engine.mechanisms import gaussian_exact
        from dpcalc.engine.mechanisms.catalogue import gaussian_r2

        r2 = gaussian_r2(specs)
        if r2 is None:
            raise InputError("compose: method 'exact' is for compositions of plain gaussian specs")
        r = float(np.sqrt(r2))
        if delta is not None:
            return Bound(gaussian_exact.eps_gaussian(delta, r))
        return Bound(gaussian_exact.delta_gaussian(epsilon, r))
    raise InputError(f"compose: method must be one of pld, rdp, exact, got {method!r}")


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
) -> Bound:
    """ε of DP-SGD: ``steps`` steps at sampling rate q and noise multiplier σ, at ``delta``.

    ``accountant``: ``rdp`` (exact RDP of the subsampled Gaussian: Mironov, Talwar & Zhang 2019 for
    Poisson sampling; Wang, Balle & Kasiviswanathan 2019 for ``sampling="fixed-size"``), converted by
    ``conversion``; or ``pld`` (a certified bracket; Poisson sampling, plain or truncated; for the allocation
    samplers a certified upper bound with no lower end, §3.10).  ``sampling`` also takes
    ``"truncated-poisson"`` (with ``dataset_size`` N and ``max_batch_size`` B, docs/math.md §3.7),
    ``"balls-in-bins"`` and ``"random-allocation"`` (§3.8); ``neighbors`` defaults to replace-one for
    fixed-size sampling and add/remove otherwise.  Arguments broadcast.  docs/math.md §3, §7.
    """
    if neighbors is None:
        neighbors = "replace-one" if sampling == "fixed-size" else "add-remove"
    trunc = {}
    if sampling == "truncated-poisson":
        trunc = dict(dataset_size=dataset_size, max_batch_size=max_batch_size)
    if accountant == "pld":
        from dpcalc.engine.dpsgd.allocation import SAMPLINGS
        from dpcalc.engine.pld.accountant import sgd_epsilon_pld
        from dpcalc.errors import InputError

        if sampling in SAMPLINGS:
            trunc = dict(sampling=sampling, dataset_size=dataset_size)
        elif sampling not in ("poisson", "truncated-poisson"):
            raise InputError(
                "sgd_epsilon: the pld accountant is for Poisson sampling (plain or truncated) and random allocation"
            )
        lower, estimate, upper = sgd_epsilon_pld(
            sample_rate, noise_multiplier, steps, delta, eps_error, neighbors=neighbors, **trunc
        )
        return Bound(upper, lower, estimate)
    from dpcalc.engine.dpsgd import accounting

    if dataset_size is not None:
        trunc["dataset_size"] = dataset_size
    e = accounting.epsilon(
        accountant,
        sample_rate,
        noise_multiplier,
        steps,
        delta,
        conversion=conversion,
        sampling=sampling,
        neighbors=neighbors,
        warn=False,
        **trunc,
    )
    return Bound(e.epsilon, alpha=e.alpha)


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
):
    """The smallest noise multiplier (within a factor 1 + rtol, rounded up) whose DP-SGD ε at ``delta``
    is at most ``target_epsilon`` (Poisson sampling): by exact RDP and ``conversion``, or with
    ``accountant="pld"`` by the certified upper end of the PLD bracket.  Arguments broadcast."""
    if accountant == "pld":
        from dpcalc.engine.pld.calibration import calibrate_noise_pld

        sigma, _ = calibrate_noise_pld(
            sample_rate, steps, delta, target_epsilon, rtol=rtol, eps_error=eps_error
        )
        return sigma
    from dpcalc.engine.dpsgd import noise_calibration

    sigma, _ = noise_calibration.calibrate_noise(
        sample_rate, steps, delta, target_epsilon, conversion=conversion, rtol=rtol
    )
    return sigma


def sgd_steps(
    sample_rate,
    noise_multiplier,
    delta,
    target_epsilon,
    *,
    accountant: str = "rdp",
    conversion: str = "optimal",
    eps_error=None,
):
    """The largest number of DP-SGD steps whose ε at ``delta`` is at most ``target_epsilon`` (Poisson
    sampling; 0 where even one step exceeds it): by exact RDP and ``conversion``, or with
    ``accountant="pld"`` by the certified upper end of the PLD bracket.  Arguments broadcast."""
    if accountant == "pld":
        from dpcalc.engine.pld.calibration import max_steps_pld

        steps, _ = max_steps_pld(sample_rate, noise_multiplier, delta, target_epsilon, eps_error=eps_error)
        return steps
    from dpcalc.engine.dpsgd import step_budget

    steps, _ = step_budget.max_steps(
        sample_rate, noise_multiplier, delta, target_epsilon, conversion=conversion
    )
    return steps


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
):
    """The largest sample rate (within a factor 1 + rtol) whose DP-SGD ε at ``delta`` is at most
    ``target_epsilon`` (Poisson sampling), for ``steps`` steps or ``epochs`` epochs (then the run has
    ceil(epochs / q) steps); with ``dataset_size`` N the largest batch size B, returned as q = B/N.
    0 where nothing fits.  ``accountant``: ``rdp`` or ``pld`` (certified upper end).  Arguments broadcast."""
    from dpcalc.errors import InputError

    if (steps is None) == (epochs is None):
        raise InputError("sgd_sample_rate: give exactly one of steps and epochs")
    if accountant == "pld":
        from dpcalc.engine.pld.calibration import max_sample_rate_pld

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
        return q
    from dpcalc.engine.dpsgd import rate_budget

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
    return q


def compose_tpr(mechanisms, fpr, *, method: str = "pld", eps_error=None) -> Bound:
    """The largest true-positive rate of any membership test at false-positive rate ``fpr`` (an array)
    against a composition of mechanisms: ``value`` a certified upper bound on it, from the privacy profile
    (docs/math.md §10).  ``method``: ``pld`` (a bracket: ``lower``/``estimate`` too), ``rdp`` (an upper
    bound) or ``exact`` (compositions of plain Gaussians: μ-GDP, TPR = Φ(Φ⁻¹(α) + μ), ``alpha`` is μ)."""
    import numpy as np

    from dpcalc.engine import tradeoff
    from dpcalc.errors import InputError

    fpr = tradeoff.check_fpr(np.atleast_1d(np.asarray(fpr, float)))
    specs = _specs(mechanisms)
    if method == "pld":
        from dpcalc.engine.pld.accountant import compose_pld

        lo, est, hi = tradeoff.pld_tpr(
            fpr,
            lambda e: compose_pld(specs, epsilon=e, eps_error=eps_error),
            lambda d: compose_pld(specs, delta=d, eps_error=eps_error).upper,
        )
        return Bound(hi, lo, est)
    if method == "rdp":
        return Bound(tradeoff.rdp_tpr(_orders(None), rdp_curve(specs), fpr))
    if method == "exact":
        from dpcalc.engine.mechanisms.catalogue import gaussian_r2

        r2 = gaussian_r2(specs)
        if r2 is None:
            raise InputError("compose_tpr: method 'exact' is for compositions of plain gaussian specs")
        mu = float(np.sqrt(r2))
        return Bound(tradeoff.gaussian_tpr(fpr, mu), tradeoff.gaussian_tpr_lower(fpr, mu), alpha=mu)
    raise InputError(f"compose_tpr: method must be one of pld, rdp, exact, got {method!r}")


def sgd_tpr(sample_rate, noise_multiplier, steps, fpr, *, accountant: str = "pld", eps_error=None) -> Bound:
    """As :func:`compose_tpr` for one DP-SGD run (Poisson sampling, add/remove neighbours): ``steps`` steps
    at rate q and noise multiplier σ (scalars), at each false-positive rate of ``fpr``.  ``accountant``:
    ``pld`` (a certified bracket) or ``rdp`` (an upper bound from the exact Rényi curve)."""
    import numpy as np

    from dpcalc.engine import tradeoff
    from dpcalc.errors import InputError

    fpr = tradeoff.check_fpr(np.atleast_1d(np.asarray(fpr, float)))
    q, sigma, steps = float(sample_rate), float(noise_multiplier), float(steps)
    if accountant == "pld":
        from dpcalc.engine.pld.accountant import sgd_delta_pld, sgd_epsilon_pld

        lo, est, hi = tradeoff.pld_tpr(
            fpr,
            lambda e: sgd_delta_pld(q, sigma, steps, e, eps_error),
            lambda d: sgd_epsilon_pld(q, sigma, steps, d, eps_error).upper,
        )
        return Bound(hi, lo, est)
    if accountant == "rdp":
        from dpcalc.engine.dpsgd import sgm

        curve = steps * np.asarray(sgm.rdp_poisson(q, sigma, _orders(None)), float)
        return Bound(tradeoff.rdp_tpr(_orders(None), curve, fpr))
    raise InputError(f"sgd_tpr: accountant must be pld or rdp, got {accountant!r}")
