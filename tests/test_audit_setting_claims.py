"""``audit --claimed-iterate`` / ``--claimed-langevin`` (issue 32): the claim is the smallest certified upper
bound that ``dpcalc iterate`` / ``dpcalc langevin`` prints for the same setting at the row's δ; bad settings are
one-line refusals."""

from __future__ import annotations

import csv
import io

import pytest
from click.testing import CliRunner

from dpcalc.cli import main

COUNTS = ["audit", "--tp", "600", "--fp", "300", "--fn", "400", "--tn", "700", "--delta", "1e-5"]
ITERATE = "sigma=5,lipschitz=1,lr=0.05,steps=100"
LANGEVIN = "sigma=0.02,sensitivity=4,lr=0.02,strong_convexity=1,smoothness=1,dataset_size=5000,steps=100"


def _run(args):
    return CliRunner().invoke(main, args)


def _rows(args):
    result = _run([*args, "-f", "csv"])
    assert result.exit_code in (0, 3), result.output
    return list(csv.DictReader(io.StringIO(result.stdout))), result.exit_code


def _options(text):
    out = []
    for part in text.split(","):
        key, _, value = part.partition("=")
        out += ["--" + key.replace("_", "-"), value]
    return out


@pytest.mark.parametrize("command,text", [("iterate", ITERATE), ("langevin", LANGEVIN)])
def test_the_claim_is_the_commands_smallest_upper_bound(command, text):
    (row,), code = _rows([*COUNTS, f"--claimed-{command}", text])
    rows, _ = _rows([command, *_options(text), "--delta", "1e-5"])
    upper = [float(r["epsilon"]) for r in rows if r.get("bound", "upper") == "upper" and r["epsilon"]]
    assert float(row["epsilon_claimed"]) == min(upper)
    assert float(row["ratio"]) == pytest.approx(float(row["epsilon_lower"]) / min(upper), rel=1e-12)
    assert code == (3 if float(row["epsilon_lower"]) > min(upper) else 0)


def test_a_lower_bound_above_the_claim_fails_the_audit():
    strong = ["audit", "--tp", "900", "--fp", "10", "--fn", "100", "--tn", "990", "--delta", "1e-5"]
    result = _run([*strong, "--claimed-iterate", ITERATE])
    assert result.exit_code == 3 and "AUDIT FAILED" in result.output
    weak = _run([*COUNTS, "--claimed-iterate", "sigma=0.5,lipschitz=1,lr=0.05,steps=100"])
    assert weak.exit_code == 0, weak.output


@pytest.mark.parametrize(
    "extra,words",
    [
        (["--claimed-iterate", "sigma=5,lr=0.05,steps=100"], "missing lipschitz"),
        (["--claimed-iterate", "sigma=5,lipschitz=1,lr=0.05,steps=100,colour=3"], "KEY=VALUE"),
        (["--claimed-iterate", "sigma=-1,lipschitz=1,lr=0.05,steps=100"], "sigma must be"),
        (["--claimed-iterate", "sigma=5,lipschitz=1,lr=0.05,steps=1.5"], "whole number"),
        (["--claimed-iterate", "sigma=5,sigma=4,lipschitz=1,lr=0.05,steps=10"], "given twice"),
        (["--claimed-langevin", LANGEVIN, "--claimed-epsilon", "1"], "give one claim"),
        (
            [
                "--claimed-langevin",
                "sigma=0.02,lr=0.02,strong_convexity=1,smoothness=1,dataset_size=5000,steps=100",
            ],
            "--claimed-langevin",
        ),
    ],
)
def test_bad_settings_are_one_line_exit_2(extra, words):
    result = _run([*COUNTS, *extra])
    assert result.exit_code == 2, result.output
    lines = result.output.strip().split("\n")
    assert len(lines) == 1 and words in lines[0], result.output
