"""``dpcalc compose --fpr``: the largest true-positive rate of any membership test at each false-positive
rate, for a composition of mechanisms (docs/math.md §10; the rows are those of
:mod:`dpcalc.commands.tradeoff`): exact (μ-GDP), pld (a certified bracket), rdp (the optimal conversion of the Rényi
curve) and, for subsampled Gaussians, the central-limit approximation."""

from __future__ import annotations

import math

import numpy as np

from dpcalc.commands import sweep
from dpcalc.commands.compose.methods import (
    FPR_ONE_PIECE,
    PLD_DOMINATED,
    PLD_FPR_ONE_PIECE,
    check_relations,
    fresh_profiles,
    pieces,
    pld_dominated,
    pld_target_seconds,
    relation_caption,
)
from dpcalc.commands.tradeoff import CLT_NOTE, RDP_NOTE, exact_rows, tradeoff_result, tradeoff_row
from dpcalc.engine import tradeoff
from dpcalc.engine.composition.pld import compose_pld
from dpcalc.engine.mechanisms.catalogue import CATALOGUE, gaussian_r2, rdp_refusal, total_rdp
from dpcalc.engine.orders import DEFAULT_ORDERS
from dpcalc.errors import InputError
from dpcalc.input.group import person_forms, routes_caption
from dpcalc.input.spec import expand_sources, merge_identical, parse_mechanisms
from dpcalc.result import Result

#: the methods of compose that answer --fpr, in the order --method all shows them
COMPOSE_METHODS = ("exact", "pld", "rdp", "clt-asymptotic")


def _compose_clt_mu(specs):
    """μ of the central limit theorem for Gaussian and Poisson-subsampled Gaussian specs (μ² adds up over
    compositions, Dong, Roth & Su §3 and §5), or ``None`` when some spec is of another kind."""
    total = 0.0
    for s in specs:
        r = CATALOGUE[s.kind].gaussian_ratio(s.params)
        if r is not None:
            total += s.count * r * r
        elif s.kind == "subsampled-gaussian" and s.params.get("sampling", "poisson") == "poisson":
            total += float(tradeoff.clt_mu(s.params["q"], s.params["sigma"], s.count)) ** 2
        else:
            return None
    return math.sqrt(total)


#: The work of ``compose --fpr`` (issue 40: any number of rates is computed, not refused): each method's rates
#: are cut into pieces (:func:`~dpcalc.commands.compose.methods.pieces`: one up to FPR_ONE_PIECE rates, pld
#: PLD_FPR_ONE_PIECE, whose rates refine one profile together) spread over the cores, the rows in order.
#: Measured CPU seconds on one core (2-core shared machine; gaussian, laplace and subsampled-gaussian
#: compositions, 10 and 1000 rates), rounded up: rdp 1.1-1.3 s a piece (its profile) and 1.5e-3 s a rate;
#: pld 0.01-0.13 s a rate (:func:`~dpcalc.commands.compose.methods.pld_target_seconds`); exact and
#: clt-asymptotic closed forms.
RATE_SECONDS = {"exact": 2e-5, "rdp": 2e-3, "clt-asymptotic": 2e-5}
RDP_PIECE_SECONDS = 1.5


def compose_tradeoff(texts, fpr, method, eps_error=None, group_size=1) -> Result:
    """``dpcalc compose --fpr``: one row per false-positive rate (and per method with ``all``).
    ``group_size`` K > 1: for a person with K examples, each spec by its person-level form (docs/math.md
    §2.15); the central-limit row is left out (it is not a bound), and the pld rows keep their lower end
    only where every form is exact."""
    if method not in (*COMPOSE_METHODS[:3], "best", "all"):
        raise InputError(f"--fpr: applies to --method exact, pld, rdp, best or all, not {method}")
    fpr = tradeoff.check_fpr(np.atleast_1d(np.asarray(fpr, float)))
    specs = merge_identical(parse_mechanisms(expand_sources(texts)))
    check_relations(specs)
    caption = "mechanisms: " + " + ".join(s.label() for s in specs) + relation_caption(specs)
    subtitle = " + ".join(s.text for s in specs)
    exact_forms = True
    if group_size > 1:
        forms = person_forms(specs, group_size)
        specs, exact_forms = [f.spec for f in forms], all(f.exact for f in forms)
        caption += routes_caption(forms, group_size)
        subtitle += f"; a person with {group_size} examples"
    names = COMPOSE_METHODS if method in ("all", "best") else (method,)
    n = fpr.size
    sweep.check_rows({"--fpr": n}, 1 if method == "best" else len(names))
    per: dict[str, list] = {}
    curve = mu = None
    tasks, seconds = [], 0.0
    for name in names:
        reason = None
        if name == "exact":
            r2 = gaussian_r2(specs)
            if r2 is None:
                reason = "only for compositions of plain gaussian specs"
            else:
                mu = math.sqrt(r2)
        elif name == "rdp":
            refusals = [r for s in specs if (r := rdp_refusal(s)) is not None]
            if refusals:
                reason = refusals[0]
        elif (
            name == "clt-asymptotic"
        ):  # only where some spec is subsampled (else exact is the same, and exact)
            clt = None if group_size > 1 else _compose_clt_mu(specs)
            if clt is None or gaussian_r2(specs) is not None:
                continue
        if reason is not None:
            per[name] = _refused(name, fpr, reason)
            continue
        each = pld_target_seconds(specs) if name == "pld" else RATE_SECONDS[name]
        cut = pieces(
            n, PLD_FPR_ONE_PIECE if name == "pld" else FPR_ONE_PIECE, each, batch=name in ("pld", "rdp")
        )
        tasks += [(name, lo, hi, name == "pld" and len(cut) > 1) for lo, hi in cut]
        seconds += n * each + (RDP_PIECE_SECONDS * len(cut) if name == "rdp" else 0.0)

    def compute(task):
        """One method's rows at the rates ``lo:hi`` (``fresh``: without profiles kept from other pieces)."""
        nonlocal curve
        name, lo, hi, fresh = task
        rates = fpr[lo:hi]
        if name == "exact":
            return name, exact_rows(rates, mu)
        if name == "rdp":
            curve = total_rdp(specs, DEFAULT_ORDERS) if curve is None else curve
            hi_ = tradeoff.rdp_tpr(DEFAULT_ORDERS, curve, rates)
            note = RDP_NOTE
            return name, [
                tradeoff_row("rdp", float(a), None, None, float(h), None, note) for a, h in zip(rates, hi_)
            ]
        if name == "clt-asymptotic":
            rows = exact_rows(rates, _compose_clt_mu(specs), "clt-asymptotic")
            return name, [
                dict(r, tpr_lower=None, tpr_estimate=r["tpr"], tpr=None, tpr_upper=None, note=CLT_NOTE)
                for r in rows
            ]
        if fresh:
            fresh_profiles()
        return name, _pld_rows(specs, rates, method, eps_error, exact_forms)

    weights = [hi - lo for _, lo, hi, _ in tasks]
    what = f"trade-off bounds (--method {method})"
    for name, rows in sweep.run(compute, tasks, seconds=seconds, unit="rates", what=what, weights=weights):
        per.setdefault(name, []).extend(rows)
    per = {m: per[m] for m in names if m in per}  # the order of the methods
    rows = _pick(per, fpr.size) if method == "best" else [r for m in names if m in per for r in per[m]]
    return tradeoff_result(rows, "compose", "trade-off", caption, subtitle)


def _refused(name, fpr, reason):
    return [tradeoff_row(name, float(a), None, None, None, None, f"does not apply: {reason}") for a in fpr]


def _pld_rows(specs, fpr, method, eps_error, exact_forms):
    """The pld rows at the rates ``fpr`` (a piece): the composed profile's bracket, or rows saying why it does
    not apply (--method pld alone: the error)."""
    try:
        lo, est, hi = tradeoff.pld_tpr(
            fpr,
            lambda e: compose_pld(specs, epsilon=e, eps_error=eps_error),
            lambda d: compose_pld(specs, delta=d, eps_error=eps_error).upper,
        )
    except InputError as exc:
        if method == "pld":
            raise
        return _refused("pld", fpr, str(exc))
    note = "privacy profile of the composed PLD: certified tpr_upper"
    dominated = pld_dominated(specs)
    if not exact_forms:  # an upper-bound form: the bracket's lower end is not the person's
        lo, est = [None] * len(hi), [None] * len(hi)
        note += " (no lower end or estimate: a person-level form is an upper bound)"
    elif dominated:  # models above the mechanism: their lower end and estimate are not its own
        lo, est = [None] * len(hi), [None] * len(hi)
        note += f" ({PLD_DOMINATED}: {'; '.join(dominated)})"
    return [
        tradeoff_row("pld", float(a), *(None if x is None else float(x) for x in t), None, note)
        for a, *t in zip(fpr, lo, est, hi)
    ]


def _pick(per, n):
    """``best``: per false-positive rate, the row with the smallest certified ``tpr_upper``."""
    out = []
    for i in range(n):
        cands = [rows[i] for rows in per.values() if rows[i]["tpr_upper"] is not None]
        if not cands:
            raise InputError("MECHANISM: no method gives a trade-off bound for these mechanisms")
        out.append(min(cands, key=lambda r: r["tpr_upper"]))
    return out
