"""Where the published board lives (docs/results/leaderboard.json, written by ``manage.py leaderboard``) and how the
page and the API read it: parsed once per change of the file."""

from __future__ import annotations

import json
from pathlib import Path

from django.conf import settings

_cache: dict = {}


def results_path() -> Path:
    return Path(settings.BASE_DIR) / "docs" / "results" / "leaderboard.json"


def doc_path() -> Path:
    return Path(settings.BASE_DIR) / "docs" / "leaderboard.md"


def load() -> dict | None:
    """The board, or None when it was never generated."""
    path = results_path()
    try:
        mtime = path.stat().st_mtime_ns
    except FileNotFoundError:
        return None
    if _cache.get("mtime") != mtime:
        _cache.update(mtime=mtime, board=json.loads(path.read_text()))
    return _cache["board"]


def without_runs(board: dict) -> dict:
    return {k: v for k, v in board.items() if k != "runs"}
