"""The command line keeps freed large blocks in the heap (glibc's mallopt): fewer page faults in the PLD
accountant's repeated FFT windows.  Only the command line does it, never an import of the library."""

import platform
import sys

import pytest

from dpcalc.execution import allocator


@pytest.mark.skipif(
    not sys.platform.startswith("linux") or platform.libc_ver()[0] != "glibc", reason="glibc only"
)
def test_thresholds_are_set_on_glibc():
    assert allocator.keep_freed_blocks() is True


def test_no_op_elsewhere(monkeypatch):
    monkeypatch.setattr(allocator.sys, "platform", "darwin")
    assert allocator.keep_freed_blocks() is False


def test_every_command_run_sets_it(invoke, monkeypatch):
    calls = []
    monkeypatch.setattr(allocator, "keep_freed_blocks", lambda: calls.append(1) or True)
    r = invoke(["convert", "--rdp", "1", "--alpha", "10", "--delta", "1e-5", "-q"])
    assert r.exit_code == 0 and calls == [1]


def test_importing_the_library_does_not():
    import subprocess

    code = "import dpcalc.api, dpcalc.engine.dpsgd.pld_accounting, dpcalc.engine.composition.pld, sys; print('dpcalc.execution.allocator' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
