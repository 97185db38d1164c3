"""completions/ and man/ are generated from the click definitions and kept in sync."""

import shutil
import subprocess

import pytest

from dpcalc import devtools

EXPECTED = sorted(devtools.expected_files().items())


@pytest.mark.parametrize("rel,text", EXPECTED, ids=[rel for rel, _ in EXPECTED])
def test_generated_file_in_sync(rel, text):
    path = devtools.ROOT / rel
    assert path.exists(), f"{rel} missing: run python -m dpcalc.devtools regen"
    assert path.read_text() == text, f"{rel} is stale: run python -m dpcalc.devtools regen"


def test_every_command_has_a_man_page_with_examples_and_exit_status():
    for name in devtools.available_commands():
        page = devtools.man_page(name)
        assert ".SH EXIT STATUS" in page and ".SH EXAMPLES" in page and ".SH NOTES" in page, name


@pytest.mark.skipif(shutil.which("groff") is None, reason="groff not installed")
@pytest.mark.parametrize("rel", [r for r in sorted(devtools.expected_files()) if r.startswith("man/")])
def test_man_page_renders_without_warnings(rel):
    proc = subprocess.run(
        ["groff", "-man", "-Tutf8", "-ww", "-z", str(devtools.ROOT / rel)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0 and proc.stderr == "", proc.stderr


@pytest.mark.skipif(shutil.which("bash") is None, reason="bash not installed")
def test_bash_completion_script_parses():
    proc = subprocess.run(
        ["bash", "-n", str(devtools.ROOT / "completions/dpcalc.bash")], capture_output=True, text=True
    )
    assert proc.returncode == 0, proc.stderr
