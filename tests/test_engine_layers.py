"""The engine's subpackages import each other without cycles.

Every module of ``simulations/engine`` is read as a syntax tree; its module-level imports (those run at import
time: the top level and the ``if`` / ``try`` blocks there, not the bodies of functions) give the edges between the
engine's subpackages (``core``, ``instance``, ``fleet``, ``simulator``, ...; a top-level module such as ``run.py``
counts as its own node). The graph must have no cycle, but for the edges listed in ``ALLOWED`` with their reason;
an allowed edge that no longer exists must leave the list (so the list only shrinks).

The layers the engine is built on (docs/simulator.md, "Layout"): ``core`` (entities, event queue, run state,
policy view and API) at the bottom; ``policies`` on ``core``; ``instance`` on ``core`` and ``policies``; ``fleet``
on ``instance``; ``simulator`` (the loop) above them all.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable
from pathlib import Path

from simulations.tests.test_import_cycles import cycles as module_cycles

ENGINE = Path(__file__).resolve().parents[1] / "simulations" / "engine"
PACKAGE = "simulations.engine"

# (from, to) -> why the edge stays for now (none is left: add one only with its reason).
ALLOWED: dict[tuple[str, str], str] = {}


def _module_level_imports(tree: ast.Module) -> Iterable[ast.Import | ast.ImportFrom]:
    stack = list(tree.body)
    while stack:
        node = stack.pop()
        if isinstance(node, ast.Import | ast.ImportFrom):
            yield node
        elif isinstance(node, ast.If | ast.Try):
            stack.extend(node.body + node.orelse + getattr(node, "finalbody", []))
            for handler in getattr(node, "handlers", []):
                stack.extend(handler.body)


def _node(parts: tuple[str, ...]) -> str:
    """The graph node of a module below the engine package: its subpackage, or a top-level module's name."""
    return parts[0][:-3] if parts[0].endswith(".py") else parts[0]


def package_edges(sources: dict[str, str]) -> dict[tuple[str, str], list[str]]:
    """``{relative path: source}`` -> ``{(from, to): [importing files]}`` between distinct subpackages."""
    edges: dict[tuple[str, str], list[str]] = {}
    for rel, text in sorted(sources.items()):
        src = _node(tuple(rel.split("/")))
        for node in _module_level_imports(ast.parse(text, filename=rel)):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module or ""]
            if isinstance(node, ast.ImportFrom) and node.module == PACKAGE:
                names = [f"{PACKAGE}.{a.name}" for a in node.names]
            for name in names:
                if not name.startswith(PACKAGE + "."):
                    continue
                dst = name[len(PACKAGE) + 1:].split(".")[0]
                if dst != src and rel not in edges.setdefault((src, dst), []):
                    edges[(src, dst)].append(rel)
    return edges


def cycles(edges: Iterable[tuple[str, str]]) -> list[list[str]]:
    """The strongly connected components of more than one node, each sorted (the project's import-cycle test's
    Tarjan on the package graph)."""
    graph: dict[str, set[str]] = {}
    for a, b in edges:
        graph.setdefault(a, set()).add(b)
        graph.setdefault(b, set())
    return sorted(sorted(c) for c in module_cycles(graph))


def engine_sources() -> dict[str, str]:
    return {p.relative_to(ENGINE).as_posix(): p.read_text() for p in sorted(ENGINE.rglob("*.py"))
            if "_compiled" not in p.parts}


def test_the_engine_subpackages_import_each_other_without_cycles():
    edges = package_edges(engine_sources())
    found = cycles(e for e in edges if e not in ALLOWED)
    detail = {f"{a} -> {b}": files for (a, b), files in edges.items() if any(a in c and b in c for c in found)}
    assert found == [], f"package import cycles {found} through {detail}"


def test_every_allowed_edge_still_exists():
    edges = package_edges(engine_sources())
    assert [e for e in ALLOWED if e not in edges] == [], "an allowed edge is gone: remove it from ALLOWED"


def test_the_check_sees_a_cycle_between_two_subpackages():
    sources = {
        "core/loop.py": "from simulations.engine.instance.batching import InstanceEngine\n",
        "instance/batching.py": "import cython\nif not cython.compiled:\n    from simulations.engine.core import state\n",
        "fleet/fleet.py": "def f():\n    from simulations.engine.core import loop\n",  # function body: not an edge
        "run.py": "from simulations.engine import fleet\n",
    }
    edges = package_edges(sources)
    assert set(edges) == {("core", "instance"), ("instance", "core"), ("run", "fleet")}
    assert cycles(edges) == [["core", "instance"]]
