"""Regenerate tests/corpus/expected.jsonl from the current code (read the diff before committing)."""

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import replay  # noqa: E402

if __name__ == "__main__":
    rows = [replay.run_case(line) for line in replay.cases()]
    with replay.EXPECTED.open("w", encoding="utf-8") as fh:
        for r in rows:
            fh.write(json.dumps(r, ensure_ascii=False) + "\n")
    print(f"{len(rows)} cases written to {replay.EXPECTED}")
