"""sgd-epsilon --method pld: the PLD bracket wired into DP-SGD accounting (issue 5)."""

import csv
import io

import pytest


def rows(text):
    return list(csv.DictReader(io.StringIO(text)))


CONFIG_A = ["--sigma", "1.1", "--sample-rate", "0.004267", "--steps", "14063", "--delta", "1e-5"]


def test_all_has_pld_bracket_below_rdp(invoke):
    r = invoke(["sgd-epsilon", *CONFIG_A, "--method", "all", "-f", "csv"])
    assert r.exit_code == 0, r.stderr
    by = {row["method"]: row for row in rows(r.stdout)}
    pld, rdp = by["pld"], by["rdp"]
    lo, est, up = (float(pld[k]) for k in ("epsilon_lower", "epsilon_estimate", "epsilon"))
    assert lo <= est <= up < float(rdp["epsilon"])
    assert rdp["epsilon_estimate"] == rdp["epsilon_lower"] == "" and "epsilon_upper" not in rdp
    # the peer measurements, config A: PLD (dp-accounting) 2.3818 and PRV 2.3817 lie in the bracket
    assert lo <= 2.3817 and 2.3818 <= up * (1 + 1e-4)


def test_quiet_prints_the_upper_end(invoke):
    full = rows(invoke(["sgd-epsilon", *CONFIG_A, "--method", "pld", "-f", "csv"]).stdout)
    q = invoke(["sgd-epsilon", *CONFIG_A, "--method", "pld", "-q"])
    assert float(q.stdout) == float(full[0]["epsilon"])  # the certified upper end
    assert float(full[0]["epsilon_estimate"]) <= float(full[0]["epsilon"])


def test_budget_judges_the_upper_end(invoke):
    full = rows(invoke(["sgd-epsilon", *CONFIG_A, "--method", "pld", "-f", "csv"]).stdout)[0]
    lo, up = float(full["epsilon_lower"]), float(full["epsilon"])
    between = (lo + up) / 2  # above the lower end: a check on the estimate or the lower end could pass
    r = invoke(["sgd-epsilon", *CONFIG_A, "--method", "pld", "-q", "--max-epsilon", repr(between)])
    assert r.exit_code == (3 if up > between else 0)
    assert (
        invoke(["sgd-epsilon", *CONFIG_A, "--method", "pld", "-q", "--max-epsilon", repr(up)]).exit_code == 0
    )


@pytest.mark.parametrize(
    "extra,fragment",
    [
        (  # a loss beyond the range of double precision: the refusal points to the RDP accountant
            ["--sigma", "0.01", "--sample-rate", "0.5", "--steps", "10", "--delta", "1e-5"],
            "--method rdp",
        ),
        (
            [
                "--sigma",
                "2",
                "--batch-size",
                "512",
                "--dataset-size",
                "50000",
                "--steps",
                "100",
                "--delta",
                "1e-5",
                "--sampling",
                "fixed-size",
            ],
            "--method pld",
        ),
    ],
)
def test_pld_refusals(invoke, extra, fragment):
    r = invoke(["sgd-epsilon", *extra, "--method", "pld"])
    assert r.exit_code == 2 and fragment in r.stderr and r.stdout == ""


def test_all_leaves_pld_out_where_it_does_not_apply(invoke):
    r = invoke(
        [
            "sgd-epsilon",
            "--target-epsilon",
            "3",
            "--batch-size",
            "512",
            "--dataset-size",
            "50000",
            "--sigma",
            "1",
            "--delta",
            "1e-5",
            "--sampling",
            "fixed-size",
            "--method",
            "all",
            "-f",
            "csv",
        ]
    )
    assert r.exit_code == 0 and "pld" not in {row["method"] for row in rows(r.stdout)}


def test_eps_error_needs_pld(invoke):
    r = invoke(["sgd-epsilon", *CONFIG_A, "--eps-error", "0.01"])
    assert r.exit_code == 2 and "--eps-error" in r.stderr


def test_plot_with_bracket(invoke, tmp_path):
    pytest.importorskip("matplotlib")
    png = tmp_path / "s.png"
    r = invoke(
        [
            "sgd-epsilon",
            "--sigma",
            "1.1",
            "--sample-rate",
            "0.004267",
            "--steps",
            "1000,5000,14063",
            "--delta",
            "1e-5",
            "--method",
            "all",
            "--plot",
            str(png),
        ]
    )
    assert r.exit_code == 0, r.stderr
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


@pytest.mark.parametrize("neighbors", ["add-remove", "replace-one"])
@pytest.mark.parametrize(
    "q,sigma,steps,delta", [(0.01, 2.0, 100, 0.05), (0.1, 1.0, 10, 0.5), (0.01, 1.0, 100, 0.2)]
)
def test_certified_zero_equals_the_pld(invoke, neighbors, q, sigma, steps, delta):
    # where the Rényi bound certifies ε = 0 the pld row skips the PLD (issue 27: 11 s and 450 MB at
    # δ = 0.236): its answer must be the one the PLD itself gives
    from dpcalc.commands.sgd.rows import ZERO_NOTE
    from dpcalc.engine.dpsgd import accounting
    from dpcalc.engine.dpsgd.pld_accounting import sgd_epsilon_pld

    args = ["--sigma", str(sigma), "--sample-rate", str(q), "--steps", str(steps), "--delta", str(delta)]
    res = invoke(["sgd-epsilon", *args, "--neighbors", neighbors, "--method", "pld", "-f", "csv"])
    assert res.exit_code == 0, res.stderr
    (row,) = rows(res.stdout)
    rdp = accounting.epsilon_rdp(q, sigma, steps, delta, neighbors=neighbors, warn=False).epsilon
    slow = [float(x) for x in sgd_epsilon_pld(q, sigma, steps, delta, neighbors=neighbors)]
    got = [float(row[k]) for k in ("epsilon_lower", "epsilon_estimate", "epsilon")]
    if float(rdp) == 0.0:
        assert ZERO_NOTE in row["note"] and got == [0.0, 0.0, 0.0] == slow
    else:  # the Rényi bound does not reach 0: the PLD is computed as before
        assert ZERO_NOTE not in row["note"] and got == slow


def test_certified_zero_only_where_the_renyi_bound_is_zero(invoke):
    args = ["--sigma", "1.1", "--sample-rate", "0.004267", "--steps", "100", "--delta", "1e-3"]
    res = invoke(["sgd-epsilon", *args, "--method", "pld", "-f", "csv"])
    (row,) = rows(res.stdout)
    assert res.exit_code == 0 and float(row["epsilon"]) > 0 and row["note"] == ""
