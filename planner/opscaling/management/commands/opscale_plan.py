"""python manage.py opscale_plan SPEC.json [--json]  |  --trace FILE --model M --gpu G [--ttft S] [--tbt S] ...

Computes an operator-level plan in-process and prints it (nothing stored), or with ``--team`` stores it
and queues the job for the workers (the trace must then be one of the team's: ``--trace-id``).
"""

import json
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from planner.opscale.spec import SpecError, parse_spec


class Command(BaseCommand):
    help = "Plan operator-level autoscaling for a trace against model-level scaling ('From Models to Operators')."

    def add_arguments(self, parser):
        parser.add_argument("spec", nargs="?", help="a spec JSON file (docs/opscale.md); or use the flags below")
        parser.add_argument("--trace", help="trace file (any format the ingest reads, or a normalised .parquet)")
        parser.add_argument("--trace-id", type=int, help="one of the team's traces (with --team)")
        parser.add_argument("--model", default="llama-3-8b")
        parser.add_argument("--gpu", default="a100")
        parser.add_argument("--ttft", type=float, default=None, help="TTFT SLO, seconds (default: 5 x unloaded)")
        parser.add_argument("--tbt", type=float, default=None, help="TBT SLO, seconds (default: 5 x unloaded)")
        parser.add_argument("--window", type=float, default=60.0, help="window length, seconds")
        parser.add_argument("--no-sweeps", action="store_true", help="skip the QPS/length sweeps and the ILP")
        parser.add_argument(
            "--no-fallback",
            action="store_true",
            help="keep operator-level placements that need more GPUs than model-level (the paper's algorithm)",
        )
        parser.add_argument("--team", help="store the plan for this team and queue it for the workers")
        parser.add_argument("--json", action="store_true", help="print ONE JSON object")
        parser.add_argument("--pdf", help="also write the operator-level PDF report to this path")

    def _spec(self, opts) -> dict:
        if opts["spec"]:
            path = Path(opts["spec"])
            try:
                return json.loads(path.read_text())
            except FileNotFoundError:
                raise CommandError(f"{path}: no such file") from None
            except json.JSONDecodeError as exc:
                raise CommandError(f"{path}: not valid JSON ({exc.msg} at line {exc.lineno})") from None
        workload = {"window_s": opts["window"]}
        if opts["trace_id"]:
            workload["trace_id"] = opts["trace_id"]
        elif opts["trace"]:
            workload["path"] = opts["trace"]
        else:
            raise CommandError("give a spec file, --trace FILE or --trace-id N")
        slo = {k: v for k, v in (("ttft_s", opts["ttft"]), ("tbt_s", opts["tbt"])) if v is not None}
        spec = {"model": opts["model"], "gpu": opts["gpu"], "slo": slo, "workload": workload}
        if opts["no_sweeps"]:
            spec.update(sweeps=False, ilp=False)
        if opts["no_fallback"]:
            spec["options"] = {"fallback_model_level": False}
        return spec

    def handle(self, *args, **opts):
        data = self._spec(opts)
        try:
            spec = parse_spec(data)
            if opts["team"]:
                return self._queue(data, opts)
            from planner.opscale.plan import run_plan
            from planner.opscaling.services import load_frame

            frame = load_frame(spec)
            result = run_plan(spec, frame)
        except SpecError as exc:
            raise CommandError(f"{exc.field}: {exc.message}") from None
        except ValueError as exc:
            raise CommandError(str(exc)) from None
        if opts["pdf"]:
            from planner.opscale.report import build_pdf

            Path(opts["pdf"]).write_bytes(
                build_pdf(result, f"Operator-level plan: {spec.name or spec.model + ' on ' + spec.gpu}")
            )
        if opts["json"]:
            self.stdout.write(json.dumps({k: v for k, v in result.items() if k != "timeline"}, default=float))
            return
        w = self.stdout.write
        t = result["typical"]
        w(
            f"{spec.model} on {spec.gpu}{' (derived profile)' if result['derived_profile'] else ''}: {result['windows']} windows "
            f"of {spec.workload.window_s:g} s, typical {t['qps']:.2f} QPS, {t['length']:.0f}-token inputs, {t['out_tokens']:.0f} output tokens"
        )
        for phase in ("prefill", "decode"):
            tot = result["totals"][phase]
            w(f"{phase}: model-level {tot['model_level']['gpu_s'] / 3600:.2f} GPU-h")
            for s in ("operator_level", "default_stream", "static_p95"):
                sv = tot[s]["savings_vs_model_level"]
                parts = ", ".join(f"{k} {v:+.1%}" for k, v in sv.items() if v is not None)
                w(f"  {s}: {tot[s]['gpu_s'] / 3600:.2f} GPU-h; savings {parts}")
            if tot.get("fallback_windows"):
                w(f"  ({tot['fallback_windows']} of {tot['windows']} windows fell back to the model-level placement)")
        if result["infeasible_windows"]:
            w(
                f"WARNING: {result['infeasible_windows']} window-phases cannot meet their SLO and are left out of the "
                f"totals above: {result['infeasible_reason']}"
            )
        w(f"computed in {result['runtime_s']:.1f} s")

    def _queue(self, data, opts):
        from planner.accounts.models import Team
        from planner.opscaling.services import create_operator_plan

        team = Team.objects.filter(name=opts["team"]).first()
        if team is None:
            raise CommandError(f"no team {opts['team']!r}")
        plan = create_operator_plan(team=team, user=None, spec=data)
        plan.refresh_from_db()
        out = {"operator_plan_id": plan.pk, "job_id": plan.job_id, "job_status": plan.job.status}
        self.stdout.write(
            json.dumps(out)
            if opts["json"]
            else f"operator-level plan #{plan.pk} queued as job #{plan.job_id} ({plan.job.status})"
        )
