"""Regenerate tests/corpus/expected.jsonl from the current code (read the diff before committing).

python tests/corpus/regen.py            every case
python tests/corpus/regen.py TEXT ...   only the cases containing one of the TEXTs (the rest kept)
"""

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import replay  # noqa: E402

if __name__ == "__main__":
    only = sys.argv[1:]
    old = replay.load_expected() if only and replay.EXPECTED.exists() else {}
    rows = []
    for line in replay.cases():
        if only and line in old and not any(t in line for t in only):
            rows.append(old[line])
        else:
            rows.append(replay.run_case(line))
    with replay.EXPECTED.open("w", encoding="utf-8") as fh:
        for r in rows:
            fh.write(json.dumps(r, ensure_ascii=False) + "\n")
    print(f"{len(rows)} cases written to {replay.EXPECTED}")
