"""``dpcalc audit``: the columns, the sources (counts, --input, one-run, --scores, stdin), the claim
(exit 3), bad input (exit 2 naming the option), and the numbers against scipy's exact intervals."""

from __future__ import annotations

import csv
import io
import json
import math

import numpy as np
import pytest
from scipy import stats

from dpcalc.commands.schema import names

COUNTS = ["audit", "--tp", "412", "--fn", "588", "--fp", "9", "--tn", "991", "--delta", "1e-5"]


def _rows(result):
    return list(csv.DictReader(io.StringIO(result.stdout)))


def test_counts_columns_and_value(invoke):
    r = invoke([*COUNTS, "-f", "csv"])
    assert r.exit_code == 0, r.stderr
    rows = _rows(r)
    assert list(rows[0]) == names("audit") and len(rows) == 1
    level = 0.95  # two-sided at 0.95 = one-sided at 0.975 each (the union bound's level)
    tpr_lo = stats.binomtest(412, 1000).proportion_ci(level, method="exact").low
    fpr_hi = stats.binomtest(9, 1000).proportion_ci(level, method="exact").high
    ref = math.log((tpr_lo - 1e-5) / fpr_hi)
    assert float(rows[0]["epsilon_lower"]) == pytest.approx(ref, rel=1e-9)
    assert float(rows[0]["epsilon_lower"]) <= ref
    mu_ref = stats.norm.ppf(tpr_lo) - stats.norm.ppf(fpr_hi)
    assert float(rows[0]["mu_lower"]) == pytest.approx(mu_ref, rel=1e-9)
    assert "union bound" in r.stderr and "Gaussian" in r.stderr


def test_quiet_prints_the_lower_bound(invoke):
    r = invoke([*COUNTS, "-q"])
    assert r.exit_code == 0 and float(r.stdout) > 3.0


def test_claimed_epsilon_ratio_and_exit_3(invoke):
    ok = invoke([*COUNTS, "--claimed-epsilon", "8", "-f", "csv"])
    assert ok.exit_code == 0, ok.stderr
    row = _rows(ok)[0]
    assert float(row["epsilon_claimed"]) == 8.0
    assert float(row["ratio"]) == pytest.approx(float(row["epsilon_lower"]) / 8.0)
    bad = invoke([*COUNTS, "--claimed-epsilon", "2", "-f", "csv"])
    assert bad.exit_code == 3
    assert _rows(bad)  # the rows are still printed
    lines = [ln for ln in bad.stderr.splitlines() if "AUDIT FAILED" in ln]
    assert len(lines) == 1 and "claimed epsilon 2" in lines[0]


def test_sweeps_give_the_product(invoke):
    r = invoke(
        [
            "audit",
            "--tp",
            "10,20",
            "--fn",
            "5",
            "--fp",
            "0",
            "--tn",
            "30",
            "--delta",
            "0,1e-3",
            "--confidence",
            "0.9,0.95",
            "-f",
            "csv",
        ]
    )
    assert r.exit_code == 0, r.stderr
    assert len(_rows(r)) == 8


def test_input_file_one_audit_per_row(invoke, tmp_path):
    f = tmp_path / "a.csv"
    f.write_text("run,tp,fp,fn,tn\na,412,9,588,991\nb,1000,0,0,1000\nc,1,0,0,1\n")
    r = invoke(["audit", "--input", str(f), "--delta", "0", "-f", "csv"])
    assert r.exit_code == 0, r.stderr
    rows = _rows(r)
    assert [int(x["tp"]) for x in rows] == [412, 1000, 1]
    e = [float(x["epsilon_lower"]) for x in rows]
    assert e[1] > e[0] > 0 and e[2] == 0.0 and rows[2]["note"].startswith("no bound")
    # stdin
    r2 = invoke(["audit", "--input", "-", "--delta", "0", "-f", "csv"], input=f.read_text())
    assert r2.exit_code == 0 and r2.stdout == r.stdout


def test_one_run(invoke):
    r = invoke(
        [
            "audit",
            "--canaries",
            "1000",
            "--guesses",
            "200",
            "--correct",
            "100,150,190",
            "--delta",
            "1e-5",
            "-f",
            "json",
        ]
    )
    assert r.exit_code == 0, r.stderr
    rows = json.loads(r.stdout)
    e = [row["epsilon_lower"] for row in rows]
    assert e[0] == 0.0 and 0 < e[1] < e[2]
    assert rows[0]["tp"] is None and rows[0]["canaries"] == 1000
    assert "Steinke" in r.stderr


def test_single_canary_and_zero_delta_are_clear(invoke):
    r = invoke(["audit", "--canaries", "1", "--guesses", "1", "--correct", "1", "--delta", "0", "-f", "csv"])
    assert r.exit_code == 0
    row = _rows(r)[0]
    assert float(row["epsilon_lower"]) == 0.0 and row["note"].startswith("no bound")


def test_scores_file(invoke, tmp_path):
    rng = np.random.default_rng(0)
    member = rng.integers(0, 2, 2000)
    score = rng.normal(size=2000) + 3.0 * member
    f = tmp_path / "s.csv"
    f.write_text("member,score\n" + "".join(f"{m},{float(s)!r}\n" for m, s in zip(member, score)))
    r = invoke(["audit", "--scores", str(f), "--delta", "1e-5", "-f", "csv"])
    assert r.exit_code == 0, r.stderr
    row = _rows(r)[0]
    assert row["method"] == "scores" and row["threshold"] != ""
    assert sum(int(row[k]) for k in ("tp", "fp", "fn", "tn")) == 1000  # the evaluation half only
    assert float(row["epsilon_lower"]) > 0
    assert "random half" in r.stderr


@pytest.mark.parametrize(
    "args,option",
    [
        (["--tp", "0", "--fn", "0", "--fp", "1", "--tn", "1", "--delta", "0"], "--tp/--fn"),
        (["--tp", "1", "--fn", "1", "--fp", "0", "--tn", "0", "--delta", "0"], "--fp/--tn"),
        (["--tp", "-1", "--fn", "1", "--fp", "1", "--tn", "1", "--delta", "0"], "--tp"),
        (["--tp", "1.5", "--fn", "1", "--fp", "1", "--tn", "1", "--delta", "0"], "--tp"),
        (
            ["--tp", "1", "--fn", "1", "--fp", "1", "--tn", "1", "--delta", "0", "--confidence", "1"],
            "--confidence",
        ),
        (
            ["--tp", "1", "--fn", "1", "--fp", "1", "--tn", "1", "--delta", "0", "--confidence", "0"],
            "--confidence",
        ),
        (["--tp", "1", "--fn", "1", "--fp", "1", "--tn", "1"], "--delta"),
        (["--tp", "1", "--fn", "1", "--fp", "1", "--delta", "0"], "--tn"),
        (["--tp", "1", "--fn", "1", "--fp", "1", "--tn", "1", "--delta", "1"], "--delta"),
        (["--canaries", "10", "--guesses", "11", "--correct", "1", "--delta", "0"], "--guesses"),
        (["--canaries", "10", "--guesses", "5", "--correct", "6", "--delta", "0"], "--correct"),
        (["--canaries", "0", "--guesses", "0", "--correct", "0", "--delta", "0"], "--canaries"),
        (["--canaries", "10", "--tp", "1", "--delta", "0"], "give one source"),
        (["--delta", "0"], "give one source"),
        (["--input", "/nonexistent/x.csv", "--delta", "0"], "--input"),
        (["--scores", "/nonexistent/x.csv", "--delta", "0"], "--scores"),
        (
            ["--tp", "1", "--fn", "1", "--fp", "1", "--tn", "1", "--delta", "0", "--claimed-epsilon", "-1"],
            "--claimed-epsilon",
        ),
    ],
)
def test_bad_input_exits_2_naming_the_option(invoke, args, option):
    r = invoke(["audit", *args])
    assert r.exit_code == 2, (r.stdout, r.stderr)
    assert r.stdout == ""
    err = [ln for ln in r.stderr.splitlines() if ln.startswith("Error:")]
    assert len(err) == 1 and option in err[0]


@pytest.mark.parametrize(
    "text,where",
    [
        ("tp,fp,fn\n1,2,3\n", "missing column 'tn'"),
        ("tp,fp,fn,tn\n1,2,x,4\n", "line 2"),
        ("tp,fp,fn,tn\n0,2,0,4\n", "line 2"),
        ("tp,fp,fn,tn\n", "no rows"),
    ],
)
def test_bad_input_file_names_the_line(invoke, tmp_path, text, where):
    f = tmp_path / "a.csv"
    f.write_text(text)
    r = invoke(["audit", "--input", str(f), "--delta", "0"])
    assert r.exit_code == 2 and where in r.stderr and "--input" in r.stderr


@pytest.mark.parametrize("text", ["member,score\n2,0.5\n", "member,score\n1,nan\n", "member,score\n1,0.3\n"])
def test_bad_scores_file(invoke, tmp_path, text):
    f = tmp_path / "s.csv"
    f.write_text(text)
    r = invoke(["audit", "--scores", str(f), "--delta", "0"])
    assert r.exit_code == 2 and "--scores" in r.stderr


def test_json_has_no_nan_at_the_edges(invoke):
    r = invoke(["audit", "--tp", "20", "--fn", "0", "--fp", "0", "--tn", "20", "--delta", "0", "-f", "json"])
    assert r.exit_code == 0
    row = json.loads(r.stdout)[0]
    assert row["epsilon_lower"] > 0 and row["epsilon_gdp"] == "inf"  # δ = 0: a Gaussian curve has no pure ε


def test_scores_from_stdin_and_seed(invoke):
    rng = np.random.default_rng(1)
    member = rng.integers(0, 2, 600)
    score = rng.normal(size=600) + 2.5 * member
    text = "member,score\n" + "".join(f"{m},{float(s)!r}\n" for m, s in zip(member, score))
    a = invoke(["audit", "--scores", "-", "--delta", "0", "-f", "csv"], input=text)
    b = invoke(["audit", "--scores", "-", "--delta", "0", "-f", "csv", "--seed", "0"], input=text)
    assert a.exit_code == 0 and a.stdout == b.stdout
    assert sum(int(_rows(a)[0][k]) for k in ("tp", "fp", "fn", "tn")) == 300


def test_budget_options_are_not_offered(invoke):
    # audit reports lower bounds: --max-epsilon/--max-delta are neither offered nor accepted
    help_text = invoke(["audit", "--help"]).stdout
    assert "--max-epsilon" not in help_text and "--max-delta" not in help_text
    for option in ("--max-epsilon", "--max-delta"):
        r = invoke([*COUNTS, option, "1"])
        assert r.exit_code == 2 and option in r.stderr and r.stdout == ""
    assert "--claimed-epsilon" in invoke([*COUNTS, "--max-epsilon", "1"]).stderr


def test_one_run_guesses_above_the_limit_are_refused(invoke):
    r = invoke(["audit", "--canaries", "2e10", "--guesses", "1e10", "--correct", "6e9", "--delta", "1e-5"])
    assert r.exit_code == 2 and r.stdout == ""
    assert "--guesses" in r.stderr and "1e+09" in r.stderr and len(r.stderr.strip().splitlines()) == 1


def test_one_run_canaries_beyond_exact_integers_are_refused(invoke):
    r = invoke(["audit", "--canaries", "1e19", "--guesses", "1000", "--correct", "900", "--delta", "1e-5"])
    assert r.exit_code == 2 and "--canaries" in r.stderr and "2^53" in r.stderr and r.stdout == ""


# -- the claim from an accounting (docs/math.md §11.6) ----------------------------------------------
SGD = ["--noise-multiplier", "2", "--sample-rate", "0.1", "--steps", "10"]  # small: the PLD takes a second


def _sgd_pld_epsilon(invoke, args, delta):
    r = invoke(["sgd-epsilon", *args, "--delta", delta, "--accountant", "pld", "-f", "csv"])
    assert r.exit_code == 0, r.stderr
    return float(_rows(r)[0]["epsilon"])


def test_claim_from_sgd_equals_sgd_epsilon_pld(invoke):
    r = invoke([*COUNTS[:-1], "1e-5,1e-3", *SGD, "-f", "csv"])
    assert r.exit_code == 3, r.stderr  # the attack proves ε >= 3.1, the run claims 0.8: exit 3
    rows = _rows(r)
    assert [float(x["delta"]) for x in rows] == [1e-5, 1e-3]
    for row in rows:
        ref = _sgd_pld_epsilon(invoke, SGD, row["delta"])
        assert float(row["epsilon_claimed"]) == ref
        assert float(row["ratio"]) == pytest.approx(float(row["epsilon_lower"]) / ref, rel=1e-12)
    assert "PLD accountant" in r.stderr and "q = 0.1, noise multiplier 2, 10 steps" in r.stderr
    fail = [ln for ln in r.stderr.splitlines() if "AUDIT FAILED" in ln]
    assert len(fail) == 1 and "row 1" in fail[0] and f"{float(rows[0]['epsilon_claimed']):.6g}" in fail[0]


def test_claim_from_sgd_against_dp_accounting(invoke):
    """Independent: dp_accounting 0.6.0's PLD accountant on the same run (fine discretisation); the claim is
    the certified upper end, so it is at least the true ε, within 1% of dp_accounting's value."""
    import dp_accounting
    from dp_accounting.pld import pld_privacy_accountant

    acc = pld_privacy_accountant.PLDAccountant(value_discretization_interval=1e-4)
    acc.compose(dp_accounting.PoissonSampledDpEvent(0.1, dp_accounting.GaussianDpEvent(2.0)), 10)
    ref = acc.get_epsilon(1e-5)
    r = invoke(
        [
            "audit",
            "--tp",
            "30",
            "--fn",
            "70",
            "--fp",
            "20",
            "--tn",
            "80",
            "--delta",
            "1e-5",
            *SGD,
            "-f",
            "csv",
        ]
    )
    assert r.exit_code == 0, r.stderr  # a weak attack: no contradiction
    row = _rows(r)[0]
    assert float(row["epsilon_claimed"]) == pytest.approx(ref, rel=1e-2)
    assert float(row["epsilon_lower"]) < float(row["epsilon_claimed"])


def test_claim_from_batches_and_epochs(invoke):
    run = ["--sigma", "2", "--batch-size", "100", "--dataset-size", "1000", "--epochs", "1"]
    r = invoke([*COUNTS, *run, "-f", "csv"])
    assert r.exit_code == 3
    assert float(_rows(r)[0]["epsilon_claimed"]) == _sgd_pld_epsilon(invoke, run, "1e-5")


def test_weak_attack_passes_a_strong_claim(invoke):
    r = invoke(
        ["audit", "--tp", "30", "--fn", "70", "--fp", "20", "--tn", "80", "--delta", "1e-5", *SGD, "-q"]
    )
    assert r.exit_code == 0 and "AUDIT FAILED" not in r.stderr


@pytest.mark.parametrize(
    "args,words",
    [
        (
            ["--claimed-epsilon", "8", *SGD],
            ["--claimed-epsilon", "--noise-multiplier", "--sample-rate", "not both"],
        ),
        (["--claimed-epsilon", "8", "--steps", "10"], ["--claimed-epsilon", "--steps", "not both"]),
        (["--sample-rate", "0.1", "--steps", "10"], ["--noise-multiplier"]),
        (["--sigma", "2", "--steps", "10"], ["--sample-rate"]),
        (["--sigma", "2", "--sample-rate", "0.1"], ["--steps"]),
        (["--sigma", "2", "--batch-size", "10", "--steps", "10"], ["--dataset-size"]),
        (["--sigma", "2,3", "--sample-rate", "0.1", "--steps", "10"], ["--noise-multiplier"]),
    ],
)
def test_claim_errors_exit_2_naming_the_options(invoke, args, words):
    r = invoke([*COUNTS, *args])
    assert r.exit_code == 2, (r.stdout, r.stderr)
    assert r.stdout == ""
    err = [ln for ln in r.stderr.splitlines() if ln.startswith("Error:")]
    assert len(err) == 1 and all(w in err[0] for w in words), err


# -- --plot (docs/math.md §11.6) --------------------------------------------------------------------
def test_plot_spec_boxes_and_curves():
    """The boxes are scipy's exact intervals at the printed level; the claimed curve is the closed form."""
    from dpcalc.commands.audit.command import AuditParams, audit

    res = audit(
        AuditParams(tp=[412], fn=[588], fp=[0], tn=[991], delta=[1e-5, 1e-3], claimed_epsilon=8.0, plot=True)
    )
    spec = res.plot
    assert len(spec.points) == 1  # the two δ rows are one audit: one box
    label, x, y, xlo, xhi, ylo, yhi = spec.points[0]
    t = stats.binomtest(412, 1000).proportion_ci(0.95, method="exact")
    f = stats.binomtest(0, 991).proportion_ci(0.95, method="exact")
    assert (x, y) == (0.0, 0.412)
    assert ylo == pytest.approx(t.low, rel=1e-9) and yhi == pytest.approx(t.high, rel=1e-9)
    assert xlo == 0.0 and xhi == pytest.approx(f.high, rel=1e-9)
    assert ylo == res.column("tpr_lower")[0] and xhi == res.column("fpr_upper")[0]
    claims = [c for c in spec.curves if c[3] == "claim"]
    assert [c[0] for c in claims] == [
        "claimed guarantee (ε = 8, δ = 1e-05)",
        "claimed guarantee (ε = 8, δ = 0.001)",
    ]
    for (_, xs, ys, _), d in zip(claims, (1e-5, 1e-3)):
        a = np.asarray(xs)
        ref = np.clip(np.minimum(math.exp(8) * a + d, 1 - math.exp(-8) * (1 - d - a)), a, 1)
        assert np.all(np.asarray(ys) >= ref) and np.allclose(ys, ref, rtol=1e-9)
        assert min(xs) == pytest.approx(1e-6) and max(xs) == 1.0
    proved = [c for c in spec.curves if c[3] == "proved"]
    e = res.column("epsilon_lower")[0]  # the box's corner (fpr_upper, tpr_lower) lies on its curve
    assert ylo == pytest.approx(min(math.exp(e) * xhi + 1e-5, 1.0), rel=1e-9)
    assert proved and all(c[0].startswith("proved by the attack") for c in proved)


def test_plot_spec_of_a_sgd_claim_has_its_pld_profile():
    """The run's certified PLD curve lies under its claimed (ε, δ) curve (that pair is one of its profile's)
    and above guessing."""
    from dpcalc.commands.audit.command import AuditParams, audit

    p = AuditParams(
        tp=[30],
        fn=[70],
        fp=[20],
        tn=[80],
        delta=[1e-5],
        claimed_sgd={"sigma": 2.0, "sample_rate": 0.1, "steps": 10},
    )
    spec = audit(AuditParams(**{**p.__dict__, "plot": True})).plot
    (claim,) = [c for c in spec.curves if c[3] == "claim"]
    (profile,) = [c for c in spec.curves if c[3] == "profile"]
    assert "PLD profile" in profile[0]
    a, hi = np.asarray(profile[1]), np.asarray(profile[2])
    ref = np.interp(np.log(a), np.log(claim[1]), claim[2])
    assert np.all(hi >= a) and np.all(hi <= ref * (1 + 1e-3))
    assert np.any(hi < ref * 0.9)  # the profile is tighter than one (ε, δ) pair somewhere


@pytest.mark.parametrize("ext", ["png", "svg"])
def test_plot_file_written(invoke, tmp_path, ext):
    pytest.importorskip("matplotlib")
    f = tmp_path / f"audit.{ext}"
    r = invoke([*COUNTS, "--claimed-epsilon", "8", "--plot", str(f), "-q"])
    assert r.exit_code == 0, r.stderr
    data = f.read_bytes()
    assert len(data) > 1000
    assert data[:8] == b"\x89PNG\r\n\x1a\n" if ext == "png" else b"<svg" in data[:2000]
    assert [p.name for p in tmp_path.iterdir()] == [f.name]  # no temporary file left


def test_plot_of_many_audits_without_claim(invoke, tmp_path):
    pytest.importorskip("matplotlib")
    src = tmp_path / "a.csv"
    src.write_text("tp,fp,fn,tn\n412,9,588,991\n50,0,950,1000\n900,300,100,700\n")
    f = tmp_path / "many.png"
    r = invoke(["audit", "--input", str(src), "--delta", "1e-5", "--plot", str(f), "-q"])
    assert r.exit_code == 0, r.stderr
    assert f.stat().st_size > 1000


def test_plot_of_one_run_is_refused(invoke, tmp_path):
    r = invoke(
        [
            "audit",
            "--canaries",
            "1000",
            "--guesses",
            "100",
            "--correct",
            "100",
            "--delta",
            "1e-5",
            "--plot",
            str(tmp_path / "a.png"),
        ]
    )
    assert r.exit_code == 2 and "--plot" in r.stderr and "one-run" in r.stderr
    assert not (tmp_path / "a.png").exists()


def test_plot_is_reproducible(invoke, tmp_path):
    pytest.importorskip("matplotlib")
    a, b = tmp_path / "a.svg", tmp_path / "b.svg"
    for f in (a, b):
        args = ["audit", "--tp", "900", "--fn", "100", "--fp", "0", "--tn", "1000", "--delta", "0,1e-5"]
        r = invoke([*args, "--claimed-epsilon", "3", "--plot", str(f), "-q"])
        assert r.exit_code == 3  # the attack proves ε >= 5.47 > 3: the picture is drawn all the same
    assert a.read_bytes() == b.read_bytes()


def test_claim_from_a_composition_is_composes_best_epsilon(invoke):
    """--claimed-mechanism: epsilon_claimed at each row's δ is what `dpcalc compose` prints (its best
    method), the ratio is against it, and a lower bound above it fails the audit (exit 3)."""
    spec = "laplace:scale=1,count=3"
    r = invoke([*COUNTS[:-1], "1e-5,1e-3", "--claimed-mechanism", spec, "-f", "csv"])
    rows = _rows(r)
    c = invoke(["compose", spec, "--delta", "1e-5,1e-3", "-f", "csv"])
    want = {float(row["delta"]): float(row["epsilon"]) for row in _rows(c)}
    for row in rows:
        assert float(row["epsilon_claimed"]) == want[float(row["delta"])]
        assert float(row["ratio"]) == pytest.approx(
            float(row["epsilon_lower"]) / float(row["epsilon_claimed"])
        )
    beaten = any(float(row["epsilon_lower"]) > float(row["epsilon_claimed"]) for row in rows)
    assert r.exit_code == (3 if beaten else 0)
    weak = invoke(
        ["audit", "--tp", "60", "--fn", "940", "--fp", "18", "--tn", "982", "--delta", "1e-5"]
        + ["--claimed-mechanism", spec]
    )
    assert weak.exit_code == 0, weak.stderr


@pytest.mark.parametrize(
    "extra",
    [["--claimed-epsilon", "3"], ["--noise-multiplier", "1", "--sample-rate", "0.01", "--steps", "10"]],
)
def test_one_claim_only(invoke, extra):
    r = invoke([*COUNTS, "--claimed-mechanism", "laplace:scale=1", *extra])
    assert r.exit_code == 2 and "give one claim" in r.stderr and "--claimed-mechanism" in r.stderr
