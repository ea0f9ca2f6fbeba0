"""python manage.py plan SCENARIO.json [--hours 24] [--json] [--solver highs|cbc] [--time-limit S] [--gap G]

Solves a scenario in this process and prints the plan, its cost, solve time and status. The plan is saved
as a row of the team (``--team``, default: the demo user's team) with a finished job, so its page, the plan
list and ``/api/plans/`` show it; ``--no-save`` keeps nothing.
"""

import json
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError
from django.utils import timezone

from planner.clirun import add_team_arguments, cli_team, finished_job
from planner.optimizer.multiperiod import solve_plan
from planner.optimizer.scenario import ScenarioError, parse_scenario
from planner.plans.services import resolve_trace_demand


class Command(BaseCommand):
    help = "Solve a capacity-plan scenario JSON and print the plan, cost, solve time and status."

    def add_arguments(self, parser):
        parser.add_argument("scenario", help="path to a scenario JSON file (see docs/optimizer.md)")
        parser.add_argument("--hours", type=int, default=None, help="override the horizon (1-168)")
        parser.add_argument("--json", action="store_true", help="print ONE JSON object (the full result)")
        parser.add_argument("--solver", choices=["highs", "cbc"], default=None)
        parser.add_argument("--time-limit", type=float, default=None, help="seconds")
        parser.add_argument("--gap", type=float, default=None, help="relative MIP gap, e.g. 0.01")
        parser.add_argument("--name", default="", help="plan name (default: the scenario's)")
        parser.add_argument("--no-save", action="store_true", help="do not store the plan in the workspace")
        add_team_arguments(parser)

    def handle(self, *args, **opts):
        path = Path(opts["scenario"])
        try:
            data = json.loads(path.read_text())
        except FileNotFoundError:
            raise CommandError(f"{path}: no such file") from None
        except json.JSONDecodeError as exc:
            raise CommandError(f"{path}: not valid JSON ({exc.msg} at line {exc.lineno})") from None
        team = user = None
        if not opts["no_save"]:
            team, user = cli_team(opts["team"], opts["user"])
        changes = {
            k: v
            for k, v in (("name", opts["solver"]), ("time_limit_s", opts["time_limit"]), ("gap_rel", opts["gap"]))
            if v is not None
        }
        try:
            if changes:  # through the scenario, so the stored scenario says how it was solved
                if not isinstance(data, dict) or not isinstance(data.get("solver") or {}, dict):
                    raise ScenarioError("solver", "must be an object")
                data = {**data, "solver": {**(data.get("solver") or {}), **changes}}
            data = resolve_trace_demand(data, team=None, hours=opts["hours"])
            sc = parse_scenario(data, hours=opts["hours"])
        except ScenarioError as exc:
            raise CommandError(f"{path}: {exc.field}: {exc.message}") from None
        started = timezone.now()
        result = solve_plan(sc)
        if not opts["no_save"]:
            self._save(team, user, opts["name"] or sc.name, data, sc.hours, result, started)
        if opts["json"]:
            self.stdout.write(json.dumps({"scenario": sc.name, **result.to_dict()}))
            return
        w = self.stdout.write
        gap = "n/a" if result.gap is None else f"{result.gap:.4%}"
        w(f"{sc.name}: {sc.hours} h, {len(sc.models)} models x {len(sc.regions)} regions x {len(sc.gpus)} GPU types")
        w(
            f"status {result.status} ({result.solver}, gap {gap}), solve {result.solve_time_s:.2f} s, "
            f"build {result.build_time_s:.2f} s, {result.size['variables']} variables"
        )
        if not result.ok:
            for sentence in result.diagnosis:
                w(sentence)
            raise CommandError(f"no plan: {result.status}")
        c = result.cost
        w(
            f"total cost ${c['total']:,.2f} (reserved ${c['reserved']:,.2f}, on-demand ${c['on_demand']:,.2f}, "
            f"spot ${c['spot']:,.2f}); static peak provisioning ${result.static_peak['total']:,.2f}"
        )
        for r in result.reserved_gpus:
            w(f"reserve {r['gpus']} x {r['gpu']} GPUs in {r['region']}")
        w("hour  model  region  gpu  instances  starts")
        for row in result.instances:
            w(f"{row['hour']:>4}  {row['model']}  {row['region']}  {row['gpu']}  {row['instances']}  {row['starts']}")
        if result.diagnosis:
            w("NOT COVERED:")
            for sentence in result.diagnosis:
                w("  " + sentence)

    @staticmethod
    def _save(team, user, name, scenario, hours, result, started):
        from planner.plans.models import CapacityPlan
        from planner.plans.services import JOB_KIND, store_result

        plan = CapacityPlan.objects.create(team=team, created_by=user, name=name[:200], scenario=scenario, hours=hours)
        store_result(plan, result)
        plan.job = finished_job(team=team, user=user, kind=JOB_KIND, params={"plan_id": plan.pk}, started=started,
                                finished=timezone.now(), result={"plan_id": plan.pk, "status": result.status,
                                                                  "total_cost": plan.total_cost})
        plan.save(update_fields=["job"])
        return plan
