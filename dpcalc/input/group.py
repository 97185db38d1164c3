"""A person with K examples: each MECHANISM spec's person-level form, by the tightest route the theory gives
(``compose --group-size K``, :func:`dpcalc.api.compose`; docs/math.md §2.15).

Every bound dpcalc prints protects one example (neighbouring datasets differ in one).  Datasets that differ in
one person's K examples are K neighbouring steps apart, and each spec becomes a spec of the same or another
kind whose guarantee covers them (:func:`person_form`):

* **exact** — the Gaussian, discrete Gaussian, Laplace and discrete Laplace with sensitivity K·Δ (the same
  mechanism on datasets K examples apart is that mechanism with sensitivity KΔ, by the triangle inequality,
  attained by a sum);
* **tight** — the Poisson-subsampled Gaussian (add/remove-one): the person's K examples are each sampled
  independently with probability q, so one step is the mixture ``mixture-gaussian:sigma=σ/Δ,group=K,q=q``
  (Ganesh 2024, arXiv:2401.10294, Thm 3.1) — at most 999 examples (the mixture's components);
* **upper bounds** — ρ-zCDP is K²ρ-zCDP (Bun & Steinke 2016, arXiv:1605.02065, Prop. 1.9); ε-DP (randomized
  response, ``dp`` with δ = 0) is Kε-DP (Dwork & Roth 2014, Thm 2.2); the exponential mechanism, ε-bounded
  range, is Kε-bounded range (the bounded ranges of the chain's steps add); ``dp:epsilon=E,delta=D`` is
  (KE, K·e^((K−1)E)·D)-DP (Vadhan 2017, Lemma 2.2);
* **generic** — every other spec keeps its kind and is answered by
  :class:`~dpcalc.engine.mechanisms.group.Grouped`: the RDP group property (Mironov 2017, Prop. 2) and the
  (ε, δ) group conversion, upper bounds.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from dpcalc.engine.mechanisms.base import decimal
from dpcalc.engine.mechanisms.catalogue import CATALOGUE, mechanism
from dpcalc.engine.mechanisms.gaussian import _ratio_down
from dpcalc.engine.mechanisms.group import GROUP_KEY, exact_up, group_dp, scaled_up
from dpcalc.engine.mechanisms.mixture_gaussian import MAX_COMPONENTS
from dpcalc.input.group_size import MAX_GROUP_SIZE, check_group_size
from dpcalc.input.spec import MechanismSpec, merge_identical, parse_mechanism

__all__ = ["MAX_GROUP_SIZE", "Form", "check_group_size", "person_form", "person_forms", "routes_caption"]

#: The kinds whose pair scales exactly with the sensitivity (key ``sensitivity``).
SCALING = ("gaussian", "discrete-gaussian", "laplace", "discrete-laplace")
_WHOLE = ("discrete-gaussian", "discrete-laplace")
#: Route names (the caption lists them).
EXACT = "exact: sensitivity K·Δ"
MIXTURE = "tight: the mixture of Ganesh 2024, Thm 3.1"
ZCDP = "K²ρ-zCDP, Bun & Steinke 2016, Prop. 1.9: an upper bound"
PURE = "Kε-DP, group privacy of pure DP, Dwork & Roth 2014, Thm 2.2: an upper bound"
RANGE = "Kε-bounded range: an upper bound"
VADHAN = "(Kε, K·e^((K−1)ε)·δ)-DP, Vadhan 2017, Lemma 2.2: an upper bound"
GENERIC = (
    "generic: the RDP group property, Mironov 2017, Prop. 2, and the (ε, δ) group conversion, Vadhan 2017, "
    "Lemma 2.2: upper bounds"
)


@dataclass(frozen=True)
class Form:
    """One spec's person-level form: ``spec`` (of the same or another kind; for the generic route the same
    kind with ``group_size`` in its params), the ``route`` that made it, and whether that route is exact or
    tight (``exact``: a PLD bracket's lower end stays a lower end for the person)."""

    original: MechanismSpec
    spec: MechanismSpec
    route: str
    exact: bool


def _respec(kind: str, params: dict, count: int) -> MechanismSpec:
    """A spec of ``kind`` with ``params`` (a key left out for calibration, ``None``, stays left out)."""
    keys = {k.name for k in CATALOGUE[kind].keys} | {"q", "sampling"}
    parts = [
        f"{k}={v!r}" if not isinstance(v, str) else f"{k}={v}" for k, v in params.items() if v is not None
    ]
    omit = tuple(k for k, v in params.items() if v is None and k in keys)
    return parse_mechanism(f"{kind}:" + ",".join([*parts, f"count={count}"]), omit=omit)


def _generic(spec: MechanismSpec, k: int) -> Form:
    grouped = MechanismSpec(spec.kind, {**spec.params, GROUP_KEY: k}, spec.count, spec.text)
    return Form(spec, grouped, GENERIC, False)


def person_form(spec: MechanismSpec, k: int) -> Form:
    """The person-level form of one spec for a person with ``k`` examples (module docstring)."""
    p, kind = spec.params, spec.kind
    if k == 1:
        return Form(spec, spec, "the spec itself (K = 1)", True)
    q, sampling = p.get("q"), p.get("sampling", "poisson")
    if kind in SCALING and q is None:
        sens = scaled_up(k, p.get("sensitivity", 1.0))
        if kind in _WHOLE and not sens <= 2**53:
            return _generic(spec, k)
        own = {key.name: p.get(key.name) for key in CATALOGUE[kind].keys}
        return Form(spec, _respec(kind, {**own, "sensitivity": sens}, spec.count), EXACT, True)
    poisson_gaussian = (kind == "subsampled-gaussian" and sampling == "poisson") or (
        kind == "gaussian" and q is not None and sampling == "poisson"
    )
    if poisson_gaussian and k < MAX_COMPONENTS:
        sigma = p.get("sigma")
        if sigma is not None and kind == "gaussian":
            sigma = _ratio_down(sigma, p.get("sensitivity", 1.0))  # clipping norm Δ: σ/Δ, rounded down
        params = {"sigma": sigma, "group": float(k), "q": float(q)}
        return Form(spec, _respec("mixture-gaussian", params, spec.count), MIXTURE, True)
    if q is not None:
        return _generic(spec, k)
    if kind == "zcdp":
        return Form(
            spec, _respec("zcdp", {"rho": exact_up(k * k * decimal(p["rho"]))}, spec.count), ZCDP, False
        )
    if kind == "exponential" and p.get("epsilon") is not None:
        eps = scaled_up(k, p["epsilon"])
        return Form(spec, _respec("exponential", {"epsilon": eps}, spec.count), RANGE, False)
    if kind in ("randomized-response", "dp") and p.get("epsilon") is not None:
        delta = float(p.get("delta", 0.0))
        if delta == 0:
            bounds, _ = mechanism(kind, p).max_loss(p)
            eps = exact_up(k * bounds[1])
            return Form(spec, _respec("dp", {"epsilon": eps, "delta": 0.0}, spec.count), PURE, False)
        eps, d = group_dp(p["epsilon"], delta, k)
        if d < 1.0:
            return Form(spec, _respec("dp", {"epsilon": eps, "delta": d}, spec.count), VADHAN, False)
    return _generic(spec, k)


def person_forms(specs, k: int) -> list[Form]:
    """Each spec's :func:`person_form`; identical person-level specs merged (their counts summed)."""
    forms = [person_form(s, k) for s in specs]
    merged = merge_identical([f.spec for f in forms])
    by_spec = {id(f.spec): f for f in forms}
    out = []
    for m in merged:
        f = by_spec.get(id(m))
        if f is None:  # a merged spec: the first form with its kind and params, its count summed
            f = next(f for f in forms if f.spec.kind == m.kind and f.spec.params == m.params)
        out.append(dataclasses.replace(f, spec=m))
    return out


def _shown(spec: MechanismSpec) -> str:
    """A person-level spec as the caption shows it (the generic route keeps the kind's own label)."""
    if GROUP_KEY in spec.params:
        return f"{spec.label()} for K examples"
    return spec.label()


def routes_caption(forms: list[Form], k: int) -> str:
    """``; a person with K examples (person-level forms): <form> [<route>] + ...``."""
    parts = [f"{_shown(f.spec)} [{f.route}]" for f in forms]
    return f"; a person with K = {k} examples (person-level forms): " + " + ".join(parts)
