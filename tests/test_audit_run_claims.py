"""``audit`` takes the claim as the other commands describe a run (issue 39): a DpEvent (``--dp-event FILE``, as
``compose --dp-event``), a run in phases (``--schedule FILE``, as ``sgd-epsilon --schedule``) and a matrix-mechanism
run (``--strategy``, ``--participation``, ``--steps``, ``--noise-multiplier``, as ``matrix``).  epsilon_claimed is
the smallest certified upper bound that command prints for the same run at the row's δ; a lower bound above it
exits 3; bad or hostile input is one line, exit 2, nothing on stdout (docs/math.md §11.6)."""

from __future__ import annotations

import csv
import io
import json
import math
import subprocess
import sys

import pytest

#: A weak attack (ε >= 0.55 at δ = 1e-5) and a strong one (ε >= 3.87): the claims below sit between them.
WEAK = ["audit", "--tp", "600", "--fp", "300", "--fn", "400", "--tn", "700"]
STRONG = ["audit", "--tp", "900", "--fp", "10", "--fn", "100", "--tn", "990"]
DELTAS = "1e-5,1e-3"

#: 1000 DP-SGD steps as a DpEvent (compose's pld: about 1.5 at δ = 1e-5)
SGD_EVENT = {
    "module_name": "dp_accounting.dp_event",
    "class_name": "SelfComposedDpEvent",
    "count": 1000,
    "event": {
        "class_name": "PoissonSampledDpEvent",
        "sampling_probability": 0.01,
        "event": {"class_name": "GaussianDpEvent", "noise_multiplier": 1.1},
    },
}
#: a Laplace and a Gaussian composed (compose's best: not the exact Gaussian)
MIXED_EVENT = {
    "class_name": "ComposedDpEvent",
    "events": [
        {
            "class_name": "SelfComposedDpEvent",
            "count": 3,
            "event": {"class_name": "LaplaceDpEvent", "noise_multiplier": 4},
        },
        {"class_name": "GaussianDpEvent", "noise_multiplier": 3.0},
    ],
}
SCHEDULE = "noise_multiplier,sample_rate,steps\n1.0,0.01,300\n1.5,0.02,200\n"
#: matrix runs whose best row is each kind of accountant: the Gaussian alone, bandmf, mmcc
MATRIX = {
    "gaussian": ["--strategy", "identity", "--steps", "10", "--noise-multiplier", "5"],
    "bandmf": [
        "--strategy",
        "sqrt:bands=4",
        "--participation",
        "cyclic-poisson:b=4,q=0.25",
        "--steps",
        "200",
        "--sigma",
        "1",
    ],
    "mmcc": [
        "--strategy",
        "sqrt:bands=2",
        "--participation",
        "poisson:q=0.02",
        "--steps",
        "40",
        "--noise-multiplier",
        "1",
    ],
}


def _rows(result):
    return list(csv.DictReader(io.StringIO(result.stdout)))


def _audit(invoke, args, input=None):
    r = invoke([*args, "-f", "csv"], input=input)
    assert r.exit_code in (0, 3), r.stderr
    return _rows(r), r


def _by_delta(rows, key="epsilon"):
    return {float(row["delta"]): float(row[key]) for row in rows}


def _check_claim(rows, want: dict, code: int):
    """Each row's epsilon_claimed is ``want`` at its δ, the ratio is against it, and exit 3 iff one is beaten."""
    assert {float(row["delta"]) for row in rows} == set(want)
    for row in rows:
        claimed = float(row["epsilon_claimed"])
        assert claimed == want[float(row["delta"])]
        lower = float(row["epsilon_lower"])
        assert float(row["ratio"]) == (pytest.approx(lower / claimed) if math.isfinite(claimed) else 0.0)
    beaten = any(float(row["epsilon_lower"]) > float(row["epsilon_claimed"]) for row in rows)
    assert code == (3 if beaten else 0)


def _note(result) -> str:
    (line,) = [ln for ln in result.stderr.splitlines() if ln.startswith("Note: epsilon_claimed")]
    return line


# -- --dp-event: as compose --dp-event --------------------------------------------------------------------
@pytest.mark.parametrize("event", [SGD_EVENT, MIXED_EVENT], ids=["dp-sgd", "laplace+gaussian"])
def test_dp_event_claim_is_composes_best_epsilon(invoke, tmp_path, event):
    path = tmp_path / "event.json"
    path.write_text(json.dumps(event))
    rows, r = _audit(invoke, [*WEAK, "--delta", DELTAS, "--dp-event", str(path)])
    ref = _rows(invoke(["compose", "--dp-event", str(path), "--delta", DELTAS, "-f", "csv"]))
    _check_claim(rows, _by_delta(ref), r.exit_code)
    methods = sorted({row["method"] for row in ref})
    assert f"--dp-event '{path}'" in _note(r) and _note(r).endswith(": " + methods[0]) and len(methods) == 1
    # standard input: the same claim
    piped, _ = _audit(invoke, [*WEAK, "--delta", DELTAS, "--dp-event", "-"], input=json.dumps(event))
    assert [row["epsilon_claimed"] for row in piped] == [row["epsilon_claimed"] for row in rows]


def test_dp_event_joins_claimed_mechanisms_as_compose_joins_them(invoke, tmp_path):
    path = tmp_path / "event.json"
    path.write_text(json.dumps(SGD_EVENT))
    spec = "laplace:scale=10,count=2"
    rows, r = _audit(invoke, [*WEAK, "--delta", "1e-5", "--claimed-mechanism", spec, "--dp-event", str(path)])
    ref = _rows(invoke(["compose", spec, "--dp-event", str(path), "--delta", "1e-5", "-f", "csv"]))
    _check_claim(rows, _by_delta(ref), r.exit_code)
    assert "--claimed-mechanism and --dp-event" in _note(r)


def test_dp_event_violation_exits_3(invoke, tmp_path):
    path = tmp_path / "g.json"
    path.write_text(json.dumps({"class_name": "GaussianDpEvent", "noise_multiplier": 2.0}))
    rows, r = _audit(invoke, [*STRONG, "--delta", "1e-5", "--dp-event", str(path)])
    assert r.exit_code == 3 and "AUDIT FAILED" in r.stderr
    assert float(rows[0]["epsilon_lower"]) > float(rows[0]["epsilon_claimed"])
    assert _note(r).endswith(": exact")  # a lone Gaussian: compose's exact profile


# -- --schedule: as sgd-epsilon --schedule -----------------------------------------------------------------
def _schedule_best(invoke, args, deltas):
    """The smallest ε after the last phase over sgd-epsilon --schedule's rdp and pld rows (pld where it applies)."""
    best: dict[float, float] = {}
    for name in ("rdp", "pld"):
        res = invoke(["sgd-epsilon", *args, "--delta", deltas, "--accountant", name, "-f", "csv"])
        if res.exit_code == 2:
            assert name == "pld", res.stderr
            continue
        rows = _rows(res)
        last = max(int(row["phase"]) for row in rows)
        for row in rows:
            if int(row["phase"]) == last:
                d = float(row["delta"])
                best[d] = min(best.get(d, math.inf), float(row["epsilon"]))
    return best


def test_schedule_claim_is_sgd_epsilons_smallest_certified_epsilon(invoke, tmp_path):
    path = tmp_path / "run.csv"
    path.write_text(SCHEDULE)
    rows, r = _audit(invoke, [*WEAK, "--delta", DELTAS, "--schedule", str(path)])
    want = _schedule_best(invoke, ["--schedule", str(path)], DELTAS)
    _check_claim(rows, want, r.exit_code)
    assert _note(r).endswith(": pld")  # the tight accountant, below rdp here
    piped, _ = _audit(invoke, [*WEAK, "--delta", DELTAS, "--schedule", "-"], input=SCHEDULE)
    assert [row["epsilon_claimed"] for row in piped] == [row["epsilon_claimed"] for row in rows]


def test_schedule_with_batch_sizes_takes_dataset_size_and_rdp_where_pld_does_not_apply(invoke, tmp_path):
    path = tmp_path / "run.csv"
    path.write_text(
        "noise_multiplier,batch_size,steps,sampling\n2.0,100,200,fixed-size\n3.0,100,100,fixed-size\n"
    )
    args = ["--schedule", str(path), "--dataset-size", "10000"]
    rows, r = _audit(invoke, [*WEAK, "--delta", "1e-5", *args])
    want = _schedule_best(invoke, args, "1e-5")
    _check_claim(rows, want, r.exit_code)
    note = _note(r)
    assert ": rdp; pld does not apply" in note and "replace-one neighbours" in note and "use --" not in note


def test_schedule_violation_exits_3(invoke, tmp_path):
    path = tmp_path / "run.csv"
    path.write_text(SCHEDULE)
    rows, r = _audit(invoke, [*STRONG, "--delta", "1e-5", "--schedule", str(path)])
    assert r.exit_code == 3 and "AUDIT FAILED" in r.stderr
    assert float(rows[0]["epsilon_lower"]) > float(rows[0]["epsilon_claimed"])


def test_a_schedule_phase_without_noise_is_no_claim(invoke, tmp_path):
    path = tmp_path / "run.csv"
    path.write_text("noise_multiplier,sample_rate,steps\n?,0.01,100\n")
    r = invoke([*WEAK, "--delta", "1e-5", "--schedule", str(path)])
    assert r.exit_code == 2 and r.stdout == ""
    assert r.stderr.count("\n") == 1 and "phase 1 leaves its noise multiplier out" in r.stderr


# -- --strategy ...: as matrix ------------------------------------------------------------------------------
@pytest.mark.parametrize("kind", list(MATRIX))
def test_matrix_claim_is_matrixs_smallest_certified_row(invoke, kind):
    run = MATRIX[kind]
    rows, r = _audit(invoke, [*WEAK, "--delta", DELTAS, *run])
    ref = _rows(invoke(["matrix", *run, "--delta", DELTAS, "-f", "csv"]))
    want: dict[float, float] = {}
    best_method = {}
    for row in ref:
        if row["method"] == "mc":  # a bound with a confidence: never a claim
            continue
        d, e = float(row["delta"]), float(row["epsilon"])
        if e < want.get(d, math.inf):
            want[d], best_method[d] = e, row["method"]
    _check_claim(rows, want, r.exit_code)
    names = set(best_method.values())
    assert len(names) == 1 and _note(r).endswith(": " + names.pop())
    assert {"gaussian": "gaussian", "bandmf": "bandmf-pld", "mmcc": "mmcc"}[kind] in _note(r)


def test_matrix_claim_never_takes_the_monte_carlo_row(invoke):
    run = ["--strategy", "identity", "--participation", "balls-in-bins:b=4", "--steps", "8", "--sigma", "2"]
    rows, r = _audit(invoke, [*WEAK, "--delta", "1e-3", *run])
    gauss = _rows(invoke(["matrix", *run, "--delta", "1e-3", "--method", "gaussian", "-f", "csv"]))
    assert float(rows[0]["epsilon_claimed"]) == float(gauss[0]["epsilon"])
    assert _note(r).endswith(": gaussian") and "mc, a bound with a confidence, is never a claim" in _note(r)


def test_a_matrix_row_past_its_own_limit_is_left_out_and_said(invoke):
    """mmcc is computed up to 4096 steps: beyond, the claim is the rows that are computed (here the Gaussian),
    and the note says why mmcc is not among them."""
    run = [
        "--strategy",
        "sqrt:bands=2",
        "--participation",
        "poisson:q=0.01",
        "--steps",
        "5000",
        "--sigma",
        "2",
    ]
    rows, r = _audit(invoke, [*WEAK, "--delta", "1e-5", *run])
    gauss = _rows(invoke(["matrix", *run, "--delta", "1e-5", "--method", "gaussian", "-f", "csv"]))
    assert float(rows[0]["epsilon_claimed"]) == float(gauss[0]["epsilon"])
    assert "mmcc not computed (--steps: mmcc is computed for at most" in _note(r)


def test_matrix_violation_exits_3_and_delta_zero_claims_nothing_finite(invoke):
    rows, r = _audit(invoke, [*STRONG, "--delta", "1e-5", *MATRIX["gaussian"]])
    assert r.exit_code == 3 and "AUDIT FAILED" in r.stderr
    rows, r = _audit(invoke, [*STRONG, "--delta", "0", *MATRIX["gaussian"]])
    assert r.exit_code == 0 and rows[0]["epsilon_claimed"] == "inf" and float(rows[0]["ratio"]) == 0.0
    assert "no finite ε at δ = 0" in _note(r)


# -- bad input: one line, exit 2, nothing on stdout ------------------------------------------------------
@pytest.mark.parametrize(
    "extra,words",
    [
        (["--dp-event", "missing.json"], ["--dp-event 'missing.json'", "no such file"]),
        (["--schedule", "missing.csv"], ["--schedule 'missing.csv'", "no such file"]),
        (["--dp-event", "E", "--schedule", "S"], ["give one claim", "--dp-event", "--schedule"]),
        (
            ["--dp-event", "E", "--claimed-epsilon", "1"],
            ["give one claim", "--dp-event", "--claimed-epsilon"],
        ),
        (
            ["--schedule", "S", "--noise-multiplier", "1"],
            ["give one claim", "--schedule", "--noise-multiplier"],
        ),
        (
            ["--dp-event", "E", "--sigma", "1", "--sample-rate", "0.1", "--steps", "5"],
            ["give one claim", "--dp-event", "the DP-SGD run"],
        ),
        (
            [*MATRIX["gaussian"], "--sample-rate", "0.1"],
            ["give one claim", "the matrix-mechanism run (--strategy", "the DP-SGD run (--sample-rate)"],
        ),
        (
            [*MATRIX["gaussian"], "--epochs", "2"],
            ["give one claim", "the matrix-mechanism run", "the DP-SGD run (--epochs)"],
        ),
        ([*MATRIX["gaussian"], "--schedule", "S"], ["give one claim", "--schedule", "matrix-mechanism run"]),
        (
            ["--participation", "poisson:q=0.1", "--steps", "10", "--sigma", "1"],
            ["--participation", "needs --strategy"],
        ),
        (
            ["--strategy", "identity", "--steps", "10"],
            ["missing option --noise-multiplier", "matrix-mechanism"],
        ),
        (["--strategy", "identity", "--sigma", "1"], ["missing option --steps"]),
        (
            ["--strategy", "identity", "--strategy", "sqrt", "--steps", "5", "--sigma", "1"],
            ["--strategy", "one run"],
        ),
        (
            ["--strategy", "identity", "--participation", "single", "--participation", "min-sep:k=2,b=2"]
            + ["--steps", "5", "--sigma", "1"],
            ["--participation", "one run"],
        ),
        (["--strategy", "bogus", "--steps", "5", "--sigma", "1"], ["--strategy 'bogus'"]),
        (
            ["--strategy", "identity", "--participation", "poisson:q=2", "--steps", "5", "--sigma", "1"],
            ["q must"],
        ),
        (["--sigma", "1", "--steps", "5"], ["--sample-rate", "--strategy"]),
        (["--dp-event", "NOOP"], ["--dp-event", "no mechanism"]),
        (["--dp-event", "BAD"], ["--dp-event", "NonPrivateDpEvent"]),
    ],
)
def test_bad_claims_are_one_line_exit_2(invoke, tmp_path, extra, words):
    files = {
        "E": json.dumps(SGD_EVENT),
        "S": SCHEDULE,
        "NOOP": '{"class_name": "NoOpDpEvent"}',
        "BAD": '{"class_name": "NonPrivateDpEvent"}',
    }
    args = []
    for a in extra:
        if a in files:
            (tmp_path / a).write_text(files[a])
            a = str(tmp_path / a)
        args.append(a)
    r = invoke([*WEAK, "--delta", "1e-5", *args])
    assert r.exit_code == 2, r.stderr
    assert r.stdout == ""
    lines = r.stderr.strip().split("\n")
    assert len(lines) == 1 and lines[0].startswith("Error: "), r.stderr
    for w in words:
        assert w in lines[0], (w, lines[0])


# -- hostile input goes through the shared readers (dpcalc.input.text) ---------------------------------------
def _run(args, *, stdin=subprocess.DEVNULL, closed=False):
    cmd = [sys.executable, "-m", "dpcalc", *args]
    if closed:
        code = "import os, sys; os.close(0); os.execv(sys.executable, sys.argv[1:])"
        cmd = [sys.executable, "-c", code, *cmd]
    if isinstance(stdin, bytes):
        return subprocess.run(cmd, input=stdin, capture_output=True, timeout=120)
    return subprocess.run(cmd, stdin=stdin, capture_output=True, timeout=120)


def _one_error(res, *needles):
    err = res.stderr.decode("utf-8", "replace")
    assert res.returncode == 2, err
    assert res.stdout == b""
    assert "Traceback" not in err and "internal error" not in err
    lines = err.splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: "), err
    for needle in needles:
        assert needle in lines[0], (needle, lines[0])


AUDIT = [*WEAK, "--delta", "1e-5"]


@pytest.mark.parametrize("option", ["--dp-event", "--schedule"])
def test_a_closed_standard_input_is_one_line(option):
    _one_error(_run([*AUDIT, option, "-"], closed=True), f"{option} '-'", "standard input", "closed")


def test_a_deeply_nested_dp_event_and_schedule_are_refused_naming_the_limit(tmp_path):
    text = '{"class_name": "GaussianDpEvent", "noise_multiplier": 1.0}'
    for _ in range(600):
        text = '{"class_name": "ComposedDpEvent", "events": [' + text + "]}"
    path = tmp_path / "deep.json"
    path.write_text(text)
    _one_error(_run([*AUDIT, "--dp-event", str(path)]), "--dp-event", "deep.json", "deeper than 64 events")
    _one_error(
        _run([*AUDIT, "--dp-event", "-"], stdin=text.encode()), "--dp-event '-'", "deeper than 64 events"
    )
    deep = "[" * 1200 + "]" * 1200
    _one_error(
        _run([*AUDIT, "--schedule", "-"], stdin=deep.encode()), "--schedule '-'", "nested deeper than 64"
    )


@pytest.mark.parametrize("option", ["--dp-event", "--schedule"])
def test_an_endless_file_is_refused_at_the_readers_limit(option):
    _one_error(_run([*AUDIT, option, "/dev/zero"]), f"{option} '/dev/zero'", "more than")


def test_standard_input_is_read_once(tmp_path):
    counts = b"tp,fp,fn,tn\n600,300,400,700\n"
    base = ["audit", "--input", "-", "--delta", "1e-5"]
    _one_error(_run([*base, "--dp-event", "-"], stdin=counts), "--dp-event -", "--input -", "read once")
    _one_error(_run([*base, "--schedule", "-"], stdin=counts), "--schedule -", "--input -", "read once")
    event = json.dumps({"class_name": "GaussianDpEvent", "noise_multiplier": 2.0}).encode()
    _one_error(_run([*AUDIT, "--dp-event", "-", "--dp-event", "-"], stdin=event), "--dp-event -", "once")
