"""CSV / JSON export of every number of a comparison. Django-free.

CSV is long format, one number per row: ``section,variant,region,model,tier,metric,value``, so every
figure and table on the page can be rebuilt from it (timelines included).
"""

from __future__ import annotations

import csv
import io
import json

COLUMNS = ["section", "variant", "region", "model", "tier", "metric", "value"]


def _num(v):
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def iter_rows(summaries: dict[str, dict], aggregate: dict | None):
    if aggregate:
        for row in aggregate.get("rows", []):
            for metric, value in row.items():
                if _num(value):
                    yield ("savings", row["key"], "", "", "", metric, value)
            for tier, t in (row.get("tiers") or {}).items():
                for metric, value in t.items():
                    if _num(value):
                        yield ("savings", row["key"], "", "", tier, metric, value)
    yield from _fair_rows((aggregate or {}).get("fair"))
    for key, s in summaries.items():
        yield from _summary_rows(key, s)


def _summary_rows(key: str, s: dict):
    """The rows of one variant's summary: totals, endpoints, tiers, waste, timelines, hourly decisions."""
    for metric, value in (s.get("totals") or {}).items():
        if _num(value):
            yield ("totals", key, "", "", "", metric, value)
    for ep in s.get("endpoints", []):
        for metric, value in ep.items():
            if _num(value):
                yield ("endpoint", key, ep.get("region", ""), ep.get("model", ""), "", metric, value)
    for tier, t in (s.get("tiers") or {}).items():
        for metric, value in t.items():
            if _num(value):
                yield ("tier", key, "", "", tier, metric, value)
    for src, value in (s.get("waste_by_source") or {}).items():
        if _num(value):
            yield ("waste", key, "", "", "", src, value)
    tl = s.get("timeline") or {}
    t_s = tl.get("t_s") or []
    for name in ("instances", "utilisation"):
        for ep_name, series in (tl.get(name) or {}).items():
            region, _, model = ep_name.partition("/")
            for t, value in zip(t_s, series, strict=False):
                if _num(value):
                    yield (f"timeline_{name}", key, region, model, "", f"t={t:g}", value)
    for hour in s.get("decisions") or []:
        for metric, value in hour.items():
            if _num(value):
                yield ("decisions", key, hour.get("region", ""), hour.get("model", ""), "",
                       f"h{hour.get('hour', '')}:{metric}", value)


def _fair_rows(fair):
    """Per strategy, min/mean/max over seeds, savings vs the untuned and the equal-SLO tuned baseline,
    each saving next to the baseline it is against (metric ``..._baseline``, value = that variant's key)."""
    if not fair:
        return
    for r in fair.get("rows", []):
        key = r["key"]
        yield ("fair", key, "", "", "", "vs_untuned_baseline", r["vs_untuned"]["baseline"])
        yield ("fair", key, "", "", "", "vs_tuned_baseline", r["vs_tuned"].get("baseline") or "")
        stats = {"gpu_hours": r.get("gpu_hours"), "gpu_hours_above_floor": r.get("gpu_hours_above_floor"),
                 "provisioning_gpu_hours": r.get("provisioning_gpu_hours"), "niw_ttft_p95_s": r.get("niw_ttft_p95_s"),
                 "saved_gpu_hours_pct_vs_untuned": r["vs_untuned"].get("saved_gpu_hours_pct"),
                 "saved_gpu_hours_pct_vs_tuned": r["vs_tuned"].get("saved_gpu_hours_pct"),
                 # where the savings come from
                 "floor_gpu_hours": r.get("floor_gpu_hours"),
                 "gpu_hours_without_provisioning": r.get("gpu_hours_without_provisioning"),
                 f"{fair.get('model_of_interest', 'llama2-70b')}_instance_hours":
                     r.get(f"{fair.get('model_of_interest', 'llama2-70b')}_instance_hours"),
                 "niw_deferral_p95_s": r.get("niw_deferral_p95_s"), "niw_unserved_pct": r.get("niw_unserved_pct")}
        for metric, st in stats.items():
            for part, value in (st or {}).items():
                if _num(value):
                    yield ("fair", key, "", "", "", f"{metric}.{part}", value)
        for tier, st in (r.get("attainment") or {}).items():
            for part, value in st.items():
                if _num(value):
                    yield ("fair", key, "", "", tier, f"attainment.{part}", value)
        for method, n in (r.get("forecast_methods") or {}).items():  # hourly decisions per method actually run
            yield ("fair", key, "", "", "", f"forecast_decisions:{method}", n)


def to_csv(summaries: dict[str, dict], aggregate: dict | None) -> str:
    buf = io.StringIO()
    w = csv.writer(buf)
    w.writerow(COLUMNS)
    for row in iter_rows(summaries, aggregate):
        w.writerow(row)
    return buf.getvalue()


def to_json(meta: dict, summaries: dict[str, dict], aggregate: dict | None) -> str:
    return json.dumps({**meta, "aggregate": aggregate, "results": summaries}, indent=1, default=str)
