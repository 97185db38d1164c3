"""Every example of the README and of the guide's pages prints exactly the output shown (python -m dpcalc.readme
update), run as a reader follows them: each document in its own order, in a fresh directory of its own, so
that an example may use what an earlier one on the same page wrote (the ledger of the odometer's CI
examples), and no page depends on another."""

import re

import pytest

from dpcalc import readme

#: Each document's name (README.md, docs/guide/PAGE.md) and its steps.
STEPS = {readme.name(path): readme.steps(path.read_text()) for path in readme.documents()}
#: (document, index in its steps, command, shown output) of the ```console examples, whose output is compared.
CHECKED = [
    (doc, i, cmd, shown)
    for doc, steps in STEPS.items()
    for i, (cmd, shown, checked) in enumerate(steps)
    if checked
]
#: The same of the ```text examples, whose output is illustrated (a ledger's head holds its entries' times).
ILLUSTRATED = [
    (doc, i, cmd, shown)
    for doc, steps in STEPS.items()
    for i, (cmd, shown, checked) in enumerate(steps)
    if not checked
]
EXAMPLES = [(cmd, shown) for doc, _, cmd, shown in CHECKED if doc == "README.md"]
#: The eight commands' guide pages.
COMMAND_PAGES = [
    f"docs/guide/{c}.md"
    for c in ("sgd-epsilon", "convert", "compose", "iterate", "langevin", "odometer", "audit", "matrix")
]


def _ids(rows):
    """Test ids that name the page: ``docs/guide/compose.md:dpcalc compose ...``."""
    return [f"{row[0]}:{row[2][:60]}" for row in rows]


@pytest.fixture(scope="module")
def in_order(tmp_path_factory):
    """Each document's examples, run in its order in a fresh directory of its own (each once, when first asked
    for): ``in_order(doc)``."""
    sessions = {}

    def session(doc: str) -> readme.InOrder:
        if doc not in sessions:
            directory = tmp_path_factory.mktemp(doc.replace("/", "-"))
            sessions[doc] = readme.InOrder((readme.ROOT / doc).read_text(), directory)
        return sessions[doc]

    return session


def test_readme_has_examples():
    assert len(EXAMPLES) >= 3


def test_every_command_page_has_examples():
    assert set(COMMAND_PAGES) <= set(STEPS)
    for page in COMMAND_PAGES:
        assert any(checked for _, _, checked in STEPS[page]), page


@pytest.mark.parametrize("doc,i,command,shown", CHECKED, ids=_ids(CHECKED))
def test_readme_example(doc, i, command, shown, in_order):
    stdout, code, _ = in_order(doc).result(i)
    assert code in (0, 3), (
        f"{command} exited {code} (run after the examples before it on {doc}, in one directory)"
    )
    assert stdout.rstrip("\n") == shown, f"stale example of {doc}: run python -m dpcalc.readme update"


@pytest.mark.parametrize("doc,i,command,shown", ILLUSTRATED, ids=_ids(ILLUSTRATED))
def test_readme_illustrated_example_runs_in_order(doc, i, command, shown, in_order):
    """A ```text example runs, after the examples before it on its page, with as many lines as it shows; a
    ledger head shown as COUNT:… counts the entries the examples before it recorded."""
    stdout, code, _ = in_order(doc).result(i)
    assert code == 0, f"{command} exited {code} after the examples before it on {doc}"
    assert len(stdout.rstrip("\n").split("\n")) == len(shown.split("\n"))
    head = re.match(r"\d+:", shown)
    if head:
        assert stdout.startswith(head.group(0)), f"the head is {stdout.strip()}, {doc} shows {shown}"


@pytest.mark.parametrize("doc", [d for d, steps in STEPS.items() if steps])
def test_readme_examples_write_nothing_into_the_repository(doc, in_order):
    """The examples' files (the ledger) are in their page's own directory, never in the repository."""
    session = in_order(doc)
    session.result(len(STEPS[doc]) - 1)
    written = readme.written(session.directory)
    if doc == "docs/guide/odometer.md":
        assert "ci.ledger" in written
    assert not (readme.ROOT / "ci.ledger").exists()
    for rel in written:
        assert not (readme.ROOT / rel).exists(), rel


def test_quick_start_commands_match_ci():
    """The README's test command is exactly what .ci/run runs."""
    text = readme.README.read_text()
    ci = (readme.ROOT / ".ci" / "run").read_text()
    test_cmd = "pip install -e '.[test,plot]' && pytest -q -p no:cacheprovider"
    assert test_cmd in text and test_cmd in ci


#: (document, block) for every ```python block of every document.
PYTHON = [
    (readme.name(path), block)
    for path in readme.documents()
    for block in re.findall(r"```python\n(.*?)```", path.read_text(), flags=re.S)
]


def test_the_documents_have_python_blocks():
    assert PYTHON


@pytest.mark.parametrize("doc,block", PYTHON, ids=[f"{doc}:{k}" for k, (doc, _) in enumerate(PYTHON)])
def test_readme_python_blocks_run(doc, block):
    """The library examples (README and guide) run as written."""
    import contextlib
    import importlib.util
    import io

    if "from dp_accounting" in block and importlib.util.find_spec("dp_accounting") is None:
        pytest.skip("a test extra (CI has it): tests/test_api_dp_event.py runs this block with it")
    with contextlib.redirect_stdout(io.StringIO()) as out:
        exec(compile(block, doc, "exec"), {})
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


@pytest.mark.parametrize("doc,i,command", [(d, i, c) for d, i, c, _ in CHECKED], ids=_ids(CHECKED))
def test_readme_example_as_a_table_and_with_plot(doc, i, command, tmp_path, in_order):
    """Every example (README and guide) also runs in table format (as on a terminal) and with --plot: it prints the
    table and draws, or refuses in one line a result with nothing to draw (a single row, a one-run audit),
    and then prints its table without --plot; never an internal error.  Each runs where the examples
    before it on its page left their files (a copy: the page's one directory of examples is not changed)."""
    pytest.importorskip("matplotlib")
    before = in_order(doc).result(i)[2]
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
