"""python manage.py serverless SPEC.json [--json]: run a serverless (SLINFER) scenario on shared CPU/GPU nodes."""

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

    def handle(self, *args, **opts):
        path = Path(opts["spec"])
        try:
            data = json.loads(path.read_text())
        except OSError as exc:
            raise CommandError(f"cannot read {path}: {exc}") from None
        except ValueError as exc:
            raise CommandError(f"{path} is not valid JSON: {exc}") from None
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
