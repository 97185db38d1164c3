"""One documented list of output columns per command: the same header whatever the inputs, accountant,
method, sampling or parameterisation, and the list the man page's OUTPUT COLUMNS section shows."""

import re
from pathlib import Path

import pytest

from dpcalc.commands.schema import SCHEMAS, names

MAN = Path(__file__).resolve().parent.parent / "man"

VARIANTS = {
    "convert": [
        ["--alpha", "10", "--rdp", "0.5", "--delta", "1e-5"],
        ["--alpha", "10", "--rdp", "0.5", "--epsilon", "1", "--method", "all"],
        ["--from", "dp", "--alpha", "10", "--epsilon", "1", "--delta", "1e-5"],
        ["--from", "dp", "--alpha", "2,10", "--epsilon", "1", "--delta", "1e-5", "--method", "all"],
        ["--curve", "CURVE", "--delta", "1e-5"],
        ["--curve", "CURVE", "--epsilon", "1", "--method", "balle"],
    ],
    "compose": [
        ["gaussian:sigma=1,count=10", "--delta", "1e-5"],
        ["gaussian:sigma=1,count=10", "--delta", "1e-5", "--method", "all"],
        ["laplace:scale=10", "--epsilon", "1", "--method", "all"],
        ["dp:epsilon=0.1,count=5", "--epsilon", "1,2"],
        ["zcdp:rho=0.1", "--delta", "1e-5", "--method", "rdp"],
        ["gaussian:count=10", "--epsilon", "1", "--delta", "1e-5", "--method", "all"],
    ],
    "sgd-epsilon": [
        ["--sigma", "1.1", "--sample-rate", "0.01", "--steps", "1000", "--delta", "1e-5"],
        [
            "--sigma",
            "1.1",
            "--batch-size",
            "256",
            "--dataset-size",
            "60000",
            "--epochs",
            "2",
            "--delta",
            "1e-5",
        ],
        [
            "--sigma",
            "1.1",
            "--sample-rate",
            "0.01",
            "--steps",
            "100",
            "--delta",
            "1e-5",
            "--accountant",
            "all",
        ],
        [
            "--sigma",
            "1",
            "--batch-size",
            "100",
            "--dataset-size",
            "10000",
            "--steps",
            "100",
            "--delta",
            "1e-5",
            "--sampling",
            "fixed-size",
            "--accountant",
            "all",
        ],
        ["--sample-rate", "0.01", "--steps", "1000", "--delta", "1e-5", "--target-epsilon", "3"],
        ["--sigma", "4", "--sample-rate", "0.04", "--delta", "1e-5", "--target-epsilon", "2"],
    ],
    "iterate": [
        ["--sigma", "1", "--lipschitz", "1", "--lr", "0.1", "--steps", "1000", "--delta", "1e-5"],
        ["--sigma", "1", "--lipschitz", "1", "--lr", "0.1", "--steps", "1000", "--epsilon", "1"],
        ["--sigma", "1", "--lipschitz", "1", "--lr", "0.1", "--steps", "1000", "--alpha", "2"],
        [
            "--sigma",
            "1",
            "--lipschitz",
            "1",
            "--lr",
            "0.1",
            "--steps",
            "20",
            "--delta",
            "1e-5",
            "--method",
            "feldman",
        ],
        [
            "--sigma",
            "1",
            "--lipschitz",
            "1",
            "--lr",
            "0.1",
            "--steps",
            "100",
            "--delta",
            "1e-5",
            "--initial-distance",
            "1",
        ],
    ],
    "odometer": [
        ["--event", "gaussian:sigma=2", "--delta", "1e-6"],
        ["--event", "gaussian:sigma=2", "--event", "laplace:scale=3", "--delta", "1e-6", "--filter", "1"],
        ["EVENTS_SGD", "--delta", "1e-6"],
        ["EVENTS_SGD", "--delta", "1e-6", "--filter", "2", "--filter-rule", "paper"],
        ["--ledger", "LEDGER", "--add", "gaussian:sigma=5", "--delta", "1e-6"],
        ["--ledger", "LEDGER"],
    ],
    "langevin": [
        ["--alpha", "2"],
        ["--delta", "1e-5"],
        ["--alpha", "2", "--delta", "1e-5"],
        ["--alpha", "2", "--method", "lower"],
        ["--delta", "1e-5", "--method", "composition", "--conversion", "balle"],
    ],
}
LANGEVIN = [
    "--sigma",
    "0.1",
    "--sensitivity",
    "0.01",
    "--lr",
    "0.1",
    "--strong-convexity",
    "0.5",
    "--smoothness",
    "1",
    "--dataset-size",
    "1000",
    "--steps",
    "100",
]


@pytest.mark.parametrize("command", list(VARIANTS))
def test_header_is_the_schema_whatever_the_inputs(invoke, tmp_path, command):
    curve = tmp_path / "curve.csv"
    curve.write_text("alpha,rdp\n2,0.0125\n4,0.03\n8,0.069\n16,0.16\n")
    headers = set()
    assert len(VARIANTS[command]) >= 5
    events = tmp_path / "events.csv"
    events.write_text("sample_rate,noise_multiplier,steps\n0.01,1,100\n0.02,1,50\n")
    files = {"CURVE": str(curve), "EVENTS_SGD": str(events), "LEDGER": str(tmp_path / "ci.ledger")}
    for args in VARIANTS[command]:
        args = [files.get(a, a) for a in args]
        extra = LANGEVIN if command == "langevin" else []
        res = invoke([command, *extra, *args, "-f", "csv"])
        assert res.exit_code == 0, (args, res.stderr)
        headers.add(res.stdout.splitlines()[0])
    assert headers == {",".join(names(command))}


@pytest.mark.parametrize("command", list(SCHEMAS))
def test_the_man_page_lists_the_schema(command):
    text = (MAN / f"dpcalc-{command}.1").read_text()
    section = text.split(".SH OUTPUT COLUMNS", 1)[1].split(".SH ", 1)[0]
    listed = [re.sub(r"\\\\-", "-", m).replace("\\-", "-") for m in re.findall(r"\\fB(.+?)\\fR", section)]
    assert listed == names(command)
