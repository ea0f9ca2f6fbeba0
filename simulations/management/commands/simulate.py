"""python manage.py simulate SCENARIO.json [--strategy NAME] [--mode fast|reference] [--trace FILE] [--json] [--team T]
       [--stream [--chunk-s S]]

Simulates in this process and saves the run (scenario, result, a finished job) in the team's workspace
(``--team``, default: the demo user's team), so the simulation list, its page and ``/api/simulations/``
show it; ``--no-save`` keeps nothing. ``--stream``: result mode ``streaming`` (simulations/streaming.py):
replayed in chunks of ``--chunk-s`` simulated seconds in bounded memory, the accumulated result saved as a streamed
run (its page shows KPI cards, percentiles and hourly charts); the streaming caps PLANNER_MAX_STREAM_* apply."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError
from django.utils import timezone

from planner.clirun import add_team_arguments, cli_team, finished_job
from simulations.engine import ScenarioError, build_workload, parse_scenario, simulate


class Command(BaseCommand):
    help = "Simulate a scenario JSON file with the fleet simulator, print the metrics and save the run."
    # No system checks before a run: they load every URL module, view and serializer of the project (about
    # as long as the run itself); the checks run with migrate, runserver, check and the tests.
    requires_system_checks = []

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
        parser.add_argument("--stream", action="store_true", help="streamed run (result mode streaming): bounded "
                            "memory, accumulated results (month scale)")
        parser.add_argument("--chunk-s", type=float, default=None,
                            help="with --stream: simulated seconds per chunk (default 3600)")

    def handle(self, *args, **opts):
        path = Path(opts["scenario"])
        try:
            data = json.loads(path.read_text())
        except OSError as exc:
            raise CommandError(f"cannot read {path}: {exc}") from None
        except ValueError as exc:
            raise CommandError(f"{path} is not valid JSON: {exc}") from None
        if opts["chunk_s"] is not None and not opts["stream"]:
            raise CommandError("--chunk-s applies only with --stream")
        team = user = None
        if not opts["no_save"]:
            team, user = cli_team(opts["team"], opts["user"])
        if opts["stream"]:
            return self._stream(data, path, opts, team, user)
        start = time.perf_counter()
        started = timezone.now()
        try:
            if opts["trace"]:  # the operator's own file, read by the engine's trace reader
                keep = ("rate_scale", "limit", "model", "region", "tier")
                wl = data.get("workload") if isinstance(data, dict) and isinstance(data.get("workload"), dict) else {}
                data = {**data, "workload": {**{k: v for k, v in wl.items() if k in keep}, "frame": True}}
            scenario = parse_scenario(data)
            engine = {"mode": opts["mode"]} if opts["mode"] else {}
            scenario = scenario.with_strategy(opts["strategy"] or None, **engine)
            workload = build_workload(scenario, trace=Path(opts["trace"]) if opts["trace"] else None)
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
        pc = s.get("prefix_cache")
        self.stdout.write(f"prefix cache hit rate {pc['hit_rate']:.1%} ({pc['hit_tokens']:,} of {pc['queried_tokens']:,} "
                          f"prompt tokens)" if pc else "prefix cache off (no deployment caches prefixes)")
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

    def _stream(self, data, path: Path, opts, team, user):
        """--stream: parse with the streaming caps, replay chunk by chunk, save the accumulated result."""
        from planner.limits import stream_limits
        from simulations.engine.scenario.runoptions import parse_result_options
        from simulations.streaming import StreamStopped, execute_stream

        started = timezone.now()
        try:
            option = {"mode": "streaming"} if opts["chunk_s"] is None else {"mode": "streaming",
                                                                            "chunk_s": opts["chunk_s"]}
            options = parse_result_options(option)
            trace = None
            if opts["trace"]:  # the operator's own file: Parquet is read in row batches
                keep = ("rate_scale", "limit", "model", "region", "tier")
                wl = data.get("workload") if isinstance(data, dict) and isinstance(data.get("workload"), dict) else {}
                data = {**data, "workload": {**{k: v for k, v in wl.items() if k in keep}, "frame": True}}
                trace = Path(opts["trace"])
                if not trace.is_file():
                    raise CommandError(f"cannot read {trace}: no such file")
            scenario = parse_scenario(data, limits=stream_limits())
            engine = {"mode": opts["mode"]} if opts["mode"] else {}
            scenario = scenario.with_strategy(opts["strategy"] or None, **engine)
            progress = None
            if not opts["json"]:
                def progress(fraction, message):
                    sys.stderr.write(f"\r{fraction * 100:5.1f}% {message}   ")
            span = None
            if trace is not None and trace.suffix.lower() == ".parquet":
                import pyarrow.parquet as pq

                col = pq.read_table(trace, columns=["arrival_s"]).column(0)
                span = float(col[-1].as_py() - col[0].as_py()) if len(col) else 0.0
            out = execute_stream(scenario, chunk_s=options.chunk, trace_path=trace, span_s=span,
                                 progress=progress)
        except ScenarioError as exc:
            hint = f" ({exc.hint})" if exc.hint else ""
            raise CommandError(f"{'' if exc.field.startswith('result') else 'scenario field '}{exc.field}: "
                               f"{exc.message}{hint}") from None
        except StreamStopped as exc:
            raise CommandError(f"{exc.message} ({exc.hint})") from None
        run = None
        if not opts["no_save"]:
            run = self._save(team, user, opts, data, path, out, started, result_mode="streaming",
                             chunk_s=options.chunk)
        if opts["json"]:
            self.stdout.write(json.dumps(out))
            return
        sys.stderr.write("\n")
        s = out["summary"]
        self.stdout.write(f"{scenario.name}: {s['requests']:,} requests streamed in {s['chunks']} chunks of "
                          f"{options.chunk:g} s, {s['wall_s']:.2f} s ({s['requests_per_wall_s']:,.0f} req/s), "
                          f"strategy {s['strategy']}, mode {s['mode']}")
        self.stdout.write(f"completed {s['completed']:,}, dropped {s['dropped']:,}; SLO attainment "
                          f"{_fmt(s.get('slo_attainment'), '.4f')}; GPU-hours {_fmt(s.get('gpu_hours'), ',.2f')}; "
                          f"cost ${_fmt(s.get('cost_usd'), ',.0f')}; energy {_fmt(s.get('energy_kwh'), ',.1f')} kWh")
        rel = out.get("percentile_rel_error")
        for tier, t in out.get("tiers", {}).items():
            self.stdout.write(f"  {tier}: {t['requests']:,} req, TTFT p50/p95/p99 {_fmt(t['ttft'].get('p50'), '.3f')}/"
                              f"{_fmt(t['ttft'].get('p95'), '.3f')}/{_fmt(t['ttft'].get('p99'), '.3f')} s, E2E "
                              f"{_fmt(t['e2e'].get('p50'), '.2f')}/{_fmt(t['e2e'].get('p95'), '.2f')}/"
                              f"{_fmt(t['e2e'].get('p99'), '.2f')} s")
        self.stdout.write(f"percentiles from log histograms, within {_fmt(rel, '.1%')} relative of the exact ones")
        if run is not None:
            self.stdout.write(f"saved as simulation #{run.pk} (/simulations/{run.pk}/)")

    @staticmethod
    def _save(team, user, opts, data, path, result: dict, started, result_mode: str = "table", chunk_s=None):
        from simulations.models import SimulationRun

        stored = dict(data) if isinstance(data, dict) else data  # with --trace: workload {"frame": true}
        s = result["summary"]
        run = SimulationRun.objects.create(team=team, created_by=user, scenario=stored, strategy=opts["strategy"],
                                           mode=opts["mode"] or "fast", result=result, result_mode=result_mode,
                                           chunk_s=chunk_s,
                                           requests_simulated=s["requests"], wall_s=s["wall_s"],
                                           name=(opts["name"] or str(stored.get("name", path.stem)))[:200])
        run.job = finished_job(team=team, user=user, kind="simulation.run", params={"run_id": run.pk},
                               started=started, finished=timezone.now(),
                               result={"run_id": run.pk, "requests_simulated": s["requests"],
                                       "wall_s": round(s["wall_s"], 3), "gpu_hours": s["gpu_hours"],
                                       **({"result_mode": result_mode} if result_mode != "table" else {})})
        run.save(update_fields=["job"])
        return run


def _fmt(value, spec: str) -> str:
    return "n/a" if value is None else format(value, spec)
