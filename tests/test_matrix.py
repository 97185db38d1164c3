"""``dpcalc matrix``: strategies, the sensitivity of C under participation patterns (against brute force over
every pattern), the unamplified Gaussian and amplified BandMF rows, reductions to DP-SGD, inputs refused."""

from __future__ import annotations

import csv
import io
import math
from fractions import Fraction

import numpy as np
import pytest
from click.testing import CliRunner

from dpcalc.cli import main
from dpcalc.engine.matrix.sensitivity import Participation, brute_force, sensitivity
from dpcalc.engine.matrix.strategies import sqrt_coefficients, strategy, tree_gram
from dpcalc.engine.mechanisms.gaussian_exact import eps_gaussian

STRATEGIES = [
    "identity",
    "sqrt",
    "sqrt:bands=3",
    "toeplitz:coef=1|0.6|0.3",
    "toeplitz:coef=1|-0.5|0.3",
    "blt:theta=0.9|0.5,omega=0.1|0.6",
    "blt:theta=0.8|0.3,omega=0.5|-0.4",
    "tree",
]
PATTERNS = [
    ("min-sep", 1, 1),
    ("min-sep", 2, 2),
    ("min-sep", 3, 3),
    ("min-sep", 4, 2),
    ("min-sep", 3, 5),
    ("cyclic", 0, 3),
]


def _run(args):
    return CliRunner().invoke(main, args)


def _rows(args):
    result = _run([*args, "-f", "csv"])
    assert result.exit_code == 0, result.output
    return list(csv.DictReader(io.StringIO(result.stdout)))


def _check(s, part, gram):
    got = sensitivity(s, part)
    ref = math.sqrt(brute_force(gram, part.k, part.b, cyclic=part.kind == "cyclic"))
    assert got.value >= ref
    if got.exact:
        assert got.value == pytest.approx(ref, rel=1e-12)
    return got


@pytest.mark.parametrize("spec", STRATEGIES)
@pytest.mark.parametrize("n", [7, 12])
@pytest.mark.parametrize("kind,k,b", PATTERNS)
def test_sensitivity_against_every_participation_pattern(spec, n, kind, k, b):
    """Never below max_S Σ|G_ij| over every allowed S (the exact sensitivity where G >= 0); equal where exact."""
    s = strategy(spec, n)
    _check(s, Participation(kind, k=max(k, 1), b=b), s.gram())


@pytest.mark.parametrize("seed", range(6))
def test_sensitivity_of_random_lower_triangular_files(seed, tmp_path):
    rng = np.random.default_rng(seed)
    n = 9
    C = np.tril(rng.normal(size=(n, n)) if seed % 2 else rng.uniform(0.1, 1, size=(n, n)))
    if seed >= 4:  # banded
        C = np.tril(C) - np.tril(C, -3)
    path = tmp_path / "c.npy"
    np.save(path, C)
    s = strategy(f"file:path={path}", n)
    assert np.allclose(s.gram(), C.T @ C)
    for kind, k, b in PATTERNS:
        _check(s, Participation(kind, k=max(k, 1), b=b), C.T @ C)


def test_monotone_toeplitz_is_exact_by_mckenna_et_al():
    """McKenna et al. 2024, Thm 2: steps 0, b, 2b, … — against brute force, larger n."""
    for coef in ("1|0.9|0.5|0.2", "1|1|1", "2|1"):
        s = strategy(f"toeplitz:coef={coef}", 14)
        for k, b in ((2, 3), (3, 2), (5, 2), (4, 4)):
            got = _check(s, Participation("min-sep", k=k, b=b), s.gram())
            assert got.exact


def test_sqrt_coefficients_square_to_the_prefix_sum():
    c = sqrt_coefficients(40)
    for k in range(40):
        assert Fraction(c[k]) == pytest.approx(Fraction(math.comb(2 * k, k), 4**k), rel=1e-14)
    assert np.allclose(np.convolve(c, c)[:40], 1.0, rtol=1e-13)


def _blt_column_norm_squared(theta, omega, n):
    """Dvijotham et al. 2024 (arXiv:2404.16706), Lemma 5.3: ‖C e_0‖² = 1 + Σ_ij ω_i ω_j (1 − (θ_iθ_j)^(n−1)) /
    (1 − θ_iθ_j), in exact rational arithmetic."""
    th = [Fraction(t) for t in theta]
    om = [Fraction(w) for w in omega]
    total = Fraction(1)
    for ti, wi in zip(th, om):
        for tj, wj in zip(th, om):
            r = ti * tj
            total += wi * wj * (sum(r**m for m in range(n - 1)) if r == 1 else (1 - r ** (n - 1)) / (1 - r))
    return total


@pytest.mark.parametrize(
    "theta,omega",
    [
        ((0.9, 0.5), (0.1, 0.6)),
        ((0.99,), (0.3,)),
        ((0.95, 0.6, 0.1), (0.05, 0.2, 0.3)),
        ((0.7, 0.2), (0.5, -0.3)),
    ],
)
@pytest.mark.parametrize("n", [1, 2, 10, 300])
def test_blt_is_the_toeplitz_of_its_buffers(theta, omega, n):
    """The BLT's coefficients are 1, Σω, Σωθ, Σωθ², … (jax_privacy's BufferedToeplitz docstring: buf_decay θ,
    output_scale ω); its single-participation sensitivity is Lemma 5.3 of Dvijotham et al. 2024 in exact
    arithmetic; the aliases buf_decay/output_scale give the same strategy."""
    t, w = "|".join(map(repr, theta)), "|".join(map(repr, omega))
    s = strategy(f"blt:theta={t},omega={w}", n)
    want = [1.0] + [sum(wi * ti**k for ti, wi in zip(theta, omega)) for k in range(n - 1)]
    full = np.zeros(n)
    full[: s.coef.size] = s.coef
    assert np.allclose(full, want, rtol=1e-13, atol=1e-300)
    single = sensitivity(s, Participation("single"))
    exact = _blt_column_norm_squared(theta, omega, n)
    assert single.value**2 >= float(exact) * (1 - 1e-15)
    assert single.value**2 == pytest.approx(float(exact), rel=1e-12)
    alias = strategy(f"blt:buf_decay={t},output_scale={w}", n)
    assert np.array_equal(alias.coef, s.coef)


def test_tree_gram_counts_common_ancestors():
    g, h = tree_gram(8)
    assert h == 3 and g[0, 0] == 4 and g[0, 1] == 3 and g[0, 2] == 2 and g[0, 4] == 1 and g[3, 4] == 1


def test_identity_with_one_partition_is_dp_sgd_exactly():
    """C = I with cyclic Poisson over one partition is DP-SGD: the bandmf rows equal sgd-epsilon's rows."""
    m = _rows(
        [
            "matrix",
            "--strategy",
            "identity",
            "--steps",
            "1000",
            "--participation",
            "cyclic-poisson:b=1,q=0.01",
            "--noise-multiplier",
            "1.1,2",
            "--delta",
            "1e-5",
        ]
    )
    s = _rows(
        [
            "sgd-epsilon",
            "--sigma",
            "1.1,2",
            "--sample-rate",
            "0.01",
            "--steps",
            "1000",
            "--delta",
            "1e-5",
            "--accountant",
            "all",
        ]
    )
    for acc in ("rdp", "pld"):
        got = [(r["epsilon"], r["epsilon_lower"]) for r in m if r["method"] == f"bandmf-{acc}"]
        want = [(r["epsilon"], r["epsilon_lower"]) for r in s if r["method"] == acc]
        assert got == want


def test_identity_unamplified_is_the_gaussian_of_sqrt_k():
    rows = _rows(
        [
            "matrix",
            "--strategy",
            "identity",
            "--steps",
            "100",
            "--participation",
            "min-sep:k=4,b=25",
            "--noise-multiplier",
            "3",
            "--delta",
            "1e-6",
        ]
    )
    (row,) = rows
    assert (
        float(row["sensitivity_bound"]) == pytest.approx(2.0, rel=1e-14)
        and float(row["sensitivity_bound"]) >= 2.0
    )
    assert float(row["epsilon"]) == float(eps_gaussian(1e-6, float(row["sensitivity_bound"]) / 3.0))


@pytest.mark.parametrize("bands", [1, 4, 16])
def test_amplified_is_below_unamplified(bands):
    rows = _rows(
        [
            "matrix",
            "--strategy",
            f"sqrt:bands={bands}",
            "--steps",
            "512",
            "--participation",
            "cyclic-poisson:b=16,q=0.1",
            "--noise-multiplier",
            "1,2",
            "--delta",
            "1e-6",
        ]
    )
    gauss = [float(r["epsilon"]) for r in rows if r["method"] == "gaussian"]
    for m in ("bandmf-rdp", "bandmf-pld"):
        amp = [float(r["epsilon"]) for r in rows if r["method"] == m]
        assert all(a <= g for a, g in zip(amp, gauss))


def test_noise_for_a_target():
    args = [
        "matrix",
        "--strategy",
        "sqrt:bands=4",
        "--steps",
        "400",
        "--participation",
        "cyclic-poisson:b=4,q=0.2",
        "--delta",
        "1e-6",
    ]
    rows = _rows([*args, "--target-epsilon", "3"])
    for r in rows:
        sigma = float(r["noise_multiplier"])
        at = _rows([*args, "--noise-multiplier", repr(sigma), "--method", r["method"]])
        assert float(at[0]["epsilon"]) <= 3.0
        below = _rows([*args, "--noise-multiplier", repr(sigma * (1 - 1e-3)), "--method", r["method"]])
        assert float(below[0]["epsilon"]) > 3.0


def test_a_file_equals_its_toeplitz_spec(tmp_path):
    n = 20
    c = np.array([1.0, 0.5, 0.25])
    C = sum(np.diag(np.full(n - i, v), -i) for i, v in enumerate(c))
    path = tmp_path / "c.csv"
    path.write_text("\n".join(",".join(repr(float(x)) for x in row) for row in C) + "\n")
    common = [
        "--steps",
        str(n),
        "--participation",
        "min-sep:k=3,b=5",
        "--noise-multiplier",
        "2",
        "--delta",
        "1e-6",
    ]
    a = _rows(["matrix", "--strategy", f"file:path={path}", *common])
    b = _rows(["matrix", "--strategy", "toeplitz:coef=1|0.5|0.25", *common])
    assert float(a[0]["sensitivity_bound"]) == pytest.approx(float(b[0]["sensitivity_bound"]), rel=1e-13)
    assert a[0]["bands"] == b[0]["bands"] == "3"


@pytest.mark.parametrize(
    "content,words",
    [
        ("1,0\n0.5,1,2\n", "row 2"),
        ("1,2\n0.5,1\n", "entry (1, 2)"),
        ("1,0\nnan,1\n", "entry (2, 1)"),
        ("1,0,0\n1,1,0\n", "not square"),
        ("0,0\n1,1\n", "diagonal entry (1, 1)"),
        ("1,x\n", "line 1"),
    ],
)
def test_bad_files_are_one_line(content, words, tmp_path):
    path = tmp_path / "c.csv"
    path.write_text(content)
    result = _run(
        [
            "matrix",
            "--strategy",
            f"file:path={path}",
            "--steps",
            "2",
            "--noise-multiplier",
            "1",
            "--delta",
            "1e-6",
        ]
    )
    assert result.exit_code == 2
    lines = result.output.strip().split("\n")
    assert len(lines) == 1 and words in lines[0] and str(path) in lines[0], result.output


@pytest.mark.parametrize(
    "extra,words",
    [
        (
            ["--strategy", "tree", "--participation", "cyclic-poisson:b=4,q=0.1", "--method", "bandmf-pld"],
            "not banded",
        ),
        (
            ["--strategy", "sqrt", "--participation", "cyclic-poisson:b=4,q=0.1", "--method", "bandmf-rdp"],
            "bands",
        ),
        (["--strategy", "sqrt:bands=2", "--method", "bandmf-rdp"], "cyclic Poisson"),
        (["--strategy", "nope"], "unknown strategy"),
        (["--strategy", "toeplitz:coef=0|1"], "diagonal"),
        (["--strategy", "blt:theta=0.9"], "give theta="),
        (["--strategy", "blt:theta=0.9|0.5,omega=0.1"], "one of each per buffer"),
        (["--strategy", "blt:theta=1.5,omega=0.1"], "[-1, 1]"),
        (["--strategy", "blt:theta=nan,omega=0.1"], "finite"),
        (["--strategy", "blt:theta=0.5,omega=x"], "numbers separated by |"),
        (["--strategy", "blt:theta=0.5,omega=0.1,buf_decay=0.3"], "given twice"),
        (["--strategy", "blt:theta=0.5,omega=0.1,rho=1"], "unknown key"),
        (["--strategy", "sqrt", "--participation", "min-sep:k=0,b=2"], "k must be"),
        (["--strategy", "sqrt", "--participation", "cyclic-poisson:b=2,q=2"], "q must be"),
        (["--strategy", "sqrt", "--participation", "often"], "--participation"),
    ],
)
def test_refusals_are_one_line(extra, words):
    result = _run(["matrix", "--steps", "64", "--noise-multiplier", "1", "--delta", "1e-6", *extra])
    assert result.exit_code == 2
    lines = result.output.strip().split("\n")
    assert len(lines) == 1 and words in lines[0], result.output


def test_all_leaves_out_the_rows_that_do_not_apply():
    rows = _rows(
        [
            "matrix",
            "--strategy",
            "tree",
            "--strategy",
            "sqrt:bands=4",
            "--steps",
            "256",
            "--participation",
            "cyclic-poisson:b=4,q=0.1",
            "--noise-multiplier",
            "1",
            "--delta",
            "1e-6",
        ]
    )
    assert [(r["strategy"], r["method"]) for r in rows] == [
        ("tree", "gaussian"),
        ("sqrt:bands=4", "gaussian"),
        ("sqrt:bands=4", "bandmf-rdp"),
        ("sqrt:bands=4", "bandmf-pld"),
    ]


def test_the_general_bound_bounds_its_work_up_front():
    result = _run(
        [
            "matrix",
            "--strategy",
            "tree",
            "--steps",
            "4096",
            "--participation",
            "min-sep:k=50,b=80",
            "--noise-multiplier",
            "4",
            "--delta",
            "1e-6",
        ]
    )
    assert (
        result.exit_code == 2
        and "above the limit" in result.output
        and len(result.output.strip().split("\n")) == 1
    )


@pytest.mark.parametrize(
    "spec,pattern",
    [
        ("sqrt:bands=16", "min-sep:k=5,b=200"),
        ("tree", "min-sep:k=3,b=16"),
        ("sqrt:bands=4", "cyclic-poisson:b=4,q=0.05"),
    ],
)
def test_largest_steps_for_a_target(spec, pattern):
    """The answer n meets the target (ε computed there), n + 1 misses it."""
    common = [
        "matrix",
        "--strategy",
        spec,
        "--participation",
        pattern,
        "--noise-multiplier",
        "4",
        "--delta",
        "1e-6",
    ]
    rows = _rows([*common, "--target-epsilon", "3"])
    assert rows
    for r in rows:
        n = int(r["steps"])
        assert n >= 1 and float(r["epsilon"]) <= 3.0
        at = _rows([*common, "--steps", str(n), "--method", r["method"]])
        assert at[0]["epsilon"] == r["epsilon"]
        after = _rows([*common, "--steps", str(n + 1), "--method", r["method"]])
        assert float(after[0]["epsilon"]) > 3.0


@pytest.mark.parametrize("n", [1, 2, 3, 7, 8, 100, 1000])
def test_the_tree_is_the_tree_aggregation_kind(n):
    """One participation: Δ² = ⌊log₂ n⌋ + 1, the tree-aggregation kind's D(T) (compose), and the same ε."""
    s = strategy("tree", n)
    d = math.floor(math.log2(n)) + 1
    assert sensitivity(s, Participation("single")).value == pytest.approx(math.sqrt(d), rel=1e-14)
    rows = _rows(
        ["matrix", "--strategy", "tree", "--steps", str(n), "--noise-multiplier", "3", "--delta", "1e-6"]
    )
    comp = _rows(["compose", f"tree-aggregation:sigma=3,steps={n}", "--delta", "1e-6", "--method", "exact"])
    assert float(rows[0]["epsilon"]) == pytest.approx(float(comp[0]["epsilon"]), rel=1e-9)
    assert float(rows[0]["epsilon"]) >= float(comp[0]["epsilon"])


def test_repeated_patterns_give_rows_for_each_and_leave_out_what_does_not_apply():
    args = [
        "matrix",
        "--strategy",
        "identity",
        "--strategy",
        "sqrt:bands=16",
        "--steps",
        "256",
        "--noise-multiplier",
        "2",
        "--delta",
        "1e-6",
        "--method",
        "bandmf-rdp",
    ]
    rows = _rows(
        [
            *args,
            "--participation",
            "cyclic-poisson:b=4,q=0.05",
            "--participation",
            "cyclic-poisson:b=16,q=0.2",
        ]
    )
    assert [(r["strategy"], r["participation"]) for r in rows] == [
        ("identity", "cyclic-poisson:b=4,q=0.05"),
        ("identity", "cyclic-poisson:b=16,q=0.2"),
        ("sqrt:bands=16", "cyclic-poisson:b=16,q=0.2"),
    ]
    one = _rows(
        [
            "matrix",
            "--strategy",
            "sqrt:bands=16",
            "--steps",
            "256",
            "--noise-multiplier",
            "2",
            "--delta",
            "1e-6",
            "--method",
            "bandmf-rdp",
            "--participation",
            "cyclic-poisson:b=16,q=0.2",
        ]
    )
    assert one[0]["epsilon"] == rows[2]["epsilon"]
    result = _run([*args, "--participation", "single", "--participation", "min-sep:k=2,b=100"])
    assert result.exit_code == 2 and "applies to none" in result.output


def _coef_spec(coef) -> str:
    return "toeplitz:coef=" + "|".join(repr(float(c)) for c in coef)


@pytest.mark.parametrize("n", [1, 2, 3, 5, 11])
@pytest.mark.parametrize("k", [1, 4, 11])
def test_the_cases_jax_privacy_checks(n, k):
    """The closed forms jax_privacy's toeplitz tests check for min-separation sensitivity (its
    tests/matrix_factorization/toeplitz_test.py): C = I gives Δ² = min(n, k); the all-ones lower triangle at
    separation 1 the first k columns' sum; decreasing coefficients the first k columns (separation 1) or the
    fixed-epoch pattern (separation n / epochs)."""
    ident = sensitivity(strategy("identity", n), Participation("min-sep", k=k, b=1))
    assert ident.value**2 == pytest.approx(min(n, k), rel=1e-13) and ident.exact
    tri = sensitivity(strategy(_coef_spec(np.ones(n)), n), Participation("min-sep", k=k, b=1))
    C = np.tri(n)
    assert (
        tri.value**2 == pytest.approx(float(np.sum(np.sum(C[:, :k], axis=1) ** 2)), rel=1e-12) and tri.exact
    )
    coef = np.sqrt(np.linspace(1.0, 0.001, num=n))
    s = strategy(_coef_spec(coef), n)
    Cm = sum(np.diag(np.full(n - i, c), -i) for i, c in enumerate(coef))
    want = np.linalg.norm(np.sum(Cm[:, :k], axis=1)) ** 2
    assert sensitivity(s, Participation("min-sep", k=k, b=1)).value ** 2 == pytest.approx(want, rel=1e-10)


@pytest.mark.parametrize("n,epochs", [(2, 1), (2, 2), (10, 1), (10, 5), (10, 10)])
@pytest.mark.parametrize("bands", [2, 10, 11, 13])
def test_fixed_epochs_as_jax_privacy_checks(n, epochs, bands):
    coef = np.linspace(1.0, 0.001, num=bands)[:n]
    s = strategy(_coef_spec(coef), n)
    Cm = sum(np.diag(np.full(n - i, c), -i) for i, c in enumerate(coef))
    b = n // epochs
    want = np.linalg.norm(np.sum(Cm[:, ::b][:, :epochs], axis=1)) ** 2  # steps 0, b, 2b, ...
    got = sensitivity(s, Participation("min-sep", k=epochs + 10, b=b))
    assert got.exact and got.value**2 == pytest.approx(want, rel=1e-10)


#: jax_privacy's own numbers, recorded (jax_privacy 2.0.0 from PyPI and 2.3.0.dev0 at commit 8967688, jax 0.10.2,
#: dp-accounting 0.6.0, float64): ``toeplitz.minsep_sensitivity_squared(coef, min_sep=200, n=1000,
#: max_participations=5)`` for the 16-banded square root and the BLT buf_decay=[0.9, 0.5], output_scale=[0.1, 0.6];
#: ``amplified_bandmf_event`` (63 compositions of the Poisson-sampled Gaussian, q = 0.08, σ = 4) at δ = 1e-6 by
#: dp-accounting's PLD and RDP accountants.
JAX_PRIVACY_MINSEP = {
    "sqrt:bands=16": 3.1175943026288477,
    "blt:theta=0.9|0.5,omega=0.1|0.6": 2.958727257992163,
}
JAX_PRIVACY_BANDMF = {"bandmf-pld": 0.7041611889532388, "bandmf-rdp": 0.7674632783212947}


def test_jax_privacy_recorded_values():
    """The min-separation sensitivities equal jax_privacy's within rounding and never fall below them; the
    amplified BandMF rows of C = I (one band, b = 16, the dominating DP-SGD run of 63 steps) are never above
    jax_privacy's event by more than the PLD's discretisation (pld: the bracket contains its value; rdp: ours
    uses more orders and the optimal conversion, so it may be below)."""
    for spec, want in JAX_PRIVACY_MINSEP.items():
        got = sensitivity(strategy(spec, 1000), Participation("min-sep", k=5, b=200))
        assert got.exact and want <= got.value <= want * (1 + 1e-14)
    rows = {
        r["method"]: r
        for r in _rows(
            [
                "matrix", "--strategy", "identity", "--steps", "1000", "--participation",
                "cyclic-poisson:b=16,q=0.08", "--sigma", "4", "--delta", "1e-6",
            ]
        )
    }  # fmt: skip
    pld = rows["bandmf-pld"]
    assert float(pld["epsilon_lower"]) <= JAX_PRIVACY_BANDMF["bandmf-pld"] <= float(pld["epsilon"])
    assert float(pld["epsilon"]) == pytest.approx(JAX_PRIVACY_BANDMF["bandmf-pld"], rel=1e-5)
    assert float(rows["bandmf-rdp"]["epsilon"]) == pytest.approx(JAX_PRIVACY_BANDMF["bandmf-rdp"], rel=1e-4)


@pytest.mark.parametrize("form", ["lines", "commas", "npy", "npy-row", "npy-column"])
def test_toeplitz_coefficients_from_a_file(form, tmp_path):
    """toeplitz:path=FILE gives the strategy of the same coefficients inline, in every format read."""
    coef = [1.0, 0.5, 0.375, 0.3125]
    if form == "lines":
        path = tmp_path / "c.txt"
        path.write_text("\n".join(map(repr, coef)) + "\n")
    elif form == "commas":
        path = tmp_path / "c.csv"
        path.write_text("1, 0.5;0.375\n\n0.3125")
    else:
        path = tmp_path / "c.npy"
        arr = np.array(coef)
        np.save(path, {"npy": arr, "npy-row": arr[None, :], "npy-column": arr[:, None]}[form])
    rows = _rows(
        [
            "matrix", "--strategy", f"toeplitz:path={path}", "--strategy", "sqrt:bands=4", "--steps", "50",
            "--participation", "min-sep:k=3,b=10", "--noise-multiplier", "2", "--delta", "1e-6",
        ]
    )  # fmt: skip
    assert (
        rows[0]["sensitivity_bound"] == rows[1]["sensitivity_bound"]
        and rows[0]["epsilon"] == rows[1]["epsilon"]
    )


@pytest.mark.parametrize(
    "content,words",
    [
        ("", "empty"),
        ("1\n0.5x\n", "line 2: '0.5x' is not a number"),
        ("1\nnan\n", "value 2 is nan"),
        ("0\n1\n", "diagonal"),
    ],
)
def test_bad_coefficient_files_are_one_line(content, words, tmp_path):
    path = tmp_path / "c.txt"
    path.write_text(content)
    result = _run(
        ["matrix", "--strategy", f"toeplitz:path={path}", "--steps", "5", "--sigma", "1", "--delta", "1e-6"]
    )
    assert result.exit_code == 2
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and words in lines[0], result.output


def test_quiet_takes_one_configuration_per_strategy_pattern_and_noise():
    """-q: the rows of one strategy, pattern, σ (or target) and δ are one configuration whatever the methods add
    (the dominating DP-SGD run's steps, the sensitivity): its tightest certified ε, or least σ."""
    base = [
        "matrix",
        "--strategy",
        "sqrt:bands=4",
        "--steps",
        "200",
        "--participation",
        "cyclic-poisson:b=4,q=0.02",
    ]
    for extra, column in ((["--sigma", "2"], "epsilon"), (["--target-epsilon", "1"], "noise_multiplier")):
        rows = _rows([*base, *extra, "--delta", "1e-6"])
        quiet = _run([*base, *extra, "--delta", "1e-6", "-q"])
        assert quiet.exit_code == 0 and "\t" not in quiet.stdout, quiet.output
        assert float(quiet.stdout) == min(float(r[column]) for r in rows)
