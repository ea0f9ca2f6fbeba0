"""python manage.py plan SCENARIO.json [--hours 24] [--json] [--solver highs|cbc] [--time-limit S] [--gap G]

Solves a scenario in-process (no job, nothing stored) and prints the plan, its cost, solve time and status.
"""

import dataclasses
import json
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

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

    def handle(self, *args, **opts):
        path = Path(opts["scenario"])
        try:
            data = json.loads(path.read_text())
        except FileNotFoundError:
            raise CommandError(f"{path}: no such file") from None
        except json.JSONDecodeError as exc:
            raise CommandError(f"{path}: not valid JSON ({exc.msg} at line {exc.lineno})") from None
        try:
            data = resolve_trace_demand(data, hours=opts["hours"])
            sc = parse_scenario(data, hours=opts["hours"])
        except ScenarioError as exc:
            raise CommandError(f"{path}: {exc.field}: {exc.message}") from None
        changes = {
            k: v
            for k, v in (("solver", opts["solver"]), ("time_limit_s", opts["time_limit"]), ("gap_rel", opts["gap"]))
            if v is not None
        }
        if changes:
            sc = dataclasses.replace(sc, **changes)
        result = solve_plan(sc)
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
