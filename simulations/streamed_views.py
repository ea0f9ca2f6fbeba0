"""What a streamed run's page, CSV and API show: KPI cards, the percentile table with its error bound,
Plotly charts of the hourly rollups, and the hourly rollups as CSV.

A streamed result (``simulations.engine.streaming.stream.StreamAccumulator.to_dict``) has no per-request table, so the
per-request views of a table run (timelines, latency distributions, usage per endpoint, scaling events) are not
drawn; the page says so. Keys this module does not know (the engine may add some) are listed as they are,
never a crash: every read is a ``.get`` with a fallback.
"""

from __future__ import annotations

import csv
import io
import json
from collections import defaultdict

import plotly.graph_objects as go
from django.http import HttpResponse
from plotly.subplots import make_subplots

from planner.plotstyle import harmonise

# "usage", "hourly_endpoints" and "window" are added by the exact streamed replay (monthstream): shown when present
KNOWN_TOP = {"summary", "tiers", "hourly", "result_mode", "percentile_rel_error", "chunk_s", "usage",
             "hourly_endpoints", "window"}
CARD_KEYS = {"requests", "completed", "dropped", "chunks", "duration_s", "ttft", "e2e", "queueing", "slo_attainment",
             "gpu_hours", "serving_gpu_hours", "idle_gpu_hours", "provisioning_gpu_hours", "instance_hours",
             "cost_usd", "scale_outs", "scale_ins", "preemptions", "events", "energy_kwh", "energy_cost_usd",
             "wall_s", "requests_per_wall_s", "strategy", "mode",
             # drawn when present (the exact streamed replay adds them): energy breakdown, TBT, preemptions
             "busy_kwh", "idle_kwh", "provisioning_kwh", "energy_pue", "tbt_mean", "tbt_max",
             "scaling_waste_gpu_hours", "preemptions_per_request"}
HOURLY_COLUMNS = ["hour", "endpoint", "tier", "requests", "completed", "ttft_mean_s", "e2e_mean_s"]
METRICS = (("ttft", "TTFT"), ("e2e", "E2E"), ("queueing", "Queueing"), ("tbt_mean", "mean TBT"),
           ("tbt_max", "max TBT"))
PCTS = ("p50", "p90", "p95", "p99")
TIER_ORDER = ("IW-F", "IW-N", "NIW")  # PostgreSQL's jsonb does not keep key order


def _tiers(result: dict) -> list[tuple[str, dict]]:
    tiers = result.get("tiers") or {}
    if not isinstance(tiers, dict):
        return []
    names = [t for t in TIER_ORDER if t in tiers] + sorted(t for t in tiers if t not in TIER_ORDER)
    return [(name, tiers[name]) for name in names if isinstance(tiers[name], dict)]


def is_streamed(result: dict | None) -> bool:
    return isinstance(result, dict) and result.get("result_mode") == "streaming"


def _num(value) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def percentile_rows(result: dict) -> list[dict]:
    """One row per scope (all requests, then each tier) x metric: p50/p90/p95/p99, mean, max (None if absent)."""
    rows = []
    scopes = [("all", result.get("summary") or {})]
    scopes += _tiers(result)
    for scope, block in scopes:
        for key, label in METRICS:
            stat = block.get(key)
            if not isinstance(stat, dict):
                continue
            rows.append({"scope": scope, "metric": label, **{p: _num(stat.get(p)) for p in PCTS},
                         "mean": _num(stat.get("mean")), "max": _num(stat.get("max"))})
    return rows


def tier_rows(result: dict) -> list[dict]:
    out = []
    for name, t in _tiers(result):
        out.append({"tier": name, "requests": t.get("requests"), "completed": t.get("completed"),
                    "dropped": t.get("dropped"), "slo_attainment": t.get("slo_attainment"),
                    "drop_reasons": t.get("drop_reasons") if isinstance(t.get("drop_reasons"), dict) else {}})
    return out


def extras(result: dict) -> list[tuple[str, str]]:
    """Figures of the result this page has no card for (keys added later by the engine), as text."""
    out = []
    summary = result.get("summary") or {}
    for key in sorted(summary):
        if key not in CARD_KEYS:
            out.append((f"summary.{key}", _text(summary[key])))
    for key in sorted(result):
        if key not in KNOWN_TOP:
            out.append((key, _text(result[key])))
    return out


def _text(value) -> str:
    if isinstance(value, float):
        return f"{value:,.6g}"
    if isinstance(value, dict | list):
        text = json.dumps(value, default=str)
        return text if len(text) <= 2000 else text[:1997] + "..."
    return str(value)


def _axis(rows: list[dict]) -> tuple[float, str]:
    """Hours on the x axis up to two days, else days."""
    hours = [r["hour"] for r in rows]
    return (24.0, "simulated day") if hours and max(hours) >= 48 else (1.0, "simulated hour")


def _rows(result: dict, key: str = "hourly") -> list[dict]:
    rows = result.get(key)
    if not isinstance(rows, list):
        return []
    return [r for r in rows if isinstance(r, dict) and isinstance(r.get("hour"), int | float)]


def _two_panels(titles: tuple[str, str], series: dict, x_label: str, y_titles: tuple[str, str]) -> go.Figure:
    """Two stacked panels on one x axis; ``series``: name -> ((x, y) of the top panel, (x, y) of the bottom one),
    one legend entry per name."""
    fig = make_subplots(rows=2, cols=1, shared_xaxes=True, vertical_spacing=0.08, subplot_titles=titles)
    for name in sorted(series):
        for row, (x, y) in enumerate(series[name], start=1):
            fig.add_trace(go.Scatter(x=x, y=y, name=name, mode="lines", legendgroup=name, showlegend=row == 1),
                          row=row, col=1)
    fig.update_xaxes(title_text=x_label, row=2, col=1)
    for row, title in enumerate(y_titles, start=1):
        fig.update_yaxes(title_text=title, rangemode="tozero", row=row, col=1)
    fig.update_layout(height=640, margin=dict(l=70, r=20, t=40, b=40))
    return harmonise(fig)


def _points(pairs) -> tuple[list, list]:
    """(x, y) lists of the pairs whose y is known."""
    kept = [(x, y) for x, y in pairs if y is not None]
    return [x for x, _ in kept], [y for _, y in kept]


def hourly_figure(result: dict) -> go.Figure:
    """Requests (by arrival hour) and completions per hour, per endpoint (all tiers together)."""
    rows = _rows(result)
    req: dict[str, dict[float, float]] = defaultdict(lambda: defaultdict(float))
    comp: dict[str, dict[float, float]] = defaultdict(lambda: defaultdict(float))
    for r in rows:
        ep = str(r.get("endpoint", "?"))
        req[ep][r["hour"]] += _num(r.get("requests")) or 0.0
        comp[ep][r["hour"]] += _num(r.get("completed")) or 0.0
    per, label = _axis(rows)
    series = {}
    for ep in req:
        hours = sorted(req[ep])
        x = [h / per for h in hours]
        series[ep] = ((x, [req[ep][h] for h in hours]), (x, [comp[ep][h] for h in hours]))
    return _two_panels(("Requests per hour (by arrival hour), per endpoint",
                        "Completed requests per hour (by arrival hour), per endpoint"),
                       series, label, ("requests / h", "completed / h"))


def latency_hourly_figure(result: dict) -> go.Figure:
    """Mean TTFT and E2E per hour by tier (completions-weighted over the endpoints)."""
    rows = _rows(result)
    sums: dict[str, dict[float, list[float]]] = defaultdict(lambda: defaultdict(lambda: [0.0, 0.0, 0.0]))
    for r in rows:
        done = _num(r.get("completed")) or 0.0
        ttft, e2e = _num(r.get("ttft_mean_s")), _num(r.get("e2e_mean_s"))
        if not done or ttft is None or e2e is None:
            continue
        acc = sums[str(r.get("tier", "?"))][r["hour"]]
        acc[0] += done
        acc[1] += ttft * done
        acc[2] += e2e * done
    per, label = _axis(rows)
    series = {}
    for tier, by_hour in sums.items():
        hours = sorted(by_hour)
        x = [h / per for h in hours]
        series[tier] = ((x, [by_hour[h][1] / by_hour[h][0] for h in hours]),
                        (x, [by_hour[h][2] / by_hour[h][0] for h in hours]))
    return _two_panels(("Mean TTFT per hour, by tier (s)", "Mean E2E latency per hour, by tier (s)"),
                       series, label + " (by arrival)", ("seconds", "seconds"))


def fleet_hourly_figure(result: dict) -> go.Figure | None:
    """From ``hourly_endpoints`` (when the result has it): mean serving instances and GPU-hours per hour, per endpoint."""
    rows = _rows(result, "hourly_endpoints")
    if not rows:
        return None
    per, label = _axis(rows)
    pts: dict[str, list] = defaultdict(list)
    for r in rows:
        pts[str(r.get("endpoint", "?"))].append((r["hour"], _num(r.get("serving_mean")), _num(r.get("gpu_hours"))))
    series = {}
    for ep, rows_ep in pts.items():
        rows_ep.sort(key=lambda t: t[0])
        series[ep] = (_points((h / per, v) for h, v, _ in rows_ep), _points((h / per, g) for h, _, g in rows_ep))
    return _two_panels(("Serving instances per hour (mean), per endpoint", "GPU-hours per hour, per endpoint"),
                       series, label, ("instances", "GPU-h / h"))


def usage_rows(result: dict) -> list[dict]:
    usage = result.get("usage")
    return [u for u in usage if isinstance(u, dict)] if isinstance(usage, list) else []


def hourly_csv(result: dict) -> str:
    """The hourly rollups, one row per (hour, endpoint, tier); columns the engine adds come after the known ones."""
    rows = [r for r in (result.get("hourly") or []) if isinstance(r, dict)]
    extra = sorted({k for r in rows for k in r} - set(HOURLY_COLUMNS))
    buf = io.StringIO()
    writer = csv.writer(buf)
    writer.writerow(HOURLY_COLUMNS + extra)
    for r in rows:
        writer.writerow(["" if r.get(c) is None else (_text(r[c]) if isinstance(r[c], dict | list) else r[c])
                         for c in HOURLY_COLUMNS + extra])
    return buf.getvalue()


def hourly_csv_response(run) -> HttpResponse:
    response = HttpResponse(hourly_csv(run.result or {}), content_type="text/csv; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="simulation-{run.pk}-hourly.csv"'
    return response


def page_context(result: dict) -> dict:
    from planner.plotstyle import embed

    rel = _num(result.get("percentile_rel_error"))
    span = _num((result.get("summary") or {}).get("duration_s"))
    sim_span = "" if span is None else (f"{span / 86400:,.1f} days" if span >= 2 * 86400 else f"{span / 3600:,.1f} h")
    return {"stream": result, "summary": result.get("summary") or {}, "percentile_rows": percentile_rows(result),
            "stream_tiers": tier_rows(result), "rel_error_pct": None if rel is None else rel * 100,
            "extras": extras(result), "has_hourly": bool(_rows(result)), "sim_span": sim_span,
            "usage": usage_rows(result), "window": result.get("window") if isinstance(result.get("window"), dict) else None,
            "hourly_json": embed(hourly_figure(result)) if _rows(result) else None,
            "latency_hourly_json": embed(latency_hourly_figure(result)) if _rows(result) else None,
            "fleet_hourly_json": embed(fleet) if (fleet := fleet_hourly_figure(result)) is not None else None}
