"""Modules loaded at their first use: dpcalc's one named lazy boundary for start-up.

A single query pays for every module it imports (some 0.1–1 ms each, before any computation).  A module that
only some questions need — scipy's submodules, a command's Monte Carlo, PLD or heuristic rows, the person-level
forms of --group-size, matplotlib's drawing, random allocation's round math, and the standard library's decimal,
fractions, json and textwrap (1–2 ms each; a CSV query needs none of them) — is named here as
``name = lazy_module("dotted.path")`` at the top of the module that calls it, and imported when one of its
attributes is first read.  Nothing else changes: the calls read ``name.function(...)`` as they would after
``from package import name``.
"""

from __future__ import annotations

import importlib


class LazyModule:
    """A module imported at the first use of one of its attributes."""

    __slots__ = ("_name", "_module")

    def __init__(self, name: str):
        self._name = name
        self._module = None

    def __getattr__(self, attr: str):
        module = self._module
        if module is None:
            module = self._module = importlib.import_module(self._name)  # lazy: see the module doc
        return getattr(module, attr)

    def __repr__(self) -> str:
        state = "loaded" if self._module is not None else "not loaded"
        return f"<lazy module {self._name!r} ({state})>"


def lazy_module(name: str) -> LazyModule:
    """``name`` (a dotted module path), imported at its first attribute access."""
    return LazyModule(name)
