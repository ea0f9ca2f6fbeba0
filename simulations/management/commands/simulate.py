"""python manage.py simulate SCENARIO.json [--strategy NAME] [--mode fast|reference] [--trace FILE] [--json]"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from simulations.engine import ScenarioError, build_workload, parse_scenario, simulate
from simulations.engine.workload import read_trace_file


class Command(BaseCommand):
    help = "Simulate a scenario JSON file with the fleet simulator (no database row; prints the metrics)."

    def add_arguments(self, parser):
        parser.add_argument("scenario", help="scenario JSON file (see docs/simulator.md, fixtures/scenarios/)")
        parser.add_argument("--strategy", default="", help="autoscaler overriding strategy.autoscaler")
        parser.add_argument("--mode", default="", choices=["", "fast", "reference"])
        parser.add_argument("--json", action="store_true", help="print one JSON object")
        parser.add_argument("--timeline", action="store_true", help="include the 1-minute timelines in --json")
        parser.add_argument("--trace", default="", help="a trace file on this machine (Parquet, CSV, JSONL) "
                            "replacing the scenario's workload source; scenarios themselves never name files")

    def handle(self, *args, **opts):
        path = Path(opts["scenario"])
        try:
            data = json.loads(path.read_text())
        except OSError as exc:
            raise CommandError(f"cannot read {path}: {exc}") from None
        except ValueError as exc:
            raise CommandError(f"{path} is not valid JSON: {exc}") from None
        start = time.perf_counter()
        frame = None
        try:
            if opts["trace"]:  # the operator's own file: read here, handed to the engine as a frame
                keep = ("rate_scale", "limit", "model", "region", "tier")
                wl = data.get("workload") if isinstance(data, dict) and isinstance(data.get("workload"), dict) else {}
                data = {**data, "workload": {**{k: v for k, v in wl.items() if k in keep}, "frame": True}}
                frame = read_trace_file(Path(opts["trace"]))
            scenario = parse_scenario(data)
            engine = {"mode": opts["mode"]} if opts["mode"] else {}
            scenario = scenario.with_strategy(opts["strategy"] or None, **engine)
            workload = build_workload(scenario, frame=frame)
        except ScenarioError as exc:
            hint = f" ({exc.hint})" if exc.hint else ""
            raise CommandError(f"scenario field {exc.field}: {exc.message}{hint}") from None
        progress = None
        if not opts["json"]:
            def progress(fraction, message):
                sys.stderr.write(f"\r{fraction * 100:5.1f}% {message}   ")

        result = simulate(scenario, workload, progress=progress)
        wall = time.perf_counter() - start
        out = result.to_dict()
        if not opts["timeline"]:
            out.pop("timeline")
            out.pop("histograms")
        out["requests_simulated"] = result.summary["requests"]
        out["wall_s"] = round(wall, 3)
        out["simulate_wall_s"] = round(result.summary["wall_s"], 3)
        if opts["json"]:
            self.stdout.write(json.dumps(out))
            return
        s = result.summary
        sys.stderr.write("\n")
        self.stdout.write(f"{scenario.name}: {s['requests']} requests in {wall:.2f} s "
                          f"({s['requests'] / max(wall, 1e-9):,.0f} req/s), strategy {s['strategy']}, mode {s['mode']}")
        self.stdout.write(f"GPU-hours {s['gpu_hours']:.2f} (serving {s['serving_gpu_hours']:.2f}, idle "
                          f"{s['idle_gpu_hours']:.2f}, provisioning {s['provisioning_gpu_hours']:.2f}); "
                          f"cost ${s['cost_usd']:.0f}; scale-outs {s['scale_outs']}, scale-ins {s['scale_ins']}")
        if s.get("energy_kwh") is not None:
            self.stdout.write(f"energy {s['energy_kwh']:,.1f} kWh (busy {s['busy_kwh']:,.1f}, idle {s['idle_kwh']:,.1f}, "
                              f"provisioning {s['provisioning_kwh']:,.1f}), ${s['energy_cost_usd']:,.2f} of electricity")
        for warning in (s.get("validity") or {}).get("warnings") or []:
            self.stdout.write(f"warning: {warning}")
        for tier, t in result.tiers.items():
            self.stdout.write(f"  {tier}: {t['requests']} req, SLO attainment {t['slo_attainment']:.4f}, "
                              f"TTFT p50/p95/p99 {t['ttft']['p50']:.3f}/{t['ttft']['p95']:.3f}/{t['ttft']['p99']:.3f} s, "
                              f"E2E {t['e2e']['p50']:.2f}/{t['e2e']['p95']:.2f}/{t['e2e']['p99']:.2f} s")
