"""``dpcalc compose``: many mechanisms, one guarantee (docs/math.md §2, §7) — the part without click, and
the one module the command line imports for it.

:func:`compose` gives the composition's ε at each δ (or δ at each ε) by the methods of
:mod:`dpcalc.commands.compose.methods`; :func:`compose_curve` its Rényi curve (``--rdp-curve``).  The
command's other questions live in modules of their own and are handed on from here:
:func:`~dpcalc.commands.compose.calibration.calibrate` (``--epsilon`` with ``--delta``: the noise that
meets them) and :func:`~dpcalc.commands.compose.tradeoff.compose_tradeoff` (``--fpr``).
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence

import numpy as np

from dpcalc.commands import sweep
from dpcalc.commands.compose.calibration import calibrate
from dpcalc.commands.compose.group import GROUP_METHODS, check_group_question
from dpcalc.commands.compose.methods import (
    DP_GROUP_ONE_PIECE,
    EDGE_NOTE,
    METHOD_ORDER,
    METHODS,
    ONE_PIECE,
    PIECE_FIXED_SECONDS,
    PLD_ONE_PIECE,
    TUNING_REFUSAL,
    check_relations,
    fresh_profiles,
    pieces,
    relation_caption,
    target_seconds,
)
from dpcalc.commands.compose.tradeoff import compose_tradeoff
from dpcalc.commands.curve import FOR_CONVERT, check_curve_rows, curve_result, orders
from dpcalc.commands.schema import conform
from dpcalc.engine.mechanisms.catalogue import gaussian_r2, rdp_work_refusal, total_rdp
from dpcalc.errors import DpcalcWarning, InputError
from dpcalc.input.group import person_forms, routes_caption
from dpcalc.input.spec import expand_sources, merge_identical, parse_mechanisms
from dpcalc.result import PlotSpec, Result

#: What the command line reads here: the questions.
__all__ = ["calibrate", "compose", "compose_curve", "compose_tradeoff"]


def compose(texts, delta, epsilon, method, eps_error=None, tuning=None, group_size=1) -> Result:
    """One row per target (and per method with ``method="all"``): the composition's ε at each δ of
    ``delta``, or δ at each ε of ``epsilon``; ``best`` keeps the smallest certified bound per target.
    ``tuning`` (a :class:`~dpcalc.engine.composition.tuning.TuningRuns`): the whole composition is run K times
    and the best output released; only rdp applies then (docs/math.md §2.10).  ``group_size`` K > 1: the
    bound for a person with K examples, each method on the specs' person-level forms, and the generic
    routes over the whole composition beside them (:mod:`dpcalc.commands.compose.group`, docs/math.md §2.15)."""
    specs = merge_identical(parse_mechanisms(expand_sources(texts)))
    check_relations(specs)
    if tuning is not None and method not in ("rdp", "best", "all"):
        raise InputError(f"--tuning-runs applies to --method rdp (or best, all), not {method}: an RDP bound")
    opts = {"eps_error": eps_error, "strict": method == "pld", "tuning": tuning}
    want_eps = delta is not None
    targets = np.asarray(delta if want_eps else epsilon, float)
    person, methods, order, forms = specs, METHODS, METHOD_ORDER, None
    if group_size > 1:
        check_group_question(tuning)
        forms = person_forms(specs, group_size)
        person = [f.spec for f in forms]
        methods, order = {**METHODS, **GROUP_METHODS}, (*METHOD_ORDER, *GROUP_METHODS)
        opts.update(group_size=group_size, person=person)
    names = order if method in ("all", "best") else (method,)
    if method == "best" and tuning is None and _exact_applies(person):
        names = ("exact",)  # the exact profile: no other method can certify less, so none is run
    n = targets.size
    sweep.check_rows({"--delta" if want_eps else "--epsilon": n}, 1 if method == "best" else len(names))
    headline, given = ("epsilon", "delta") if want_eps else ("delta", "epsilon")
    cols: dict[str, list] = {"method": [], given: [], headline: [], "alpha": [], "note": []}
    lower_name, estimate_name = f"{headline}_lower", f"{headline}_estimate"
    per_method = {}
    tasks, seconds = [], 0.0
    for name in names:
        if tuning is not None and name != "rdp":
            per_method[name] = ([None] * n, [TUNING_REFUSAL] * n, [None] * n, [None] * n, [None] * n)
            continue
        each = target_seconds(name, specs if name in GROUP_METHODS else person, want_eps)
        batch = name == "pld" and not want_eps  # many ε share one composition: a piece is a batch
        one = {"pld": PLD_ONE_PIECE, "dp-group": DP_GROUP_ONE_PIECE if want_eps else ONE_PIECE}.get(
            name, ONE_PIECE
        )
        cut = pieces(n, one, each, batch)
        tasks += [(name, lo, hi, name == "pld" and len(cut) > 1) for lo, hi in cut]
        seconds += n * each + len(cut) * PIECE_FIXED_SECONDS.get(name, 0.0)

    def compute(task):
        """One method's rows at the targets ``lo:hi`` (``fresh``: without profiles kept from other pieces)."""
        name, lo, hi, fresh = task
        if fresh:
            fresh_profiles()
        k = hi - lo
        values, notes, extra = methods[name](
            specs if name in GROUP_METHODS else person, want_eps, targets[lo:hi], opts
        )
        if values is None:
            values, notes = [None] * k, [f"does not apply: {notes}"] * k
        if isinstance(notes, str):
            notes = [notes] * k
        if forms is not None and name == "pld" and not all(f.exact for f in forms):
            extra, notes = {}, [n_.replace(_PLD_BRACKET, _PLD_UPPER) for n_ in notes]
        # every method's value is an upper bound; a bracketed one also has a lower end and an estimate
        values = [None if v is None or np.isnan(v) else float(v) for v in values]
        lower, estimate = (
            [None if v is None else float(v) for v in extra[key]] if key in extra else [None] * k
            for key in ("lower", "estimate")
        )
        return name, (values, list(notes), list(extra.get("alpha", [None] * k)), lower, estimate)

    what = f"composition (--method {method})"
    weights = [hi - lo for _, lo, hi, _ in tasks]
    for name, part in sweep.run(compute, tasks, seconds=seconds, unit="bounds", what=what, weights=weights):
        if name not in per_method:
            per_method[name] = ([], [], [], [], [])
        for whole, piece in zip(per_method[name], part):
            whole.extend(piece)
    bracketed = any(v is not None for m in per_method.values() for v in m[3])
    if bracketed:
        cols[lower_name], cols[estimate_name] = [], []
    picks = []
    if method == "best":
        for i in range(targets.size):
            cands = [
                (per_method[m][0][i], k, m) for k, m in enumerate(names) if per_method[m][0][i] is not None
            ]
            if not cands:
                why = "; ".join(
                    f"{m}: "
                    + per_method[m][1][i].removeprefix("does not apply: ").removeprefix("MECHANISM: ")
                    for m in names
                )
                raise InputError(f"MECHANISM: no method applies to these mechanisms at this target ({why})")
            picks.append((i, min(cands)[2]))  # the tightest *guarantee*
    else:
        picks = [(i, m) for m in names for i in range(targets.size)]
    for i, m in picks:
        values, notes, alphas, lower, estimate = per_method[m]
        cols["method"].append(m)
        cols[given].append(float(targets[i]))
        cols[headline].append(values[i])
        cols["alpha"].append(alphas[i])
        cols["note"].append(notes[i])
        if bracketed:
            cols[lower_name].append(lower[i])
            cols[estimate_name].append(estimate[i])
    if bracketed:  # the certified bound first, then the bracket's lower end and the estimate
        order = ["method", given, headline, lower_name, estimate_name, "alpha", "note"]
        cols = {k: cols[k] for k in order}
    _warn_edge(cols, headline)
    if all(a is None for a in cols["alpha"]):
        del cols["alpha"]
    caption = "mechanisms: " + " + ".join(s.label() for s in specs) + relation_caption(specs)
    result = Result(
        conform(cols, "compose"),
        headline=headline,  # a certified upper bound in every row, never an estimate
        title="composition" if forms is None else f"composition for a person with {group_size} examples",
        caption=caption if forms is None else caption + routes_caption(forms, group_size),
    )
    if len(cols["method"]) > 1:  # a curve over the targets, or the methods side by side at one target
        result.plot = PlotSpec(
            x=given,
            y=headline,
            series="method",
            logx=want_eps,
            logy=not want_eps,
            autolog=True,
            xlabel="δ (probability)" if want_eps else "ε (nats)",
            ylabel="ε (nats)" if want_eps else "δ (probability)",
            title=f"Composition: {'ε' if want_eps else 'δ'} "
            + (f"by {'δ' if want_eps else 'ε'}" if targets.size > 1 else "by method"),
            subtitle=" + ".join(s.text for s in specs)
            + (f"; {'δ' if want_eps else 'ε'} = {float(targets[0]):g}" if targets.size == 1 else "")
            + (f"; a person with {group_size} examples" if forms is not None else ""),
        )
    return result


#: The pld note, and what it says when a person-level form is an upper bound only (no lower end).
_PLD_BRACKET = "privacy loss distributions: certified [lower, upper]"
_PLD_UPPER = (
    "privacy loss distributions: certified upper bound (no lower end: a person-level form is an upper "
    "bound, not the person's exact pair)"
)


def _exact_applies(specs) -> bool:
    """Whether the exact method answers the composition (plain Gaussians only: docs/math.md §2.6)."""
    return gaussian_r2(specs) is not None


def _warn_edge(cols, headline) -> None:
    """One stderr warning when a shown rdp row's best order is at the edge of the grid (and matters)."""
    trivial = (0.0,) if headline == "epsilon" else (0.0, 1.0)
    for m, v, note in zip(cols["method"], cols[headline], cols["note"]):
        if m == "rdp" and note.endswith(EDGE_NOTE) and v not in trivial:
            warnings.warn(
                "rdp: the best Rényi order is at the edge of the grid (1.01..1e4): the bound is valid but "
                "a wider grid might give a smaller one",
                DpcalcWarning,
                stacklevel=2,
            )
            return


# -- --rdp-curve ----------------------------------------------------------------------------------------
def compose_curve(
    texts, alphas: Sequence[float] | None = None, method: str = "best", *, stream: bool = False, group_size=1
):
    """The summed Rényi curve of the MECHANISMs ``texts`` (identical specs merged, as ``compose`` does):
    :func:`dpcalc.engine.mechanisms.catalogue.total_rdp`, exactly the curve ``compose --method rdp``
    converts, so ``convert --curve`` of it (optimal conversion) gives that ε exactly.  A spec without a
    Rényi curve (``dp`` with δ > 0) is refused."""
    if method not in ("best", "all", "rdp"):
        raise InputError(
            f"--method {method} has no Rényi curve: --rdp-curve prints the curve of the rdp method "
            "(leave --method out, or give --method rdp)"
        )
    specs = merge_identical(parse_mechanisms(expand_sources(texts)))
    check_relations(specs)
    a = orders(alphas)
    check_curve_rows({}, a.size)
    if (refusal := rdp_work_refusal(specs)) is not None:
        raise InputError(refusal)
    person, routes = specs, ""
    if group_size > 1:  # each spec's person-level form (docs/math.md §2.15)
        forms = person_forms(specs, group_size)
        person, routes = [f.spec for f in forms], routes_caption(forms, group_size)
    curve = np.asarray(total_rdp(person, a), dtype=float)
    labels = " + ".join(s.label() for s in specs)
    return curve_result(
        "compose",
        {},
        [""],
        lambda m, lo, hi: {"rdp": curve[None, :]},
        a,
        f"mechanisms: {labels}; rdp: the sum of their Rényi curves (the rdp method's curve){routes}; {FOR_CONVERT}",
        stream=stream,
        subtitle=" + ".join(s.text for s in specs)
        + (f"; a person with {group_size} examples" if routes else ""),
    )
