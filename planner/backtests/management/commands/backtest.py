"""``manage.py backtest WINDOW.json --replicas FILE.csv --bundles industry.hpa-running,...``: an advisory
back-test on the workers (or in-process without them), stored like one started in the browser."""

from __future__ import annotations

import json
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from planner.backtests.core.replicas import ReplicaFileError
from planner.backtests.models import Backtest
from planner.backtests.services import check_backtest, start_backtest
from planner.clirun import add_team_arguments, cli_team, csv_list, int_list, read_json_file
from planner.comparisons.core.variants import VariantError
from planner.jobs.cliwait import wait_for
from simulations.engine import ScenarioError


class Command(BaseCommand):
    help = "Replay a past window as run and with alternative strategies (docs/backtests.md)."

    def add_arguments(self, parser):
        parser.add_argument("scenario", help="the window's scenario JSON (trace + fleet + SLOs)")
        parser.add_argument("--replicas", required=True, help="CSV timestamp,endpoint,replicas")
        parser.add_argument("--latency", default="", help="optional CSV minute,ttft_p50_s,ttft_p95_s (measured)")
        parser.add_argument("--origin", default="", help="ISO time of the trace's t = 0 (for ISO timestamps)")
        parser.add_argument("--strategies", default="", help="comparison strategies, e.g. reactive-unified")
        parser.add_argument("--bundles", default="", help="bundles, e.g. industry.hpa-running,industry.llmd-wva")
        parser.add_argument("--seeds", default="", help="seeds for the deltas' bands, e.g. 1,2,3")
        parser.add_argument("--startup-s", type=float, default=None, help="as-run instance start-up (s)")
        parser.add_argument("--max-gap-s", type=float, default=900.0, help="largest gap between rows (s)")
        parser.add_argument("--name", default="")
        parser.add_argument("--timeout", type=float, default=3600.0)
        parser.add_argument("--json", action="store_true", help="print the result as one JSON object")
        add_team_arguments(parser)

    def handle(self, *args, **opts):
        path, rpath = Path(opts["scenario"]), Path(opts["replicas"])
        for p in (path, rpath, *([Path(opts["latency"])] if opts["latency"] else [])):
            if not p.exists():
                raise CommandError(f"{p}: no such file")
        scenario = read_json_file(path)
        seeds = int_list(opts["seeds"], "--seeds")
        team, user = cli_team(opts["team"], opts["user"])
        try:
            latency = Path(opts["latency"]).read_text() if opts["latency"] else ""
            recorded, alternatives, measured = check_backtest(
                team=team, scenario=scenario, replicas_csv=rpath.read_text(), origin=opts["origin"] or None,
                strategies=csv_list(opts["strategies"]), bundles=csv_list(opts["bundles"]),
                max_gap_s=opts["max_gap_s"], latency_csv=latency)
            bt = start_backtest(team=team, user=user, scenario=scenario, recorded=recorded,
                                alternatives=alternatives, name=opts["name"] or scenario.get("name", path.stem),
                                startup_s=opts["startup_s"], measured=measured, seeds=seeds)
        except ScenarioError as exc:
            raise CommandError(f"{path}: {exc.field}: {exc.message}") from None
        except ReplicaFileError as exc:
            raise CommandError(f"{rpath}: {exc}" + (f" ({exc.hint})" if exc.hint else "")) from None
        except VariantError as exc:
            raise CommandError(f"{exc.field}: {exc.message}") from None
        pk = bt.pk
        bt = wait_for(lambda: Backtest.objects.select_related("job").get(pk=pk), what=f"back-test {pk}",
                      url=f"/backtests/{pk}/", timeout_s=opts["timeout"], stderr=self.stderr)
        result = bt.result or {}
        if opts["json"]:
            self.stdout.write(json.dumps({"backtest": bt.pk, "status": bt.job.status if bt.job else "",
                                          "as_run_exact": bt.as_run_exact,
                                          "latency_gap": result.get("latency_gap"),
                                          "bands": result.get("bands"),
                                          "runs": [{k: v for k, v in r.items() if k not in ("active", "t")}
                                                   for r in result.get("runs", [])]}))
            return
        self.stdout.write(f"back-test {bt.pk}: {bt.job.status if bt.job else '?'}; as run reproduced exactly: "
                          f"{bt.as_run_exact}")
        for m, g in (result.get("latency_gap") or {}).items():
            if g["minutes"]:
                self.stdout.write(f"  as run vs measured {m}: mean gap {g['mean_gap_s']:+.3f} s over {g['minutes']} "
                                  f"minutes (relative {g['mean_relative_gap']:+.1%})" if g["mean_relative_gap"]
                                  is not None else f"  as run vs measured {m}: mean gap {g['mean_gap_s']:+.3f} s")
        if bt.job and bt.job.status == "failed":
            self.stdout.write(f"  {(bt.job.last_error or {}).get('message', '')}")
            return
        self.stdout.write(f"{'run':28} {'GPU-h':>8} {'dGPU-h':>8} {'SLO':>7} {'dSLO':>7} {'rep.err':>8} {'match':>6}")
        for r in result.get("runs", []):
            errs = r["replica_error"].values()
            mae = max((e["mae"] for e in errs), default=0.0)
            match = min((e["match_share"] for e in errs), default=1.0)
            att = "-" if r["attainment"] is None else f"{100 * r['attainment']:.1f}%"
            datt = "-" if r["attainment_delta"] is None else f"{100 * r['attainment_delta']:+.1f}"
            band = (result.get("bands") or {}).get(r["key"])
            extra = f"  band dGPU-h [{band['gpu_hours_delta'][0]:+.2f}, {band['gpu_hours_delta'][1]:+.2f}]" if band else ""
            self.stdout.write(f"{r['key']:28} {r['gpu_hours']:8.2f} {r['gpu_hours_delta']:+8.2f} {att:>7} "
                              f"{datt:>7} {mae:8.2f} {100 * match:5.0f}%{extra}")
