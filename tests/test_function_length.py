"""No function over 80 lines, but for an explicit allow-list that only shrinks.

Every function and method of the project's packages and of tests/ is measured from its ``def`` line to its last
line (``ast``; decorators and nested functions count with the function that holds them). A function over the
limit fails the test unless it is listed in ``ALLOWED`` with at least its current length; a listed function that
grew past its recorded length fails too, and one that shrank to the limit or below must leave the list (so the
list only shrinks). Split a long function into named steps rather than raising a number here.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TREES = ("planner", "simulations", "forecasts", "tests")
LIMIT = 80

# "path::qualified name" -> its length when it was listed.
ALLOWED: dict[str, int] = {}


def function_lengths(root: Path = ROOT) -> dict[str, int]:
    """"path::Class.method" (or "path::function", nested: "path::outer.inner") -> lines from def to the end."""
    out: dict[str, int] = {}

    def walk(node: ast.AST, rel: str, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef):
                name = prefix + child.name
                out[f"{rel}::{name}"] = child.end_lineno - child.lineno + 1
                walk(child, rel, name + ".")
            elif isinstance(child, ast.ClassDef):
                walk(child, rel, prefix + child.name + ".")
            else:
                walk(child, rel, prefix)

    for top in TREES:
        for path in sorted((root / top).rglob("*.py")):
            rel = path.relative_to(root)
            if "migrations" in rel.parts or ".venv" in rel.parts:
                continue
            walk(ast.parse(path.read_text(), filename=str(rel)), rel.as_posix(), "")
    return out


def long_functions(lengths: dict[str, int], allowed: dict[str, int], limit: int = LIMIT) -> list[str]:
    """What breaks the rule: new long functions, listed ones that grew, listed ones that no longer need a place."""
    problems = []
    for name, n in sorted(lengths.items()):
        if n > limit and name not in allowed:
            problems.append(f"{name} has {n} lines (> {limit}): split it")
        elif name in allowed and n > allowed[name]:
            problems.append(f"{name} grew to {n} lines (listed at {allowed[name]}): split it")
        elif name in allowed and n <= limit:
            problems.append(f"{name} has {n} lines now: remove it from ALLOWED")
    problems += [f"{name} is listed but no longer exists: remove it from ALLOWED" for name in allowed
                 if name not in lengths]
    return problems


def test_no_function_over_the_limit_outside_the_shrinking_allow_list():
    problems = long_functions(function_lengths(), ALLOWED)
    assert not problems, "\n".join(problems)


def test_the_check_finds_a_long_function(tmp_path):
    pkg = tmp_path / "planner"
    pkg.mkdir()
    lines = ["class A:", "    def f(self):", *[f"        x{n} = {n}" for n in range(LIMIT)], "        return 1", "",
             "", "def g():", "    return 2", ""]
    (pkg / "mod.py").write_text("\n".join(lines))
    lengths = function_lengths(tmp_path)
    assert lengths["planner/mod.py::A.f"] == LIMIT + 2 and lengths["planner/mod.py::g"] == 2
    assert long_functions(lengths, {}) == [f"planner/mod.py::A.f has {LIMIT + 2} lines (> {LIMIT}): split it"]
    assert long_functions(lengths, {"planner/mod.py::A.f": LIMIT + 5}) == []
    assert "grew" in long_functions(lengths, {"planner/mod.py::A.f": LIMIT + 1})[0]
    assert "remove it" in long_functions(lengths, {"planner/mod.py::A.f": 90, "planner/mod.py::g": 90})[-1]
