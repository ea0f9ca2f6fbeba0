"""The engine build cache: a build is kept under its sources' digest and copied into a fresh clone instead of being
compiled again; other sources (another digest) find nothing."""

from __future__ import annotations

from simulations.engine import build


def test_a_cached_build_of_the_same_sources_is_copied_in_and_another_digest_finds_nothing(tmp_path, monkeypatch):
    monkeypatch.setenv("PLANNER_ENGINE_CACHE", str(tmp_path / "cache"))
    first, second = tmp_path / "clone1" / "_compiled", tmp_path / "clone2" / "_compiled"
    first.mkdir(parents=True)
    for name in build.MODULES:  # the build folder mirrors the package tree: core/loop.*.so, policies/chiron/...
        so = build.source(name, ".cpython-311-x86_64-linux-gnu.so", first)
        so.parent.mkdir(parents=True, exist_ok=True)
        so.write_bytes(name.encode())
    monkeypatch.setattr(build, "COMPILED_DIR", first)
    build.save_to_cache("d1")
    assert sorted(p.name for p in (tmp_path / "cache").iterdir()) == [build._cache_entry("d1").name]

    monkeypatch.setattr(build, "COMPILED_DIR", second)
    monkeypatch.setattr(build, "STAMP", second / "SOURCES.sha256")
    monkeypatch.setattr(build, "compiled_state", lambda: (build.STAMP.read_text().strip() == "d1", ""))
    assert not build.restore_from_cache("d2") and not second.exists()
    assert build.restore_from_cache("d1")
    assert (second / "SOURCES.sha256").read_text().strip() == "d1"
    assert all(build.source(name, ".cpython-311-x86_64-linux-gnu.so", second).read_bytes() == name.encode()
               for name in build.MODULES)


def test_an_empty_cache_setting_switches_the_cache_off(monkeypatch):
    monkeypatch.setenv("PLANNER_ENGINE_CACHE", "")
    assert build.cache_dir() is None and not build.restore_from_cache("anything")
