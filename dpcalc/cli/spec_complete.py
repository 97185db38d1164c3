"""Shell completion of MECHANISM specs (``compose`` arguments, ``odometer --event/--add``), without
importing the engine: the kinds and their keys come from :mod:`dpcalc.cli._kinds`, a table generated
from the mechanism catalogue by ``python -m dpcalc.devtools regen`` (and checked by a test), so that
completion stays as fast as ``--help`` (no numpy).

``gau<TAB>`` gives ``gaussian:``; ``laplace:sc<TAB>`` gives ``laplace:scale=``; after a comma, the keys
not given yet (and ``count=``); a key with a fixed set of values (``sampling=``) offers them.
"""

from __future__ import annotations

from click.shell_completion import CompletionItem

from dpcalc.cli._kinds import ALIASES, CHOICES, KINDS


def complete_mechanism(ctx, param, incomplete: str):
    """click's ``shell_complete`` callback: the completions of one MECHANISM being typed."""
    return [CompletionItem(v) for v in candidates(incomplete)]


def candidates(incomplete: str) -> list[str]:
    """The completions of a partly typed MECHANISM (plain strings, in catalogue order)."""
    kinds, aliases, choices = KINDS, ALIASES, CHOICES
    if incomplete.startswith("@"):
        return []  # @FILE: the shell's own file completion is the better help
    if ":" not in incomplete:
        low = incomplete.lower()
        return [f"{k}:" for k in kinds if k.startswith(low)]
    kind_text, _, rest = incomplete.partition(":")
    kind = aliases.get(kind_text.strip().lower(), kind_text.strip().lower())
    if kind not in kinds:
        return []
    done, _, current = rest.rpartition(",")
    head = f"{kind_text}:{done + ',' if done else ''}"
    given = {p.partition("=")[0].strip().lower() for p in done.split(",") if "=" in p}
    if "=" in current:
        key, _, value = current.partition("=")
        return [
            f"{head}{key}={c}" for c in choices.get(key.strip().lower(), ()) if c.startswith(value.lower())
        ]
    keys = [k for k in kinds[kind] if k not in given]
    return [f"{head}{k}=" for k in keys if k.startswith(current.lower())]
