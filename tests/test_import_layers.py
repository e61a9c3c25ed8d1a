"""Layering of the package's imports, read from the source with `ast` (nothing is imported).

Every ``.py`` file of the package is read under its installed name (``accy/`` → ``accy``,
``dialects/`` → ``accy.dialects``, ``passes/`` → ``accy.passes``; pyproject.toml's
``wheel.packages``). Every ``import`` statement counts, at module level or inside a
function, class or ``try``, except those under ``if TYPE_CHECKING:`` (never executed;
their ``else:`` branch counts). Relative imports are resolved, and ``from P import n``
is an import of the submodule ``P.n`` where ``P.n`` is a module of the package.
Imports by string (``importlib.import_module``, ``__import__``) are not statements and are
not followed by the graph (`passes/registry.py`'s pass factories, a `Target`'s lowering and
module, `passes/arena/compiled.py`); `test_only_the_bridge_imports_the_bindings` does read
the literal names given to them, since the MLIR bindings are only ever loaded
that way.

What an import executes is modelled as follows:

* ``import a.b.c`` / ``from a.b.c import x`` runs ``a.b.c`` and, before it, the
  ``__init__`` of every package above it: an edge to each of them.
* Except the packages that contain the importer: they are already initialised (or being
  initialised) when the importer runs, so importing through them executes nothing new.
  The top package ``accy`` contains every module, so no submodule has an edge to
  ``accy/__init__.py``; that ``__init__`` imports its public names lazily (module
  ``__getattr__``; its eager imports are under ``TYPE_CHECKING``), so it would add no
  cycle anyway, while a modelled edge to it from every submodule would make a trivial
  cycle of any import from it. An explicit ``from P import name`` of a *name* (not a
  submodule) of an enclosing package ``P`` other than ``accy`` does count: it needs
  ``P``'s ``__init__`` to have defined ``name``, which a cycle can prevent.
* ``from accy import name`` imports the submodule ``accy.name`` where one exists (``from
  accy import mlir_bridge``), else the module ``accy.__init__``'s ``_EXPORTS`` table loads
  the name from (``from accy import compile`` runs ``accy.compiler``).
"""

from __future__ import annotations

import ast
import itertools
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SOURCES = {"accy": "accy", "dialects": "accy.dialects", "passes": "accy.passes"}
"""Folder of the repository → the package it installs as."""

BINDINGS = ("mlir", "torch_mlir", "numba_cuda_mlir")
"""Top-level packages of the upstream MLIR Python bindings: an upstream ``mlir``, or
those bundled by torch-mlir and numba-cuda-mlir (accy/mlir_bridge/bindings.py)."""

DYNAMIC_IMPORTERS = {"import_module", "__import__", "find_spec"}


@dataclass(frozen=True)
class Import:
    importer: str
    imported: str  # an absolute dotted name (a package module or an outside package)
    line: int
    path: Path


def _module_files() -> dict[str, Path]:
    files: dict[str, Path] = {}
    for folder, package in SOURCES.items():
        for path in sorted((ROOT / folder).rglob("*.py")):
            rel = path.relative_to(ROOT / folder).with_suffix("")
            parts = list(rel.parts)
            if parts[-1] == "__init__":
                parts.pop()
            files[".".join([package, *parts])] = path
    return files


MODULES = _module_files()
PACKAGES = {m for m, p in MODULES.items() if p.name == "__init__.py"}


def _top_level_exports() -> dict[str, str]:
    """accy/__init__.py's ``_EXPORTS``: public name → the module that defines it."""
    tree = ast.parse(MODULES["accy"].read_text())
    for node in tree.body:
        targets = node.targets if isinstance(node, ast.Assign) else []
        if isinstance(node, ast.AnnAssign):
            targets = [node.target]
        if any(isinstance(t, ast.Name) and t.id == "_EXPORTS" for t in targets):
            assert node.value is not None
            return ast.literal_eval(node.value)
    return {}


EXPORTS = _top_level_exports()


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _executed_nodes(tree: ast.AST) -> Iterator[ast.AST]:
    """Every node of `tree` but those under ``if TYPE_CHECKING:`` (its ``else`` counts)."""
    stack = [tree]
    while stack:
        node = stack.pop()
        yield node
        if isinstance(node, ast.If) and _is_type_checking(node.test):
            stack.extend(node.orelse)
            continue
        stack.extend(ast.iter_child_nodes(node))


def _resolve_relative(module: str, level: int, name: str | None) -> str:
    base = module.split(".")
    if module not in PACKAGES:
        base = base[:-1]
    if level > 1:
        base = base[: -(level - 1)]
    return ".".join(base + ([name] if name else []))


def _raw_imports(module: str, path: Path) -> Iterator[tuple[str, list[str], int]]:
    """(imported module, names imported from it, line) of each executed import statement."""
    tree = ast.parse(path.read_text(), filename=str(path))
    for node in _executed_nodes(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name, [], node.lineno
        elif isinstance(node, ast.ImportFrom):
            source = (
                _resolve_relative(module, node.level, node.module)
                if node.level
                else node.module or ""
            )
            yield source, [a.name for a in node.names if a.name != "*"], node.lineno


def _dynamic_imports(path: Path) -> Iterator[tuple[str, int]]:
    """Literal names given to ``importlib.import_module``, ``__import__`` or ``find_spec``."""
    tree = ast.parse(path.read_text(), filename=str(path))
    for node in _executed_nodes(tree):
        if not isinstance(node, ast.Call) or not node.args:
            continue
        func = node.func
        name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)
        arg = node.args[0]
        if (
            name in DYNAMIC_IMPORTERS
            and isinstance(arg, ast.Constant)
            and isinstance(arg.value, str)
        ):
            yield arg.value, node.lineno


def _known_prefix(name: str) -> str | None:
    """The longest prefix of `name` that is a module of the package."""
    parts = name.split(".")
    while parts:
        candidate = ".".join(parts)
        if candidate in MODULES:
            return candidate
        parts.pop()
    return None


def _ancestors(module: str) -> list[str]:
    parts = module.split(".")
    return [".".join(parts[:i]) for i in range(1, len(parts))]


def _executed_by(importer: str, source: str, names: list[str]) -> set[str]:
    """Modules of the package whose code an import statement of `importer` runs."""
    if source.split(".")[0] != "accy":
        return set()
    enclosing = {*_ancestors(importer), importer}  # initialised or being initialised
    targets: set[str] = set()
    target = _known_prefix(source)
    if target is not None:
        # The package modules above and at `source`; packages enclosing the importer
        # are initialised already (the module docstring).
        targets.update(m for m in [*_ancestors(target), target] if m not in enclosing)
    for name in names:
        submodule = f"{source}.{name}"
        if submodule in MODULES:
            targets.add(submodule)
        elif source == "accy" and name in EXPORTS:
            targets.add(EXPORTS[name])
        elif source == target:
            # A name defined by `source` itself, enclosing the importer or not.
            targets.add(source)
    # `accy` is reached only through its lazy `__getattr__`, resolved above.
    targets.discard("accy")
    return targets


def _all_imports() -> list[Import]:
    found = []
    for module, path in MODULES.items():
        for source, names, line in _raw_imports(module, path):
            targets = _executed_by(module, source, names)
            if source.split(".")[0] != "accy":
                targets = {source}
            found.extend(Import(module, t, line, path) for t in sorted(targets))
    return found


IMPORTS = _all_imports()


def _graph() -> dict[str, set[str]]:
    graph: dict[str, set[str]] = {m: set() for m in MODULES}
    for imp in IMPORTS:
        if imp.imported in MODULES:
            graph[imp.importer].add(imp.imported)
    return graph


def _strongly_connected(graph: dict[str, set[str]]) -> list[list[str]]:
    """Tarjan's components, iteratively (no recursion limit)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    components: list[list[str]] = []
    counter = 0
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            advanced = False
            for child in children:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                    advanced = True
                    break
                if child in on_stack:
                    low[node] = min(low[node], index[child])
            if advanced:
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                components.append(sorted(component))
    return components


def _cycle_in(component: list[str], graph: dict[str, set[str]]) -> list[str]:
    """One cycle through the component's first module, as a chain that returns to it."""
    members = set(component)
    start = component[0]
    # Breadth-first search from start's successors back to start, inside the component.
    parents: dict[str, str] = {}
    frontier = [start]
    seen = {start}
    while frontier:
        following = []
        for node in frontier:
            for child in sorted(graph[node] & members):
                if child == start:
                    chain = [start]
                    while node != start:
                        chain.append(node)
                        node = parents[node]
                    return [start, *reversed(chain[1:]), start]
                if child not in seen:
                    seen.add(child)
                    parents[child] = node
                    following.append(child)
        frontier = following
    raise AssertionError(f"no cycle found in component {component}")


def _where(importer: str, imported: str) -> str:
    lines = sorted(
        {
            f"{imp.path.relative_to(ROOT)}:{imp.line}"
            for imp in IMPORTS
            if imp.importer == importer and imp.imported == imported
        }
    )
    return ", ".join(lines)


def import_cycles() -> list[list[str]]:
    graph = _graph()
    cycles = []
    for component in _strongly_connected(graph):
        if len(component) > 1 or component[0] in graph[component[0]]:
            cycles.append(_cycle_in(component, graph))
    return cycles


def _describe_cycle(cycle: list[str]) -> str:
    steps = [f"  {a} -> {b}  ({_where(a, b)})" for a, b in itertools.pairwise(cycle)]
    return " -> ".join(cycle) + "\n" + "\n".join(steps)


def test_the_package_is_read():
    assert "accy.passes.fusion" in MODULES
    assert "accy.dialects.accy" in MODULES
    assert "accy.mlir_bridge" in PACKAGES
    assert any(i.imported == "accy.dialects.accy" for i in IMPORTS)
    # A function-level import counts; one under TYPE_CHECKING does not.
    assert "accy.aot" not in {i.imported for i in IMPORTS if i.importer == "accy"}


def test_no_import_cycles():
    """No strongly connected component of more than one module, nor a self-import."""
    cycles = import_cycles()
    for cycle in cycles:
        print(_describe_cycle(cycle))
    assert not cycles, "import cycles:\n" + "\n".join(_describe_cycle(c) for c in cycles)


def _under(module: str, package: str) -> bool:
    return module == package or module.startswith(package + ".")


def test_planning_does_not_import_lowering():
    """No module of `accy.passes` outside `accy.passes.lower` imports lowering or the bridge."""
    violations = [
        f"{imp.importer} imports {imp.imported} ({imp.path.relative_to(ROOT)}:{imp.line})"
        for imp in IMPORTS
        if _under(imp.importer, "accy.passes")
        and not _under(imp.importer, "accy.passes.lower")
        and (_under(imp.imported, "accy.passes.lower") or _under(imp.imported, "accy.mlir_bridge"))
    ]
    for v in violations:
        print(v)
    assert not violations, "planning imports lowering:\n" + "\n".join(violations)


def test_dialects_import_no_pass():
    """The dialects (ops, their verifiers, the planned form's rules) import nothing from
    `accy.passes`: parsing and verifying a program needs no planner."""
    violations = [
        f"{imp.importer} imports {imp.imported} ({imp.path.relative_to(ROOT)}:{imp.line})"
        for imp in IMPORTS
        if _under(imp.importer, "accy.dialects") and _under(imp.imported, "accy.passes")
    ]
    assert not violations, "dialects import passes:\n" + "\n".join(violations)


def test_only_the_bridge_imports_the_bindings():
    """Only `accy.mlir_bridge` imports the MLIR Python bindings, by statement or by name."""
    violations = [
        f"{imp.importer} imports {imp.imported} ({imp.path.relative_to(ROOT)}:{imp.line})"
        for imp in IMPORTS
        if imp.imported.split(".")[0] in BINDINGS and not _under(imp.importer, "accy.mlir_bridge")
    ]
    for module, path in MODULES.items():
        if _under(module, "accy.mlir_bridge"):
            continue
        for name, line in _dynamic_imports(path):
            if name.split(".")[0] in BINDINGS:
                violations.append(
                    f"{module} imports {name} by name ({path.relative_to(ROOT)}:{line})"
                )
    for v in violations:
        print(v)
    assert not violations, "the MLIR bindings imported outside the bridge:\n" + "\n".join(
        violations
    )
