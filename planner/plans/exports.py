"""CSV export of a solved plan: one row per (hour, model, region, GPU type) with instances and starts,
joined with the endpoint's forecast, covered target, capacity, rerouting and shortfall. A disaggregated
endpoint's pools are rows of their own, the model written "m (prefill pool)" / "m (decode pool)"."""

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


def model_label(row: dict) -> str:
    """A row's model, with its pool when the endpoint is disaggregated ("m (prefill pool)")."""
    return f"{row['model']} ({row['pool']} pool)" if row.get("pool") else row["model"]


def plan_csv(result: dict) -> str:
    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow(COLUMNS)
    coverage = {(c["hour"], model_label(c), c["region"]): c for c in result.get("coverage", [])}
    seen = set()
    for row in sorted(result.get("instances", []), key=lambda r: (r["hour"], model_label(r), r["region"], r["gpu"])):
        c = coverage.get((row["hour"], model_label(row), row["region"]), {})
        seen.add((row["hour"], model_label(row), row["region"]))
        writer.writerow(
            [
                row["hour"],
                model_label(row),
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
                    model_label(c),
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
