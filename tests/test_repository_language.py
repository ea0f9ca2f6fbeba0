"""The repository speaks only of the product: no paths of the machine it was written on, no references to the
workplace's shared folders, no tracker numbers. Its history lives in git."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TEXT = (".py", ".pyx", ".pxd", ".md", ".html", ".txt", ".json", ".toml", ".cfg", ".yml", ".yaml", ".sh", ".js",
        ".css", "Makefile")
# a sibling folder of the checkout, an absolute workspace path, a number of our own tracker, a work log (spelt
# with character classes so that this file does not read as what it forbids)
FORBIDDEN = re.compile(r"\.\./share[d]/|(?<![\w.~-])/wor[k]/|\bissu[e]\s?#?\d+\b|\bwork-?lo[g]\b", re.I)
GUARDS = {"tests/test_security.py"}  # it names the absolute path it makes sure is never shown


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
