"""dpcalc.engine.audit against independent references: scipy's exact binomial intervals, the Gaussian
trade-off curve, a direct transcription of Steinke, Nasr & Jagielski's p-value, and simulations
(coverage of the lower bounds, convergence to the true ε)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import optimize, stats

from dpcalc.engine.audit import clopper_pearson, counts, gdp, one_run, scores


def _gauss_eps(mu, delta):
    """ε(δ) of μ-GDP by brentq on δ(ε) = Φ(μ/2 − ε/μ) − e^ε Φ(−μ/2 − ε/μ) (Balle & Wang 2018)."""

    def f(e):
        return stats.norm.cdf(mu / 2 - e / mu) - math.exp(e) * stats.norm.cdf(-mu / 2 - e / mu) - delta

    return optimize.brentq(f, 0.0, 100.0, xtol=1e-14, rtol=1e-14) if f(0.0) > 0 else 0.0


@pytest.mark.parametrize("k,n", [(0, 10), (3, 10), (10, 10), (1, 1), (50, 100), (999, 1000), (0, 1)])
@pytest.mark.parametrize("level", [0.9, 0.95, 0.99])
def test_clopper_pearson_matches_scipy_exact(k, n, level):
    ci = stats.binomtest(k, n).proportion_ci(level, method="exact")
    one_sided = (1 + level) / 2  # each end of the two-sided interval is a one-sided bound at (1+L)/2
    lo, hi = clopper_pearson.lower(k, n, one_sided), clopper_pearson.upper(k, n, one_sided)
    assert lo <= ci.low + 1e-15 and lo == pytest.approx(ci.low, rel=1e-9, abs=1e-15)
    assert hi >= ci.high - 1e-15 and hi == pytest.approx(ci.high, rel=1e-9, abs=1e-15)


def test_counts_bound_against_formula_on_scipy_intervals():
    tp, fp, fn, tn, delta, c = 412, 9, 588, 991, 1e-5, 0.95
    level = 1 - 2 * (1 - (1 - (1 - c) / 2))  # two-sided level whose ends are one-sided at 1 − (1−c)/2
    tpr_lo = stats.binomtest(tp, tp + fn).proportion_ci(level, method="exact").low
    fpr_hi = stats.binomtest(fp, fp + tn).proportion_ci(level, method="exact").high
    ref = max(0.0, math.log((tpr_lo - delta) / fpr_hi), math.log((1 - fpr_hi - delta) / (1 - tpr_lo)))
    b = counts.epsilon_lower(tp, fp, fn, tn, delta, c)
    assert b["epsilon_lower"] <= ref and b["epsilon_lower"] == pytest.approx(ref, rel=1e-9)
    # the complementary direction wins when the attack is confident about non-members
    b2 = counts.epsilon_lower(1000, 600, 0, 400, 0.0, c)
    tpr_lo2 = stats.binomtest(1000, 1000).proportion_ci(level, method="exact").low
    fpr_hi2 = stats.binomtest(600, 1000).proportion_ci(level, method="exact").high
    ref2 = math.log((1 - fpr_hi2) / (1 - tpr_lo2))
    assert ref2 > math.log(tpr_lo2 / fpr_hi2)
    assert b2["epsilon_lower"] == pytest.approx(ref2, rel=1e-9) and b2["epsilon_lower"] <= ref2


@pytest.mark.parametrize(
    "tp,fp,fn,tn,delta",
    [
        (5, 0, 0, 5, 0.0),
        (1, 0, 0, 1, 0.0),
        (1000, 0, 0, 1000, 0.0),
        (0, 0, 10, 10, 0.0),
        (10, 10, 0, 0, 1e-5),
        (3, 0, 0, 1, 0.999),
        (0, 5, 5, 0, 0.0),
    ],
)
def test_counts_edge_cases_are_finite_and_never_nan(tp, fp, fn, tn, delta):
    b = counts.epsilon_lower(tp, fp, fn, tn, delta, 0.95)
    mu = gdp.mu_lower(b["tpr_lower"], b["fpr_upper"])
    for v in (b["epsilon_lower"], b["tpr_lower"], b["fpr_upper"], mu):
        assert np.isfinite(v) and v >= 0
    assert not np.isnan(gdp.epsilon_gdp(mu, delta))


def test_counts_perfect_attack_bound_grows_like_log_n():
    # zero false positives, every member found: ε ≥ log(tpr_lo/fpr_hi), with closed-form CP ends
    for n in (10, 100, 10_000):
        c1 = 0.975
        tpr_lo = (1 - c1) ** (1 / n)
        fpr_hi = 1 - (1 - c1) ** (1 / n)
        ref = math.log(tpr_lo / fpr_hi)
        got = counts.epsilon_lower(n, 0, 0, n, 0.0, 0.95)["epsilon_lower"]
        assert got <= ref and got == pytest.approx(ref, rel=1e-8)


def _gaussian_point(mu, tau):
    """(TPR, FPR) of "member if x ≥ τ" between N(μ, 1) (member) and N(0, 1)."""
    return stats.norm.sf(tau - mu), stats.norm.sf(tau)


def test_coverage_by_simulation_gaussian_mechanism():
    """1,000 audits of a μ = 1 Gaussian mechanism at its optimal threshold for δ: the 95% lower bound
    lies below the true ε in at least 95% of them (up to sampling error of the test itself)."""
    mu, delta, n = 1.0, 1e-2, 2000
    true_eps = _gauss_eps(mu, delta)
    tau = true_eps / mu + mu / 2  # likelihood ratio e^ε: the threshold whose point attains ε(δ)
    tpr, fpr = _gaussian_point(mu, tau)
    assert math.log((tpr - delta) / fpr) == pytest.approx(true_eps, rel=1e-6)
    rng = np.random.default_rng(20231)
    tp = rng.binomial(n, tpr, size=1000)
    fp = rng.binomial(n, fpr, size=1000)
    b = counts.epsilon_lower(tp, fp, n - tp, n - fp, delta, 0.95)
    covered = np.mean(b["epsilon_lower"] <= true_eps)
    assert covered >= 0.95 - 3 * math.sqrt(0.95 * 0.05 / 1000)
    assert np.all(np.isfinite(b["epsilon_lower"]))
    # mu_lower covers μ (the GDP statement) as well
    mu_lo = gdp.mu_lower(b["tpr_lower"], b["fpr_upper"])
    assert np.mean(mu_lo <= mu) >= 0.95 - 3 * math.sqrt(0.95 * 0.05 / 1000)
    assert np.mean(b["epsilon_lower"]) > 0.4 * true_eps  # and the bound is not vacuous


def test_coverage_of_each_rate_bound_is_at_least_its_level():
    """The union bound's ingredient: a one-sided CP bound at level L covers in ≥ L of simulations."""
    rng = np.random.default_rng(7)
    p, n, level = 0.03, 300, 0.9
    k = rng.binomial(n, p, size=4000)
    assert np.mean(clopper_pearson.upper(k, n, level) >= p) >= level - 3 * math.sqrt(
        level * (1 - level) / 4000
    )
    assert np.mean(clopper_pearson.lower(k, n, level) <= p) >= level - 3 * math.sqrt(
        level * (1 - level) / 4000
    )


def test_bound_approaches_true_epsilon_as_counts_grow():
    mu, delta = 1.0, 1e-2
    true_eps = _gauss_eps(mu, delta)
    tpr, fpr = _gaussian_point(mu, true_eps / mu + mu / 2)
    gaps = []
    for n in (10**3, 10**4, 10**5, 10**6, 10**8):
        tp, fp = round(n * tpr), round(n * fpr)
        e = counts.epsilon_lower(tp, fp, n - tp, n - fp, delta, 0.95)["epsilon_lower"]
        gaps.append(true_eps - e)
    assert all(a > b for a, b in zip(gaps, gaps[1:]))
    assert abs(gaps[-1]) < 0.01
    # and μ: mu_lower → μ, epsilon_gdp → the exact Gaussian ε
    n = 10**9
    tp, fp = round(n * tpr), round(n * fpr)
    b = counts.epsilon_lower(tp, fp, n - tp, n - fp, delta, 0.95)
    mu_lo = gdp.mu_lower(b["tpr_lower"], b["fpr_upper"])
    assert mu_lo <= mu and mu_lo == pytest.approx(mu, abs=2e-3)


@pytest.mark.parametrize("mu,delta", [(0.5, 1e-5), (1.0, 1e-3), (3.0, 1e-6), (0.05, 0.1)])
def test_epsilon_gdp_against_brentq_profile(mu, delta):
    ref = _gauss_eps(mu, delta)
    got = gdp.epsilon_gdp(mu, delta)
    assert got <= ref + 1e-12 and got == pytest.approx(ref, rel=2e-6, abs=1e-12)


def test_epsilon_gdp_edges():
    assert gdp.epsilon_gdp(0.0, 1e-5) == 0.0
    assert gdp.epsilon_gdp(1.0, 0.0) == math.inf  # a Gaussian curve has no finite pure ε
    assert gdp.epsilon_gdp(0.0, 0.0) == 0.0


# -- one run ---------------------------------------------------------------------------------------
def _paper_p_value(m, r, v, eps, delta):
    """Steinke, Nasr & Jagielski 2023's p-value, transcribed with scalar scipy calls."""
    q = 1 / (1 + math.exp(-eps))
    beta = stats.binom.sf(v - 1, r, q)
    alpha, total = 0.0, 0.0
    for i in range(1, v + 1):
        total += stats.binom.pmf(v - i, r, q)
        alpha = max(alpha, total / i)
    return min(beta + alpha * delta * 2 * m, 1.0)


def _paper_eps(m, r, v, delta, p):
    lo, hi = 0.0, 1.0
    if _paper_p_value(m, r, v, 0.0, delta) >= p:
        return 0.0
    while _paper_p_value(m, r, v, hi, delta) < p:
        hi += 1
    for _ in range(50):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if _paper_p_value(m, r, v, mid, delta) < p else (lo, mid)
    return lo


@pytest.mark.parametrize(
    "m,r,v,delta",
    [
        (1000, 100, 100, 1e-5),
        (1000, 1000, 900, 1e-5),
        (1000, 200, 150, 1e-5),
        (100, 100, 80, 0.0),
        (10000, 1000, 700, 1e-6),
    ],
)
def test_one_run_matches_paper_algorithm(m, r, v, delta):
    ref = _paper_eps(m, r, v, delta, 0.05)
    got = one_run.epsilon_lower(m, r, v, delta, 0.95)
    assert got <= ref + 1e-9 and got == pytest.approx(ref, abs=1e-6)


@pytest.mark.parametrize("r,v", [(5000, 2600), (5000, 3500), (5000, 4999), (20000, 10500), (20000, 2000)])
@pytest.mark.parametrize("eps", [0.0, 0.1, 0.5, 2.0])
def test_one_run_windowed_tail_sum_bounds_the_exact_one(r, v, eps):
    # the p-value sums the binomial terms on a window around the mean and adds the tails whole: never
    # below the exact maximum over all v tail sums, and equal to it up to rounding
    m, delta = 10 * r, 1e-6
    q = 1 / (1 + math.exp(-eps))
    i = np.arange(1, v + 1)
    exact_alpha = np.max(np.cumsum(stats.binom.pmf(v - i, r, q)) / i)
    exact = min(stats.binom.sf(v - 1, r, q) + 2 * m * delta * exact_alpha, 1.0)
    got = float(one_run.p_value(m, r, v, eps, delta))
    assert got >= exact * (1 - 1e-12) and got <= exact * (1 + 1e-9)


def test_one_run_cheap_bounds_bracket_the_tail_term():
    for r, v, eps in [(5000, 2600, 0.0), (5000, 4000, 0.3), (5000, 3000, 1.0), (100, 90, 0.2)]:
        q = 1 / (1 + math.exp(-eps))
        low, high = one_run._alpha_cheap(r, v, q)
        i = np.arange(1, v + 1)
        exact = np.max(np.cumsum(stats.binom.pmf(v - i, r, q)) / i)
        assert low <= exact * (1 + 1e-12) and exact <= high * (1 + 1e-12)


def test_one_run_perfect_guesses_closed_form():
    # δ = 0, v = r: p-value p_ε^r < β ⇔ ε < logit(β^(1/r))
    for r in (10, 100, 1000):
        ref = math.log(0.05 ** (1 / r) / (1 - 0.05 ** (1 / r)))
        got = one_run.epsilon_lower(r, r, r, 0.0, 0.95)
        assert got <= ref and got == pytest.approx(ref, rel=1e-7)


def test_one_run_properties():
    v = np.arange(0, 201, 5)
    e = one_run.epsilon_lower(1000, 200, v, 1e-5, 0.95)
    assert not np.any(np.isnan(e)) and np.all(e >= 0) and np.all(np.isfinite(e))
    assert np.all(np.diff(e) >= 0)  # monotone in the right guesses
    assert np.all(e[v <= 100] == 0)  # no better than chance: nothing
    assert e[-1] > 0
    assert one_run.epsilon_lower(1, 1, 1, 0.0, 0.95) == 0.0  # a single canary proves nothing at 95%
    assert one_run.epsilon_lower(1000, 0, 0, 1e-5, 0.95) == 0.0
    # more δ, or more confidence: a smaller bound
    assert one_run.epsilon_lower(1000, 200, 180, 1e-3, 0.95) <= one_run.epsilon_lower(
        1000, 200, 180, 1e-5, 0.95
    )
    assert one_run.epsilon_lower(1000, 200, 180, 1e-5, 0.99) <= one_run.epsilon_lower(
        1000, 200, 180, 1e-5, 0.95
    )


def test_one_run_conservative_under_simulation():
    """Randomized response with ε = 2 (exactly ε-DP): each guess right with probability e^ε/(1+e^ε)."""
    eps, r, trials = 2.0, 200, 400
    rng = np.random.default_rng(11)
    w = rng.binomial(r, 1 / (1 + math.exp(-eps)), size=trials)
    uniq = np.unique(w)
    bound = dict(zip(uniq.tolist(), one_run.epsilon_lower(r, r, uniq, 0.0, 0.95).tolist()))
    lows = np.array([bound[x] for x in w.tolist()])
    assert np.mean(lows <= eps) >= 0.95 - 3 * math.sqrt(0.95 * 0.05 / trials)
    assert np.median(lows) > 1.0


# -- scores --------------------------------------------------------------------------------------
def test_scores_threshold_chosen_on_the_other_half():
    rng = np.random.default_rng(3)
    member = rng.integers(0, 2, 1001).astype(bool)
    score = rng.normal(size=1001) + 2.0 * member
    out = scores.audit_scores(member, score, 1e-5, 0.95, seed=5)
    sel, ev = scores.split(member.size, 5)
    assert len(set(sel) & set(ev)) == 0 and len(sel) + len(ev) == 1001
    assert out["tp"] + out["fn"] == member[ev].sum() and out["fp"] + out["tn"] == (~member[ev]).sum()
    assert out["threshold"] == scores.choose_threshold(member[sel], score[sel], 1e-5, 0.95)
    tp, fp, fn, tn = scores.count_at(member[ev], score[ev], out["threshold"])
    assert (int(tp), int(fp)) == (out["tp"], out["fp"])
    # the same call is reproducible; another seed splits differently
    assert scores.audit_scores(member, score, 1e-5, 0.95, seed=5) == out
    assert not np.array_equal(scores.split(1001, 6)[0], sel)


def test_scores_no_signal_gives_no_bound_in_most_runs():
    """Scores independent of membership (ε = 0): the split keeps the bound honest (≥ 95% zero)."""
    rng = np.random.default_rng(4)
    zero = 0
    runs = 100
    for _ in range(runs):
        member = rng.integers(0, 2, 400).astype(bool)
        score = rng.normal(size=400)
        o = scores.audit_scores(member, score, 0.0, 0.95, seed=int(rng.integers(1 << 30)))
        zero += counts.epsilon_lower(o["tp"], o["fp"], o["fn"], o["tn"], 0.0, 0.95)["epsilon_lower"] == 0
    assert zero >= 90


def test_scores_half_without_members_is_refused():
    with pytest.raises(ValueError, match="no members"):
        scores.audit_scores(np.zeros(10, bool), np.arange(10.0), 0.0, 0.95)
