"""python manage.py validate RUN... [--deployment ID_OR_NAME | --calibrate] [--seeds 3] [--json]

Re-simulates benchmark runs (ids) and prints measured vs simulated per stage (TTFT and E2E mean / p90 / p99, the
per-token time) with absolute percentage errors, then one JSON summary line (pooled medians). ``--deployment``
uses that catalogue deployment's latency model (its physics coefficients if it was calibrated); the validation
is stored and shows on the deployment's validation page.
"""

from __future__ import annotations

import json

from django.core.management.base import BaseCommand, CommandError

from planner.benchmarks import services
from planner.benchmarks.core.errors import BenchmarkError
from planner.clirun import add_team_arguments, cli_team
from planner.hardware.models import Deployment
from planner.hardware.selectors import deployment_by_name


def _pct(x) -> str:
    return "   -  " if x is None else f"{x:6.1f}"


def _hit(x) -> str:
    return "  off" if x is None else f"{100 * x:4.1f}%"


def table(rows: list[dict]) -> list[str]:
    out = [f"{'run':44s} st  rate | TTFT mean meas/sim ms  err% |  p90% |  p99% | E2E mean meas/sim s  err% |"
           f"  p90% |  p99% | tok ms meas/sim  err% | prefix hit"]
    for r in rows:
        m, s, e = r["measured"], r["simulated"], r["error_pct"]
        tok_m = f"{1e3 * m['per_token']:.2f}" if m["per_token"] else "-"
        out.append(f"{r['run'][:44]:44s} {r['stage']:2d} {r['rate'] or 0:5.1f} | {1e3 * m['ttft_mean']:9.1f}/"
                   f"{1e3 * s['ttft_mean']:9.1f} {_pct(e['ttft_mean'])} |{_pct(e['ttft_p90'])} |{_pct(e['ttft_p99'])} | "
                   f"{m['e2e_mean']:8.3f}/{s['e2e_mean']:8.3f} {_pct(e['e2e_mean'])} |{_pct(e['e2e_p90'])} |"
                   f"{_pct(e['e2e_p99'])} | {tok_m}/{1e3 * s['per_token']:.2f} {_pct(e['per_token'])} | "
                   f"{_hit(r.get('prefix_hit_rate'))}{'  overloaded (not scored)' if r['overloaded'] else ''}")
    return out


class Command(BaseCommand):
    help = "Measured vs simulated for benchmark runs: a table per stage and a JSON summary."

    def add_arguments(self, parser):
        parser.add_argument("runs", nargs="+", type=int, help="benchmark run ids (manage.py import_benchmark)")
        parser.add_argument("--deployment", default="", help="deployment id or name (default: each run's "
                                                            "newest calibrated deployment, else its catalogue one)")
        parser.add_argument("--seeds", type=int, default=3, help="arrival seeds per run")
        add_team_arguments(parser)
        parser.add_argument("--json", action="store_true", help="print only the JSON summary")

    def _deployment(self, team, value: str) -> Deployment:
        dep = (Deployment.objects.filter(pk=int(value)).first() if value.isdigit()
               else deployment_by_name(team, value))
        if dep is None or not (dep.builtin or dep.team_id == team.pk):
            raise CommandError(f"--deployment: no deployment {value!r} your team can use")
        return dep

    def handle(self, *args, **opts):
        team, user = cli_team(opts["team"], opts["user"])
        try:
            runs = services.runs_of(team, opts["runs"])
        except BenchmarkError as exc:
            raise CommandError(f"{exc.where}: {exc.message}") from None
        dep = self._deployment(team, opts["deployment"]) if opts["deployment"] else None
        groups: dict = {}
        for r in runs:
            d = dep or services.default_deployment(team, r)
            if d is None:
                raise CommandError(f"run #{r.pk} ({r.model_name} on {r.gpu_name} x{r.tp}): no deployment to "
                                   "validate with; give --deployment, or calibrate one (POST /api/benchmarks/runs/"
                                   "calibrate/)")
            groups.setdefault(d.pk, (d, []))[1].append(r)
        summaries = []
        for d, group in groups.values():
            try:
                v = services.validate(team, user, group, deployment=d, seeds=opts["seeds"])
            except BenchmarkError as exc:
                raise CommandError(f"{exc.where}: {exc.message}") from None
            if not opts["json"]:
                self.stdout.write(f"deployment {d.name} (#{d.pk}), validation #{v.pk}:")
                for line in table(v.rows):
                    self.stdout.write(line)
            summaries.append({"deployment": d.name, "deployment_id": d.pk, "validation_id": v.pk,
                              "runs": [r.pk for r in group], "pooled": v.pooled})
        self.stdout.write(json.dumps({"ok": True, "validations": summaries}))
