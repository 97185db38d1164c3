"""Replay the CLI corpus (cases.txt) in-process: one fresh working directory per case."""

from __future__ import annotations

import json
import os
import shlex
import shutil
import tempfile
import warnings
from pathlib import Path

HERE = Path(__file__).resolve().parent
CASES = HERE / "cases.txt"
EXPECTED = HERE / "expected.jsonl"
DATA = HERE / "data"


def cases() -> list[str]:
    """The corpus lines (comments and blank lines dropped)."""
    out = []
    for line in CASES.read_text(encoding="utf-8").splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            out.append(line)
    return out


def _one(runner, main, text: str) -> dict:
    args = shlex.split(text)
    stdin = None
    if args and args[-1].startswith("<"):
        stdin = Path(args.pop()[1:]).read_text(encoding="utf-8")
    res = runner.invoke(
        main, args, input=stdin, prog_name="dpcalc", catch_exceptions=False, env={"COLUMNS": "100"}
    )
    return {"exit": res.exit_code, "stdout": res.stdout, "stderr": res.stderr}


def run_case(line: str) -> dict:
    """Run one corpus line in a fresh directory holding a copy of data/; returns its outputs."""
    from click.testing import CliRunner

    from dpcalc.cli import main

    runner = CliRunner()
    cwd = os.getcwd()
    with tempfile.TemporaryDirectory() as tmp:
        for f in DATA.iterdir():
            shutil.copy(f, tmp)
        os.chdir(tmp)
        try:
            with warnings.catch_warnings():  # as the test suite runs (pyproject: RuntimeWarning is an error)
                warnings.simplefilter("error", RuntimeWarning)
                steps = [_one(runner, main, part) for part in line.split(" && ")]
        finally:
            os.chdir(cwd)
    return {"case": line, "steps": steps}


def load_expected() -> dict[str, dict]:
    rows = [json.loads(x) for x in EXPECTED.read_text(encoding="utf-8").splitlines() if x.strip()]
    return {r["case"]: r for r in rows}
