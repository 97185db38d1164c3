"""``--noise-std S --clip-norm C`` (issue 42): the noise multiplier as training code sets it, σ = S/C.

The same run given as the ratio and as S and C prints the same rows in every format (the caption of a table,
or audit's note, names the quotient in addition); S/C means the noise on the sum of the clipped gradients, checked
against the Gaussian mechanism's exact profile; and every misuse is one usage error naming the option (exit 2).
"""

from __future__ import annotations

import math
import re
from fractions import Fraction

import pytest
from scipy.stats import norm

SGD = ["sgd-epsilon", "--sample-rate", "0.01", "--steps", "1000", "--delta", "1e-5"]
MATRIX = [
    "matrix",
    "--strategy",
    "identity",
    "--strategy",
    "sqrt:bands=4",
    "--steps",
    "100",
    "--delta",
    "1e-6",
]
AUDIT = ["audit", "--tp", "412", "--fn", "588", "--fp", "9", "--tn", "991", "--delta", "1e-5"]
AUDIT_SGD = ["--sample-rate", "0.01", "--steps", "1000"]
AUDIT_MATRIX = [
    "--strategy",
    "sqrt:bands=4",
    "--participation",
    "cyclic-poisson:b=4,q=0.25",
    "--steps",
    "100",
]

#: S and C whose quotient is a float exactly (halving is exact), so the ratio run gives the same σ.
RATIO, STD = ["--noise-multiplier", "1.2"], ["--noise-std", "2.4", "--clip-norm", "2"]
CHAIN = "; noise_multiplier = noise std / clip norm = 2.4 / 2 (S on the sum of clipped gradients)"
FORMATS = [["-f", "csv"], ["-f", "tsv"], ["-f", "json"], ["-f", "jsonl"], ["-q"]]


def _ok(result):
    assert result.exit_code == 0, result.stderr
    return result


def _table(text: str) -> tuple[str, str]:
    """(the table, the words below it joined on one line: the caption however it was wrapped)."""
    lines = text.rstrip("\n").split("\n")
    end = max(i for i, line in enumerate(lines) if line.startswith("└"))
    return "\n".join(lines[: end + 1]), " ".join(lines[end + 1 :])


CSV = [["-f", "csv"]]


@pytest.mark.parametrize(
    "args, formats",
    [
        (SGD, FORMATS),
        ([*SGD[:-2], "--fpr", "1e-3,1e-2", "--method", "pld"], CSV),  # the trade-off rows
        ([*SGD[:-2], "--advantage"], CSV),  # the risk rows
        ([*SGD[:-2], "--rdp-curve", "--alphas", "2,8"], CSV),
        ([*SGD, "--neighbors", "replace-one", "--method", "pld"], CSV),
        (MATRIX, FORMATS),
        ([*MATRIX[:-2], "--fpr", "1e-3"], CSV),
    ],
    ids=["sgd", "sgd-fpr", "sgd-advantage", "sgd-rdp-curve", "sgd-replace-one", "matrix", "matrix-fpr"],
)
def test_the_ratio_and_s_over_c_print_the_same_rows(invoke, args, formats):
    for fmt in formats:
        ratio, std = _ok(invoke([*args, *RATIO, *fmt])), _ok(invoke([*args, *STD, *fmt]))
        assert std.stdout == ratio.stdout and ratio.stdout, fmt
        assert std.stderr == ratio.stderr
    # a table: the same table; its caption names the quotient, and only that is added
    ratio, std = _ok(invoke([*args, *RATIO, "-f", "table"])), _ok(invoke([*args, *STD, "-f", "table"]))
    (table_r, words_r), (table_s, words_s) = _table(ratio.stdout), _table(std.stdout)
    assert table_s == table_r
    assert CHAIN not in words_r and words_s.count(CHAIN) == 1
    assert words_s.replace(CHAIN, "") == words_r


def test_a_sweep_of_the_noise_std_is_a_sweep_of_the_noise_multiplier(invoke):
    ratio = _ok(invoke([*SGD, "--noise-multiplier", "1.2,1.8", "-f", "csv"]))
    std = _ok(invoke([*SGD, "--noise-std", "2.4,3.6", "--clip-norm", "2", "-f", "csv"]))
    assert std.stdout == ratio.stdout and len(std.stdout.splitlines()) == 3
    words = _table(_ok(invoke([*SGD, "--noise-std", "2.4,3.6", "--clip-norm", "2", "-f", "table"])).stdout)[1]
    assert "noise std / clip norm = S / 2 for S = 2.4, 3.6 (S on the sum of clipped gradients)" in words
    # a long sweep is abbreviated, with its count
    words = _table(_ok(invoke([*SGD, "--noise-std", "1:10:1", "--clip-norm", "2", "-f", "table"])).stdout)[1]
    assert "= S / 2 for S = 1, 2, …, 10 (10 values)" in words


def test_the_noise_of_a_target_search_for_the_steps(invoke):
    """--target-epsilon with the noise given as S and C solves for the steps as with the ratio."""
    tail = ["--sample-rate", "0.01", "--target-epsilon", "2", "--delta", "1e-5", "-f", "csv"]
    ratio = _ok(invoke(["sgd-epsilon", *RATIO, *tail]))
    assert _ok(invoke(["sgd-epsilon", *STD, *tail])).stdout == ratio.stdout
    tail = ["--strategy", "identity", "--target-epsilon", "3", "--delta", "1e-6", "-f", "csv"]
    assert _ok(invoke(["matrix", *STD, *tail])).stdout == _ok(invoke(["matrix", *RATIO, *tail])).stdout


@pytest.mark.parametrize("run", [AUDIT_SGD, AUDIT_MATRIX], ids=["dp-sgd", "matrix"])
def test_audit_claims_the_same_epsilon_and_names_the_quotient(invoke, run):
    for fmt in [*FORMATS[-1:], *FORMATS[:-1]]:  # -q first: the notes below are those of the last, json lines
        ratio = invoke([*AUDIT, *run, *RATIO, *fmt])
        std = invoke([*AUDIT, *run, *STD, *fmt])
        assert std.exit_code == ratio.exit_code  # 3 for the DP-SGD claim: the attack proves more
        assert std.stdout == ratio.stdout and ("epsilon_claimed" in std.stdout or fmt == ["-q"])
    claim_r = [n for n in ratio.stderr.splitlines() if n.startswith("Note: epsilon_claimed")]
    claim_s = [n for n in std.stderr.splitlines() if n.startswith("Note: epsilon_claimed")]
    assert len(claim_s) == 1 and claim_s[0] == claim_r[0] + CHAIN


@pytest.mark.parametrize("neighbors, sensitivity", [("add-remove", 1), ("replace-one", 2)])
def test_s_over_c_is_the_noise_on_the_sum_of_clipped_gradients(invoke, neighbors, sensitivity):
    """At q = 1, T steps of noise std S on a sum whose sensitivity is C (add/remove) or 2C (replace-one) are the
    Gaussian mechanism with μ = √T·sensitivity/S, whose exact δ(ε) (Balle & Wang 2018, Thm 8) lies in the
    certified pld bracket, the same whatever C the same S/C comes from."""
    s, c, steps, eps = 6.0, 2.0, 4, 1.0
    mu = math.sqrt(steps) * sensitivity * c / s
    exact = norm.cdf(-eps / mu + mu / 2) - math.exp(eps) * norm.cdf(-eps / mu - mu / 2)
    out = []
    for std, clip in ((s, c), (s / 4, c / 4)):
        res = _ok(
            invoke(
                [
                    "sgd-epsilon",
                    *("--noise-std", repr(std), "--clip-norm", repr(clip)),
                    *("--sample-rate", "1", "--steps", str(steps), "--epsilon", repr(eps)),
                    *(
                        "--method",
                        "pld",
                        "--neighbors",
                        neighbors,
                        "-f",
                        "csv",
                        "--columns",
                        "delta_lower,delta",
                    ),
                ]
            )
        )
        lo, hi = (float(x) for x in res.stdout.splitlines()[1].split(","))
        assert lo <= exact <= hi and hi - lo < 0.02 * exact
        out.append(res.stdout)
    assert out[0] == out[1]


def test_a_quotient_that_is_not_a_float_is_rounded_down(invoke):
    """0.9 / 0.1 (as floats) is just below 9, and the division rounds to 9.0: σ is the float below (less noise)."""
    res = _ok(
        invoke(
            [*SGD, "--noise-std", "0.9", "--clip-norm", "0.1", "-f", "csv", "--columns", "noise_multiplier"]
        )
    )
    sigma = float(res.stdout.splitlines()[1])
    exact = Fraction(0.9) / Fraction(0.1)
    assert 0.9 / 0.1 == 9.0 and Fraction(9.0) > exact  # the plain division would round up
    assert Fraction(sigma) <= exact < Fraction(math.nextafter(sigma, math.inf))


def _refused(result, *names):
    assert result.exit_code == 2, result.stdout + result.stderr
    assert result.stdout == ""
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error:"), result.stderr
    for name in names:
        assert name in lines[0], (name, lines[0])
    return lines[0]


COMMANDS = {
    "sgd-epsilon": SGD,
    "matrix": MATRIX,
    "audit": [*AUDIT, *AUDIT_SGD],
}


@pytest.mark.parametrize("command", COMMANDS)
@pytest.mark.parametrize(
    "given, named",
    [
        (["--noise-std", "0", "--clip-norm", "2"], ["--noise-std", "> 0"]),
        (["--noise-std", "-1", "--clip-norm", "2"], ["--noise-std", "> 0"]),
        (["--noise-std", "1", "--clip-norm", "0"], ["--clip-norm", "> 0"]),
        (["--noise-std", "1", "--clip-norm", "-2"], ["--clip-norm", "> 0"]),
        (["--noise-std", "1"], ["--noise-std needs --clip-norm"]),
        (["--clip-norm", "1"], ["--clip-norm needs --noise-std"]),
        (
            ["--noise-std", "1", "--clip-norm", "1", "--noise-multiplier", "1"],
            ["--noise-multiplier", "not both"],
        ),
        (["--clip-norm", "1", "--sigma", "1"], ["--noise-multiplier", "not both", "--clip-norm"]),
        (["--noise-std", "1", "--clip-norm", "1,2"], ["--clip-norm", "single value"]),
        (["--noise-std", "1", "--clip-norm", "1:3:1"], ["--clip-norm", "single value"]),
        (["--noise-std", "1e300", "--clip-norm", "1e-300"], ["--noise-std", "largest float"]),
        (["--noise-std", "1e-300", "--clip-norm", "1e300"], ["--noise-std", "underflows to 0"]),
    ],
)
def test_misuse_is_one_usage_error_naming_the_option(invoke, command, given, named):
    _refused(invoke([*COMMANDS[command], *given]), *named)


def test_audit_takes_one_noise_std(invoke):
    _refused(
        invoke([*AUDIT, *AUDIT_SGD, "--noise-std", "1,2", "--clip-norm", "1"]), "--noise-std", "single value"
    )


@pytest.mark.parametrize(
    "args, named",
    [
        (
            ["sgd-epsilon", "--schedule", "docs/examples/schedule.csv", "--delta", "1e-5"],
            ["--noise-std/--clip-norm", "--schedule", "noise_multiplier per phase"],
        ),
        ([*AUDIT, "--schedule", "docs/examples/schedule.csv"], ["--noise-std/--clip-norm", "--schedule"]),
        ([*AUDIT, "--claimed-epsilon", "3"], ["--noise-std/--clip-norm", "--claimed-epsilon", "one claim"]),
        ([*AUDIT, "--claimed-mechanism", "gaussian:sigma=1"], ["--claimed-mechanism"]),
    ],
)
def test_a_run_given_another_way_refuses_the_pair(invoke, args, named):
    _refused(invoke([*args, "--noise-std", "1", "--clip-norm", "1"]), *named)


@pytest.mark.parametrize(
    "args, target",
    [
        ([*SGD, "--target-epsilon", "3"], "--target-epsilon"),
        (
            ["sgd-epsilon", "--sample-rate", "0.01", "--steps", "100", "--target-advantage", "0.1"],
            "--target-advantage",
        ),
        ([*MATRIX, "--target-epsilon", "3"], "--target-epsilon"),
        ([*MATRIX[:-2], "--target-advantage", "0.1"], "--target-advantage"),
    ],
)
def test_a_target_that_solves_for_the_noise_answers_a_noise_multiplier(invoke, args, target):
    for given in (["--noise-std", "1", "--clip-norm", "1"], ["--clip-norm", "2"]):
        line = _refused(invoke([*args, *given]), target, "noise multiplier", "leave out")
        assert given[-2] in line  # the option to leave out
    # the ratio form is refused too (nothing is left to solve for), as before
    assert invoke([*args, "--noise-multiplier", "1"]).exit_code == 2


@pytest.mark.parametrize("command", COMMANDS)
def test_help_says_what_s_is(invoke, command):
    text = re.sub(
        r"-\s+", "-", " ".join(_ok(invoke([command, "--help"])).stdout.split())
    )  # a word cut at "-"
    assert "--noise-std" in text and "--clip-norm" in text
    assert (
        "sums of the clipped per-example gradients" in text
        or "sum of the clipped per-example gradients" in text
    )
