"""``dpcalc sgd-epsilon --group-size K``: what a DP-SGD run promises a person who contributed K examples
(docs/math.md §3.11).

The accountants answer the person's question by the samplers of :mod:`dpcalc.engine.samplers.person`:

* ``rdp`` and ``pld`` — tight: with Poisson sampling of examples (add/remove of the person) each step is the
  mixture of Gaussians of Ganesh 2024 (arXiv:2401.10294, Thm 3.1), its certified Rényi curve converted by
  --conversion, or its certified PLD bracket;
* ``rdp-group`` — the RDP group property (Mironov 2017, Prop. 2) of the sampler's example-level Rényi curve,
  converted by --conversion: the comparison people use today, an upper bound;
* ``dp-group`` — the (ε, δ) group conversion (Vadhan 2017, Lemma 2.2) of the example-level rdp bound
  (:func:`dpcalc.engine.dpsgd.accounting.epsilon_dp_group`): the other comparison, an upper bound.

With ``--target-epsilon`` each answers the inverse questions (noise, steps, sample rate or batch size) by a
monotone search per configuration over its own ε (:mod:`dpcalc.commands.sgd.searched`; the PLD's by
:mod:`dpcalc.engine.dpsgd.pld_calibration`).  K = 1 leaves every row as it is without --group-size.
"""

from __future__ import annotations

import numpy as np

from dpcalc.commands.sgd.searched import searched_rows
from dpcalc.engine.dpsgd import accounting as sgd
from dpcalc.engine.samplers.person import grouped_sampler, person_sampler, tight_refusal
from dpcalc.errors import InputError

#: The generic routes, by accountant name (beside the tight rdp and pld).
GROUP_ACCOUNTANTS = ("rdp-group", "dp-group")
#: What ``--method all`` runs with --group-size K > 1, in order (those that apply).
GROUP_ALL = ("rdp", "pld", *GROUP_ACCOUNTANTS)
#: CPU seconds per configuration (measured beside start-up, benchmarks/bench_group.py): one certified mixture
#: curve for rdp (0.2-0.3 s), one mixture PLD for pld (0.4-0.9 s at 782-9375 steps), a curve at 2^c times the
#: orders for rdp-group, one example-level curve and its conversion at 241 values of δ' for dp-group.
GROUP_SECONDS = {"rdp": 0.4, "pld": 0.6, "rdp-group": 0.05, "dp-group": 0.05}


def group_names(p, sampler, neighbors, solve) -> list[str]:
    """The accountants to run for a person with ``p.group_size`` examples (a tuple: a sweep of K), refusing
    one that does not apply (a usage error naming what is missing).  With ``--method all`` the tight rows
    run where they apply to some K > 1 of the sweep (a K where they do not gets rows that say why)."""
    ks = p.group_size
    if p.tuning is not None:
        raise InputError("--group-size cannot be used with --tuning-runs")
    generic = sampler.covers("rdp", neighbors)
    refusals = [(k, tight_refusal(sampler, neighbors, k)) for k in ks if k > 1]
    tight = not refusals or any(why is None for _, why in refusals)
    if p.accountant == "all":
        names = [a for a in GROUP_ALL if (generic if a in GROUP_ACCOUNTANTS else tight)]
        if not names:
            grouped_sampler(sampler, max(ks))  # raises: no Rényi curve to group
            raise InputError(refusals[0][1])
        return names
    if p.accountant in GROUP_ACCOUNTANTS:
        if not generic:
            grouped_sampler(sampler, max(ks))
            raise InputError(f"--method {p.accountant}: the example-level rdp accountant does not apply here")
        return [p.accountant]
    if p.accountant in ("rdp", "pld"):
        for k, why in refusals:
            if why is not None:
                raise InputError(f"--method {p.accountant} with --group-size {k}: {why}")
        return [p.accountant]
    raise InputError(
        f"--method {p.accountant} with --group-size {max(ks)}: an example-level formula; for a person use "
        "rdp, pld (Poisson sampling), rdp-group, dp-group or all"
    )


def refuse_group(p, option: str) -> None:
    """A usage error where ``option`` (--rdp-curve, --fpr) meets --group-size K > 1: it prints the
    example-level curve or profile only, never silently in place of the person's."""
    ks = p.group_size if not isinstance(p.group_size, int) else (p.group_size,)
    if max(ks) > 1:
        what = {"--rdp-curve": "Rényi curve", "--fpr": "trade-off curve"}.get(option, "answer")
        raise InputError(
            f"--group-size {max(ks)} cannot be used with {option} here (it gives the example-level {what}); use "
            f"compose subsampled-gaussian:sigma=S,q=Q,count=T --group-size {max(ks)} {option} (the person's mixture)"
        )


def group_caption(ks, names, sampler, neighbors) -> str:
    """What the rows mean for a person with K examples (and why the tight rows are missing, where they are)."""
    shown = ", ".join(map(str, ks))
    out = f"; a person with K = {shown} examples (--group-size): "
    parts = []
    whys = {tight_refusal(sampler, neighbors, k) for k in ks if k > 1} - {None}
    if whys and not any(n in ("rdp", "pld") for n in names):
        parts.append(f"no rdp or pld (tight) rows: {sorted(whys)[0]}")
    if any(n in ("rdp", "pld") for n in names):
        parts.append(
            "rdp and pld rows account for the person's exact per-step pair, the mixture Σ Bin(K,q)_i N(i,σ²) vs "
            "N(0,σ²) of Ganesh 2024, Thm 3.1 (pld: the tight bracket; K = 1: the example-level rows)"
        )
    if "rdp-group" in names:
        parts.append("rdp-group: RDP group property (Mironov 2017, Prop. 2) of the example-level curve")
    if "dp-group" in names:
        parts.append(
            "dp-group: (ε, δ) group conversion (Vadhan 2017, Lemma 2.2) of the example-level rdp bound"
        )
    if any(n in GROUP_ACCOUNTANTS for n in names):
        parts.append("the group rows are the comparison people use today (upper bounds, loose)")
    return out + "; ".join(parts)


def group_rows(p, sampler, name, solve, g, kw, rows, rtol) -> dict:
    """One accountant's rows for a person with ``p.group_size`` examples: ``rows(sampler, name, kw)`` answers
    the tight and rdp-group rows with the person's sampler in place of ``sampler`` (the command's usual
    rows); dp-group runs here.  Each row's note names its route."""
    k = p.group_size
    if name == "dp-group":
        shared = {**kw, "group_size": k}
        if solve is None:
            e = sgd.epsilon("dp-group", g["q"], g["sigma"], g["steps"], g["delta"], warn=False, **shared)
            cols = dict(noise_multiplier=g["sigma"], steps=g["steps"], eps=e)
        else:
            cols = searched_rows("dp-group", g, shared, solve, rtol)
        note = (
            f"a person with K = {k} examples; comparison: (ε, δ) group conversion (Vadhan 2017, Lemma 2.2) of the "
            "example-level rdp bound, ε = K·ε' at the best δ' found; an upper bound"
        )
        return _noted(cols, note, g)
    if name != "rdp-group" and k > 1 and (why := tight_refusal(sampler, p.neighbors, k)) is not None:
        return _refused(g, f"does not apply: {why}")  # a K of a sweep beyond the mixture
    person = grouped_sampler(sampler, k) if name == "rdp-group" else person_sampler(sampler, p.neighbors, k)
    cols = rows(person, "rdp" if name == "rdp-group" else name, {**kw, "sampling": person})
    return _noted(cols, person.note("rdp" if name == "rdp-group" else name, p.neighbors), g)


def _refused(g, note: str) -> dict:
    """Rows with no value, ``note`` saying why."""
    n = g["q"].size
    nan = np.full(n, np.nan)
    e = sgd.Epsilon(nan, nan, np.zeros(n, bool), np.zeros(n, bool))
    return dict(noise_multiplier=g.get("sigma", nan), steps=g["steps"], eps=e, note=[note] * n)


def _noted(cols: dict, note: str, g) -> dict:
    """``cols`` with ``note`` on every row that has no note of its own."""
    n = g["q"].size
    own = cols.get("note") or [""] * n
    cols["note"] = [x if x else note for x in own]
    return cols


__all__ = ["GROUP_ACCOUNTANTS", "GROUP_ALL", "GROUP_SECONDS", "group_caption", "group_names", "group_rows"]
