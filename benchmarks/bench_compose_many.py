"""Benchmark of ``dpcalc compose @FILE`` with many specs: the whole process, default flags (a script, not a test).

    python benchmarks/bench_compose_many.py [--repeat 3] [--specs 10000]

Rows (each a spec file generated here, δ = 1e-5):

* ``N distinct gaussians``: ``gaussian:sigma=1+i/N`` for i < N, default method (``best``): the composition is
  one Gaussian, answered by the exact method alone (no PLD, no RDP), and ``--method all``, where the PLD
  row composes the Gaussians merged into one release (docs/math.md §2.6);
* ``N/2 gaussians + N/2 sgm``: half of them ``subsampled-gaussian`` specs of distinct sample rates, which
  no exact rewrite merges: PLD and RDP refuse up front (their limits: distinct mechanisms, distinct
  subsampled curves), so the default ends with one line, exit 2, and ``--method all`` prints rows that
  say why (one run each, through a small wrapper counted in the memory);
* ``256 sgm``: distinct subsampled Gaussians at the RDP limit, answered by rdp.

Wall time (min / median / max of ``--repeat`` runs after an untimed warm-up) and the peak memory of the
process tree (:mod:`_measure`).  Before the merging and the work limits (issue 27), 1,000 distinct
Gaussians took about 13 s and 1.5 GB, 10,000 passed 3 GB.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _measure import MB, ensure_bytecode, measure, run  # noqa: E402

DELTA = 1e-5


def _dpcalc():
    script = os.path.join(os.path.dirname(sys.executable), "dpcalc")
    return [script] if os.path.exists(script) else [sys.executable, "-m", "dpcalc"]


def _files(tmp: str, n: int) -> dict[str, str]:
    specs = {
        f"{n} distinct gaussians": [f"gaussian:sigma={1 + i / n!r}" for i in range(n)],
        f"{n // 2} gaussians + {n // 2} sgm": [f"gaussian:sigma={1 + i / n!r}" for i in range(n // 2)]
        + [f"subsampled-gaussian:q={0.001 + i * 1e-8:.8f},sigma=1" for i in range(n // 2)],
        "256 sgm": [f"subsampled-gaussian:q={0.001 + i * 1e-6:.6f},sigma=1" for i in range(256)],
    }
    out = {}
    for k, (label, lines) in enumerate(specs.items()):
        path = os.path.join(tmp, f"specs{k}.txt")
        with open(path, "w") as f:
            f.write("\n".join(lines) + "\n")
        out[label] = path
    return out


def _line(label, runs, answer):
    return (
        f"  {label:44s} {runs.min:7.3f} {runs.median:7.3f} {runs.max:7.3f} s  "
        f"{runs.tree_rss / MB:6.0f} MB  {answer}"
    )


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--specs", type=int, default=10000)
    args = ap.parse_args()
    ensure_bytecode()
    print(f"compose @FILE --delta {DELTA} (whole process, default flags unless shown)")
    print(f"  {'':44s} {'min':>7s} {'median':>7s} {'max':>7s}    {'peak':>6s}     answer")
    with tempfile.TemporaryDirectory() as tmp:
        for label, path in _files(tmp, args.specs).items():
            for extra in ([], ["--method", "all"]):
                cmd = [*_dpcalc(), "compose", f"@{path}", "--delta", str(DELTA), *extra]
                if "sgm" in label and "gaussians" in label:  # exit 2 (default) or rows that say why
                    first = run([sys.executable, "-c", _REFUSED, *cmd], stdout="pipe", keep=True)
                    rows = first.stdout.strip().splitlines()[1:3] or [first.stderr.strip()]
                    answer = "; ".join(r[:60] for r in rows)
                    print(
                        f"  {label + ' ' + ' '.join(extra):44s} {first.wall:7.3f} s (one run)       "
                        f"{first.tree_rss / MB:6.0f} MB  {answer}"
                    )
                    continue
                runs, first = measure(cmd, args.repeat, warmup_kw=dict(stdout="pipe", keep=True))
                rows = first.stdout.strip().splitlines()[1:] if first and first.stdout else ["?"]
                answer = "; ".join(",".join(r.split(",")[:3]) for r in rows[:3])
                print(_line(label + (" " + " ".join(extra) if extra else ""), runs, answer))
    return 0


#: Runs a command that may exit 2 (a refusal) and passes its output on (``_measure.run`` wants exit 0).
_REFUSED = (
    "import subprocess, sys; p = subprocess.run(sys.argv[1:], capture_output=True, text=True); "
    "sys.stdout.write(p.stdout); sys.stderr.write(p.stderr); sys.exit(0 if p.returncode in (0, 2) else 1)"
)


if __name__ == "__main__":
    sys.exit(main())
