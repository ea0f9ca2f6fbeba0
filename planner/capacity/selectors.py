"""Reads: capacity searches visible to a user, their probes, the answer's exports."""

from __future__ import annotations

import csv
import io

from planner.accounts.access import visible_to
from planner.capacity.models import CapacitySearch


def searches_for(user):
    return visible_to(user, CapacitySearch.objects.select_related("job"))


def probe_counts(search: CapacitySearch) -> dict:
    counts: dict[str, int] = {}
    for status in search.probes.values_list("status", flat=True):
        counts[status] = counts.get(status, 0) + 1
    return counts


def export_csv(search: CapacitySearch) -> str:
    """The answer's candidates in long format: one row per (candidate, KPI) with median, p5, p95, n."""
    out = io.StringIO()
    w = csv.writer(out)
    w.writerow(["candidate", "accepted", "kpi", "median", "p5", "p95", "n", "why"])
    for c in (search.answer or {}).get("candidates", []):
        for kpi in ("monthly_cost_usd", "gpu_hours", "energy_kwh"):
            b = c.get(kpi) or {}
            w.writerow([c["key"], c["accepted"], kpi, b.get("median"), b.get("p5"), b.get("p95"), b.get("n"), c["why"]])
        for s in c.get("slo", []):
            b = s["attainment"]
            w.writerow([c["key"], c["accepted"], f"attainment.{s['tier']}", b.get("median"), b.get("p5"), b.get("p95"),
                        b.get("n"), ""])
            p = s["probability"]
            w.writerow([c["key"], c["accepted"], f"p_meets.{s['tier']}>={s['target']}", p.get("p"), p.get("low"),
                        p.get("high"), p.get("n"), "Wilson 95 % interval in the p5/p95 columns"])
    return out.getvalue()


def export_pdf(search: CapacitySearch) -> bytes:
    from planner.decisions.report import build_pdf

    return build_pdf(search.answer, title=str(search))
