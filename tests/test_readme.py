"""Every README example prints exactly the output the README shows (python -m dpcalc.readme update), run as a
reader follows them: in the README's order, in one directory, so that an example may use what an earlier one
wrote (the ledger of the odometer's CI examples)."""

import re

import pytest

from dpcalc import readme

STEPS = readme.steps(readme.README.read_text())
#: (index in STEPS, command, shown output) of the ```console examples, whose output is compared.
CHECKED = [(i, cmd, shown) for i, (cmd, shown, checked) in enumerate(STEPS) if checked]
#: The same of the ```text examples, whose output is illustrated (a ledger's head holds its entries' times).
ILLUSTRATED = [(i, cmd, shown) for i, (cmd, shown, checked) in enumerate(STEPS) if not checked]
EXAMPLES = [(cmd, shown) for _, cmd, shown in CHECKED]


@pytest.fixture(scope="module")
def in_order(tmp_path_factory):
    """The README's examples, run in order in one fresh directory (each once, when first asked for)."""
    return readme.InOrder(readme.README.read_text(), tmp_path_factory.mktemp("readme"))


def test_readme_has_examples():
    assert len(EXAMPLES) >= 3


@pytest.mark.parametrize("i,command,shown", CHECKED, ids=[c[:60] for _, c, _ in CHECKED])
def test_readme_example(i, command, shown, in_order):
    stdout, code, _ = in_order.result(i)
    assert code in (0, 3), f"{command} exited {code} (run after the examples before it, in one directory)"
    assert stdout.rstrip("\n") == shown, "stale README example: run python -m dpcalc.readme update"


@pytest.mark.parametrize("i,command,shown", ILLUSTRATED, ids=[c[:60] for _, c, _ in ILLUSTRATED])
def test_readme_illustrated_example_runs_in_order(i, command, shown, in_order):
    """A ```text example runs, after the examples before it, with as many lines as it shows; a ledger head
    shown as COUNT:… counts the entries the examples before it recorded."""
    stdout, code, _ = in_order.result(i)
    assert code == 0, f"{command} exited {code} after the README's examples before it"
    assert len(stdout.rstrip("\n").split("\n")) == len(shown.split("\n"))
    head = re.match(r"\d+:", shown)
    if head:
        assert stdout.startswith(head.group(0)), f"the head is {stdout.strip()}, the README shows {shown}"


def test_readme_examples_write_nothing_into_the_repository(in_order):
    """The examples' files (the ledger) are in their own directory, never in the repository."""
    in_order.result(len(STEPS) - 1)
    assert "ci.ledger" in readme.written(in_order.directory)
    assert not (readme.ROOT / "ci.ledger").exists()


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


def _run(words: list[str], cwd):
    """Run a README example's words as readme.run_example does, in ``cwd``; (stdout, stderr, status)."""
    import os

    from click.testing import CliRunner

    from dpcalc.cli import main

    stdin = None
    if "<" in words:
        i = words.index("<")
        stdin = (cwd / words[i + 1]).read_text()
        words = words[:i] + words[i + 2 :]
    old = os.getcwd()
    os.chdir(cwd)
    try:
        env = {"COLUMNS": "100", "NO_COLOR": "1", "TERM": "dumb"}
        res = CliRunner(env=env).invoke(main, words[1:], input=stdin, prog_name="dpcalc")
    finally:
        os.chdir(old)
    return res.stdout, res.stderr, res.exit_code


@pytest.mark.parametrize("i,command", [(i, c) for i, c, _ in CHECKED], ids=[c[:60] for _, c, _ in CHECKED])
def test_readme_example_as_a_table_and_with_plot(i, command, tmp_path, in_order):
    """Every README example also runs in table format (as on a terminal) and with --plot: it prints the
    table and draws, or refuses in one line a result with nothing to draw (a single row, a one-run audit),
    and then prints its table without --plot; never an internal error.  Each runs where the examples
    before it left their files (a copy: the one directory of the examples is not changed)."""
    pytest.importorskip("matplotlib")
    before = in_order.result(i)[2]
    path = tmp_path / "example.png"
    plot_dir = readme.restore(tmp_path / "plot", before)
    stdout, stderr, code = _run(_variant(command, "-f", "table", "--plot", str(path)), plot_dir)
    assert "internal error" not in stderr and "Traceback" not in stderr
    if code in (0, 3):
        assert path.stat().st_size > 1000 and stdout.strip()
    else:
        table_dir = readme.restore(tmp_path / "table", before)
        table, table_err, table_code = _run(_variant(command, "-f", "table"), table_dir)
        assert table_code in (0, 3), f"{command} -f table exited {table_code}: {table_err}"
        assert "internal error" not in table_err and "Traceback" not in table_err and table.strip()
        errors = [
            ln for ln in stderr.strip().split("\n") if not ln.startswith(("Note: ", "Warning: ", "dpcalc: "))
        ]
        assert code == 2 and len(errors) == 1 and errors[0].startswith("Error: --plot: "), stderr
        assert not path.exists()
        assert not stdout or command.startswith(
            "dpcalc odometer --event"
        )  # a stream: rows written as they come
