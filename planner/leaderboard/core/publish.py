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
            "engine_build": str(accel.BUILD.get("kind", "")), "limit_s": limit_s, "seeds": seeds,
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


def from_partial(path: Path, *, workers: int = 2) -> dict:
    """A board of the traces whose every cell finished in an interrupted run's partial file (``meta.partial``
    names the traces left out); nothing is simulated."""
    runs = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    seeds = sorted({r["seed"] for r in runs}) or list(rules.SEEDS)
    expected = {t: len(run.configs(t)) * len(rules.SEEDS) for t in rules.TRACES}
    done = [t for t in rules.TRACES if sum(1 for r in runs if r["trace"] == t) == expected[t]]
    runs = [r for r in runs if r["trace"] in done]
    meta = {"date": dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M UTC"), "seeds": seeds,
            "partial": [t for t in rules.TRACES if t not in done], "limit_s": None}
    result = {"runs": runs, "wall_s": None, "cpu_s": None, "workers": workers}
    return board_mod.build(result, static_defaults={t: workloads.static_default(t) for t in done}, meta=meta)

