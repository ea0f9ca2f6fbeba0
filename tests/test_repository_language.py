"""The repository speaks only of the product: no paths of the machine it was written on, no references to the
workplace's shared folders, no tracker numbers. Its history lives in git."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TEXT = (".py", ".pyx", ".pxd", ".md", ".html", ".txt", ".json", ".toml", ".cfg", ".yml", ".yaml", ".sh", ".js",
        ".css", "Makefile")
# a sibling folder of the checkout, an absolute workspace path, an issue number of our own tracker
FORBIDDEN = re.compile(r"\.\./shared/|(?<![\w.~-])/work/|\bissue #?\d+\b|\bwork-?log\b", re.I)
GUARDS = {"tests/test_repository_language.py", "tests/test_security.py"}  # tests that name what they look for


def tracked_text_files():
    names = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True).stdout
    for name in names.splitlines():
        path = ROOT / name
        if name.endswith(TEXT) and name not in GUARDS and path.is_file() and path.stat().st_size < 2_000_000:
            yield name, path


def test_no_workplace_path_or_tracker_number_in_the_repository():
    found = []
    for name, path in tracked_text_files():
        for i, line in enumerate(path.read_text(errors="replace").splitlines(), 1):
            if FORBIDDEN.search(line):
                found.append(f"{name}:{i}: {line.strip()[:120]}")
    assert not found, "the repository should speak only of the product:\n" + "\n".join(found)
