"""A module's dependencies stand at its top.  An import inside a function is a boundary kept on purpose (the
command line's lazy commands, rich for tables, matplotlib for --plot, scipy kept out of single queries), and
says why on its line or the line above (``# lazy: ...``); there are few of them.  And the single queries
that start fast stay so: no scipy, no rich."""

import ast
import io
import subprocess
import sys
import tokenize
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "dpcalc"

#: Paths (relative to the repository, with "/") whose function-local imports are not checked (none).
PENDING: tuple[str, ...] = ()
#: The most function-local imports the package may hold (each a commented boundary).
MAX_LAZY = 40
MARK = "# lazy:"


def _modules():
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(ROOT).as_posix()
        if not rel.startswith(PENDING):
            yield rel, path.read_text(encoding="utf-8")


def _comments(text: str) -> dict[int, list[str]]:
    """Line number -> the comments on that line."""
    out: dict[int, list[str]] = {}
    for tok in tokenize.generate_tokens(io.StringIO(text).readline):
        if tok.type == tokenize.COMMENT:
            out.setdefault(tok.start[0], []).append(tok.string)
    return out


def _local_imports(text: str):
    """The import statements inside a function (nested functions included), each once."""
    seen = set()
    for fn in ast.walk(ast.parse(text)):
        if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
            for node in ast.walk(fn):
                if isinstance(node, (ast.Import, ast.ImportFrom)) and id(node) not in seen:
                    seen.add(id(node))
                    yield node


def _lazy_imports():
    """(path, line, statement, commented) for every function-local import outside :data:`PENDING`."""
    rows = []
    for rel, text in _modules():
        comments = _comments(text)
        lines = text.splitlines()
        for node in _local_imports(text):
            on_line = any(c.startswith(MARK) for c in comments.get(node.lineno, []))
            above = lines[node.lineno - 2].strip() if node.lineno >= 2 else ""
            rows.append((rel, node.lineno, ast.unparse(node), on_line or above.startswith(MARK)))
    return rows


def test_every_import_inside_a_function_is_a_commented_boundary():
    bare = [f"{rel}:{line}: {stmt}" for rel, line, stmt, commented in _lazy_imports() if not commented]
    assert not bare, (
        "imports inside functions without a '# lazy: why' comment on their line or the line above "
        "(move them to the module's top, or say why they wait):\n" + "\n".join(bare)
    )


def test_lazy_imports_are_few():
    rows = _lazy_imports()
    listing = "\n".join(f"{rel}:{line}: {stmt}" for rel, line, stmt, _ in rows)
    assert len(rows) <= MAX_LAZY, f"{len(rows)} function-local imports, more than {MAX_LAZY}:\n{listing}"


def test_the_checks_see_a_bare_local_import():
    text = "def f():\n    import json\n\n\ndef g():\n    # lazy: a reason\n    import csv\n"
    nodes = list(_local_imports(text))
    assert [n.lineno for n in nodes] == [2, 7]
    comments = _comments(text)
    assert not comments.get(2) and comments[6] == ["# lazy: a reason"]


def test_the_choices_the_command_line_offers_are_the_commands_own():
    """The options declare their choices from dpcalc.commands.choices (pure Python, read at --help); the
    commands implement exactly those."""
    from dpcalc.commands import choices
    from dpcalc.commands.compose import methods as compose_methods
    from dpcalc.engine.conversion import methods as conversions
    from dpcalc.engine.dpsgd import accounting

    assert tuple(compose_methods.METHODS) == choices.COMPOSE_METHODS
    assert choices.CONVERSIONS == tuple(conversions.METHODS)
    assert set(choices.SGD_ACCOUNTANTS) == set(accounting.ACCOUNTANTS) | {"pld", "mc", "rdp-group"}


#: Single queries that answer in a fraction of a second: they import neither scipy nor rich (CSV output:
#: stdout is a pipe).  ``convert --rdp 2:1`` is refused while its options are read (a range must
#: increase); ``convert --alpha 2 --rdp 1`` computes.
QUICK = [
    ["sgd-epsilon", "--sigma", "1.1", "--sample-rate", "0.004", "--steps", "1000", "--delta", "1e-5"],
    ["sgd-epsilon", "--sigma", "1.1", "--sample-rate", "0.004", "--steps", "1000", "--delta", "1e-5"]
    + ["--accountant", "pld"],
    ["convert", "--rdp", "2:1", "--delta", "1e-5"],
    ["convert", "--alpha", "2", "--rdp", "1", "--delta", "1e-5"],
    # a noise calibration and a sweep of a few pairs: within the light path's budget (dpcalc.engine._special)
    ["sgd-epsilon", "--target-epsilon", "3", "--sample-rate", "0.004", "--steps", "1000", "--delta", "1e-5"],
    [
        "sgd-epsilon",
        "--sigma",
        "1.1",
        "--sample-rate",
        "0.01:0.05:0.01",
        "--steps",
        "1000",
        "--delta",
        "1e-5",
    ],
]

PROBE = (
    "import sys\n"
    "sys.argv = ['dpcalc'] + sys.argv[1:]\n"
    "try:\n"
    "    from dpcalc.cli import main\n"
    "    main()\n"
    "except SystemExit:\n"
    "    pass\n"
    "heavy = sorted(m for m in ('scipy', 'rich', 'matplotlib') if m in sys.modules)\n"
    "sys.stderr.write('HEAVY=' + ','.join(heavy) + '\\n')\n"
)


@pytest.mark.parametrize("args", QUICK, ids=[" ".join(a) for a in QUICK])
def test_a_single_query_imports_no_scipy_and_no_rich(args):
    proc = subprocess.run([sys.executable, "-c", PROBE, *args], capture_output=True, text=True, timeout=120)
    heavy = [ln for ln in proc.stderr.splitlines() if ln.startswith("HEAVY=")]
    assert heavy, proc.stderr
    assert heavy[-1] == "HEAVY=", f"{' '.join(args)} imported {heavy[-1][6:]}"
    if "2:1" not in args:
        assert proc.stdout.startswith("method,"), proc.stdout + proc.stderr


#: What each single query must not import (issue 44's list): beyond scipy, rich and matplotlib (above),
#: numpy.ma (np.unique loads it: ``dpcalc.engine._numerics.sorted_unique`` instead), sqlite3 (a sweep that
#: spills), dask, numpy.polynomial (the engine's Gauss–Legendre rules are stored), the person-level forms of
#: --group-size (dpcalc.input.group, .spec) and, where the question has no PLD row or no DP-SGD, the PLD engine
#: and the DP-SGD accountants.
NOT_FOR_ANY = (
    "scipy",
    "rich",
    "matplotlib",
    "dask",
    "numpy.ma",
    "numpy.polynomial",
    "sqlite3",
    "dpcalc.input.group",
    "dpcalc.input.spec",
)
#: The rows of other methods (Monte Carlo, the last-iterate heuristic, calibration, tuning runs), the person-level
#: samplers, the allocation samplers' round math and the drawing of --plot: a query that computes none of them
#: loads none of them.
OTHER_ROWS = (
    "dpcalc.engine.mechanisms.random_allocation",
    "dpcalc.commands.sgd.mc",
    "dpcalc.engine.dpsgd.balls_in_bins_mc",
    "dpcalc.engine.dpsgd.balls_in_bins_samples",
    "dpcalc.engine.dpsgd.last_iterate",
    "dpcalc.engine.dpsgd.pld_calibration",
    "dpcalc.engine.composition.tuning",
    "dpcalc.engine.samplers.person",
    "dpcalc.engine.mechanisms.mixture_gaussian",
    "dpcalc.plot.draw",
)
#: The standard library's exact arithmetic and JSON, and the table's layout: only ranges, group sizes,
#: --noise-std, tables and -f json/jsonl need them (1–2 ms each at start-up)
NOT_FOR_CSV = ("decimal", "fractions", "json", "dpcalc.render.table")
IMPORT_LISTS = {
    "rdp query": (
        QUICK[0],
        NOT_FOR_ANY
        + OTHER_ROWS
        + NOT_FOR_CSV
        + (
            "dpcalc.engine.dpsgd.pld_accounting",
            "dpcalc.engine.pld.grid",
            "dpcalc.engine.mechanisms.loss_models",
        ),
    ),
    "pld query": (QUICK[1][:-2] + ["--method", "pld"], NOT_FOR_ANY + OTHER_ROWS + NOT_FOR_CSV),
    "convert": (QUICK[3], NOT_FOR_ANY + ("dpcalc.engine.pld", "dpcalc.engine.dpsgd")),
}
LIST_PROBE = PROBE.replace(
    "heavy = sorted(m for m in ('scipy', 'rich', 'matplotlib') if m in sys.modules)",
    "heavy = sorted(sys.modules)",
)


@pytest.mark.parametrize("name", list(IMPORT_LISTS))
def test_what_a_single_query_may_import(name):
    args, forbidden = IMPORT_LISTS[name]
    proc = subprocess.run(
        [sys.executable, "-c", LIST_PROBE, *args], capture_output=True, text=True, timeout=120
    )
    assert proc.stdout.startswith("method,"), proc.stdout + proc.stderr
    loaded = [ln for ln in proc.stderr.splitlines() if ln.startswith("HEAVY=")][-1][6:].split(",")
    bad = sorted(m for m in loaded if any(m == f or m.startswith(f + ".") for f in forbidden))
    assert not bad, f"{name} ({' '.join(args)}) imported {', '.join(bad)}"
