"""The heavy examples of the README and the guide (their ```shell blocks: a million rows, hours of Monte Carlo,
a cluster) run up to their estimate: under a cap of a millisecond each is refused up front, in one line giving
the work it would do, in every output format and with --plot, and nothing is computed.  The line a page shows under one is
the announcement of that same work."""

import re
import shlex

import pytest
from click.testing import CliRunner

from dpcalc import execution, readme
from dpcalc.cli import main

#: (document, command, shown) of every heavy example of every document.
HEAVY = [
    (readme.name(path), cmd, shown)
    for path in readme.documents()
    for cmd, shown in readme.estimated(path.read_text())
]
VARIANTS = [[], ["-f", "table"], ["-f", "json"], ["-f", "csv"], ["--plot", "big.png"]]


def _words(command: str) -> list[str]:
    """The example's words without its redirection and its cluster (a test has none at that address)."""
    words = shlex.split(command)[1:]
    if ">" in words:
        words = words[: words.index(">")]
    if "--scheduler" in words:
        i = words.index("--scheduler")
        words = words[:i] + words[i + 2 :]
    return [w for w in words if w not in ("-f", "csv", "table", "json")]


def test_the_readme_has_heavy_examples():
    assert len(HEAVY) >= 3
    assert any("--scheduler" in cmd for _, cmd, _ in HEAVY)


@pytest.mark.parametrize("doc,command,shown", HEAVY, ids=[f"{d}:{c[:60]}" for d, c, _ in HEAVY])
def test_a_heavy_example_is_checked_and_estimated_not_run(doc, command, shown, monkeypatch, tmp_path):
    def never(*a, **k):
        raise AssertionError("work started")

    monkeypatch.setattr(execution, "map_ordered", never)
    monkeypatch.chdir(tmp_path)
    runner = CliRunner(env={"COLUMNS": "100", "NO_COLOR": "1", "TERM": "dumb"})
    for extra in VARIANTS:
        res = runner.invoke(main, [*_words(command), *extra, "--max-seconds", "0.001"], prog_name="dpcalc")
        assert res.exit_code == 2 and res.stdout == "", (extra, res.stderr)
        (line,) = res.stderr.splitlines()
        m = re.match(r"Error: --max-seconds 0\.001: (.+) on .+ would take about .+, above the cap", line)
        assert m, line
        if shown:  # the announcement the page shows is of the same work
            assert shown.startswith(f"dpcalc: {m.group(1)} on "), (shown, line)
        assert not (tmp_path / "big.png").exists()
