"""No import cycles in the project's packages.

The graph is read from the source (``ast``): every ``import`` and ``from ... import`` of a project module, at the
top of a module or inside a function (a function-local import that dodges a cycle is still a cycle), but not the
imports under ``if TYPE_CHECKING:``. A module that imports a name from a package enclosing it depends on that
package's ``__init__`` (which often imports the module back). A cycle is a strongly connected component of more
than one module; none is allowed.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("planner", "simulations", "forecasts")


def _modules() -> dict[str, Path]:
    out = {}
    for top in PACKAGES:
        for path in (ROOT / top).rglob("*.py"):
            rel = path.relative_to(ROOT)
            if "migrations" in rel.parts or "tests" in rel.parts or ".venv" in rel.parts:
                continue
            parts = list(rel.with_suffix("").parts)
            if parts[-1] == "__init__":
                parts = parts[:-1]
            out[".".join(parts)] = path
    return out


def _is_type_checking(node: ast.AST) -> bool:
    return isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test)


def _imports(tree: ast.AST):
    todo = [tree]
    while todo:
        node = todo.pop()
        if _is_type_checking(node):
            continue
        if isinstance(node, ast.Import):
            yield from (a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            yield from (f"{node.module}.{a.name}" for a in node.names)
        todo.extend(ast.iter_child_nodes(node))


def import_graph(modules: dict[str, Path] | None = None) -> dict[str, set[str]]:
    modules = _modules() if modules is None else modules

    def resolve(name: str) -> str | None:
        while name and name not in modules:
            name = name.rpartition(".")[0]
        return name or None

    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        targets = {resolve(imp) for imp in _imports(ast.parse(path.read_text(), str(path)))}
        graph[name] = {t for t in targets if t and t != name}
    return graph


def cycles(graph: dict[str, set[str]]) -> list[set[str]]:
    """Strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: list[set[str]] = []
    for root in graph:
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            v, children = work[-1]
            for w in children:
                if w not in index:
                    index[w] = low[w] = len(index)
                    stack.append(w)
                    on_stack.add(w)
                    work.append((w, iter(sorted(graph.get(w, ())))))
                    break
                if w in on_stack:
                    low[v] = min(low[v], index[w])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[v])
                if low[v] == index[v]:
                    comp = set()
                    while True:
                        w = stack.pop()
                        on_stack.discard(w)
                        comp.add(w)
                        if w == v:
                            break
                    if len(comp) > 1:
                        out.append(comp)
    return out


def test_the_project_has_no_import_cycle():
    assert [sorted(c) for c in cycles(import_graph())] == []


def test_the_engine_has_no_import_cycle():
    assert [sorted(c) for c in cycles(import_graph()) if any(m.startswith("simulations.engine") for m in c)] == []


def test_the_check_finds_a_cycle_through_a_function_local_import(tmp_path):
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "a.py").write_text("from pkg.b import f\n")
    (pkg / "b.py").write_text("def f():\n    from pkg import a\n")
    (pkg / "c.py").write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from pkg import a\n")
    graph = import_graph({"pkg": pkg / "__init__.py", "pkg.a": pkg / "a.py", "pkg.b": pkg / "b.py",
                          "pkg.c": pkg / "c.py"})
    assert cycles(graph) == [{"pkg.a", "pkg.b"}]


def test_the_check_finds_a_cycle_through_a_name_taken_from_the_enclosing_package(tmp_path):
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("from pkg.a import f\n\ndef make():\n    pass\n")
    (pkg / "a.py").write_text("def f():\n    from pkg import make\n")
    (pkg / "b.py").write_text("from pkg import make\n")
    graph = import_graph({"pkg": pkg / "__init__.py", "pkg.a": pkg / "a.py", "pkg.b": pkg / "b.py"})
    assert cycles(graph) == [{"pkg", "pkg.a"}]
