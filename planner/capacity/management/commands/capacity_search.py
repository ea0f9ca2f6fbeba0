"""python manage.py capacity_search SCENARIO.json --strategies static,reactive-unified [--json] [--csv FILE]

Creates a capacity search (team --team, default: --user's team, else the demo user's team) and runs it through
the job system: inline in this process without Redis, or on the Celery workers with REDIS_URL set (the command
then waits). Prints the decision: what to run, its monthly cost band, the probability of each SLO.
"""

from __future__ import annotations

import json
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from planner.capacity.core.bands import fmt_band
from planner.capacity.core.spec import SpecError
from planner.capacity.models import CapacitySearch
from planner.capacity.services import start_search
from planner.clirun import add_team_arguments, cli_team, csv_list, int_list, read_json_file
from planner.jobs.cliwait import wait_for


class Command(BaseCommand):
    help = "Find the cheapest fleet per strategy that meets the SLOs at a required probability, with risk bands."

    def add_arguments(self, parser):
        parser.add_argument("scenario", help="scenario JSON file (e.g. fixtures/scenarios/small_reactive.json)")
        parser.add_argument("--strategies", default="static", help="strategies or bundles, comma-separated")
        parser.add_argument("--targets", default="", help='JSON per tier, e.g. {"IW-F": 0.99, "IW-N": 0.99}')
        parser.add_argument("--probability", type=float, default=None, help="required share of seeds (default 0.9)")
        parser.add_argument("--seeds", default="", help="search seeds, e.g. 1,2,3")
        parser.add_argument("--band-draws", type=int, default=None, help="new seeds for the bands (default 20)")
        parser.add_argument("--quota-gpus", default="", help='JSON per region, e.g. {"us-west": 96}')
        parser.add_argument("--gpu-options", default="", help='JSON per model: deployments to try')
        parser.add_argument("--disaggregated", default="",
                            help='JSON per model: also try prefill/decode pools, e.g. {"llama2-70b": {"prefill": '
                                 '["llama2-70b/h100-80gb/tp8"], "decode": ["llama2-70b/a100-80gb/tp8"]}}')
        parser.add_argument("--start-plan", type=int, default=None,
                            help="id of a solved capacity plan: start from its instance counts")
        parser.add_argument("--spec", default="", help="the whole search spec as JSON (the options above win)")
        add_team_arguments(parser)
        parser.add_argument("--name", default="")
        parser.add_argument("--json", action="store_true", help="print ONE JSON object (the answer + meta)")
        parser.add_argument("--csv", default="", help="write the candidates' bands (long CSV) here")
        parser.add_argument("--timeout", type=float, default=4 * 3600, help="seconds to wait for workers")

    def _spec(self, opts) -> dict:
        try:
            spec = json.loads(opts["spec"]) if opts["spec"] else {}
            if opts["targets"]:
                spec["targets"] = json.loads(opts["targets"])
            if opts["quota_gpus"]:
                spec["quota_gpus"] = json.loads(opts["quota_gpus"])
            if opts["gpu_options"]:
                spec["gpu_options"] = json.loads(opts["gpu_options"])
            if opts["disaggregated"]:
                spec["disaggregated"] = json.loads(opts["disaggregated"])
        except json.JSONDecodeError as exc:
            raise CommandError(f"not valid JSON: {exc}") from None
        spec["strategies"] = csv_list(opts["strategies"]) or spec.get("strategies") or ["static"]
        if opts["probability"] is not None:
            spec["probability"] = opts["probability"]
        if opts["band_draws"] is not None:
            spec["band_draws"] = opts["band_draws"]
        if opts["seeds"]:
            spec["seeds"] = int_list(opts["seeds"], "--seeds")
        if opts["start_plan"] is not None:
            spec["start_plan"] = opts["start_plan"]
        return spec

    def handle(self, *args, **opts):
        from simulations.engine import ScenarioError

        path = Path(opts["scenario"])
        scenario = read_json_file(path, "scenario file")
        team, user = cli_team(opts["team"], opts["user"])
        try:
            search = start_search(team=team, user=user, scenario=scenario, spec=self._spec(opts),
                                  name=opts["name"] or scenario.get("name", path.stem))
        except ScenarioError as exc:
            raise CommandError(f"{path}: {exc.field}: {exc.message}") from None
        except SpecError as exc:
            raise CommandError(f"{exc.where}: {exc.message}" + (f" ({exc.hint})" if exc.hint else "")) from None
        pk = search.pk
        search = wait_for(lambda: CapacitySearch.objects.select_related("job").get(pk=pk),
                          what=f"capacity search {pk}", url=f"/capacity/{pk}/", timeout_s=opts["timeout"],
                          stderr=self.stderr)
        if opts["csv"]:
            from planner.capacity.selectors import export_csv

            Path(opts["csv"]).write_text(export_csv(search))
        answer = search.answer or {}
        if opts["json"]:
            self.stdout.write(json.dumps({"search": search.pk, "status": search.status, "steps": search.round,
                                          "probes": search.probes.count(), "answer": answer}, default=str))
            return
        self.stdout.write(f"capacity search {search.pk}: {search.status}, {search.round} steps, "
                          f"{search.probes.count()} simulations")
        self.stdout.write(answer.get("headline", (search.job.last_error or {}).get("message", "no answer")))
        for c in answer.get("candidates", []):
            fleet = ", ".join(f"{r['region']}/{r['model']}" + (f" {r['pool']}" if r.get("pool") else "")
                              + f"={r['count']}" for r in c["fleet"])
            slo = " ".join(f"P({s['tier']})={s['probability']['p']:.2f}" for s in c["slo"] if s["probability"]["n"])
            self.stdout.write(f"  {c['key']:28} {'ok ' if c['accepted'] else 'no '} "
                              f"{fmt_band(c['monthly_cost_usd'], '${:,.0f}'):>36} /month  {slo}  {fleet}"
                              + (f"  ({c['why']})" if c["why"] else ""))
        if answer.get("serving"):
            self.stdout.write(f"  serving: {answer['serving']['verdict']}")
        for s in answer.get("sensitivity", []):
            self.stdout.write(f"  sensitivity {s['input']}: {s['effect']}")
