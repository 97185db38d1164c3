"""Issue 39, one grammar across the commands: sgd-epsilon's accountant is --method (--accountant a hidden alias),
``sgd-epsilon --epsilon E`` answers δ at ε, iterate and langevin take --alpha beside the (ε, δ) question by one
rule, and --eps-error reaches the engine as a number on every question.

References here are independent of the engine: the Poisson-subsampled Gaussian's δ(ε) of one step by mpmath
quadrature of the hockey-stick divergence, the closed forms of Abadi et al. and Bassily et al. inverted by hand,
and compose's PLD of the same run."""

from __future__ import annotations

import csv
import io
import math

import mpmath as mp
import pytest

OK, USAGE, BUDGET = 0, 2, 3


def _rows(res):
    assert res.exit_code == 0, res.stderr
    return list(csv.DictReader(io.StringIO(res.stdout)))


def _f(cell):
    return None if cell in ("", None) else float(cell)


def _one_line_error(res, *names):
    assert res.exit_code == USAGE, (res.exit_code, res.stdout, res.stderr)
    assert res.stdout == ""
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1, res.stderr
    for name in names:
        assert name in lines[0], (name, lines[0])
    return lines[0]


# ------------------------------------------------------------------------------------- the reference: quadrature


def _sgm_delta(eps, q, sigma):
    """δ(ε) of one step of the Poisson-subsampled Gaussian, add/remove (the worse direction), by quadrature of
    ∫ max(0, p − e^ε·p') over the line, split where the likelihood ratio (monotone in x) crosses e^ε."""
    mp.mp.dps = 30
    eps, q, s = mp.mpf(eps), mp.mpf(q), mp.mpf(sigma)

    def n(x, m):
        return mp.npdf(x, m, s)

    def mix(x):
        return (1 - q) * n(x, 0) + q * n(x, 1)

    # remove: P = mixture, Q = N(0, σ²); p/q = 1 − q + q·e^((2x−1)/(2σ²)) increases: the region is x > x0
    x0 = s**2 * mp.log((mp.exp(eps) - 1 + q) / q) + mp.mpf(1) / 2
    remove = mp.quad(lambda x: mix(x) - mp.exp(eps) * n(x, 0), [x0, x0 + 40 * s, mp.inf])
    # add: P = N(0, σ²), Q = mixture; p/q decreases in x: the region is x < x1, where e^ε·mix(x) = n(x, 0)
    x1 = mp.findroot(lambda x: mp.exp(eps) * mix(x) - n(x, 0), (-40 * s - 10, x0), solver="bisect")
    add = mp.quad(lambda x: n(x, 0) - mp.exp(eps) * mix(x), [-mp.inf, x1 - 40 * s, x1])
    return max(add, remove, mp.mpf(0))


Q, SIGMA = 0.2, 1.1
RUN = ["sgd-epsilon", "--sigma", str(SIGMA), "--sample-rate", str(Q), "--steps", "1"]


def test_pld_brackets_the_exact_delta_of_one_step_and_rdp_is_above_it(invoke):
    rows = _rows(invoke([*RUN, "--epsilon", "0.25,1,2", "--method", "all", "-f", "csv"]))
    by = {(r["method"], float(r["epsilon"])): r for r in rows}
    for eps in (0.25, 1.0, 2.0):
        exact = _sgm_delta(eps, Q, SIGMA)
        pld = by[("pld", eps)]
        low, est, up = _f(pld["delta_lower"]), _f(pld["delta_estimate"]), _f(pld["delta"])
        assert low <= exact <= up, (eps, float(exact), pld)
        assert low <= est <= up
        assert up <= exact * 1.05, (eps, float(exact), pld)  # tight
        assert _f(by[("rdp", eps)]["delta"]) >= exact, (eps, by[("rdp", eps)])
        assert pld["epsilon_lower"] == pld["epsilon_estimate"] == ""  # ε is the input here


def test_the_round_trip_eps_of_delta_of_eps_returns_eps_within_the_bracket(invoke):
    run = ["sgd-epsilon", "--sigma", "1.1", "--sample-rate", "0.01", "--steps", "1000"]
    e = 1.5
    (row,) = _rows(invoke([*run, "--epsilon", str(e), "--method", "pld", "-f", "csv"]))
    low, up = _f(row["delta_lower"]), _f(row["delta"])
    # δ_up >= δ(E): ε(δ_up) <= E, so its lower end is below E; δ_low <= δ(E): ε(δ_low) >= E, its upper end above E
    (at_up,) = _rows(invoke([*run, "--delta", repr(up), "--method", "pld", "-f", "csv"]))
    (at_low,) = _rows(invoke([*run, "--delta", repr(low), "--method", "pld", "-f", "csv"]))
    assert _f(at_up["epsilon_lower"]) <= e <= _f(at_low["epsilon"]), (at_up, at_low)
    assert abs(_f(at_up["epsilon"]) - e) <= 0.02 * e
    # rdp: both directions minimise the same per-order conversion: ε(δ(E)) is E again (to rounding)
    (rdp,) = _rows(invoke([*run, "--epsilon", str(e), "-f", "csv"]))
    (back,) = _rows(invoke([*run, "--delta", rdp["delta"], "-f", "csv"]))
    assert abs(_f(back["epsilon"]) - e) <= 1e-3 * e, (rdp, back)


@pytest.mark.parametrize(
    "args,method",
    [
        (["--sigma", "4", "--sample-rate", "0.004", "--steps", "2000"], "abadi"),
        (
            [
                "--sigma", "40", "--batch-size", "50", "--dataset-size", "50000", "--steps", "1000",
                "--sampling", "fixed-size",
            ],
            "bassily",
        ),
    ],
)  # fmt: skip
def test_closed_forms_solved_for_delta_are_their_own_pairs(invoke, args, method):
    """abadi and bassily: δ at ε is the closed form solved for δ, so ε at that δ is ε again; valid as the ε row."""
    e = 0.8
    (row,) = _rows(invoke(["sgd-epsilon", *args, "--epsilon", str(e), "--method", method, "-f", "csv"]))
    delta = _f(row["delta"])
    assert 0 < delta < 1
    (back,) = _rows(invoke(["sgd-epsilon", *args, "--delta", repr(delta), "--method", method, "-f", "csv"]))
    assert e * (1 - 1e-9) <= _f(back["epsilon"]) <= e * (1 + 1e-6), (row, back)  # δ rounded up: ε at it <= E
    assert row["valid"] == back["valid"]


def test_pld_equals_compose_of_the_same_run(invoke):
    eps = "0.5,1,3"
    mine = _rows(
        invoke(
            ["sgd-epsilon", "--sigma", "0.9", "--sample-rate", "0.02", "--steps", "300", "--epsilon", eps]
            + ["--method", "pld", "-f", "csv"]
        )
    )
    theirs = _rows(
        invoke(
            ["compose", "subsampled-gaussian:q=0.02,sigma=0.9,count=300", "--epsilon", eps, "--method", "pld"]
        )
    )
    assert len(mine) == len(theirs) == 3
    for a, b in zip(mine, theirs):
        for col in ("epsilon", "delta", "delta_lower", "delta_estimate"):
            assert a[col] == b[col], (col, a, b)


def test_sweeps_quiet_and_the_delta_budget(invoke):
    run = ["sgd-epsilon", "--sigma", "1.1", "--sample-rate", "0.01", "--steps", "1000"]
    rows = _rows(invoke([*run, "--epsilon", "1:8:1", "--method", "pld", "-f", "csv"]))
    assert [float(r["epsilon"]) for r in rows] == [float(x) for x in range(1, 9)]
    deltas = [_f(r["delta"]) for r in rows]
    assert deltas == sorted(deltas, reverse=True) and deltas[-1] < 1e-20
    one = invoke([*run, "--epsilon", "2", "--method", "pld", "-q"])
    assert one.exit_code == 0 and float(one.stdout) == pytest.approx(7.9e-8, rel=0.05)
    many = invoke(
        [*run, "--epsilon", "1,2", "--method", "all", "-q"]
    )  # one line per ε: the tightest certified δ
    lines = many.stdout.strip().splitlines()
    assert len(lines) == 2 and lines[0].startswith("epsilon=1") and lines[1].startswith("epsilon=2")
    over = invoke([*run, "--epsilon", "1,2", "--method", "all", "--max-delta", "1e-5", "-f", "csv"])
    assert over.exit_code == BUDGET and "epsilon=1" in over.stderr and over.stdout
    assert invoke([*run, "--epsilon", "2", "--max-delta", "1e-5", "-q"]).exit_code == OK


@pytest.mark.parametrize(
    "extra,names",
    [
        (["--delta", "1e-5"], ["--delta", "--epsilon"]),
        (["--target-epsilon", "2"], ["--epsilon", "--target-epsilon"]),
        (["--rdp-curve"], ["--epsilon", "--rdp-curve"]),
        (["--fpr", "0.01"], ["--fpr", "--epsilon"]),
        (["--prior", "0.5"], ["--epsilon"]),
        (["--tuning-runs", "geometric:mean=5"], ["--epsilon", "--tuning-runs"]),
    ],
)
def test_what_cannot_go_with_epsilon_is_one_line(invoke, extra, names):
    run = ["sgd-epsilon", "--sigma", "1.1", "--sample-rate", "0.01"]
    run += ["--steps", "1000"] if "--target-epsilon" not in extra else []
    _one_line_error(invoke([*run, "--epsilon", "1", *extra]), *names)


def test_every_accountant_answers_delta_or_says_why(invoke):
    base = [
        "--sigma",
        "1.1",
        "--batch-size",
        "256",
        "--dataset-size",
        "60000",
        "--epochs",
        "1",
        "--epsilon",
        "1",
    ]
    # balls-in-bins: rdp and pld upper bounds (pld: no bracket, its models dominate), mc a bound with a confidence
    rows = _rows(
        invoke(["sgd-epsilon", *base, "--sampling", "balls-in-bins", "--method", "all", "-f", "csv"])
    )
    assert [r["method"] for r in rows] == ["rdp", "pld"]
    assert rows[1]["delta_lower"] == rows[1]["delta_estimate"] == "" and "no lower end" in rows[1]["note"]
    assert 0 < _f(rows[1]["delta"]) <= _f(rows[0]["delta"])
    mc = invoke(
        ["sgd-epsilon", *base, "--sampling", "balls-in-bins", "--method", "mc", "--mc-samples", "20000"]
        + ["-f", "csv"]
    )
    (row,) = _rows(mc)
    assert row["confidence"] == "0.95" and _f(row["delta_estimate"]) <= _f(row["delta"])
    quiet = [
        "sgd-epsilon",
        *base,
        "--sampling",
        "balls-in-bins",
        "--method",
        "mc",
        "--mc-samples",
        "20000",
        "-q",
    ]
    assert invoke(quiet).stdout == ""
    # shuffle: the exact profile of the Gaussians of its upper bound (one epoch: one Gaussian with r = 2/σ)
    (row,) = _rows(invoke(["sgd-epsilon", *base, "--sampling", "shuffle", "-f", "csv"]))
    mp.mp.dps = 30
    r, e = mp.mpf(2) / mp.mpf("1.1"), mp.mpf(1)
    exact = mp.ncdf(-e / r + r / 2) - mp.exp(e) * mp.ncdf(-e / r - r / 2)
    assert exact <= _f(row["delta"]) <= exact * (1 + 1e-9), (float(exact), row)
    assert row["epsilon_lower"] == row["delta_lower"] == ""


def test_a_person_with_k_examples(invoke):
    run = ["sgd-epsilon", "--sigma", "1", "--sample-rate", "0.01", "--steps", "500", "--epsilon", "2"]
    rows = _rows(invoke([*run, "--group-size", "1,3", "--method", "all", "-f", "csv"]))
    by = {(r["group_size"], r["method"]): r for r in rows}
    example = _f(by[("1", "rdp")]["delta"])
    for method in ("rdp", "pld", "rdp-group", "dp-group"):
        assert _f(by[("3", method)]["delta"]) >= _f(by[("1", "pld")]["delta"]), method
    # dp-group: Vadhan's Lemma 2.2 at ε/K: K·e^((K−1)ε/K)·δ'(ε/K), δ' the example-level rdp δ at 2/3
    (at_third,) = _rows(
        invoke(
            [
                "sgd-epsilon",
                "--sigma",
                "1",
                "--sample-rate",
                "0.01",
                "--steps",
                "500",
                "--epsilon",
                repr(2 / 3),
            ]
            + ["-f", "csv"]
        )
    )
    want = 3 * math.exp(2 * (2 / 3)) * _f(at_third["delta"])
    assert _f(by[("3", "dp-group")]["delta"]) == pytest.approx(want, rel=1e-12)
    assert _f(by[("3", "pld")]["delta_lower"]) <= _f(by[("3", "pld")]["delta"])
    assert example > 0


# ------------------------------------------------------------------------------------------- --method everywhere


def test_accountant_is_a_hidden_alias_of_method(invoke):
    run = ["sgd-epsilon", "--sigma", "1.1", "--sample-rate", "0.01", "--steps", "1000", "--delta", "1e-5"]
    for m in ("rdp", "pld", "all"):
        a, b = invoke([*run, "--method", m, "-f", "csv"]), invoke([*run, "--accountant", m, "-f", "csv"])
        assert a.exit_code == b.exit_code == 0 and a.stdout == b.stdout and a.stderr == b.stderr
    assert invoke([*run, "--method", "pld", "--accountant", "pld", "-q"]).exit_code == 0
    line = _one_line_error(
        invoke([*run, "--method", "rdp", "--accountant", "pld"]), "--method", "--accountant"
    )
    assert "rdp" in line and "pld" in line
    text = invoke(["sgd-epsilon", "--help"]).stdout
    assert "--method [rdp|pld|abadi" in text and "--accountant" not in text
    assert "[default: rdp]" in " ".join(text.split())


@pytest.mark.parametrize("command", ["compose", "convert", "iterate", "matrix", "odometer"])
def test_accountant_elsewhere_points_at_method(invoke, command):
    line = _one_line_error(invoke([command, "--accountant", "rdp"]))
    assert "No such option '--accountant'" in line and "Did you mean '--method'?" in line


def test_method_where_it_does_not_exist_is_clicks_error(invoke):
    line = _one_line_error(invoke(["audit", "--method", "rdp"]))
    assert "No such option '--method'" in line and "Did you mean" not in line


@pytest.mark.parametrize("name", ["pld", "PLD", "f-dp", "prv"])
def test_odometer_refuses_a_pld_accountant_and_says_why(invoke, name):
    """odometer's --method chooses rdp, gdp or dp; asked for PLD, f-DP or PRV it says why there is none."""
    line = _one_line_error(invoke(["odometer", "--method", name]))
    assert (
        "'--method'" in line
        and f"{name!r}" in line
        and "Honkela" in line
        and "use one of rdp, gdp, dp" in line
    )


def test_odometer_other_method_names_get_clicks_list(invoke):
    line = _one_line_error(invoke(["odometer", "--method", "zcdp"]))
    assert "'zcdp' is not one of 'rdp', 'gdp', 'dp'" in line


def test_no_message_says_accountant_x():
    """No message, note, caption or help of the package says ``--accountant X``: the option is --method (the one
    line naming --accountant with a value is the refusal of the two spellings disagreeing)."""
    import re
    from pathlib import Path

    import dpcalc

    root = Path(dpcalc.__file__).parent
    for path in root.rglob("*.py"):
        for i, line in enumerate(path.read_text().splitlines(), 1):
            if re.search(r"--accountant [a-z{]", line):
                assert "--accountant {alias} disagree" in line, f"{path}:{i}: {line.strip()}"


@pytest.mark.parametrize("question", [["--fpr", "0.01"], ["--advantage"], ["--prior", "0.5"]])
def test_eps_error_reaches_the_profile_questions_as_a_number(invoke, question):
    run = ["sgd-epsilon", "--sigma", "1.1", "--sample-rate", "0.01", "--steps", "100", *question]
    rows = _rows(invoke([*run, "--method", "pld", "--eps-error", "0.01", "-f", "csv"]))
    assert rows and rows[0]["method"] == "pld"
    _one_line_error(invoke([*run, "--method", "rdp", "--eps-error", "0.01"]), "--eps-error")
    _one_line_error(invoke([*run, "--method", "pld", "--eps-error", "0.01,0.02"]), "--eps-error")


# ------------------------------------------------------------------------------- iterate and langevin: one rule

ITERATE = [
    "iterate",
    "--sigma",
    "5",
    "--lipschitz",
    "1",
    "--lr",
    "0.05",
    "--steps",
    "100",
    "--initial-distance",
    "1",
]
LANGEVIN = ["langevin", "--sigma", "0.02", "--sensitivity", "4", "--lr", "0.02", "--strong-convexity", "1"]
LANGEVIN += ["--smoothness", "1", "--dataset-size", "5000", "--steps", "100,1000"]


@pytest.mark.parametrize("target", [["--delta", "1e-5"], ["--epsilon", "1"]])
def test_iterate_takes_alpha_beside_the_question_and_loses_nothing(invoke, target):
    both = _rows(invoke([*ITERATE, "--alpha", "2,5", *target, "-f", "csv"]))
    rdp = _rows(invoke([*ITERATE, "--alpha", "2,5", "-f", "csv"]))
    answer = _rows(invoke([*ITERATE, *target, "-f", "csv"]))
    key = "epsilon" if target[0] == "--delta" else "delta"
    by_rdp = {(r["method"], r["alpha"]): r for r in rdp}
    by_answer = {r["method"]: r for r in answer}
    assert len(both) == len(rdp) == 2 * len(answer)
    for row in both:
        assert row["rdp"] == by_rdp[(row["method"], row["alpha"])]["rdp"]
        assert row[key] == by_answer[row["method"]][key]
        assert row["best_alpha"] == by_answer[row["method"]]["alpha"]  # alone, the best order is in alpha


def test_langevin_takes_alpha_beside_delta_as_iterate_does(invoke):
    both = _rows(invoke([*LANGEVIN, "--alpha", "30", "--delta", "1e-5", "-f", "csv"]))
    rdp = _rows(invoke([*LANGEVIN, "--alpha", "30", "-f", "csv"]))
    eps = _rows(invoke([*LANGEVIN, "--delta", "1e-5", "-f", "csv"]))
    for a, r, e in zip(both, rdp, eps):
        assert (a["rdp"], a["rdp_lower"]) == (r["rdp"], r["rdp_lower"])
        assert (a["epsilon"], a["best_alpha"]) == (e["epsilon"], e["best_alpha"])


def test_iterate_and_langevin_say_the_rule_alike(invoke):
    it = _one_line_error(invoke(ITERATE), "--delta", "--alpha")
    lg = _one_line_error(invoke(LANGEVIN), "--delta", "--alpha")
    assert "one row reports both" in it and "one row reports both" in lg
    assert it.startswith("Error: give --delta (to get ε)") and lg.startswith("Error: give --delta (to get ε)")
    _one_line_error(invoke([*ITERATE, "--delta", "1e-5", "--epsilon", "1"]), "--delta", "--epsilon")
