"""Writes for forecast runs: create a run (and its parent job), fan out, store series results."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import numpy as np
from django.conf import settings
from django.db import transaction

from forecasts.core.backtest import DEFAULT_CANDIDATES
from forecasts.core.series import GROUP_COLUMNS, SeriesKey, build_series
from forecasts.models import ForecastRun, ForecastSeries
from planner.jobs.services import create_job

RUN_KIND = "forecasts.run"
SERIES_KIND = "forecasts.series"
DEFAULT_PARAMS = {
    "group_by": list(GROUP_COLUMNS),
    "metrics": ["input_tps"],
    "method": "auto",
    "candidates": list(DEFAULT_CANDIDATES),
    "resolution_s": 300,
    "horizon_s": 3600,
    "level": 0.9,
    "backtest_s": 2 * 86400,
    "rank_metric": "wmape",
}


def run_dir(run: ForecastRun) -> Path:
    return Path(settings.MEDIA_ROOT) / "forecasts" / str(run.pk)


def create_run(*, trace, team, user=None, params: dict | None = None, inline: bool = False) -> ForecastRun:
    """A run row plus its parent job (dispatched after commit, or run here when ``inline``)."""
    merged = {**DEFAULT_PARAMS, **(params or {})}
    with transaction.atomic():
        run = ForecastRun.objects.create(team=team, created_by=user, trace=trace, params=merged)
        run.job = create_job(
            team=team,
            kind=RUN_KIND,
            user=user,
            enqueue=not inline,
            params={"run_id": run.pk, "inline_children": inline},
        )
        run.save(update_fields=["job"])
    if inline:
        from planner.jobs.tasks import execute

        execute(run.job.pk)
    run.refresh_from_db()  # with the inline/thread runners the job may already have run at commit
    return run


def build_run_series(run: ForecastRun, frame) -> list[ForecastSeries]:
    """Bin the trace, save the series (npz) and one pending ForecastSeries row per series."""
    p = run.params
    series = build_series(frame, p["resolution_s"], group_by=p["group_by"], metrics=p["metrics"])
    arrays, rows = {}, []
    position = 0
    for key, frame_ in series.items():
        for metric in p["metrics"]:
            skey = SeriesKey(tuple(zip(p["group_by"], key, strict=False)), metric)
            arrays[f"s{position}"] = frame_[metric].to_numpy(dtype=float)
            rows.append(
                ForecastSeries(run=run, position=position, label=skey.label, group=dict(skey.group), metric=metric)
            )
            position += 1
    folder = run_dir(run)
    folder.mkdir(parents=True, exist_ok=True)
    tmp = folder / "series.tmp.npz"
    np.savez_compressed(tmp, **arrays)
    os.replace(tmp, folder / "series.npz")
    ForecastSeries.objects.filter(run=run).delete()
    return ForecastSeries.objects.bulk_create(rows)


def load_series_values(series: ForecastSeries) -> np.ndarray:
    with np.load(run_dir(series.run) / "series.npz") as data:
        return data[f"s{series.position}"]


def store_series_result(series: ForecastSeries, result: dict) -> None:
    fc = result["forecast"]
    series.result = result
    series.leaderboard = result["leaderboard"]
    series.chosen_method = result["chosen"]
    series.best_method = result["best"] or ""
    series.peak, series.peak_upper = fc["peak"], fc["peak_upper"]
    series.save(update_fields=["result", "leaderboard", "chosen_method", "best_method", "peak", "peak_upper"])


def summarise_run(run: ForecastRun) -> dict:
    """Counts of chosen methods and the mean error of the chosen method; stored once all series ended."""
    rows = list(run.series.all().only("chosen_method", "leaderboard", "label"))
    chosen: dict[str, int] = {}
    errors = []
    for s in rows:
        if s.chosen_method:
            chosen[s.chosen_method] = chosen.get(s.chosen_method, 0) + 1
        for row in s.leaderboard:
            if row.get("method") == s.chosen_method and row.get("wmape") is not None:
                errors.append(row["wmape"])
    summary = {
        "series": len(rows),
        "finished": sum(1 for s in rows if s.chosen_method),
        "chosen": chosen,
        "mean_wmape_of_chosen": float(np.mean(errors)) if errors else None,
    }
    ForecastRun.objects.filter(pk=run.pk).update(summary=json.loads(json.dumps(summary)))
    return summary


def delete_run(run: ForecastRun) -> None:
    folder = run_dir(run)
    run.delete()
    shutil.rmtree(folder, ignore_errors=True)
