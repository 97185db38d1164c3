"""Kairouz–Oh–Viswanath optimal composition evaluated exactly (docs/math.md §2.3), against 50-digit mpmath.

KOV 2015 (arXiv:1311.0776, Thm 3.3): the k-fold composition of (ε, δ)-DP is tightly described by the
hockey-stick divergence of the k-fold dominating pair,
``δ(ε_g) = 1 − (1−δ)^k + (1−δ)^k Σ_l C(k,l) [e^{(k−l)ε} − e^{ε_g + lε}]_+ / (1+e^ε)^k``.
The references below evaluate that formula term by term in mpmath (binomial terms by their ratio recurrence,
not by Loader's form used by the engine) and invert it exactly: on the range of ε_g where the terms
l < L are the positive ones, the sum is ``A_L − e^{ε_g} B_L`` (two prefix sums), so ε_g = log((A_L − r)/B_L).
Only the terms within 60 standard deviations of the binomial centre are summed for large k (the rest are
below e^{-1800} of the sum).
"""

import math

import mpmath
import numpy as np
import pytest
from mpmath import mp, mpf

from dpcalc.engine.composition import theorems as comp

mp.dps = 50  # for the constants computed at import


@pytest.fixture(autouse=True)
def _precision():
    """50 digits for every test here, whatever precision other test modules set globally."""
    with mp.workdps(50):
        yield


#: The example of the brief: dp:epsilon=0.001,delta=1e-12,count=1000000 at δ = 1e-6 (mpmath, 50 digits);
#: the version of dpcalc before this fix printed 7.4048.
KOV_EXAMPLE_MP = mpf("7.33678811734069816477840037618297886964673862")
KOV_EXAMPLE = float(KOV_EXAMPLE_MP)


def _window(eps, k):
    if k <= 20000:
        return 0, k
    e = mp.exp(mpf(eps))
    p = e / (1 + e)
    sd = math.sqrt(k * float(p * (1 - p)))
    centre = k * float(1 - p)  # the a_l below are Binomial(k, p) probabilities of k − l: centred at l = kq
    return max(0, int(centre - 60 * sd - 50)), min(k, k // 2 + 2)


def _mp_terms(eps, k, lo, hi):
    """``a_l = C(k,l) e^{(k−l)ε}/(1+e^ε)^k`` and ``b_l = C(k,l) e^{lε}/(1+e^ε)^k`` for l in [lo, hi]."""
    e = mpf(eps)
    lz = k * mp.log1p(mp.exp(e))
    lc = mp.loggamma(k + 1) - mp.loggamma(lo + 1) - mp.loggamma(k - lo + 1)
    a = [mp.exp(lc + (k - lo) * e - lz)]
    b = [mp.exp(lc + lo * e - lz)]
    up, down = mp.exp(e), mp.exp(-e)
    for j in range(lo, hi):
        ratio = mpf(k - j) / (j + 1)
        a.append(a[-1] * ratio * down)
        b.append(b[-1] * ratio * up)
    return a, b


def _mp_c_keep(delta, k):
    log_keep = k * mp.log1p(-mpf(delta))
    return -mp.expm1(log_keep), mp.exp(log_keep)


def mp_delta(eps, delta, k, eps_g):
    """δ(ε_g) by the formula of the theorem, term by term."""
    c, keep = _mp_c_keep(delta, k)
    lo, hi = _window(eps, k)
    a, b = _mp_terms(eps, k, lo, hi)
    g = mp.exp(mpf(eps_g))
    s = mp.fsum(max(x - g * y, 0) for x, y in zip(a, b))
    return c + keep * s


def mp_eps(eps, delta, k, target):
    """The smallest ε_g in [0, kε] with δ(ε_g) <= target, exactly (inf where target <= 1 − (1−δ)^k)."""
    c, keep = _mp_c_keep(delta, k)
    r = (mpf(target) - c) / keep  # the budget of the sum
    if r <= 0:
        return mp.inf
    lo, hi = _window(eps, k)
    a, b = _mp_terms(eps, k, lo, hi)
    e = mpf(eps)
    big_a, big_b = mpf(0), mpf(0)
    if sum(a[j - lo] - b[j - lo] for j in range(lo, hi + 1) if k - 2 * j > 0) <= r:
        return mpf(0)
    for j in range(lo, hi + 1):  # piece L = j + 1: terms lo..j positive, ε_g in [(k−2L)ε, (k−2L+2)ε]
        big_a += a[j - lo]
        big_b += b[j - lo]
        g_lo, g_hi = max((k - 2 * (j + 1)) * e, 0), (k - 2 * j) * e
        if g_hi <= 0:
            break
        if big_a - mp.exp(g_lo) * big_b >= r >= big_a - mp.exp(g_hi) * big_b:
            assert lo == 0 or j > lo + 1000  # the window's lower end is far below the answer's terms
            return mp.log((big_a - r) / big_b)
    raise AssertionError("no piece brackets the target")


def _c(delta, k):
    return _mp_c_keep(delta, k)[0]


def _next_double_above(x):
    """The smallest double above the mpmath number x."""
    d = float(x)
    return d if d > x else float(np.nextafter(d, np.inf))


_C_EXAMPLE = _c(1e-12, 10**6)
_C_SMALL = _c(1e-3, 10)
_C_FIVE = _c(0.01, 5)

# (ε, δ, k, target)
EPS_CASES = [
    pytest.param(0.001, 1e-12, 10**6, 1e-6, id="brief-example"),
    pytest.param(0.1, 0.0, 100, 1e-5, id="doc-vector-1"),
    pytest.param(0.01, 0.0, 1000, 1e-6, id="doc-vector-2"),
    pytest.param(1.0, 0.0, 1, 0.1, id="k=1"),
    pytest.param(0.5, 1e-4, 1, 0.05, id="k=1-delta"),
    pytest.param(2.0, 1e-6, 50, 1e-3, id="large-eps"),
    pytest.param(0.01, 1e-10, 10**6, 2e-4, id="large-k"),
    pytest.param(1e-4, 0.0, 10**6, 1e-9, id="large-k-delta0"),
    pytest.param(0.001, 1e-12, 10**6, float(_C_EXAMPLE * (1 + mpf("1e-9"))), id="barely-above-large-k"),
    pytest.param(0.001, 1e-12, 10**6, _next_double_above(_C_EXAMPLE), id="next-double-above-large-k"),
    pytest.param(0.1, 1e-3, 10, float(_C_SMALL * (1 + mpf("1e-6"))), id="barely-above-k=10"),
    pytest.param(0.1, 1e-3, 10, _next_double_above(_C_SMALL), id="next-double-above-k=10"),
    pytest.param(0.5, 0.01, 5, _next_double_above(_C_FIVE), id="next-double-above-k=5"),
    pytest.param(0.3, 1e-3, 40, 0.9, id="large-target"),
]


@pytest.mark.parametrize(("eps", "delta", "k", "target"), EPS_CASES)
def test_kov_eps_is_the_exact_value_rounded_up(eps, delta, k, target):
    exact = mp_eps(eps, delta, k, target)
    got = float(comp.kov_eps(eps, delta, k, target))
    assert math.isfinite(got)
    assert got >= exact  # never below the theorem's value
    assert got <= exact * (1 + 1e-9) + 1e-300
    # the δ direction at the printed ε is within the target, and so is the exact δ there
    assert mp_delta(eps, delta, k, got) <= target


def test_brief_example_reference_value():
    """The reference of the CLI example, pinned (and the engine's value within 1e-11 of it)."""
    exact = mp_eps(0.001, 1e-12, 10**6, 1e-6)
    assert abs(exact - KOV_EXAMPLE_MP) < mpf("1e-30")
    got = float(comp.kov_eps(0.001, 1e-12, 10**6, 1e-6))
    assert KOV_EXAMPLE <= got <= KOV_EXAMPLE * (1 + 1e-11)


def test_k1_delta0_closed_form():
    """k = 1, δ = 0: randomized response, δ(ε_g) = (e^ε − e^{ε_g})/(1 + e^ε), so
    ε_g = log(e^ε − t(1 + e^ε))."""
    for eps, t in [(1.0, 0.1), (0.1, 1e-3), (3.0, 0.5), (0.01, 1e-12)]:
        exact = mp.log(mp.exp(eps) - t * (1 + mp.exp(eps)))
        got = float(comp.kov_eps(eps, 0.0, 1, t))
        assert exact <= got <= exact * (1 + 1e-12)


@pytest.mark.parametrize(
    ("eps", "delta", "k", "eps_g"),
    [
        (0.001, 1e-12, 10**6, 7.3367881173406981),
        (0.001, 1e-12, 10**6, 0.0),
        (0.001, 1e-12, 10**6, 999.0),
        (0.01, 0.0, 10**6, 2.0),
        (0.1, 1e-3, 10, 0.5),
        (0.1, 1e-3, 10, 0.99),
        (1.0, 0.0, 1, 0.5),
        (2.0, 1e-6, 50, 30.0),
        (0.5, 0.01, 5, 2.4999),
    ],
)
def test_kov_delta_is_the_exact_value_rounded_up(eps, delta, k, eps_g):
    exact = mp_delta(eps, delta, k, eps_g)
    got = float(comp.kov_delta(eps, delta, k, eps_g))
    assert got >= exact
    assert got <= exact * (1 + 1e-10)
    lg = float(comp.kov_log_delta(eps, delta, k, eps_g))
    assert lg >= mp.log(exact) and lg <= mp.log(exact) + 1e-10


def test_kov_delta_beyond_k_eps_is_c():
    """Beyond ε_g = kε only the δ-mass is left: δ = 1 − (1−δ)^k, within an ulp or two (0 for δ = 0)."""
    c = _c(1e-12, 10**6)
    got = float(comp.kov_delta(0.001, 1e-12, 10**6, 1000.5))
    assert c <= got <= float(c) * (1 + 5e-16)
    assert float(comp.kov_delta(0.001, 0.0, 10**6, 1000.5)) == 0.0


def test_kov_delta_at_the_rounded_k_eps_is_not_zero():
    """The double 0.1 is 0.1000000000000000055…, so 10 × it is above the double 1.0 that k*eps rounds to: at
    ε_g = 1.0 one term of the sum is still positive (about 1e-19), and δ must not be reported as 0."""
    exact = mp_delta(0.1, 0.0, 10, 1.0)
    assert exact > 0
    got = float(comp.kov_delta(0.1, 0.0, 10, 1.0))
    assert exact <= got <= 1e-16


def test_target_at_or_below_c_is_unreachable():
    c = _c(1e-12, 10**6)
    below = float(c) if float(c) <= c else float(np.nextafter(float(c), 0))
    assert comp.kov_eps(0.001, 1e-12, 10**6, below) == math.inf
    assert comp.kov_eps(0.1, 1e-3, 10, 1e-3) == math.inf


def test_vectorised_targets_match_scalar_calls():
    targets = np.array([1e-6, 2e-6, _next_double_above(_C_EXAMPLE), 1e-3, float(_C_EXAMPLE) / 2])
    got = comp.kov_eps(0.001, 1e-12, 10**6, targets)
    assert got.shape == targets.shape
    for t, g in zip(targets, got):
        assert g == float(comp.kov_eps(0.001, 1e-12, 10**6, t))
    assert got[-1] == math.inf and np.all(np.isfinite(got[:-1]))
    d = comp.kov_delta(0.001, 1e-12, 10**6, got[:-1])
    assert np.all(d <= targets[:-1] * (1 + 1e-15))


@pytest.mark.parametrize(
    ("eps", "k"), [(0.001, 10**6), (0.1, 1000), (1.0, 7), (0.0, 50), (5.0, 3000), (710.0, 3), (2.0, 1)]
)
def test_log_binomial_terms_within_their_error_bound(eps, k):
    """The engine's log a_l (Loader's form) is within its stated error bound of the exact value, and that
    bound is tight (<= 1e-10 for the terms that matter)."""
    rng = np.random.default_rng(k)
    e = mpf(eps)
    centre = k * float(mp.exp(e) / (1 + mp.exp(e)))
    xs = np.concatenate(
        [
            rng.integers(0, k + 1, 60),
            [0, 1, k - 1, k],
            np.round(centre + rng.normal(0, 3 * math.sqrt(k) + 1, 60)),
        ]
    )
    xs = np.unique(np.clip(xs, 0, k)).astype(float)
    val, err = comp._kov_log_pmf(eps, k, xs)
    lp = -mp.log1p(mp.exp(-e))
    lq = -(e + mp.log1p(mp.exp(-e)))
    for x, v, er in zip(xs.astype(int), val, err):
        exact = mp.loggamma(k + 1) - mp.loggamma(x + 1) - mp.loggamma(k - x + 1) + x * lp + (k - x) * lq
        assert abs(exact - mpf(float(v))) <= er
        if exact > -3000:
            assert er <= 1e-10


@pytest.mark.parametrize(
    ("delta", "k"), [(1e-12, 10**6), (1e-3, 10), (0.5, 3), (1e-300, 10**6), (0.9, 10**6)]
)
def test_c_split_is_double_double_accurate(delta, k):
    c_hi, c_lo, log_keep = comp._kov_split(delta, k)
    c = _c(delta, k)
    assert abs(mpf(c_hi) + mpf(c_lo) - c) <= c * mpf("1e-30")
    exact_log_keep = k * mp.log1p(-mpf(delta))
    assert log_keep >= exact_log_keep and log_keep - exact_log_keep <= abs(exact_log_keep) * 1e-15


def test_cli_prints_the_exact_value(invoke):
    res = invoke(
        [
            "compose",
            "dp:epsilon=0.001,delta=1e-12,count=1000000",
            "--delta",
            "1e-6",
            "--method",
            "optimal",
            "-f",
            "json",
        ]
    )
    assert res.exit_code == 0, res.stderr
    import json

    doc = json.loads(res.stdout)
    rows = doc["rows"] if isinstance(doc, dict) and "rows" in doc else doc
    (row,) = [r for r in rows if r["method"] == "optimal"]
    assert KOV_EXAMPLE <= row["epsilon"] <= KOV_EXAMPLE * (1 + 1e-11)
    assert mpmath.mpf(row["epsilon"]) >= mp_eps(0.001, 1e-12, 10**6, 1e-6)
