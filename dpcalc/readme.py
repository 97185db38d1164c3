"""Keep the examples of the README and of the guide true: every ``$ dpcalc ...`` line in a ```console block is
run and the output below it must be exactly what dpcalc prints.

    python -m dpcalc.readme update [DOC ...]  # rerun every example and rewrite its output in each document
    python -m dpcalc.readme check [DOC ...]   # exit 1 if any example's shown output is stale

The documents (:func:`documents`) are README.md and every page of ``docs/guide/``; DOC names some of them
(a path, as ``docs/guide/compose.md``).  Each document's examples run in its own order, in a fresh directory of
its own, as a reader following that page would run them: a file one example writes (a ledger) is there for
the examples after it on the same page, and never for another page's, so each page is self-contained.  The
repository's ``docs`` is reachable from that directory (``docs/examples/...``), and nothing is written into
the repository.  A ``$ dpcalc ...`` line of a ```text block runs in its turn too (it changes what the next
examples see), but its output is only illustrated (a ledger's head holds the time of its entries) and is
never rewritten.

A ```shell block holds heavy examples (a million rows, hours of Monte Carlo, a cluster): its ``$ dpcalc ...``
lines (:func:`estimated`) are not run to the end by the tests but up to their estimate, under a cap
(``--max-seconds``), which checks their options and their work without doing it; the lines shown under them
are what dpcalc says on stderr.

Examples run in-process (click's CliRunner), with stdout not a terminal (so the default format is CSV, as in a
pipe) and a fixed 100-column width for tables.  A line ``$ dpcalc ... < FILE`` feeds FILE on standard input.
Only stdout is shown and compared.
"""

from __future__ import annotations

import os
import re
import shlex
import sys
import tempfile
from pathlib import Path

from click.testing import CliRunner

from dpcalc import cli

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
#: The guide's pages: one per command and one per question that spans them.
GUIDE = ROOT / "docs" / "guide"
FENCE = re.compile(r"^```(console|text)\s*$")
#: What of the repository the examples' directory reaches (a symbolic link to it).
LINKED = ("docs",)


def documents() -> list[Path]:
    """The documents whose examples are run and checked: README.md, then the guide's pages by name."""
    return [README, *sorted(GUIDE.glob("*.md"))]


def name(path: Path) -> str:
    """A document's name: its path in the repository (``README.md``, ``docs/guide/compose.md``)."""
    return Path(path).resolve().relative_to(ROOT).as_posix()


def workdir(directory: Path) -> Path:
    """Make ``directory`` a place to run a document's examples in: the repository's :data:`LINKED` reachable."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    for linked in LINKED:
        (directory / linked).symlink_to(ROOT / linked, target_is_directory=True)
    return directory


def written(directory: Path) -> dict[str, bytes]:
    """The files the examples wrote in ``directory`` (relative path -> contents; the linked ones left out)."""
    directory = Path(directory)
    out = {}
    for path in sorted(directory.rglob("*")):
        rel = path.relative_to(directory)
        if rel.parts[0] not in LINKED and path.is_file():
            out[rel.as_posix()] = path.read_bytes()
    return out


def restore(directory: Path, files: dict[str, bytes]) -> Path:
    """A fresh ``directory`` for the examples holding ``files`` (what :func:`written` returned)."""
    workdir(directory)
    for rel, data in files.items():
        path = Path(directory) / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    return Path(directory)


def run_example(command: str, cwd: Path | None = None) -> tuple[str, int]:
    """Run one ``dpcalc ...`` command line in ``cwd`` (default: a fresh directory of its own, see
    :func:`workdir`); return (stdout, exit status)."""
    if cwd is None:
        with tempfile.TemporaryDirectory(prefix="dpcalc-readme-") as tmp:
            return run_example(command, workdir(Path(tmp)))
    words = shlex.split(command)
    stdin = None
    if "<" in words:
        i = words.index("<")
        stdin = (Path(cwd) / words[i + 1]).read_text()
        words = words[:i] + words[i + 2 :]
    assert words[0] == "dpcalc", command
    old = os.getcwd()
    os.chdir(cwd)
    try:
        env = {"COLUMNS": "100", "NO_COLOR": "1", "TERM": "dumb"}
        res = CliRunner(env=env).invoke(cli.main, words[1:], input=stdin, prog_name="dpcalc")
    finally:
        os.chdir(old)
    return res.stdout, res.exit_code


def steps(text: str) -> list[tuple[str, str, bool]]:
    """(command, shown output, checked) for every ``$ dpcalc`` line in ``text``, in order: ``checked`` for a
    ```console block (its output is the real one), not for a ```text block (its output is illustrated)."""
    return [(cmd, shown, kind == "console") for cmd, shown, _start, _end, kind in _scan(text.split("\n"))]


SHELL_FENCE = "```shell"


def estimated(text: str) -> list[tuple[str, str]]:
    """(command, shown) for every ``$ dpcalc ...`` line of a ```shell block (heavy examples; see the module)."""
    out = []
    inside = False
    lines = text.split("\n")
    for i, line in enumerate(lines):
        if line.startswith("```"):
            inside = not inside and line.strip() == SHELL_FENCE
            continue
        if inside and line.startswith("$ dpcalc "):
            shown = []
            for nxt in lines[i + 1 :]:
                if nxt.startswith("$ ") or nxt.startswith("```"):
                    break
                shown.append(nxt)
            out.append((line[2:], "\n".join(shown)))
    return out


def examples(text: str) -> list[tuple[str, str]]:
    """(command, shown output) for every example of a ```console block in ``text``."""
    return [(cmd, shown) for cmd, shown, checked in steps(text) if checked]


class InOrder:
    """A document's :func:`steps`, run in order in one directory (made by :func:`workdir`), each at most once and
    only when a result at or after it is asked for."""

    def __init__(self, text: str, directory: Path):
        self.steps = steps(text)
        self.directory = workdir(directory)
        self.results: list[tuple[str, int, dict[str, bytes]]] = []

    def result(self, i: int) -> tuple[str, int, dict[str, bytes]]:
        """(stdout, exit status, the files the steps before it had written) of step ``i``."""
        while len(self.results) <= i:
            before = written(self.directory)
            stdout, code = run_example(self.steps[len(self.results)][0], self.directory)
            self.results.append((stdout, code, before))
        return self.results[i]

    def __iter__(self):
        for i in range(len(self.steps)):
            yield (*self.steps[i], *self.result(i)[:2])


def _scan(lines: list[str]):
    kind = None
    i = 0
    while i < len(lines):
        line = lines[i]
        if kind is None:
            m = FENCE.match(line)
            kind = m.group(1) if m else (None if not line.startswith("```") else "")
            i += 1
            continue
        if line.startswith("```"):
            kind = None
            i += 1
            continue
        if kind and line.startswith("$ dpcalc "):
            j = i + 1
            while j < len(lines) and not lines[j].startswith("$ ") and not lines[j].startswith("```"):
                j += 1
            shown = "\n".join(lines[i + 1 : j])
            yield line[2:], shown, i + 1, j, kind
            i = j
            continue
        i += 1


def update(text: str) -> str:
    lines = text.split("\n")
    pieces = []
    last = 0
    with tempfile.TemporaryDirectory(prefix="dpcalc-readme-") as tmp:
        session = InOrder(text, Path(tmp))
        for i, (_cmd, _shown, start, end, kind) in enumerate(_scan(lines)):
            stdout = session.result(i)[0]
            if kind != "console":
                continue
            pieces.append("\n".join(lines[last:start]))
            pieces.append(stdout.rstrip("\n"))
            last = end
    pieces.append("\n".join(lines[last:]))
    return "\n".join(p for p in pieces)


def stale(text: str) -> list[str]:
    """The commands of ``text``'s ```console examples whose shown output is not what they print (run in order,
    in a fresh directory)."""
    with tempfile.TemporaryDirectory(prefix="dpcalc-readme-") as tmp:
        return [
            cmd
            for cmd, shown, checked, stdout, _code in InOrder(text, Path(tmp))
            if checked and stdout.rstrip("\n") != shown
        ]


def main(argv: list[str]) -> int:
    what = argv[1] if len(argv) > 1 else "check"
    if what not in ("update", "check"):
        print(f"usage: python -m dpcalc.readme update|check [DOC ...] (not {what!r})", file=sys.stderr)
        return 2
    paths = [Path(arg).resolve() for arg in argv[2:]] or documents()
    failed = False
    for path in paths:
        text = path.read_text()
        if what == "update":
            new = update(text)
            if new != text:
                path.write_text(new)
                print(f"{name(path)} updated")
            continue
        for cmd in stale(text):
            print(f"stale example: {name(path)}: {cmd}", file=sys.stderr)
            failed = True
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
