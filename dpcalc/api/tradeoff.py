"""What a guarantee means for an attacker (docs/math.md §10): the largest true-positive rate of any
membership test at a false-positive rate, for a composition of mechanisms or a DP-SGD run."""

from __future__ import annotations

import numpy as np

from dpcalc.api.composition import as_specs, rdp_curve
from dpcalc.api.contract import Bound, choice, contract, optional, orders, real
from dpcalc.engine import tradeoff
from dpcalc.engine.composition.pld import compose_pld
from dpcalc.engine.dpsgd.pld_accounting import sgd_delta_pld, sgd_epsilon_pld
from dpcalc.engine.mechanisms import sgm
from dpcalc.engine.mechanisms.catalogue import gaussian_r2
from dpcalc.errors import InputError


def _fpr(fpr):
    return np.atleast_1d(np.asarray(real("fpr", fpr, lo=0, hi=1, lo_open=True, hi_open=True), float))


@contract
def compose_tpr(mechanisms, fpr, *, method: str = "pld", eps_error=None) -> Bound:
    """The largest true-positive rate of any membership test at false-positive rate ``fpr`` (in (0, 1),
    an array) against a composition of mechanisms: ``value`` a certified upper bound on it, from the
    privacy profile (docs/math.md §10).  ``method``: ``pld`` (a bracket: ``lower``/``estimate`` too),
    ``rdp`` (an upper bound) or ``exact`` (compositions of plain Gaussians: μ-GDP, TPR = Φ(Φ⁻¹(α) + μ),
    ``alpha`` is μ)."""
    method = choice("method", method, ("pld", "rdp", "exact"))
    fpr = _fpr(fpr)
    eps_error = optional("eps_error", eps_error, lo=0, lo_open=True, single=True)
    specs = as_specs(mechanisms)
    if method == "pld":
        lo, est, hi = tradeoff.pld_tpr(
            fpr,
            lambda e: compose_pld(specs, epsilon=e, eps_error=eps_error),
            lambda d: compose_pld(specs, delta=d, eps_error=eps_error).upper,
        )
        return Bound(hi, lo, est)
    if method == "rdp":
        return Bound(tradeoff.rdp_tpr(orders(None), rdp_curve(specs), fpr))

    r2 = gaussian_r2(specs)
    if r2 is None:
        raise InputError("method: 'exact' is for compositions of plain gaussian specs")
    mu = float(np.sqrt(r2))
    return Bound(tradeoff.gaussian_tpr(fpr, mu), tradeoff.gaussian_tpr_lower(fpr, mu), alpha=mu)


@contract
def sgd_tpr(sample_rate, noise_multiplier, steps, fpr, *, accountant: str = "pld", eps_error=None) -> Bound:
    """As :func:`compose_tpr` for one DP-SGD run (Poisson sampling, add/remove neighbours): ``steps`` steps
    (a whole number >= 1) at rate q in (0, 1] and noise multiplier σ > 0 (single numbers), at each
    false-positive rate of ``fpr``.  ``accountant``: ``pld`` (a certified bracket) or ``rdp`` (an upper
    bound from the exact Rényi curve)."""
    accountant = choice("accountant", accountant, ("pld", "rdp"))
    q = real("sample_rate", sample_rate, lo=0, hi=1, lo_open=True, single=True)
    sigma = real("noise_multiplier", noise_multiplier, lo=0, lo_open=True, single=True)
    steps = real("steps", steps, lo=1, whole=True, single=True)
    fpr = _fpr(fpr)
    eps_error = optional("eps_error", eps_error, lo=0, lo_open=True, single=True)
    q, sigma, steps = float(q), float(sigma), float(steps)
    if accountant == "pld":
        lo, est, hi = tradeoff.pld_tpr(
            fpr,
            lambda e: sgd_delta_pld(q, sigma, steps, e, eps_error),
            lambda d: sgd_epsilon_pld(q, sigma, steps, d, eps_error).upper,
        )
        return Bound(hi, lo, est)

    curve = steps * np.asarray(sgm.rdp_poisson(q, sigma, orders(None)), float)
    return Bound(tradeoff.rdp_tpr(orders(None), curve, fpr))
