"""--max-epsilon / --max-delta / --max-tpr and -q judge each configuration by its tightest certified row."""

import csv
import io
import math
import warnings

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dpcalc.cli.common import BudgetJudge, Output, check_budget, sound_row
from dpcalc.errors import InputError
from dpcalc.render import configs, to_string
from dpcalc.result import Result, Stream

ALL = ["sgd-epsilon", "--sigma", "4", "--sample-rate", "0.04", "--steps", "1000", "--delta", "1e-5"]
ISSUE = ["sgd-epsilon", "--sigma", "1.1", "--sample-rate", "0.004", "--steps", "10000", "--delta", "1e-5"]


def _csv(invoke, args):
    res = invoke([*args, "-f", "csv"])
    assert res.exit_code == 0, res.stderr
    return list(csv.DictReader(io.StringIO(res.stdout)))


def _bounds(rows, column="epsilon"):
    """(method, value) of the rows whose column is a certified upper bound."""
    return [
        (r["method"], float(r[column]))
        for r in rows
        if r[column] and r.get("valid") != "false" and not r["method"].endswith(("-asymptotic", "-reference"))
    ]


def test_the_gate_passes_when_one_certified_row_is_within_the_budget(invoke):
    rows = _csv(invoke, [*ISSUE, "--method", "all"])
    bounds = dict(_bounds(rows))
    assert bounds["pld"] < bounds["rdp"]
    limit = (bounds["pld"] + bounds["rdp"]) / 2  # rdp exceeds it, pld certifies less
    res = invoke([*ISSUE, "--method", "all", "-q", "--max-epsilon", repr(limit)])
    assert res.exit_code == 0, res.stderr
    assert res.stdout == f"{bounds['pld']!r}\n"  # the tightest certified value, alone: one configuration


def test_the_gate_fails_when_the_tightest_certified_row_exceeds_the_budget(invoke):
    bounds = dict(_bounds(_csv(invoke, [*ISSUE, "--method", "all"])))
    limit = bounds["pld"] * 0.99
    for fmt in ("csv", "json", "table"):
        res = invoke([*ISSUE, "--method", "all", "--max-epsilon", repr(limit), "-f", fmt])
        assert res.exit_code == 3
        assert res.stderr.strip().splitlines() == [
            f"Error: budget exceeded: epsilon = {bounds['pld']!r} > {limit!r} (tightest certified row 2, method pld)"
        ]


def test_an_asymptotic_row_is_never_judged_nor_printed_by_q(invoke):
    rows = _csv(invoke, [*ALL, "--method", "all"])
    abadi = float(next(r["epsilon"] for r in rows if r["method"] == "abadi-asymptotic"))
    tightest = min(v for _, v in _bounds(rows))
    assert abadi > tightest
    res = invoke([*ALL, "--method", "all", "--max-epsilon", repr(tightest), "-q"])
    assert res.exit_code == 0 and res.stdout == f"{tightest!r}\n"


def test_q_of_rows_that_are_not_bounds_is_refused_and_prints_nothing(invoke):
    res = invoke([*ALL, "--method", "abadi", "-q"])
    assert res.exit_code == 2 and res.stdout == ""
    assert "-q prints certified bounds only" in res.stderr and "abadi-asymptotic" in res.stderr


def test_a_budget_with_no_sound_row_is_never_a_pass(invoke):
    res = invoke([*ALL, "--method", "abadi", "--max-epsilon", "100"])
    assert res.exit_code == 2
    assert "reports no epsilon that is a sound upper bound (rows: abadi-asymptotic)" in res.stderr


SWEEP = [
    "sgd-epsilon",
    "--sigma",
    "0.8,1.1,2",
    "--sample-rate",
    "0.004",
    "--steps",
    "10000",
    "--delta",
    "1e-5",
]


def test_a_sweep_is_judged_and_printed_per_configuration(invoke):
    rows = _csv(invoke, [*SWEEP, "--method", "all"])
    tightest = {}
    for r in rows:
        if r["valid"] != "false" and not r["method"].endswith("-asymptotic") and r["epsilon"]:
            s = r["noise_multiplier"]
            tightest[s] = min(tightest.get(s, float("inf")), float(r["epsilon"]))
    assert len(tightest) == 3
    res = invoke([*SWEEP, "--method", "all", "-q"])
    assert res.exit_code == 0
    assert res.stdout.splitlines() == [f"noise_multiplier={s}\t{v!r}" for s, v in tightest.items()]
    values = sorted(tightest.values())
    # within the largest tightest value: every configuration passes
    assert invoke([*SWEEP, "--method", "all", "--max-epsilon", repr(values[-1])]).exit_code == 0
    res = invoke([*SWEEP, "--method", "all", "--max-epsilon", repr(values[1]), "-f", "jsonl"])
    assert res.exit_code == 3 and len(res.stdout.splitlines()) == len(rows)  # the rows are still printed
    worst = max(tightest, key=tightest.get)
    assert f"epsilon = {tightest[worst]!r} > {values[1]!r} at noise_multiplier={worst} " in res.stderr
    assert "1 of 3 configurations exceed it" in res.stderr


def test_a_stream_is_judged_like_the_whole_result(invoke):
    rows = _csv(invoke, [*ALL, "--method", "all"])
    limit = min(v for _, v in _bounds(rows)) * 0.999
    for fmt in ("jsonl", "csv"):
        res = invoke([*ALL, "--method", "all", "--max-epsilon", repr(limit), "-f", fmt])
        assert res.exit_code == 3 and "(tightest certified row 2, method pld)" in res.stderr


@pytest.mark.parametrize(
    "row,sound",
    [
        ({"method": "rdp", "valid": True}, True),
        ({"method": "rdp"}, True),
        ({"method": "rdp", "valid": None}, True),
        ({"method": "rdp", "valid": False}, False),
        ({"method": "lower"}, False),
        ({"method": "abadi-asymptotic", "valid": True}, False),
        ({"method": "bassily-reference"}, False),
        ({"method": "dynamics", "bound": "lower"}, False),
        ({"method": "dynamics", "bound": "upper"}, True),
        ({}, True),
    ],
)
def test_sound_rows(row, sound):
    assert sound_row(row) is sound


@pytest.mark.parametrize(
    "row,column,ok",
    [
        ({"method": "rdp", "epsilon": 1.0}, "epsilon", True),
        ({"method": "rdp", "epsilon": None}, "epsilon", False),
        ({"method": "rdp", "epsilon": float("nan")}, "epsilon", False),
        ({"method": "balls-in-bins-mc", "epsilon": 1.0, "confidence": 0.95}, "epsilon", False),
        ({"method": "counts", "epsilon_lower": 0.4, "confidence": 0.95}, "epsilon_lower", True),
        ({"method": "lower", "bound": "lower", "epsilon_lower": 0.4}, "epsilon_lower", True),
        ({"method": "rdp", "valid": False, "epsilon_lower": 0.4}, "epsilon_lower", False),
        ({"method": "rdp", "valid": False, "epsilon": 1.0}, "epsilon", False),
        ({"method": "rdp", "run": True}, "run", False),
        ({"method": "balls-in-bins-mc", "epsilon": 1.0}, "epsilon", False),
    ],
)
def test_certified(row, column, ok):
    assert configs.certified(row, column) is ok


def _result():
    return Result(
        {
            "method": ["lower", "dynamics", "x-reference", "composition", "rdp"],
            "bound": ["lower", "upper", "upper", "upper", "upper"],
            "valid": [True, True, True, True, False],
            "epsilon": [0.1, 0.5, 0.2, 2.0, 0.3],
            "delta": 1e-6,
        }
    )


def test_only_certified_rows_are_judged_and_the_tightest_one_is_named():
    with pytest.raises(
        Exception, match=r"epsilon = 0.5 > 0.4 \(tightest certified row 2, method dynamics\)"
    ) as info:
        check_budget(_result(), Output(max_epsilon=0.4))
    assert info.value.exit_code == 3
    check_budget(
        _result(), Output(max_epsilon=0.5, max_delta=1e-6)
    )  # 2.0 is not the tightest; 0.1-0.3 not bounds


def test_a_judge_fed_chunk_by_chunk_numbers_rows_across_chunks():
    judge = BudgetJudge(Output(max_epsilon=1.0))
    judge.feed(Result({"method": "a", "x": [1, 2], "epsilon": [0.5, 0.5]}))
    judge.feed(Result({"method": "b", "x": [1, 2], "epsilon": [0.7, 1.5]}))
    with pytest.raises(
        Exception, match=r"epsilon = 0.5 > 0.4 at x=1 \(tightest certified row 1, method a; 2 of 2"
    ):
        judge2 = BudgetJudge(Output(max_epsilon=0.4))
        judge2.feed(Result({"method": "a", "x": [1, 2], "epsilon": [0.5, 0.5]}))
        judge2.feed(Result({"method": "b", "x": [1, 2], "epsilon": [0.7, 0.45]}))
        judge2.check()
    judge.check()  # x=1: 0.5, x=2: min(0.5, 1.5) = 0.5
    judge = BudgetJudge(Output(max_epsilon=1.0))
    judge.feed(Result({"method": "b", "x": [1, 2], "epsilon": [0.5, 2.0]}))
    with pytest.raises(
        Exception, match=r"epsilon = 2.0 > 1.0 at x=2 \(tightest certified row 2, method b; 1 of 2"
    ):
        judge.check()


def test_a_configuration_no_row_certifies_is_never_a_pass():
    judge = BudgetJudge(Output(max_epsilon=1.0))
    judge.feed(Result({"method": ["lower", "lower"], "epsilon": [3.0, None]}))
    with pytest.raises(Exception, match="reports no epsilon that is a sound upper bound") as info:
        judge.check()
    assert info.value.exit_code == 2
    judge = BudgetJudge(Output(max_epsilon=1.0))
    judge.feed(Result({"method": ["rdp", "x-asymptotic"], "x": [1, 2], "epsilon": [0.5, 0.1]}))
    with pytest.raises(Exception, match="no row certifies epsilon at x=2") as info:
        judge.check()
    assert info.value.exit_code == 2


def test_a_method_that_answers_another_question_is_a_configuration_of_its_own(invoke):
    args = ["iterate", "--sigma", "1", "--lipschitz", "1", "--lr", "0.1", "--steps", "100", "--delta", "1e-5"]
    rows = _csv(invoke, [*args, "--initial-distance", "0.5"])
    cni = float(next(r["epsilon"] for r in rows if r["method"] == "cni"))
    others = min(float(r["epsilon"]) for r in rows if r["method"] != "cni")
    assert cni < others  # cni (same data, starts apart) does not bound the run's ε
    res = invoke([*args, "--initial-distance", "0.5", "-q", "--max-epsilon", repr(cni)])
    assert res.exit_code == 3 and f"epsilon = {others!r} > {cni!r}" in res.stderr
    assert res.stdout.splitlines() == [f"dp\t{others!r}", f"cni\t{cni!r}"]
    assert f"> {cni!r} at dp (tightest certified row" in res.stderr


def test_a_curves_best_order_is_not_an_input(invoke):
    args = ["convert", "--curve", "docs/examples/curve.csv", "--delta", "1e-8:1e-5:x10", "--method", "all"]
    rows = _csv(invoke, args)
    res = invoke([*args, "-q"])
    assert res.exit_code == 0
    lines = res.stdout.splitlines()
    assert len(lines) == 4 and all(ln.startswith("delta=") for ln in lines)
    for ln in lines:
        label, value = ln.split("\t")
        d = label.split("=")[1]
        assert float(value) == min(float(r["epsilon"]) for r in rows if r["delta"] == d)


def test_a_solved_parameter_is_not_an_input(invoke):
    args = ["sgd-epsilon", "--target-epsilon", "3", "--sigma", "1.1", "--dataset-size", "60000"]
    args += ["--epochs", "30,60", "--delta", "1e-5", "--method", "all"]
    rows = _csv(invoke, args)
    res = invoke([*args, "-q"])
    assert res.exit_code == 0
    best = {}
    for r in rows:
        if r["valid"] == "true" and not r["method"].endswith("-asymptotic"):
            best[r["epochs"]] = max(best.get(r["epochs"], 0), int(r["batch_size"]))
    assert res.stdout.splitlines() == [f"epochs={e}\t{b}" for e, b in best.items()]  # the largest batch


def _value(i, k):
    return ((i * 7919 + 31 * k) % 97) / 10 + k / 100


def test_spilled_configurations_give_the_same_answer(monkeypatch):
    n = 300
    chunks = [
        Result({"method": m, "x": list(range(n)), "epsilon": [_value(i, k) for i in range(n)]})
        for k, m in enumerate(["a", "b", "c"])
    ]
    whole = to_string(Stream(["method", "x", "epsilon"], iter(chunks)).collect(), "csv", quiet=True)
    monkeypatch.setattr(configs, "SPILL", 10)
    tight = configs.Tightest(["method", "x", "epsilon"], "epsilon", ["epsilon"])
    for c in chunks:
        tight.feed(c)
    assert tight._db is not None and tight.count == n
    spilled = "".join(f"{tight.label(cells, sep)}\t{picks[0][1]}\n" for cells, sep, picks in tight.configs())
    tight.close()
    assert spilled == whole
    assert whole.splitlines() == [f"x={i}\t{min(_value(i, k) for k in range(3))!r}" for i in range(n)]
    judge = BudgetJudge(Output(max_epsilon=3.0))
    for c in chunks:
        judge.feed(c)
    with pytest.raises(
        Exception,
        match=r"epsilon = 3.[0-9]+ > 3.0 at x=\d+ \(tightest certified row \d+, method [abc]; \d+ of 300",
    ):
        judge.check()


def test_q_leaves_out_a_configuration_without_a_certified_value_and_says_so(capsys):
    from dpcalc.cli.common import emit

    r = Result({"method": ["rdp", "x-asymptotic"], "x": [1, 2], "epsilon": [0.5, 0.1]})
    emit(r, Output(fmt="csv", quiet=True))
    captured = capsys.readouterr()
    assert captured.out == "x=1\t0.5\n"
    assert captured.err.strip() == (
        "Warning: -q: 1 of 2 configurations have no certified epsilon (rows: x-asymptotic) and print no "
        "line; -f csv shows every row"
    )


_METHODS = ["rdp", "pld", "x-asymptotic", "y-reference", "lower", "z-mc"]
_ROW = st.tuples(
    st.sampled_from(_METHODS),
    st.integers(1, 3),  # the configuration's input x
    st.one_of(st.none(), st.floats(0, 10, allow_nan=False), st.just(math.inf), st.just(math.nan)),
    st.sampled_from([True, False, None]),
)


@settings(max_examples=60, deadline=None)
@given(rows=st.lists(_ROW, min_size=1, max_size=12), limit=st.floats(0, 10, allow_nan=False))
def test_q_and_the_judge_follow_the_rule_on_any_rows(rows, limit):
    """-q prints, per configuration, the smallest epsilon of its certified rows and nothing else; the
    judge fails (3) exactly when one of those exceeds the limit, and a configuration without one is
    never a pass."""
    r = Result(
        {
            "method": [m for m, *_ in rows],
            "x": [x for _, x, *_ in rows],
            "epsilon": [e for *_, e, _ in rows],
            "valid": [v for *_, v in rows],
        }
    )
    ok = lambda m, e, v: e is not None and not math.isnan(e) and v is not False and m in ("rdp", "pld")  # noqa: E731
    xs = list(dict.fromkeys(x for _, x, *_ in rows))
    best = {x: min((e for m, xx, e, v in rows if xx == x and ok(m, e, v)), default=None) for x in xs}
    seen = {x: any(e is not None and not math.isnan(e) for _, xx, e, _ in rows if xx == x) for x in xs}
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            text = to_string(r, "csv", quiet=True)
    except InputError:
        assert all(b is None for b in best.values()) and any(seen.values())
    else:
        if len(xs) == 1:
            x = xs[0]
            assert text == ("" if best[x] is None else repr(best[x])) + "\n"
        else:
            assert text.splitlines() == [f"x={x}\t{best[x]!r}" for x in xs if best[x] is not None]
        left_out = any(best[x] is None and seen[x] for x in xs)
        assert left_out == any("print no line" in str(w.message) for w in caught)
    try:
        check_budget(r, Output(max_epsilon=limit))
    except Exception as exc:
        code = exc.exit_code
    else:
        code = 0
    if any(b is not None and b > limit for b in best.values()):
        assert code == 3
    elif any(b is None for b in best.values()):
        assert code == 2
    else:
        assert code == 0


@pytest.mark.parametrize(
    "swept",
    [
        ["--sample-rate", "0.01,0.02", "--steps", "1000"],
        ["--batch-size", "256", "--dataset-size", "60000", "--epochs", "1,2"],
        ["--sample-rate", "0.01", "--steps", "500,1000"],
    ],
)
def test_every_swept_input_is_a_configuration_of_its_own(invoke, swept):
    # the columns a table rounds down (sample_rate, epochs) are inputs here: two configurations, each
    # judged on its own (the larger ε, not the smaller one, fails the budget)
    args = ["sgd-epsilon", "--sigma", "1", *swept, "--delta", "1e-5", "--method", "all"]
    rows = _csv(invoke, args)
    res = invoke([*args, "-q"])
    lines = res.stdout.splitlines()
    assert res.exit_code == 0 and len(lines) == 2
    values = [float(line.split("\t")[1]) for line in lines]
    assert values[0] < values[1] and {v for _, v in _bounds(rows)} >= set(values)
    assert invoke([*args, "--max-epsilon", repr(values[0])]).exit_code == 3


@pytest.mark.parametrize(
    "args",
    [
        # a budget no row can judge (langevin's Rényi rows carry no ε), an unknown column: exit 2 with the
        # one line, before any row, note or warning is written
        [
            *"langevin --sigma 0.1 --sensitivity 0.01 --lr 0.1 --strong-convexity 0.5 --smoothness 1".split(),
            *"--dataset-size 1000 --steps 100 --alpha 2 --max-epsilon 1".split(),
        ],
        [
            *"langevin --sigma 0.1 --sensitivity 0.01 --lr 0.1 --strong-convexity 0.5 --smoothness 1".split(),
            *"--dataset-size 1000 --steps 100 --delta 1e-5 --columns bogus".split(),
        ],
        "audit --tp 900 --fp 10 --fn 100 --tn 990 --delta 1e-5 --columns bogus".split(),
    ],
)
def test_a_refusal_is_the_only_output(invoke, args):
    res = invoke([*args, "-f", "csv"])
    assert res.exit_code == 2 and res.stdout == ""
    assert res.stderr.count("\n") == 1 and res.stderr.startswith("Error: ")
