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
    import io
    import re

    blocks = re.findall(r"```python\n(.*?)```", readme.README.read_text(), flags=re.S)
    assert blocks
    for block in blocks:
        with contextlib.redirect_stdout(io.StringIO()) as out:
            exec(compile(block, "README.md", "exec"), {})
        assert out.getvalue().strip()
