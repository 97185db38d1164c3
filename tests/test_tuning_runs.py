"""--tuning-runs: private hyperparameter tuning (Papernot & Steinke 2022, arXiv:2110.03620; docs/math.md §2.10).

The distributions (Definition 1) against scipy.stats and mpmath; Thm 2 and Thm 6 against an independent mpmath
evaluation for a Gaussian base curve; special cases; monotonicity; dp_accounting's RepeatAndSelectDpEvent; the CLI.
"""

import csv
import io

import mpmath
import numpy as np
import pytest
import scipy.stats as st

from dpcalc.cli.tuning import parse_tuning
from dpcalc.engine.composition import tuning as t
from dpcalc.engine.orders import DEFAULT_ORDERS

ORDERS = np.asarray(DEFAULT_ORDERS, float)


def gaussian_curve(r2):
    """ε(λ) = λ·r²/2: k Gaussians with Σ(Δ/σ)² = r² (Mironov 2017)."""
    return ORDERS * r2 / 2


def _rows(res):
    assert res.exit_code == 0, res.stderr
    return list(csv.DictReader(io.StringIO(res.stdout)))


# ------------------------------------------------------------------------------------------ distributions


@pytest.mark.parametrize("gamma", [0.9, 0.3, 0.05])
@pytest.mark.parametrize("eta", [0.0, 0.5, 1.0, 2.5])
def test_tnb_mass_and_mean_against_mpmath(gamma, eta):
    mpmath.mp.dps = 30
    g, e = mpmath.mpf(gamma), mpmath.mpf(eta)

    def pmf(k):
        if eta == 0:
            return (1 - g) ** k / (k * mpmath.log(1 / g))
        return (1 - g) ** k / (g ** (-e) - 1) * mpmath.rf(e, k) / mpmath.factorial(k)

    total = mpmath.nsum(pmf, [1, mpmath.inf])
    mean = mpmath.nsum(lambda k: k * pmf(k), [1, mpmath.inf])
    assert abs(total - 1) < 1e-12
    assert float(t.tnb_mean(gamma, eta)) == pytest.approx(float(mean), rel=1e-12)
    ks = np.array([1, 2, 5, 20])
    assert t.tnb_pmf(ks, gamma, eta) == pytest.approx([float(pmf(int(k))) for k in ks], rel=1e-10)


@pytest.mark.parametrize("gamma", [0.7, 0.1, 0.004])
def test_distributions_against_scipy(gamma):
    assert float(t.tnb_mean(gamma, 1.0)) == pytest.approx(st.geom(gamma).mean(), rel=1e-14)
    assert float(t.tnb_mean(gamma, 0.0)) == pytest.approx(st.logser(1 - gamma).mean(), rel=1e-12)
    ks = np.arange(1, 30)
    assert t.tnb_pmf(ks, gamma, 1.0) == pytest.approx(st.geom(gamma).pmf(ks), rel=1e-12)
    assert t.tnb_pmf(ks, gamma, 0.0) == pytest.approx(st.logser(1 - gamma).pmf(ks), rel=1e-12)
    for eta in (0.3, 2.0):
        nb = st.nbinom(eta, gamma)  # P[K = k] = C(k+η−1, k) γ^η (1−γ)^k, k >= 0; truncated: K >= 1
        assert t.tnb_pmf(ks, gamma, eta) == pytest.approx(nb.pmf(ks) / nb.sf(0), rel=1e-10)
        assert float(t.tnb_mean(gamma, eta)) == pytest.approx(nb.mean() / nb.sf(0), rel=1e-12)


def test_logarithmic_is_the_limit_of_the_negative_binomial():
    for gamma in (0.5, 0.01):
        assert float(t.tnb_mean(gamma, 1e-9)) == pytest.approx(float(t.tnb_mean(gamma, 0.0)), rel=1e-7)
        assert t.tnb_pmf(np.arange(1, 10), gamma, 1e-9) == pytest.approx(
            t.tnb_pmf(np.arange(1, 10), gamma, 0.0), rel=1e-7
        )


@pytest.mark.parametrize("eta", [0.0, 0.5, 1.0, 3.0])
@pytest.mark.parametrize("mean", [1.5, 10.0, 1e4])
def test_gamma_from_mean(eta, mean):
    g = t.tnb_gamma(mean, eta)
    assert 0 < g < 1
    assert float(t.tnb_mean(g, eta)) == pytest.approx(mean, rel=1e-12)
    assert float(t.tnb_mean(g, eta)) >= mean * (1 - 1e-15)  # the conservative side (smaller γ)


# ---------------------------------------------------------------------------------------------- theorems


def _mp_thm2(r2, eta, gamma, mean):
    """Thm 2 evaluated independently in mpmath on the grid (ε(λ) = λr²/2), then the running minimum."""
    mpmath.mp.dps = 40
    lam = [mpmath.mpf(float(a)) for a in ORDERS]
    eps = [a * mpmath.mpf(r2) / 2 for a in lam]
    c = min(
        (1 + mpmath.mpf(eta)) * ((1 - 1 / lh) * eh + mpmath.log(1 / mpmath.mpf(gamma)) / lh)
        for lh, eh in zip(lam, eps)
    )
    raw = [e + c + mpmath.log(mean) / (a - 1) for a, e in zip(lam, eps)]
    return [float(min(raw[i:])) for i in range(len(raw))]


@pytest.mark.parametrize("r2", [1e-3, 0.05, 1.0])
@pytest.mark.parametrize(
    "kind,shape", [("geometric", None), ("logarithmic", None), ("negative-binomial", 0.5)]
)
def test_thm2_against_mpmath(r2, kind, shape):
    runs = t.TuningRuns(kind, 10.0, shape)
    got = t.tuned_rdp(ORDERS, gaussian_curve(r2), runs)
    want = _mp_thm2(r2, runs.eta, runs.gamma(), 10.0)
    assert got == pytest.approx(want, rel=1e-12)


def test_thm6_against_mpmath():
    """Thm 6 with δ̂ given: ε + μδ̂ + log μ/(λ−1); δ̂ for a Gaussian base curve from dpcalc's conversion is a
    valid δ at ε̂ = log(1 + 1/(λ−1)) (at least the exact Gaussian δ, Balle & Wang 2018)."""
    from dpcalc.engine.mechanisms.gaussian_exact import delta_gaussian

    r2, mu = 0.05, 7.0
    curve = gaussian_curve(r2)
    dh = t.poisson_delta_hat(ORDERS, curve)
    eh = t.poisson_eps_hat(ORDERS)
    exact = np.asarray(delta_gaussian(eh, np.sqrt(r2)), float)
    assert np.all(dh >= exact * (1 - 1e-9))
    got = t.poisson_rdp_raw(ORDERS, curve, mu, dh)
    mpmath.mp.dps = 30
    want = [
        float(
            mpmath.mpf(float(a)) * r2 / 2
            + mu * mpmath.mpf(float(d))
            + mpmath.log(mu) / (mpmath.mpf(float(a)) - 1)
        )
        for a, d in zip(ORDERS, dh)
    ]
    assert got == pytest.approx(want, rel=1e-12)
    assert float(mpmath.log1p(1 / (mpmath.mpf(float(ORDERS[50])) - 1))) == pytest.approx(eh[50], rel=1e-15)


def test_geometric_is_negative_binomial_with_shape_one():
    curve = gaussian_curve(0.02)
    a = t.tuned_rdp(ORDERS, curve, t.TuningRuns("geometric", 20.0))
    b = t.tuned_rdp(ORDERS, curve, t.TuningRuns("negative-binomial", 20.0, 1.0))
    assert a == pytest.approx(b, rel=1e-13)


def test_logarithmic_is_the_shape_zero_limit_of_the_bound():
    curve = gaussian_curve(0.02)
    a = t.tuned_rdp(ORDERS, curve, t.TuningRuns("logarithmic", 20.0))
    b = t.tuned_rdp(ORDERS, curve, t.TuningRuns("negative-binomial", 20.0, 1e-9))
    assert a == pytest.approx(b, rel=1e-7)


@pytest.mark.parametrize(
    "kind,shape", [("geometric", None), ("logarithmic", None), ("negative-binomial", 2.0), ("poisson", None)]
)
def test_tuned_at_least_base_and_increasing_in_mean(kind, shape):
    from dpcalc.engine.conversion.methods import eps_from_curve

    curve = gaussian_curve(0.01)
    base = float(eps_from_curve(ORDERS, curve, 1e-6).value)
    prev = base
    for mean in (2.0, 5.0, 20.0, 100.0):
        tuned = t.tuned_rdp(ORDERS, curve, t.TuningRuns(kind, mean, shape))
        assert np.all(tuned[ORDERS > 1] >= curve[ORDERS > 1])
        e = float(eps_from_curve(ORDERS, tuned, 1e-6).value)
        assert e >= prev
        prev = e
    assert prev > base


@pytest.mark.parametrize("mean", [2.0, 10.0, 300.0])
@pytest.mark.parametrize(
    "kind,shape,da_shape",
    [
        ("geometric", None, 1.0),
        ("logarithmic", None, 0.0),
        ("negative-binomial", 0.5, 0.5),
        ("negative-binomial", 3.0, 3.0),
        ("poisson", None, np.inf),
    ],
)
def test_against_dp_accounting(mean, kind, shape, da_shape):
    """dp_accounting's RDP accountant supports RepeatAndSelectDpEvent (the same theorems): dpcalc is equal
    for the negative binomial family (up to its γ bisection, relative 1e-9) and at most it for Poisson (its δ̂
    comes from a looser conversion than the optimal one)."""
    from dp_accounting import dp_event
    from dp_accounting.rdp import rdp_privacy_accountant as ra

    orders = ORDERS[ORDERS <= 256]
    sigma = 8.0
    acc = ra.RdpAccountant(list(orders))
    acc.compose(dp_event.RepeatAndSelectDpEvent(dp_event.GaussianDpEvent(sigma), mean, da_shape))
    theirs = np.asarray(acc._rdp, float)
    mine = t.tuned_rdp(orders, orders / (2 * sigma**2), t.TuningRuns(kind, mean, shape))
    if kind == "poisson":
        assert np.all(mine <= theirs * (1 + 1e-12))
    else:
        assert mine == pytest.approx(theirs, rel=1e-8)


# ------------------------------------------------------------------------------------------------- parse


@pytest.mark.parametrize(
    "text,message",
    [
        ("geom:mean=10", "unknown KIND"),
        ("geometric:mean=1", "mean must be > 1"),
        ("geometric:mean=0.5", "mean must be > 1"),
        ("poisson:mean=0.5", "poisson mean must be >= 1"),
        ("geometric:mean=10,shape=2", "has no shape"),
        ("negative-binomial:mean=10", "needs shape"),
        ("negative-binomial:mean=10,shape=0", "shape must be > -1"),
        ("negative-binomial:mean=10,shape=-1", "shape must be > -1"),
        ("negative-binomial:mean=1e6,shape=-0.99", "out of reach for shape"),
        ("geometric", "needs mean"),
        ("geometric:mean=x", "not a number"),
        ("geometric:means=3", "unknown key"),
    ],
)
def test_parse_errors(text, message, invoke):
    with pytest.raises(ValueError, match=message):
        parse_tuning(text)
    res = invoke(["compose", "gaussian:sigma=10", "--delta", "1e-5", "--tuning-runs", text])
    assert res.exit_code == 2
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and "--tuning-runs" in lines[0] and message.split()[0] in lines[0]


def test_parse_ok():
    r = parse_tuning("negative-binomial:mean=10,shape=0.5")
    assert (r.kind, r.mean, r.shape, r.eta) == ("negative-binomial", 10.0, 0.5, 0.5)
    assert parse_tuning("logarithmic:mean=3").eta == 0.0
    assert parse_tuning("poisson:mean=1").eta is None


# --------------------------------------------------------------------------------------------------- CLI


def test_compose_rdp_row_is_tuned(invoke):
    from dpcalc.engine.conversion.methods import eps_from_curve

    rows = _rows(
        invoke(
            [
                "compose",
                "gaussian:sigma=10,count=100",
                "--delta",
                "1e-5",
                "--tuning-runs",
                "geometric:mean=10",
                "--method",
                "all",
                "-f",
                "csv",
            ]
        )
    )
    by = {r["method"]: r for r in rows}
    assert by["rdp"]["note"].startswith(
        "tuning: K ~ geometric(mean 10), best of K runs (Papernot & Steinke 2022 Thm 2)"
    )
    for m in ("exact", "pld", "optimal", "advanced", "basic"):
        assert by[m]["note"] == "does not apply with --tuning-runs (an RDP bound)" and by[m]["epsilon"] == ""
    tuned = t.tuned_rdp(ORDERS, gaussian_curve(1.0), t.TuningRuns("geometric", 10.0))
    want = float(eps_from_curve(ORDERS, tuned, 1e-5).value)
    assert float(by["rdp"]["epsilon"]) == pytest.approx(want, rel=1e-9)
    best = _rows(
        invoke(
            [
                "compose",
                "gaussian:sigma=10,count=100",
                "--delta",
                "1e-5",
                "--tuning-runs",
                "geometric:mean=10",
                "-f",
                "csv",
            ]
        )
    )
    assert [r["method"] for r in best] == ["rdp"] and best[0]["epsilon"] == by["rdp"]["epsilon"]
    base = _rows(
        invoke(["compose", "gaussian:sigma=10,count=100", "--delta", "1e-5", "--method", "rdp", "-f", "csv"])
    )
    assert float(base[0]["epsilon"]) < float(by["rdp"]["epsilon"])


def test_compose_poisson_and_delta_direction(invoke):
    rows = _rows(
        invoke(
            [
                "compose",
                "gaussian:sigma=10,count=100",
                "--epsilon",
                "8",
                "--tuning-runs",
                "poisson:mean=10",
                "-f",
                "csv",
            ]
        )
    )
    assert rows[0]["method"] == "rdp" and "Thm 6" in rows[0]["note"]
    assert 0 < float(rows[0]["delta"]) < 1


def test_compose_delta_zero_is_inf(invoke):
    rows = _rows(
        invoke(
            [
                "compose",
                "laplace:scale=10",
                "--delta",
                "0",
                "--tuning-runs",
                "geometric:mean=5",
                "--method",
                "rdp",
                "-f",
                "csv",
            ]
        )
    )
    assert rows[0]["epsilon"] == "inf" and "δ = 0" in rows[0]["note"]


@pytest.mark.parametrize(
    "extra,message",
    [
        (["--method", "pld"], "--tuning-runs applies to --method rdp"),
        (["--rdp-curve"], "--tuning-runs cannot be used with --rdp-curve"),
    ],
)
def test_compose_refusals(extra, message, invoke):
    args = ["compose", "gaussian:sigma=10"] + (["--delta", "1e-5"] if "--rdp-curve" not in extra else [])
    res = invoke(args + ["--tuning-runs", "geometric:mean=10", *extra])
    assert res.exit_code == 2 and message in res.stderr


def test_compose_refuses_calibration(invoke):
    res = invoke(
        [
            "compose",
            "gaussian:count=10",
            "--epsilon",
            "1",
            "--delta",
            "1e-5",
            "--tuning-runs",
            "geometric:mean=10",
        ]
    )
    assert res.exit_code == 2 and "σ calibration" in res.stderr


SGD = ["sgd-epsilon", "--sigma", "1.1", "--sample-rate", "0.004267", "--steps", "1000", "--delta", "1e-5"]


def test_sgd_rdp_row_is_tuned(invoke):
    from dpcalc.engine.dpsgd import accounting as sgd

    rows = _rows(invoke(SGD + ["--tuning-runs", "logarithmic:mean=20", "--method", "all", "-f", "csv"]))
    by = {r["accountant"]: r for r in rows}
    assert (
        by["rdp"]["note"]
        == "tuning: K ~ logarithmic(mean 20), best of K runs (Papernot & Steinke 2022 Thm 2)"
    )
    assert by["pld"]["note"] == by["abadi"]["note"] == "does not apply with --tuning-runs (an RDP bound)"
    assert by["pld"]["epsilon"] == "" and by["pld"]["valid"] == ""
    total = 1000 * sgd.rdp_per_step(0.004267, 1.1, ORDERS)
    tuned = t.tuned_rdp(ORDERS, total, t.TuningRuns("logarithmic", 20.0))
    want = float(sgd.eps_of_curve(ORDERS, tuned, 1e-5).value)
    assert float(by["rdp"]["epsilon"]) == pytest.approx(want, rel=1e-12)
    base = _rows(invoke(SGD + ["-f", "csv"]))
    assert float(base[0]["epsilon"]) < float(by["rdp"]["epsilon"])


def test_sgd_conversion_and_poisson(invoke):
    opt = _rows(invoke(SGD + ["--tuning-runs", "poisson:mean=10", "-f", "csv"]))
    balle = _rows(invoke(SGD + ["--tuning-runs", "poisson:mean=10", "--conversion", "balle", "-f", "csv"]))
    assert "Thm 6" in opt[0]["note"] and balle[0]["conversion"] == "balle"
    assert float(opt[0]["epsilon"]) <= float(balle[0]["epsilon"])


@pytest.mark.parametrize(
    "args,message",
    [
        (
            ["--target-epsilon", "3", "--sample-rate", "0.01", "--sigma", "1", "--delta", "1e-5"],
            "--tuning-runs with --target-epsilon solves for the noise multiplier only",
        ),
        (SGD[1:] + ["--method", "pld"], "--tuning-runs applies to --method rdp"),
        (
            ["--sigma", "1", "--sample-rate", "0.01", "--steps", "10", "--rdp-curve"],
            "--tuning-runs cannot be used with --rdp-curve",
        ),
    ],
)
def test_sgd_refusals(args, message, invoke):
    res = invoke(["sgd-epsilon", *args, "--tuning-runs", "geometric:mean=10"])
    assert res.exit_code == 2 and message in res.stderr


# ------------------------------------------------------------------------- η ∈ (−1, 0) and Poisson μ < 1


def _mp_tnb(gamma, eta, kmax=4000):
    """Definition 1 summed in mpmath for any η > −1: (total mass, mean) over k = 1..kmax."""
    mpmath.mp.dps = 40
    g, e = mpmath.mpf(gamma), mpmath.mpf(eta)
    norm = g ** (-e) - 1
    prod, total, mean = mpmath.mpf(1), mpmath.mpf(0), mpmath.mpf(0)
    for k in range(1, kmax + 1):
        prod *= (k - 1 + e) / k
        p = (1 - g) ** k / norm * prod
        total += p
        mean += k * p
    return total, mean


@pytest.mark.parametrize("eta", [-0.9, -0.5, -0.1])
@pytest.mark.parametrize("gamma", [0.02, 0.3])
def test_negative_shape_distribution_against_mpmath(eta, gamma):
    """Papernot & Steinke 2022, Definition 1 and Thm 2 take η > −1: for η < 0 the product and γ^{−η} − 1 are
    both negative and P[K = k] stays a distribution."""
    total, mean = _mp_tnb(gamma, eta)
    assert float(total) == pytest.approx(1.0, rel=1e-12)
    assert float(t.tnb_mean(gamma, eta)) == pytest.approx(float(mean), rel=1e-12)
    ks = np.arange(1, 30)
    assert np.all(t.tnb_pmf(ks, gamma, eta) > 0)
    assert float(np.sum(t.tnb_pmf(np.arange(1, 4001), gamma, eta))) == pytest.approx(float(total), rel=1e-10)


@pytest.mark.parametrize("eta", [-0.9, -0.5])
@pytest.mark.parametrize("mean", [1.5, 10.0, 1e3])
def test_negative_shape_gamma_and_thm2(eta, mean):
    g = t.tnb_gamma(mean, eta)
    assert 0 < g < 1 and float(t.tnb_mean(g, eta)) >= mean * (1 - 1e-15)
    assert float(t.tnb_mean(g, eta)) == pytest.approx(mean, rel=1e-12)
    runs = parse_tuning(f"negative-binomial:mean={mean},shape={eta}")
    got = t.tuned_rdp(ORDERS, gaussian_curve(0.05), runs)
    assert got == pytest.approx(_mp_thm2(0.05, eta, g, mean), rel=1e-12)
    assert np.all(got >= gaussian_curve(0.05))


def test_poisson_mean_below_one_stays_refused():
    """Thm 6's ε + μδ̂ + log(μ)/(λ − 1) is negative for μ < 1 and a base algorithm that ignores its data (ε = δ̂
    = 0), while the tuned algorithm then ignores its data too (divergence 0): the formula is not a bound there."""
    zero = np.zeros_like(ORDERS)
    raw = t.poisson_rdp_raw(ORDERS, zero, 0.5, zero)
    assert np.all(raw[ORDERS > 1] < 0)
    with pytest.raises(ValueError, match="poisson mean must be >= 1"):
        parse_tuning("poisson:mean=0.5")


def test_compose_with_negative_shape(invoke):
    base = ["compose", "gaussian:sigma=10,count=100", "--delta", "1e-5", "--method", "rdp", "-f", "csv"]
    (plain,) = _rows(invoke(base))
    (tuned,) = _rows(invoke([*base, "--tuning-runs", "negative-binomial:mean=10,shape=-0.5"]))
    (loga,) = _rows(invoke([*base, "--tuning-runs", "logarithmic:mean=10"]))
    assert float(plain["epsilon"]) < float(tuned["epsilon"]) < 2 * float(loga["epsilon"])
    assert "shape -0.5" in tuned["note"]


@pytest.mark.parametrize(
    "runs,conversion",
    [
        ("geometric:mean=10", "optimal"),
        ("poisson:mean=5", "balle"),
        ("negative-binomial:mean=20,shape=-0.5", "optimal"),
    ],
)
def test_sgd_target_epsilon_calibrates_sigma_of_the_tuned_run(runs, conversion, invoke):
    """σ is the smallest whose tuned ε meets the target: the forward command at σ meets it, at σ·(1 − 1e-3)
    it does not; and tuning never needs less noise than the untuned run.  (The Poisson law's tuned curve with
    the optimal conversion takes 17 s a calibration: Balle et al.'s conversion keeps this one to a second.)"""
    base = ["sgd-epsilon", "--sample-rate", "0.01", "--steps", "500", "--delta", "1e-5", "-f", "csv"]
    base += ["--conversion", conversion]
    (row,) = _rows(invoke([*base, "--target-epsilon", "2", "--tuning-runs", runs]))
    sigma = float(row["noise_multiplier"])
    assert float(row["epsilon"]) <= 2.0

    def tuned(s):
        (r,) = _rows(invoke([*base, "--noise-multiplier", repr(s), "--tuning-runs", runs]))
        return float(r["epsilon"])

    assert tuned(sigma) <= 2.0 < tuned(sigma * (1 - 1e-3))
    (plain,) = _rows(invoke([*base, "--target-epsilon", "2", "--method", "rdp"]))
    assert float(plain["noise_multiplier"]) < sigma


def test_sgd_target_below_the_tuning_floor_is_reported(invoke):
    """The tuning terms (log E[K]/(λ − 1), ...) remain however large σ is: a tiny target has no σ."""
    base = ["sgd-epsilon", "--sample-rate", "0.01", "--steps", "100", "--delta", "1e-5", "-f", "csv"]
    (row,) = _rows(invoke([*base, "--target-epsilon", "1e-3", "--tuning-runs", "geometric:mean=1e9"]))
    assert row["noise_multiplier"] == "inf" and row["epsilon"] == "" and "no noise multiplier" in row["note"]
