"""sgd-epsilon --accountant pld: the PLD bracket wired into DP-SGD accounting (issue 5)."""

import csv
import io

import pytest


def rows(text):
    return list(csv.DictReader(io.StringIO(text)))


CONFIG_A = ["--sigma", "1.1", "--sample-rate", "0.004267", "--steps", "14063", "--delta", "1e-5"]


def test_all_has_pld_bracket_below_rdp(invoke):
    r = invoke(["sgd-epsilon", *CONFIG_A, "--accountant", "all", "-f", "csv"])
    assert r.exit_code == 0, r.stderr
    by = {row["method"]: row for row in rows(r.stdout)}
    pld, rdp = by["pld"], by["rdp"]
    lo, est, up = (float(pld[k]) for k in ("epsilon_lower", "epsilon_estimate", "epsilon"))
    assert lo <= est <= up < float(rdp["epsilon"])
    assert rdp["epsilon_estimate"] == rdp["epsilon_lower"] == "" and "epsilon_upper" not in rdp
    # the peer measurements, config A: PLD (dp-accounting) 2.3818 and PRV 2.3817 lie in the bracket
    assert lo <= 2.3817 and 2.3818 <= up * (1 + 1e-4)


def test_quiet_prints_the_upper_end(invoke):
    full = rows(invoke(["sgd-epsilon", *CONFIG_A, "--accountant", "pld", "-f", "csv"]).stdout)
    q = invoke(["sgd-epsilon", *CONFIG_A, "--accountant", "pld", "-q"])
    assert float(q.stdout) == float(full[0]["epsilon"])  # the certified upper end
    assert float(full[0]["epsilon_estimate"]) <= float(full[0]["epsilon"])


def test_budget_judges_the_upper_end(invoke):
    full = rows(invoke(["sgd-epsilon", *CONFIG_A, "--accountant", "pld", "-f", "csv"]).stdout)[0]
    lo, up = float(full["epsilon_lower"]), float(full["epsilon"])
    between = (lo + up) / 2  # above the lower end: a check on the estimate or the lower end could pass
    r = invoke(["sgd-epsilon", *CONFIG_A, "--accountant", "pld", "-q", "--max-epsilon", repr(between)])
    assert r.exit_code == (3 if up > between else 0)
    assert (
        invoke(["sgd-epsilon", *CONFIG_A, "--accountant", "pld", "-q", "--max-epsilon", repr(up)]).exit_code
        == 0
    )


@pytest.mark.parametrize(
    "extra,fragment",
    [
        (  # a loss beyond the range of double precision: the refusal points to the RDP accountant
            ["--sigma", "0.01", "--sample-rate", "0.5", "--steps", "10", "--delta", "1e-5"],
            "--accountant rdp",
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
            "--accountant pld",
        ),
    ],
)
def test_pld_refusals(invoke, extra, fragment):
    r = invoke(["sgd-epsilon", *extra, "--accountant", "pld"])
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
            "--accountant",
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
            "--accountant",
            "all",
            "--plot",
            str(png),
        ]
    )
    assert r.exit_code == 0, r.stderr
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
