"""``--rdp-curve``: the Rényi curve of sgd-epsilon, compose, iterate and langevin (dpcalc/commands/curve.py and each command's module).

What is checked: the columns are the documented schema (and the man pages list it); every output format
carries the curve; ``convert --curve -`` reads the CSV as it is and gives the command's own RDP ε (the
round trips below, with where and why they may differ); the odometer, which reads events and not curves,
agrees on the same orders and refuses a curve; the values match independent closed forms (Gaussian,
Laplace: Mironov 2017 Prop. 6) and dp_accounting's RDP accountant; bad input is one line, exit 2.
"""

from __future__ import annotations

import csv
import io
import json
import math
import re
from pathlib import Path

import numpy as np
import pytest

from dpcalc.commands.schema import CURVE_SCHEMAS, curve_names

ROOT = Path(__file__).resolve().parent.parent
SGD = ["sgd-epsilon", "--sigma", "1.1", "--sample-rate", "0.004267", "--steps", "14063"]
COMPOSE = [
    "compose",
    "gaussian:sigma=4,count=10",
    "laplace:scale=20,count=5",
    "subsampled-gaussian:q=0.01,sigma=1,count=1000",
]
ITERATE = ["iterate", "--sigma", "5", "--lipschitz", "1", "--lr", "0.05", "--steps", "100"]
LANGEVIN = [
    "langevin",
    "--sigma",
    "0.02",
    "--sensitivity",
    "4",
    "--lr",
    "0.02",
    "--strong-convexity",
    "1",
    "--smoothness",
    "1",
    "--dataset-size",
    "5000",
    "--steps",
    "1000",
]
BASES = {"sgd-epsilon": SGD, "compose": COMPOSE, "iterate": ITERATE, "langevin": LANGEVIN}


def _ok(res):
    assert res.exit_code == 0, res.stderr
    return res


def _rows(res) -> list[dict]:
    return list(csv.DictReader(io.StringIO(_ok(res).stdout)))


def _convert(invoke, curve_csv: str, delta: str, method: str = "optimal") -> dict:
    res = invoke(
        ["convert", "--curve", "-", "--delta", delta, "--method", method, "-f", "csv"], input=curve_csv
    )
    (row,) = _rows(res)
    return row


def _eps(invoke, args) -> float:
    (row,) = _rows(invoke([*args, "-f", "csv"]))
    return float(row["epsilon"])


# -- the schema ----------------------------------------------------------------------------------------
VARIANTS = {
    "sgd-epsilon": [
        [*SGD],
        [
            "sgd-epsilon",
            "--sigma",
            "1,2",
            "--batch-size",
            "256",
            "--dataset-size",
            "60000",
            "--epochs",
            "1,2",
        ],
        [
            "sgd-epsilon",
            "--sigma",
            "2",
            "--batch-size",
            "100",
            "--dataset-size",
            "10000",
            "--steps",
            "10",
            "--sampling",
            "fixed-size",
        ],
        [
            "sgd-epsilon",
            "--sigma",
            "1",
            "--sample-rate",
            "0.01",
            "--dataset-size",
            "1000",
            "--steps",
            "10",
            "--delta",
            "1e-5",
        ],
    ],
    "compose": [
        ["compose", "gaussian:sigma=2"],
        [*COMPOSE, "--method", "rdp"],
        ["compose", "zcdp:rho=0.1", "randomized-response:epsilon=1", "--delta", "1e-5"],
    ],
    "iterate": [
        [*ITERATE],
        [*ITERATE, "--method", "feldman"],
        [*ITERATE[:-2], "--initial-distance", "1,2", "--steps", "10,100"],
    ],
    "langevin": [
        [*LANGEVIN],
        [*LANGEVIN, "--method", "dynamics"],
        [*LANGEVIN, "--method", "lower"],
        [*LANGEVIN[:3], "--lipschitz", "2", *LANGEVIN[5:], "--delta", "1e-5"],
    ],
}


@pytest.mark.parametrize("command", list(CURVE_SCHEMAS))
def test_header_is_the_curve_schema_whatever_the_inputs(invoke, command):
    headers = set()
    for args in VARIANTS[command]:
        res = _ok(invoke([*args, "--rdp-curve", "--alphas", "2,4", "-f", "csv"]))
        headers.add(res.stdout.splitlines()[0])
    assert headers == {",".join(curve_names(command))}
    assert {"alpha", "rdp"} <= set(curve_names(command))


@pytest.mark.parametrize("command", list(CURVE_SCHEMAS))
def test_the_man_page_lists_the_curve_schema(command):
    text = (ROOT / "man" / f"dpcalc-{command}.1").read_text()
    section = text.split(".SH RDP CURVE COLUMNS", 1)[1].split(".SH ", 1)[0]
    listed = [m.replace("\\-", "-") for m in re.findall(r"\\fB(.+?)\\fR", section)]
    assert listed == curve_names(command)


def test_one_curve_per_configuration_with_the_swept_inputs_as_columns(invoke):
    rows = _rows(
        invoke(
            [
                "sgd-epsilon",
                "--sigma",
                "1,2",
                "--sample-rate",
                "0.01",
                "--steps",
                "10,100",
                "--rdp-curve",
                "--alphas",
                "2,3,4",
            ]
        )
    )
    assert len(rows) == 2 * 2 * 3
    keys = [(r["noise_multiplier"], r["steps"]) for r in rows]
    assert sorted(set(keys)) == [("1.0", "10"), ("1.0", "100"), ("2.0", "10"), ("2.0", "100")]
    for key in set(keys):
        assert [r["alpha"] for r in rows if (r["noise_multiplier"], r["steps"]) == key] == [
            "2.0",
            "3.0",
            "4.0",
        ]
    # RDP composes: 100 steps are 10 times 10 steps, order by order
    for s in ("1.0", "2.0"):
        ten = [float(r["rdp"]) for r in rows if r["noise_multiplier"] == s and r["steps"] == "10"]
        hundred = [float(r["rdp"]) for r in rows if r["noise_multiplier"] == s and r["steps"] == "100"]
        assert hundred == pytest.approx([10 * z for z in ten], rel=1e-13)


def test_default_orders_are_the_engines(invoke):
    from dpcalc.engine.orders import DEFAULT_ORDERS

    rows = _rows(invoke([*SGD, "--rdp-curve"]))
    assert [float(r["alpha"]) for r in rows] == DEFAULT_ORDERS.tolist()


def test_alphas_takes_the_values_grammar_and_the_odometer_names(invoke):
    rows = _rows(invoke(["compose", "gaussian:sigma=1", "--rdp-curve", "--alphas", "1.5:64:x2,100"]))
    assert [float(r["alpha"]) for r in rows] == [1.5, 3.0, 6.0, 12.0, 24.0, 48.0, 100.0]
    paper = _rows(invoke(["compose", "gaussian:sigma=1", "--rdp-curve", "--alphas", "paper"]))
    assert [float(r["alpha"]) for r in paper] == [1 + k / 4 for k in range(1, 37)] + [16.0, 32.0]
    code = _rows(invoke(["compose", "gaussian:sigma=1", "--rdp-curve", "--alphas", "code"]))
    assert [float(r["alpha"]) for r in code] == [2 + k / 4 for k in range(1, 33)] + [16.0, 32.0]


def test_delta_is_not_needed_and_does_not_change_the_curve(invoke):
    plain = _ok(invoke([*SGD, "--rdp-curve", "-f", "csv"])).stdout
    assert (
        _ok(
            invoke([*SGD, "--rdp-curve", "--delta", "1e-5,1e-8", "--conversion", "balle", "-f", "csv"])
        ).stdout
        == plain
    )
    assert (
        _ok(invoke([*ITERATE, "--rdp-curve", "--delta", "1e-5", "-f", "csv"])).stdout
        == _ok(invoke([*ITERATE, "--rdp-curve", "-f", "csv"])).stdout
    )


# -- every format ---------------------------------------------------------------------------------------
def test_every_format_carries_the_curve_and_inf(invoke):
    args = [*ITERATE, "--rdp-curve", "--alphas", "2,4.5"]
    rows = _rows(invoke([*args, "-f", "csv"]))
    assert [(r["method"], r["alpha"], r["rdp"]) for r in rows] == [
        ("feldman", "2.0", "0.014736544595161907"),
        ("feldman", "4.5", "inf"),  # above α* ≈ 4.07: no bound
        ("composition", "2.0", "0.1600000000000001"),
        ("composition", "4.5", "0.36000000000000015"),
    ]
    tsv = _ok(invoke([*args, "-f", "tsv"])).stdout.splitlines()
    assert tsv[0].split("\t") == curve_names("iterate") and tsv[2].split("\t")[-1] == "inf"
    js = json.loads(_ok(invoke([*args, "-f", "json"])).stdout)
    assert (
        js[1]["rdp"] == "inf" and js[0]["rdp"] == 0.014736544595161907 and js[0]["initial_distance"] is None
    )
    jl = [json.loads(line) for line in _ok(invoke([*args, "-f", "jsonl"])).stdout.splitlines()]
    assert jl == js
    table = _ok(invoke([*args, "-f", "table"])).stdout
    assert "Rényi DP curve" in table and "inf" in table
    # -q: per order, the tightest of the two curves (feldman has no bound above α*)
    assert _ok(invoke([*args, "-q"])).stdout.splitlines() == [
        "alpha=2.0\t0.014736544595161907",
        "alpha=4.5\t0.36000000000000015",
    ]


def test_quiet_of_one_order_is_the_value_alone(invoke):
    assert (
        _ok(invoke(["compose", "gaussian:sigma=2", "--rdp-curve", "--alphas", "8", "-q"])).stdout
        == "1.0000000000000036\n"
    )


def test_plot(invoke, tmp_path):
    pytest.importorskip("matplotlib")
    path = tmp_path / "curve.png"
    _ok(invoke([*ITERATE[:-2], "--steps", "10,100", "--rdp-curve", "--plot", str(path)]))
    assert path.stat().st_size > 0


# -- round trips through convert --curve ----------------------------------------------------------------
@pytest.mark.parametrize(
    "config",
    [
        SGD,
        ["sgd-epsilon", "--sigma", "1.1", "--batch-size", "256", "--dataset-size", "60000", "--epochs", "3"],
        [
            "sgd-epsilon",
            "--sigma",
            "2",
            "--batch-size",
            "512",
            "--dataset-size",
            "50000",
            "--steps",
            "4900",
            "--sampling",
            "fixed-size",
        ],
    ],
)
@pytest.mark.parametrize("conversion", ["optimal", "balle", "mironov"])
def test_sgd_round_trip(invoke, config, conversion):
    """The rdp accountant converts exactly this curve: balle and mironov agree digit for digit; with
    optimal the accountant evaluates the exact conversion on a window of orders (eps_of_curve), convert on
    every order, so convert can only be lower (it is equal here)."""
    curve = _ok(invoke([*config, "--rdp-curve", "-f", "csv"])).stdout
    for delta in ("1e-5", "1e-8"):
        own = _eps(invoke, [*config, "--delta", delta, "--conversion", conversion])
        back = float(_convert(invoke, curve, delta, conversion)["epsilon"])
        assert back == own if conversion != "optimal" else own * (1 - 1e-12) <= back <= own


def test_compose_round_trip(invoke):
    curve = _ok(invoke([*COMPOSE, "--rdp-curve", "-f", "csv"])).stdout
    for delta in ("1e-5", "1e-9"):
        own = _rows(invoke([*COMPOSE, "--delta", delta, "--method", "rdp", "-f", "csv"]))[0]
        back = _convert(invoke, curve, delta)
        assert float(back["epsilon"]) == float(own["epsilon"]) and back["alpha"] == own["alpha"]


def test_compose_curve_of_a_spec_file_and_merged_specs(invoke, tmp_path):
    specs = tmp_path / "specs.txt"
    specs.write_text("# two of the same\ngaussian:sigma=2\ngaussian:sigma=2\n")
    rows = _rows(invoke(["compose", f"@{specs}", "--rdp-curve", "--alphas", "2,3"]))
    assert [float(r["rdp"]) for r in rows] == pytest.approx([2 * 2 / 8, 2 * 3 / 8], rel=1e-13)


@pytest.mark.parametrize("method, extra", [("feldman", []), ("cni", ["--initial-distance", "1"])])
def test_iterate_round_trip(invoke, method, extra):
    """feldman and cni minimise over continuous α: on the default grid, convert is that ε or above; at the
    command's best order (and the same conversion, asoodeh) the same ε to a few ulps."""
    delta = "1e-5"
    (own,) = _rows(invoke([*ITERATE, *extra, "--method", method, "--delta", delta, "-f", "csv"]))
    eps, best = float(own["epsilon"]), own["alpha"]
    grid = _ok(invoke([*ITERATE, *extra, "--method", method, "--rdp-curve", "-f", "csv"])).stdout
    on_grid = float(_convert(invoke, grid, delta, "asoodeh")["epsilon"])
    assert eps <= on_grid <= eps * 1.03
    at_best = _ok(
        invoke([*ITERATE, *extra, "--method", method, "--rdp-curve", "--alphas", best, "-f", "csv"])
    ).stdout
    assert float(_convert(invoke, at_best, delta, "asoodeh")["epsilon"]) == pytest.approx(eps, rel=1e-13)


def test_iterate_composition_curve_is_above_its_exact_epsilon(invoke):
    """composition's ε is the exact Gaussian one; its Rényi curve can only give more."""
    eps = _eps(invoke, [*ITERATE, "--method", "composition", "--delta", "1e-5"])
    curve = _ok(invoke([*ITERATE, "--method", "composition", "--rdp-curve", "-f", "csv"])).stdout
    assert eps < float(_convert(invoke, curve, "1e-5")["epsilon"]) < eps * 1.2


def test_langevin_round_trip(invoke):
    delta = "1e-5"
    (own,) = _rows(invoke([*LANGEVIN, "--method", "dynamics", "--delta", delta, "-f", "csv"]))
    eps, best = float(own["epsilon"]), own["best_alpha"]
    grid = _ok(invoke([*LANGEVIN, "--method", "dynamics", "--rdp-curve", "-f", "csv"])).stdout
    assert eps <= float(_convert(invoke, grid, delta, "asoodeh")["epsilon"]) <= eps * 1.01
    # at best_alpha: the printed ζ = α·c is rounded up once more than the command's, a few ulps
    at_best = _ok(
        invoke([*LANGEVIN, "--method", "dynamics", "--rdp-curve", "--alphas", best, "-f", "csv"])
    ).stdout
    back = float(_convert(invoke, at_best, delta, "asoodeh")["epsilon"])
    assert eps <= back == pytest.approx(eps, rel=1e-13)


def test_langevin_curves_are_the_alpha_rows(invoke):
    """The curve at an order is exactly the command's --alpha row (rdp, rdp_lower) at that order."""
    curve = _rows(invoke([*LANGEVIN, "--rdp-curve", "--alphas", "2,30"]))
    rows = _rows(invoke([*LANGEVIN, "--alpha", "2,30"]))
    pick = ("method", "bound", "steps", "alpha", "rdp", "rdp_lower")
    assert [{k: r[k] for k in pick} for r in curve] == [{k: r[k] for k in pick} for r in rows]


def test_a_curve_of_several_methods_is_refused_by_convert(invoke):
    """convert reads one curve: a file of several (a method column) repeats orders, and convert says so."""
    curve = _ok(invoke([*ITERATE, "--rdp-curve", "-f", "csv"])).stdout
    res = invoke(["convert", "--curve", "-", "--delta", "1e-5"], input=curve)
    assert res.exit_code == 2 and "duplicate order" in res.stderr
    lower = _ok(invoke([*LANGEVIN, "--method", "lower", "--rdp-curve", "-f", "csv"])).stdout
    res = invoke(["convert", "--curve", "-", "--delta", "1e-5"], input=lower)  # a lower bound is no curve
    assert res.exit_code == 2 and "rdp" in res.stderr


def test_the_readme_example_file_is_the_command_output(invoke):
    text = (ROOT / "docs" / "examples" / "sgd-curve.csv").read_text()
    assert text == _ok(invoke([*SGD, "--rdp-curve", "-f", "csv"])).stdout


# -- the odometer: same orders, events not curves --------------------------------------------------------
def _odometer_rdp(invoke, events: list[str], delta: str) -> float:
    args = [
        "odometer",
        *[w for e in events for w in ("--event", e)],
        "--delta",
        delta,
        "--alphas",
        "paper",
        "-f",
        "csv",
    ]
    return float(_rows(invoke(args))[-1]["epsilon_rdp"])


def test_odometer_round_trip_compose(invoke):
    """odometer's plain epsilon_rdp of fixed events is the composition's RDP ε on the same orders: exactly
    for one event; for several the two round the running sum up differently (odometer one ulp per step,
    total_rdp 16 ulps), so within 1e-12, and the curve's ε is the larger."""
    one = ["gaussian:sigma=4,count=10"]
    curve = _ok(invoke(["compose", *one, "--rdp-curve", "--alphas", "paper", "-f", "csv"])).stdout
    assert float(_convert(invoke, curve, "1e-6")["epsilon"]) == _odometer_rdp(invoke, one, "1e-6")
    two = ["gaussian:sigma=4,count=10", "laplace:scale=20,count=5"]
    curve = _ok(invoke(["compose", *two, "--rdp-curve", "--alphas", "paper", "-f", "csv"])).stdout
    back, odo = float(_convert(invoke, curve, "1e-6")["epsilon"]), _odometer_rdp(invoke, two, "1e-6")
    assert odo <= back == pytest.approx(odo, rel=1e-12)


def test_odometer_round_trip_sgd(invoke):
    """The same DP-SGD run as an odometer event: its curve is evaluated by the mechanism catalogue and
    rounded up once, so the two agree to 1e-12 (both valid bounds)."""
    curve = _ok(
        invoke(
            [
                "sgd-epsilon",
                "--sigma",
                "1",
                "--sample-rate",
                "0.01024",
                "--steps",
                "2940",
                "--rdp-curve",
                "--alphas",
                "paper",
                "-f",
                "csv",
            ]
        )
    ).stdout
    back = float(_convert(invoke, curve, "1e-6")["epsilon"])
    assert back == pytest.approx(
        _odometer_rdp(invoke, ["sgm:q=0.01024,sigma=1,count=2940"], "1e-6"), rel=1e-12
    )


def test_odometer_refuses_a_curve(invoke):
    """A curve's sample_rate,noise_multiplier,steps columns must not pass for one event per order."""
    for args in ([*SGD, "--rdp-curve", "--alphas", "2,4"], ["compose", "gaussian:sigma=1", "--rdp-curve"]):
        curve = _ok(invoke([*args, "-f", "csv"])).stdout
        res = invoke(["odometer", "-", "--delta", "1e-6"], input=curve)
        assert res.exit_code == 2 and res.stdout == ""
        assert "Rényi curve" in res.stderr and len(res.stderr.splitlines()) == 1


# -- independent values ----------------------------------------------------------------------------------
ORDERS = [1.5, 2.0, 3.0, 8.0, 32.0, 256.0]


def _curve(invoke, args) -> list[float]:
    res = invoke([*args, "--rdp-curve", "--alphas", ",".join(map(str, ORDERS)), "-f", "csv"])
    return [float(r["rdp"]) for r in _rows(res)]


def test_gaussian_is_alpha_over_two_sigma_squared_times_count(invoke):
    got = _curve(invoke, ["compose", "gaussian:sigma=3,sensitivity=2,count=7"])
    want = [a * 2**2 / (2 * 3**2) * 7 for a in ORDERS]
    assert all(g >= w for g, w in zip(got, want))  # rounded to the safe side
    assert got == pytest.approx(want, rel=1e-13)


def test_laplace_is_mironovs_closed_form(invoke):
    """Mironov 2017, Prop. 6: for scale b and sensitivity 1,
    D_α = log(α/(2α−1)·e^{(α−1)/b} + (α−1)/(2α−1)·e^{−α/b}) / (α − 1)."""
    b, count = 4.0, 3

    def laplace(a):
        return math.log(
            a / (2 * a - 1) * math.exp((a - 1) / b) + (a - 1) / (2 * a - 1) * math.exp(-a / b)
        ) / (a - 1)

    got = _curve(invoke, ["compose", f"laplace:scale={b},count={count}"])
    want = [count * laplace(a) for a in ORDERS]
    assert got == pytest.approx(want, rel=1e-12)
    assert all(g >= w * (1 - 1e-15) for g, w in zip(got, want))
    # ε-DP with ε = 1/b bounds every order
    assert max(got) <= count / b * (1 + 1e-12)


def test_subsampled_gaussian_matches_dp_accounting(invoke):
    """dp_accounting's RDP accountant, T compositions of the Poisson-subsampled Gaussian: integer orders
    agree to 1e-9 (both exact binomial sums); at fractional orders dp_accounting's series is an
    over-estimate, so dpcalc is not above it."""
    pytest.importorskip("dp_accounting")
    import dp_accounting
    from dp_accounting.rdp import rdp_privacy_accountant as rdp

    q, sigma, steps = 0.01, 1.1, 1000
    acct = rdp.RdpAccountant(ORDERS)
    acct.compose(dp_accounting.PoissonSampledDpEvent(q, dp_accounting.GaussianDpEvent(sigma)), steps)
    theirs = np.asarray(acct._rdp, float)
    ours = np.asarray(
        _curve(invoke, ["sgd-epsilon", "--sigma", str(sigma), "--sample-rate", str(q), "--steps", str(steps)])
    )
    integer = np.asarray(ORDERS) == np.floor(ORDERS)
    assert ours[integer] == pytest.approx(theirs[integer], rel=1e-9)
    assert np.all(ours[~integer] <= theirs[~integer] * (1 + 1e-9))
    # the same run through compose's subsampled-gaussian spec: the same curve
    spec = _curve(invoke, ["compose", f"subsampled-gaussian:q={q},sigma={sigma},count={steps}"])
    assert spec == pytest.approx(ours.tolist(), rel=1e-12)


def test_iterate_and_langevin_closed_forms(invoke):
    (s, lip, lr, t) = (5.0, 1.0, 0.05, 100)
    rows = _rows(invoke([*ITERATE, "--initial-distance", "2", "--rdp-curve", "--alphas", "2,3"]))
    by = {(r["method"], float(r["alpha"])): float(r["rdp"]) for r in rows}
    for a in (2.0, 3.0):
        assert by["feldman", a] == pytest.approx(4 * a * (lip / s) ** 2 * math.log(t) / t, rel=1e-13)
        assert by["composition", a] == pytest.approx(2 * a * lip**2 / s**2, rel=1e-13)
        assert by["cni", a] == pytest.approx(a * 2**2 / (2 * (lr * s) ** 2 * t), rel=1e-13)
    rows = _rows(invoke([*LANGEVIN, "--rdp-curve", "--alphas", "30"]))
    by = {r["method"]: r for r in rows}
    sat = 30 * 4**2 / (1 * 0.02**2 * 5000**2)  # α S_g²/(λσ²n²)
    assert float(by["dynamics"]["rdp"]) == pytest.approx(sat * -math.expm1(-1 * 0.02 * 1000 / 2), rel=1e-13)
    assert float(by["composition"]["rdp"]) == pytest.approx(
        1000 * 30 * 0.02 * 4**2 / (4 * 0.02**2 * 5000**2), rel=1e-13
    )
    assert by["lower"]["rdp"] == "" and by["lower"]["bound"] == "lower"


# -- bad input -------------------------------------------------------------------------------------------
BAD = [
    ([*SGD, "--alphas", "2"], "--alphas needs --rdp-curve"),
    ([*SGD, "--rdp-curve", "--alphas", "1,2"], "--alphas"),
    ([*SGD, "--rdp-curve", "--alphas", "2,2"], "distinct"),
    ([*SGD, "--rdp-curve", "--alphas", "2,abc"], "not a number"),
    ([*SGD, "--rdp-curve", "--alphas", "inf"], "--alphas"),
    (["sgd-epsilon", *SGD[3:], "--rdp-curve", "--target-epsilon", "1"], "--target-epsilon"),
    ([*SGD, "--rdp-curve", "--method", "pld"], "no Rényi curve"),
    ([*SGD, "--rdp-curve", "--max-epsilon", "1"], "--max-epsilon"),
    (["sgd-epsilon", "--sample-rate", "0.01", "--steps", "10", "--rdp-curve"], "--noise-multiplier"),
    (["sgd-epsilon", "--sigma", "1", "--steps", "10", "--rdp-curve"], "--sample-rate"),
    (["compose", "dp:epsilon=1,delta=1e-6", "--rdp-curve"], "no Rényi-DP curve"),
    (["compose", "gaussian:sigma=1", "--rdp-curve", "--method", "pld"], "no Rényi curve"),
    (["compose", "gaussian:sigma=1", "--rdp-curve", "--eps-error", "0.1"], "--eps-error"),
    (["compose", "gausian:sigma=1", "--rdp-curve"], "unknown kind"),
    ([*ITERATE, "--rdp-curve", "--method", "asoodeh"], "asoodeh"),
    ([*ITERATE, "--rdp-curve", "--alpha", "2"], "--alphas"),
    ([*ITERATE, "--rdp-curve", "--method", "cni"], "--initial-distance"),
    ([*LANGEVIN, "--rdp-curve", "--alpha", "2"], "--alphas"),
    ([*LANGEVIN[:5], "--lr", "2", *LANGEVIN[7:], "--rdp-curve"], "η <= 1/β"),
    ([*LANGEVIN, "--rdp-curve", "--max-delta", "0.1"], "--max-delta"),
]


@pytest.mark.parametrize("args, what", BAD, ids=[" ".join(a[-3:]) for a, _ in BAD])
def test_bad_input_is_one_line_and_exit_2(invoke, args, what):
    res = invoke([*args, "-f", "csv"])
    assert res.exit_code == 2, res.stdout
    assert res.stdout == ""
    assert len(res.stderr.splitlines()) == 1 and res.stderr.startswith("Error: ") and what in res.stderr


def test_sgd_epsilon_still_needs_delta_without_the_curve(invoke):
    res = invoke(["sgd-epsilon", "--sigma", "1", "--sample-rate", "0.01", "--steps", "1000"])
    assert res.exit_code == 2 and res.stderr == "Error: Missing option '--delta'.\n"


def test_a_large_sweep_is_written_chunk_by_chunk_with_the_same_rows(invoke, monkeypatch):
    """Chunks bound the memory of a large sweep; where they end changes nothing (iterate: no value
    depends on the array sizes; sgd-epsilon: several chunks use scipy throughout, a single chunk may use
    the math module, which agrees to a few ulps)."""
    from dpcalc.commands import curve

    args = [
        *ITERATE[:-2],
        "--steps",
        "10,100,1000",
        "--initial-distance",
        "1",
        "--rdp-curve",
        "--alphas",
        "2:40:2",
    ]
    whole = _ok(invoke([*args, "-f", "csv"])).stdout
    sgd = ["sgd-epsilon", "--sigma", "0.8,1.1", "--sample-rate", "0.01,0.03", "--steps", "100", "--rdp-curve"]
    sgd_whole = _rows(invoke([*sgd, "--alphas", "2:40:2"]))
    monkeypatch.setattr(curve, "CHUNK_ROWS", 7)
    assert _ok(invoke([*args, "-f", "csv"])).stdout == whole
    assert _ok(invoke([*args, "-f", "jsonl"])).stdout.count("\n") == whole.count("\n") - 1
    chunked = _rows(invoke([*sgd, "--alphas", "2:40:2"]))
    assert [r["alpha"] for r in chunked] == [r["alpha"] for r in sgd_whole]
    assert [float(r["rdp"]) for r in chunked] == pytest.approx(
        [float(r["rdp"]) for r in sgd_whole], rel=1e-12
    )


@pytest.mark.parametrize("command", list(CURVE_SCHEMAS))
def test_orders_above_the_limit_are_refused_up_front(invoke, command):
    # beyond 2^53 the integer-order expansions never ended (issue 27): refused naming --alphas
    from dpcalc.engine.orders import ORDER_MAX

    for alphas in ("2,1e20", f"{ORDER_MAX * 1.5:g}"):
        res = invoke([*VARIANTS[command][0], "--rdp-curve", "--alphas", alphas])
        assert res.exit_code == 2 and res.stdout == ""
        assert "--alphas" in res.stderr and f"{ORDER_MAX:g}" in res.stderr
    res = _ok(invoke([*VARIANTS[command][0], "--rdp-curve", "--alphas", f"2,{ORDER_MAX:g}", "-f", "csv"]))
    assert {float(r["alpha"]) for r in _rows(res)} == {2.0, ORDER_MAX}


def test_engine_refuses_orders_above_the_limit():
    from dpcalc.engine.mechanisms.sgm import poisson as sgm_poisson
    from dpcalc.engine.orders import ORDER_MAX
    from dpcalc.errors import InputError

    with pytest.raises(InputError, match="alphas"):
        sgm_poisson.rdp_poisson(0.01, 1.0, [2.0, 1e20])
    assert np.all(np.isfinite(sgm_poisson.rdp_poisson(0.01, 1.0, [2.0, ORDER_MAX])))


def test_curve_configurations_above_the_old_limit_are_estimated_not_refused(invoke, monkeypatch):
    # issue 40: langevin's and iterate's configurations are formed per chunk (no limit of 200,000 of them):
    # the work is estimated and capped by --max-seconds before anything is computed
    from dpcalc import execution

    def fail(*a, **k):
        raise AssertionError("work started")

    monkeypatch.setattr(execution, "map_ordered", fail)
    args = [
        "--sigma",
        "0.02",
        "--sensitivity",
        "4",
        "--lr",
        "0.02",
        "--strong-convexity",
        "1",
        "--smoothness",
        "1",
    ]
    res = invoke(
        ["langevin", *args, "--dataset-size", "5000", "--steps", "1:300000:1", "--rdp-curve", "--alphas", "2"]
        + ["--max-seconds", "0.5", "--jobs", "1"]
    )
    assert res.exit_code == 2 and res.stdout == "" and len(res.stderr.strip().splitlines()) == 1
    assert res.stderr.startswith(
        "Error: --max-seconds 0.5: 900,000 rows of langevin Rényi curves on 1 process"
    )
