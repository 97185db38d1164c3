"""A static trace of one parameter through dpcalc's code: which modules it passes through, in the order the code
is written, and how often it comes back to a module it had left.

    python tests/trace_params.py dpcalc/commands/sgd/epsilon.py:sgd_epsilon:params

Nothing is run: the modules are parsed (``ast``).  From the function named, the trace follows every call that
is handed the parameter, or a name computed from it (an assignment whose right side mentions a traced name
traces its targets), into the function called, where the parameters that receive it are traced in turn:

* a call is resolved when its callee is a function of the same module, a name imported from a dpcalc module,
  ``module.function`` of an imported dpcalc module, or ``self.method``; a method called on another object
  (``sampler.covers``) is left unresolved, as a type checker would need to resolve it;
* nested functions and lambdas are walked where they stand (their code runs from there, or is handed on as
  a callback); a function already walked with the same traced parameters is entered (counted) but not walked
  again, so recursion ends.

The trace is a sequence of the modules it is in: at each function entered and at each call made from a module.
A module is *entered* when one of its functions is called from another module (:func:`entries`); a *stay* is a
run of the sequence in one module, so a module that calls out and is returned to stays again (:func:`visits`).
``tests/test_question_trace.py`` holds every ``dpcalc/commands/`` module to at most three entries on
sgd-epsilon's trace.
"""

from __future__ import annotations

import ast
import sys
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = "dpcalc"


def _module_of(path: Path, root: Path = ROOT) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


@dataclass
class Module:
    name: str
    functions: dict[str, ast.AST] = field(default_factory=dict)  # "f" or "Class.method"
    names: dict[str, tuple[str, str]] = field(default_factory=dict)  # local name -> (module, name)
    modules: dict[str, str] = field(default_factory=dict)  # local alias -> module


def _resolve_from(module: str, node: ast.ImportFrom, is_package: bool) -> str:
    if not node.level:
        return node.module or ""
    base = module.split(".") if is_package else module.split(".")[:-1]
    base = base[: len(base) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def load(root: Path = ROOT) -> dict[str, Module]:
    """Every module of the package, its functions and the dpcalc names it imports."""
    modules: dict[str, Module] = {}
    paths = sorted((root / PACKAGE).rglob("*.py"))
    known = {_module_of(p, root) for p in paths}
    trees = {path: ast.parse(path.read_text(), str(path)) for path in paths}
    # ``name = lazy_module("dpcalc.x.y")`` at a module's top binds name to that module (dpcalc.lazy)
    lazy: dict[tuple[str, str], str] = {}
    for path, tree in trees.items():
        for node in tree.body:
            if (
                isinstance(node, ast.Assign)
                and len(node.targets) == 1
                and isinstance(node.targets[0], ast.Name)
                and isinstance(node.value, ast.Call)
                and getattr(node.value.func, "id", None) == "lazy_module"
                and node.value.args
                and isinstance(node.value.args[0], ast.Constant)
                and node.value.args[0].value in known
            ):
                lazy[(_module_of(path, root), node.targets[0].id)] = node.value.args[0].value
    for path in paths:
        name = _module_of(path, root)
        tree = trees[path]
        mod = Module(name)
        for (owner, local), target in lazy.items():
            if owner == name:
                mod.modules[local] = target
        for node in tree.body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                mod.functions[node.name] = node
            elif isinstance(node, ast.ClassDef):
                for item in node.body:
                    if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)):
                        mod.functions[f"{node.name}.{item.name}"] = item
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom):
                source = _resolve_from(name, node, path.name == "__init__.py")
                if not source.startswith(PACKAGE):
                    continue
                for alias in node.names:
                    local = alias.asname or alias.name
                    if f"{source}.{alias.name}" in known:
                        mod.modules[local] = f"{source}.{alias.name}"
                    elif (source, alias.name) in lazy:
                        mod.modules[local] = lazy[(source, alias.name)]
                    else:
                        mod.names[local] = (source, alias.name)
            elif isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.name.startswith(PACKAGE) and alias.asname:
                        mod.modules[alias.asname] = alias.name
        modules[name] = mod
    return modules


def _mentions(node: ast.AST, traced: set[str]) -> bool:
    return any(isinstance(n, ast.Name) and n.id in traced for n in ast.walk(node))


def _targets(node: ast.AST) -> list[str]:
    return [n.id for n in ast.walk(node) if isinstance(n, ast.Name)]


class Tracer:
    """Walks the code from one function's parameter (see the module's docstring)."""

    def __init__(self, modules: dict[str, Module]):
        self.modules = modules
        self.events: list[tuple[str, str]] = []  # (module, function or "call")
        self.walked: set[tuple[str, str, frozenset]] = set()

    def _in(self, module: str, what: str) -> None:
        self.events.append((module, what))

    def _callee(self, module: Module, cls: str | None, func: ast.AST) -> tuple[str, str] | None:
        if isinstance(func, ast.Name):
            if func.id in module.functions:
                return module.name, func.id
            if func.id in module.names:
                source, name = module.names[func.id]
                return self._defined(source, name)
        elif isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name):
            base = func.value.id
            if base in module.modules:
                return self._defined(module.modules[base], func.attr)
            if base == "self" and cls and f"{cls}.{func.attr}" in module.functions:
                return module.name, f"{cls}.{func.attr}"
        return None

    def _defined(self, source: str, name: str, depth: int = 0) -> tuple[str, str] | None:
        """Where ``source``'s ``name`` is defined (following re-exports)."""
        mod = self.modules.get(source)
        if mod is None or depth > 5:
            return None
        if name in mod.functions:
            return source, name
        if name in mod.names:
            return self._defined(*mod.names[name], depth + 1)
        return None

    def walk(self, module: str, function: str, params: set[str]) -> None:
        self._in(module, function)
        key = (module, function, frozenset(params))
        if key in self.walked:
            return
        self.walked.add(key)
        mod = self.modules[module]
        node = mod.functions[function]
        cls = function.split(".")[0] if "." in function else None
        traced = set(params)
        for stmt in node.body:
            self._statement(mod, cls, stmt, traced)

    def _statement(self, mod: Module, cls: str | None, node: ast.AST, traced: set[str]) -> None:
        """Walk ``node``'s children in the order written: calls first where they stand, then the names an
        assignment or a loop binds from traced values."""
        if isinstance(node, ast.Call):
            for child in ast.iter_child_nodes(node):
                self._statement(mod, cls, child, traced)
            self._call(mod, cls, node, traced)
            return
        if isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign, ast.NamedExpr)):
            value = node.value
            if value is not None:
                self._statement(mod, cls, value, traced)
                if _mentions(value, traced):
                    targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                    for t in targets:
                        traced.update(_targets(t))
            return
        if isinstance(node, (ast.For, ast.comprehension)):
            self._statement(mod, cls, node.iter, traced)
            if _mentions(node.iter, traced):
                traced.update(_targets(node.target))
            rest = node.body + node.orelse if isinstance(node, ast.For) else node.ifs
            for child in rest:
                self._statement(mod, cls, child, traced)
            return
        if isinstance(node, (ast.ListComp, ast.SetComp, ast.GeneratorExp, ast.DictComp)):
            for gen in node.generators:
                self._statement(mod, cls, gen, traced)
            for child in ast.iter_child_nodes(node):
                if not isinstance(child, ast.comprehension):
                    self._statement(mod, cls, child, traced)
            return
        if isinstance(node, ast.withitem) and node.optional_vars is not None:
            self._statement(mod, cls, node.context_expr, traced)
            if _mentions(node.context_expr, traced):
                traced.update(_targets(node.optional_vars))
            return
        for child in ast.iter_child_nodes(node):
            self._statement(mod, cls, child, traced)

    def _call(self, mod: Module, cls: str | None, call: ast.Call, traced: set[str]) -> None:
        given = [(i, a) for i, a in enumerate(call.args) if _mentions(a, traced)]
        named = [(k.arg, k.value) for k in call.keywords if _mentions(k.value, traced)]
        if not given and not named:
            return
        target = self._callee(mod, cls, call.func)
        if target is None:
            return
        module, function = target
        node = self.modules[module].functions[function]
        args = node.args
        positional = [a.arg for a in args.posonlyargs + args.args]
        if "." in function and positional and positional[0] in ("self", "cls"):
            positional = positional[1:]
        params = set()
        for i, a in given:
            if isinstance(a, ast.Starred):
                params.update(positional[i:])
            elif i < len(positional):
                params.add(positional[i])
            elif args.vararg is not None:
                params.add(args.vararg.arg)
        for name, _ in named:
            if name is None:  # **kwargs
                params.update(positional + [a.arg for a in args.kwonlyargs])
            elif name in positional or name in {a.arg for a in args.kwonlyargs}:
                params.add(name)
            elif args.kwarg is not None:
                params.add(args.kwarg.arg)
        if not params:
            return
        self._in(mod.name, "call")  # the call is made from here (back in this module after the last callee)
        self.walk(module, function, params)


def trace(start: str, root: Path = ROOT) -> list[tuple[str, str]]:
    """The events of the trace from ``FILE:FUNCTION:PARAM``: (module, function entered, or "call")."""
    path, function, param = start.split(":")
    modules = load(root)
    tracer = Tracer(modules)
    tracer.walk(_module_of(root / path, root), function, {param})
    return tracer.events


def visits(events: list[tuple[str, str]]) -> Counter:
    """Module -> how many times the trace is in it (runs of consecutive events in that module)."""
    out: Counter = Counter()
    last = None
    for module, _ in events:
        if module != last:
            out[module] += 1
        last = module
    return out


def entries(events: list[tuple[str, str]], prefix: str = "") -> Counter:
    """Module (under ``prefix``) -> how many times one of its functions is called from another module."""
    out: Counter = Counter()
    last = None
    for module, what in events:
        if what != "call" and module != last and module.startswith(prefix):
            out[module] += 1
        last = module
    return out


def main(argv: list[str]) -> int:
    if len(argv) != 1 or argv[0].count(":") != 2:
        print("usage: python tests/trace_params.py FILE:FUNCTION:PARAM", file=sys.stderr)
        return 2
    events = trace(argv[0])
    route, last = [], None
    for module, what in events:
        if module != last:
            route.append([module, []])
        if what != "call" and what not in route[-1][1]:
            route[-1][1].append(what)
        last = module
    counts: Counter = Counter()
    for module, functions in route:
        counts[module] += 1
        print(f"{counts[module]:>3}  {module}: {', '.join(functions) or '(calls on)'}")
    v = visits(events)
    print(f"\n{len(route)} stays in {len(v)} modules; {len(route) - len(v)} returns to a module left before")
    print("entries of the commands' modules (a function called from another module):")
    for module, n in entries(events, f"{PACKAGE}.commands").most_common():
        print(f"{n:>3}  {module}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
