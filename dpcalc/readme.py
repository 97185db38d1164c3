"""Keep the README's examples true: every ``$ dpcalc ...`` line in a ```console block is run and the
output below it must be exactly what dpcalc prints.

    python -m dpcalc.readme update   # rerun every example and rewrite its output in README.md
    python -m dpcalc.readme check    # exit 1 if any example's shown output is stale

Examples run in-process (click's CliRunner) from the repository root, with stdout not a terminal
(so the default format is CSV, as in a pipe) and a fixed 100-column width for tables.  A line
``$ dpcalc ... < FILE`` feeds FILE on standard input.  Only stdout is shown and compared.
"""

from __future__ import annotations

import os
import re
import shlex
import sys
from pathlib import Path

from click.testing import CliRunner

from dpcalc import cli

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
FENCE = re.compile(r"^```console\s*$")


def run_example(command: str) -> tuple[str, int]:
    """Run one ``dpcalc ...`` command line; return (stdout, exit status)."""
    words = shlex.split(command)
    stdin = None
    if "<" in words:
        i = words.index("<")
        stdin = (ROOT / words[i + 1]).read_text()
        words = words[:i] + words[i + 2 :]
    assert words[0] == "dpcalc", command
    old = os.getcwd()
    os.chdir(ROOT)
    try:
        env = {"COLUMNS": "100", "NO_COLOR": "1", "TERM": "dumb"}
        res = CliRunner(env=env).invoke(cli.main, words[1:], input=stdin, prog_name="dpcalc")
    finally:
        os.chdir(old)
    return res.stdout, res.exit_code


def examples(text: str) -> list[tuple[str, str]]:
    """(command, shown output) for every example in ``text``."""
    out = []
    for cmd, shown, _start, _end in _scan(text.split("\n")):
        out.append((cmd, shown))
    return out


def _scan(lines: list[str]):
    in_block = False
    i = 0
    while i < len(lines):
        line = lines[i]
        if not in_block:
            in_block = bool(FENCE.match(line))
            i += 1
            continue
        if line.startswith("```"):
            in_block = False
            i += 1
            continue
        if line.startswith("$ dpcalc "):
            j = i + 1
            while j < len(lines) and not lines[j].startswith("$ ") and not lines[j].startswith("```"):
                j += 1
            shown = "\n".join(lines[i + 1 : j])
            yield line[2:], shown, i + 1, j
            i = j
            continue
        i += 1


def update(text: str) -> str:
    lines = text.split("\n")
    pieces = []
    last = 0
    for cmd, _shown, start, end in _scan(lines):
        stdout, _ = run_example(cmd)
        pieces.append("\n".join(lines[last:start]))
        pieces.append(stdout.rstrip("\n"))
        last = end
    pieces.append("\n".join(lines[last:]))
    return "\n".join(p for p in pieces)


def main(argv: list[str]) -> int:
    what = argv[1] if len(argv) > 1 else "check"
    text = README.read_text()
    if what == "update":
        new = update(text)
        if new != text:
            README.write_text(new)
            print("README.md updated")
        return 0
    stale = [cmd for cmd, shown in examples(text) if run_example(cmd)[0].rstrip("\n") != shown]
    for cmd in stale:
        print(f"stale example: {cmd}", file=sys.stderr)
    return 1 if stale else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
