"""dpcalc.lazy: a module named at the top of its caller and imported at the first attribute read."""

import subprocess
import sys

import pytest

from dpcalc.lazy import LazyModule, lazy_module


def test_imported_at_the_first_attribute_read_only():
    code = (
        "import sys\n"
        "from dpcalc.lazy import lazy_module\n"
        "m = lazy_module('dpcalc.engine.dpsgd.last_iterate')\n"
        "before = 'dpcalc.engine.dpsgd.last_iterate' in sys.modules\n"
        "f = m.last_iterate_epsilon\n"
        "print(before, 'dpcalc.engine.dpsgd.last_iterate' in sys.modules, callable(f), repr(m))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout.split()
    assert out[:3] == ["False", "True", "True"] and "(loaded)" in " ".join(out)


def test_same_objects_as_the_module_and_errors_pass_through():
    from dpcalc.engine import orders

    m = lazy_module("dpcalc.engine.orders")
    assert isinstance(m, LazyModule) and "not loaded" in repr(m)
    assert m.DEFAULT_ORDERS is orders.DEFAULT_ORDERS
    with pytest.raises(AttributeError):
        m.no_such_name  # noqa: B018
    with pytest.raises(ModuleNotFoundError):
        lazy_module("dpcalc.no_such_module").x  # noqa: B018
