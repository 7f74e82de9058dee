"""The package's architecture: no import cycle between jaxzero's modules. The layers
themselves are import-linter's contracts (pyproject.toml, `lint-imports` in `make test`;
docs/concepts/architecture.md)."""

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = "jaxzero"


def _module_name(path: Path, root: Path) -> str:
    parts = path.relative_to(root).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imported_names(node: ast.Import | ast.ImportFrom, module: str, is_package: bool) -> list[str]:
    """The dotted names ``node`` imports: ``a.b`` for ``import a.b``, ``a.b.c`` for
    ``from a.b import c`` (``c`` a module of ``a.b``, or a name in it)."""
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    base = node.module or ""
    if node.level:  # relative: from the package holding `module` (or `module` itself)
        package = module.split(".")[: len(module.split(".")) - node.level + is_package]
        base = ".".join([*package, *([base] if base else [])])
    return [f"{base}.{alias.name}" if base else alias.name for alias in node.names]


def import_graph(root: Path = ROOT, package: str = PACKAGE) -> dict[str, dict[str, int]]:
    """``{importer: {imported: line}}`` over the modules of ``package``, from every import
    statement in their source: at module level, inside functions and under
    ``if TYPE_CHECKING:`` alike (what a reader, mypy and import-linter see). An import names
    the deepest module it reaches (``from a import b`` is ``a.b`` where ``b`` is a module)."""
    paths = {_module_name(p, root): p for p in sorted((root / package).rglob("*.py"))}
    graph: dict[str, dict[str, int]] = {}
    for module, path in paths.items():
        edges = graph.setdefault(module, {})
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if not isinstance(node, ast.Import | ast.ImportFrom):
                continue
            for name in _imported_names(node, module, path.name == "__init__.py"):
                while name and name not in paths:  # `from a.b import c`, c no module: a.b
                    name = name.rpartition(".")[0]
                if name and name != module:
                    edges[name] = min(edges.get(name, node.lineno), node.lineno)
    return graph


def cycles(graph: dict[str, dict[str, int]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm,
    iterative), each sorted; modules in one component import each other, directly or
    through others."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found = []
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.get(child, {})))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
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
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def _describe(component: list[str], graph: dict[str, dict[str, int]]) -> str:
    inside = set(component)
    return "\n".join(
        f"  {a} -> {b} (line {line})"
        for a in component
        for b, line in sorted(graph[a].items())
        if b in inside
    )


def test_no_import_cycle_in_jaxzero():
    graph = import_graph()
    found = cycles(graph)
    assert not found, "modules that import each other:\n" + "\n\n".join(
        _describe(c, graph) for c in found
    )


def test_the_graph_sees_every_kind_of_import(tmp_path):
    pkg = tmp_path / "pkg"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "sub" / "__init__.py").write_text("from . import b\n")
    (pkg / "a.py").write_text(
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n    from pkg.sub.b import Thing\n"
        "def f():\n    import pkg.c\n"
    )
    (pkg / "sub" / "b.py").write_text("from ..c import name\nThing = 1\n")
    (pkg / "c.py").write_text("import os\nname = 2\n")
    graph = import_graph(tmp_path, "pkg")
    assert graph == {
        "pkg": {},
        "pkg.a": {"pkg.sub.b": 3, "pkg.c": 5},
        "pkg.c": {},
        "pkg.sub": {"pkg.sub.b": 1},
        "pkg.sub.b": {"pkg.c": 1},
    }


def test_cycles_are_the_components_that_import_each_other():
    graph = {
        "a": {"b": 1},
        "b": {"c": 1},
        "c": {"a": 1, "d": 1},  # a -> b -> c -> a
        "d": {"e": 1},
        "e": {"d": 1},  # d <-> e, reached from the first cycle
        "f": {"a": 1},  # imports a cycle, is in none
    }
    assert sorted(cycles(graph)) == [["a", "b", "c"], ["d", "e"]]
    assert cycles({"a": {"b": 1}, "b": {}}) == []
