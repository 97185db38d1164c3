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

:func:`route` says which sampler and accountant answer a person's row (the rows are then computed as an
example's are, :mod:`dpcalc.commands.sgd.rows` and :mod:`dpcalc.commands.sgd.delta`), with the note that names
the route; with ``--target-epsilon`` each answers the inverse questions by a monotone search per configuration
over its own ε.  K = 1 leaves every row as it is without --group-size.
"""

from __future__ import annotations

from dataclasses import dataclass

from dpcalc.commands.sgd.question import GROUP_ACCOUNTANTS, person_samplers
from dpcalc.errors import InputError


@dataclass(frozen=True)
class Route:
    """Who answers one accountant's rows for a person with ``k`` examples: ``sampler`` (the person's, or the
    example's where ``person`` is false) under the accountant ``name`` (``"rdp"`` for rdp-group: the grouped
    curve), each row's ``note`` where it has none of its own (None: the accountant's usual note), or
    ``refusal``: why no row is computed (a K of a sweep beyond the tight mixture)."""

    accountant: str
    name: str
    sampler: object
    k: int = 1
    person: bool = False
    note: str | None = None
    refusal: str | None = None


def route(question, accountant: str, k: int) -> Route:
    """The :class:`Route` of ``accountant``'s rows at group size ``k`` (K = 1 and an example-level accountant:
    the example's own rows).  dp-group's rows are the example-level rdp bound's, converted by the rows
    themselves (:mod:`dpcalc.commands.sgd.rows`, :mod:`dpcalc.commands.sgd.delta`)."""
    sampler, neighbors = question.sampler, question.params.neighbors
    if (k == 1 and accountant not in GROUP_ACCOUNTANTS) or accountant == "dp-group":
        return Route(accountant, accountant, sampler, k)
    if (
        accountant != "rdp-group"
        and k > 1
        and (why := person_samplers.tight_refusal(sampler, neighbors, k)) is not None
    ):
        return Route(accountant, accountant, sampler, k, refusal=f"does not apply: {why}")
    name = "rdp" if accountant == "rdp-group" else accountant
    person = (
        person_samplers.grouped_sampler(sampler, k)
        if accountant == "rdp-group"
        else person_samplers.person_sampler(sampler, neighbors, k)
    )
    return Route(accountant, name, person, k, person=True, note=person.note(name, neighbors))


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
    whys = {person_samplers.tight_refusal(sampler, neighbors, k) for k in ks if k > 1} - {None}
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


__all__ = ["Route", "group_caption", "refuse_group", "route"]
