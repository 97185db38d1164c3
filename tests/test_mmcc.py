"""MMCC (Choquette-Choo, Ganesh, Steinke & Thakurta 2024, arXiv:2310.15526) as the ``mmcc`` row of ``dpcalc
matrix``: the reductions (C = I is DP-SGD's PLD accountant; p = 1 is the unamplified Gaussian), never above the
unamplified row, soundness against the exact privacy profile of the run for n <= 4, monotonicity, refusals."""

from __future__ import annotations

import csv
import io
import itertools
import math

import numpy as np
import pytest
from click.testing import CliRunner
from scipy import special

from dpcalc.cli import main
from dpcalc.engine.matrix import mmcc, mmcc_posterior, mmcc_row_laws
from dpcalc.engine.matrix.strategies import sqrt_coefficients, strategy, tree_gram
from dpcalc.engine.mechanisms.gaussian_exact import eps_gaussian


def _run(args):
    return CliRunner().invoke(main, args)


def _rows(args):
    result = _run([*args, "-f", "csv"])
    assert result.exit_code == 0, result.output
    return list(csv.DictReader(io.StringIO(result.stdout)))


def _prefix(n):
    return np.tril(np.ones((n, n)))


def _banded_sqrt(n, bands):
    c = sqrt_coefficients(bands)
    i = np.arange(n)
    d = i[:, None] - i[None, :]
    return np.where((d >= 0) & (d < bands), c[np.clip(d, 0, bands - 1)], 0.0)


def exact_delta(C, p, sigma, eps, nodes=64):
    """δ(ε) of P = Σ_b p^|b|(1−p)^{n−|b|} N(C b, σ² I) against Q = N(0, σ² I), the larger direction.

    The privacy loss depends on x only through u = Cᵀx, and u = σ F z with G = CᵀC = F Fᵀ (Cholesky, F lower
    triangular) and z ~ N(0, I_n) under Q, z ~ Σ_b w_b N(μ_b, I_n), μ_b = Fᵀb/σ under P.  The last coordinate of
    μ_b is F_nn b_n / σ (F lower triangular), so along it the likelihood ratio is A0 + A1 e^{ct}, monotone: both
    hockey-stick integrals over that coordinate are closed forms (one root, Gaussian integrals of exponentials).
    The remaining n − 1 coordinates are integrated by tensor Gauss–Hermite quadrature (smooth integrand)."""
    n = C.shape[1]
    F = np.linalg.cholesky(C.T @ C)
    bs = np.array(list(itertools.product([0, 1], repeat=n)), float)
    w = p ** bs.sum(1) * (1 - p) ** (n - bs.sum(1))
    mu = bs @ F / sigma  # μ_b = Fᵀ b / σ, one row per b
    c = F[-1, -1] / sigma
    alpha = math.exp(eps)
    if n > 1:
        x, gw = np.polynomial.hermite_e.hermegauss(nodes)
        gw = gw / math.sqrt(2 * math.pi)
        grid = np.array(list(itertools.product(x, repeat=n - 1)))
        weight = np.prod(np.array(list(itertools.product(gw, repeat=n - 1))), axis=1)
    else:
        grid, weight = np.zeros((1, 0)), np.ones(1)
    # a_b(z') = w_b exp(<μ_b', z'> − ‖μ_b‖²/2)
    a = w[None, :] * np.exp(grid @ mu[:, :-1].T - 0.5 * np.sum(mu**2, axis=1)[None, :])
    last = bs[:, -1] == 1
    A0, A1 = a[:, ~last].sum(1), a[:, last].sum(1)
    g = math.exp(c * c / 2)
    with np.errstate(divide="ignore", invalid="ignore"):
        t = np.where(A0 < alpha, np.log((alpha - A0) / A1) / c, -np.inf)
        rem = A0 * special.ndtr(-t) + A1 * g * special.ndtr(c - t) - alpha * special.ndtr(-t)
        t2 = np.where(A0 < 1 / alpha, np.log((1 / alpha - A0) / A1) / c, -np.inf)
        add = special.ndtr(t2) - alpha * (A0 * special.ndtr(t2) + A1 * g * special.ndtr(t2 - c))
    return max(float(np.dot(weight, np.maximum(rem, 0))), float(np.dot(weight, np.maximum(add, 0))))


def test_exact_delta_reduces_to_the_subsampled_gaussian():
    # n = 1: P = (1−p)N(0, σ²) + p N(c, σ²), whose δ(ε) is known in closed form (remove direction dominates)
    c, p, sigma, eps = 2.0, 0.1, 3.0, 0.5
    r = c / sigma
    a = math.log(1 + (math.exp(eps) - 1) / p)  # the loss threshold of the pair N(r,1) vs N(0,1)
    t = a / r + r / 2
    rem = p * (special.ndtr(r - t) - math.exp(a) * special.ndtr(-t))
    assert exact_delta(np.array([[c]]), p, sigma, eps) == pytest.approx(rem, rel=1e-9)


def test_identity_is_dp_sgd_pld_exactly():
    q, sigma, steps, delta = 0.01, 1.0, 100, 1e-5
    ours = _rows(
        [
            "matrix",
            "--strategy",
            "identity",
            "--steps",
            str(steps),
            "--participation",
            f"poisson:q={q}",
            "--noise-multiplier",
            str(sigma),
            "--delta",
            str(delta),
            "--method",
            "mmcc",
        ]
    )[0]
    ref = _rows(
        [
            "sgd-epsilon",
            "--sample-rate",
            str(q),
            "--noise-multiplier",
            str(sigma),
            "--steps",
            str(steps),
            "--delta",
            str(delta),
            "--accountant",
            "pld",
        ]
    )[0]
    assert "δ_tail = 0 for 0" in ours["note"]  # diagonal C: no pair needs a tail event
    lo, up = float(ours["epsilon_lower"]), float(ours["epsilon"])
    assert lo <= float(ref["epsilon"]) <= up
    assert up == float(ref["epsilon"]) and lo == float(
        ref["epsilon_lower"]
    )  # the same composition, bit for bit


@pytest.mark.parametrize("text,n,sigma", [("sqrt:bands=4", 12, 3.0), ("tree", 8, 4.0), ("sqrt", 6, 2.0)])
def test_p_one_is_the_unamplified_gaussian(text, n, sigma):
    s = strategy(text, n)
    C = mmcc.causal_matrix(s)
    r = mmcc.mmcc_epsilon(C, 1.0, sigma, 1e-6)[0]
    assert r.pairs == 0 and r.tail_delta == 0 and r.max_p_tilde == 1.0
    sens = float(np.linalg.norm(C.sum(axis=1)))
    exact = float(eps_gaussian(1e-6, sens / sigma))
    assert (
        exact <= r.upper <= exact * (1 + 1e-9)
    )  # never below; the PLD's larger bound replaced by the exact one
    # the PLD of the rows alone (the p = 1 laws: one Gaussian per row) brackets it within its discretisation
    from dpcalc.engine.composition.pld import compose_pld

    laws = mmcc_row_laws.row_laws(C, np.where(C != 0, 1.0, 0.0))
    b = compose_pld(mmcc.specs_of(laws, sigma), delta=1e-6)
    assert float(b.lower) <= exact <= float(b.upper) <= exact * 1.01


def test_p_one_row_equals_the_gaussian_row():
    rows = _rows(
        [
            "matrix",
            "--strategy",
            "sqrt:bands=3",
            "--steps",
            "20",
            "--participation",
            "poisson:q=1",
            "--noise-multiplier",
            "5",
            "--delta",
            "1e-6",
        ]
    )
    by = {r["method"]: r for r in rows}
    assert set(by) == {"gaussian", "mmcc"}
    assert float(by["mmcc"]["epsilon"]) == float(by["gaussian"]["epsilon"])


@pytest.mark.parametrize("text", ["sqrt:bands=4", "tree", "toeplitz:coef=1|0.5|0.5"])
@pytest.mark.parametrize("q,sigma", [(0.05, 2.0), (0.5, 1.0), (0.9, 3.0)])
def test_never_above_the_unamplified_row(text, q, sigma):
    rows = _rows(
        [
            "matrix",
            "--strategy",
            text,
            "--steps",
            "16",
            "--participation",
            f"poisson:q={q}",
            "--noise-multiplier",
            str(sigma),
            "--delta",
            "1e-5",
        ]
    )
    by = {r["method"]: r for r in rows}
    assert float(by["mmcc"]["epsilon"]) <= float(by["gaussian"]["epsilon"])
    if (
        q == 0.05 and text != "tree"
    ):  # and well below it where amplification is strong (the tree needs more σ)
        assert float(by["mmcc"]["epsilon"]) < 0.5 * float(by["gaussian"]["epsilon"])


SOUND = [
    ("prefix 2", _prefix(2), 0.1, 1.0, 1e-3),
    ("prefix 2", _prefix(2), 0.5, 1.0, 1e-2),
    ("prefix 2", _prefix(2), 0.2, 8.0, 5e-3),
    ("prefix 2", _prefix(2), 0.9, 2.0, 1e-3),
    ("prefix 3", _prefix(3), 0.1, 3.0, 1e-5),
    ("prefix 4", _prefix(4), 0.2, 2.0, 1e-4),
    ("banded sqrt 4", _banded_sqrt(4, 2), 0.1, 1.5, 1e-4),
    ("banded sqrt 4", _banded_sqrt(4, 3), 0.3, 2.0, 1e-3),
    ("tree 2", mmcc.tree_matrix(2), 0.3, 1.5, 1e-3),
    ("tree 4", mmcc.tree_matrix(4), 0.1, 2.0, 1e-4),
]


@pytest.mark.parametrize("name,C,p,sigma,delta", SOUND, ids=[f"{s[0]}-p{s[2]}-s{s[3]}" for s in SOUND])
def test_sound_against_the_exact_privacy_profile(name, C, p, sigma, delta):
    r = mmcc.mmcc_epsilon(C, p, sigma, delta)[0]
    assert 0 < r.upper < math.inf
    nodes = (40, 64) if C.shape[1] == 4 else (64, 96)
    coarse, fine = (exact_delta(C, p, sigma, r.upper, nodes=k) for k in nodes)
    err = abs(fine - coarse)
    assert err <= 1e-2 * fine  # the quadrature has converged (its error taken as 10× the last change)
    assert fine + 10 * err <= delta, (name, fine, delta)
    # and never above the unamplified Gaussian (all p̃ = 1)
    unamp = float(eps_gaussian(delta, float(np.linalg.norm(C.sum(axis=1))) / sigma))
    assert r.upper <= unamp * (1 + 1e-9)  # (the engine rounds ‖C·1‖ up by 1e-12)


def test_p_tilde_matrix_and_tree_rows():
    for n in (1, 2, 5, 8, 13):
        C = mmcc.tree_matrix(n)
        assert np.array_equal(C.T @ C, tree_gram(n)[0])
        ends = np.array([np.flatnonzero(row)[-1] for row in C])
        assert np.all(np.diff(ends) >= 0)  # release order
    C = _prefix(3)
    pairs = mmcc_posterior.find_pairs(C, 0.1)
    assert sorted(zip(pairs.rows.tolist(), pairs.cols.tolist())) == [(1, 0), (2, 0), (2, 1)]
    pt = mmcc_posterior.p_tilde_matrix(
        C, pairs, mmcc_posterior.posterior_bounds(pairs, 0.1, 3.0, 1e-3 / 3), 0.1
    )
    assert np.all(np.diag(pt) == 0.1) and np.all(np.triu(pt, 1) == 0)
    assert np.all(pt[np.tril_indices(3, -1)] > 0.1) and np.all(pt <= 1)
    # p̃ falls toward p as σ grows (the posterior learns less)
    prev = 1.0
    for sigma in (2.0, 4.0, 8.0, 32.0):
        v = float(
            mmcc_posterior.posterior_bounds(mmcc_posterior.find_pairs(_prefix(2), 0.2), 0.2, sigma, 1e-6)[0]
        )
        assert 0.2 < v < prev
        prev = v


def test_laws_dominate_and_merge_soundly():
    # a row law is stochastically at least the exact sum of Bernoullis it stands for
    c = np.array([1.0, 0.7, 0.3, 0.123])
    q = np.array([0.5, 0.2, 0.9, 0.05])
    v, m = mmcc_row_laws._row_law(c, q)
    exact = {}
    for b in itertools.product([0, 1], repeat=4):
        key = float(np.dot(b, c))
        exact[key] = exact.get(key, 0.0) + float(np.prod(np.where(b, q, 1 - q)))
    for x in list(exact) + v.tolist():
        ref = sum(w for k, w in exact.items() if k <= x)
        got = float(m[v <= x].sum())
        assert got <= ref + 1e-15
    # merged laws: the envelope's distribution function is below each
    laws = [
        (np.array([0.0, 1.0]), np.array([0.6, 0.4])),
        (np.array([0.0, 0.5, 2.0]), np.array([0.5, 0.4, 0.1])),
    ]
    ev, em = mmcc_row_laws._envelope(laws)
    for x in (0.0, 0.5, 1.0, 2.0):
        assert float(em[ev <= x].sum()) <= min(float(mw[lv <= x].sum()) for lv, mw in laws) + 1e-15


def test_monotone_in_sigma_and_p():
    C = mmcc.causal_matrix(strategy("sqrt:bands=3", 10))
    by_sigma = [r.upper for r in mmcc.mmcc_epsilon(C, 0.1, [1.0, 1.5, 2.0, 3.0], 1e-5)]
    assert all(a > b for a, b in zip(by_sigma, by_sigma[1:]))
    by_p = [mmcc.mmcc_epsilon(C, p, 2.0, 1e-5)[0].upper for p in (0.01, 0.05, 0.2, 0.5)]
    assert all(a < b for a, b in zip(by_p, by_p[1:]))


@pytest.mark.parametrize(
    "args,words",
    [
        (["--strategy", "toeplitz:coef=1|-0.5", "--steps", "10"], "mmcc needs C >= 0"),
        (["--strategy", "sqrt", "--steps", "4000", "--noise-multiplier", "0.5"], "above the limit"),
        (["--strategy", "file:path=/nonexistent.npy", "--target-epsilon", "1"], "give --steps"),
    ],
)
def test_refusals_one_line_exit_2(args, words):
    full = ["matrix", *args, "--participation", "poisson:q=0.1", "--delta", "1e-6", "--method", "mmcc"]
    if "--noise-multiplier" not in args:
        full += ["--noise-multiplier", "2"]
    if "--target-epsilon" in args and "--steps" in args:
        full.remove("--noise-multiplier")
        full.remove("2")
    result = _run(full)
    assert result.exit_code == 2, result.output
    lines = result.output.strip().split("\n")
    assert len(lines) == 1 and words in lines[0], result.output


def test_other_patterns_refused_and_rows_unchanged():
    result = _run(
        [
            "matrix",
            "--strategy",
            "identity",
            "--steps",
            "10",
            "--participation",
            "single",
            "--noise-multiplier",
            "2",
            "--delta",
            "1e-6",
            "--method",
            "mmcc",
        ]
    )
    assert result.exit_code == 2 and "poisson:q=Q" in result.output
    # with --method all, a pattern mmcc does not apply to has no mmcc row
    rows = _rows(
        [
            "matrix",
            "--strategy",
            "sqrt:bands=2",
            "--steps",
            "10",
            "--participation",
            "cyclic-poisson:b=2,q=0.1",
            "--noise-multiplier",
            "2",
            "--delta",
            "1e-6",
        ]
    )
    assert [r["method"] for r in rows] == ["gaussian", "bandmf-rdp", "bandmf-pld"]
    for bad in ("poisson", "poisson:q=0", "poisson:q=2", "poisson:b=2,q=0.1"):
        result = _run(
            [
                "matrix",
                "--strategy",
                "identity",
                "--steps",
                "10",
                "--participation",
                bad,
                "--noise-multiplier",
                "2",
                "--delta",
                "1e-6",
            ]
        )
        assert result.exit_code == 2 and "--participation" in result.output, (bad, result.output)


def _mmcc_eps(spec, n, q, sigma, delta, target):
    """MMCC computed afresh as the searches compute it: the bracket 0.5 % of the target wide."""
    s = strategy(spec, n)
    (ans,) = mmcc.mmcc_epsilon(mmcc.causal_matrix(s), q, sigma, delta, label=spec, eps_error=0.005 * target)
    return ans.upper


def test_noise_for_a_target_round_trip():
    """--target-epsilon: the σ found meets the target by MMCC computed afresh, and σ/(1 + 1e-4) misses it; C = I
    agrees with sgd-epsilon's pld calibration (within the two searches' tolerances); a larger target needs
    less noise."""
    rows = _rows(
        [
            "matrix", "--strategy", "identity", "--strategy", "sqrt:bands=4", "--steps", "60",
            "--participation", "poisson:q=0.05", "--target-epsilon", "1.5,3", "--delta", "1e-6", "--method", "mmcc",
        ]
    )  # fmt: skip
    assert len(rows) == 4
    for r in rows:
        sigma, target = float(r["noise_multiplier"]), float(r["target_epsilon"])
        assert float(r["epsilon"]) <= target
        if r["strategy"] == "identity":  # MMCC's laws are the run's (DP-SGD): its bracket has a lower end
            assert float(r["epsilon_lower"]) <= float(r["epsilon"])
        else:  # the bracket is of MMCC's dominating construction: no lower end or estimate for the run
            assert r["epsilon_lower"] == r["epsilon_estimate"] == ""
        assert _mmcc_eps(r["strategy"], 60, 0.05, sigma, 1e-6, target) == float(r["epsilon"]) <= target
        assert _mmcc_eps(r["strategy"], 60, 0.05, sigma / (1 + 1e-4), 1e-6, target) > target
        assert "computed and above the target" in r["note"]
    by = {(r["strategy"], r["target_epsilon"]): float(r["noise_multiplier"]) for r in rows}
    assert (
        by[("identity", "3.0")] < by[("identity", "1.5")]
        and by[("sqrt:bands=4", "3.0")] < by[("sqrt:bands=4", "1.5")]
    )
    assert by[("identity", "1.5")] < by[("sqrt:bands=4", "1.5")]
    sgd = _run(
        [
            "sgd-epsilon", "--sample-rate", "0.05", "--steps", "60", "--target-epsilon", "1.5", "--delta", "1e-6",
            "--accountant", "pld", "-q",
        ]
    )  # fmt: skip
    assert sgd.exit_code == 0
    assert by[("identity", "1.5")] == pytest.approx(float(sgd.stdout), rel=2e-3)


def test_most_steps_for_a_target():
    """--target-epsilon with --noise-multiplier and no --steps: the n found meets the target, n + 1 misses it
    (MMCC computed afresh at both)."""
    rows = _rows(
        [
            "matrix", "--strategy", "sqrt:bands=4", "--participation", "poisson:q=0.01", "--noise-multiplier", "3",
            "--target-epsilon", "1", "--delta", "1e-6", "--method", "mmcc",
        ]
    )  # fmt: skip
    (r,) = rows
    n = int(r["steps"])
    assert 10 < n < 2048
    assert _mmcc_eps("sqrt:bands=4", n, 0.01, 3.0, 1e-6, 1.0) == float(r["epsilon"]) <= 1.0
    assert _mmcc_eps("sqrt:bands=4", n + 1, 0.01, 3.0, 1e-6, 1.0) > 1.0


@pytest.mark.parametrize(
    "extra,words",
    [
        (
            ["--steps", "50", "--delta", "1e-31", "--target-epsilon", "1"],
            "--delta: mmcc's searches take δ >= 1e-30",
        ),
        (["--steps", "50", "--delta", "1e-6", "--target-epsilon", "0.001"], "target of at least 0.01"),
        (
            ["--delta", "1e-31", "--target-epsilon", "1", "--noise-multiplier", "2"],
            "--delta: mmcc's searches",
        ),
    ],
)
def test_search_refusals_are_one_line(extra, words):
    result = _run(
        [
            "matrix",
            "--strategy",
            "sqrt:bands=4",
            "--participation",
            "poisson:q=0.05",
            "--method",
            "mmcc",
            *extra,
        ]
    )
    assert result.exit_code == 2, result.output
    lines = result.output.strip().split("\n")
    assert len(lines) == 1 and words in lines[0], result.output
