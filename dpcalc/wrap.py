"""Text for people on a terminal: notes, warnings and verdicts wrapped to its width between words (pure
standard library, so that the command line's entry point can use it without loading the renderer)."""

import shutil

from dpcalc.lazy import lazy_module

textwrap = lazy_module("textwrap")  # only a terminal's lines are wrapped


def for_terminal(text: str, stream) -> str:
    """A note, warning or verdict line as written to ``stream``: on a terminal, wrapped to its width
    between words (:func:`wrap_words`; continuation lines indented by four spaces); elsewhere (a pipe, a
    file, a log) one line, unchanged, for the scripts that read it."""
    if not _isatty(stream):
        return text

    width = shutil.get_terminal_size((80, 24)).columns
    return "\n".join(wrap_words(text, max(width - 1, 20), "    ")) or text


#: where a word longer than the line may be broken: after a list's or a spec's separator
_SEPARATORS = ",;:"


def wrap_words(text: str, width: int, indent: str = "") -> list[str]:
    """``text`` in lines of at most ``width`` characters, broken between words (continuation lines start
    with ``indent``).  A word longer than the width (a mechanism spec, a list) is broken after one of
    its separators (``,`` ``;`` ``:``) where it has one; a word without any stands alone on its line."""
    width = max(width, 1)
    lines = textwrap.wrap(
        text, width, subsequent_indent=indent, break_long_words=False, break_on_hyphens=False
    )
    out: list[str] = []
    for line in lines:
        while len(line) > width:
            floor = len(indent) if out or line.startswith(indent) else 0
            cut = max(line.rfind(c, floor, width) for c in _SEPARATORS)
            if cut <= floor:
                break
            out.append(line[: cut + 1])
            line = indent + line[cut + 1 :]
        out.append(line)
    return out


def _isatty(stream) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError, OSError):
        return False
