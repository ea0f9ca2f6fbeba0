"""Hourly demand series for a plan scenario, taken from a normalised trace (Django-free).

``demand_from_frame(frame, hours, ...)`` turns a normalised trace (contract columns ``arrival_s``,
``input_tokens``, ``model``, ``region``, ``tier``) into scenario ``demand`` entries: for each (model,
region) and hour, the input TPS to plan for. ``statistic="peak"`` (default) is the busiest window of
``window_s`` seconds inside the hour, as SageServe plans for the peak of the next hour; ``"mean"`` is the
hour's average. Hours the trace does not reach are an error (``ScenarioError`` naming the field).
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pandas as pd

from planner.optimizer.scenario import ScenarioError

FIELD = "demand_from_trace"


def demand_from_frame(
    frame: pd.DataFrame,
    hours: int,
    *,
    start_hour: int = 0,
    tiers: list[str] | None = None,
    statistic: str = "peak",
    window_s: float = 300.0,
    cv: float | None = None,
) -> list[dict]:
    if statistic not in ("peak", "mean"):
        raise ScenarioError(f"{FIELD}.statistic", f"must be 'peak' or 'mean', got {statistic!r}")
    if not (0 < window_s <= 3600) or 3600 % window_s:
        raise ScenarioError(f"{FIELD}.window_s", "must divide an hour (e.g. 60, 300, 900)")
    missing = {"arrival_s", "input_tokens", "model", "region"} - set(frame.columns)
    if missing:
        raise ScenarioError(FIELD, f"the trace lacks column(s) {sorted(missing)}")
    if tiers is not None and "tier" in frame.columns:
        frame = frame[frame["tier"].astype(str).isin(tiers)]
    t0 = start_hour * 3600.0
    span = float(frame["arrival_s"].max()) if len(frame) else 0.0
    if span < t0 + (hours - 1) * 3600.0:
        raise ScenarioError(
            f"{FIELD}.start_hour",
            f"the trace spans {span / 3600:.1f} h; it cannot supply {hours} hours from hour {start_hour}",
        )
    sel = frame[(frame["arrival_s"] >= t0) & (frame["arrival_s"] < t0 + hours * 3600.0)]
    per_hour = int(3600 // window_s)
    n_windows = hours * per_hour
    entries = []
    for (model, region), group in sel.groupby([sel["model"].astype(str), sel["region"].astype(str)], sort=True):
        idx = ((group["arrival_s"].to_numpy() - t0) // window_s).astype(np.int64)
        tokens = np.bincount(idx, weights=group["input_tokens"].to_numpy(dtype=float), minlength=n_windows)
        tps = tokens[:n_windows].reshape(hours, per_hour) / window_s
        series = tps.max(axis=1) if statistic == "peak" else tps.mean(axis=1)
        entry: dict = {"model": model, "region": region, "tps": [round(float(x), 4) for x in series]}
        if cv is not None:
            entry["cv"] = cv
        entries.append(entry)
    return entries


def merge_trace_demand(scenario: Mapping, frame: pd.DataFrame, hours: int | None = None) -> dict:
    """A copy of ``scenario`` whose ``demand`` holds the trace's series (inline entries win for the same
    (model, region)); the ``demand_from_trace`` section is kept, with ``resolved: true``."""
    spec = scenario.get(FIELD)
    if not isinstance(spec, Mapping):
        raise ScenarioError(FIELD, 'must be an object like {"trace_id": 3}')
    h = int(hours if hours is not None else scenario.get("hours", 24))
    tiers = spec.get("tiers")
    if tiers is not None and (not isinstance(tiers, list) or not all(isinstance(t, str) for t in tiers)):
        raise ScenarioError(f"{FIELD}.tiers", 'must be a list such as ["IW-F", "IW-N"]')
    try:
        start_hour = int(spec.get("start_hour", 0))
        window_s = float(spec.get("window_s", 300))
        cv = None if spec.get("cv") is None else float(spec["cv"])
    except (TypeError, ValueError):
        raise ScenarioError(FIELD, "start_hour, window_s and cv must be numbers") from None
    entries = demand_from_frame(
        frame,
        h,
        start_hour=start_hour,
        tiers=tiers,
        statistic=spec.get("statistic", "peak"),
        window_s=window_s,
        cv=cv,
    )
    inline = list(scenario.get("demand") or [])
    have = {(e.get("model"), e.get("region")) for e in inline if isinstance(e, Mapping)}
    known_models = {d.get("model") for d in scenario.get("deployments", []) if isinstance(d, Mapping)}
    named = any(isinstance(d, Mapping) and "name" in d for d in scenario.get("deployments", []))
    regions = set(scenario.get("regions") or [])
    for e in entries:
        if (e["model"], e["region"]) in have:
            continue
        if e["region"] not in regions:
            raise ScenarioError(f"{FIELD}", f"the trace has region {e['region']!r}, which is not in regions")
        if not named and e["model"] not in known_models:
            raise ScenarioError(f"{FIELD}", f"the trace has model {e['model']!r}, which has no deployment")
        inline.append(e)
    out = dict(scenario)
    out["demand"] = inline
    out[FIELD] = {**spec, "resolved": True}
    return out
