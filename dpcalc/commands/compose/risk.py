"""``dpcalc compose --advantage`` / ``--prior P``: membership-inference risk of a composition (docs/math.md
§10.4; rows as :mod:`dpcalc.commands.risk`): exact (μ-GDP, Gaussian compositions), pld (a certified bracket),
rdp (the Rényi curve's profile); ``best`` keeps, per prior, the row with the smallest certified bound."""

from __future__ import annotations

import math

import numpy as np

from dpcalc.commands.compose.methods import PLD_DOMINATED, check_relations, pld_dominated, relation_caption
from dpcalc.commands.risk import NOTES, refused_rows, risk_result, risk_rows
from dpcalc.engine import risk
from dpcalc.engine.composition.pld import compose_pld
from dpcalc.engine.conversion.rdp_profile import delta_from_rdp
from dpcalc.engine.mechanisms import gaussian_exact
from dpcalc.engine.mechanisms.catalogue import gaussian_r2, rdp_refusal, total_rdp
from dpcalc.engine.orders import DEFAULT_ORDERS
from dpcalc.engine.pld.search import boundary
from dpcalc.errors import InputError
from dpcalc.input.group import person_forms, routes_caption
from dpcalc.input.spec import expand_sources, merge_identical, parse_mechanisms

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
            note = pld_note(specs, exact_forms) if name == "pld" else None
            per[name] = (
                refused_rows(name, priors, reason)
                if delta_at is None
                else risk_rows(name, delta_at, priors, note=note)
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


#: The relative step of the noise search of --target-advantage (the value one step to the less private side was
#: computed and misses the target).
TARGET_RTOL = 1e-4


def compose_target_advantage(texts, target, method, eps_error=None):
    """``--target-advantage A``: per method, the least noise (the largest per-release ε) of the specs that
    leave it out whose composition's certified advantage δ(0) is at most ``target`` — a monotone search
    (:func:`dpcalc.engine.pld.search.boundary`) on the advantage the method's row prints; ``best`` keeps the
    most favourable value.  Kulynych et al. 2024 (arXiv:2407.02191) calibrate to such a risk, not to ε."""
    # lazy: the calibration's helpers (its spec parsing with a key left out) load for this question only
    from dpcalc.commands.compose.calibration import COLUMN, RANGES, _filler, _parse, free_parameter

    _check_method(method, "--target-advantage")
    specs = _parse(texts)
    key, direction = free_parameter(specs, "--target-advantage", "")
    fill = _filler(specs, key)
    lo, hi = RANGES[direction]
    column = COLUMN[key]
    check_relations(fill(1.0 if direction > 0 else min(hi, 1.0)))
    names = METHODS if method in ("all", "best") else (method,)
    solved = " and ".join(repr(s.text) for s in specs if s.params.get(key, 0) is None)
    caption = f"the least {key} of {solved} with the composition's certified advantage <= {target:g}"
    if direction < 0:
        caption = caption.replace("the least", "the largest")
    found_rows = {}
    for name in names:

        def test(x, name=name):
            """(the advantage, the bracket of δ(0) it came from), or (inf, why not)."""
            try:
                delta_at, why = method_profile(name, merge_identical(fill(x)), eps_error)
                if delta_at is None:
                    return math.inf, why
                at0 = delta_at(np.zeros(1))
                return float(np.atleast_1d(at0[2])[0]), at0
            except InputError as exc:
                return math.inf, str(exc)

        most_private = hi if direction > 0 else lo
        value, info = test(most_private)
        if not value <= target:
            reason = (
                info if isinstance(info, str) else f"nothing in [{lo:g}, {hi:g}] has advantage <= {target:g}"
            )
            if method == name:
                raise InputError(f"--target-advantage: {reason}")
            found_rows[name] = refused_rows(name, None, reason)
            continue
        start = min(max(1.0, lo), hi)
        found = boundary(test, target, start, ok_above=direction > 0, lo=lo, hi=hi, rtol=TARGET_RTOL)
        x = float(found.x)
        delta_at = lambda e, at0=found.info: at0  # noqa: E731 - the search's own bracket of δ(0) at x
        note = (
            f"the {'least' if direction > 0 else 'largest'} {key} with advantage <= {target:g} (one search step, a "
            f"factor {1 + TARGET_RTOL:g}, to the less private side computed and above it)"
        )
        if name == "pld" and pld_dominated(fill(x)):
            note += f"; {PLD_DOMINATED}: {'; '.join(pld_dominated(fill(x)))}"
        found_rows[name] = risk_rows(name, delta_at, None, {column: x}, note)
    if method == "best":
        usable = [rows[0] for rows in found_rows.values() if rows[0].get(column) is not None]
        if not usable:
            raise InputError("--target-advantage: no method meets the target for these mechanisms")
        pick = min if direction > 0 else max
        rows = [pick(usable, key=lambda r: r[column])]
    else:
        rows = [r for m in names for r in found_rows[m]]
    return risk_result(rows, "compose", caption, None, headline=column)


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
        own = exact_forms and not pld_dominated(specs)  # else the bracket's ends are of models above it

        def pld(e):
            b = compose_pld(specs, epsilon=np.asarray(e, float), eps_error=eps_error)
            return (b[0], b[1], b[2]) if own else (None, None, b[2])

        return pld, None
    refusals = [r for s in specs if (r := rdp_refusal(s)) is not None]
    if refusals:
        return None, refusals[0]
    curve = total_rdp(specs, DEFAULT_ORDERS)
    return (lambda e, c=curve: (None, None, _rdp_delta(c, e))), None


def pld_note(specs, exact_forms=True) -> str:
    """The pld rows' note: a certified bracket, or (a person-level form that is an upper bound, or models that
    only dominate a spec: :func:`~dpcalc.commands.compose.methods.pld_dominated`) an upper end only, and why."""
    if not exact_forms:
        return f"{NOTES['pld']}: its upper end only (no lower end or estimate: a person-level form is an upper bound)"
    dominated = pld_dominated(specs)
    if dominated:
        return f"{NOTES['pld']}: its upper end only ({PLD_DOMINATED}: {'; '.join(dominated)})"
    return NOTES["pld"]


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
    """δ(ε) of a Rényi curve at dpcalc's orders, through its optimal trade-off curve (an upper bound)."""
    return delta_from_rdp(np.asarray(DEFAULT_ORDERS, float), curve, np.asarray(e, float))
