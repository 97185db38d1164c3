"""convert --from dp is estimated and capped, not refused (its rows stream); the option checks of audit and
--seed that were internal errors.  (The work of a sweep is estimated, said and capped, not refused: test_heavy.py,
test_heavy_sweeps.py.)"""

import pytest

from dpcalc import execution
from dpcalc.commands.sgd.epsilon import sgd_epsilon
from dpcalc.commands.sgd.params import SgdEpsilonParams
from dpcalc.errors import InputError


def _refused(res, *parts):
    assert res.exit_code == 2 and res.stdout == ""
    lines = res.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: "), res.stderr
    for part in parts:
        assert part in lines[0], (part, lines[0])
    return lines[0]


def test_convert_from_dp_past_the_old_limit_is_estimated_not_refused(invoke, monkeypatch):
    def fail(*a, **k):
        raise AssertionError("work started")

    with monkeypatch.context() as m:
        m.setattr(execution, "map_ordered", fail)
        args = ["convert", "--from", "dp", "--alpha", "2:1e6:1", "--epsilon", "1", "--delta", "1e-5"]
        res = invoke([*args, "--max-seconds", "1", "--jobs", "1"])
        line = _refused(res, "--max-seconds 1: 999,999 rows of DP → RDP conversions on 1 process")
        assert "would take about" in line
    ok = invoke(
        ["convert", "--from", "dp", "--alpha", "2:200:1", "--epsilon", "1", "--delta", "1e-5", "-f", "csv"]
    )
    assert ok.exit_code == 0 and ok.stdout.count("\n") == 1 + 199


def test_seed_out_of_range_is_refused_at_the_option(invoke):
    args = ["sgd-epsilon", "--sigma", "0.8", "--sample-rate", "0.25", "--steps", "4", "--delta", "1e-3"]
    args += ["--sampling", "balls-in-bins", "--method", "mc", "--mc-samples", "20000"]
    _refused(invoke([*args, "--seed", "-1"]), "'--seed'")
    _refused(invoke([*args, "--seed", str(2**63)]), "'--seed'")
    p = SgdEpsilonParams(
        delta=[1e-3],
        sigma=[0.8],
        sample_rate=[0.25],
        steps=[4],
        sampling="balls-in-bins",
        accountant="mc",
        seed=-1,
    )
    with pytest.raises(InputError, match="--seed"):
        sgd_epsilon(p)
    _refused(
        invoke(["audit", "--scores", "-", "--delta", "1e-5", "--seed", "-1"], input="member,score\n"),
        "'--seed'",
    )


COUNTS = ["audit", "--tp", "900", "--fp", "10", "--fn", "100", "--tn", "990", "--delta", "1e-5"]


@pytest.mark.parametrize("c", ["0.9999999999999999", "1e-13"])
def test_audit_confidence_too_close_to_1_or_0_is_refused(invoke, c):
    _refused(invoke([*COUNTS, "--confidence", c]), "'--confidence'", "[1e-12, 0.999999999999]")


def test_audit_note_never_rounds_the_confidence_up(invoke):
    res = invoke([*COUNTS, "--confidence", "0.999999999999", "-f", "csv"])
    assert res.exit_code == 0 and "probability >= 0.999999999999 " in res.stderr


@pytest.mark.parametrize("count", ["1e300", str(2**53 + 2)])
def test_audit_input_counts_past_2_53_are_refused_naming_the_line(invoke, tmp_path, count):
    f = tmp_path / "a.csv"
    f.write_text(f"tp,fp,fn,tn\n1,1,1,1\n{count},1,1,1\n")
    _refused(invoke(["audit", "--input", str(f), "--delta", "1e-5"]), f"{f} line 3", "tp", "2^53")


def test_an_unknown_column_is_the_only_line_on_stderr(invoke):
    _refused(invoke([*COUNTS, "--columns", "bogus"]), "--columns")
