"""The `epsilon` / `delta` column of every compose row is a certified bound: checked against exact references
computed independently with mpmath, on random configurations, for every method that prints a number."""

import json
import random

import mpmath as mp
import pytest

mp.mp.dps = 60


def _kov_delta(eps, e0, d0, k):
    """Exact δ(ε) of k compositions of the dominating pair of (ε0, δ0)-DP (Kairouz, Oh & Viswanath 2015)."""
    eps, e0, d0 = mp.mpf(eps), mp.mpf(e0), mp.mpf(d0)
    a = mp.e**e0 / (1 + mp.e**e0)
    b = 1 / (1 + mp.e**e0)
    keep = (1 - d0) ** k
    s = mp.mpf(0)
    for j in range(k + 1):
        loss = (2 * j - k) * e0
        if loss > eps:
            s += mp.binomial(k, j) * a**j * b ** (k - j) * (1 - mp.e ** (eps - loss))
    return 1 - keep + keep * s


def _gauss_delta(eps, r):
    """Exact δ(ε) of the Gaussian mechanism with Δ/σ = r (Balle & Wang 2018, Thm 8)."""
    eps, r = mp.mpf(eps), mp.mpf(r)
    return mp.ncdf(r / 2 - eps / r) - mp.e**eps * mp.ncdf(-r / 2 - eps / r)


def _dp_cases(n=12, seed=7):
    rng = random.Random(seed)
    for _ in range(n):
        e0 = rng.choice([0.01, 0.05, 0.1, 0.3]) * rng.uniform(0.5, 1.5)
        d0 = rng.choice([0.0, 1e-7, 3e-6])
        k = rng.randint(2, 120)
        target = 10 ** rng.uniform(-7, -2) + k * d0
        yield f"dp:epsilon={e0:.5g},delta={d0:g},count={k}", e0, d0, k, target


def _gauss_cases(n=10, seed=11):
    rng = random.Random(seed)
    for _ in range(n):
        sigma = rng.uniform(0.8, 20)
        k = rng.randint(1, 500)
        target = 10 ** rng.uniform(-9, -2)
        yield f"gaussian:sigma={sigma:.5g},count={k}", sigma, k, target


@pytest.mark.parametrize("spec,e0,d0,k,target", list(_dp_cases()))
def test_dp_composition_epsilon_column_is_at_or_above_exact(invoke, spec, e0, d0, k, target):
    res = invoke(["compose", spec, "--delta", f"{target:.6g}", "--method", "all", "-f", "json"])
    assert res.exit_code == 0, res.stderr
    rows = [r for r in json.loads(res.stdout) if r["epsilon"] is not None]
    assert {r["method"] for r in rows} >= {"pld", "optimal"}
    e0 = float(spec.split("epsilon=")[1].split(",")[0])
    for r in rows:
        exact = _kov_delta(r["epsilon"], e0, d0, k)
        assert exact <= mp.mpf(r["delta"]) * (1 + mp.mpf("1e-12")), (r["method"], r["epsilon"], exact)
        if r["method"] == "pld":
            assert r["epsilon_lower"] <= r["epsilon_estimate"] <= r["epsilon"]


@pytest.mark.parametrize("spec,sigma,k,target", list(_gauss_cases()))
def test_gaussian_composition_epsilon_column_is_at_or_above_exact(invoke, spec, sigma, k, target):
    res = invoke(["compose", spec, "--delta", f"{target:.6g}", "--method", "all", "-f", "json"])
    assert res.exit_code == 0, res.stderr
    rows = [r for r in json.loads(res.stdout) if r["epsilon"] is not None]
    assert {r["method"] for r in rows} >= {"exact", "pld", "rdp"}
    sigma = float(spec.split("sigma=")[1].split(",")[0])
    r_total = mp.sqrt(k) / mp.mpf(sigma)
    for r in rows:
        exact = _gauss_delta(r["epsilon"], r_total)
        assert exact <= mp.mpf(r["delta"]) * (1 + mp.mpf("1e-9")), (r["method"], r["epsilon"], exact)


def test_the_reported_case_is_now_sound(invoke):
    """The audit's example: the pld row's estimate (1.757357831657711) had exact δ 8.391630e-4 above the target."""
    spec = "dp:epsilon=0.06472,delta=3.33e-06,count=84"
    res = invoke(["compose", spec, "--delta", "0.00083916", "--method", "pld", "-f", "json"])
    (row,) = json.loads(res.stdout)
    assert _kov_delta(row["epsilon"], 0.06472, 3.33e-6, 84) <= mp.mpf("0.00083916")
    assert _kov_delta(row["epsilon_estimate"], 0.06472, 3.33e-6, 84) > mp.mpf("0.00083916")


def _sgd_cases(n=8, seed=5):
    rng = random.Random(seed)
    for _ in range(n):
        yield rng.uniform(0.6, 8.0), rng.randint(1, 3000), 10 ** rng.uniform(-9, -3)


@pytest.mark.parametrize("sigma,steps,target", list(_sgd_cases()))
def test_sgd_epsilon_column_is_at_or_above_exact_full_batch(invoke, sigma, steps, target):
    """Full-batch DP-SGD (q = 1) is a composition of Gaussians: every accountant's epsilon column is at
    or above the exact value (Balle & Wang, mpmath), and the pld estimate has a column of its own."""
    args = ["sgd-epsilon", "--sigma", f"{sigma:.6g}", "--sample-rate", "1", "--steps", str(steps)]
    res = invoke([*args, "--delta", f"{target:.6g}", "--method", "all", "-f", "json"])
    assert res.exit_code == 0, res.stderr
    rows = json.loads(res.stdout)
    r_total = mp.sqrt(steps) / mp.mpf(f"{sigma:.6g}")
    for r in rows:
        if r["epsilon"] is None or r.get("valid") is False:
            continue
        exact = _gauss_delta(r["epsilon"], r_total)
        assert exact <= mp.mpf(r["delta"]) * (1 + mp.mpf("1e-9")), (r["method"], r["epsilon"], exact)
    pld = [r for r in rows if r["accountant"] == "pld"][0]
    assert pld["epsilon_lower"] <= pld["epsilon_estimate"] <= pld["epsilon"]


def test_convert_epsilon_column_is_at_or_above_a_bruteforce_pair(invoke):
    """Every convert row (each conversion method) against a pair of Bernoulli distributions that meets the
    Rényi constraint: the printed ε is never below what that pair needs at δ (exact in 40 digits)."""
    import numpy as np

    from tests.test_conversions_bruteforce import assert_sound, brute_force

    rng = np.random.default_rng(17)
    alpha = 1.0 + 10.0 ** rng.uniform(-1.0, 2.0, 12)
    zeta = 10.0 ** rng.uniform(-2.0, 0.5, 12)
    delta = 10.0 ** rng.uniform(-9.0, -2.0, 12)
    _, lp = brute_force("eps", alpha, zeta, delta)
    for i in range(alpha.size):
        res = invoke(
            [
                "convert",
                "--alpha",
                repr(float(alpha[i])),
                "--rdp",
                repr(float(zeta[i])),
                "--delta",
                repr(float(delta[i])),
                "--method",
                "all",
                "-f",
                "json",
            ]
        )
        assert res.exit_code == 0, res.stderr
        for row in json.loads(res.stdout):
            if row["epsilon"] is None:
                continue
            assert_sound(
                "eps", alpha[i : i + 1], zeta[i : i + 1], delta[i : i + 1], [row["epsilon"]], lp[i : i + 1]
            )
