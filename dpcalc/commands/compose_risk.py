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
    if method not in (*METHODS, "best", "all"):
        raise InputError(f"--advantage/--prior: apply to --method exact, pld, rdp, best or all, not {method}")
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
        if name == "exact":
            r2 = gaussian_r2(specs)
            if r2 is None:
                per[name] = refused_rows(name, priors, "only for compositions of plain gaussian specs")
                continue
            mu = math.sqrt(r2)
            per[name] = risk_rows(
                name,
                lambda e, m=mu: (risk.gaussian_delta(e, m), None, gaussian_exact.delta_gaussian(e, m)),
                priors,
            )
        elif name == "pld":
            try:

                def pld(e):
                    b = compose_pld(specs, epsilon=np.asarray(e, float), eps_error=eps_error)
                    lower = b[0] if exact_forms else None  # an upper-bound form: no lower end for the person
                    return lower, b[1], b[2]

                per[name] = risk_rows(name, pld, priors)
            except InputError as exc:
                if method == "pld":
                    raise
                per[name] = refused_rows(name, priors, str(exc))
        else:
            refusals = [r for s in specs if (r := rdp_refusal(s)) is not None]
            if refusals:
                per[name] = refused_rows(name, priors, refusals[0])
                continue
            curve = total_rdp(specs, DEFAULT_ORDERS)
            per[name] = risk_rows(name, lambda e, c=curve: (None, None, _rdp_delta(c, e)), priors)
    if method == "best":
        rows = _pick(per, "advantage" if priors is None else "success")
    else:
        rows = [r for m in names for r in per[m]]
    return risk_result(rows, "compose", caption, priors)


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
