"""The house's floors (docs/architecture.md): a package imports only from floors below its own, no module
imports itself back through others, and no module grows past 500 lines."""

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "dpcalc"

#: The floor of each top-level part of dpcalc (higher floors use lower ones; docs/architecture.md).
FLOORS = {
    "__main__": 9,
    "devtools": 9,
    "readme": 9,
    "cli": 8,
    "commands": 7,
    "api": 6,
    "plot": 6,
    "ledger": 5,
    "input": 4,
    "engine": 3,
    "execution": 3,
    "render": 3,
    "result": 2,
    "wrap": 1,
    "interrupt": 1,
    "exitcodes": 1,
    "errors": 0,
    "lazy": 0,
    "__init__": 0,
}
#: The most lines of one module.
MAX_LINES = 500


def _name(path: Path) -> str:
    rel = path.relative_to(ROOT).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _imports(path: Path, top_only: bool):
    """The dpcalc modules ``path`` imports (every import, or those at the module's top level only)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    nodes = tree.body if top_only else list(ast.walk(tree))
    for node in nodes:
        if isinstance(node, ast.Import):
            yield from (a.name for a in node.names if a.name.startswith("dpcalc"))
        elif (
            isinstance(node, ast.ImportFrom) and node.level == 0 and (node.module or "").startswith("dpcalc")
        ):
            yield node.module
            for a in node.names:  # ``from dpcalc.x import module``
                candidate = f"{node.module}.{a.name}"
                if (ROOT / (candidate.replace(".", "/") + ".py")).exists() or (
                    ROOT / candidate.replace(".", "/") / "__init__.py"
                ).exists():
                    yield candidate


def _floor(module: str) -> tuple[str, int]:
    part = module.split(".")[1] if "." in module else "__init__"
    return part, FLOORS[part]


def _modules():
    return {_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def test_every_part_has_a_floor():
    assert {_floor(m)[0] for m in _modules()} <= set(FLOORS)


def test_no_arrow_runs_up_a_floor():
    up = []
    for module, path in _modules().items():
        part, floor = _floor(module)
        for target in _imports(path, top_only=False):
            to_part, to_floor = _floor(target)
            if to_part != part and to_floor >= floor:
                up.append(f"{module} (floor {floor}) imports {target} (floor {to_floor})")
    assert not up, "\n".join(up)


def test_no_import_cycle():
    modules = _modules()
    graph = {
        m: {t for t in _imports(p, top_only=True) if t in modules and t != m} for m, p in modules.items()
    }
    # a package's __init__ is imported with each of its modules: a module importing its own package is no cycle
    state: dict[str, int] = {}
    cycles = []

    def visit(m, stack):
        state[m] = 1
        stack.append(m)
        for t in sorted(graph[m]):
            if state.get(t) == 1 and not m.startswith(t + "."):
                cycles.append(" -> ".join(stack[stack.index(t) :] + [t]))
            elif t not in state:
                visit(t, stack)
        stack.pop()
        state[m] = 2

    for m in sorted(graph):
        if m not in state:
            visit(m, [])
    assert not cycles, "\n".join(cycles)


def test_no_module_is_over_500_lines():
    long = {
        m: n
        for m, p in _modules().items()
        if (n := len(p.read_text(encoding="utf-8").splitlines())) > MAX_LINES
    }
    assert not long, long
