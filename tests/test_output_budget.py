"""--max-epsilon / --max-delta judge only the rows that are sound upper bounds."""

import pytest

from dpcalc.cli.common import BudgetJudge, Output, check_budget, sound_row
from dpcalc.result import Result

ALL = ["sgd-epsilon", "--sigma", "4", "--sample-rate", "0.04", "--steps", "1000", "--delta", "1e-5"]


def test_an_asymptotic_row_past_the_budget_does_not_fail_it(invoke):
    res = invoke([*ALL, "--accountant", "all", "--max-epsilon", "2"])
    assert res.exit_code == 0, res.stderr  # rdp 1.354 and pld 1.238; abadi-asymptotic (2.29) is not a bound
    assert "abadi-asymptotic" in res.stdout


@pytest.mark.parametrize("fmt", ["csv", "json", "table"])
def test_the_message_names_the_row_and_its_method(invoke, fmt):
    res = invoke([*ALL, "--accountant", "all", "--max-epsilon", "1.3", "-f", fmt])
    assert res.exit_code == 3
    assert res.stderr.strip().splitlines() == [
        "Error: budget exceeded: epsilon = 1.3535905299481212 > 1.3 (row 1, method rdp)"
    ]


def test_a_budget_with_no_sound_row_is_never_a_pass(invoke):
    res = invoke([*ALL, "--accountant", "abadi", "--max-epsilon", "100"])
    assert res.exit_code == 2
    assert "reports no epsilon that is a sound upper bound (rows: abadi-asymptotic)" in res.stderr


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


def _result():
    return Result(
        {
            "method": ["lower", "dynamics", "x-reference", "composition", "rdp"],
            "bound": ["lower", "upper", "upper", "upper", "upper"],
            "valid": [True, True, True, True, False],
            "epsilon": [5.0, 0.5, 9.0, 2.0, 7.0],
            "delta": [1e-9, 1e-6, 0.5, 1e-6, 0.9],
        }
    )


def test_only_sound_rows_are_judged_and_the_first_one_past_is_named():
    with pytest.raises(Exception, match=r"epsilon = 2.0 > 1.0 \(row 4, method composition\)") as info:
        check_budget(_result(), Output(max_epsilon=1.0))
    assert info.value.exit_code == 3
    check_budget(_result(), Output(max_epsilon=2.0, max_delta=1e-6))  # passes: 5, 9 and 7 are not judged


def test_a_judge_fed_chunk_by_chunk_numbers_rows_across_chunks():
    judge = BudgetJudge(Output(max_delta=1e-7))
    judge.feed(_result())
    judge.feed(_result())
    with pytest.raises(Exception, match=r"delta = 1e-06 > 1e-07 \(row 2, method dynamics\)"):
        judge.check()
    judge = BudgetJudge(Output(max_epsilon=1.0))
    judge.feed(Result({"method": ["lower", "lower"], "epsilon": [3.0, None]}))
    with pytest.raises(Exception, match="reports no epsilon that is a sound upper bound") as info:
        judge.check()
    assert info.value.exit_code == 2


def test_a_stream_is_judged_on_its_sound_rows(invoke):
    res = invoke([*ALL, "--accountant", "all", "--max-epsilon", "1.3", "-f", "jsonl"])
    assert res.exit_code == 3 and len(res.stdout.splitlines()) == 3
    assert "(row 1, method rdp)" in res.stderr
    res = invoke([*ALL, "--accountant", "all", "--max-epsilon", "1.36", "-q"])
    assert res.exit_code == 0 and res.stdout.splitlines()[0].startswith("rdp\t")
