"""The CLI corpus: every case prints byte-identical stdout and stderr, with the same exit status, as
recorded in tests/corpus/expected.jsonl (regenerate with ``python tests/corpus/regen.py`` only for an
intended change of output, and read the diff)."""

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent / "corpus"))

import replay  # noqa: E402

CASES = replay.cases()
EXPECTED = replay.load_expected()


def test_corpus_is_large_and_recorded():
    assert len(CASES) >= 200
    assert len(set(CASES)) == len(CASES), "duplicate corpus lines"
    assert set(CASES) == set(EXPECTED), "cases.txt and expected.jsonl differ: run tests/corpus/regen.py"


def test_corpus_covers_every_command_and_exit_status():
    commands = {line.split()[0] for line in CASES}
    assert {"convert", "compose", "sgd-epsilon", "iterate", "langevin", "odometer"} <= commands
    statuses = {s["exit"] for r in EXPECTED.values() for s in r["steps"]}
    assert {0, 1, 2, 3} <= statuses


@pytest.mark.parametrize("line", CASES, ids=[c[:80] for c in CASES])
def test_corpus_case(line):
    got = replay.run_case(line)
    want = EXPECTED[line]
    for g, w in zip(got["steps"], want["steps"]):
        assert g["exit"] == w["exit"], g["stderr"]
        assert g["stderr"] == w["stderr"]
        assert g["stdout"] == w["stdout"]
    assert len(got["steps"]) == len(want["steps"])
