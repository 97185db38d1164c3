"""An inverse question (--target-epsilon) that nothing answers says why in the row's note (issue 27),
besides the warning on stderr: a script reading the CSV sees the reason, not an empty cell."""

import csv
import io

import pytest
from click.testing import CliRunner

from dpcalc.cli import main


def _rows(args):
    res = CliRunner().invoke(main, ["sgd-epsilon", *args, "-f", "csv"], catch_exceptions=False)
    assert res.exit_code == 0, res.output
    return list(csv.DictReader(io.StringIO(res.stdout)))


@pytest.mark.parametrize(
    "args, why",
    [
        # steps: even one step at σ = 0.1, q = 1 costs more than ε = 0.001
        (
            ["--target-epsilon", "0.001", "--sigma", "0.1", "--sample-rate", "1", "--method", "all"],
            "no solution: even one step exceeds the target ε",
        ),
        # batch size: even a batch of one of 1000 examples, 1000 steps at σ = 0.3
        (
            ["--target-epsilon", "0.001", "--sigma", "0.3", "--steps", "1000", "--dataset-size", "1000"],
            "no solution: even a batch of one exceeds the target ε",
        ),
    ],
)
def test_unsolved_inverse_rows_say_why(args, why):
    rows = _rows([*args, "--delta", "1e-5"])
    assert rows
    for row in rows:
        assert row["epsilon"] == ""  # no answer
        assert row["note"].startswith(why), row
    # an accountant's own note is kept after the reason
    abadi = [r for r in rows if r["accountant"] == "abadi"]
    for row in abadi:
        assert row["note"].endswith("asymptotic closed form: not a guarantee where valid is false")


def test_solved_inverse_rows_have_no_such_note():
    rows = _rows(["--target-epsilon", "3", "--sigma", "1", "--sample-rate", "0.01", "--delta", "1e-5"])
    assert rows and all(r["epsilon"] != "" for r in rows)
    assert not any(r["note"].startswith("no solution") for r in rows)
