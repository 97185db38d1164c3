"""Every README example prints exactly the output the README shows (python -m dpcalc.readme update)."""

import pytest

from dpcalc import readme

EXAMPLES = readme.examples(readme.README.read_text())


def test_readme_has_examples():
    assert len(EXAMPLES) >= 3


@pytest.mark.parametrize("command,shown", EXAMPLES, ids=[c[:60] for c, _ in EXAMPLES])
def test_readme_example(command, shown):
    stdout, code = readme.run_example(command)
    assert code in (0, 3), f"{command} exited {code}"
    assert stdout.rstrip("\n") == shown, "stale README example: run python -m dpcalc.readme update"


def test_quick_start_commands_match_ci():
    """The README's test command is exactly what .ci/run runs."""
    text = readme.README.read_text()
    ci = (readme.ROOT / ".ci" / "run").read_text()
    test_cmd = "pip install -e '.[test,plot]' && pytest -q -p no:cacheprovider"
    assert test_cmd in text and test_cmd in ci


def test_readme_python_blocks_run():
    """The README's library examples run as written."""
    import contextlib
    import importlib.util
    import io
    import re

    blocks = re.findall(r"```python\n(.*?)```", readme.README.read_text(), flags=re.S)
    assert blocks
    for block in blocks:
        if "from dp_accounting" in block and importlib.util.find_spec("dp_accounting") is None:
            continue  # a test extra (CI has it): tests/test_api_dp_event.py runs this block with it
        with contextlib.redirect_stdout(io.StringIO()) as out:
            exec(compile(block, "README.md", "exec"), {})
        assert out.getvalue().strip()


def _variant(command: str, *extra: str) -> list[str]:
    """A README example's words with its output options (-f, -q, --columns, --max-*) replaced by ``extra``."""
    import shlex

    words = shlex.split(command)
    out, skip = [], 0
    for w in words:
        if skip:
            skip -= 1
            continue
        if w in ("-f", "--format", "--columns", "--max-epsilon", "--max-delta", "--max-tpr"):
            skip = 1
            continue
        if w in ("-q", "--quiet"):
            continue
        out.append(w)
    return [*out, *extra]


def _run(words: list[str]):
    """Run a README example's words as readme.run_example does; (stdout, stderr, status)."""
    import os

    from click.testing import CliRunner

    from dpcalc.cli import main

    stdin = None
    if "<" in words:
        i = words.index("<")
        stdin = (readme.ROOT / words[i + 1]).read_text()
        words = words[:i] + words[i + 2 :]
    old = os.getcwd()
    os.chdir(readme.ROOT)
    try:
        env = {"COLUMNS": "100", "NO_COLOR": "1", "TERM": "dumb"}
        res = CliRunner(env=env).invoke(main, words[1:], input=stdin, prog_name="dpcalc")
    finally:
        os.chdir(old)
    return res.stdout, res.stderr, res.exit_code


@pytest.mark.parametrize("command", [c for c, _ in EXAMPLES], ids=[c[:60] for c, _ in EXAMPLES])
def test_readme_example_as_a_table_and_with_plot(command, tmp_path):
    """Every README example also runs in table format (as on a terminal) and with --plot: it prints the
    table and draws, or refuses in one line a result with nothing to draw (a single row, a one-run audit),
    and then prints its table without --plot; never an internal error."""
    pytest.importorskip("matplotlib")
    path = tmp_path / "example.png"
    stdout, stderr, code = _run(_variant(command, "-f", "table", "--plot", str(path)))
    assert "internal error" not in stderr and "Traceback" not in stderr
    if code in (0, 3):
        assert path.stat().st_size > 1000 and stdout.strip()
    else:
        table, table_err, table_code = _run(_variant(command, "-f", "table"))
        assert table_code in (0, 3), f"{command} -f table exited {table_code}: {table_err}"
        assert "internal error" not in table_err and "Traceback" not in table_err and table.strip()
        errors = [ln for ln in stderr.strip().split("\n") if not ln.startswith(("Note: ", "Warning: "))]
        assert code == 2 and len(errors) == 1 and errors[0].startswith("Error: --plot: "), stderr
        assert not path.exists()
        assert not stdout or command.startswith(
            "dpcalc odometer --event"
        )  # a stream: rows written as they come
