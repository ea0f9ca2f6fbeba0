"""Which build of the engine runs: the compiled one (Cython) when it is fresh, else the pure-Python source.

The hot modules (``MODULES``, dotted below ``simulations.engine``: the entities, the event queue, the instance
engine, the fleet's routing and life cycle, the loop, the policy view, and the per-request code of the PreServe and
Chiron policies, whose pydantic knobs live in modules of their own) are plain Python; ``python -m simulations.engine.build``
(run by ``make install``) compiles them with Cython into ``simulations/engine/_compiled/``, which mirrors the
package tree (``_compiled/instance/batching.*.so``), and stamps the build with a digest of the sources.
``activate`` (run by ``simulations/engine/__init__.py``) decides once per process which build runs; each
subpackage holding compiled modules then calls ``extend`` from its ``__init__``, which puts its folder of the
build first on the subpackage's path, only when the stamp matches the sources on disk, so an edited
``batching.py`` is never shadowed by a stale build: it runs as Python until rebuilt. Both builds execute the same
source and give identical results (tested).

``PLANNER_ENGINE_BUILD``: unset/``auto`` (compiled if fresh), ``python`` (force the source),
``compiled`` (fail if there is no fresh build: CI uses this so the benchmarked path is the tested one).
"""

from __future__ import annotations

import hashlib
import os
import sys
from collections.abc import Iterator
from pathlib import Path

HERE = Path(__file__).resolve().parent
PACKAGE = "simulations.engine"
COMPILED_DIR = HERE / "_compiled"
STAMP = COMPILED_DIR / "SOURCES.sha256"
MODULES = ("core.entities", "fleet.fleetindex", "core.evq", "core.state", "instance.kvcache", "instance.chunked",
           "instance.batching", "fleet.arrivals", "fleet.fleet", "core.control", "core.view", "simulator.loop", "fleet.disagg",
           "policies.preserve.steps", "policies.preserve.router", "policies.preserve.scaler", "policies.chiron.queue",
           "policies.chiron.local", "policies.chiron.policy")
DECLARATIONS = ("core.codes",)  # declaration-only .pxd files the modules cimport (C constants)

BUILD: dict = {"kind": "python", "reason": "not activated"}


def source(name: str, ext: str, root: Path = HERE) -> Path:
    """The file of a dotted module name below the engine package: ``source("simulator.loop", ".py")``."""
    *folders, module = name.split(".")
    return root.joinpath(*folders, module + ext)


def compiled_files(name: str, root: Path = COMPILED_DIR) -> Iterator[Path]:
    """The extension module(s) of a dotted module name in a build folder that mirrors the package tree."""
    *folders, module = name.split(".")
    return root.joinpath(*folders).glob(f"{module}.*.so")


def source_digest() -> str:
    """Digest of everything the compiled modules are made from (sources, declarations, interpreter)."""
    h = hashlib.sha256()
    h.update(f"{sys.implementation.cache_tag}".encode())
    for name in MODULES:
        for ext in (".py", ".pxd"):
            p = source(name, ext)
            if p.exists():
                h.update(name.encode() + ext.encode())
                h.update(p.read_bytes())
    for name in DECLARATIONS:
        h.update(name.encode() + b".pxd")
        h.update(source(name, ".pxd").read_bytes())
    return h.hexdigest()


def compiled_state() -> tuple[bool, str]:
    if not STAMP.exists():
        return False, "no compiled build (run: python -m simulations.engine.build)"
    if STAMP.read_text().strip() != source_digest():
        return False, "compiled build is stale: the sources changed since (run: python -m simulations.engine.build)"
    missing = [m for m in MODULES if not any(compiled_files(m))]
    if missing:
        return False, f"compiled build lacks {', '.join(missing)}"
    return True, "fresh"


def activate() -> dict:
    """Choose the build of this process (once, before any engine subpackage is imported)."""
    want = os.environ.get("PLANNER_ENGINE_BUILD", "auto").strip().lower() or "auto"
    if want not in ("auto", "python", "compiled"):
        raise ImportError(f"PLANNER_ENGINE_BUILD={want!r}: use auto, python or compiled")
    if want == "python":
        BUILD.update(kind="python", reason="PLANNER_ENGINE_BUILD=python")
        return BUILD
    ok, reason = compiled_state()
    if not ok:
        if want == "compiled":
            raise ImportError(f"PLANNER_ENGINE_BUILD=compiled but {reason}")
        BUILD.update(kind="python", reason=reason)
        return BUILD
    BUILD.update(kind="compiled", reason="fresh Cython build of " + ", ".join(MODULES))
    return BUILD


def extend(package: str, package_path: list[str]) -> None:
    """Put a subpackage's folder of the compiled build first on its path when the compiled build was chosen."""
    if BUILD["kind"] != "compiled" or not package.startswith(PACKAGE + "."):
        return
    folder = str(COMPILED_DIR.joinpath(*package[len(PACKAGE) + 1:].split(".")))
    if folder not in package_path:
        package_path.insert(0, folder)
