"""DpEvents given to the library: a ``DpEvent`` object of dp-accounting (or jax_privacy, whose events are
dp-accounting's), or its JSON object, as the MECHANISM specs it stands for (docs/math.md §2.16).

The object becomes the JSON object ``compose --dp-event FILE`` reads (:mod:`dpcalc.input.dpevent`): its named tuple
(``to_named_tuple()``) with every named tuple as an object and every sequence as a list; dpcalc.input.dpevent then
reads that structure as it reads a file, so an event means the same in ``api.compose`` and on the command line.
dp-accounting itself is not imported: an object is an event when it has ``to_named_tuple``.
"""

from __future__ import annotations

from dpcalc.errors import InputError
from dpcalc.input.dpevent import MAX_DEPTH, specs_of_event
from dpcalc.input.spec import MechanismSpec, parse_mechanism

#: The deepest named-tuple structure converted: an object and a list per event, and a list of numbers.
MAX_LEVELS = 2 * (MAX_DEPTH + 1) + 1


def is_event(x) -> bool:
    """Whether ``x`` is a DpEvent object (it has ``to_named_tuple``) or a DpEvent's JSON object."""
    return callable(getattr(x, "to_named_tuple", None)) or (isinstance(x, dict) and "class_name" in x)


def event_object(event, where: str = "dp_event") -> dict:
    """The JSON object of a DpEvent object (``dict``: returned as it is): its named tuple, recursively, with
    numpy values as Python numbers and lists."""
    if isinstance(event, dict):
        return event
    try:
        tree = event.to_named_tuple()
    except Exception as exc:  # a DpEvent that cannot describe itself
        raise InputError(f"{where}: {type(event).__name__}.to_named_tuple() failed ({exc})") from None
    obj = _plain(tree, where, 0)
    if not isinstance(obj, dict):
        raise InputError(f"{where}: to_named_tuple() gave {type(tree).__name__}, not a named tuple")
    return obj


def _plain(x, where: str, level: int):
    if level > MAX_LEVELS:
        raise InputError(f"{where}: nested deeper than {MAX_DEPTH} events")
    if hasattr(x, "_asdict"):  # a named tuple: an object
        return {k: _plain(v, where, level + 1) for k, v in x._asdict().items()}
    if isinstance(x, (list, tuple)):
        return [_plain(v, where, level + 1) for v in x]
    if hasattr(x, "tolist") and not isinstance(x, (bool, int, float, str)):  # a numpy scalar or array
        return _plain(x.tolist(), where, level + 1)
    return x


def event_specs(event, where: str = "dp_event") -> list[MechanismSpec]:
    """The parsed specs (each with its count) of a DpEvent object or its JSON object; an event dpcalc cannot
    account for is an :class:`InputError` naming its class and its place (``where.events[1]``)."""
    return [
        parse_mechanism(f"{text},count={count}")
        for text, count in specs_of_event(event_object(event, where), where)
    ]
