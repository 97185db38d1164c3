"""The catalogue of DP-SGD batch samplers: one table, name -> :class:`~dpcalc.engine.samplers.base.Sampler`,
in listing order, that the commands, the library and the accountants read (docs/math.md §3).

Each sampler is one module of this package defining ``SAMPLER``; a new sampler is a new module and one
line in :data:`_SAMPLERS` (or, for a test, :func:`register`).
"""

from __future__ import annotations

from dpcalc.engine.samplers import (
    balls_in_bins,
    fixed_size,
    poisson,
    random_allocation,
    shuffle,
    truncated_poisson,
)
from dpcalc.engine.samplers.base import Sampler
from dpcalc.errors import InputError

_SAMPLERS = (
    poisson.SAMPLER,
    fixed_size.SAMPLER,
    truncated_poisson.SAMPLER,
    shuffle.SAMPLER,
    balls_in_bins.SAMPLER,
    random_allocation.SAMPLER,
)

#: Sampler name -> its :class:`Sampler`, in listing order.
CATALOGUE: dict[str, Sampler] = {s.name: s for s in sorted(_SAMPLERS, key=lambda s: s.order)}


def register(sampler: Sampler) -> Sampler:
    """Add a sampler to the table (in its ``order``); returns it."""
    if not isinstance(sampler, Sampler) or not sampler.name:
        raise TypeError("register: a Sampler with a name")
    entries = [s for s in CATALOGUE.values() if s.name != sampler.name] + [sampler]
    CATALOGUE.clear()
    CATALOGUE.update({s.name: s for s in sorted(entries, key=lambda s: s.order)})
    return sampler


def unregister(name: str) -> None:
    """Take a sampler out of the table (a test's clean-up)."""
    CATALOGUE.pop(name, None)


def names(accountant: str | None = None) -> tuple[str, ...]:
    """The samplers' names, in order; with ``accountant``, those it answers."""
    return tuple(s.name for s in CATALOGUE.values() if accountant is None or s.covers(accountant))


def lookup(name: str | Sampler) -> Sampler | None:
    """The sampler of a name, or None (a :class:`Sampler` is itself: the accountants take either)."""
    return name if isinstance(name, Sampler) else CATALOGUE.get(name)


def sampler(name: str | Sampler, accountant: str | None = None) -> Sampler:
    """The sampler of a name (a :class:`Sampler` is itself, e.g. a person's of
    :mod:`dpcalc.engine.samplers.person`), refusing an unknown one (with ``accountant``: one that accountant
    answers)."""
    found = lookup(name)
    if found is None or (accountant is not None and not found.covers(accountant)):
        shown = name.name if isinstance(name, Sampler) else name
        raise InputError(f"--sampling: must be one of {', '.join(names(accountant))}, got {shown!r}")
    return found
