"""The f-DP one-run audit (Mahloujifar, Melis & Chaudhuri 2024, arXiv:2410.22235; dpcalc.engine.audit.one_run_fdp)
and ``--score-direction``: jax_privacy's published test vectors, the recursion redone in 40-digit mpmath,
monotonicity in μ, the f-DP bound above the (ε, δ) one, coverage by simulation, and the command line."""

from __future__ import annotations

import csv
import io
import json

import mpmath
import numpy as np
import pytest
from scipy import stats

from dpcalc.engine.audit import gdp, one_run, one_run_fdp


def _deterministic_normal(shift, n):
    """n scores at the normal quantiles (j + 1/2)/n, shifted by ``shift`` (jax_privacy's test scores)."""
    return stats.norm.ppf((np.arange(n) + 0.5) / n) + shift


def _upper_hull(x, y):
    """Indices of the points (sorted by x) on the upper concave hull (a monotone chain)."""
    keep: list[int] = []
    for j in range(len(x)):
        while len(keep) >= 2:
            a, b = keep[-2], keep[-1]
            if (x[b] - x[a]) * (y[j] - y[a]) - (y[b] - y[a]) * (x[j] - x[a]) >= 0:
                keep.pop()
            else:
                break
        keep.append(j)
    return np.array(keep)


@pytest.mark.parametrize("shift,expected", [(1, 2.164749), (2, 4.7218075), (4, 9.133752)])
def test_jax_privacy_published_vectors(shift, expected):
    """jax_privacy tests/auditing_test.py, test_epsilon_one_run_close (use_fdp): 10 000 in- and 10 000
    out-canary scores at normal quantiles, in shifted by μ; significance 0.05 split over the thresholds
    of the ROC's upper hull (Bonferroni), δ = 1e-6; its rtol is 1e-5.  Every threshold t on the hull is
    a one-run audit with m = 20 000 canaries, k = #(score >= t) guesses "in" and v = #(in-canaries among
    them) right; the answer is the largest ε over them, and ours must not exceed the published value."""
    n = 10_000
    out_s, in_s = _deterministic_normal(0.0, n), _deterministic_normal(shift, n)
    t = np.concatenate([np.union1d(in_s, out_s), [np.inf]])
    fn = np.searchsorted(np.sort(in_s), t, side="left")
    tn = np.searchsorted(np.sort(out_s), t, side="left")
    hull = _upper_hull(fn.astype(float), tn.astype(float))
    tp, fp = n - fn[hull], n - tn[hull]
    k = tp + fp
    useful = (k > 0) & (2 * tp > k)  # precision <= 1/2 proves nothing
    mu = one_run_fdp.mu_lower(2 * n, k[useful], tp[useful], 1 - 0.05 / hull.size)
    eps = float(gdp.epsilon_gdp(mu.max(), 1e-6))
    assert eps == pytest.approx(expected, rel=1e-5)
    assert eps <= expected


def _mp_rejects(m, k, v, confidence, mu):
    """The paper's recursion (module docstring of one_run_fdp) at 40 digits, run over all v steps."""
    with mpmath.workdps(40):
        tau = 1 - mpmath.mpf(confidence)
        r, h = tau * v / m, tau * (k - v) / m
        mu = mpmath.mpf(mu)
        for i in range(v - 1, -1, -1):
            g = mpmath.ncdf(mpmath.sqrt(2) * mpmath.erfinv(2 * r - 1) - mu) if r > 0 else mpmath.mpf(0)
            h_new = max(h, g)
            r = r + mpmath.mpf(i) / (k - i) * (h_new - h)
            h = h_new
        return r + h > mpmath.mpf(k) / m


@pytest.mark.parametrize(
    "m,k,v,c",
    [(1000, 100, 75, 0.95), (1000, 200, 190, 0.95), (20000, 406, 379, 1 - 0.05 / 386), (50, 20, 20, 0.9)],
)
def test_reported_mu_is_rejected_in_40_digits_and_tight(m, k, v, c):
    mu = float(one_run_fdp.mu_lower(m, k, v, c))
    assert mu > 0
    assert _mp_rejects(m, k, v, c, mu)  # a sound lower bound: the exact recursion rejects it
    above = mu * (1 + 1e-6) + 1e-9
    assert not _mp_rejects(m, k, v, c, above)  # and tight: a hair above is not rejected
    assert not one_run_fdp.rejects(m, k, v, c, above)


def test_rejection_is_monotone_in_mu():
    rng = np.random.default_rng(3)
    m = rng.integers(10, 3000, 40)
    k = (m * rng.uniform(0.05, 1, 40)).astype(int) + 1
    v = np.minimum(k, (k * rng.uniform(0.5, 1, 40)).astype(int))
    grid = np.linspace(0, 6, 241)
    rej = one_run_fdp.rejects(m[:, None], k[:, None], v[:, None], 0.95, grid[None, :])
    assert np.all(np.diff(rej.astype(int), axis=1) <= 0)  # rejected, then never again
    mu = one_run_fdp.mu_lower(m, k, v, 0.95)
    first_kept = np.where(rej.all(axis=1), grid.size, np.argmin(rej, axis=1))
    # the bound lies between the last rejected grid point and the first one that is not
    below = np.where(first_kept > 0, grid[np.maximum(first_kept - 1, 0)], 0.0)
    above = np.where(first_kept < grid.size, grid[np.minimum(first_kept, grid.size - 1)], np.inf)
    assert np.all((below <= mu) & (mu <= above))
    assert np.all(mu[first_kept == 0] == 0.0)


@pytest.mark.parametrize(
    "m,k,v",
    [(1000, 100, 75), (1000, 200, 190), (10_000, 1000, 900), (10_000, 10_000, 10_000), (1000, 10, 10)],
)
def test_fdp_bound_is_above_the_eps_delta_bound(m, k, v):
    """With many right guesses (the paper's regime), the Gaussian f-DP audit's ε exceeds the (ε, δ) one
    of Steinke, Nasr & Jagielski from the same canaries."""
    delta = 1e-5
    mu = one_run_fdp.mu_lower(m, k, v, 0.95)
    assert gdp.epsilon_gdp(mu, delta) > one_run.epsilon_lower(m, k, v, delta, 0.95)


@pytest.mark.parametrize("two_sided", [False, True])
def test_coverage_by_simulation(two_sided):
    """A Gaussian mechanism with known μ (canary i's score ~ N(μ·s_i, 1), s_i ∈ {0, 1} at random: the
    release is μ-GDP in each canary); guess "in" for the k highest scores (and "out" for the k lowest
    if two-sided).  The bound exceeds μ in at most 5% of trials, plus slack."""
    rng = np.random.default_rng(11)
    trials, m, k, mu_true = 200, 1000, 100, 2.0
    s = rng.integers(0, 2, (trials, m))
    x = rng.normal(mu_true * s, 1.0)
    order = np.argsort(-x, axis=1)
    top = np.take_along_axis(s, order[:, :k], axis=1)
    v = top.sum(axis=1)
    guesses = k
    if two_sided:
        bottom = np.take_along_axis(s, order[:, -k:], axis=1)
        v = v + (1 - bottom).sum(axis=1)
        guesses = 2 * k
    mu = one_run_fdp.mu_lower(m, guesses, v, 0.95)
    exceed = int(np.sum(mu > mu_true))
    assert exceed <= 0.05 * trials + 10
    assert np.median(mu) > 0.5  # and the audit sees something


# -- command line -----------------------------------------------------------------------------------
def _rows(result):
    return list(csv.DictReader(io.StringIO(result.stdout)))


def test_one_run_rows_carry_the_fdp_bound(invoke):
    args = ["audit", "--canaries", "1000", "--guesses", "100", "--correct", "75", "--delta", "1e-5,1e-6"]
    r = invoke([*args, "-f", "csv"])
    assert r.exit_code == 0, r.stderr
    rows = _rows(r)
    mu = float(one_run_fdp.mu_lower(1000, 100, 75, 0.95))
    for row, delta in zip(rows, (1e-5, 1e-6)):
        assert float(row["mu_lower"]) == mu
        assert float(row["epsilon_gdp"]) == float(gdp.epsilon_gdp(mu, delta))
        assert float(row["epsilon_gdp"]) > float(row["epsilon_lower"])
    assert "2410.22235" in r.stderr and "Gaussian" in r.stderr


def _scores_file(tmp_path, sign):
    rng = np.random.default_rng(5)
    member = rng.integers(0, 2, 300)
    score = rng.normal(1.5 * member, 1.0).round(6) + 0.25  # no score is 0: -0.0 reads as 0.0
    path = tmp_path / f"scores{sign}.csv"
    path.write_text(
        "member,score\n" + "".join(f"{a},{sign * b!r}\n" for a, b in zip(member.tolist(), score.tolist()))
    )
    return str(path)


@pytest.mark.parametrize("fmt", ["csv", "json"])
def test_score_direction_lower_on_negated_scores_gives_the_same_audit(invoke, tmp_path, fmt):
    base = ["--delta", "1e-5", "--seed", "3", "-f", fmt]
    up = invoke(["audit", "--scores", _scores_file(tmp_path, 1), *base])
    down = invoke(["audit", "--scores", _scores_file(tmp_path, -1), "--score-direction", "lower", *base])
    default = invoke(["audit", "--scores", _scores_file(tmp_path, 1), "--score-direction", "higher", *base])
    assert up.exit_code == down.exit_code == default.exit_code == 0, down.stderr
    assert default.stdout == up.stdout
    # identical but for the threshold, which is in the user's own scores: t for ">= t", −t for "<= −t"
    a = _rows(up) if fmt == "csv" else json.loads(up.stdout)
    b = _rows(down) if fmt == "csv" else json.loads(down.stdout)
    assert len(a) == len(b) == 1
    ta, tb = a[0].pop("threshold"), b[0].pop("threshold")
    assert float(ta) == -float(tb)
    assert a == b
    assert "member if score <= threshold" in down.stderr and "member if score >= threshold" in up.stderr


@pytest.mark.parametrize(
    "args,needle",
    [
        (
            ["--canaries", "10", "--guesses", "5", "--correct", "5", "--score-direction", "lower"],
            "--score-direction",
        ),
        (
            ["--tp", "1", "--fp", "1", "--fn", "1", "--tn", "1", "--score-direction", "higher"],
            "--score-direction",
        ),
        (["--scores", "x.csv", "--score-direction", "down"], "--score-direction"),
    ],
)
def test_score_direction_errors_are_one_line(invoke, args, needle):
    r = invoke(["audit", *args, "--delta", "1e-5"])
    assert r.exit_code == 2
    lines = [ln for ln in r.stderr.splitlines() if ln.strip()]
    assert any(needle in ln for ln in lines)
    assert len([ln for ln in lines if ln.startswith("Error")]) == 1
