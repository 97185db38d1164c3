"""``dpcalc odometer --method gdp|dp``: the μ-GDP filter and ladder odometer, the (ε, δ) filter and odometer.

References independent of dpcalc's code: exact rational loops (the GDP filter's decisions), mpmath (the exact
μ-GDP profile of Dong, Roth & Su, Cor. 2.13), Kairouz, Oh & Viswanath's optimal composition of identical ε-DP
steps (in mpmath), and ``dpcalc compose`` (the exact composition of Gaussians, another code path) run as a
command.  Refusals, every output format, -q and a ledger's round trip are checked at the command line."""

import csv
import io
import json
import math
import random
from decimal import Decimal
from fractions import Fraction

import mpmath
import pytest

from dpcalc.commands.schema import adaptive_names

COLUMNS = adaptive_names("odometer")


def rows(text):
    return list(csv.DictReader(io.StringIO(text)))


def run_csv(invoke, args):
    res = invoke(["odometer", *args, "-f", "csv"])
    assert res.exit_code == 0, res.stderr
    return rows(res.stdout)


def events(*specs):
    return [a for s in specs for a in ("--event", s)]


# -- references ---------------------------------------------------------------------------------
def gdp_delta_mp(eps, mu):
    """δ(ε) of μ-GDP (Dong, Roth & Su 2022, Cor. 2.13) at 50 digits."""
    mpmath.mp.dps = 50
    eps, mu = mpmath.mpf(eps), mpmath.mpf(mu)
    return mpmath.ncdf(-eps / mu + mu / 2) - mpmath.exp(eps) * mpmath.ncdf(-eps / mu - mu / 2)


def gdp_eps_mp(delta, mu):
    """The ε with δ(ε) = delta for μ-GDP, by bisection at 50 digits (δ(ε) decreases in ε)."""
    lo, hi = mpmath.mpf(0), mpmath.mpf(1)
    while gdp_delta_mp(hi, mu) > delta:
        hi *= 2
    for _ in range(200):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if gdp_delta_mp(mid, mu) > delta else (lo, mid)
    return hi


def kov_delta(eps0, k, eps):
    """δ(ε) of k identical ε0-DP steps, optimally composed (Kairouz, Oh & Viswanath 2015, Thm 3.3): the
    hockey-stick divergence of k-fold randomized response, Σ_l C(k,l) [e^{(k−l)ε0} − e^{ε+lε0}]_+ / (1+e^{ε0})^k."""
    mpmath.mp.dps = 50
    e0, e = mpmath.mpf(eps0), mpmath.mpf(eps)
    total = mpmath.mpf(0)
    for ell in range(k + 1):
        term = mpmath.exp((k - ell) * e0) - mpmath.exp(e + ell * e0)
        if term <= 0:
            break
        total += mpmath.binomial(k, ell) * term
    return total / (1 + mpmath.exp(e0)) ** k


def exact(text):
    """The number a command-line decimal stands for."""
    return Fraction(Decimal(text))


# -- the GDP filter -----------------------------------------------------------------------------
def brute_force_filter(mus, budget):
    """Step i runs iff the exact squares of the steps that ran and its own sum to at most budget²."""
    spent, out = Fraction(0), []
    for m in mus:
        fits = spent + m * m <= budget * budget
        out.append(fits)
        spent += m * m if fits else 0
    return out


@pytest.mark.parametrize(
    "specs, budget",
    [
        (["gaussian:sigma=2,count=4"], "1"),  # an exact tie: Σμ² = 1 = μ²
        (
            ["gaussian:sigma=2,count=3", "gaussian:sigma=1", "gaussian:sigma=2", "gaussian:sigma=4,count=3"],
            "1",
        ),
        (
            ["gaussian:sigma=10,count=100", "gaussian:sigma=10"],
            "1",
        ),  # 0.1 is not a double: the 100th is refused
        (
            [
                "gaussian:sigma=3,sensitivity=2",
                "gaussian:sigma=1.5",
                "gaussian:sigma=0.5",
                "gaussian:sigma=7",
            ],
            "1.5",
        ),
    ],
)
def test_gdp_filter_runs_a_step_exactly_when_the_exact_sum_fits(invoke, specs, budget):
    got = run_csv(invoke, ["--method", "gdp", *events(*specs), "--filter-mu", budget])
    mus = [Fraction(float(r["mu_step"])) for r in got]
    assert [r["run"] == "true" for r in got] == brute_force_filter(mus, exact(budget))


def test_gdp_filter_against_exact_loops_on_random_schedules(invoke):
    rng = random.Random(42)
    sigmas = ["0.7", "1", "1.3", "2", "2.5", "3", "5", "10"]
    for budget in ("1", "2.25", "0.75"):
        specs = [
            f"gaussian:sigma={rng.choice(sigmas)},sensitivity={rng.choice(['1', '0.5', '2'])}"
            for _ in range(40)
        ]
        got = run_csv(invoke, ["--method", "gdp", *events(*specs), "--filter-mu", budget])
        mus = [Fraction(float(r["mu_step"])) for r in got]
        for spec, mu in zip(specs, mus):  # each μ is the smallest double at or above Δ/σ ...
            sigma, sens = (exact(p.split("=")[1]) for p in spec.split(":")[1].split(","))
            # of the decimals given and of the doubles they parse to
            ratio = max(sens / sigma, Fraction(float(sens)) / Fraction(float(sigma)))
            assert mu >= ratio and Fraction(math.nextafter(float(mu), 0)) < ratio
        runs = [r["run"] == "true" for r in got]
        assert runs == brute_force_filter(mus, exact(budget))
        assert 0 < sum(runs) < len(runs)  # both decisions are exercised
        spent = [Fraction(float(r["mu"])) for r in got]  # μ of the steps that ran, rounded up, never down
        exact_spent = 0
        for mu, ran, shown in zip(mus, runs, spent):
            exact_spent += mu * mu if ran else 0
            assert shown * shown >= exact_spent and float(shown) <= math.sqrt(exact_spent) * (1 + 4e-16)


def test_a_fixed_schedule_under_the_filter_is_compose_s_exact_gaussian_composition(invoke):
    """Four σ = 2 steps are 1-GDP: the filter's guarantee at δ is the exact ε of `dpcalc compose`."""
    filt = run_csv(
        invoke,
        ["--method", "gdp", "--event", "gaussian:sigma=2,count=4", "--filter-mu", "1", "--delta", "1e-5"],
    )
    comp = rows(
        invoke(
            ["compose", "gaussian:sigma=2,count=4", "--delta", "1e-5", "--method", "exact", "-f", "csv"]
        ).stdout
    )
    want = float(comp[0]["epsilon"])
    assert all(r["run"] == "true" for r in filt)
    for column in ("epsilon", "epsilon_fixed"):
        got = float(filt[-1][column])
        assert abs(got - want) <= 1e-12 * want, (column, got, want)
    assert float(filt[-1]["epsilon"]) >= float(gdp_eps_mp(mpmath.mpf("1e-5"), 1))  # and sound
    # mixed noise and sensitivities: the steps that ran, composed, are compose's Gaussians
    specs = ["gaussian:sigma=3,sensitivity=2", "gaussian:sigma=1.5", "gaussian:sigma=0.9", "gaussian:sigma=4"]
    filt = run_csv(invoke, ["--method", "gdp", *events(*specs), "--filter-mu", "1", "--delta", "1e-6"])
    ran = [s for s, r in zip(specs, filt) if r["run"] == "true"]
    assert ran == [specs[0], specs[1], specs[3]]
    comp = rows(invoke(["compose", *ran, "--delta", "1e-6", "--method", "exact", "-f", "csv"]).stdout)
    want = float(comp[0]["epsilon"])
    assert abs(float(filt[-1]["epsilon_fixed"]) - want) <= 1e-9 * want


def test_a_filter_given_as_epsilon_uses_the_largest_mu_at_delta(invoke):
    got = run_csv(
        invoke,
        [
            "--method",
            "gdp",
            *events("gaussian:sigma=2,count=3", "gaussian:sigma=1"),
            "--filter",
            "4",
            "--delta",
            "1e-5",
        ],
    )
    mu = float(got[0]["mu_budget"])
    assert {r["epsilon"] for r in got} == {"4.0"}
    assert gdp_delta_mp(4, mu) <= mpmath.mpf("1e-5")  # μ-GDP is (4, 1e-5)-DP ...
    assert gdp_delta_mp(4, mu * (1 + 1e-9)) > mpmath.mpf("1e-5")  # ... and no larger μ is
    assert [r["run"] for r in got] == ["true", "true", "true", "false"]


# -- the GDP odometer ---------------------------------------------------------------------------
@pytest.mark.parametrize("target", ["1", "3"])
def test_gdp_odometer_is_the_exact_gdp_epsilon_at_the_ladder_s_rung(invoke, target):
    specs = ["gaussian:sigma=4,count=4", "gaussian:sigma=2", "gaussian:sigma=1", "gaussian:sigma=0.5,count=2"]
    delta = mpmath.mpf("1e-6")
    got = run_csv(
        invoke, ["--method", "gdp", *events(*specs), "--delta", "1e-6", "--odometer-target", target]
    )
    # the first rung: the largest μ that is (target, 6δ/π²)-DP, fixed before the first step
    share1 = 6 * delta / mpmath.pi**2
    first = [float(r["mu_budget"]) / 2 ** ((int(r["level"]) - 1) / 2) for r in got]
    assert max(first) - min(first) <= 1e-12 * min(first)
    assert gdp_delta_mp(target, first[0]) <= share1 * (1 + 1e-9)
    assert gdp_eps_mp(share1, first[0]) == pytest.approx(float(target), rel=1e-9)
    spent, eps = Fraction(0), []
    for r in got:
        spent += Fraction(float(r["mu_step"])) ** 2
        j, rung = int(r["level"]), Fraction(float(r["mu_budget"]))
        assert spent <= rung * rung  # the level's filter never intervened
        if j > 1:  # and it is the lowest such level
            assert spent > Fraction(first[0] * 2 ** ((j - 2) / 2)) ** 2 * Fraction(1 - 10**-12)
        share = 6 * delta / (mpmath.pi**2 * j * j)
        want = gdp_eps_mp(share, float(rung))
        assert float(want) <= float(r["epsilon"]) <= float(want) * (1 + 1e-9)
        fixed = gdp_eps_mp(delta, float(r["mu"]))  # the plain running μ's ε: for a fixed schedule only
        assert float(fixed) <= float(r["epsilon_fixed"]) <= float(fixed) * (1 + 1e-9)
        assert float(r["epsilon_fixed"]) <= float(r["epsilon"])
        eps.append(float(r["epsilon"]))
    assert eps == sorted(eps) and len(got) == 8


# -- the (ε, δ) filter and odometer -------------------------------------------------------------
def test_dp_filter_is_monotone_in_the_budget_and_within_kov(invoke):
    """Identical ε0-DP steps: more budget never runs fewer, and the steps run at ε are never more than
    Kairouz–Oh–Viswanath's optimal composition allows at (ε, δ)."""
    for eps0, n, budgets in (("0.01", 1500, ["0.5", "1", "1.5", "2"]), ("0.25", 20, ["0.5", "1", "2", "3"])):
        counts = []
        for budget in budgets:
            got = run_csv(
                invoke,
                [
                    "--method",
                    "dp",
                    "--event",
                    f"dp:epsilon={eps0},count={n}",
                    "--delta",
                    "1e-6",
                    "--filter",
                    budget,
                ],
            )
            runs = [r["run"] == "true" for r in got]
            k = sum(runs)
            assert runs == [True] * k + [False] * (n - k)  # identical steps: a prefix runs
            assert kov_delta(float(eps0), k, float(budget)) <= mpmath.mpf("1e-6")
            counts.append(k)
        assert counts == sorted(counts) and counts[0] > 0 and counts[-1] < n
    # the first refusal never comes earlier with more budget, on mixed steps
    rng = random.Random(7)
    specs = [f"dp:epsilon={rng.choice(['0.05', '0.1', '0.2', '0.4'])},delta=1e-9" for _ in range(40)]
    first = []
    for budget in ("0.5", "1", "1.5", "2", "3"):
        got = run_csv(invoke, ["--method", "dp", *events(*specs), "--delta", "1e-6", "--filter", budget])
        refused = [i for i, r in enumerate(got) if r["run"] == "false"]
        first.append(refused[0] if refused else len(got))
    assert first == sorted(first) and first[0] < first[-1]


def test_dp_odometer_is_never_below_kov_and_grows(invoke):
    n = 400
    got = run_csv(invoke, ["--method", "dp", "--event", f"dp:epsilon=0.01,count={n}", "--delta", "1e-6"])
    eps = [float(r["epsilon"]) for r in got]
    assert eps == sorted(eps)
    for k in (1, 10, 100, 400):  # valid for the fixed schedule too: KOV's optimum at ε_k is within δ
        assert kov_delta(0.01, k, eps[k - 1]) <= mpmath.mpf("1e-6")
        assert eps[k - 1] <= 0.01 * k + 1e-15  # never above basic composition
    assert eps[-1] < 0.9 * 0.01 * n  # the advanced-composition rate wins after many small steps
    assert float(got[-1]["epsilon_fixed"]) <= eps[-1]


def test_dp_steps_take_a_dp_spec_or_a_pure_epsilon(invoke):
    got = run_csv(
        invoke,
        [
            "--method",
            "dp",
            *events("dp:epsilon=0.3,delta=1e-7", "laplace:scale=2", "randomized-response:epsilon=0.5"),
            "--delta",
            "1e-6",
        ],
    )
    e = [Fraction(float(r["epsilon_step"])) for r in got]
    d = [Fraction(float(r["delta_step"])) for r in got]
    assert e[0] >= Fraction(3, 10) and d[0] >= Fraction(1, 10**7)  # the decimals given, rounded up
    assert e[1] == Fraction(1, 2) and d[1] == 0 and e[2] == Fraction(1, 2) and d[2] == 0
    assert float(got[-1]["epsilon"]) == pytest.approx(1.3, rel=1e-12)  # three steps: basic composition
    big = run_csv(invoke, ["--method", "dp", "--event", "dp:epsilon=0.1,delta=6e-7", "--delta", "1e-6"])
    assert big[0]["epsilon"] == "inf"  # Σδ_i above δ/2: no finite bound


# -- refusals -----------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "args, message",
    [
        (["--method", "gdp", "--event", "sgm:q=0.01,sigma=1", "--delta", "1e-5"], "not a Gaussian mechanism"),
        (
            ["--method", "gdp", "--event", "gaussian:sigma=1,q=0.5", "--delta", "1e-5"],
            "account it with --method rdp",
        ),
        (
            ["--method", "gdp", "--event", "laplace:scale=1", "--delta", "1e-5"],
            "GDP's filter and odometer are for Gaussian steps",
        ),
        (
            ["--method", "gdp", "--event", "gaussian:sigma=1,count=2000000", "--delta", "1e-5"],
            "at most 1000000",
        ),
        (
            ["--method", "dp", "--event", "gaussian:sigma=1", "--delta", "1e-5"],
            "give each step as dp:epsilon=E",
        ),
        (
            ["--method", "dp", "--event", "gaussian:sigma=1", "--filter-mu", "1"],
            "--filter-mu needs --method gdp",
        ),
        (
            [
                "--method",
                "gdp",
                "--event",
                "gaussian:sigma=1",
                "--filter-mu",
                "1",
                "--filter",
                "2",
                "--delta",
                "1e-5",
            ],
            "give one budget",
        ),
        (["--method", "gdp", "--event", "gaussian:sigma=1", "--filter-mu", "0"], "--filter-mu"),
        (["--method", "gdp", "--event", "gaussian:sigma=1", "--filter-mu", "-1"], "--filter-mu"),
        (["--method", "dp", "--event", "dp:epsilon=1", "--filter", "0", "--delta", "1e-5"], "--filter"),
        (
            ["--method", "gdp", "--event", "gaussian:sigma=1", "--odometer-target", "0", "--delta", "1e-5"],
            "--odometer-target",
        ),
        (
            ["--method", "gdp", "--event", "gaussian:sigma=1", "--alphas", "code", "--delta", "1e-5"],
            "--alphas applies to --method rdp",
        ),
        (
            ["--method", "dp", "--event", "dp:epsilon=1", "--gamma", "code", "--delta", "1e-5"],
            "--gamma applies to --method rdp",
        ),
        (
            ["--event", "gaussian:sigma=1", "--odometer-target", "2", "--delta", "1e-5"],
            "--odometer-target needs --method gdp",
        ),
        (
            [
                "--method",
                "gdp",
                "--event",
                "gaussian:sigma=1",
                "--filter",
                "1",
                "--odometer-target",
                "2",
                "--delta",
                "1e-5",
            ],
            "cannot be used with a filter",
        ),
        (["--method", "gdp", "--event", "gaussian:sigma=1"], "missing option --delta"),
        (
            ["--method", "gdp", "--event", "gaussian:sigma=1", "--filter-mu", "1", "--max-epsilon", "1"],
            "needs --delta",
        ),
    ],
)
def test_refusals_exit_2_with_one_line(invoke, args, message):
    res = invoke(["odometer", *args, "-f", "csv"])
    assert res.exit_code == 2 and res.stdout == ""
    assert res.stderr.startswith("Error:") and res.stderr.count("\n") == 1 and message in res.stderr, (
        res.stderr
    )


def test_a_dp_sgd_row_is_refused_under_gdp_naming_its_line(invoke, tmp_path):
    log = tmp_path / "train.csv"
    log.write_text("sample_rate,noise_multiplier,steps\n0.01,1,100\n")
    res = invoke(["odometer", str(log), "--method", "gdp", "--delta", "1e-5"])
    assert res.exit_code == 2 and res.stdout == ""
    assert f"{log} line 2: " in res.stderr and "--method rdp" in res.stderr and res.stderr.count("\n") == 1


# -- output formats -----------------------------------------------------------------------------
GDP_RUN = ["--method", "gdp", *events("gaussian:sigma=3,count=2", "gaussian:sigma=1.5"), "--delta", "1e-6"]


@pytest.mark.parametrize("extra", [[], ["--filter-mu", "0.8"], ["--filter", "3"]])
def test_every_format_holds_the_same_rows(invoke, extra):
    args = ["odometer", *GDP_RUN, *extra]
    got = rows(invoke([*args, "-f", "csv"]).stdout)
    assert list(got[0]) == COLUMNS and len(got) == 3
    tsv = invoke([*args, "-f", "tsv"]).stdout.splitlines()
    assert tsv[0].split("\t") == COLUMNS and [line.split("\t")[0] for line in tsv[1:]] == ["1", "2", "3"]
    js = json.loads(invoke([*args, "-f", "json"]).stdout)
    lines = [json.loads(line) for line in invoke([*args, "-f", "jsonl"]).stdout.splitlines()]
    assert js == lines and list(js[0]) == COLUMNS
    for r, j in zip(got, js):
        assert float(r["epsilon"]) == j["epsilon"] and (r["run"] == "true") == j["run"]
        assert j["method"] == "gdp" and j["epsilon_step"] is None and (j["level"] is None) == bool(extra)
    table = invoke([*args, "-f", "table"])
    assert table.exit_code == 0 and "mu_step" in table.stdout and "gaussian:sigma=1.5" in table.stdout
    quiet = invoke([*args, "-q"]).stdout.split()
    if extra:  # a filter: the decisions
        assert quiet == [r["run"] for r in got]
    else:  # the odometer: its running ε
        assert [float(q) for q in quiet] == [float(r["epsilon"]) for r in got]


def test_a_stream_gives_the_rows_of_the_same_events_given_at_once(invoke):
    specs = ["gaussian:sigma=3,count=2", "gaussian:sigma=1.5", "gaussian:sigma=5,count=3"]
    given = invoke(["odometer", "--method", "gdp", *events(*specs), "--delta", "1e-6", "-f", "csv"]).stdout
    text = "mechanism\n" + "".join(f'"{s}"\n' for s in specs)
    streamed = invoke(["odometer", "-", "--method", "gdp", "--delta", "1e-6", "-f", "csv"], input=text).stdout
    assert streamed == given


# -- the ledger ---------------------------------------------------------------------------------
def test_a_gdp_ledger_round_trip(invoke, tmp_path):
    path = str(tmp_path / "gdp.ledger")
    base = ["odometer", "--ledger", path]
    first = invoke([*base, "--method", "gdp", "--add", "gaussian:sigma=4", "--delta", "1e-6", "-f", "csv"])
    assert first.exit_code == 0, first.stderr
    second = invoke(
        [*base, "--add", "gaussian:sigma=4,count=2", "--max-epsilon", "3", "-q"]
    )  # its accountant, remembered
    assert second.exit_code == 0, second.stderr
    header = open(path).read().splitlines()[0]
    assert header.startswith("# dpcalc-ledger v2 delta=1e-06 method=gdp first_mu=") and header.endswith(
        " ratio=2.0"
    )
    report = rows(invoke([*base, "-f", "csv"]).stdout)
    stream = run_csv(
        invoke,
        ["--method", "gdp", *events("gaussian:sigma=4", "gaussian:sigma=4,count=2"), "--delta", "1e-6"],
    )
    assert len(report) == 3
    for r, s in zip(report, stream):  # the same numbers as the same events streamed
        assert {k: v for k, v in r.items() if k != "run"} == {k: v for k, v in s.items() if k != "run"}
    assert float(second.stdout) == float(report[-1]["epsilon"])
    before = open(path, "rb").read()
    refused = invoke([*base, "--add", "gaussian:sigma=0.5", "--max-epsilon", "3", "-q"])
    assert refused.exit_code == 3 and refused.stdout == ""
    check = rows(invoke([*base, "--add", "gaussian:sigma=8", "--check", "-f", "csv"]).stdout)
    assert check[0]["recorded"] == "false" and check[0]["step"] == "4"
    for args, message in (
        (["--add", "laplace:scale=1"], "not a Gaussian mechanism"),
        (["--add", "gaussian:sigma=4", "--method", "rdp"], "started with --method gdp"),
        (["--add", "gaussian:sigma=4", "--alphas", "code"], "has no Rényi orders"),
        (["--add", "gaussian:sigma=4", "--odometer-target", "2"], "fixed by its first line"),
        (["--method", "dp"], "started with --method gdp"),
    ):
        res = invoke([*base, *args])
        assert res.exit_code == 2 and message in res.stderr and res.stderr.count("\n") == 1, res.stderr
    assert open(path, "rb").read() == before  # nothing refused was written
    head = invoke([*base, "--head"]).stdout.strip()
    assert head.startswith("2:")  # entries, not steps
    again = invoke([*base, "--add", "gaussian:sigma=20", "--expect-head", head, "--head"])
    assert again.exit_code == 0 and again.stdout.startswith("3:")


def test_a_dp_ledger_round_trip(invoke, tmp_path):
    path = str(tmp_path / "dp.ledger")
    base = ["odometer", "--ledger", path]
    for spec in ("dp:epsilon=0.01,count=200", "laplace:scale=100,count=200"):
        res = invoke([*base, "--method", "dp", "--add", spec, "--delta", "1e-6", "-q"])
        assert res.exit_code == 0, res.stderr
    assert open(path).read().splitlines()[0].startswith("# dpcalc-ledger v2 delta=1e-06 method=dp rho=")
    report = rows(invoke([*base, "-f", "csv"]).stdout)
    stream = run_csv(
        invoke,
        [
            "--method",
            "dp",
            *events("dp:epsilon=0.01,count=200", "laplace:scale=100,count=200"),
            "--delta",
            "1e-6",
        ],
    )
    assert [r["epsilon"] for r in report] == [r["epsilon"] for r in stream] and len(report) == 400
    refused = invoke([*base, "--add", "gaussian:sigma=4"])
    assert refused.exit_code == 2 and "dp:epsilon=E" in refused.stderr
