"""``dpcalc compose --advantage`` / ``--prior P``: membership-inference risk of a composition (docs/math.md
§10.4; rows as :mod:`dpcalc.commands.risk`): exact (μ-GDP, Gaussian compositions), pld (a certified bracket),
rdp (the Rényi curve's profile); ``best`` keeps, per prior, the row with the smallest certified bound."""

from __future__ import annotations

import math

import numpy as np

from dpcalc.commands.compose_methods import check_relations, relation_caption
from dpcalc.commands.risk import refused_rows, risk_result, risk_rows
from dpcalc.engine import risk
from dpcalc.engine.composition.pld import compose_pld
from dpcalc.engine.conversion.methods import delta_from_curve
from dpcalc.engine.mechanisms import gaussian_exact
from dpcalc.engine.mechanisms.catalogue import gaussian_r2, rdp_refusal, total_rdp
from dpcalc.engine.orders import DEFAULT_ORDERS
from dpcalc.errors import InputError
from dpcalc.group import person_forms, routes_caption
from dpcalc.spec import expand_sources, merge_identical, parse_mechanisms

METHODS = ("exact", "pld", "rdp")


def compose_risk(texts, priors, method, eps_error=None, group_size=1):
    """One row per method (``all``) or the tightest (``best``), and per prior."""
    _check_method(method, "--advantage/--prior")
    specs = merge_identical(parse_mechanisms(expand_sources(texts)))
    check_relations(specs)
    caption = "mechanisms: " + " + ".join(s.label() for s in specs) + relation_caption(specs)
    exact_forms = True
    if group_size > 1:
        forms = person_forms(specs, group_size)
        specs, exact_forms = [f.spec for f in forms], all(f.exact for f in forms)
        caption += routes_caption(forms, group_size)
    names = METHODS if method in ("all", "best") else (method,)
    per: dict[str, list] = {}
    for name in names:
        delta_at, reason = method_profile(name, specs, eps_error, exact_forms)
        try:
            per[name] = (
                refused_rows(name, priors, reason) if delta_at is None else risk_rows(name, delta_at, priors)
            )
        except InputError as exc:  # the PLD's refusals
            if method == "pld":
                raise
            per[name] = refused_rows(name, priors, str(exc))
    if method == "best":
        rows = _pick(per, "advantage" if priors is None else "success")
    else:
        rows = [r for m in names for r in per[m]]
    return risk_result(rows, "compose", caption, priors)


def _check_method(method, question):
    if method not in (*METHODS, "best", "all"):
        raise InputError(f"{question}: applies to --method exact, pld, rdp, best or all, not {method}")


def method_profile(name, specs, eps_error=None, exact_forms=True):
    """``(delta_at, None)``: the privacy profile ε ↦ (lower, estimate, upper) of the composition by method
    ``name`` (exact: μ-GDP of plain Gaussians; pld: the certified bracket, whose refusals are raised when it is
    called; rdp: the Rényi curve's profile), or ``(None, reason)`` where it does not apply."""
    if name == "exact":
        r2 = gaussian_r2(specs)
        if r2 is None:
            return None, "only for compositions of plain gaussian specs"
        mu = math.sqrt(r2)
        return (lambda e, m=mu: (risk.gaussian_delta(e, m), None, gaussian_exact.delta_gaussian(e, m))), None
    if name == "pld":

        def pld(e):
            b = compose_pld(specs, epsilon=np.asarray(e, float), eps_error=eps_error)
            lower = b[0] if exact_forms else None  # an upper-bound form: no lower end for the person
            return lower, b[1], b[2]

        return pld, None
    refusals = [r for s in specs if (r := rdp_refusal(s)) is not None]
    if refusals:
        return None, refusals[0]
    curve = total_rdp(specs, DEFAULT_ORDERS)
    return (lambda e, c=curve: (None, None, _rdp_delta(c, e))), None


def _pick(per, key):
    """``best``: per prior (row position), the row with the smallest certified bound."""
    out = []
    for i in range(len(next(iter(per.values())))):
        cands = [rows[i] for rows in per.values() if rows[i].get(key) is not None]
        if not cands:
            raise InputError("MECHANISM: no method gives a risk bound for these mechanisms")
        out.append(min(cands, key=lambda r: r[key]))
    return out


def _rdp_delta(curve, e):
    """δ(ε) of a Rényi curve at dpcalc's orders, by the optimal conversion (an upper bound)."""
    return delta_from_curve(np.asarray(DEFAULT_ORDERS, float), curve, np.asarray(e, float), "optimal").value
