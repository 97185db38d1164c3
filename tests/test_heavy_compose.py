"""compose's heavy tables are answered, not refused (issue 40): a table past one of the old limits on targets
(--delta/--epsilon 500, pld 100, --fpr 1000, pld --fpr 10, a calibration by search 16 pairs, the dp-group route
10 δ) is estimated up front, capped by --max-seconds before anything is computed, and otherwise computed in
pieces fixed by the work, the same rows on one process or two."""

import numpy as np
import pytest

from dpcalc import execution

#: Past each old limit, and the estimate well above one second of work.
PAST = {
    "targets": ["laplace:scale=1", "--delta", "1e-9:1e-3:x1.02", "--method", "all"],  # 698 δ
    "pld targets": ["gaussian:sigma=1", "laplace:scale=1", "--delta", "1e-10:0.5:x1.1", "--method", "pld"],
    "fpr": ["laplace:scale=10,count=100", "--fpr", "1e-6:0.5:x1.01"],  # 1,319 rates
    "pld fpr": ["sgm:q=0.01,sigma=1,count=100", "--fpr", "1e-10:0.5:x2", "--method", "pld"],  # 33 rates
    "pairs": ["laplace:count=10", "--epsilon", "1:2:0.01", "--delta", "1e-5"],  # 101 pairs
    "dp-group": [
        "laplace:scale=10,count=10",
        "--delta",
        "1e-9:1e-3:x2",
        "--group-size",
        "2",
        "--method",
        "all",
    ],
}
WHAT = {
    "targets": "bounds of composition (--method all)",
    "pld targets": "bounds of composition (--method pld)",
    "fpr": "rates of trade-off bounds (--method best)",
    "pld fpr": "rates of trade-off bounds (--method pld)",
    "pairs": "pairs of calibration by search (--method best)",
    "dp-group": "bounds of composition (--method all)",
}


def _no_work(monkeypatch):
    def fail(*a, **k):
        raise AssertionError("work started")

    monkeypatch.setattr(execution, "map_ordered", fail)


@pytest.mark.parametrize("case", list(PAST))
def test_a_table_past_an_old_limit_is_estimated_and_capped_not_refused(invoke, monkeypatch, case):
    _no_work(monkeypatch)
    res = invoke(["compose", *PAST[case], "-f", "csv", "--max-seconds", "0.5"])
    assert res.exit_code == 2 and res.stdout == ""
    (line,) = res.stderr.splitlines()
    assert line.startswith("Error: --max-seconds 0.5: ") and WHAT[case] in line, line
    assert "would take about" in line and "above the cap" in line and "above the limit" not in line


def _csv(invoke, args):
    res = invoke(["compose", *args, "-f", "csv"])
    assert res.exit_code == 0, res.stderr
    return res.stdout


@pytest.mark.filterwarnings("ignore::dpcalc.errors.DpcalcWarning")
def test_small_tables_past_the_old_limits_run(invoke):
    # 560 δ (limit 500), cheap methods: computed in this process
    out = _csv(invoke, ["laplace:scale=1", "--delta", "1e-9:1e-3:x1.025", "--method", "basic"])
    assert out.count("\n") == 1 + 560 and "above the limit" not in out
    # 17 (ε, δ) pairs by search (limit 16)
    out = _csv(
        invoke,
        ["randomized-response:count=10", "--epsilon", "1:1.16:0.01", "--delta", "1e-5", "--method", "basic"],
    )
    assert out.count("\n") == 1 + 17 and out.count("basic epsilon <= target") == 17
    # 11 pld rates (limit 10): two batches
    out = _csv(invoke, ["dp:epsilon=0.5,count=3", "--fpr", "0.01:0.11:0.01", "--method", "pld"])
    assert out.count("\n") == 1 + 11 and "does not apply" not in out
    # 700 pairs of the exact Gaussian calibration (limit 500)
    out = _csv(invoke, ["gaussian:count=10", "--epsilon", "0.05:5:0.05", "--delta", "1e-9:1e-3:x10"])
    assert out.count("\n") == 1 + 100 * 7 and "above" not in out


def test_the_dp_group_route_searches_past_ten_deltas():
    from dpcalc.commands.compose.group import GROUP_METHODS
    from dpcalc.input.group import person_forms
    from dpcalc.input.spec import parse_mechanisms

    specs = parse_mechanisms(["dp:epsilon=0.5,delta=1e-7,count=3"])
    opts = {"group_size": 2, "person": [f.spec for f in person_forms(specs, 2)], "eps_error": None}
    values, notes, _ = GROUP_METHODS["dp-group"](specs, True, np.geomspace(1e-4, 1e-2, 11), opts)
    assert len(values) == 11 and all(2.9 < v < 3 for v in values)
    assert all(n.startswith("(ε, δ) group conversion") for n in notes)


@pytest.mark.parametrize(
    "args",
    [
        # 101 ε of pld: batches of 100 and 1, each without the profile the other left
        ["dp:epsilon=0.5,count=3", "--epsilon", "0.01:1.01:0.01", "--method", "pld"],
        # 17 pairs, one piece each
        ["randomized-response:count=10", "--epsilon", "1:1.16:0.01", "--delta", "1e-5", "--method", "basic"],
    ],
    ids=["pld-epsilon", "calibration"],
)
def test_rows_are_the_same_on_one_process_and_two(invoke, args):
    assert _csv(invoke, [*args, "--jobs", "1"]) == _csv(invoke, [*args, "--jobs", "2"])


def test_pieces_depend_on_the_work_only():
    from dpcalc.commands.compose.methods import pieces

    assert pieces(500, 500, 1.0) == [(0, 500)]  # up to the old limit: one piece, computed as before
    assert pieces(250, 100, 0.3, batch=True) == [(0, 100), (100, 200), (200, 250)]
    assert pieces(7, 2, 0.4) == [(0, 2), (2, 4), (4, 6), (6, 7)]  # about a second of work a piece
