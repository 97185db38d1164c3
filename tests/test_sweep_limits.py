"""Every sweep is bounded up front by its work (issue 27): sgd-epsilon, convert and convert --from dp
refuse, before computing anything, more than their measured rate allows in about
:data:`dpcalc.commands.sweep.WORK_SECONDS`, with one line naming the swept options, the count and the
limit; the option checks of audit and --seed that were internal errors."""

import pytest

from dpcalc.commands import sweep
from dpcalc.commands.convert import FROM_DP_MAX_ROWS, POINT_SECONDS_EACH
from dpcalc.commands.sgd_epsilon import SgdEpsilonParams, sgd_epsilon
from dpcalc.errors import InputError


def _refused(res, *parts):
    assert res.exit_code == 2 and res.stdout == ""
    lines = res.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: "), res.stderr
    for part in parts:
        assert part in lines[0], (part, lines[0])
    return lines[0]


def test_work_limit_is_the_budget_over_the_cost_and_admits_its_own_limit():
    limit = sweep.work_limit(POINT_SECONDS_EACH["balle"])
    assert limit == round(sweep.WORK_SECONDS / POINT_SECONDS_EACH["balle"])
    assert sweep.check_work({"--alpha": limit}, POINT_SECONDS_EACH["balle"], "x") == limit
    with pytest.raises(InputError, match=f"more than {limit:,} for x"):
        sweep.check_work({"--alpha": limit + 1}, POINT_SECONDS_EACH["balle"], "x")
    assert sweep.work_limit(1e9) == 1  # a single row is always allowed


def test_convert_optimal_sweep_is_refused_naming_options_count_and_limit(invoke):
    res = invoke(["convert", "--alpha", "2:2000:1", "--rdp", "0.001:1:0.001", "--delta", "1e-5", "-f", "csv"])
    limit = sweep.work_limit(POINT_SECONDS_EACH["optimal"])
    _refused(
        res,
        "--alpha (1,999)",
        "--rdp (1,000)",
        "1,999,000 points",
        f"more than {limit:,}",
        "--method optimal",
    )


def test_convert_closed_forms_admit_more_points_than_optimal(invoke):
    assert sweep.work_limit(POINT_SECONDS_EACH["balle"]) > sweep.work_limit(POINT_SECONDS_EACH["optimal"])
    res = invoke(
        ["convert", "--alpha", "2:2000:1", "--rdp", "0.001:1:0.001", "--delta", "1e-5", "--method", "balle"]
    )
    _refused(res, "--method balle", f"more than {sweep.work_limit(POINT_SECONDS_EACH['balle']):,}")
    # all four methods: the sum of their costs per point
    res = invoke(
        ["convert", "--alpha", "2:1000:1", "--rdp", "0.01:1:0.01", "--delta", "1e-5", "--method", "all"]
    )
    _refused(res, "--method all", f"more than {sweep.work_limit(sum(POINT_SECONDS_EACH.values())):,}")


def test_convert_from_dp_is_bounded_by_memory(invoke):
    res = invoke(["convert", "--from", "dp", "--alpha", "2:1e6:1", "--epsilon", "1", "--delta", "1e-5"])
    _refused(res, "--alpha (999,999)", f"more than {FROM_DP_MAX_ROWS['optimal']:,}", "--from dp")
    ok = invoke(
        ["convert", "--from", "dp", "--alpha", "2:200:1", "--epsilon", "1", "--delta", "1e-5", "-f", "csv"]
    )
    assert ok.exit_code == 0 and ok.stdout.count("\n") == 1 + 199


def test_sgd_epsilon_steps_sweep_is_refused(invoke):
    args = [
        "sgd-epsilon",
        "--sigma",
        "1",
        "--sample-rate",
        "0.01",
        "--steps",
        "1:1000000:1",
        "--delta",
        "1e-5",
    ]
    line = _refused(
        invoke([*args, "-f", "csv"]), "--steps (1,000,000)", "1,000,000 configurations", "--method rdp"
    )
    assert (
        "more than 33,332" in line
    )  # one Rényi curve: the rows share it (5 s / (2.5 ms + 0.15 ms·1e6 rows))


def test_sgd_epsilon_grid_of_the_benchmark_is_admitted_and_its_curves_are_counted(invoke):
    # benchmarks/bench_sgd.py's 10,000 configurations (1,000 curves × 10 step counts) are admitted; as
    # many distinct curves are refused
    from types import SimpleNamespace

    from dpcalc.commands.sgd_epsilon import check_work

    p = SimpleNamespace(tuning=None, sampling="poisson", accountant="rdp", steps=None, mc_samples=None)
    check_work(p, ["rdp"], None, {"--sample-rate": 20, "--noise-multiplier": 50, "--steps": 10, "--delta": 1})
    with pytest.raises(InputError, match="10,000 configurations, more than"):
        check_work(
            p, ["rdp"], None, {"--sample-rate": 200, "--noise-multiplier": 50, "--steps": 1, "--delta": 1}
        )
    wide = ["--sample-rate", "0.001:0.2:x1.0032", "--noise-multiplier", "0.5:2.95:0.05", "--delta", "1e-5"]
    _refused(invoke(["sgd-epsilon", *wide, "--steps", "1000"]), "configurations", "--method rdp")


def test_sgd_epsilon_limit_follows_the_sampling_and_the_search(invoke):
    base = ["--sigma", "0.5:5:x1.025", "--sample-rate", "0.01", "--steps", "1000", "--delta", "1e-5"]
    _refused(
        invoke(["sgd-epsilon", *base, "--sampling", "balls-in-bins"]),
        "--sampling balls-in-bins",
        "94 configurations",
    )
    res = invoke(["sgd-epsilon", *base, "-f", "csv"])  # the same sweep under Poisson sampling is admitted
    assert res.exit_code == 0 and res.stdout.count("\n") == 1 + 94
    search = ["--target-epsilon", "0.5:5:x1.01", "--steps", "1000", "--delta", "1e-5"]
    _refused(
        invoke(["sgd-epsilon", *search, "--sigma", "1"]), "--target-epsilon (232)", "with --target-epsilon"
    )


def test_sgd_epsilon_library_is_bounded_too():
    p = SgdEpsilonParams(delta=[1e-5], sigma=[1.0], sample_rate=[0.01], steps=list(range(1, 100_001)))
    with pytest.raises(InputError, match=r"--steps \(100,000\).*more than 33,327 "):
        sgd_epsilon(p)


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
