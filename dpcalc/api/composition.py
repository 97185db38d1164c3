"""Mechanisms and their composition (docs/math.md §2, §7): a parsed MECHANISM spec, the Rényi curve of a
composition, and its ε at δ (or δ at ε) by privacy loss distributions, Rényi DP or the exact Gaussian."""

from __future__ import annotations

import numpy as np

from dpcalc.api.contract import Bound, choice, contract, optional, orders, real
from dpcalc.api.conversions import delta_from_rdp, epsilon_from_rdp
from dpcalc.api.dp_events import event_specs, is_event
from dpcalc.engine.composition.pld import compose_pld
from dpcalc.engine.mechanisms import gaussian_exact
from dpcalc.engine.mechanisms.catalogue import gaussian_r2, total_rdp
from dpcalc.errors import InputError
from dpcalc.input.group import check_group_size, person_forms
from dpcalc.input.spec import MechanismSpec, parse_mechanism, parse_mechanisms


@contract
def mechanism(text: str):
    """Parse one MECHANISM spec (``"gaussian:sigma=2,count=10"``; the grammar of ``dpcalc compose``)."""
    if not isinstance(text, str):
        raise InputError(f"text: must be a MECHANISM spec such as 'gaussian:sigma=1', got {text!r}")
    return parse_mechanism(text)


def as_specs(mechanisms):
    """``mechanisms`` (a spec's text, a :class:`~dpcalc.input.spec.MechanismSpec`, a DpEvent of dp-accounting or its
    JSON object, or a list of them) as parsed specs; a DpEvent stands for the specs of its mechanisms
    (:mod:`dpcalc.api.dp_events`, docs/math.md §2.16)."""
    if isinstance(mechanisms, (str, MechanismSpec)) or is_event(mechanisms):
        mechanisms = [mechanisms]
    try:
        mechanisms = list(mechanisms)
    except TypeError:
        raise InputError(
            f"mechanisms: must be a spec, a MechanismSpec, a DpEvent or a list of them, got {mechanisms!r}"
        ) from None
    bad = [m for m in mechanisms if not (isinstance(m, (str, MechanismSpec)) or is_event(m))]
    if bad:
        raise InputError(
            f"mechanisms: each must be a spec string, a MechanismSpec or a DpEvent, got {bad[0]!r}"
        )
    if not mechanisms:
        raise InputError("mechanisms: give at least one mechanism, e.g. 'gaussian:sigma=1,count=10'")
    texts = [m for m in mechanisms if isinstance(m, str)]
    parsed = iter(parse_mechanisms(texts)) if texts else iter(())
    out = []
    for i, m in enumerate(mechanisms):
        if isinstance(m, str):
            out.append(next(parsed))
        elif isinstance(m, MechanismSpec):
            out.append(m)
        else:
            out += event_specs(m, "mechanisms" if len(mechanisms) == 1 else f"mechanisms[{i}]")
    if not out:
        raise InputError("mechanisms: the DpEvents hold no mechanism (NoOpDpEvent only)")
    return out


@contract
def rdp_curve(mechanisms, alphas=None):
    """The Rényi-DP curve (an array, one value per order; +inf where there is no bound) of a composition
    of mechanisms (specs or their text) at the orders ``alphas`` (> 1; default: dpcalc's 225 orders from
    1.01 to 1e4).  Composition adds curves (Mironov 2017, Prop. 1)."""
    if alphas is not None:
        alphas = real("alphas", alphas, lo=1, lo_open=True)
    return total_rdp(as_specs(mechanisms), orders(alphas))


@contract
def compose(
    mechanisms, *, delta=None, epsilon=None, method: str = "pld", eps_error=None, group_size=1
) -> Bound:
    """ε at ``delta`` (or δ at ``epsilon``) of a composition of mechanisms (specs, their text, or DpEvents of
    dp-accounting: ``api.compose(event, delta=1e-5)``; :func:`as_specs`).

    ``method``: ``pld`` (privacy loss distributions: a certified bracket, the tightest for every kind
    with a loss distribution), ``rdp`` (Rényi-DP curves and the optimal conversion; every kind but
    ``dp`` specs with δ > 0) or ``exact`` (compositions of plain Gaussians: Balle & Wang 2018).
    ``delta`` (in [0, 1]) or ``epsilon`` (>= 0) may be arrays.  docs/math.md §2, §7.

    ``group_size`` K (a whole number in [1, 10000]): the guarantee for a person who contributed K examples,
    each mechanism by its person-level form (:func:`dpcalc.input.group.person_form`, docs/math.md §2.15: the
    Gaussian and Laplace kinds with sensitivity KΔ, the Poisson-subsampled Gaussian as the mixture of
    Ganesh 2024, upper bounds for the rest); ``lower`` and ``estimate`` are ``None`` where a form is an
    upper bound only (the bracket's lower end would not be the person's).
    """
    if (delta is None) == (epsilon is None):
        raise InputError("compose: give exactly one of delta and epsilon")
    method = choice("method", method, ("pld", "rdp", "exact"))
    delta = optional("delta", delta, lo=0, hi=1)
    epsilon = optional("epsilon", epsilon, lo=0)
    eps_error = optional("eps_error", eps_error, lo=0, lo_open=True, single=True)
    group_size = check_group_size(group_size, "group_size")
    specs = as_specs(mechanisms)
    exact_forms = True
    if group_size > 1:
        forms = person_forms(specs, group_size)
        specs, exact_forms = [f.spec for f in forms], all(f.exact for f in forms)
    if method == "pld":
        lower, estimate, upper = compose_pld(specs, delta=delta, epsilon=epsilon, eps_error=eps_error)
        if not exact_forms:
            return Bound(upper)
        return Bound(upper, lower, estimate)
    if method == "rdp":
        curve = rdp_curve(specs)
        fn = epsilon_from_rdp if delta is not None else delta_from_rdp
        return fn(orders(None), curve, delta if delta is not None else epsilon)

    r2 = gaussian_r2(specs)
    if r2 is None:
        raise InputError("method: 'exact' is for compositions of plain gaussian specs")
    r = float(np.sqrt(r2))
    if delta is not None:
        return Bound(gaussian_exact.eps_gaussian(delta, r))
    return Bound(gaussian_exact.delta_gaussian(epsilon, r))
