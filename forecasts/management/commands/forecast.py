"""python manage.py forecast --trace ID [--group region,model,tier] [--method auto|NAME]
[--resolution 5min] [--horizon 1h] [--metrics input_tps] [--backtest 2d] [--json]

Runs a forecast run in this process (the series one after another) and stores it like the API does,
under the trace's team. Prints a table, or ONE JSON object with --json.
"""

from __future__ import annotations

import json

from django.core.management.base import BaseCommand, CommandError

from forecasts import services
from forecasts.api.serializers import ForecastRunCreateSerializer
from planner.traces.models import Trace


class Command(BaseCommand):
    help = "Forecast a trace's series (backtests, best method per series, next-hour peak) in-process."

    def add_arguments(self, parser):
        parser.add_argument("--trace", type=int, required=True, help="trace id")
        parser.add_argument("--group", default="region,model,tier", help="columns to split by, or '' for one series")
        parser.add_argument("--method", default="auto", help="auto or a method name")
        parser.add_argument("--candidates", default=None, help="methods compared by auto (comma-separated)")
        parser.add_argument("--metrics", default="input_tps", help="input_tps, output_tps, rps")
        parser.add_argument("--resolution", default="5min")
        parser.add_argument("--horizon", default="1h")
        parser.add_argument("--backtest", default="2d")
        parser.add_argument("--level", type=float, default=0.9)
        parser.add_argument("--json", action="store_true", help="print one JSON object")

    def handle(self, *args, **opts):
        trace = Trace.objects.filter(pk=opts["trace"]).select_related("team").first()
        if trace is None:
            raise CommandError(f"--trace: no trace #{opts['trace']}; list them with the API at /api/traces/")
        data = {
            "trace": trace.pk,
            "group_by": opts["group"] or [],
            "method": opts["method"],
            "metrics": opts["metrics"],
            "resolution": opts["resolution"],
            "horizon": opts["horizon"],
            "backtest": opts["backtest"],
            "level": opts["level"],
        }
        if opts["candidates"]:
            data["candidates"] = opts["candidates"]
        ser = ForecastRunCreateSerializer(data=data)
        if not ser.is_valid():
            problems = "; ".join(
                f"--{'group' if k == 'group_by' else k}: {' '.join(map(str, v))}" for k, v in ser.errors.items()
            )
            raise CommandError(problems)
        run = services.create_run(
            trace=trace, team=trace.team, user=trace.created_by, params=ser.to_params(), inline=True
        )
        run.refresh_from_db()
        series = list(run.series.select_related("job").defer("result"))
        out = {
            "run": run.pk,
            "trace": trace.pk,
            "status": run.status,
            "params": run.params,
            "summary": run.summary,
            "url": f"/forecasts/{run.pk}/",
            "series": [self._row(s) for s in series],
        }
        if run.job.last_error:
            out["error"] = run.job.last_error
        if opts["json"]:
            self.stdout.write(json.dumps(out))
            return
        self.stdout.write(f"forecast run #{run.pk} of trace #{trace.pk}: {run.status}  ({out['url']})")
        for row in out["series"]:
            self.stdout.write(
                f"  {row['label']:<40} {row['chosen'] or '-':<22} peak {row['peak'] or 0:>12.2f}"
                f"  upper {row['peak_upper'] or 0:>12.2f}  wMAPE {row['wmape'] if row['wmape'] is not None else '-'}"
            )
        if run.job.last_error:
            raise CommandError(run.job.last_error["message"])

    @staticmethod
    def _row(s) -> dict:
        chosen = next((r for r in s.leaderboard if r.get("method") == s.chosen_method), {})
        return {
            "id": s.pk,
            "label": s.label,
            "group": s.group,
            "metric": s.metric,
            "status": s.job.status if s.job else None,
            "chosen": s.chosen_method or None,
            "best": s.best_method or None,
            "peak": s.peak,
            "peak_upper": s.peak_upper,
            "wmape": chosen.get("wmape"),
            "peak_error": chosen.get("peak_error"),
            "leaderboard": [
                {
                    k: r.get(k)
                    for k in ("method", "rank", "wmape", "mase", "rel_mae", "coverage", "peak_error", "skipped")
                    if k in r
                }
                for r in s.leaderboard
            ],
        }
