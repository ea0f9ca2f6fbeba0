"""python manage.py routing_sweep [--scenario fixtures/scenarios/routing_sweep.json] [--rates 4,6,8] [--routers ...]
[--minutes 10] [--json]

Instance routers side by side as the arrival rate steps past the knee (simulations/engine/sweep.py)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from simulations.engine import ScenarioError
from simulations.engine.policies import INSTANCE_ROUTERS
from simulations.engine.sweep import ROUTERS, routing_sweep

DEFAULT = Path(settings.BASE_DIR) / "fixtures" / "scenarios" / "routing_sweep.json"


def _floats(text: str) -> list[float]:
    try:
        vals = [float(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise CommandError(f"--rates must be comma-separated numbers, got {text!r}") from None
    if not vals or any(v <= 0 for v in vals):
        raise CommandError("--rates needs at least one rate > 0 (requests per second)")
    return vals


class Command(BaseCommand):
    help = "Sweep the arrival rate for several instance routers on a static fleet and report each router's knee."

    def add_arguments(self, parser):
        parser.add_argument("--scenario", default=str(DEFAULT), help="base scenario JSON (default: routing_sweep)")
        parser.add_argument("--rates", default="4,6,8,10,12,14,16", help="requests per second, comma-separated")
        parser.add_argument("--routers", default=",".join(ROUTERS), help="instance routers, comma-separated")
        parser.add_argument("--minutes", type=float, default=10.0, help="simulated minutes per point")
        parser.add_argument("--knee-attainment", type=float, default=0.9,
                            help="the knee is the first rate whose SLO attainment falls below this")
        parser.add_argument("--json", action="store_true", help="print one JSON object")

    def handle(self, *args, **opts):
        path = Path(opts["scenario"])
        try:
            base = json.loads(path.read_text())
        except (OSError, ValueError) as exc:
            raise CommandError(f"cannot read scenario {path}: {exc}") from None
        routers = [r.strip() for r in opts["routers"].split(",") if r.strip()]
        unknown = [r for r in routers if r not in INSTANCE_ROUTERS]
        if unknown:
            raise CommandError(f"unknown instance router(s) {unknown}; known: {sorted(INSTANCE_ROUTERS)}")
        if not opts["minutes"] > 0:
            raise CommandError("--minutes must be > 0")
        base.setdefault("workload", {}).setdefault("synthetic", {})["duration_s"] = opts["minutes"] * 60.0
        progress = None
        if not opts["json"]:
            def progress(fraction, message):
                sys.stderr.write(f"\r{fraction * 100:5.1f}% {message}          ")
        try:
            out = routing_sweep(base, _floats(opts["rates"]), routers, knee_attainment=opts["knee_attainment"],
                                progress=progress)
        except ScenarioError as exc:
            raise CommandError(f"scenario field {exc.field}: {exc.message}") from None
        if opts["json"]:
            self.stdout.write(json.dumps(out))
            return
        sys.stderr.write("\n")
        self.stdout.write(f"{'router':16} {'rate':>6} {'attain':>7} {'TTFT p50':>9} {'TTFT p99':>9} {'ITL mean':>9}")
        for p in out["points"]:
            att = "-" if p["attainment"] is None else f"{p['attainment']:.3f}"
            self.stdout.write(f"{p['router']:16} {p['rate_rps']:6g} {att:>7} {p['ttft_p50_s'] or 0:9.3f} "
                              f"{p['ttft_p99_s'] or 0:9.3f} {p['itl_mean_s'] or 0:9.4f}")
        for router, knee in out["knees_rps"].items():
            where = f"{knee:g} req/s" if knee is not None else "not reached"
            self.stdout.write(f"knee of {router}: {where} (attainment < {out['knee_attainment']})")
