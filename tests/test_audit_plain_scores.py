"""audit --scores reads a plain file column by column (dpcalc.commands.audit.command._plain_scores) and any
other row by row: both give the same members and scores, and everything irregular goes the row-by-row way,
whose errors name the line."""

from __future__ import annotations

import numpy as np
import pytest

from dpcalc.commands.audit import command
from dpcalc.errors import InputError


def _lines(text: str) -> list[str]:
    return text.splitlines(keepends=True)


@pytest.mark.parametrize(
    "header", ["member,score", "score,member", " Member , SCORE ", "member,score,note", "id,member,x,score"]
)
@pytest.mark.parametrize("last_newline", [True, False])
def test_plain_files_read_as_row_by_row(header, last_newline):
    rng = np.random.default_rng(len(header))
    width = header.count(",") + 1
    rows = []
    for m, s in zip(rng.integers(0, 2, 500), rng.standard_normal(500) * 10.0 ** rng.uniform(-8, 8, 500)):
        cells = ["7"] * width
        names = [c.strip().lower() for c in header.split(",")]
        cells[names.index("member")], cells[names.index("score")] = str(m), repr(float(s))
        rows.append(",".join(cells))
    text = "\n\n" + header + "\n" + "\n".join(rows) + ("\n" if last_newline else "")
    lines = _lines(text)
    plain = command._plain_scores(lines)
    assert plain is not None
    member, score = command._scores_by_row("f.csv", lines)
    assert plain[0].dtype == bool and np.array_equal(plain[0], member)
    assert np.array_equal(plain[1], np.array(score))


@pytest.mark.parametrize(
    "text",
    [
        'member,score\n1,0.5\n"0",0.25\n',  # quoting
        "member,score\n1,0.5\n# a comment\n0,0.25\n",
        "member,score\n1,0.5\n\n0,0.25\n",  # a blank line
        "member,score\n1,0.5\n0 ,0.25\n",  # spaces around a member
        "member,score\n1,0.5\n0,0.25,9\n",  # a ragged row
        "member,score\n1,0.5\n2,0.25\n",  # a bad member
        "member,score\n1,0.5\n0,nan\n",
        "member,score\n1,0.5\n0,abc\n",
        "member,score\n1,0.5\n0,\n",
        "member,scores\n1,0.5\n",  # no score column
        "member,score\n",
        "",
    ],
)
def test_anything_irregular_is_read_row_by_row(text):
    lines = _lines(text)
    assert command._plain_scores(lines) is None
    try:
        want = command._scores_by_row("f.csv", lines)
    except InputError:
        return  # the row-by-row reading names the fault (tests/test_audit_cli.py checks the messages)
    assert len(want[0]) == len(want[1]) > 0


def test_a_million_rows_by_column():
    rng = np.random.default_rng(5)
    n = 1_000_000
    member = rng.integers(0, 2, n)
    score = np.round(rng.random(n), 6)
    text = "member,score\n" + "".join(f"{m},{s:.6f}\n" for m, s in zip(member, score))
    got = command._plain_scores(_lines(text))
    assert got is not None and np.array_equal(got[0], member == 1)
    np.testing.assert_array_equal(got[1], np.array([float(f"{s:.6f}") for s in score]))
