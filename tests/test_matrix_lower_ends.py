"""Issue 43: a ``*_lower`` column is a lower bound for the run the row describes, an ``*_estimate`` an estimate of
its ε.  The mmcc rows' PLD bracket is of MMCC's dominating construction, so they carry no lower end or estimate
(unless C has one entry per row and column and the laws are exact: DP-SGD); the bandmf-pld rows' bracket is now
of the run itself — per partition, the composition of Poisson-subsampled Gaussians at σ/‖C e_j‖ over its steps
(docs/math.md §12.3, §12.4).  Each checked against a reference computed here another way."""

from __future__ import annotations

import csv
import io
import itertools
import math

import numpy as np
import pytest
from click.testing import CliRunner

from dpcalc.cli import main
from dpcalc.engine.dpsgd.pld_accounting import sgd_epsilon_pld
from dpcalc.engine.matrix import bandmf, mmcc
from dpcalc.engine.matrix.sensitivity import Participation
from dpcalc.engine.matrix.strategies import strategy


def _rows(args):
    r = CliRunner().invoke(main, [*args, "-f", "csv"], catch_exceptions=False)
    assert r.exit_code == 0, r.output
    return list(csv.DictReader(io.StringIO(r.stdout)))


def _toeplitz(coef, n):
    C = np.zeros((n, n))
    for k, c in enumerate(coef[:n]):
        C += c * np.eye(n, k=-k)
    return C


# ---------------------------------------------------------------------------------------------------- mmcc


def _bernstein(x: np.ndarray, alpha: float) -> tuple[float, float]:
    """A two-sided confidence interval for the mean of [0, 1]-valued samples at level 1 − alpha (the empirical
    Bernstein bound, Maurer & Pontil 2009, Thm 4, each side at alpha/2)."""
    n = x.size
    log_term = math.log(4 / alpha)
    half = math.sqrt(2 * float(np.var(x, ddof=1)) * log_term / n) + 7 * log_term / (3 * (n - 1))
    return float(np.mean(x)) - half, float(np.mean(x)) + half


def _exact_pair_epsilon(C, q, sigma, delta, samples=200_000, seed=0):
    """(lower, upper): a confidence interval (level 1 − 1e-6 over the grid) for ε(δ) of the exact pair
    P = Σ_b q^|b|(1−q)^{m−|b|} N(C b, σ²I) against Q = N(0, σ²I), b over every 0/1 vector of the m columns of
    C (n × m) — the run under Poisson sampling of those steps in its worst case (every other gradient zero, one
    unit direction) — by Monte Carlo: δ_remove(ε) = E_P[(1 − e^{ε−ℓ})_+], δ_add(ε) = E_Q[(1 − e^{ε+ℓ})_+],
    ℓ = log dP/dQ."""
    n, m = C.shape
    bs = np.array(list(itertools.product((0, 1), repeat=m)), float)  # 2^m × m
    logw = bs.sum(axis=1) * math.log(q) + (m - bs.sum(axis=1)) * math.log1p(-q)
    means = bs @ C.T  # 2^n × n: C b
    half_sq = 0.5 * np.sum(means**2, axis=1)
    rng = np.random.default_rng(seed)

    def loss(x):
        a = logw + (x @ means.T - half_sq) / sigma**2
        top = a.max(axis=1, keepdims=True)
        return (top + np.log(np.sum(np.exp(a - top), axis=1, keepdims=True)))[:, 0]

    pick = rng.random((samples, m)) < q
    x_p = pick.astype(float) @ C.T + sigma * rng.standard_normal((samples, n))
    x_q = sigma * rng.standard_normal((samples, n))
    l_p, l_q = loss(x_p), loss(x_q)
    grid = np.linspace(0.0, 8.0, 161)
    alpha = 1e-6 / (2 * grid.size)
    lo, hi = 0.0, math.inf
    for e in grid:
        rem = _bernstein(np.maximum(0.0, -np.expm1(e - l_p)), alpha)
        add = _bernstein(np.maximum(0.0, -np.expm1(e + l_q)), alpha)
        if max(rem[0], add[0]) > delta:  # δ(e) > δ surely: ε > e
            lo = max(lo, float(e))
        if max(rem[1], add[1]) <= delta:  # δ(e) <= δ surely: ε <= e
            hi = min(hi, float(e))
    return lo, hi


MMCC_CASES = [
    # the example: MMCC 6.944, its construction's bracket [6.918, 6.944], the exact pair ≈ 2.67
    ("sqrt", None, 4, 0.1, 1.0, 1e-3),
    ("toeplitz:coef=1|0.5|0.25", None, 3, 0.2, 1.0, 1e-2),
    ("file", [[1.0, 0.0, 0.0], [0.5, 1.0, 0.0], [0.2, 0.7, 0.8]], 3, 0.3, 1.5, 1e-2),
]


@pytest.mark.parametrize("spec,matrix,n,q,sigma,delta", MMCC_CASES)
def test_mmcc_rows_have_no_lower_end_and_bound_the_exact_pair(spec, matrix, n, q, sigma, delta, tmp_path):
    if matrix is not None:
        path = tmp_path / "C.csv"
        path.write_text("\n".join(",".join(str(v) for v in row) for row in matrix))
        spec, C = f"file:path={path}", np.array(matrix)
    else:
        coef = strategy(spec, n).coef
        C = _toeplitz(coef, n)
    (row,) = _rows(
        [
            "matrix", "--strategy", spec, "--steps", str(n), "--participation", f"poisson:q={q}",
            "--noise-multiplier", str(sigma), "--delta", str(delta), "--method", "mmcc",
        ]
    )  # fmt: skip
    lo, hi = _exact_pair_epsilon(C, q, sigma, delta)
    assert 0 < lo < hi < math.inf
    assert float(row["epsilon"]) >= lo  # the certified upper bound is above the run's ε
    assert row["epsilon_lower"] == row["epsilon_estimate"] == ""
    assert "dominating construction" in row["note"] and "no lower end or estimate for the run" in row["note"]
    # why: the construction's own lower end lies above the run's ε here (it is no lower bound of the run)
    (ans,) = mmcc.mmcc_epsilon(C, q, sigma, delta)
    # the example: 6.918 against ≈ 2.67 (about [2.3, 3.15] here)
    assert not ans.of_run and ans.lower > hi


def test_mmcc_keeps_the_bracket_where_its_laws_are_the_run():
    """C = I: MMCC's laws are DP-SGD's, its bracket the run's (sgd-epsilon's, bit for bit); a scaled identity
    has its entries rounded up in the laws (a dominating law, not the run's): no lower end."""
    (ident,) = _rows(
        [
            "matrix", "--strategy", "identity", "--steps", "20", "--participation", "poisson:q=0.05",
            "--noise-multiplier", "1.2", "--delta", "1e-5", "--method", "mmcc",
        ]
    )  # fmt: skip
    (sgd,) = _rows(
        [
            "sgd-epsilon", "--sample-rate", "0.05", "--noise-multiplier", "1.2", "--steps", "20", "--delta", "1e-5",
            "--accountant", "pld",
        ]
    )  # fmt: skip
    assert (ident["epsilon"], ident["epsilon_lower"], ident["epsilon_estimate"]) == (
        sgd["epsilon"],
        sgd["epsilon_lower"],
        sgd["epsilon_estimate"],
    )
    (scaled,) = _rows(
        [
            "matrix", "--strategy", "toeplitz:coef=0.7", "--steps", "20", "--participation", "poisson:q=0.05",
            "--noise-multiplier", "1.2", "--delta", "1e-5", "--method", "mmcc",
        ]
    )  # fmt: skip
    assert scaled["epsilon_lower"] == scaled["epsilon_estimate"] == ""


def test_mmcc_rows_plot_quiet_and_budget_with_empty_lower_cells(tmp_path):
    """The plot's band (epsilon_lower, epsilon) with empty lower cells, -q and a budget check still work."""
    pytest.importorskip("matplotlib")
    args = [
        "matrix", "--strategy", "sqrt:bands=2", "--steps", "6", "--participation", "poisson:q=0.1",
        "--noise-multiplier", "1,2", "--delta", "1e-3",
    ]  # fmt: skip
    out = tmp_path / "m.png"
    r = CliRunner().invoke(main, [*args, "--plot", str(out), "-f", "csv"], catch_exceptions=False)
    assert r.exit_code == 0, r.output
    assert out.stat().st_size > 0
    rows = list(csv.DictReader(io.StringIO(r.stdout)))
    mm = [row for row in rows if row["method"] == "mmcc"]
    assert len(mm) == 2 and all(row["epsilon_lower"] == "" for row in mm)
    q = CliRunner().invoke(main, [*args, "-q"], catch_exceptions=False)
    assert q.exit_code == 0
    assert q.stdout.splitlines() == [
        f"noise_multiplier={s}\t{min((r['epsilon'] for r in rows if r['noise_multiplier'] == s), key=float)}"
        for s in ("1.0", "2.0")
    ]
    budget = CliRunner().invoke(main, [*args, "--max-epsilon", "0.001", "-f", "csv"], catch_exceptions=False)
    assert budget.exit_code == 3


# ---------------------------------------------------------------------------------------------------- bandmf-pld


def _dp_accounting_epsilon(q, comps, delta, pessimistic):
    """ε of the composition of Poisson-subsampled Gaussians ``comps`` = ((noise multiplier, count), …) by
    dp-accounting's PLD (pessimistic: at least the exact ε; optimistic: at most it), at interval 1e-3."""
    from dp_accounting.pld import privacy_loss_distribution as pld

    total = None
    for s, c in comps:
        one = pld.from_gaussian_mechanism(
            s,
            sampling_prob=q,
            pessimistic_estimate=pessimistic,
            value_discretization_interval=1e-3,
            use_connect_dots=pessimistic,
        )
        one = one.self_compose(c) if c > 1 else one
        total = one if total is None else total.compose(one)
    return total.get_epsilon_for_delta(delta)


def _run_reference(C, b, q, sigma, delta):
    """(at most, at least) the run's ε by dp-accounting: for each partition k, its steps k, k + b, … and their
    columns' norms from the dense C, composed; the largest over the partitions."""
    n = C.shape[0]
    norms = np.linalg.norm(C, axis=0)
    parts = set()
    for k in range(b):
        counts: dict = {}
        for j in range(k, n, b):
            counts[float(norms[j])] = counts.get(float(norms[j]), 0) + 1
        parts.add(tuple(sorted((sigma / v, c) for v, c in counts.items())))  # partitions alike: once
    up = max(_dp_accounting_epsilon(q, comps, delta, True) for comps in parts)
    low = max(_dp_accounting_epsilon(q, comps, delta, False) for comps in parts)
    return up, low


BANDMF_CASES = [
    # the issue's example: Thm 4's bracket [7.413, 7.437], the run's composition <= 6.26
    ("toeplitz:coef=1|0.9", None, 3, 2, 0.5, 1.0, 1e-5),
    ("sqrt:bands=3", None, 10, 4, 0.3, 1.5, 1e-5),
    ("toeplitz:coef=1|-0.5|0.3", None, 8, 3, 0.2, 1.0, 1e-6),
    ("file", [[1.0, 0, 0, 0, 0], [0.5, 0.6, 0, 0, 0], [0, 0.3, 1.2, 0, 0], [0, 0, 0.1, 0.4, 0], [0, 0, 0, 0.9, 0.8]],
     5, 2, 0.4, 1.2, 1e-5),
]  # fmt: skip


@pytest.mark.parametrize("spec,matrix,n,b,q,sigma,delta", BANDMF_CASES)
def test_bandmf_pld_brackets_the_run(spec, matrix, n, b, q, sigma, delta, tmp_path):
    pytest.importorskip("dp_accounting")
    if matrix is not None:
        path = tmp_path / "C.csv"
        path.write_text("\n".join(",".join(str(v) for v in row) for row in matrix))
        spec, C = f"file:path={path}", np.array(matrix, float)
    else:
        C = _toeplitz(strategy(spec, n).coef, n)
    (row,) = _rows(
        [
            "matrix", "--strategy", spec, "--steps", str(n), "--participation", f"cyclic-poisson:b={b},q={q}",
            "--noise-multiplier", str(sigma), "--delta", str(delta), "--method", "bandmf-pld",
        ]
    )  # fmt: skip
    lower, est, upper = (float(row[k]) for k in ("epsilon_lower", "epsilon_estimate", "epsilon"))
    ref_up, ref_low = _run_reference(C, b, q, sigma, delta)
    assert lower <= ref_up and ref_low <= upper  # lower <= exact <= upper, as far as the references tell
    assert lower <= est <= upper
    # never above Thm 4's DP-SGD (⌈n/b⌉ steps at σ / max column norm), as sgd-epsilon computes it
    (thm4,) = _rows(
        [
            "sgd-epsilon", "--sample-rate", str(q), "--steps", str(math.ceil(n / b)), "--delta", str(delta),
            "--noise-multiplier", repr(sigma / float(np.max(np.linalg.norm(C, axis=0)))), "--accountant", "pld",
        ]
    )  # fmt: skip
    assert upper <= float(thm4["epsilon"])
    if spec.startswith("toeplitz:coef=1|0.9"):
        assert upper < float(thm4["epsilon_lower"])  # the issue: the old lower end was above the run's ε
    assert "per partition" in row["note"]


@pytest.mark.parametrize("spec,n,b,q", [("toeplitz:coef=1|0.9", 3, 2, 0.5), ("sqrt:bands=2", 4, 3, 0.3)])
def test_bandmf_pld_is_the_run_by_monte_carlo(spec, n, b, q):
    """The row's bracket is of the run itself: for each partition k, the correlated release C·(Σ_{j ∈ L_k} B_j
    e_j) + Z in its worst case (the exact pair, by Monte Carlo over the Bernoulli vectors of the partition's
    steps — no decomposition assumed), the largest over the partitions; lower end below the run's ε, upper end
    above it (and the two within the Monte Carlo intervals)."""
    C = _toeplitz(strategy(spec, n).coef, n)
    sigma, delta = 1.0, 0.02
    (row,) = _rows(
        [
            "matrix", "--strategy", spec, "--steps", str(n), "--participation", f"cyclic-poisson:b={b},q={q}",
            "--noise-multiplier", str(sigma), "--delta", str(delta), "--method", "bandmf-pld",
        ]
    )  # fmt: skip
    ends = [_exact_pair_epsilon(C[:, k::b], q, sigma, delta, samples=100_000, seed=k) for k in range(b)]
    lo, hi = max(e[0] for e in ends), max(e[1] for e in ends)
    assert float(row["epsilon_lower"]) <= hi and lo <= float(row["epsilon"])


def test_bandmf_pld_agrees_with_compose_of_the_columns():
    """The issue's example against ``dpcalc compose`` of the two subsampled Gaussians at σ/‖C e_j‖ (the same
    engine, another road): the two brackets overlap."""
    (row,) = _rows(
        [
            "matrix", "--strategy", "toeplitz:coef=1|0.9", "--steps", "3", "--participation",
            "cyclic-poisson:b=2,q=0.5", "--noise-multiplier", "1", "--delta", "1e-5", "--method", "bandmf-pld",
        ]
    )  # fmt: skip
    (comp,) = _rows(
        [
            "compose", f"subsampled-gaussian:q=0.5,sigma={1 / math.sqrt(1.81)!r}", "subsampled-gaussian:q=0.5,sigma=1",
            "--delta", "1e-5",
        ]
    )  # fmt: skip
    assert float(row["epsilon_lower"]) <= float(comp["epsilon"])
    assert float(comp["epsilon_lower"]) <= float(row["epsilon"])


@pytest.mark.parametrize("n,b", [(12, 1), (10, 3)])
def test_identity_bandmf_pld_is_dp_sgd_exactly(n, b):
    """C = I: the worst partition (⌈n/b⌉ steps of norm 1) is DP-SGD itself: sgd-epsilon's numbers."""
    (row,) = _rows(
        [
            "matrix", "--strategy", "identity", "--steps", str(n), "--participation", f"cyclic-poisson:b={b},q=0.1",
            "--noise-multiplier", "1.3", "--delta", "1e-6", "--method", "bandmf-pld",
        ]
    )  # fmt: skip
    (sgd,) = _rows(
        [
            "sgd-epsilon", "--sample-rate", "0.1", "--noise-multiplier", "1.3", "--steps", str(math.ceil(n / b)),
            "--delta", "1e-6", "--accountant", "pld",
        ]
    )  # fmt: skip
    assert [row[k] for k in ("epsilon", "epsilon_lower", "epsilon_estimate")] == [
        sgd[k] for k in ("epsilon", "epsilon_lower", "epsilon_estimate")
    ]


def test_bandmf_pld_target_epsilon_monotone_search():
    """--target-epsilon: the σ found meets the target by the row's ε recomputed, σ/(1 + 1e-4) misses it, and it
    is below Thm 4's σ (the run's composition is tighter); the lower end is of the run (below ε)."""
    base = [
        "matrix", "--strategy", "toeplitz:coef=1|0.9", "--steps", "3", "--participation", "cyclic-poisson:b=2,q=0.5",
        "--delta", "1e-5", "--method", "bandmf-pld",
    ]  # fmt: skip
    (row,) = _rows([*base, "--target-epsilon", "2"])
    sigma = float(row["noise_multiplier"])
    assert float(row["epsilon_lower"]) <= float(row["epsilon"]) <= 2.0
    (again,) = _rows([*base, "--noise-multiplier", repr(sigma)])
    assert again["epsilon"] == row["epsilon"] and again["epsilon_lower"] == row["epsilon_lower"]
    (below,) = _rows([*base, "--noise-multiplier", repr(sigma / (1 + 1e-4))])
    assert float(below["epsilon"]) > 2.0
    (rdp,) = _rows([*base[:-1], "bandmf-rdp", "--noise-multiplier", repr(sigma)])
    norm = bandmf.largest_norm(strategy("toeplitz:coef=1|0.9", 3))
    thm4 = sgd_epsilon_pld(0.5, bandmf.multiplier_down(sigma, norm), 2, 1e-5)
    assert float(thm4.lower) > 2.0  # Thm 4's DP-SGD at this σ misses the target: its σ is larger
    assert rdp["epsilon_lower"] == ""


def test_bandmf_pld_beyond_the_component_limit_has_no_lower_end(tmp_path):
    """A diagonal C with 80 different entries, b = 1: 80 noise multipliers, above the limit of 64 — the row is
    Thm 4's DP-SGD alone: its upper end, no lower end or estimate, a note saying whose bracket it was."""
    path = tmp_path / "D.csv"
    d = 1.0 + np.arange(80) / 100
    path.write_text("\n".join(",".join(str(v) for v in row) for row in np.diag(d)))
    (row,) = _rows(
        [
            "matrix", "--strategy", f"file:path={path}", "--steps", "80", "--participation",
            "cyclic-poisson:b=1,q=0.01", "--noise-multiplier", "2", "--delta", "1e-5", "--method", "bandmf-pld",
        ]
    )  # fmt: skip
    assert row["epsilon_lower"] == row["epsilon_estimate"] == ""
    assert "not the run" in row["note"] and "above the limit of 64" in row["note"]
    norm = bandmf.largest_norm(strategy(f"file:path={path}", 80))
    assert float(row["epsilon"]) == float(
        sgd_epsilon_pld(0.01, bandmf.multiplier_down(2.0, norm), 80, 1e-5).upper
    )


def test_norm_bounds_hold_and_are_exact_for_doubles():
    """The Toeplitz column norms' bounds contain the norm computed in exact rational arithmetic (C = I, and a
    norm that is a double, give lo = hi); a partition dominated by another is left out."""
    from fractions import Fraction

    s = strategy("sqrt:bands=5", 23)
    plan = bandmf.partition_plan(s, Participation("cyclic", b=5, q=0.1))
    for part in plan.parts:
        for lo, hi, _ in part:
            assert lo <= hi and hi / lo < 1 + 1e-15
    for L in range(1, 6):
        (lo, hi) = bandmf._toeplitz_bounds(s.coef, [L])[L]
        sq = sum(Fraction(float(c)) ** 2 for c in s.coef[:L])
        assert Fraction(lo) ** 2 <= sq <= Fraction(hi) ** 2
    assert bandmf._toeplitz_bounds(np.array([3.0, 4.0]), [2])[2] == (5.0, 5.0)
    one = bandmf.partition_plan(strategy("identity", 10), Participation("cyclic", b=3, q=0.1))
    assert one.parts == (((1.0, 1.0, 4),),) and one.is_thm4(4)
    # n = 23, b = 5: partitions 0–2 have 5 steps, 3–4 four; partition 0's last column (step 20) keeps 3 of the
    # 5 coefficients, partitions 1 and 2 fewer: only partition 0 is kept
    assert len(plan.parts) == 1 and [c for *_, c in plan.parts[0]] == [4, 1]
