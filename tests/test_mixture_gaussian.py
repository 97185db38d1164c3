"""The mixture-of-Gaussians kind (docs/math.md §2.14): spec, certified PLD pair and Rényi curve, against
dp_accounting, mpmath and the special cases (subsampled Gaussian, Gaussian)."""

import math
import os
import subprocess
import sys

import mpmath as mp
import numpy as np
import pytest

from dpcalc.engine.mechanisms.catalogue import CATALOGUE
from dpcalc.engine.mechanisms.mixture_gaussian import binomial_weights, terms_of
from dpcalc.engine.mechanisms.mixture_gaussian_quad import quad_log_moment
from dpcalc.engine.mechanisms.mixture_gaussian_rdp import rdp_mixture
from dpcalc.engine.mechanisms.mixture_gaussian_terms import MixtureTerms
from dpcalc.engine.orders import DEFAULT_ORDERS
from dpcalc.errors import InputError
from dpcalc.input.spec import parse_mechanism

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MOG = CATALOGUE["mixture-gaussian"]


def _rows(res):
    assert res.exit_code == 0, res.stderr
    lines = res.stdout.splitlines()
    head = lines[0].split(",")
    return {line.split(",")[0]: dict(zip(head, line.split(","))) for line in lines[1:]}


def _compose(invoke, *args):
    return _rows(invoke(["compose", *args, "-f", "csv"]))


# ------------------------------------------------------------------------------ mpmath references

mp.mp.dps = 40


def _mp_loss(sigma, c, p):
    s = mp.mpf(sigma)
    return lambda x: mp.log(
        sum(mp.mpf(pi) * mp.exp((ci * x - mp.mpf(ci) ** 2 / 2) / s**2) for ci, pi in zip(c, p))
    )


def _mp_log_moment(sigma, c, p, lam):
    """log E_{N(0,σ²)}[e^{λL}] by quadrature at 25 digits (the same 18 digits as at 40, in less than half the
    time: the comparisons below need 12)."""
    with mp.workdps(25):
        return _log_moment_here(sigma, c, p, lam)


def _log_moment_here(sigma, c, p, lam):
    s = mp.mpf(sigma)
    L = _mp_loss(sigma, c, p)
    f = lambda x: mp.exp(-(x**2) / (2 * s**2) + lam * L(x)) / (s * mp.sqrt(2 * mp.pi))  # noqa: E731
    cm = max(c)
    lo = -abs(lam) * cm - 25 * s if lam < 0 else -25 * s
    hi = lam * cm + 25 * s if lam > 0 else cm + 25 * s
    # Gauss-Legendre on 20 pieces: the same 25 digits as tanh-sinh on 80 (checked when this was changed), in a
    # fifth of the time; the quadrature's own error estimate is held to 1e-15 of the value
    value, err = mp.quad(f, mp.linspace(lo, hi, 20), method="gauss-legendre", error=True)
    assert err <= value * mp.mpf("1e-15"), (sigma, c, p, lam, value, err)
    return mp.log(value)


def _mp_profile(sigma, c, p, eps):
    """δ(ε) of both orderings of the pair, exactly (L is monotone: one crossing point each)."""
    s = mp.mpf(sigma)
    L = _mp_loss(sigma, c, p)
    Q = lambda z: mp.erfc(z / mp.sqrt(2)) / 2  # noqa: E731
    x = _mp_root(L, eps)
    remove = sum(mp.mpf(pi) * Q((x - ci) / s) for ci, pi in zip(c, p)) - mp.e**eps * Q(x / s)
    p0 = sum(pi for ci, pi in zip(c, p) if ci == 0)
    if p0 > 0 and -eps <= math.log(p0):
        return float(remove), 0.0  # the add direction's loss is below −log p0 <= ε
    y = _mp_root(L, -eps)
    add = (1 - Q(y / s)) - mp.e**eps * sum(mp.mpf(pi) * (1 - Q((y - ci) / s)) for ci, pi in zip(c, p))
    return float(remove), float(add)


def _mp_root(L, level):
    """x with L(x) = level (L increasing), by bisection to 1e-30."""
    lo, hi = mp.mpf(-200), mp.mpf(200)
    for _ in range(120):
        mid = (lo + hi) / 2
        if L(mid) < level:
            lo = mid
        else:
            hi = mid
    return (lo + hi) / 2


# ------------------------------------------------------------------------------ spec


def test_spec_forms_and_label_round_trip():
    s = parse_mechanism("mog:sigma=1,sens=0|1|2,probabilities=0.2|0.6|0.2,count=3")
    assert s.kind == "mixture-gaussian" and s.params["sensitivities"] == "0.0|1.0|2.0"
    again = parse_mechanism(s.label())
    assert again.params == s.params and again.count == 3
    g = parse_mechanism("mixture-of-gaussians:sigma=2,group=3,q=0.1")
    t = terms_of(g.params)
    assert list(t.c) == [0, 1, 2, 3]
    np.testing.assert_allclose(t.p, [0.729, 0.243, 0.027, 0.001], rtol=1e-13)
    # q with an explicit mixture: run on a Poisson subsample (a zero component of weight 1 − q)
    sub = terms_of(parse_mechanism("mog:sigma=1,sensitivities=1|2,probs=0.5|0.5,q=0.1").params)
    np.testing.assert_allclose(sub.c, [0, 1, 2])
    np.testing.assert_allclose(sub.p, [0.9, 0.05, 0.05], rtol=1e-14)
    # probabilities within 1e-9 of summing to 1 are divided by their sum
    n = terms_of(
        parse_mechanism("mog:sigma=1,sensitivities=0|1|2,probs=0.3333333333|0.3333333333|0.3333333333").params
    )
    assert abs(math.fsum(n.p) - 1.0) < 1e-15


@pytest.mark.parametrize(
    "spec,match",
    [
        ("mog:sigma=1,sensitivities=0|1|2,probs=0.2|0.8", "sensitivities has 3 entries and probs has 2"),
        (
            "mog:sigma=1,sensitivities=0|-1,probs=0.5|0.5",
            r"sensitivities='0\|-1' \(entry 2, -1.0, is negative",
        ),
        ("mog:sigma=1,sensitivities=0|1,probs=-0.5|1.5", r"probs='-0.5\|1.5' \(entry 1, -0.5, is negative"),
        ("mog:sigma=1,sensitivities=0|1,probs=0.5|0.6", "the probabilities sum to 1.1, not 1 within 1e-09"),
        (
            "mog:sigma=1,sensitivities=0|nan,probs=0.5|0.5",
            r"sensitivities='0\|nan' \(entry 2, 'nan', is not a finite",
        ),
        ("mog:sigma=1,sensitivities=0|x,probs=0.5|0.5", r"\(entry 2, 'x', is not a number\)"),
        ("mog:sigma=1,sensitivities=0|0,probs=0.5|0.5", "no component has sensitivity > 0"),
        ("mog:sigma=1,sensitivities=1|2", "key 'sensitivities' needs probs="),
        ("mog:sigma=1,group=3", "key 'group' needs q=Q"),
        ("mog:sigma=1,group=1000,q=0.1", r"group='1000' \(must be a whole number in \[1, 999\]\)"),
        ("mog:sigma=1,group=2,q=0.1,probs=1", "keys probs and group both given"),
        ("mog:sigma=1", "missing keys: give sensitivities="),
        ("mog:sigma=1,sampling=poisson,group=2,q=0.1", "unknown key 'sampling'"),
    ],
)
def test_bad_specs_name_the_key(spec, match):
    with pytest.raises(InputError, match=match):
        parse_mechanism(spec)


def test_too_many_components_is_refused():
    spec = (
        "mog:sigma=1,sensitivities="
        + "|".join(["1"] * 1001)
        + ",probs="
        + "|".join(["0.000999000999000999"] * 1001)
    )
    with pytest.raises(InputError, match="1001 entries, above the limit of 1000 components"):
        parse_mechanism(spec)


def test_bad_spec_through_the_command_line_is_one_line_exit_2():
    env = {**os.environ, "PYTHONPATH": ROOT}
    res = subprocess.run(
        [
            sys.executable,
            "-m",
            "dpcalc",
            "compose",
            "mog:sigma=1,sensitivities=0|1|2,probs=0.2|0.6|0.3",
            "--delta",
            "1e-5",
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert res.returncode == 2
    assert res.stdout == ""
    assert res.stderr.strip().count("\n") == 0 and "probs='0.2|0.6|0.3'" in res.stderr


# ------------------------------------------------------------------------------ PLD


def test_pld_bracket_contains_dp_accounting(invoke):
    """dp_accounting's own example (σ = 1, sensitivities 0, 1, 2, probabilities 0.2, 0.6, 0.2), one step."""
    pld = pytest.importorskip("dp_accounting.pld.pld_privacy_accountant")
    dp_event = pytest.importorskip("dp_accounting.dp_event")
    acc = pld.PLDAccountant(value_discretization_interval=1e-3)
    acc.compose(dp_event.MixtureOfGaussiansDpEvent(1.0, [0.0, 1.0, 2.0], [0.2, 0.6, 0.2]))
    theirs = acc.get_epsilon(1e-5)
    row = _compose(
        invoke,
        "mixture-gaussian:sigma=1,sensitivities=0|1|2,probs=0.2|0.6|0.2",
        "--delta",
        "1e-5",
        "--method",
        "pld",
    )["pld"]
    lo, up = float(row["epsilon_lower"]), float(row["epsilon"])
    assert lo <= theirs <= up
    assert theirs == pytest.approx(7.677, abs=1e-3) and up - lo < 0.03


@pytest.mark.parametrize(
    "sigma,c,p",
    [
        (1.0, [0, 1, 2], [0.2, 0.6, 0.2]),
        (2.0, [0, 1, 2, 3], binomial_weights(3, 0.3)),
        (1.5, [1.0, 2.5], [0.7, 0.3]),
    ],
)
@pytest.mark.parametrize("eps", [0.5, 2.0])
def test_pld_bracket_contains_the_exact_profile(invoke, sigma, c, p, eps):
    remove, add = _mp_profile(sigma, c, p, eps)
    spec = (
        f"mog:sigma={sigma},sensitivities={'|'.join(map(repr, map(float, c)))},probs={'|'.join(map(repr, p))}"
    )
    row = _compose(invoke, spec, "--epsilon", str(eps), "--method", "pld")["pld"]
    lo, up = float(row["delta_lower"]), float(row["delta"])
    exact = max(remove, add)
    assert lo <= exact * (1 + 1e-9) and exact <= up
    assert up <= exact * 1.05 + 1e-12


def test_pld_directions_are_certified_separately():
    """Each direction's tails are upper bounds on the exact masses (mpmath), and the models' ranges hold."""
    t = MixtureTerms(1.0, [0, 1, 2], [0.2, 0.6, 0.2])
    rem, add = MOG.pld_pair({"sigma": 1.0, "sensitivities": "0|1|2", "probs": "0.2|0.6|0.2"})
    s = mp.mpf(1)
    Q = lambda z: mp.erfc(z / mp.sqrt(2)) / 2  # noqa: E731
    L = _mp_loss(1.0, [0, 1, 2], [0.2, 0.6, 0.2])
    for b in [0.5, 3.0, 8.0]:
        x = _mp_root(L, b)
        exact = mp.log(sum(mp.mpf(pi) * Q((x - ci) / s) for ci, pi in zip([0, 1, 2], [0.2, 0.6, 0.2])))
        assert float(exact) <= rem.log_tail_above(b) <= float(exact) + 1e-7
        if b < -t.log_p0:
            y = _mp_root(L, -b)
            exact_add = mp.log(Q(-y / s))  # P(−L > b) = P(X < y) under N(0, 1)
            assert float(exact_add) <= add.log_tail_above(b) <= float(exact_add) + 1e-7
    assert rem.loss_min <= math.log(0.2) and add.loss_max >= -math.log(0.2)


@pytest.mark.parametrize(
    "sigma,c,p",
    [
        (1.0, [0, 1, 2], binomial_weights(2, 0.0064)),
        (1.0, list(range(11)), binomial_weights(10, 0.0064)),
        (0.6, [0, 1, 2], [0.2, 0.6, 0.2]),
        (1.5, [1.0, 2.5], [0.7, 0.3]),
        (2.0, list(range(41)), binomial_weights(40, 0.3)),  # past the loop's 32 components
    ],
)
def test_inverse_keeps_the_bisections_guarantees(sigma, c, p):
    """The inverse of every loss value at once (Newton steps, probes, bisection): ``L(lo) <= ℓ < L(hi)`` as
    :meth:`log_ratio` computes it, as narrow as the bisection's stopping rule, and around the mpmath root."""
    t = MixtureTerms(sigma, c, p)
    ell = np.linspace(t.log_p0 if t.p0 > 0 else -40.0, 60.0, 3001)[1:]
    if t.p0 > 0:  # the flat end, just above the infimum of L
        ell = np.concatenate([t.log_p0 + np.logspace(-15, -1, 60), ell])
    lo, hi = t.inverse(ell)
    assert np.all(np.isfinite(lo)) and np.all(np.isfinite(hi))
    assert np.all(t.log_ratio(lo) <= ell)
    assert not np.any(t.log_ratio(hi) <= ell)
    assert np.all((hi - lo <= 4e-16 * np.abs(hi)) | (np.nextafter(lo, np.inf) >= hi))
    L = _mp_loss(sigma, c, p)
    for v, a, b in zip(ell[1::350], lo[1::350], hi[1::350]):
        x = float(_mp_root(L, v))
        # the root as far as the computed loss can tell it (its rounding error over the slope)
        noise = (
            8.0 * float(t.log_ratio_error(np.array([x]))[0]) / max(float(t.slope(np.array([x]))[0]), 1e-300)
        )
        assert a - noise <= x <= b + noise
        # the element on its own (the scalar calls of point_below/point_above)
        a1, b1 = t.inverse(np.array([v]))
        assert t.log_ratio(a1)[0] <= v < t.log_ratio(b1)[0]
        assert a1[0] - noise <= x <= b1[0] + noise
    lo, hi = t.inverse(np.array([t.log_p0, np.inf]))
    assert lo[0] == hi[0] == -np.inf and lo[1] == hi[1] == np.inf


def test_active_bisection_is_the_bisection():
    from dpcalc.engine._roots import bisect, bisect_active

    rng = np.random.default_rng(7)
    e = rng.normal(size=500) * 10.0
    lo, hi = np.full(500, -10.0), np.concatenate([np.full(250, 10.0), np.full(250, 1e3)])
    ref = bisect(lambda x: x**3 - e, lo, hi)
    got = bisect_active(lambda x, i: x**3 - e[i], lo, hi)
    np.testing.assert_array_equal(ref[0], got[0])
    np.testing.assert_array_equal(ref[1], got[1])


def test_group_one_is_the_subsampled_gaussian(invoke):
    a = _compose(invoke, "mog:sigma=0.9,group=1,q=0.05,count=200", "--delta", "1e-6", "--method", "pld")[
        "pld"
    ]
    b = _compose(invoke, "sgm:sigma=0.9,q=0.05,count=200", "--delta", "1e-6", "--method", "pld")["pld"]
    for k in ("epsilon", "epsilon_lower"):
        assert float(a[k]) == pytest.approx(float(b[k]), rel=1e-6)


def test_one_component_is_the_gaussian(invoke):
    a = _compose(invoke, "mog:sigma=2,sensitivities=3,probs=1,count=5", "--delta", "1e-5", "--method", "all")
    b = _compose(invoke, "gaussian:sigma=2,sensitivity=3,count=5", "--delta", "1e-5", "--method", "all")
    for m in ("exact", "pld"):
        assert a[m]["epsilon"] == b[m]["epsilon"], m
    assert float(a["rdp"]["epsilon"]) == pytest.approx(float(b["rdp"]["epsilon"]), rel=1e-13)
    curve = MOG.rdp({"sigma": 2.0, "sensitivities": "3.0", "probs": "1.0"}, DEFAULT_ORDERS)
    np.testing.assert_allclose(curve, DEFAULT_ORDERS * 9 / 8, rtol=1e-12)


# ------------------------------------------------------------------------------ Rényi DP


@pytest.mark.parametrize(
    "sigma,c,p",
    [
        (1.0, [0, 1, 2], [0.2, 0.6, 0.2]),
        (2.0, [0, 1, 2, 3], binomial_weights(3, 0.1)),
        (0.8, [0, 1], [0.95, 0.05]),
        (1.5, [1.0, 2.5], [0.7, 0.3]),
        (3.0, [0, 0.5, 1.5, 2.0], [0.4, 0.3, 0.2, 0.1]),
    ],
)
def test_rdp_is_above_the_exact_divergences(sigma, c, p):
    t = MixtureTerms(sigma, c, p)
    orders = np.array([1.5, 2.0, 2.5, 3.0, 4.7, 8.0, 13.0, 20.0])
    curve = rdp_mixture(t, orders)
    for al, v in zip(orders, curve):
        rem = float(_mp_log_moment(sigma, c, p, al)) / (al - 1)
        add = float(_mp_log_moment(sigma, c, p, 1 - al)) / (al - 1)
        assert v >= max(rem, add)
        tol = 1e-2 if al.is_integer() else 2.5e-2  # fractional orders: quadrature or chord
        assert v <= max(rem, add) * (1 + tol) + 1e-12, (al, v, rem, add)
        # each direction's quadrature bound holds (and is close) on its own
        for lam, ref in ((al, rem), (1 - al, add)):
            q = quad_log_moment(t, lam)
            if q is not None:
                assert ref * (al - 1) <= q <= ref * (al - 1) * (1 + 5e-3) + 1e-12


@pytest.mark.parametrize(
    "sigma,c,p",
    [(1.0, [0, 1, 2], binomial_weights(2, 0.0064)), (0.7, [0, 1, 2, 3], binomial_weights(3, 0.3))],
)
def test_quadrature_leaves_out_only_intervals_that_add_nothing(sigma, c, p, monkeypatch):
    """At high orders the remove direction's quadrature evaluates only the blocks of intervals that can add
    to its sums: the same bound (to the rounding of the sums) and the same work as evaluating them all."""
    import dpcalc.engine.mechanisms.mixture_gaussian_quad as quad

    for lam in (1700.0, 6000.0):
        t1, t2 = MixtureTerms(sigma, c, p), MixtureTerms(sigma, c, p)
        skipped = quad_log_moment(t1, lam, with_lower=True)
        with monkeypatch.context() as mpatch:
            mpatch.setattr(quad, "SKIP_FROM", 10**12)
            whole = quad_log_moment(t2, lam, with_lower=True)
        assert skipped[0] == pytest.approx(whole[0], rel=1e-15) and skipped[0] >= whole[0] * (1 - 1e-15)
        assert skipped[1] == pytest.approx(whole[1], rel=1e-15)
        assert t1.work == t2.work


def test_rdp_remove_direction_is_exact_at_integer_orders():
    """Where the remove direction is the larger, the curve at whole orders is the exact sum (1e-9)."""
    t = MixtureTerms(1.0, [0, 1, 2], [0.2, 0.6, 0.2])
    orders = np.array([2.0, 3.0, 7.0, 30.0])
    curve = rdp_mixture(t, orders)
    for al, v in zip(orders, curve):
        rem = float(_mp_log_moment(1.0, [0, 1, 2], [0.2, 0.6, 0.2], al)) / (al - 1)
        assert rem <= v <= rem * (1 + 1e-9)


@pytest.mark.parametrize("sigma,q", [(1.0, 0.01), (0.7, 0.1), (2.0, 0.05), (5.0, 0.001)])
def test_group_one_rdp_matches_the_subsampled_gaussian(sigma, q):
    mine = MOG.rdp({"sigma": sigma, "group": 1.0, "q": q}, DEFAULT_ORDERS)
    sgm = CATALOGUE["subsampled-gaussian"].rdp(
        {"sigma": sigma, "q": q, "sampling": "poisson"}, DEFAULT_ORDERS
    )
    ratio = mine / sgm
    assert np.all(ratio >= 1 - 1e-9)  # both are upper bounds of the same (exact) divergence
    assert np.all(ratio <= 1.04)  # fractional orders: quadrature (1 %), or the chord past the work limit
    whole = DEFAULT_ORDERS == np.round(DEFAULT_ORDERS)
    assert np.all(ratio[whole & (DEFAULT_ORDERS <= 64)] <= 1 + 1e-4)


def test_rdp_curve_non_decreasing_and_bounded_by_the_components():
    for sigma, c, p in [(1.0, [0, 1, 2], [0.2, 0.6, 0.2]), (4.0, list(range(6)), binomial_weights(5, 0.02))]:
        t = MixtureTerms(sigma, c, p)
        curve = rdp_mixture(t, DEFAULT_ORDERS)
        assert np.all(np.diff(curve) >= 0)
        a = DEFAULT_ORDERS
        comp = [
            float(mp.log(sum(pi * mp.exp(x * (x - 1) * ci**2 / (2 * sigma**2)) for ci, pi in zip(c, p))))
            / (x - 1)
            for x in a[a < 30]
        ]
        assert np.all(curve[a < 30] <= np.array(comp) * (1 + 1e-12))


# ------------------------------------------------------------------------------ compose


def test_calibration_round_trip(invoke):
    spec = "mixture-gaussian:sensitivities=0|1|2,probs=0.2|0.6|0.2"
    row = _compose(invoke, spec, "--epsilon", "3", "--delta", "1e-5", "--method", "pld")["pld"]
    sigma = float(row["sigma"])
    assert 1.5 < sigma < 2.5
    fwd = _compose(invoke, f"{spec},sigma={sigma!r}", "--delta", "1e-5", "--method", "pld")["pld"]
    assert float(fwd["epsilon"]) <= 3.0
    less = _compose(invoke, f"{spec},sigma={sigma / 1.001!r}", "--delta", "1e-5", "--method", "pld")["pld"]
    assert float(less["epsilon"]) > 3.0


def test_epsilon_decreases_with_sigma_and_grows_with_larger_sensitivities(invoke):
    eps = []
    for sigma in (1.0, 1.5, 2.5):
        row = _compose(
            invoke,
            f"mog:sigma={sigma},sensitivities=0|1|2,probs=0.5|0.3|0.2",
            "--delta",
            "1e-5",
            "--method",
            "pld",
        )
        eps.append(float(row["pld"]["epsilon"]))
    assert eps[0] > eps[1] > eps[2]
    moved = []
    for probs in ("0.5|0.3|0.2", "0.5|0.2|0.3", "0.3|0.4|0.3"):
        rows = _compose(
            invoke, f"mog:sigma=1.5,sensitivities=0|1|2,probs={probs}", "--delta", "1e-5", "--method", "all"
        )
        moved.append((float(rows["pld"]["epsilon"]), float(rows["rdp"]["epsilon"])))
    assert moved[0][0] < moved[1][0] < moved[2][0]
    assert moved[0][1] < moved[1][1] < moved[2][1]


def test_rdp_of_a_composition_is_count_times_one(invoke):
    a = _compose(invoke, "mog:sigma=1.2,group=2,q=0.02,count=500", "--delta", "1e-6", "--method", "all")
    assert float(a["pld"]["epsilon"]) <= float(a["rdp"]["epsilon"])
    assert float(a["pld"]["epsilon_lower"]) <= float(a["pld"]["epsilon"])
