"""Compile the engine's hot modules with Cython: ``python -m simulations.engine.build``.

Writes ``simulations/engine/_compiled/<subpackage>/<module>.*.so`` for each of ``accel.MODULES`` (the folder
mirrors the package tree) and a stamp of the sources' digest (see ``accel.py``). Idempotent: does nothing when the build is fresh (``--force`` rebuilds). If Cython or a C
compiler is missing it says so and exits 0 with ``--optional`` (the engine then runs as pure Python, slower
but identical); without ``--optional`` the failure is an error.

A build is kept in a cache folder keyed by the sources' digest (``PLANNER_ENGINE_CACHE``, default
``~/.cache/fleet-planner/engine``; empty to switch it off), so a fresh clone of unchanged sources (CI, a second
work tree) copies the modules in seconds instead of compiling them for minutes. ``--cached-only`` never compiles
(``make run`` uses it, then compiles in the background so the first page does not wait).
"""

from __future__ import annotations

import os
import platform
import shutil
import sys
import tempfile
from pathlib import Path

from simulations.engine.accel import (
    COMPILED_DIR,
    DECLARATIONS,
    HERE,
    MODULES,
    PACKAGE,
    STAMP,
    compiled_files,
    compiled_state,
    source,
    source_digest,
)

ROOT = HERE.parents[1]


def cache_dir() -> Path | None:
    root = os.environ.get("PLANNER_ENGINE_CACHE", str(Path.home() / ".cache" / "fleet-planner" / "engine"))
    return Path(root) if root.strip() else None


def _cache_entry(digest: str) -> Path | None:
    """The cache folder of a build: the sources' digest (interpreter included), Cython's version, the machine."""
    cache = cache_dir()
    if cache is None:
        return None
    try:
        from Cython import __version__ as cython
    except ImportError:
        cython = "none"
    return cache / f"{digest}-cython{cython}-{platform.machine()}"


def restore_from_cache(digest: str) -> bool:
    """Copy a cached build of these exact sources into place. False if there is none."""
    entry = _cache_entry(digest)
    if entry is None or not all(any(compiled_files(m, entry)) for m in MODULES):
        return False
    if COMPILED_DIR.exists():
        shutil.rmtree(COMPILED_DIR)
    shutil.copytree(entry, COMPILED_DIR)
    STAMP.write_text(digest + "\n")
    return compiled_state()[0]


def save_to_cache(digest: str) -> None:
    """Keep this build for the next clone (best effort: a read-only or full cache folder only costs time)."""
    entry = _cache_entry(digest)
    if entry is None or entry.exists():
        return
    scratch = None
    try:
        entry.parent.mkdir(parents=True, exist_ok=True)
        scratch = Path(tempfile.mkdtemp(prefix=f".{entry.name[:12]}-", dir=entry.parent))
        for so in COMPILED_DIR.rglob("*.so"):
            (scratch / so.relative_to(COMPILED_DIR)).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(so, scratch / so.relative_to(COMPILED_DIR))
        scratch.rename(entry)  # atomic: a concurrent build that got there first wins
    except OSError:
        if scratch is not None:
            shutil.rmtree(scratch, ignore_errors=True)


def build(force: bool = False, quiet: bool = True) -> str:
    ok, _ = compiled_state()
    if ok and not force:
        save_to_cache(source_digest())
        return "fresh"
    if not force and restore_from_cache(source_digest()):
        return "copied from the cache of unchanged sources"
    from Cython.Build import cythonize
    from setuptools import Distribution
    from setuptools.command.build_ext import build_ext

    digest = source_digest()
    with tempfile.TemporaryDirectory(prefix="engine-build-") as tmp:
        tmp = Path(tmp)
        # compile copies from a scratch tree that mirrors the package tree (Cython resolves the dotted cimports
        # through its __init__.py files), so nothing (.c files, build/) lands in the source tree
        src = tmp / "src"
        for name in MODULES + DECLARATIONS:
            for ext in (".py", ".pxd"):
                if source(name, ext).exists():
                    dest = source(name, ext, src / Path(*PACKAGE.split(".")))
                    dest.parent.mkdir(parents=True, exist_ok=True)
                    shutil.copy2(source(name, ext), dest)
        for folder in {p.parent for p in src.rglob("*.p*")}:
            while folder != src:
                (folder / "__init__.py").touch()
                folder = folder.parent
        sources = [str(source(name, ".py", src / Path(*PACKAGE.split(".")))) for name in MODULES]
        exts = cythonize(
            sources, quiet=quiet, language_level=3, build_dir=str(tmp / "c"),
            # Python semantics everywhere (bounds-checked, negative indices, Python division); functions that
            # index typed memoryviews by request id switch bounds checks off locally
            compiler_directives={"cdivision": False, "embedsignature": False},
        )
        by_leaf = {name.rsplit(".", 1)[-1]: name for name in MODULES}  # the modules' own names are unique
        for e in exts:  # full dotted module names
            e.name = f"{PACKAGE}.{by_leaf[e.name.rsplit('.', 1)[-1]]}"
            e.extra_compile_args = ["-O2", "-Wno-unused-function", "-Wno-unreachable-code"]
        dist = Distribution({"ext_modules": exts, "script_name": "build", "script_args": []})
        cmd = build_ext(dist)
        cmd.build_lib = str(tmp / "lib")
        cmd.build_temp = str(tmp / "obj")
        cmd.ensure_finalized()
        cmd.run()
        lib = tmp / "lib" / Path(*PACKAGE.split("."))
        built = sorted(lib.rglob("*.so"))
        if len(built) != len(MODULES) or not all(any(compiled_files(m, lib)) for m in MODULES):
            got = [str(p.relative_to(lib)) for p in built]
            raise RuntimeError(f"expected {len(MODULES)} extension modules, got {got}")
        if COMPILED_DIR.exists():
            shutil.rmtree(COMPILED_DIR)
        for p in built:
            (COMPILED_DIR / p.relative_to(lib)).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(p, COMPILED_DIR / p.relative_to(lib))
        STAMP.write_text(digest + "\n")
    save_to_cache(digest)
    return "built"


def main(argv: list[str]) -> int:
    optional = "--optional" in argv
    if "--cached-only" in argv:  # never compile: a fresh build stays, a cached one is copied in, else nothing
        fresh, _ = compiled_state()
        status = "fresh" if fresh else (
            "copied from the cache of unchanged sources" if restore_from_cache(source_digest())
            else "not built yet (no cached build of these sources); the simulator runs as pure Python until it is")
        print(f"engine build: {status}")
        return 0
    try:
        status = build(force="--force" in argv, quiet="--verbose" not in argv)
    except Exception as exc:  # noqa: BLE001 - any build failure means "run as Python"
        fresh, _ = compiled_state()
        fallback = ("an earlier build of the same sources stays in use" if fresh
                    else "the simulator will run as pure Python (same results, about 2.5x slower)")
        print(f"engine build failed ({type(exc).__name__}: {exc}); {fallback}", file=sys.stderr)
        return 0 if optional else 1
    print(f"engine build: {status} ({COMPILED_DIR.relative_to(ROOT)})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
