import os

import pytest
from click.testing import CliRunner
from hypothesis import settings

settings.register_profile("ci", max_examples=60, deadline=None, derandomize=True)
settings.register_profile("dev", max_examples=60, deadline=None)
# derandomized unless asked: CI must not fail on an example it never saw before (explore with
# DPCALC_HYPOTHESIS=dev, which draws new examples on every run)
settings.load_profile(os.environ.get("DPCALC_HYPOTHESIS", "ci"))
# heavy work is computed, not refused (issue 40): a test that asks for hours by mistake fails at once, with
# the estimate, instead of running them (a test of the default, no cap, removes it)
os.environ["DPCALC_MAX_SECONDS"] = "120"


@pytest.fixture(autouse=True)
def _mpmath_precision_restored():
    """A test that sets mpmath's working precision does not leave it to the next one."""
    import mpmath

    dps = mpmath.mp.dps
    yield
    mpmath.mp.dps = dps


@pytest.fixture
def runner():
    return CliRunner()


@pytest.fixture
def invoke(runner):
    """Run ``dpcalc ARGS`` in-process; returns click's Result (stdout, stderr, exit_code separate)."""
    from dpcalc.cli import main

    def _invoke(args, input=None):
        return runner.invoke(main, args, input=input, prog_name="dpcalc", catch_exceptions=False)

    return _invoke
