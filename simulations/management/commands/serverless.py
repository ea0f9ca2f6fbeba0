"""python manage.py serverless SPEC.json [--json]: run a serverless (SLINFER) scenario on shared CPU/GPU nodes.

With ``--compare`` the systems run as a comparison instead (planner/comparisons/serverless.py): a Comparison row,
one child job per system on the workers (inline without Redis), the table on /comparisons/<id>/, ``--pdf`` /
``--csv`` write the report and every number. ``--systems`` picks systems, ablations included
(slinfer-no-cpu, slinfer-no-sharing, slinfer-no-consolidation); ``--baseline`` defaults to sllm.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from simulations.engine.serverless.spec import SpecError, parse, run


class Command(BaseCommand):
    help = ("Run a serverless scenario (functions = models on shared CPU/GPU nodes) through SLINFER and/or the "
            "ServerlessLLM baselines; prints the metrics (no database row). Schema: simulations/engine/serverless/spec.py.")

    def add_arguments(self, parser):
        parser.add_argument("spec", help="serverless scenario JSON file")
        parser.add_argument("--json", action="store_true", help="print one JSON object")
        parser.add_argument("--compare", action="store_true",
                            help="run the systems as a comparison (child jobs on the workers, page, PDF)")
        parser.add_argument("--systems", default="", help="with --compare: e.g. sllm,sllm+c+s,slinfer,slinfer-no-cpu "
                                                          "(default: the spec's systems, else the four systems)")
        parser.add_argument("--baseline", default="", help="with --compare: the system ratios refer to (default sllm)")
        parser.add_argument("--name", default="", help="with --compare: the comparison's name")
        parser.add_argument("--pdf", default="", help="with --compare: write the PDF report here")
        parser.add_argument("--csv", default="", help="with --compare: write every number (long CSV) here")
        parser.add_argument("--timeout", type=float, default=3600, help="with --compare: seconds to wait for workers")
        from planner.clirun import add_team_arguments

        add_team_arguments(parser)

    def handle(self, *args, **opts):
        path = Path(opts["spec"])
        try:
            data = json.loads(path.read_text())
        except OSError as exc:
            raise CommandError(f"cannot read {path}: {exc}") from None
        except ValueError as exc:
            raise CommandError(f"{path} is not valid JSON: {exc}") from None
        if opts["compare"]:
            from simulations.management.commands._serverless_compare import compare

            compare(self, data, opts)
            return
        start = time.perf_counter()
        try:
            out = run(parse(data))
        except SpecError as exc:
            if opts["json"]:
                sys.stderr.write(json.dumps(exc.to_dict()) + "\n")
            hint = f" ({exc.hint})" if exc.hint else ""
            raise CommandError(f"serverless scenario field {exc.where}: {exc.message}{hint}") from None
        out["wall_s"] = round(time.perf_counter() - start, 3)
        if opts["json"]:
            self.stdout.write(json.dumps(out))
            return
        self.stdout.write(f"{out['name']}: {out['requests']} requests, model {out['model']}, {out['wall_s']:.1f} s")
        for system, r in out["results"].items():
            self.stdout.write(f"  {system:9s} SLO-met {r['slo_met']} ({100 * r['slo_attainment']:.1f} %), dropped "
                              f"{r['dropped']}, avg CPUs {r['avg_cpu_nodes']:.2f}, avg GPUs {r['avg_gpu_nodes']:.2f}, "
                              f"resizing {100 * r['resizing_share']:.2f} %, migrations "
                              f"{100 * r['migration_rate']:.2f} %, energy {r['energy_kwh']:.3f} kWh, no OOM")
