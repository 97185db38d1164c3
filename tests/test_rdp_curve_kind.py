"""The ``rdp-curve:file=PATH`` kind: a curve printed by ``--rdp-curve`` read back as a mechanism."""

import csv
import io

import numpy as np
import pytest

from dpcalc.engine.mechanisms import catalogue
from dpcalc.engine.mechanisms.gaussian import rdp_gaussian
from dpcalc.engine.mechanisms.rdp_curve import rdp_step
from dpcalc.engine.orders import DEFAULT_ORDERS
from dpcalc.input.spec import parse_mechanism

SGD = ["sgd-epsilon", "--sigma", "1.1", "--sample-rate", "0.004267", "--steps", "14063"]


def _rows(text):
    return list(csv.DictReader(io.StringIO(text)))


def _curve_file(invoke, tmp_path, args=SGD, name="curve.csv"):
    res = invoke([*args, "--rdp-curve", "-f", "csv"])
    assert res.exit_code == 0, res.stderr
    path = tmp_path / name
    path.write_text(res.stdout)
    return path


def _one_line_error(res, *needles):
    assert res.exit_code == 2
    err = res.stderr.strip()
    assert "\n" not in err and err.startswith("Error: ")
    for n in needles:
        assert n in err, err
    return err


# (1) round trip through the odometer ------------------------------------------------------------
def test_odometer_round_trip_gives_the_native_events_epsilon(invoke, tmp_path):
    path = _curve_file(invoke, tmp_path)  # default orders: the engine's 225
    alphas = ",".join(repr(float(a)) for a in DEFAULT_ORDERS)
    common = ["--delta", "1e-5", "--alphas", alphas, "-f", "csv"]
    events = tmp_path / "events.csv"
    events.write_text("sample_rate,noise_multiplier,steps\n0.004267,1.1,14063\n")
    curve = invoke(["odometer", "--event", f"rdp-curve:file={path}", *common], input="")
    native = invoke(["odometer", str(events), *common])
    assert curve.exit_code == 0 and native.exit_code == 0, curve.stderr + native.stderr
    (c,), (n,) = _rows(curve.stdout), _rows(native.stdout)
    # at the file's own orders the step extension is the file itself, and the file holds what the
    # DP-SGD accountant computes for T steps at these orders: the same ε, digit for digit
    for col in ("epsilon", "alpha", "level", "epsilon_rdp"):
        assert c[col] == n[col], col
    # ... which is sgd-epsilon's own rdp ε at this δ (the same orders, the same optimal conversion)
    sgd = invoke([*SGD, "--delta", "1e-5", "--method", "rdp", "-q"])
    assert sgd.exit_code == 0 and float(c["epsilon_rdp"]) == float(sgd.stdout)
    # The spec event sgm:q=...,count=14063 is a hair (~16 ulps) above: catalogue.rdp_curve rounds
    # count x (one step's curve) up, where the file (count=1) holds the T-step curve as computed.
    spec = invoke(["odometer", "--event", "sgm:q=0.004267,sigma=1.1,count=14063", *common], input="")
    (s,) = _rows(spec.stdout)
    assert s["epsilon"] == c["epsilon"]
    assert float(c["epsilon_rdp"]) <= float(s["epsilon_rdp"]) <= float(c["epsilon_rdp"]) * (1 + 1e-13)


def test_odometer_round_trip_at_its_default_orders(invoke, tmp_path):
    """At the odometer's own orders (not all in the file) the curve is read from the next larger file
    order, an upper bound: the odometer ε equals the native event's (its ladder only moves by levels),
    the plain ε agrees to rounding (the native curve is recomputed at other orders, a few ulps apart)."""
    path = _curve_file(invoke, tmp_path)
    events = tmp_path / "events.csv"
    events.write_text("sample_rate,noise_multiplier,steps\n0.004267,1.1,14063\n")
    curve = invoke(
        ["odometer", "--event", f"rdp-curve:file={path}", "--delta", "1e-5", "-f", "csv"], input=""
    )
    native = invoke(["odometer", str(events), "--delta", "1e-5", "-f", "csv"])
    (c,), (n,) = _rows(curve.stdout), _rows(native.stdout)
    assert c["epsilon"] == n["epsilon"] and c["alpha"] == n["alpha"]
    assert float(c["epsilon_rdp"]) == pytest.approx(float(n["epsilon_rdp"]), rel=1e-13)


def test_odometer_takes_the_kind_in_a_mechanism_column_and_with_count(invoke, tmp_path):
    path = _curve_file(invoke, tmp_path)
    events = tmp_path / "events.csv"
    events.write_text(f"mechanism\nrdp-curve:file={path}\nrdp-curve:file={path}\n")
    res = invoke(["odometer", str(events), "--delta", "1e-5", "-f", "csv"])
    assert res.exit_code == 0, res.stderr
    twice = invoke(
        ["odometer", "--event", f"rdp-curve:file={path},count=2", "--delta", "1e-5", "-f", "csv"], ""
    )
    assert float(_rows(res.stdout)[-1]["epsilon_rdp"]) == pytest.approx(
        float(_rows(twice.stdout)[0]["epsilon_rdp"]), rel=1e-12
    )


def test_relative_paths_are_relative_to_the_current_directory(invoke, tmp_path, monkeypatch):
    _curve_file(invoke, tmp_path)
    monkeypatch.chdir(tmp_path)
    spec = parse_mechanism("rdp-curve:file=curve.csv,count=3")
    # the label names the file absolutely, with its contents' SHA-256 (what a ledger records)
    assert spec.label().startswith(f"rdp-curve:file={tmp_path / 'curve.csv'},sha256=")
    assert spec.label().endswith(",count=3")
    assert parse_mechanism(spec.label()).params == spec.params
    one = catalogue.CATALOGUE["rdp-curve"].rdp(spec.params, DEFAULT_ORDERS)
    assert np.all(catalogue.rdp_curve(spec, DEFAULT_ORDERS) >= 3 * one)


def test_a_curve_csv_as_events_is_refused_naming_the_event_form(invoke, tmp_path):
    path = _curve_file(invoke, tmp_path)
    res = invoke(["odometer", str(path), "--delta", "1e-5"])
    _one_line_error(res, "rdp-curve:file=FILE", "--event", "line 1")


# (2) compose --method rdp equals convert --curve -----------------------------------------------
@pytest.mark.parametrize("delta", ["1e-5", "1e-8"])
def test_compose_rdp_equals_convert_curve(invoke, tmp_path, delta):
    path = _curve_file(invoke, tmp_path)
    comp = invoke(["compose", f"rdp-curve:file={path}", "--delta", delta, "--method", "rdp", "-f", "csv"])
    conv = invoke(["convert", "--curve", str(path), "--delta", delta, "-f", "csv"])
    assert comp.exit_code == 0 and conv.exit_code == 0, comp.stderr + conv.stderr
    (c,), (v,) = _rows(comp.stdout), _rows(conv.stdout)
    assert c["epsilon"] == v["epsilon"] and float(c["alpha"]) == float(v["alpha"])


def test_compose_reads_the_repository_example(invoke):
    comp = invoke(["compose", "rdp-curve:file=docs/examples/sgd-curve.csv", "--delta", "1e-5", "-q"])
    assert comp.exit_code == 0 and float(comp.stdout) == 2.596873685588157


# (3) monotone step extension -------------------------------------------------------------------
def test_between_orders_the_next_larger_orders_value():
    orders, values = (2.0, 4.0, 8.0), (0.5, 1.0, 3.0)
    got = rdp_step(orders, values, [1.0, 1.5, 2.0, 2.5, 4.0, 4.0001, 7.9, 8.0, 8.5, np.inf])
    assert got.tolist() == [0.5, 0.5, 0.5, 1.0, 1.0, 3.0, 3.0, 3.0, np.inf, np.inf]


def test_step_curve_of_a_gaussian_is_never_below_the_true_curve(invoke, tmp_path):
    grid = "2,3,5,8,13,21"
    res = invoke(["compose", "gaussian:sigma=3,count=7", "--rdp-curve", "--alphas", grid, "-f", "csv"])
    path = tmp_path / "g.csv"
    path.write_text(res.stdout)
    spec = parse_mechanism(f"rdp-curve:file={path}")
    a = np.linspace(1.0, 21.0, 2001)
    step = catalogue.rdp_curve(spec, a)
    true = 7 * rdp_gaussian(3.0, 1.0, a)
    assert np.all(step >= true * (1 - 1e-15))
    at_file = catalogue.rdp_curve(spec, [3.0, 13.0])
    assert at_file.tolist() == [float(r["rdp"]) for r in _rows(res.stdout) if r["alpha"] in ("3.0", "13.0")]
    # between 3 and 5: the value at 5
    assert catalogue.rdp_curve(spec, [4.2])[0] == catalogue.rdp_curve(spec, [5.0])[0]
    assert np.isinf(catalogue.rdp_curve(spec, [21.5])[0])


# (4) bad files ---------------------------------------------------------------------------------
def test_a_file_with_several_curves_is_refused(invoke, tmp_path):
    args = ["sgd-epsilon", "--sigma", "1.1,1.2", "--sample-rate", "0.004267", "--steps", "100"]
    res = invoke([*args, "--rdp-curve", "--alphas", "2,3", "-f", "csv"])
    path = tmp_path / "two.csv"
    path.write_text(res.stdout)
    out = invoke(["compose", f"rdp-curve:file={path}", "--delta", "1e-5"])
    _one_line_error(out, f"file {path} line 4", "several curves", "noise_multiplier")
    dup = tmp_path / "dup.csv"
    dup.write_text("alpha,rdp\n2,0.1\n3,0.2\n2,0.1\n")
    out = invoke(["odometer", "--event", f"rdp-curve:file={dup}", "--delta", "1e-5"], input="")
    _one_line_error(out, f"file {dup} line 4", "duplicate order", "several curves", "rdp-curve:file=")


def test_missing_and_malformed_files_are_refused(invoke, tmp_path):
    missing = tmp_path / "nope.csv"
    res = invoke(["compose", f"rdp-curve:file={missing}", "--delta", "1e-5"])
    _one_line_error(res, f"'rdp-curve:file={missing}'", f"file {missing}", "no such file")
    bad = tmp_path / "bad.csv"
    bad.write_text("alpha,rdp\n2,0.1\n3,lots\n")
    res = invoke(["compose", f"rdp-curve:file={bad}", "--delta", "1e-5"])
    _one_line_error(res, f"file {bad} line 3", "not a number", "rdp-curve:file=")
    nohead = tmp_path / "nohead.csv"
    nohead.write_text("x,y\n2,0.1\n")
    res = invoke(["odometer", "--event", f"rdp-curve:file={nohead}", "--delta", "1e-5"], input="")
    _one_line_error(res, f"file {nohead} line 1", "missing column 'alpha'")
    res = invoke(["compose", "rdp-curve:file=-", "--delta", "1e-5"])
    _one_line_error(res, "standard input")


def test_convert_still_reads_a_file_of_several_curves_as_before(invoke, tmp_path):
    """The several-curves check is the kind's (convert --curve keeps its own rules)."""
    path = tmp_path / "c.csv"
    path.write_text("method,alpha,rdp\na,2,0.1\nb,3,0.2\n")
    assert invoke(["convert", "--curve", str(path), "--delta", "1e-5"]).exit_code == 0


# (5) no PLD, no per-release (ε, δ) -------------------------------------------------------------
def test_methods_other_than_rdp_do_not_apply(invoke):
    spec = "rdp-curve:file=docs/examples/sgd-curve.csv"
    res = invoke(["compose", spec, "--delta", "1e-5", "--method", "all", "-f", "csv"])
    assert res.exit_code == 0, res.stderr
    rows = {r["method"]: r for r in _rows(res.stdout)}
    for m in ("pld", "basic", "optimal", "advanced", "exact"):
        assert rows[m]["epsilon"] == "" and rows[m]["note"].startswith("does not apply"), m
    assert "no privacy loss distribution" in rows["pld"]["note"]
    assert "rdp-curve has no per-release" in rows["basic"]["note"]
    assert rows["rdp"]["epsilon"] == "2.596873685588157"
    for m in ("basic", "optimal"):
        res = invoke(["compose", spec, "--delta", "1e-5", "--method", m, "-f", "csv"])
        assert _rows(res.stdout)[0]["note"].startswith("does not apply")
    res = invoke(["compose", spec, "--delta", "1e-5", "--method", "pld"])
    _one_line_error(res, "no privacy loss distribution")
    assert catalogue.pld_pair("rdp-curve", parse_mechanism(spec).params) is None
    assert catalogue.max_loss([parse_mechanism(spec)])[0] is None


def test_a_ledger_pins_the_curve_it_recorded(invoke, tmp_path, monkeypatch):
    """--add records the curve by absolute path and SHA-256: an edited file makes the ledger fail to replay
    (exit 1, the file unchanged) instead of silently changing the account; the same bytes replay."""
    monkeypatch.chdir(tmp_path)
    curve = tmp_path / "c.csv"
    curve.write_text("alpha,rdp\n2,0.0125\n4,0.03\n8,0.07\n16,0.15\n")
    first = invoke(
        ["odometer", "--ledger", "l.txt", "--add", "rdp-curve:file=c.csv", "--delta", "1e-6", "-q"]
    )
    assert first.exit_code == 0, first.stderr
    line = (tmp_path / "l.txt").read_text().splitlines()[-1]
    assert f"file={curve}" in line and "sha256=" in line
    before = (tmp_path / "l.txt").read_bytes()
    curve.write_text("alpha,rdp\n2,0.0125\n4,0.03\n8,0.07\n16,0.16\n")
    res = invoke(["odometer", "--ledger", "l.txt", "-q"])
    assert res.exit_code == 1 and "is not the curve recorded" in res.stderr and res.stdout == ""
    assert (tmp_path / "l.txt").read_bytes() == before
    curve.write_text("alpha,rdp\n2,0.0125\n4,0.03\n8,0.07\n16,0.15\n")
    again = invoke(["odometer", "--ledger", "l.txt", "-q"])
    assert again.exit_code == 0 and again.stdout == first.stdout
