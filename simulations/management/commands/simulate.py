"""python manage.py simulate SCENARIO.json [--strategy NAME] [--mode fast|reference] [--trace FILE] [--json] [--team T]

Simulates in this process and saves the run (scenario, result, a finished job) in the team's workspace
(``--team``, default: the demo user's team), so the simulation list, its page and ``/api/simulations/``
show it; ``--no-save`` keeps nothing."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError
from django.utils import timezone

from planner.clirun import add_team_arguments, cli_team, finished_job
from simulations.engine import ScenarioError, build_workload, parse_scenario, simulate
from simulations.engine.workload import read_trace_file


class Command(BaseCommand):
    help = "Simulate a scenario JSON file with the fleet simulator, print the metrics and save the run."

    def add_arguments(self, parser):
        parser.add_argument("scenario", help="scenario JSON file (see docs/simulator.md, fixtures/scenarios/)")
        parser.add_argument("--strategy", default="", help="autoscaler overriding strategy.autoscaler")
        parser.add_argument("--mode", default="", choices=["", "fast", "reference"])
        parser.add_argument("--json", action="store_true", help="print one JSON object")
        parser.add_argument("--timeline", action="store_true", help="include the 1-minute timelines in --json")
        parser.add_argument("--name", default="", help="run name (default: the scenario's)")
        parser.add_argument("--no-save", action="store_true", help="do not store the run in the workspace")
        add_team_arguments(parser)
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
        team = user = None
        if not opts["no_save"]:
            team, user = cli_team(opts["team"], opts["user"])
        start = time.perf_counter()
        started = timezone.now()
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
        if not opts["no_save"]:
            self._save(team, user, opts, data, path, out, started)
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
        ppr = s.get("preemptions_per_request") or {}
        self.stdout.write(f"preemptions {s.get('preemptions', 0)}: {ppr.get('requests_preempted', 0)} requests preempted, "
                          f"max {ppr.get('max', 0)} per request, p99 {ppr.get('p99', 0.0):g}")
        ctx = s.get("context_limits") or {}
        if ctx.get("limits"):
            self.stdout.write(f"context limits {ctx['limits']} ({ctx['mode']}): {ctx['prompts_over_limit']} prompts over "
                              f"the limit, {ctx['outputs_cut']} outputs cut, {ctx['prompts_truncated']} prompts truncated")
        for warning in (s.get("validity") or {}).get("warnings") or []:
            self.stdout.write(f"warning: {warning}")
        for tier, t in result.tiers.items():
            self.stdout.write(f"  {tier}: {t['requests']} req, SLO attainment {t['slo_attainment']:.4f}, "
                              f"TTFT p50/p95/p99 {t['ttft']['p50']:.3f}/{t['ttft']['p95']:.3f}/{t['ttft']['p99']:.3f} s, "
                              f"E2E {t['e2e']['p50']:.2f}/{t['e2e']['p95']:.2f}/{t['e2e']['p99']:.2f} s")

    @staticmethod
    def _save(team, user, opts, data, path, result: dict, started):
        from simulations.models import SimulationRun

        stored = dict(data) if isinstance(data, dict) else data  # with --trace: workload {"frame": true}
        s = result["summary"]
        run = SimulationRun.objects.create(team=team, created_by=user, scenario=stored, strategy=opts["strategy"],
                                           mode=opts["mode"] or "fast", result=result,
                                           requests_simulated=s["requests"], wall_s=s["wall_s"],
                                           name=(opts["name"] or str(stored.get("name", path.stem)))[:200])
        run.job = finished_job(team=team, user=user, kind="simulation.run", params={"run_id": run.pk},
                               started=started, finished=timezone.now(),
                               result={"run_id": run.pk, "requests_simulated": s["requests"],
                                       "wall_s": round(s["wall_s"], 3), "gpu_hours": s["gpu_hours"]})
        run.save(update_fields=["job"])
        return run
