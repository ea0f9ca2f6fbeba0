"""python manage.py compare SCENARIO.json --strategies reactive-unified,lt-i,lt-u,lt-ua [--json] [--pdf FILE]

Bundles: ``--bundles sageserve-code.lt-ua,...`` (named strategy bundles; ``--list-bundles`` prints them),
``--seeds 2025,2026,2027`` (every run once per workload seed, figures as min/mean/max) and ``--tune``
(sweep the baseline's knobs as child jobs and report savings against the cheapest baseline variant with at
least the strategy's SLO attainment per tier, beside the savings against the untuned baseline).

Creates a Comparison row (team --team, default: --user's team, else the demo user's team) and runs it through the job system: inline in
this process without Redis, or on the Celery workers with REDIS_URL set (the command then waits).
"""

from __future__ import annotations

import json
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from planner.capacity.core.bands import fmt_band
from planner.clirun import add_team_arguments, cli_team
from planner.comparisons import kinds
from planner.comparisons.models import Comparison
from planner.jobs.cliwait import wait_for


def _csv_list(value: str) -> list[str]:
    return [x.strip() for x in (value or "").split(",") if x.strip()]


def _read_scenario(name: str) -> tuple[Path, dict]:
    if not name:
        raise CommandError("give a scenario JSON file (or --list-bundles)")
    path = Path(name)
    if not path.exists():
        raise CommandError(f"{path}: no such scenario file")
    try:
        return path, json.loads(path.read_text())
    except json.JSONDecodeError as exc:
        raise CommandError(f"{path}: not valid JSON ({exc})") from None


def _request(opts: dict, scenario: dict, path: Path) -> dict:
    """The comparison request the command line describes (parsed by the same parser as the form and the API)."""
    try:
        defaults = kinds.kind_of(scenario).default_choices
    except kinds.RequestError:
        defaults = ()  # the request parser names the bad field
    strategies = _csv_list(opts["strategies"]) or ([] if opts["bundles"] else list(defaults))
    tune = None
    if opts["tune"]:
        try:
            tune = {} if opts["tune"] == "default" else json.loads(opts["tune"])
        except json.JSONDecodeError as exc:
            raise CommandError(f"--tune: not valid JSON ({exc})") from None
        tune = {"tolerance": opts["tolerance"], **(tune or {})} if isinstance(tune, dict) else tune
    try:
        knobs = json.loads(opts["knobs"]) if opts["knobs"] else {}
        projection = json.loads(opts["projection"]) if opts["projection"] else {}
    except json.JSONDecodeError as exc:
        raise CommandError(f"--knobs / --projection: not valid JSON ({exc})") from None
    if knobs:
        sp = scenario.setdefault("strategy_params", {})
        for s in strategies:
            sp[s] = {**sp.get(s, {}), **knobs}
    return {"scenario": scenario, "strategies": strategies, "bundles": opts["bundles"], "seeds": opts["seeds"],
            "tune": tune, "schedulers": opts["schedulers"], "baseline": opts["baseline"],
            "name": opts["name"] or scenario.get("name", path.stem), "projection": projection}


class Command(BaseCommand):
    help = "Compare scaling strategies on one scenario: savings vs a baseline with SLO attainment."

    def add_arguments(self, parser):
        parser.add_argument("scenario", nargs="?", default="",
                            help="scenario JSON file (e.g. fixtures/scenarios/sageserve_day.json)")
        parser.add_argument("--strategies", default="",
                            help="default reactive-unified,lt-i,lt-u,lt-ua (unless --bundles is given)")
        parser.add_argument("--bundles", default="", help="named strategy bundles, e.g. sageserve-code.reactive-unified")
        parser.add_argument("--list-bundles", action="store_true", help="print the registered bundles and exit")
        parser.add_argument("--seeds", default="", help="workload seeds, e.g. 2025,2026,2027 (each run once per seed)")
        parser.add_argument("--tune", nargs="?", const="default", default="",
                            help='equal-SLO baseline sweep: "default" or JSON {"base": ..., "grid": {...}}')
        parser.add_argument("--tolerance", type=float, default=0.005,
                            help="with --tune: attainment a tuned baseline may fall short by (share, default 0.005)")
        parser.add_argument("--schedulers", default="", help="e.g. fcfs,edf,pf,dpa: every strategy once per scheduler")
        parser.add_argument("--baseline", default="", help="variant key or strategy (default reactive-unified)")
        parser.add_argument("--knobs", default="", help='JSON merged into every strategy\'s params, e.g. {"beta_fraction": 0.2}')
        parser.add_argument("--projection", default="", help='JSON, e.g. {"models": 3, "regions": 4}')
        add_team_arguments(parser)
        parser.add_argument("--name", default="")
        parser.add_argument("--json", action="store_true", help="print ONE JSON object (the aggregate + meta)")
        parser.add_argument("--pdf", default="", help="write the PDF cost report here")
        parser.add_argument("--csv", default="", help="write every number (long CSV) here")
        parser.add_argument("--timeout", type=float, default=4 * 3600, help="seconds to wait for workers")

    def handle(self, *args, **opts):
        if opts["list_bundles"]:
            from planner.comparisons.core.bundles import bundle_names, get_bundle

            for name in bundle_names():
                self.stdout.write(f"{name:34} {get_bundle(name).description}")
            return
        path, scenario = _read_scenario(opts["scenario"])
        data = _request(opts, scenario, path)
        team, user = cli_team(opts["team"], opts["user"])
        try:
            kind, request = kinds.parse_request(data, base_dir=str(path.resolve().parent))
            comp = kind.start(team=team, user=user, request=request)
        except kinds.RequestError as exc:
            hint = f" ({exc.hint})" if exc.hint else ""
            raise CommandError(f"{path}: {exc.field}: {exc.message}{hint}") from None
        pk = comp.pk
        comp = wait_for(lambda: Comparison.objects.select_related("job").get(pk=pk), what=f"comparison {pk}",
                        url=f"/comparisons/{pk}/", timeout_s=opts["timeout"], stderr=self.stderr)
        if opts["pdf"] and comp.summary.get("rows"):
            Path(opts["pdf"]).write_bytes(kinds.export_pdf(comp))
        if opts["csv"]:
            Path(opts["csv"]).write_text(kinds.export_csv(comp))
        results = {r.key: {"status": r.status, "error": r.error, "wall_s": r.wall_s} for r in comp.results.all()}
        answer = kinds.answer_of(comp)
        if opts["json"]:
            self.stdout.write(json.dumps({"comparison": comp.pk, "status": comp.status, "baseline": comp.baseline,
                                          "variants": results, "aggregate": comp.summary, "answer": answer},
                                         default=str))
            return
        self.stdout.write(f"comparison {comp.pk}: {comp.status}")
        for key, r in results.items():
            if r["status"] != "done":
                self.stdout.write(f"  {key}: {r['status']} {(r['error'] or {}).get('message', '')}")
        rows = comp.summary.get("rows", [])
        if answer is not None:
            self._print_card(answer)
        if not rows:
            self.stdout.write(comp.summary.get("error", "no aggregate"))
            return
        for line in kind.text_lines(comp):
            self.stdout.write(line)
        if opts["pdf"]:
            self.stdout.write(f"PDF cost report: {opts['pdf']}")

    def _print_card(self, answer: dict) -> None:
        """The decision card of any kind: the decision, its cost, SLO attainment, the cheapest rejected
        alternative and the input that would change it most."""
        self.stdout.write(f"decision: {answer['headline']}")
        choice = answer.get("choice")
        if choice:
            cost = choice["monthly_cost_usd"]
            self.stdout.write("  monthly cost: " + (fmt_band(cost, "${:,.0f}") + " (extrapolated)"
                                                    if cost.get("median") is not None else
                                                    f"not known ({answer.get('cost_note') or 'no prices'})"))
            for s in choice["slo"]:
                att = fmt_band(s["attainment"], "{:.2%}")
                self.stdout.write(f"  {s['tier']} (target {s['target']:.1%}): attainment {att}"
                                  + ("" if answer.get("single_run") else
                                     f", P(meets) {s['probability']['p']:.2f} over {s['probability']['n']}"))
            for u in choice.get("usage") or []:
                if u.get("value") is not None:
                    self.stdout.write(f"  {u['label']}: {u['value']:,.3f} {u['unit']}")
        rej = answer.get("rejected")
        if rej:
            self.stdout.write(f"  cheapest rejected alternative: {rej['key']}: {rej['why']}")
        if answer.get("most_sensitive"):
            self.stdout.write(f"  would change the answer most: {answer['most_sensitive']}")
