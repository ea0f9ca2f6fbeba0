"""Which build of the engine runs: the compiled one (Cython) when it is fresh, else the pure-Python source.

The hot modules (``MODULES``: the entities, the event queue and the Simulator's modules) are plain Python; ``python -m simulations.engine.build`` (run by
``make install``) compiles them with Cython into ``simulations/engine/_compiled/`` and stamps the build with a
digest of the sources. At import, ``activate`` puts that folder first on the package path only when the stamp
matches the sources on disk, so an edited ``batching.py`` is never shadowed by a stale build: it runs as Python
until rebuilt. Both builds execute the same source and give identical results (tested).

``PLANNER_ENGINE_BUILD``: unset/``auto`` (compiled if fresh), ``python`` (force the source),
``compiled`` (fail if there is no fresh build: CI uses this so the benchmarked path is the tested one).
"""

from __future__ import annotations

import hashlib
import os
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
COMPILED_DIR = HERE / "_compiled"
STAMP = COMPILED_DIR / "SOURCES.sha256"
MODULES = ("entities", "fleetindex", "evq", "state", "kvcache", "chunked", "batching", "arrivals", "fleet", "control", "loop",
           "disagg")
DECLARATIONS = ("codes",)  # declaration-only .pxd files the modules cimport (C constants)

BUILD: dict = {"kind": "python", "reason": "not activated"}


def source_digest() -> str:
    """Digest of everything the compiled modules are made from (sources, declarations, interpreter)."""
    h = hashlib.sha256()
    h.update(f"{sys.implementation.cache_tag}".encode())
    for name in MODULES:
        for ext in (".py", ".pxd"):
            p = HERE / f"{name}{ext}"
            if p.exists():
                h.update(name.encode() + ext.encode())
                h.update(p.read_bytes())
    for name in DECLARATIONS:
        h.update(name.encode() + b".pxd")
        h.update((HERE / f"{name}.pxd").read_bytes())
    return h.hexdigest()


def compiled_state() -> tuple[bool, str]:
    if not STAMP.exists():
        return False, "no compiled build (run: python -m simulations.engine.build)"
    if STAMP.read_text().strip() != source_digest():
        return False, "compiled build is stale: the sources changed since (run: python -m simulations.engine.build)"
    missing = [m for m in MODULES if not any(COMPILED_DIR.glob(f"{m}.*.so"))]
    if missing:
        return False, f"compiled build lacks {', '.join(missing)}"
    return True, "fresh"


def activate(package_path: list[str]) -> dict:
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
    if str(COMPILED_DIR) not in package_path:
        package_path.insert(0, str(COMPILED_DIR))
    BUILD.update(kind="compiled", reason="fresh Cython build of " + ", ".join(MODULES))
    return BUILD
