"""``compose --epsilon E --delta D`` with a spec that leaves its noise parameter out, for every kind that has
one (docs/math.md §2.13): laplace and discrete-laplace (scale), discrete-gaussian and tree-aggregation
(sigma), randomized-response and exponential (per-release epsilon, the largest).

Round trips go through the forward command (``compose`` with the value filled in), never through the
calibration code; references: closed forms (pure DP at δ = 0, one randomized response), the Gaussian
whose Rényi curve tree aggregation equals, and dp_accounting's Laplace PLD.
"""

import contextlib
import json
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dpcalc.commands.compose.calibration import calibrate
from dpcalc.commands.compose.command import compose
from dpcalc.errors import DpcalcWarning, InputError


def _forward(spec, key, value, method, delta):
    """ε(δ) of ``spec`` with ``key=value`` by ``method`` (the forward compose)."""
    text = f"{spec}{',' if ':' in spec else ':'}{key}={value!r}"
    return compose([text], [delta], None, method).columns["epsilon"][0]


def _calibrated(spec, method, eps, delta, column):
    res = calibrate([spec], [eps], [delta], method)
    (value,) = res.columns[column]
    assert res.columns["method"] == [method]
    return value


#: (spec, method) whose forward rdp bound at the calibrated value has its best order at the top of the grid: a
#: pure-DP kind whose Rényi curve keeps falling to its ε (compose warns that a wider grid might give less).
EDGE_OF_GRID = {("discrete-laplace:count=4", "rdp")}

CASES = [
    ("laplace:count=10", "scale", "scale", 1, ("pld", "rdp", "optimal", "advanced", "basic")),
    ("laplace:sensitivity=2,count=5", "scale", "scale", 1, ("rdp", "pld")),
    ("discrete-laplace:count=4", "scale", "scale", 1, ("pld", "rdp", "optimal")),
    ("discrete-gaussian:count=20", "sigma", "sigma", 1, ("pld", "rdp")),
    ("tree-aggregation:steps=64,epochs=2", "sigma", "sigma", 1, ("rdp",)),
    ("rr:count=30", "epsilon", "release_epsilon", -1, ("pld", "rdp", "optimal", "basic")),
    ("exponential:count=50", "epsilon", "release_epsilon", -1, ("pld", "rdp", "optimal")),
]


@pytest.mark.parametrize(("spec", "key", "column", "direction", "methods"), CASES)
def test_round_trip_meets_the_target_and_a_nudge_misses_it(spec, key, column, direction, methods):
    eps, delta = 1.0, 1e-5
    for method in methods:
        x = _calibrated(spec, method, eps, delta, column)
        assert x is not None and x > 0, method
        nudged = x * (1 - 1e-3) if direction > 0 else x * (1 + 1e-3)  # to the less private side
        edge = (spec, method) in EDGE_OF_GRID
        with pytest.warns(DpcalcWarning, match="edge of the grid") if edge else contextlib.nullcontext():
            assert _forward(spec, key, x, method, delta) <= eps
            assert _forward(spec, key, nudged, method, delta) > eps, method


def test_best_keeps_the_most_favourable_method():
    res = calibrate(["laplace:count=10"], [1.0], [1e-5], "all")
    scales = dict(zip(res.columns["method"], res.columns["scale"]))
    best = calibrate(["laplace:count=10"], [1.0], [1e-5], "best")
    assert best.columns["scale"] == [min(scales.values())]
    res = calibrate(["rr:count=30"], [1.0], [1e-5], "all")
    eps = dict(zip(res.columns["method"], res.columns["release_epsilon"]))
    best = calibrate(["rr:count=30"], [1.0], [1e-5], "best")
    assert best.columns["release_epsilon"] == [max(eps.values())]


def test_pure_dp_at_delta_zero_is_the_closed_form():
    """ε(0) = Σ count·Δ/b (docs/math.md §2.7): b = count·Δ/ε, and ε_release = ε/count."""
    for method in ("rdp", "optimal", "basic", "pld"):
        b = _calibrated("laplace:sensitivity=3,count=4", method, 2.0, 0.0, "scale")
        assert 6.0 <= b <= 6.0 * (1 + 2e-4)
        e = _calibrated("exponential:count=8", method, 2.0, 0.0, "release_epsilon")
        assert 0.25 * (1 - 2e-4) <= e <= 0.25


def test_one_randomized_response_against_its_closed_form():
    """One ε'-RR is (e, d)-DP iff (e^ε' − e^e)/(1 + e^ε') <= d: ε' = log((e^e + d)/(1 − d))."""
    e, d = 0.5, 1e-3
    exact = math.log((math.exp(e) + d) / (1 - d))
    got = {m: _calibrated("rr", m, e, d, "release_epsilon") for m in ("optimal", "pld", "rdp")}
    assert exact * (1 - 1e-5) <= got["optimal"] <= exact
    assert got["pld"] <= exact and got["rdp"] <= exact
    assert got["pld"] >= exact * (1 - 0.02)


def test_tree_aggregation_is_the_gaussian_of_its_depth():
    """Its Rényi curve is that of count D(T)·E plain Gaussians (docs/math.md §2.9): the same rdp σ."""
    tree = _calibrated("tree-aggregation:steps=64,epochs=2", "rdp", 2.0, 1e-6, "sigma")
    gauss = _calibrated("gaussian:count=14", "rdp", 2.0, 1e-6, "sigma")  # D(64) = 7 levels, 2 epochs
    assert tree == pytest.approx(gauss, rel=3e-6)


def test_laplace_pld_scale_against_dp_accounting():
    dp_accounting = pytest.importorskip("dp_accounting")
    from dp_accounting.pld import privacy_loss_distribution as pldlib

    b = _calibrated("laplace:count=10", "pld", 1.0, 1e-5, "scale")

    def eps(scale, pessimistic):
        one = pldlib.from_laplace_mechanism(
            scale, value_discretization_interval=1e-4, pessimistic_estimate=pessimistic
        )
        return one.self_compose(10).get_epsilon_for_delta(1e-5)

    assert eps(b, True) <= 1.0 + 1e-3  # dp_accounting's own upper bound, within its discretisation
    assert eps(b * 0.99, False) > 1.0  # a 1 % smaller scale misses the target by its lower estimate
    assert dp_accounting is not None


def test_cli_row_and_columns(invoke):
    res = invoke(["compose", "exponential:count=100", "--epsilon", "1", "--delta", "1e-6", "-f", "json"])
    assert res.exit_code == 0, res.stderr
    (row,) = json.loads(res.stdout)
    assert row["release_epsilon"] > 0.01 and row["sigma"] is None and row["scale"] is None
    assert _forward("exponential:count=100", "epsilon", row["release_epsilon"], row["method"], 1e-6) <= 1.0


@pytest.mark.parametrize(
    ("texts", "delta", "method", "needle"),
    [
        (["laplace:count=2", "gaussian:count=3"], 1e-5, "best", "leaves sigma out but"),
        (["gaussian:sigma=1", "laplace:scale=1"], 1e-5, "best", "leave it out of a spec"),
        (["laplace:count=2", "gaussian:sigma=1"], 0.0, "rdp", None),
        (["discrete-gaussian"], 0.0, "best", "'--delta': 0"),
        (["laplace:count=2"], 1e-5, "exact", "'--method'"),
    ],
)
def test_errors(texts, delta, method, needle):
    if needle is None:  # a Gaussian with σ given has an unbounded loss: nothing meets δ = 0
        res = calibrate(texts, [1.0], [delta], method)
        assert res.columns["scale"] == [None] and "nothing" in res.columns["note"][0]
        return
    with pytest.raises(InputError, match=needle):
        calibrate(texts, [1.0], [delta], method)


def test_randomized_response_still_needs_epsilon_or_p_outside_calibration():
    with pytest.raises(InputError, match="give one of epsilon or p"):
        compose(["rr:count=3"], [1e-5], None, "best")


@settings(max_examples=3, deadline=None)
@given(t1=st.floats(0.2, 4.0), ratio=st.floats(1.05, 3.0))
def test_monotone_in_the_target(t1, ratio):
    b1 = _calibrated("laplace:count=20", "rdp", t1, 1e-6, "scale")
    b2 = _calibrated("laplace:count=20", "rdp", t1 * ratio, 1e-6, "scale")
    assert b2 <= b1 * (1 + 1e-6)  # a looser target never needs more noise
    e1 = _calibrated("exponential:count=20", "rdp", t1, 1e-6, "release_epsilon")
    e2 = _calibrated("exponential:count=20", "rdp", t1 * ratio, 1e-6, "release_epsilon")
    assert e2 >= e1 * (1 - 1e-6) and np.isfinite(e2)


def test_a_floor_left_by_a_spec_given_with_its_noise_is_reported_not_searched():
    """gaussian:sigma=1 alone is above ε = 0.5 at δ = 1e-5: no Laplace scale can help, every row says so."""
    res = calibrate(["laplace:count=3", "gaussian:sigma=1"], [0.5], [1e-5], "all")
    rows = dict(zip(res.columns["method"], zip(res.columns["scale"], res.columns["note"])))
    for m in ("pld", "rdp"):
        assert rows[m][0] is None and "nothing" in rows[m][1]
    best = calibrate(["laplace:count=3", "gaussian:sigma=1"], [0.5], [1e-5], "best")
    assert best.columns["scale"] == [None] and "nothing" in best.columns["note"][0]
