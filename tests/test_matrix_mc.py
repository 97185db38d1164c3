"""``dpcalc matrix --participation balls-in-bins:b=B``: the Monte-Carlo row of balls-in-bins participation with
correlated noise (docs/math.md §12.5) — the bins' Gram matrix against C·X formed densely, reductions to DP-SGD's
balls-in-bins accountants, the exact δ(ε) of the dominating pair for two bins by a fine grid, coverage over
seeds, and the command's rows and refusals."""

from __future__ import annotations

import csv
import io
import math

import numpy as np
import pytest
from click.testing import CliRunner

from dpcalc.cli import main
from dpcalc.engine.matrix.balls_in_bins_mc import epsilon_mc, mode_gram
from dpcalc.engine.matrix.mmcc import causal_matrix
from dpcalc.engine.matrix.strategies import strategy


def _rows(args):
    result = CliRunner().invoke(main, [*args, "-f", "csv"])
    assert result.exit_code == 0, result.output
    return list(csv.DictReader(io.StringIO(result.stdout)))


@pytest.mark.parametrize(
    "spec,n,b",
    [
        ("identity", 12, 3),
        ("sqrt", 23, 5),
        ("sqrt:bands=3", 20, 4),
        ("toeplitz:coef=1|0.6|0.3", 9, 9),
        ("blt:theta=0.9|0.5,omega=0.1|0.6", 17, 6),
        ("tree", 16, 4),
        ("tree", 13, 5),
        ("sqrt", 7, 1),
    ],
)
def test_the_bins_gram_is_that_of_c_times_the_bins(spec, n, b):
    """K = (C X)ᵀ(C X), X the steps of each bin (i ≡ s mod b), C formed densely."""
    s = strategy(spec, n)
    C = causal_matrix(s)
    X = np.zeros((n, b))
    X[np.arange(n), np.arange(n) % b] = 1.0
    M = C @ X
    assert np.allclose(mode_gram(s, b), M.T @ M, rtol=1e-13, atol=1e-12)


def test_a_file_gives_the_same_gram_as_its_toeplitz_spec(tmp_path):
    s = strategy("sqrt:bands=4", 11)
    path = tmp_path / "c.npy"
    np.save(path, causal_matrix(s))
    assert np.allclose(mode_gram(strategy(f"file:path={path}", 11), 3), mode_gram(s, 3), rtol=1e-13)


@pytest.mark.parametrize("cycles", [1, 4])
def test_identity_is_one_balls_in_bins_epoch_of_dp_sgd(cycles):
    """C = I over k full cycles of b bins: the pair is one DP-SGD balls-in-bins epoch at σ/√k (the same
    normalised Gram k/σ²·I, so the same samples and the same numbers); its estimate is near the certified PLD of
    that epoch (random allocation, docs/math.md §3.10) and its upper bound above it."""
    b, sigma, delta = 50, 1.0 * math.sqrt(cycles), 1e-4
    up, est = epsilon_mc(
        strategy("identity", b * cycles), b, sigma, delta, samples=200_000, confidence=0.95, seed=3
    )
    one_up, one_est = epsilon_mc(
        strategy("identity", b), b, 1.0, delta, samples=200_000, confidence=0.95, seed=3
    )
    assert up[0] == pytest.approx(one_up[0], rel=1e-12) and est[0] == pytest.approx(one_est[0], rel=1e-12)
    pld = _rows(
        [
            "sgd-epsilon",
            "--sampling",
            "balls-in-bins",
            "--accountant",
            "pld",
            "--steps",
            str(b),
            "--batch-size",
            "1",
            "--dataset-size",
            str(b),
            "--noise-multiplier",
            "1",
            "--delta",
            str(delta),
        ]
    )[0]
    certified = float(pld["epsilon"])
    assert up[0] >= certified * (1 - 0.01)
    assert est[0] == pytest.approx(certified, rel=0.05)


def _exact_delta(K, sigma, eps, m=700):
    """max(δ_remove, δ_add) of the two-bin pair at ε: the 2-D Gaussian integral on a grid of m² cells over
    [−9, 9]² (converged to ~1e-7 between 1000 and 3000 cells a side)."""
    a = K / sigma**2
    R = np.linalg.cholesky(a)
    z = np.linspace(-9.0, 9.0, m)
    w = np.exp(-z * z / 2) / math.sqrt(2 * math.pi) * (z[1] - z[0])
    Z = np.stack(np.meshgrid(z, z, indexing="ij"), -1).reshape(-1, 2)
    W = np.outer(w, w).ravel()
    V = Z @ R.T

    def loss(v):
        t = v - 0.5 * np.diag(a)
        top = t.max(axis=1)
        return top + np.log(np.exp(t - top[:, None]).sum(axis=1)) - math.log(2)

    rem = sum(np.sum(W * np.clip(-np.expm1(eps - loss(V + a[s])), 0, None)) for s in range(2)) / 2
    add = np.sum(W * np.clip(-np.expm1(eps + loss(V)), 0, None))
    return max(rem, add)


def _exact_epsilon(K, sigma, delta):
    lo, hi = 0.0, 20.0
    for _ in range(40):
        mid = 0.5 * (lo + hi)
        lo, hi = (lo, mid) if _exact_delta(K, sigma, mid, m=500) <= delta else (mid, hi)
    return hi


@pytest.mark.parametrize(
    "spec,n,sigma", [("sqrt", 4, 2.0), ("tree", 4, 3.0), ("blt:theta=0.9|0.5,omega=0.1|0.6", 5, 2.0)]
)
def test_two_bins_against_the_exact_privacy_profile(spec, n, sigma):
    """Two bins: the exact δ(ε) of the dominating pair (a 2-D Gaussian integral) at the reported ε is within δ
    (ε is an upper bound), and at the estimate near δ."""
    s = strategy(spec, n)
    delta = 1e-3
    up, est = epsilon_mc(s, 2, sigma, delta, samples=400_000, confidence=0.95, seed=0)
    assert _exact_delta(mode_gram(s, 2), sigma, up[0]) <= delta
    assert _exact_delta(mode_gram(s, 2), sigma, est[0]) == pytest.approx(delta, rel=0.15)


def test_coverage_over_seeds():
    """Over 60 seeds of few samples at confidence 0.8, the upper bound is below the exact ε in at most
    20 % of them (plus three standard deviations); the bound is conservative, so usually never."""
    s = strategy("sqrt", 4)
    K = mode_gram(s, 2)
    sigma, delta = 2.0, 0.02
    truth = _exact_epsilon(K, sigma, delta)
    misses = sum(
        epsilon_mc(s, 2, sigma, delta, samples=4000, confidence=0.8, seed=seed)[0][0] < truth
        for seed in range(60)
    )
    assert misses <= 0.2 * 60 + 3 * math.sqrt(60 * 0.2 * 0.8)


def test_rows_of_the_command():
    """balls-in-bins gives a gaussian row (its worst case: every step of one bin) and an mc row with its
    confidence and samples; -q prints the certified gaussian row, never the Monte Carlo one; the mc row's
    estimate is below its upper bound, both below the unamplified ε."""
    args = [
        "matrix",
        "--strategy",
        "sqrt:bands=4",
        "--steps",
        "200",
        "--participation",
        "balls-in-bins:b=50",
        "--noise-multiplier",
        "2",
        "--delta",
        "1e-4",
        "--mc-samples",
        "100000",
    ]
    rows = _rows(args)
    by = {r["method"]: r for r in rows}
    assert set(by) == {"gaussian", "mc"}
    cyc = _rows([*args[:6], "cyclic-poisson:b=50", *args[7:11]])[0]
    assert by["gaussian"]["sensitivity_bound"] == cyc["sensitivity_bound"]
    assert by["gaussian"]["epsilon"] == cyc["epsilon"]
    assert by["mc"]["confidence"] == "0.95" and by["mc"]["samples"] == "100000"
    assert float(by["mc"]["epsilon_estimate"]) < float(by["mc"]["epsilon"]) < float(by["gaussian"]["epsilon"])
    quiet = CliRunner().invoke(main, [*args, "-q"])
    assert quiet.exit_code == 0 and float(quiet.stdout) == float(by["gaussian"]["epsilon"])


@pytest.mark.parametrize(
    "extra,words",
    [
        (["--participation", "balls-in-bins:b=50", "--strategy", "toeplitz:coef=1|-0.5"], "C >= 0"),
        (["--participation", "single", "--strategy", "sqrt:bands=4"], "balls-in-bins"),
        (["--participation", "balls-in-bins:b=500", "--strategy", "sqrt:bands=4"], "more than the 200 steps"),
        (["--participation", "balls-in-bins:b=0", "--strategy", "sqrt:bands=4"], "b must be"),
        (["--participation", "balls-in-bins:b=50,q=0.1", "--strategy", "sqrt:bands=4"], "unknown key"),
        # (many samples are no longer refused: tests/test_mc_batches.py has the estimate and --max-seconds' cap)
    ],
)
def test_refusals_are_one_line(extra, words):
    result = CliRunner().invoke(
        main,
        ["matrix", "--steps", "200", "--noise-multiplier", "2", "--delta", "1e-4", "--method", "mc", *extra],
    )
    assert result.exit_code == 2
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and words in lines[0], result.output


def test_monte_carlo_options_need_the_mc_row():
    for opt in (["--mc-samples", "5000"], ["--confidence", "0.9"], ["--seed", "3"]):
        result = CliRunner().invoke(
            main,
            [
                "matrix",
                "--strategy",
                "sqrt",
                "--steps",
                "20",
                "--noise-multiplier",
                "2",
                "--delta",
                "1e-4",
                *opt,
            ],
        )
        assert result.exit_code == 2 and opt[0] in result.output and "mc row" in result.output


def test_no_inverse_question():
    result = CliRunner().invoke(
        main,
        [
            "matrix",
            "--strategy",
            "sqrt:bands=4",
            "--steps",
            "200",
            "--participation",
            "balls-in-bins:b=50",
            "--target-epsilon",
            "2",
            "--delta",
            "1e-4",
            "--method",
            "mc",
        ],
    )
    assert result.exit_code == 2 and "--target-epsilon is not offered for mc" in result.output


def test_jax_privacy_recorded_estimate():
    """jax_privacy's balls-in-bins Monte Carlo (experimental/monte_carlo at commit 8967688: 10⁶ samples a side,
    seed 0, its δ estimate inverted by bisection) for the 4-banded square root ([1, 0.5, 0.375, 0.3125]), 400
    steps, 100 bins, σ = 2: ε(1e-5) ≈ 1.5108 (an estimate, no confidence; it took 28.5 s). Ours from as many
    samples: the estimate within the two estimates' Monte Carlo error (10 %), the upper bound above it."""
    up, est = epsilon_mc(
        strategy("sqrt:bands=4", 400), 100, 2.0, 1e-5, samples=1_000_000, confidence=0.95, seed=0
    )
    assert est[0] == pytest.approx(1.5108302934394897, rel=0.1)
    assert up[0] >= 1.5108302934394897
