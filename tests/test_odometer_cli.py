"""``dpcalc odometer``: the paper's numbers, streaming, --follow, filters, budgets, errors, fuzzing."""

import csv
import io
import json
import os
import select
import signal
import subprocess
import sys
import time

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

SGM = "sgm:q=0.01024,sigma=1"
PAPER_RUN = ["--event", f"{SGM},count=588", "--event", f"{SGM},count=1372", "--event", f"{SGM},count=2940"]


def rows(text):
    return list(csv.DictReader(io.StringIO(text)))


def popen(args, **kw):
    proc = subprocess.Popen(
        [sys.executable, "-m", "dpcalc", "odometer", *args],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        bufsize=1,
        **kw,
    )
    proc.pending = b""
    return proc


def readline(proc, timeout=30.0):
    """The next output line, read from the pipe's file descriptor (no hidden read-ahead buffer)."""
    deadline = time.monotonic() + timeout
    while b"\n" not in proc.pending:
        ready, _, _ = select.select([proc.stdout.fileno()], [], [], max(0.0, deadline - time.monotonic()))
        assert ready, "no output line within the timeout: the row was not streamed"
        chunk = os.read(proc.stdout.fileno(), 4096)
        assert chunk, "the process closed its output"
        proc.pending += chunk
    line, proc.pending = proc.pending.split(b"\n", 1)
    return line.decode() + "\n"


# -- docs/math.md §6.3 ---------------------------------------------------------------------------
@pytest.mark.parametrize(
    "gamma, alphas, want",
    [
        ("code", "code", [3.2047, 4.6550]),  # epochs 6 and 20: the paper's 3.24 (not reproducible) and 4.7
        ("paper", "code", [4.3721, 4.8093]),
    ],
)
def test_paper_odometer_after_epochs_6_20_50(invoke, gamma, alphas, want):
    res = invoke(
        [
            "odometer",
            *PAPER_RUN,
            "--delta",
            "1e-6",
            "--gamma",
            gamma,
            "--alphas",
            alphas,
            "--conversion",
            "mironov",
            "-f",
            "csv",
        ]
    )
    assert res.exit_code == 0, res.stderr
    got = rows(res.stdout)
    assert [round(float(r["epsilon"]), 4) for r in got[:2]] == want
    assert round(float(got[2]["epsilon_rdp"]), 4) == 5.7624  # plain RDP after 50 epochs (Mironov)


def test_plain_rdp_5_7624_with_the_paper_orders_and_epochs_as_rows(invoke, tmp_path):
    events = tmp_path / "train.csv"
    events.write_text(
        "epoch,sample_rate,noise_multiplier,steps\n" + "".join(f"{e},0.01024,1,98\n" for e in range(1, 51))
    )
    res = invoke(["odometer", str(events), "--delta", "1e-6", "--conversion", "mironov", "-f", "csv"])
    assert res.exit_code == 0, res.stderr
    got = rows(res.stdout)
    assert len(got) == 50 and round(float(got[-1]["epsilon_rdp"]), 4) == 5.7624
    eps = [float(r["epsilon"]) for r in got]
    assert eps == sorted(eps) and all(float(r["epsilon"]) >= float(r["epsilon_rdp"]) for r in got)


# -- streaming ----------------------------------------------------------------------------------
def test_each_row_is_written_as_its_input_row_arrives():
    proc = popen(["-", "--delta", "1e-6", "-f", "csv", "--conversion", "mironov"])
    try:
        proc.stdin.write("sample_rate,noise_multiplier,steps\n")
        for i in range(1, 4):
            proc.stdin.write("0.01,1.0,100\n")
            proc.stdin.flush()
            if i == 1:
                assert readline(proc).startswith("step,mechanism,run,")  # the header comes with the first row
            line = readline(proc)  # before the next row is written
            assert line.startswith(f"{i},")
        proc.stdin.close()
        assert proc.wait(timeout=30) == 0
    finally:
        proc.kill()
        proc.wait()


def test_follow_a_growing_file_then_ctrl_c(tmp_path):
    log = tmp_path / "train.csv"
    log.write_text("sample_rate,noise_multiplier,steps\n0.01,1,100\n")
    proc = popen([str(log), "--follow", "--delta", "1e-6", "-f", "csv", "--conversion", "mironov"])
    try:
        assert readline(proc).startswith("step,")
        assert readline(proc).startswith("1,")
        with open(log, "a") as fh:
            fh.write("0.01,1,")  # a partial line is held back ...
            fh.flush()
            time.sleep(0.6)
            fh.write("100\n")  # ... until its newline arrives
        assert readline(proc).startswith("2,")
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=30) == 130  # Ctrl-C: the shell's status, in every mode (the README)
        assert "Traceback" not in proc.stderr.read()
    finally:
        proc.kill()
        proc.wait()


def test_json_stream_is_valid_json_with_null_for_inf(invoke):
    res = invoke(
        [
            "odometer",
            "--event",
            "gaussian:sigma=2",
            "--event",
            "dp:epsilon=1",
            "--delta",
            "1e-6",
            "-f",
            "json",
        ]
    )
    assert res.exit_code == 0, res.stderr
    data = json.loads(res.stdout)
    assert [d["step"] for d in data] == [1, 2]
    res = invoke(
        ["odometer", "--event", "laplace:scale=0.5", "--alphas", "1.5,2", "--delta", "1e-6", "-f", "json"]
    )
    assert json.loads(res.stdout)[0]["epsilon"] is not None


def test_malformed_row_exits_2_naming_the_line_after_earlier_rows(invoke):
    res = invoke(
        ["odometer", "-", "--delta", "1e-6", "-f", "csv", "--conversion", "mironov"],
        input="sample_rate,noise_multiplier\n0.01,1\n0.01,one\n0.01,1\n",
    )
    assert res.exit_code == 2
    assert res.stderr.startswith("Error: EVENTS line 3: noise_multiplier") and "Traceback" not in res.stderr
    assert len(rows(res.stdout)) == 1


# -- filter -------------------------------------------------------------------------------------
def test_filter_rows_say_which_steps_run(invoke):
    from dpcalc.engine.adaptive import odometer as o
    from dpcalc.engine.mechanisms.catalogue import rdp_curve
    from dpcalc.input.spec import parse_mechanism

    mechs = ["gaussian:sigma=3"] * 3 + ["gaussian:sigma=0.5", "gaussian:sigma=3", "gaussian:sigma=3"]
    args = [x for m in mechs for x in ("--event", m)]
    res = invoke(["odometer", *args, "--delta", "1e-6", "--filter", "2.5", "-f", "csv"])
    assert res.exit_code == 0, res.stderr
    got = rows(res.stdout)
    assert list(got[0]) == [
        "step",
        "mechanism",
        "run",
        "recorded",
        "epsilon",
        "alpha",
        "level",
        "epsilon_rdp",
        "delta",
    ]
    a = o.PAPER_ORDERS
    budgets = o.filter_budgets(a, 2.5, 1e-6, "union", "optimal")
    want = o.run_filter(np.array([rdp_curve(parse_mechanism(m), a) for m in mechs]), budgets)
    assert [r["run"] == "true" for r in got] == list(want)
    assert not all(want) and any(want)
    assert all(float(r["epsilon"]) == 2.5 for r in got)


def test_paper_filter_rule_admits_at_least_as_much(invoke):
    args = [x for _ in range(12) for x in ("--event", "gaussian:sigma=4")]
    union = rows(invoke(["odometer", *args, "--delta", "1e-6", "--filter", "2", "-f", "csv"]).stdout)
    paper = rows(
        invoke(
            [
                "odometer",
                *args,
                "--delta",
                "1e-6",
                "--filter",
                "2",
                "--filter-rule",
                "paper",
                "-f",
                "csv",
                "--conversion",
                "mironov",
            ]
        ).stdout
    )
    assert sum(r["run"] == "true" for r in paper) >= sum(r["run"] == "true" for r in union)


def test_max_epsilon_prints_all_rows_then_exits_3(invoke):
    res = invoke(
        ["odometer", *PAPER_RUN, "--delta", "1e-6", "--max-epsilon", "5", "-q", "--conversion", "mironov"]
    )
    assert res.exit_code == 3 and len(res.stdout.split()) == 3 and "budget exceeded" in res.stderr


# -- ledger through the CLI ---------------------------------------------------------------------
def test_ledger_refuses_past_budget_and_check_spends_nothing(invoke, tmp_path):
    path = str(tmp_path / "ci.ledger")
    first = invoke(["odometer", "--ledger", path, "--add", "gaussian:sigma=5", "--delta", "1e-6", "-q"])
    assert first.exit_code == 0
    eps1 = float(first.stdout)
    before = open(path, "rb").read()
    check = invoke(
        ["odometer", "--ledger", path, "--add", "gaussian:sigma=5,count=4", "--check", "-f", "csv"]
    )
    assert check.exit_code == 0 and rows(check.stdout)[0]["recorded"] == "false"
    eps2 = float(rows(check.stdout)[0]["epsilon"])
    assert eps2 > eps1 and open(path, "rb").read() == before
    refused = invoke(
        ["odometer", "--ledger", path, "--add", "gaussian:sigma=5,count=4", "--max-epsilon", f"{eps1}"]
    )
    assert refused.exit_code == 3 and "not recorded" in refused.stderr
    assert open(path, "rb").read() == before
    ok = invoke(
        ["odometer", "--ledger", path, "--add", "gaussian:sigma=5,count=4", "--max-epsilon", f"{eps2}", "-q"]
    )
    assert ok.exit_code == 0 and float(ok.stdout) == eps2
    report = invoke(["odometer", "--ledger", path, "-f", "csv"])
    assert [float(r["epsilon"]) for r in rows(report.stdout)] == [eps1, eps2]


@pytest.mark.parametrize(
    "args, code, message",
    [
        (
            ["--add", "gaussian:sigma=1", "--delta", "1e-5"],
            2,
            "--delta: this ledger was started with delta=1e-06",
        ),
        (["--add", "gaussian:sigma=1", "--gamma", "code"], 2, "--gamma"),
        (["--add", "gausian:sigma=1"], 2, "unknown kind"),
        (["--add", "dp:epsilon=1,delta=1e-6"], 2, "no Rényi-DP curve"),
        (["--check"], 2, "--check needs --add"),
        (["--filter", "1"], 2, "--filter cannot be used with --ledger"),
    ],
)
def test_ledger_usage_errors_leave_the_file_alone(invoke, tmp_path, args, code, message):
    path = str(tmp_path / "ci.ledger")
    assert (
        invoke(["odometer", "--ledger", path, "--add", "gaussian:sigma=5", "--delta", "1e-6"]).exit_code == 0
    )
    before = open(path, "rb").read()
    res = invoke(["odometer", "--ledger", path, *args])
    assert res.exit_code == code and message in res.stderr, res.stderr
    assert open(path, "rb").read() == before


def test_new_ledger_needs_delta_and_damaged_ledger_exits_1(invoke, tmp_path):
    path = str(tmp_path / "ci.ledger")
    res = invoke(["odometer", "--ledger", path, "--add", "gaussian:sigma=5"])
    assert res.exit_code == 2 and "--delta" in res.stderr and not os.path.exists(path)
    assert invoke(["odometer", "--ledger", path]).exit_code == 2  # a missing ledger is bad input
    invoke(["odometer", "--ledger", path, "--add", "gaussian:sigma=5", "--delta", "1e-6"])
    invoke(["odometer", "--ledger", path, "--add", "gaussian:sigma=6"])
    data = open(path, "rb").read().replace(b"sigma=5", b"sigma=9")
    open(path, "wb").write(data)
    for args in ([], ["--add", "gaussian:sigma=1"], ["--repair"]):
        res = invoke(["odometer", "--ledger", path, *args])
        assert (
            res.exit_code == 1 and "line 2: checksum mismatch" in res.stderr and "not changed" in res.stderr
        )
        assert open(path, "rb").read() == data


# -- usage and fuzzing --------------------------------------------------------------------------
@pytest.mark.parametrize(
    "args, message",
    [
        ([], "give EVENTS"),
        (["-", "--follow"], "--follow needs EVENTS to be a file"),
        (["--event", "gaussian:sigma=1"], "--delta"),
        (["--event", "gaussian:sigma=1", "--delta", "1.5"], "--delta"),
        (["--event", "gaussian:sigma=1", "--delta", "1e-6", "--alphas", "0.5,2"], "--alphas"),
        (["--event", "gaussian:sigma=1", "--delta", "1e-6", "--alphas", "2,2"], "--alphas"),
        (["--event", "gaussian:sigma=1", "--delta", "1e-6", "--filter", "-1"], "--filter"),
        (["--event", "gaussian:sigma=1", "--delta", "1e-6", "--check"], "--check needs --ledger"),
        (["--event", "gaussian:sigm=1", "--delta", "1e-6"], "--event #1"),
    ],
)
def test_usage_errors_exit_2(invoke, args, message):
    res = invoke(["odometer", *args])
    assert res.exit_code == 2 and message in res.stderr and res.stdout == "", res.stderr


def test_missing_events_file_exits_2(invoke, tmp_path):
    res = invoke(["odometer", str(tmp_path / "nope.csv"), "--delta", "1e-6"])
    assert res.exit_code == 2 and "cannot read" in res.stderr


cells = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True).map(repr),
    st.integers(-5, 10**6).map(str),
    st.text(alphabet=",:=\"'\t #-.0123456789eainfgus", max_size=12),
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    st.sampled_from(["sample_rate,noise_multiplier,steps", "mechanism", "sample_rate,noise_multiplier"]),
    st.lists(st.lists(cells, min_size=1, max_size=4).map(",".join), max_size=5),
)
def test_fuzzed_events_never_traceback(invoke, header, lines):
    text = header + "\n" + "\n".join(lines) + "\n"
    res = invoke(
        ["odometer", "-", "--delta", "1e-6", "--alphas", "2,8,32", "-f", "csv", "--conversion", "mironov"],
        input=text,
    )
    assert res.exit_code in (0, 2), res.stderr
    assert "Traceback" not in res.stderr and "internal error" not in res.stderr
    if res.exit_code == 2:
        # exactly one error line, naming the line; warnings about the rows before it may precede it
        lines = res.stderr.splitlines()
        errors = [ln for ln in lines if ln.startswith("Error:")]
        assert len(errors) == 1 and lines[-1] == errors[0] and errors[0].startswith("Error: EVENTS line ")
        assert all(ln.startswith(("Warning: ", "Error: ")) for ln in lines)


def test_a_reader_that_leaves_early_is_not_an_error(tmp_path):
    big = tmp_path / "big.csv"
    big.write_text("sample_rate,noise_multiplier,steps\n" + "0.01,1,100\n" * 300)
    proc = popen([str(big), "--delta", "1e-6", "-f", "csv", "--conversion", "mironov"])
    proc.stdin.close()
    assert readline(proc).startswith("step,")
    proc.stdout.close()  # like `| head -1`
    assert proc.wait(timeout=60) == 0
    assert proc.stderr.read() == ""


def test_quiet_filter_prints_the_decisions(invoke):
    args = ["--event", "gaussian:sigma=10", "--event", "gaussian:sigma=0.5", "--event", "gaussian:sigma=10"]
    res = invoke(["odometer", *args, "--delta", "1e-6", "--filter", "2", "-q"])
    assert res.exit_code == 0 and res.stdout.split() == ["true", "false", "true"]


# -- up-front checks and one-line messages --------------------------------------------------------
@pytest.mark.parametrize("where", ["no/such/dir/out.png", "adir.png"])
def test_a_plot_path_that_cannot_be_written_is_refused_before_any_work(invoke, tmp_path, where):
    """The --plot path is checked up front: one Error line, exit 2, no rows and no warnings before it."""
    (tmp_path / "adir.png").mkdir()
    res = invoke(
        ["odometer", "--event", "gaussian:sigma=4", "--delta", "1e-6", "--plot", str(tmp_path / where)]
    )
    assert res.exit_code == 2
    assert res.stdout == ""
    lines = res.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: ") and "--plot" in lines[0], res.stderr


def test_repair_says_what_it_did_in_one_note_line(invoke, tmp_path):
    path = tmp_path / "run.ledger"
    for sigma in (5, 6):
        assert (
            invoke(
                ["odometer", "--ledger", str(path), "--add", f"gaussian:sigma={sigma}", "--delta", "1e-6"]
            ).exit_code
            == 0
        )
    nothing = invoke(["odometer", "--ledger", str(path), "--repair"])
    assert nothing.exit_code == 0 and nothing.stderr.startswith("Note: ") and nothing.stderr.count("\n") == 1
    data = path.read_bytes()
    path.write_bytes(data[:-3])  # a torn last line
    fixed = invoke(["odometer", "--ledger", str(path), "--repair"])
    assert fixed.exit_code == 0, fixed.stderr
    assert fixed.stderr.startswith("Note: ") and "removed the incomplete line" in fixed.stderr
    assert fixed.stderr.count("\n") == 1


def test_a_stream_refused_mid_batch_writes_the_rows_before_it(invoke, tmp_path):
    """Rows read together are computed together; a refused row still comes after the rows before it."""
    text = (
        "mechanism\n"
        + "gaussian:sigma=20\n" * 30
        + f"rdp-curve:file={tmp_path / 'none.csv'}\n"
        + "gaussian:sigma=2\n"
    )
    res = invoke(["odometer", "-", "--delta", "1e-6", "-f", "csv"], input=text)
    assert res.exit_code == 2
    assert len(rows(res.stdout)) == 30
    errors = [line for line in res.stderr.splitlines() if line.startswith("Error: ")]
    assert errors == res.stderr.splitlines()[-1:]  # warnings about the rows written, then the one error
    assert errors[0].startswith("Error: EVENTS line 32:") and "30 rows were written" in errors[0]


def test_a_long_stream_gives_the_rows_of_the_same_events_one_by_one(invoke):
    """Batches do not change a number: the 40th row of a 40-row stream equals a 40-event run's last row."""
    specs = [f"gaussian:sigma={20 + i % 7}" for i in range(40)]
    streamed = rows(
        invoke(
            ["odometer", "-", "--delta", "1e-6", "-f", "csv"], input="mechanism\n" + "\n".join(specs) + "\n"
        ).stdout
    )
    args = [x for s in specs for x in ("--event", s)]
    given = rows(invoke(["odometer", *args, "--delta", "1e-6", "-f", "csv"]).stdout)
    assert streamed == given and len(streamed) == 40
