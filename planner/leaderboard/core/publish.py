"""Generate the board end to end (run every cell, build, render) and write it. Django-free: the management command
and the regression test call this."""

from __future__ import annotations

import datetime as dt
import json
import platform
from pathlib import Path

from planner.leaderboard.core import board as board_mod
from planner.leaderboard.core import report, rules, run, workloads


def generate(*, traces=None, seeds=None, strategies=None, limit_s=None, workers: int = 2, progress=None,
             sink=None) -> dict:
    traces = list(traces or rules.TRACES)
    seeds = list(seeds or rules.SEEDS)
    for t in traces:
        if t not in rules.TRACES:
            raise ValueError(f"no trace {t!r} on the board; one of {', '.join(rules.TRACES)}")
    defaults = {t: workloads.static_default(t, limit_s) for t in traces}
    result = run.run_all(traces, seeds, strategies=strategies, limit_s=limit_s, workers=workers, progress=progress,
                         sink=sink)
    from simulations.engine import accel

    meta = {"date": dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M UTC"),
            "host": f"{platform.machine()}, Python {platform.python_version()}",
            "engine_build": str(accel.BUILD.get("kind", "")), "limit_s": limit_s,
            "strategies": list(strategies) if strategies else None}
    return board_mod.build(result, static_defaults=defaults, meta=meta)


def write(board: dict, json_path: Path, md_path: Path | None) -> None:
    json_path.parent.mkdir(parents=True, exist_ok=True)
    json_path.write_text(json.dumps(board, indent=1, sort_keys=False) + "\n")
    if md_path is not None:
        md_path.write_text(report.render(board))


def rerender(json_path: Path, md_path: Path) -> dict:
    board = json.loads(json_path.read_text())
    md_path.write_text(report.render(board))
    return board
