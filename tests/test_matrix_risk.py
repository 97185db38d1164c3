"""``dpcalc matrix`` in an attacker's terms (issue 39): ``--fpr``, ``--advantage``, ``--prior``,
``--target-advantage``, ``--target-tpr``, and ``--steps`` as a sweep.  References: the Gaussian's closed forms at 40
digits (TPR = Φ(Φ⁻¹(FPR) + Δ/σ), advantage 2Φ(μ/2) − 1), sgd-epsilon's rows for the same run (C = I, b = 1), the
run's own ε bracket (the profile's bracket consistent with it), and separate runs for a sweep of steps."""

from __future__ import annotations

import csv
import io

import mpmath as mp
import numpy as np
import pytest
from click.testing import CliRunner

from dpcalc.cli import main
from dpcalc.engine.matrix import accounting as acc
from dpcalc.engine.matrix.sensitivity import Participation
from dpcalc.engine.matrix.strategies import sqrt_coefficients, strategy

mp.mp.dps = 40


def _run(args):
    return CliRunner().invoke(main, args)


def _rows(args):
    result = _run([*args, "-f", "csv"])
    assert result.exit_code == 0, result.output
    return list(csv.DictReader(io.StringIO(result.stdout)))


def _f(x):
    return float(x) if x not in ("", None) else None


def _mp_tpr(fpr, mu):
    return mp.ncdf(mp.sqrt(2) * mp.erfinv(2 * mp.mpf(fpr) - 1) + mp.mpf(mu))


def _mp_advantage(mu):
    return mp.erf(mp.mpf(mu) / (2 * mp.sqrt(2)))


def _exact_norm(coef) -> mp.mpf:
    """‖c‖₂ at 40 digits (the single-participation sensitivity of a Toeplitz C)."""
    return mp.sqrt(sum(mp.mpf(float(c)) ** 2 for c in coef))  # a double is exact in mpmath


SDP = ["matrix", "--participation", "cyclic-poisson:b=1,q=0.01", "--strategy", "identity", "--steps", "300"]


# ------------------------------------------------------------------------------------------ the Gaussian row


@pytest.mark.parametrize("spec", ["identity", "sqrt:bands=4", "toeplitz:coef=1|0.5|0.25"])
@pytest.mark.parametrize("sigma", [0.7, 3.0, 20.0])
def test_gaussian_tradeoff_is_the_closed_form(spec, sigma):
    """Single participation, Δ exact: TPR = Φ(Φ⁻¹(FPR) + Δ/σ), bracketed, never below, within 10⁻⁶."""
    fprs = [1e-9, 1e-6, 1e-3, 0.1, 0.5]
    rows = _rows(
        [
            "matrix",
            "--strategy",
            spec,
            "--steps",
            "50",
            "--sigma",
            str(sigma),
            "--fpr",
            ",".join(map(str, fprs)),
        ]
    )
    s = strategy(spec, 50)
    mu = _exact_norm(s.coef) / mp.mpf(sigma)
    assert [r["method"] for r in rows] == ["gaussian"] * len(fprs)
    for r, a in zip(rows, fprs):
        want = _mp_tpr(a, mu)
        lo, hi = _f(r["tpr_lower"]), _f(r["tpr"])
        assert lo <= want <= hi, (spec, sigma, a)
        assert hi <= want * (1 + 1e-6)
        assert _f(r["tpr_upper"]) == hi
        assert _f(r["mu"]) >= mu
        assert "exact" in r["note"]


@pytest.mark.parametrize("sigma", [0.5, 2.0, 10.0])
def test_gaussian_advantage_and_success_are_the_closed_forms(sigma):
    """advantage = 2Φ(μ/2) − 1 with μ = Δ/σ (min-sep, exact Δ by McKenna et al.), bracketed; the success at a
    prior between guessing and guessing plus its share of the advantage."""
    spec, n, k, b = "sqrt:bands=3", 12, 2, 5
    rows = _rows(
        [
            "matrix",
            "--strategy",
            spec,
            "--steps",
            str(n),
            "--participation",
            f"min-sep:k={k},b={b}",
            "--sigma",
            str(sigma),
            "--prior",
            "0.01,0.5,0.9",
        ]
    )
    # steps 0 and 5 of the 3-banded square root: the columns do not overlap, Δ² = 2‖c‖²
    c = sqrt_coefficients(3)
    mu = mp.sqrt(2) * _exact_norm(c) / mp.mpf(sigma)
    adv = _mp_advantage(mu)
    for r in rows:
        assert r["sensitivity_exact"] == "true"
        assert _f(r["advantage_lower"]) <= adv <= _f(r["advantage"]) <= adv * (1 + 1e-6)
        p = _f(r["prior"])
        guess = max(p, 1 - p)
        assert guess <= _f(r["success_lower"]) * (1 + 1e-15)
        assert (
            _f(r["success_lower"]) <= _f(r["success"]) <= guess + min(p, 1 - p) * _f(r["advantage"]) + 1e-15
        )


def test_gaussian_under_sampling_is_an_upper_bound_only():
    """Under cyclic Poisson sampling the gaussian row is the unamplified bound: no lower end, and said."""
    rows = _rows([*SDP, "--sigma", "2", "--advantage", "--method", "gaussian"])
    (r,) = rows
    assert r["advantage_lower"] == "" and _f(r["advantage"]) > 0
    assert "upper bound only" in r["note"]
    rows = _rows([*SDP, "--sigma", "2", "--fpr", "0.01", "--method", "gaussian"])
    assert rows[0]["tpr_lower"] == ""


# ------------------------------------------------------------------------- C = I, b = 1: DP-SGD exactly


@pytest.mark.parametrize("sigma", [0.8, 1.5])
def test_identity_one_partition_is_sgd_epsilons_risk_rows(sigma):
    """bandmf-rdp and bandmf-pld of C = I with b = 1 are sgd-epsilon's rdp and pld rows, bit for bit."""
    cols = "method,advantage_lower,advantage_estimate,advantage,success_lower,success_estimate,success"
    ours = _rows([*SDP, "--sigma", str(sigma), "--prior", "0.05,0.5", "--columns", cols])
    ref = _rows(
        [
            "sgd-epsilon",
            "--sample-rate",
            "0.01",
            "--steps",
            "300",
            "--sigma",
            str(sigma),
            "--prior",
            "0.05,0.5",
            "--accountant",
            "all",
            "--columns",
            cols,
        ]
    )
    for name, want in (("bandmf-rdp", "rdp"), ("bandmf-pld", "pld")):
        a = [{k: v for k, v in r.items() if k != "method"} for r in ours if r["method"] == name]
        b = [{k: v for k, v in r.items() if k != "method"} for r in ref if r["method"] == want]
        assert a == b and len(a) == 2


def test_identity_one_partition_tradeoff_is_sgd_epsilons():
    cols = "method,fpr,tpr_lower,tpr_estimate,tpr"
    ours = _rows([*SDP, "--sigma", "1", "--fpr", "1e-3,0.1", "--columns", cols])
    ref = _rows(
        ["sgd-epsilon", "--sample-rate", "0.01", "--steps", "300", "--sigma", "1", "--fpr", "1e-3,0.1"]
        + ["--accountant", "all", "--columns", cols]
    )
    for name, want in (("bandmf-rdp", "rdp"), ("bandmf-pld", "pld")):
        a = [list(r.values())[1:] for r in ours if r["method"] == name]
        b = [list(r.values())[1:] for r in ref if r["method"] == want]
        assert a == b and len(a) == 2


def test_identity_under_poisson_mmcc_is_sgd_epsilons_pld():
    """C = I under poisson:q: no pair needs a tail event, the laws are the run's: sgd-epsilon's pld bracket."""
    cols = "advantage_lower,advantage_estimate,advantage"
    base = ["--steps", "200", "--sigma", "2", "--advantage", "--columns", cols]
    ours = _rows(
        ["matrix", "--strategy", "identity", "--participation", "poisson:q=0.02", "--method", "mmcc", *base]
    )
    ref = _rows(["sgd-epsilon", "--sample-rate", "0.02", "--accountant", "pld", *base])
    assert ours == ref


def test_calibration_agrees_with_sgd_epsilon():
    """--target-advantage: the σ found meets the target and σ/(1 + 10⁻⁴) misses it (as sgd-epsilon's: the same
    noise within that step), for both bandmf rows."""
    target = 0.1
    cols = ["--columns", "method,noise_multiplier,advantage,epsilon"]
    ours = _rows([*SDP, "--target-advantage", str(target), "--delta", "1e-5", "--method", "all", *cols])
    ref = _rows(
        ["sgd-epsilon", "--sample-rate", "0.01", "--steps", "300", "--target-advantage", str(target)]
        + ["--delta", "1e-5", "--accountant", "all", *cols]
    )
    want = {r["method"]: _f(r["noise_multiplier"]) for r in ref}
    for r in ours:
        assert _f(r["advantage"]) <= target
        if r["method"] in ("bandmf-rdp", "bandmf-pld"):
            s = _f(r["noise_multiplier"])
            other = want[r["method"].removeprefix("bandmf-")]
            assert abs(s / other - 1) <= 1.0001e-4
            below = _rows([*SDP, "--sigma", repr(s / 1.0001), "--advantage", "--method", r["method"]])
            assert _f(below[0]["advantage"]) > target


def test_gaussian_calibration_is_the_closed_form():
    """σ* = Δ/(2√2·erfinv(A)) for the Gaussian mechanism: the σ found is within one search step above it."""
    target = 0.05
    rows = _rows(
        ["matrix", "--strategy", "sqrt:bands=4", "--steps", "40", "--target-advantage", str(target)]
        + ["--delta", "1e-6", "--method", "gaussian"]
    )
    (r,) = rows
    delta_s = _exact_norm(sqrt_coefficients(4))
    star = float(delta_s / (2 * mp.sqrt(2) * mp.erfinv(target)))
    assert star <= _f(r["noise_multiplier"]) <= star * (1 + 1.0001e-4)
    assert _f(r["advantage"]) <= target
    assert _f(r["epsilon"]) > 0


# ----------------------------------------------------------------------------------- the other rows


def test_bandmf_pld_profile_is_consistent_with_its_epsilon_bracket():
    """Unequal column norms (issue 43's case): at the row's ε bracket [lo, up] at δ, the δ bracket at ε = up has
    its lower end <= δ and the one at ε = lo its upper end >= δ (δ(ε) is non-increasing)."""
    s = strategy("toeplitz:coef=1|0.9", 3)
    part = Participation("cyclic", b=2, q=0.5)
    delta = 1e-5
    up, lo, _, _ = acc.bandmf_epsilon(s, part, 1.0, delta, "pld")
    up, lo = float(np.ravel(up)[0]), float(np.ravel(lo)[0])
    d_lo, d_est, d_up = acc.bandmf_delta(s, part, 1.0, np.array([lo, up]))
    assert d_lo[1] <= delta <= d_up[0]
    assert np.all(d_lo <= d_est) and np.all(d_est <= d_up)
    # and no larger than Thm 4's DP-SGD
    thm4 = acc.bandmf_delta(s, part, 1.0, np.array([lo, up]), plan=acc.bandmf.Plan((), 2, 1.0, "test"))
    assert np.isnan(thm4[0]).all() and np.all(d_up <= thm4[2])


def test_mmcc_is_an_upper_bound_below_the_gaussian_and_says_whose_bracket():
    rows = _rows(
        ["matrix", "--strategy", "sqrt:bands=4", "--steps", "60", "--participation", "poisson:q=0.05"]
        + ["--sigma", "3", "--advantage", "--prior", "0.5"]
    )
    by = {r["method"]: r for r in rows}
    assert set(by) == {"gaussian", "mmcc"}
    m = by["mmcc"]
    assert m["advantage_lower"] == "" and m["advantage_estimate"] == "" and m["success_lower"] == ""
    assert 0 < _f(m["advantage"]) < _f(by["gaussian"]["advantage"])
    assert "δ_tail" in m["note"] and "not the run" in m["note"]


def test_mmcc_tradeoff_below_the_gaussian():
    rows = _rows(
        ["matrix", "--strategy", "sqrt:bands=4", "--steps", "60", "--participation", "poisson:q=0.05"]
        + ["--sigma", "3", "--fpr", "1e-3,0.1"]
    )
    g = [r for r in rows if r["method"] == "gaussian"]
    m = [r for r in rows if r["method"] == "mmcc"]
    for a, b in zip(m, g):
        assert _f(a["fpr"]) <= _f(a["tpr"]) <= _f(b["tpr"])
        assert a["tpr_lower"] == "" and a["tpr_estimate"] == ""


def test_mc_rows_hold_with_a_confidence_and_have_no_tradeoff():
    base = ["matrix", "--strategy", "identity", "--steps", "40", "--participation", "balls-in-bins:b=10"]
    base += ["--sigma", "1", "--mc-samples", "20000"]
    rows = _rows([*base, "--advantage"])
    mc = next(r for r in rows if r["method"] == "mc")
    assert mc["confidence"] == "0.95" and mc["samples"] == "20000"
    assert mc["advantage_lower"] == ""
    assert 0 < _f(mc["advantage_estimate"]) <= _f(mc["advantage"]) <= 1
    # -q reads certified rows only: the gaussian row's advantage, not mc's
    q = _run([*base, "--advantage", "-q"])
    gauss = next(r for r in rows if r["method"] == "gaussian")
    assert q.exit_code == 0 and float(q.stdout) == pytest.approx(_f(gauss["advantage"]), rel=1e-9)
    rows = _rows([*base, "--fpr", "0.01"])
    mc = next(r for r in rows if r["method"] == "mc")
    assert mc["tpr"] == "" and mc["note"].startswith("does not apply")


def test_quiet_and_budget():
    q = _run([*SDP, "--sigma", "1", "--advantage", "-q"])
    assert q.exit_code == 0
    rows = _rows([*SDP, "--sigma", "1", "--advantage"])
    assert float(q.stdout) == min(_f(r["advantage"]) for r in rows)
    over = _run([*SDP, "--sigma", "1", "--advantage", "--max-advantage", "0.01"])
    assert over.exit_code == 3
    tpr = _run([*SDP, "--sigma", "1", "--fpr", "0.001", "--max-tpr", "0.001"])
    assert tpr.exit_code == 3


# --------------------------------------------------------------------------------------- sweeps of steps


@pytest.mark.parametrize(
    "extra",
    [
        ["--participation", "cyclic-poisson:b=4,q=0.04", "--sigma", "2", "--delta", "1e-6"],
        ["--participation", "min-sep:k=3,b=10", "--sigma", "1,3", "--delta", "1e-6"],
        ["--participation", "cyclic-poisson:b=4,q=0.04", "--sigma", "2", "--advantage"],
        ["--sigma", "2", "--fpr", "1e-3"],
    ],
)
def test_a_sweep_of_steps_is_separate_runs(extra):
    sweep = _rows(
        ["matrix", "--strategy", "identity", "--strategy", "sqrt:bands=4", "--steps", "40:80:20", *extra]
    )
    separate = []
    for n in (40, 60, 80):
        separate += _rows(
            ["matrix", "--strategy", "identity", "--strategy", "sqrt:bands=4", "--steps", str(n), *extra]
        )
    assert sweep == separate
    assert [r["steps"] for r in sweep][:: len(sweep) // 3] == ["40", "60", "80"]


def test_steps_sweep_with_target_epsilon():
    common = [
        "matrix",
        "--strategy",
        "sqrt:bands=4",
        "--target-epsilon",
        "2",
        "--delta",
        "1e-6",
        "--method",
        "gaussian",
    ]
    sweep = _rows([*common, "--steps", "30,90"])
    assert sweep == _rows([*common, "--steps", "30"]) + _rows([*common, "--steps", "90"])


# ------------------------------------------------------------------------------------------- bad input


@pytest.mark.parametrize(
    "args,words",
    [
        ("--strategy file:path=C.csv --steps 2,3 --sigma 1 --delta 1e-5", "--steps"),
        ("--strategy identity --steps 2.5 --sigma 1 --delta 1e-5", "--steps"),
        ("--strategy tree --steps 100,5000 --sigma 1 --delta 1e-5", "--steps"),
        ("--strategy identity --steps 0,4 --sigma 1 --delta 1e-5", "--steps"),
        ("--strategy identity --steps 5 --sigma 1 --max-tpr 0.1 --delta 1e-5", "--max-tpr"),
        ("--strategy identity --steps 5 --sigma 1 --advantage --delta 1e-5", "--delta"),
        ("--strategy identity --steps 5 --sigma 1 --fpr 0.1 --delta 1e-5", "--delta"),
        ("--strategy identity --steps 5 --sigma 1 --fpr 0.1 --advantage", "--fpr"),
        ("--strategy identity --steps 5 --sigma 1 --max-advantage 0.1 --delta 1e-5", "--max-advantage"),
        ("--strategy identity --steps 5 --sigma 1 --target-advantage 0.1 --delta 1e-5", "--noise-multiplier"),
        ("--strategy identity --steps 5 --target-advantage 0.1", "--delta"),
        ("--strategy identity --steps 5 --target-tpr 0.1 --delta 1e-5", "--fpr"),
        ("--strategy identity --steps 5 --target-tpr 0.01 --fpr 0.1 --delta 1e-5", "--target-tpr"),
        ("--strategy identity --steps 5 --target-epsilon 1 --advantage", "--target-epsilon"),
        ("--strategy identity --steps 5 --sigma 1 --prior 1.5", "--prior"),
        ("--strategy identity --steps 5 --sigma 1 --fpr 0", "--fpr"),
        ("--strategy identity --sigma 1 --advantage", "--steps"),
        ("--strategy identity --steps 5 --advantage", "--noise-multiplier"),
        ("--strategy identity --steps 5 --sigma 1", "--delta"),
        (
            "--strategy identity --steps 40 --participation balls-in-bins:b=4 --sigma 1 --fpr 0.1 --method mc",
            "--fpr",
        ),
        (
            "--strategy identity --steps 40 --participation poisson:q=0.1 --method mmcc --target-advantage 0.1 "
            "--delta 1e-5",
            "mmcc",
        ),
        (
            "--strategy identity --steps 40 --participation cyclic-poisson:b=2,q=0.1 --sigma 1 --method bandmf-pld "
            "--fpr 1e-6:0.5:x2",
            "--fpr",
        ),
    ],
)
def test_bad_input_is_one_line_exit_2(args, words, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "C.csv").write_text("1,0\n0.5,1\n")
    result = _run(["matrix", *args.split()])
    assert result.exit_code == 2, result.output
    assert result.stdout == ""
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: "), result.stderr
    assert words in lines[0]
