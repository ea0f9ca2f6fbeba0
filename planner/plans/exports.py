"""CSV export of a solved plan: one row per (hour, model, region, GPU type) with instances and starts,
joined with the endpoint's forecast, covered target, capacity, rerouting and shortfall."""

from __future__ import annotations

import csv
import io

COLUMNS = [
    "hour",
    "model",
    "region",
    "gpu",
    "instances",
    "starts",
    "forecast_tps",
    "target_tps",
    "capacity_tps",
    "rerouted_in_tps",
    "rerouted_out_tps",
    "shortfall_tps",
]


def plan_csv(result: dict) -> str:
    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow(COLUMNS)
    coverage = {(c["hour"], c["model"], c["region"]): c for c in result.get("coverage", [])}
    seen = set()
    for row in sorted(result.get("instances", []), key=lambda r: (r["hour"], r["model"], r["region"], r["gpu"])):
        c = coverage.get((row["hour"], row["model"], row["region"]), {})
        seen.add((row["hour"], row["model"], row["region"]))
        writer.writerow(
            [
                row["hour"],
                row["model"],
                row["region"],
                row["gpu"],
                row["instances"],
                row["starts"],
                c.get("forecast", ""),
                c.get("target", ""),
                c.get("capacity", ""),
                c.get("rerouted_in", ""),
                c.get("rerouted_out", ""),
                c.get("shortfall", ""),
            ]
        )
    for key, c in sorted(coverage.items()):  # endpoints with demand but no instances (uncovered or rerouted)
        if key not in seen and (c.get("target") or c.get("shortfall")):
            writer.writerow(
                [
                    c["hour"],
                    c["model"],
                    c["region"],
                    "",
                    0,
                    0,
                    c["forecast"],
                    c["target"],
                    c["capacity"],
                    c["rerouted_in"],
                    c["rerouted_out"],
                    c["shortfall"],
                ]
            )
    return out.getvalue()
