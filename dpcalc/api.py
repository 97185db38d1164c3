"""dpcalc as a Python library: the questions of the command line, as functions on arrays.

A small, stable facade over :mod:`dpcalc.engine` (numpy and scipy only; nothing here prints).  Every
function broadcasts its numeric arguments (scalars or numpy arrays).  Every function that answers a
privacy question returns a :class:`Bound` whose ``value`` is certified and rounded to the safe side:
an upper bound on ε, δ or a true-positive rate; for an inverse question, a parameter that provably
meets the target (the noise multiplier, the number of steps or the sample rate of a DP-SGD run,
the Rényi level that certifies (ε, δ)).  ``lower`` and ``estimate`` are filled in where the method
brackets the exact value (privacy loss distributions), and ``alpha`` is the Rényi order that attains
an RDP-based bound.  :func:`rdp_curve` returns a Rényi curve (an array) and :func:`mechanism` a parsed
spec.

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

import functools
import math
import re
import warnings
from typing import Any, NamedTuple

from dpcalc.errors import DpcalcWarning, InputError

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

#: the most values one call may broadcast to (the command line refuses sweeps past 10 million rows)
MAX_VALUES = 1_000_000
#: the largest whole number accepted for a count (2^53: every whole number up to it is a double)
MAX_WHOLE = 2**53


class Bound(NamedTuple):
    """A privacy bound: ``value`` is certified and rounded to the safe side (an upper bound on ε, δ or
    a TPR; for an inverse question a parameter that provably meets the target); ``lower``/``estimate``
    bracket the exact value where the method computes a bracket (else ``None``); ``alpha`` is the
    attaining Rényi order of an RDP-based bound (else ``None``)."""

    value: Any
    lower: Any = None
    estimate: Any = None
    alpha: Any = None


# -- checking the arguments ---------------------------------------------------------------------
_OPTION = re.compile(r"--([a-z][a-z0-9-]*)")
#: command-line options whose parameter has another name
_PARAMETER = {"sigma": "noise_multiplier"}


def _parameter_names(message: str) -> str:
    """An engine message with its command-line option names (``--target-epsilon``) as the library's
    parameter names (``target_epsilon``)."""

    def name(m):
        opt = m.group(1)
        return _PARAMETER.get(opt, opt.replace("-", "_"))

    return _OPTION.sub(name, message)


def _contract(fn):
    """Every error from bad input is an :class:`InputError` naming parameters, not options."""

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        try:
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always", DpcalcWarning)
                result = fn(*args, **kwargs)
            for w in caught:  # the engine's warnings, with parameter names, where the caller sees them
                if issubclass(w.category, DpcalcWarning):
                    warnings.warn(w.category(_parameter_names(str(w.message))), stacklevel=2)
                else:
                    warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
            return result
        except InputError as exc:
            raise InputError(_parameter_names(str(exc))) from None
        except ValueError as exc:  # a plain ValueError from numpy or scipy on a value outside a domain
            raise InputError(f"{fn.__name__}: {_parameter_names(str(exc))}") from None

    return wrapper


def _show(v: float) -> str:
    v = float(v)
    return str(int(v)) if v.is_integer() and abs(v) < 1e16 else repr(v)


def _real(
    name: str,
    x,
    *,
    lo: float | None = None,
    hi: float | None = None,
    lo_open: bool = False,
    hi_open: bool = False,
    whole: bool = False,
    inf: bool = False,
    single: bool = False,
):
    """``x`` checked: numbers (or an array of them) in the domain, whole where ``whole``, finite unless
    ``inf`` (+inf allowed), one number where ``single``.  Returns a float (an int where ``whole``) for a
    single number, else a float array.  Anything else: an :class:`InputError` naming ``name``."""
    import numpy as np

    if isinstance(x, (str, bytes)) or x is None:
        raise InputError(f"{name}: must be a number or an array of numbers, got {x!r}")
    try:
        a = np.asarray(x, dtype=float)
    except (TypeError, ValueError, OverflowError):
        raise InputError(f"{name}: must be a number or an array of numbers, got {x!r}") from None
    if a.size > MAX_VALUES:
        raise InputError(f"{name}: at most {MAX_VALUES} values, got {a.size}")
    if single and a.size != 1:
        raise InputError(f"{name}: must be a single number, got an array of shape {a.shape}")
    if a.size == 0:
        raise InputError(f"{name}: must hold at least one value")
    parts = []
    if whole:
        parts.append("a whole number")
    if lo is not None and hi is not None:
        parts.append(f"in {'(' if lo_open else '['}{_show(lo)}, {_show(hi)}{')' if hi_open else ']'}")
    elif lo is not None:
        parts.append(f"{'>' if lo_open else '>='} {_show(lo)}")
    with np.errstate(invalid="ignore"):
        ok = ~np.isnan(a) & (np.isfinite(a) | (inf & (a > 0)))
        if lo is not None:
            ok &= (a > lo) if lo_open else (a >= lo)
        if hi is not None:
            ok &= (a < hi) if hi_open else (a <= hi)
        if whole:
            ok &= (np.floor(a) == a) & (a <= MAX_WHOLE)
    if not np.all(ok):
        bad = float(a[~ok].flat[0])
        what = " ".join(parts) or "a finite number"
        if not inf and not math.isnan(bad) and math.isinf(bad):
            what = f"finite ({what})"
        raise InputError(f"{name}: must be {what}, got {_show(bad)}")
    if a.ndim == 0 or single:
        v = a.reshape(-1)[0]
        return int(v) if whole else float(v)
    return a


def _size(**arrays) -> None:
    """The arguments broadcast together, to at most :data:`MAX_VALUES` values."""
    import numpy as np

    shapes = [np.shape(v) for v in arrays.values() if v is not None]
    try:
        shape = np.broadcast_shapes(*shapes)
    except ValueError:
        names = ", ".join(k for k, v in arrays.items() if v is not None)
        raise InputError(f"{names}: the shapes {shapes} do not broadcast together") from None
    if math.prod(shape) > MAX_VALUES:
        raise InputError(f"the arguments broadcast to {math.prod(shape)} values, more than {MAX_VALUES}")


def _choice(name: str, value, choices) -> str:
    if not isinstance(value, str) or value not in choices:
        raise InputError(f"{name}: must be one of {', '.join(choices)}, got {value!r}")
    return value


def _optional(name: str, x, **domain):
    return None if x is None else _real(name, x, **domain)


def _orders(alphas):
    from dpcalc.engine.orders import DEFAULT_ORDERS

    return DEFAULT_ORDERS if alphas is None else alphas


_CONVERSIONS = ("optimal", "asoodeh", "balle", "mironov")
_SGD_CONVERSIONS = ("optimal", "balle", "mironov")
_SAMPLINGS = ("poisson", "fixed-size", "truncated-poisson", "balls-in-bins", "random-allocation")


def _curve(alphas, rdp):
    alphas = _real("alphas", alphas, lo=1, lo_open=True, inf=True)
    rdp = _real("rdp", rdp, lo=0, inf=True)
    if getattr(alphas, "ndim", 0) != 1:
        raise InputError("alphas: the orders of a curve must be a 1-D array")
    return alphas, rdp


# -- the questions -------------------------------------------------------------------------------
@_contract
def epsilon_from_rdp(alphas, rdp, delta, method: str = "optimal") -> Bound:
    """The smallest ε at ``delta`` certified by a Rényi-DP curve ``rdp`` over the orders ``alphas``
    (a 1-D array > 1; ``rdp`` >= 0 has the orders on its last axis, +inf where there is no bound),
    minimised over the orders.  ``method``: optimal (Asoodeh et al. 2021), asoodeh, balle (Balle et
    al. 2020 / Canonne et al. 2020), mironov (Mironov 2017).  docs/math.md §1."""
    from dpcalc.engine.conversion import methods as conversions

    method = _choice("method", method, _CONVERSIONS)
    alphas, rdp = _curve(alphas, rdp)
    delta = _real("delta", delta, lo=0, hi=1)
    b = conversions.eps_from_curve(alphas, rdp, delta, method=method)
    return Bound(b.value, alpha=b.alpha)


@_contract
def delta_from_rdp(alphas, rdp, epsilon, method: str = "optimal") -> Bound:
    """The smallest δ at ``epsilon`` (>= 0) certified by a Rényi-DP curve (as :func:`epsilon_from_rdp`)."""
    from dpcalc.engine.conversion import methods as conversions

    method = _choice("method", method, _CONVERSIONS)
    alphas, rdp = _curve(alphas, rdp)
    epsilon = _real("epsilon", epsilon, lo=0, inf=True)
    b = conversions.delta_from_curve(alphas, rdp, epsilon, method=method)
    return Bound(b.value, alpha=b.alpha)


@_contract
def rdp_from_dp(alpha, epsilon, delta) -> Bound:
    """The largest Rényi-DP level ζ at order ``alpha`` (> 1) such that every (α, ζ)-RDP mechanism is
    (ε, δ)-DP: Asoodeh et al.'s exact conversion, rounded down (``value``: every level up to it certifies
    (ε, δ); what a privacy filter may spend).  docs/math.md §1.3–§1.4."""
    from dpcalc.engine.conversion import methods as conversions

    alpha = _real("alpha", alpha, lo=1, lo_open=True)
    epsilon = _real("epsilon", epsilon, lo=0, inf=True)
    delta = _real("delta", delta, lo=0, hi=1)
    _size(alpha=alpha, epsilon=epsilon, delta=delta)
    return Bound(conversions.zeta_opt(alpha, epsilon, delta))


@_contract
def mechanism(text: str):
    """Parse one MECHANISM spec (``"gaussian:sigma=2,count=10"``; the grammar of ``dpcalc compose``)."""
    from dpcalc.spec import parse_mechanism

    if not isinstance(text, str):
        raise InputError(f"text: must be a MECHANISM spec such as 'gaussian:sigma=1', got {text!r}")
    return parse_mechanism(text)


def _specs(mechanisms):
    from dpcalc.spec import MechanismSpec, parse_mechanisms

    if isinstance(mechanisms, (str, MechanismSpec)):
        mechanisms = [mechanisms]
    try:
        mechanisms = list(mechanisms)
    except TypeError:
        raise InputError(
            f"mechanisms: must be a spec, a MechanismSpec or a list of them, got {mechanisms!r}"
        ) from None
    bad = [m for m in mechanisms if not isinstance(m, (str, MechanismSpec))]
    if bad:
        raise InputError(f"mechanisms: each must be a spec string or a MechanismSpec, got {bad[0]!r}")
    if not mechanisms:
        raise InputError("mechanisms: give at least one mechanism, e.g. 'gaussian:sigma=1,count=10'")
    texts = [m for m in mechanisms if isinstance(m, str)]
    parsed = iter(parse_mechanisms(texts)) if texts else iter(())
    return [next(parsed) if isinstance(m, str) else m for m in mechanisms]


@_contract
def rdp_curve(mechanisms, alphas=None):
    """The Rényi-DP curve (an array, one value per order; +inf where there is no bound) of a composition
    of mechanisms (specs or their text) at the orders ``alphas`` (> 1; default: dpcalc's 225 orders from
    1.01 to 1e4).  Composition adds curves (Mironov 2017, Prop. 1)."""
    from dpcalc.engine.mechanisms.catalogue import total_rdp

    if alphas is not None:
        alphas = _real("alphas", alphas, lo=1, lo_open=True)
    return total_rdp(_specs(mechanisms), _orders(alphas))


@_contract
def compose(mechanisms, *, delta=None, epsilon=None, method: str = "pld", eps_error=None) -> Bound:
    """ε at ``delta`` (or δ at ``epsilon``) of a composition of mechanisms.

    ``method``: ``pld`` (privacy loss distributions: a certified bracket, the tightest for every kind
    with a loss distribution), ``rdp`` (Rényi-DP curves and the optimal conversion; every kind but
    ``dp`` specs with δ > 0) or ``exact`` (compositions of plain Gaussians: Balle & Wang 2018).
    ``delta`` (in [0, 1]) or ``epsilon`` (>= 0) may be arrays.  docs/math.md §2, §7.
    """
    import numpy as np

    if (delta is None) == (epsilon is None):
        raise InputError("compose: give exactly one of delta and epsilon")
    method = _choice("method", method, ("pld", "rdp", "exact"))
    delta = _optional("delta", delta, lo=0, hi=1)
    epsilon = _optional("epsilon", epsilon, lo=0)
    eps_error = _optional("eps_error", eps_error, lo=0, lo_open=True, single=True)
    specs = _specs(mechanisms)
    if method == "pld":
        from dpcalc.engine.composition.pld import compose_pld

        lower, estimate, upper = compose_pld(specs, delta=delta, epsilon=epsilon, eps_error=eps_error)
        return Bound(upper, lower, estimate)
    if method == "rdp":
        curve = rdp_curve(specs)
        fn = epsilon_from_rdp if delta is not None else delta_from_rdp
        return fn(_orders(None), curve, delta if delta is not None else epsilon)
    from dpcalc.engine.mechanisms import gaussian_exact
    from dpcalc.engine.mechanisms.catalogue import gaussian_r2

    r2 = gaussian_r2(specs)
    if r2 is None:
        raise InputError("method: 'exact' is for compositions of plain gaussian specs")
    r = float(np.sqrt(r2))
    if delta is not None:
        return Bound(gaussian_exact.eps_gaussian(delta, r))
    return Bound(gaussian_exact.delta_gaussian(epsilon, r))


def _sgd_common(sample_rate, noise_multiplier, steps, delta, *, delta_zero=True):
    return (
        _real("sample_rate", sample_rate, lo=0, hi=1, lo_open=True) if sample_rate is not None else None,
        _real("noise_multiplier", noise_multiplier, lo=0, lo_open=True)
        if noise_multiplier is not None
        else None,
        _real("steps", steps, lo=1, whole=True) if steps is not None else None,
        _real("delta", delta, lo=0, hi=1, lo_open=not delta_zero, hi_open=True),
    )


@_contract
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
    docs/math.md §3, §7.
    """
    accountant = _choice("accountant", accountant, ("rdp", "pld"))
    conversion = _choice("conversion", conversion, _SGD_CONVERSIONS)
    sampling = _choice("sampling", sampling, _SAMPLINGS)
    if neighbors is None:
        neighbors = "replace-one" if sampling == "fixed-size" else "add-remove"
    neighbors = _choice("neighbors", neighbors, ("add-remove", "replace-one"))
    sample_rate, noise_multiplier, steps, delta = _sgd_common(sample_rate, noise_multiplier, steps, delta)
    dataset_size = _optional("dataset_size", dataset_size, lo=1, whole=True)
    max_batch_size = _optional("max_batch_size", max_batch_size, lo=1, whole=True)
    eps_error = _optional("eps_error", eps_error, lo=0, lo_open=True, single=True)
    _size(
        sample_rate=sample_rate,
        noise_multiplier=noise_multiplier,
        steps=steps,
        delta=delta,
        dataset_size=dataset_size,
        max_batch_size=max_batch_size,
    )
    trunc = {}
    if sampling == "truncated-poisson":
        trunc = dict(dataset_size=dataset_size, max_batch_size=max_batch_size)
    if accountant == "pld":
        from dpcalc.engine.dpsgd.allocation import SAMPLINGS
        from dpcalc.engine.dpsgd.pld_accounting import sgd_epsilon_pld

        if sampling in SAMPLINGS:
            trunc = dict(sampling=sampling, dataset_size=dataset_size)
        elif sampling not in ("poisson", "truncated-poisson"):
            raise InputError(
                "accountant: pld is for Poisson sampling (plain or truncated) and random allocation"
            )
        lower, estimate, upper = sgd_epsilon_pld(
            sample_rate, noise_multiplier, steps, delta, eps_error, neighbors=neighbors, **trunc
        )
        return Bound(upper, lower, estimate)
    from dpcalc.engine.dpsgd import accounting

    if dataset_size is not None:
        trunc["dataset_size"] = dataset_size
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
        **trunc,
    )
    return Bound(e.epsilon, alpha=e.alpha)


def _target(target_epsilon):
    return _real("target_epsilon", target_epsilon, lo=0, lo_open=True)


def _rtol(rtol):
    return _real("rtol", rtol, lo=1e-10, hi=0.5, single=True)


@_contract
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
    accountant = _choice("accountant", accountant, ("rdp", "pld"))
    conversion = _choice("conversion", conversion, _SGD_CONVERSIONS)
    sample_rate, _, steps, delta = _sgd_common(sample_rate, None, steps, delta, delta_zero=False)
    target_epsilon, rtol = _target(target_epsilon), _rtol(rtol)
    eps_error = _optional("eps_error", eps_error, lo=0, lo_open=True, single=True)
    _size(sample_rate=sample_rate, steps=steps, delta=delta, target_epsilon=target_epsilon)
    if accountant == "pld":
        from dpcalc.engine.dpsgd.pld_calibration import calibrate_noise_pld

        sigma, _ = calibrate_noise_pld(
            sample_rate, steps, delta, target_epsilon, rtol=rtol, eps_error=eps_error
        )
        return Bound(sigma)
    from dpcalc.engine.dpsgd import noise_calibration

    sigma, _ = noise_calibration.calibrate_noise(
        sample_rate, steps, delta, target_epsilon, conversion=conversion, rtol=rtol
    )
    return Bound(sigma)


@_contract
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
    accountant = _choice("accountant", accountant, ("rdp", "pld"))
    conversion = _choice("conversion", conversion, _SGD_CONVERSIONS)
    sample_rate, noise_multiplier, _, delta = _sgd_common(
        sample_rate, noise_multiplier, None, delta, delta_zero=False
    )
    target_epsilon = _target(target_epsilon)
    eps_error = _optional("eps_error", eps_error, lo=0, lo_open=True, single=True)
    _size(
        sample_rate=sample_rate, noise_multiplier=noise_multiplier, delta=delta, target_epsilon=target_epsilon
    )
    if accountant == "pld":
        from dpcalc.engine.dpsgd.pld_calibration import max_steps_pld

        steps, _ = max_steps_pld(sample_rate, noise_multiplier, delta, target_epsilon, eps_error=eps_error)
        return Bound(steps)
    from dpcalc.engine.dpsgd import step_budget

    steps, _ = step_budget.max_steps(
        sample_rate, noise_multiplier, delta, target_epsilon, conversion=conversion
    )
    return Bound(steps)


@_contract
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
    accountant = _choice("accountant", accountant, ("rdp", "pld"))
    conversion = _choice("conversion", conversion, _SGD_CONVERSIONS)
    _, noise_multiplier, steps, delta = _sgd_common(None, noise_multiplier, steps, delta, delta_zero=False)
    target_epsilon, rtol = _target(target_epsilon), _rtol(rtol)
    epochs = _optional(
        "epochs", epochs, lo=0, hi=MAX_WHOLE, lo_open=True
    )  # steps >= epochs stay whole doubles
    dataset_size = _optional("dataset_size", dataset_size, lo=1, whole=True)
    eps_error = _optional("eps_error", eps_error, lo=0, lo_open=True, single=True)
    _size(
        noise_multiplier=noise_multiplier,
        delta=delta,
        target_epsilon=target_epsilon,
        steps=steps,
        epochs=epochs,
        dataset_size=dataset_size,
    )
    if accountant == "pld":
        from dpcalc.engine.dpsgd.pld_calibration import max_sample_rate_pld

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
    return Bound(q)


def _fpr(fpr):
    import numpy as np

    return np.atleast_1d(np.asarray(_real("fpr", fpr, lo=0, hi=1, lo_open=True, hi_open=True), float))


@_contract
def compose_tpr(mechanisms, fpr, *, method: str = "pld", eps_error=None) -> Bound:
    """The largest true-positive rate of any membership test at false-positive rate ``fpr`` (in (0, 1),
    an array) against a composition of mechanisms: ``value`` a certified upper bound on it, from the
    privacy profile (docs/math.md §10).  ``method``: ``pld`` (a bracket: ``lower``/``estimate`` too),
    ``rdp`` (an upper bound) or ``exact`` (compositions of plain Gaussians: μ-GDP, TPR = Φ(Φ⁻¹(α) + μ),
    ``alpha`` is μ)."""
    import numpy as np

    from dpcalc.engine import tradeoff

    method = _choice("method", method, ("pld", "rdp", "exact"))
    fpr = _fpr(fpr)
    eps_error = _optional("eps_error", eps_error, lo=0, lo_open=True, single=True)
    specs = _specs(mechanisms)
    if method == "pld":
        from dpcalc.engine.composition.pld import compose_pld

        lo, est, hi = tradeoff.pld_tpr(
            fpr,
            lambda e: compose_pld(specs, epsilon=e, eps_error=eps_error),
            lambda d: compose_pld(specs, delta=d, eps_error=eps_error).upper,
        )
        return Bound(hi, lo, est)
    if method == "rdp":
        return Bound(tradeoff.rdp_tpr(_orders(None), rdp_curve(specs), fpr))
    from dpcalc.engine.mechanisms.catalogue import gaussian_r2

    r2 = gaussian_r2(specs)
    if r2 is None:
        raise InputError("method: 'exact' is for compositions of plain gaussian specs")
    mu = float(np.sqrt(r2))
    return Bound(tradeoff.gaussian_tpr(fpr, mu), tradeoff.gaussian_tpr_lower(fpr, mu), alpha=mu)


@_contract
def sgd_tpr(sample_rate, noise_multiplier, steps, fpr, *, accountant: str = "pld", eps_error=None) -> Bound:
    """As :func:`compose_tpr` for one DP-SGD run (Poisson sampling, add/remove neighbours): ``steps`` steps
    (a whole number >= 1) at rate q in (0, 1] and noise multiplier σ > 0 (single numbers), at each
    false-positive rate of ``fpr``.  ``accountant``: ``pld`` (a certified bracket) or ``rdp`` (an upper
    bound from the exact Rényi curve)."""
    import numpy as np

    from dpcalc.engine import tradeoff

    accountant = _choice("accountant", accountant, ("pld", "rdp"))
    q = _real("sample_rate", sample_rate, lo=0, hi=1, lo_open=True, single=True)
    sigma = _real("noise_multiplier", noise_multiplier, lo=0, lo_open=True, single=True)
    steps = _real("steps", steps, lo=1, whole=True, single=True)
    fpr = _fpr(fpr)
    eps_error = _optional("eps_error", eps_error, lo=0, lo_open=True, single=True)
    q, sigma, steps = float(q), float(sigma), float(steps)
    if accountant == "pld":
        from dpcalc.engine.dpsgd.pld_accounting import sgd_delta_pld, sgd_epsilon_pld

        lo, est, hi = tradeoff.pld_tpr(
            fpr,
            lambda e: sgd_delta_pld(q, sigma, steps, e, eps_error),
            lambda d: sgd_epsilon_pld(q, sigma, steps, d, eps_error).upper,
        )
        return Bound(hi, lo, est)
    from dpcalc.engine.mechanisms import sgm

    curve = steps * np.asarray(sgm.rdp_poisson(q, sigma, _orders(None)), float)
    return Bound(tradeoff.rdp_tpr(_orders(None), curve, fpr))
