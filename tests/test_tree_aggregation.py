"""``tree-aggregation`` (DP-FTRL's tree, restarted every epoch): its RDP curve against dp_accounting,
closed forms, monotonicity, and the command line (docs/math.md §2.9)."""

import csv
import io
import json
import math
import re

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dpcalc.engine.mechanisms.catalogue import CATALOGUE, max_loss, rdp_curve
from dpcalc.engine.mechanisms.gaussian import rdp_gaussian
from dpcalc.engine.mechanisms.gaussian_loss import gaussian_loss
from dpcalc.engine.mechanisms.tree_aggregation import rdp_tree_aggregation, tree_depth
from dpcalc.engine.orders import DEFAULT_ORDERS, DP_ACCOUNTING_ORDERS
from dpcalc.errors import InputError
from dpcalc.input.spec import parse_mechanism

ORDERS = np.array([1.0, 1.01, 1.5, 2.0, 2.5, 3.0, 7.25, 10.0, 32.0, 256.0, 1e4])
CASES = [(0.5, 1, 1), (1.0, 2, 1), (1.0, 3, 1), (2.3, 7, 4), (2.3, 8, 4), (0.8, 100, 3), (5.0, 1023, 10)]
CASES += [(5.0, 1024, 10), (12.0, 60000, 50)]


def _rows(res):
    assert res.exit_code == 0, res.stderr
    return list(csv.DictReader(io.StringIO(res.stdout)))


def _dpa_rdp(sigma, steps, epochs, orders):
    """dp_accounting's RDP of E restarted trees: its RdpAccountant on
    ``SelfComposedDpEvent(SingleEpochTreeAggregationDpEvent(σ, T), E)`` (REPLACE_SPECIAL neighbours)."""
    import dp_accounting
    from dp_accounting.rdp import RdpAccountant

    acc = RdpAccountant(
        orders=[float(a) for a in orders],
        neighboring_relation=dp_accounting.NeighboringRelation.REPLACE_SPECIAL,
    )
    acc.compose(dp_accounting.SingleEpochTreeAggregationDpEvent(sigma, steps), epochs)
    return acc, np.asarray(acc._rdp, dtype=float)


# ------------------------------------------------------------------------------ against dp_accounting


@pytest.mark.parametrize("sigma,steps,epochs", CASES)
def test_rdp_equals_dp_accounting(sigma, steps, epochs):
    from dp_accounting.rdp import rdp_privacy_accountant as m

    ours = rdp_tree_aggregation(sigma, steps, epochs, ORDERS)
    _, theirs = _dpa_rdp(sigma, steps, epochs, ORDERS)
    # one tree, the private function directly: dpcalc's E trees are E times it
    one = np.asarray(m._compute_rdp_single_epoch_tree_aggregation(sigma, steps, list(ORDERS)), dtype=float)
    np.testing.assert_allclose(theirs, epochs * one, rtol=1e-15)
    # dpcalc's closed form is rounded up by a few ulps: never below, within 1e-12
    assert np.all(ours >= theirs)
    np.testing.assert_allclose(ours, theirs, rtol=1e-12)


def test_tree_depth_matches_dp_accounting_ceil_log2_and_tf_privacy_floor_log2():
    for t in list(range(1, 5000)) + [2**40 - 1, 2**40, 2**40 + 1]:
        d = tree_depth(t)
        assert d == math.floor(math.log2(t)) + 1 == math.ceil(math.log2(t + 1))
        assert 2 ** (d - 1) <= t < 2**d
    with pytest.raises(ValueError):
        tree_depth(0)


@pytest.mark.parametrize("sigma,steps,epochs", [(1.0, 100, 5), (3.0, 1000, 20), (0.7, 16, 2)])
def test_compose_epsilon_at_most_dp_accounting_accountant(invoke, sigma, steps, epochs):
    delta = 1e-6
    spec = f"tree-aggregation:sigma={sigma},steps={steps},epochs={epochs}"
    rows = _rows(invoke(["compose", spec, "--delta", str(delta), "--method", "rdp", "-f", "csv"]))
    ours = float(rows[0]["epsilon"])
    acc, _ = _dpa_rdp(sigma, steps, epochs, DP_ACCOUNTING_ORDERS)
    theirs = acc.get_epsilon(delta)
    assert 0 < ours <= theirs * (1 + 1e-12)
    assert ours >= 0.9 * theirs  # the same curve: the conversions differ only a little


def test_count_is_independent_runs_and_equals_more_epochs():
    a = parse_mechanism("tree-aggregation:sigma=2,steps=50,epochs=3,count=4")
    b = parse_mechanism("tree-aggregation:sigma=2,steps=50,epochs=12")
    ra, rb = rdp_curve(a, DEFAULT_ORDERS), rdp_curve(b, DEFAULT_ORDERS)
    np.testing.assert_allclose(ra, rb, rtol=1e-13)
    _, theirs = _dpa_rdp(2.0, 50, 12, DEFAULT_ORDERS)
    assert np.all(ra >= theirs) and np.all(rb >= theirs)


# ------------------------------------------------------------------------------------- closed forms


@pytest.mark.parametrize("sigma", [0.3, 1.0, 4.0])
@pytest.mark.parametrize("epochs", [1, 3])
def test_one_leaf_is_the_gaussian_mechanism(sigma, epochs):
    z = rdp_tree_aggregation(sigma, 1, epochs, ORDERS)
    np.testing.assert_allclose(z, epochs * ORDERS / (2 * sigma**2), rtol=1e-13)
    np.testing.assert_allclose(z, epochs * rdp_gaussian(sigma, 1.0, ORDERS), rtol=1e-13)


@pytest.mark.parametrize("steps,depth", [(2, 2), (3, 2), (4, 3), (7, 3), (8, 4), (1000, 10), (1024, 11)])
def test_a_tree_is_a_gaussian_of_sensitivity_sqrt_depth(steps, depth):
    z = rdp_tree_aggregation(1.5, steps, 2, ORDERS)
    np.testing.assert_allclose(z, 2 * rdp_gaussian(1.5, math.sqrt(depth), ORDERS), rtol=1e-13)
    np.testing.assert_allclose(z, 2 * depth * ORDERS / (2 * 1.5**2), rtol=1e-13)


def test_infinite_order_and_extremes():
    z = rdp_tree_aggregation(1.0, 8, 1, [2.0, math.inf])
    assert z[0] == pytest.approx(4.0, rel=1e-14) and z[1] == math.inf
    z = rdp_tree_aggregation(1e-300, 2**53, 10**12, [1.0, 2.0])
    assert np.all(z == math.inf)
    z = rdp_tree_aggregation(1e300, 1, 1, [2.0])
    assert z[0] >= 0 and not np.isnan(z[0])


def test_the_pld_is_the_gaussian_of_the_nodes_no_per_release_unbounded_loss():
    """E trees of T leaves: the Gaussian mechanism with sensitivity √(E·D(T)) (its privacy loss
    distribution), no per-release (ε, δ), unbounded loss."""
    spec = parse_mechanism("tree-aggregation:sigma=2,steps=6,epochs=3")
    mech = CATALOGUE["tree-aggregation"]
    model, other = mech.pld_pair(spec.params)
    assert other is None
    ref = gaussian_loss(2.0, math.sqrt(9.0))
    assert model.log_tail_above(1.0) == pytest.approx(ref.log_tail_above(1.0), rel=1e-12)
    assert model.log_tail_above(1.0) >= ref.log_tail_above(1.0)
    assert mech.gaussian_ratio(spec.params) >= 1.5 and mech.gaussian_ratio(spec.params) == pytest.approx(1.5)
    assert mech.per_release(spec.params)[0] is None
    total, reason = max_loss([spec])
    assert total is None and "unbounded" in reason


def test_label_round_trips_with_whole_numbers():
    spec = parse_mechanism("dp-ftrl:sigma=1.5,steps=1e3")
    assert spec.kind == "tree-aggregation"
    assert spec.label() == "tree-aggregation:sigma=1.5,steps=1000,epochs=1,count=1"
    again = parse_mechanism(spec.label())
    assert again.params == spec.params and isinstance(again.params["steps"], int)


# --------------------------------------------------------------------------------------- properties


@settings(max_examples=25)
@given(
    sigma=st.floats(1e-3, 1e3),
    factor=st.floats(1.001, 10.0),
    steps=st.integers(1, 10**9),
    more=st.integers(1, 10**6),
    epochs=st.integers(1, 1000),
)
def test_monotone_and_finite(sigma, factor, steps, more, epochs):
    base = rdp_tree_aggregation(sigma, steps, epochs, DEFAULT_ORDERS)
    assert not np.any(np.isnan(base)) and np.all(np.isfinite(base)) and np.all(base > 0)
    assert np.all(np.diff(base) >= 0)  # non-decreasing in the order
    assert np.all(rdp_tree_aggregation(sigma * factor, steps, epochs, DEFAULT_ORDERS) < base)
    assert np.all(rdp_tree_aggregation(sigma, steps + more, epochs, DEFAULT_ORDERS) >= base)
    assert np.all(rdp_tree_aggregation(sigma, 2 * steps, epochs, DEFAULT_ORDERS) > base)
    assert np.all(rdp_tree_aggregation(sigma, steps, epochs + 1, DEFAULT_ORDERS) > base)


# ---------------------------------------------------------------------------------------------- CLI


def test_compose_all_rows(invoke):
    """exact (one Gaussian, √(E·D) / σ), pld and rdp apply; exact is the Gaussian spec's, and the best."""
    spec = "tree-aggregation:sigma=1,steps=100,epochs=5"
    rows = _rows(invoke(["compose", spec, "--delta", "1e-5", "--method", "all", "-f", "csv"]))
    by = {r["method"]: r for r in rows}
    gauss = _rows(
        invoke(
            [
                "compose",
                f"gaussian:sigma=1,sensitivity={math.sqrt(35)!r}",
                "--delta",
                "1e-5",
                "--method",
                "exact",
                "-f",
                "csv",
            ]
        )
    )
    assert float(by["exact"]["epsilon"]) == pytest.approx(float(gauss[0]["epsilon"]), rel=1e-9)
    assert float(by["exact"]["epsilon"]) >= float(gauss[0]["epsilon"])
    assert float(by["pld"]["epsilon_lower"]) <= float(by["exact"]["epsilon"]) <= float(by["pld"]["epsilon"])
    assert float(by["rdp"]["epsilon"]) > float(by["exact"]["epsilon"])
    for m in ("optimal", "advanced", "basic"):
        assert by[m]["epsilon"] == "" and by[m]["note"].startswith("does not apply")
    best = _rows(invoke(["compose", spec, "--delta", "1e-5", "-f", "csv"]))
    assert len(best) == 1 and best[0]["method"] == "exact" and best[0]["epsilon"] == by["exact"]["epsilon"]


def test_compose_mix_adds_curves(invoke):
    # one tree of 1 leaf is one Gaussian: the mix of both is two Gaussians of sigma 2
    a = _rows(
        invoke(
            ["compose", "tree-aggregation:sigma=2,steps=1", "gaussian:sigma=2", "--delta", "1e-5"]
            + ["--method", "rdp", "-f", "csv"]
        )
    )
    b = _rows(
        invoke(["compose", "gaussian:sigma=2,count=2", "--delta", "1e-5", "--method", "rdp", "-f", "csv"])
    )
    assert float(a[0]["epsilon"]) == pytest.approx(float(b[0]["epsilon"]), rel=1e-12)


def test_rdp_curve_prints_it(invoke):
    rows = _rows(
        invoke(["compose", "tree-aggregation:sigma=2,steps=4,epochs=3", "--rdp-curve", "--alphas", "2,4,8"])
    )
    got = [float(r["rdp"]) for r in rows]
    want = [3 * 3 * a / 8 for a in (2, 4, 8)]  # E·D(4)·α/(2σ²), D(4) = 3
    assert got == pytest.approx(want, rel=1e-13) and all(g >= w for g, w in zip(got, want))


def test_odometer_event(invoke):
    rows = _rows(
        invoke(
            [
                "odometer",
                "--event",
                "tree-aggregation:sigma=2,steps=4,epochs=3",
                "--delta",
                "1e-5",
                "-f",
                "csv",
            ]
        )
    )
    assert len(rows) == 1 and math.isfinite(float(rows[0]["epsilon"]))


def test_delta_zero_is_unbounded(invoke):
    rows = _rows(invoke(["compose", "tree-aggregation:sigma=2,steps=4", "--delta", "0", "-f", "csv"]))
    assert rows[0]["epsilon"] == "inf" and "unbounded" in rows[0]["note"]


@pytest.mark.parametrize(
    "spec,token",
    [
        ("tree-aggregation:sigma=1,steps=2.5", "steps='2.5'"),
        ("tree-aggregation:sigma=1,steps=0", "steps='0'"),
        ("tree-aggregation:sigma=1,steps=1e16", "steps='1e16'"),
        ("tree-aggregation:sigma=1,steps=4,epochs=0", "epochs='0'"),
        ("tree-aggregation:sigma=1,steps=4,epochs=1.5", "epochs='1.5'"),
        ("tree-aggregation:sigma=1,steps=4,epochs=1e13", "epochs='1e13'"),
        ("tree-aggregation:sigma=0,steps=4", "sigma='0'"),
        ("tree-aggregation:sigma=inf,steps=4", "sigma='inf'"),
        ("tree-aggregation:sigma=nan,steps=4", "sigma='nan'"),
        ("tree-aggregation:sigma=1", "missing key 'steps'"),
        ("tree-aggregation:steps=4", "missing key 'sigma'"),
        ("tree-aggregation:sigma=1,steps=4,leaves=3", "unknown key 'leaves'"),
    ],
)
def test_spec_errors_name_the_token(invoke, spec, token):
    res = invoke(["compose", spec, "--delta", "1e-5"])
    assert res.exit_code == 2
    err = res.stderr.strip()
    assert "\n" not in err and token in err and spec in err
    with pytest.raises(InputError, match=re.escape(token)):
        parse_mechanism(spec)


def test_calibration_solves_for_its_sigma_exactly(invoke):
    """The tree of 4 leaves (3 levels) is one Gaussian of sensitivity √3: calibrated by its PLD, at or just
    above the exact σ of 3 unit Gaussians."""
    res = invoke(["compose", "tree-aggregation:steps=4", "--delta", "1e-5", "--epsilon", "2", "-f", "json"])
    assert res.exit_code == 0, res.stderr
    (row,) = json.loads(res.stdout)
    assert row["method"] in ("exact", "pld")
    ref = invoke(
        [
            "compose",
            "gaussian:count=3",
            "--delta",
            "1e-5",
            "--epsilon",
            "2",
            "--method",
            "exact",
            "-f",
            "json",
        ]
    )
    exact = json.loads(ref.stdout)[0]["sigma"]
    assert exact <= row["sigma"] <= exact * (1 + 1e-4)


def test_caption_states_the_neighbouring_relation(invoke):
    res = invoke(["compose", "tree-aggregation:sigma=1,steps=8", "--delta", "1e-5", "-f", "table"])
    assert res.exit_code == 0
    text = " ".join(res.stdout.split())
    assert "add/remove-one, in at most one leaf per epoch" in text
