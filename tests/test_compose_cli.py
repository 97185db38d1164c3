"""``dpcalc compose`` end to end: methods, non-applicable rows, heterogeneous mixes, calibration, errors."""

import csv
import io
import json
import math

import mpmath
import numpy as np
import pytest

from dpcalc.engine.mechanisms.catalogue import total_rdp
from dpcalc.engine.mechanisms.gaussian_exact import delta_gaussian, eps_gaussian
from dpcalc.engine.orders import DP_ACCOUNTING_ORDERS
from dpcalc.input.spec import parse_mechanisms


def _rows(res):
    assert res.exit_code == 0, res.stderr
    return list(csv.DictReader(io.StringIO(res.stdout)))


def test_default_is_best_and_uses_exact_for_gaussians(invoke):
    rows = _rows(invoke(["compose", "gaussian:sigma=10,count=100", "--delta", "1e-5", "-f", "csv"]))
    assert len(rows) == 1 and rows[0]["method"] == "exact"
    # 100 Gaussians of σ=10 are one of σ=1 (r rounded up by a few ulps)
    expected = float(eps_gaussian(1e-5, 1.0))
    assert expected <= float(rows[0]["epsilon"]) <= expected * (1 + 1e-13)


def test_all_rows_and_non_applicable_cells(invoke):
    rows = _rows(
        invoke(["compose", "gaussian:sigma=2,count=3", "--delta", "1e-5", "--method", "all", "-f", "csv"])
    )
    by = {r["method"]: r for r in rows}
    assert set(by) == {"exact", "pld", "rdp", "optimal", "advanced", "basic"}
    for m in ("optimal", "advanced", "basic"):
        assert by[m]["epsilon"] == "" and by[m]["note"].startswith("does not apply")
    assert float(by["rdp"]["epsilon"]) >= float(by["exact"]["epsilon"])
    res = invoke(["compose", "gaussian:sigma=2,count=3", "--delta", "1e-5", "--method", "all", "-f", "json"])
    data = json.loads(res.stdout)
    assert [d["epsilon"] for d in data if d["method"] == "basic"] == [None]


def test_pure_dp_all_methods_ordered(invoke):
    rows = _rows(
        invoke(["compose", "laplace:scale=10,count=100", "--delta", "1e-5", "--method", "all", "-f", "csv"])
    )
    eps = {r["method"]: float(r["epsilon"]) for r in rows if r["epsilon"]}
    assert eps["optimal"] == pytest.approx(4.3067913725, abs=1e-9)  # docs/math.md §2.3 (Laplace Δ/b = 0.1)
    assert eps["advanced"] == pytest.approx(5.8502350929445575, rel=1e-14)  # §2.2
    assert eps["basic"] == pytest.approx(10.0, rel=1e-14)
    assert eps["optimal"] < eps["rdp"] < eps["advanced"] < eps["basic"]
    # best: the smallest *upper bound*; the Laplace PLD (tighter than the worst case over all 0.1-DP
    # mechanisms that KOV covers) wins, and its upper end is never above KOV's exact worst case
    best = _rows(invoke(["compose", "laplace:scale=10,count=100", "--delta", "1e-5", "-f", "csv"]))
    uppers = {r["method"]: float(r["epsilon"]) for r in rows if r["epsilon"]}
    assert best[0]["method"] == min(uppers, key=uppers.get)
    assert float(best[0]["epsilon"]) == min(uppers.values()) <= eps["optimal"]


def test_heterogeneous_mix_under_rdp_matches_dp_accounting_curve(invoke):
    import dp_accounting
    from dp_accounting import rdp

    texts = [
        "gaussian:sigma=4,count=10",
        "laplace:scale=20,count=5",
        "subsampled-gaussian:q=0.01,sigma=1,count=1000",
    ]
    rows = _rows(invoke(["compose", *texts, "--delta", "1e-6", "--method", "all", "-f", "csv"]))
    by = {r["method"]: r for r in rows}
    assert by["rdp"]["note"] and by["exact"]["note"].startswith("does not apply")
    assert by["basic"]["epsilon"] == ""
    ours = float(by["rdp"]["epsilon"])
    orders = [float(a) for a in DP_ACCOUNTING_ORDERS]  # dp_accounting's own grid (it converges there)
    acc = rdp.RdpAccountant(orders)
    acc.compose(dp_accounting.GaussianDpEvent(4.0), 10)
    acc.compose(dp_accounting.LaplaceDpEvent(20.0), 5)
    acc.compose(dp_accounting.PoissonSampledDpEvent(0.01, dp_accounting.GaussianDpEvent(1.0)), 1000)
    curve = total_rdp(parse_mechanisms(texts), DP_ACCOUNTING_ORDERS)
    theirs = np.asarray(acc._rdp)
    integer = DP_ACCOUNTING_ORDERS == np.round(DP_ACCOUNTING_ORDERS)
    # integer orders: both exact; fractional orders: dp_accounting's subsampled-Gaussian value is an upper
    # bound above the exact one (e.g. 9.92e-5 vs 9.2414711e-5 by mpmath quadrature at α = 1.1, q = 0.01, σ = 1)
    assert np.allclose(curve[integer], theirs[integer], rtol=1e-8)
    assert np.all(curve <= theirs * (1 + 1e-8))
    # a finer grid and the optimal conversion: never looser than dp_accounting
    assert ours <= acc.get_epsilon(1e-6) * (1 + 1e-12)
    # the heterogeneous mix also composes under pld, whose certified upper end is tighter than rdp's,
    # so best picks it
    assert float(by["pld"]["epsilon"]) <= ours
    best = _rows(invoke(["compose", *texts, "--delta", "1e-6", "-f", "csv"]))
    assert best[0]["method"] == "pld" and float(best[0]["epsilon"]) == float(by["pld"]["epsilon"])


def test_epsilon_sweep_gives_delta(invoke):
    rows = _rows(invoke(["compose", "gaussian:sigma=1", "--epsilon", "0.5,1,2", "-f", "csv"]))
    assert [r["method"] for r in rows] == ["exact"] * 3
    for r in rows:
        assert float(r["delta"]) >= float(delta_gaussian(float(r["epsilon"]), 1.0)) * (1 - 1e-15)
    assert [float(r["delta"]) for r in rows] == sorted((float(r["delta"]) for r in rows), reverse=True)


def test_dp_with_delta_rdp_does_not_apply(invoke):
    rows = _rows(
        invoke(["compose", "dp:epsilon=0.1,delta=1e-7,count=50", "--delta", "1e-5", "--method", "rdp"])
    )
    assert rows[0]["epsilon"] == "" and "no Rényi-DP curve" in rows[0]["note"]


def test_optimal_heterogeneous_does_not_apply(invoke):
    rows = _rows(
        invoke(["compose", "laplace:scale=1", "laplace:scale=2", "--delta", "1e-5", "--method", "optimal"])
    )
    assert rows[0]["epsilon"] == "" and "identical" in rows[0]["note"]


def test_basic_needs_enough_delta(invoke):
    rows = _rows(
        invoke(["compose", "dp:epsilon=1,delta=1e-5,count=10", "--delta", "1e-5,1e-3", "--method", "basic"])
    )
    assert rows[0]["epsilon"] == "" and "needs --delta" in rows[0]["note"]
    assert float(rows[1]["epsilon"]) == pytest.approx(10.0)


def test_quiet_and_budget(invoke):
    res = invoke(["compose", "gaussian:sigma=10,count=100", "--delta", "1e-5", "-q"])
    assert res.exit_code == 0 and float(res.stdout) == pytest.approx(4.377178, rel=1e-6)
    res = invoke(["compose", "gaussian:sigma=10,count=100", "--delta", "1e-5", "--max-epsilon", "4"])
    assert res.exit_code == 3


def _mp_delta(eps, r):
    """Balle–Wang δ(ε) in 50-digit arithmetic (docs/math.md §2.6)."""
    with mpmath.workdps(50):
        eps, r = mpmath.mpf(eps), mpmath.mpf(r)
        return mpmath.ncdf(r / 2 - eps / r) - mpmath.exp(eps) * mpmath.ncdf(-r / 2 - eps / r)


def test_calibration(invoke):
    rows = _rows(
        invoke(
            [
                "compose",
                "gaussian:count=10",
                "--epsilon",
                "1,20",
                "--delta",
                "1e-5",
                "--method",
                "all",
                "-f",
                "csv",
            ]
        )
    )
    exact = [r for r in rows if r["method"] == "exact"]
    for r in exact:
        sigma = float(r["sigma"])
        # 10 Gaussians of σ are one Gaussian of σ/√10: it meets (ε, δ), just
        assert _mp_delta(float(r["epsilon"]), math.sqrt(10) / sigma) <= 1e-5
        assert _mp_delta(float(r["epsilon"]), math.sqrt(10) / (sigma * (1 - 1e-9))) > 1e-5
    classical = {r["epsilon"]: r for r in rows if r["method"] == "classical"}
    assert classical["20.0"]["sigma"] == "" and "epsilon < 1" in classical["20.0"]["note"]


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["gausian:sigma=1", "--delta", "1e-5"], "unknown kind 'gausian'"),
        (["gaussian:sigm=1", "--delta", "1e-5"], "unknown key 'sigm'"),
        (["laplace:", "--delta", "1e-5"], "'laplace:'"),
        (["laplace:sensitivity=1", "--delta", "1e-5"], "missing key 'scale'"),
        (["gaussian:sigma=-2", "--delta", "1e-5"], "bad value sigma='-2'"),
        (["gaussian:sigma=1,count=0", "--delta", "1e-5"], "bad value count='0'"),
        (["gaussian:sigma=1,count=1.5", "--delta", "1e-5"], "bad value count='1.5'"),
        (["gaussian:sigma=1", "laplace:scale=oops", "--delta", "1e-5"], "'laplace:scale=oops'"),
        (["gaussian:sigma=1"], "--delta"),
        (["gaussian:sigma=1", "--delta", "1.5"], "--delta"),
        (["gaussian:sigma=1", "--epsilon", "1", "--delta", "1e-5"], "leave it out of a spec"),
        (["laplace:scale=1", "--epsilon", "1", "--delta", "1e-5"], "leave it out of a spec"),
        (
            ["sgm:q=0.1,sigma=1", "sgm:q=0.1,sigma=1,sampling=fixed-size", "--delta", "1e-5"],
            "compose them separately",
        ),
    ],
)
def test_errors_exit_2_naming_the_token(invoke, args, needle):
    res = invoke(["compose", *args])
    assert res.exit_code == 2
    assert res.stdout == ""
    assert needle in res.stderr
    assert "Traceback" not in res.stderr


@pytest.mark.parametrize(
    "specs,target",
    [
        (["dp:epsilon=1", "dp:epsilon=2"], "3"),
        (["laplace:scale=1,count=3", "laplace:scale=2,count=2"], "4"),
        (["dp:epsilon=0.1", "dp:epsilon=0.2"], "0.3"),
    ],
)
def test_basic_composition_holds_at_its_exact_boundary(invoke, specs, target):
    """Σε equal to the target in the decimals given: basic composition applies, δ = 0 (and best says
    δ = 0 too: pld and rdp also see that ε reaches the largest privacy loss, docs/math.md §2.7)."""
    rows = _rows(invoke(["compose", *specs, "--epsilon", target, "--method", "basic", "-f", "csv"]))
    assert rows[0]["method"] == "basic" and float(rows[0]["delta"]) == 0.0
    assert float(_rows(invoke(["compose", *specs, "--epsilon", target, "-f", "csv"]))[0]["delta"]) == 0.0
    below = _rows(
        invoke(
            [
                "compose",
                *specs,
                "--epsilon",
                repr(float(target) * (1 - 1e-12)),
                "--method",
                "basic",
                "-f",
                "csv",
            ]
        )
    )
    assert below[0]["delta"] == "" and "needs --epsilon" in below[0]["note"]


@pytest.mark.parametrize(
    "spec", ["laplace:count=10", "randomized-response:count=10", "subsampled-gaussian:q=0.01"]
)
def test_a_calibration_by_search_refuses_a_target_below_its_floor(invoke, spec):
    res = invoke(["compose", spec, "--epsilon", "1e-300", "--delta", "1e-5"])
    assert res.exit_code == 2 and res.stdout == ""
    assert res.stderr.startswith("Error: --epsilon: 1e-300 is below 0.001") and res.stderr.count("\n") == 1


def test_the_exact_gaussian_calibration_takes_any_epsilon(invoke):
    res = invoke(["compose", "gaussian:count=10", "--epsilon", "1e-300", "--delta", "1e-5", "-q"])
    assert res.exit_code == 0 and 0 < float(res.stdout) < math.inf  # a closed form: no search to bound
