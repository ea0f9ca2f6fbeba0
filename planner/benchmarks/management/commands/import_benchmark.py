"""python manage.py import_benchmark PATH... [--gpu h100-80gb] [--team TEAM] [--json]

Each PATH is an inference-perf result folder (or its .zip / .tar.gz), a vLLM bench serving JSON, or a per-request
CSV/JSONL. All or nothing per PATH: a bad one stores nothing and the command exits with status 1.
"""

from __future__ import annotations

import json
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from planner.benchmarks import services
from planner.benchmarks.core.errors import BenchmarkError
from planner.benchmarks.core.upload import read_path
from planner.clirun import add_team_arguments, cli_team


class Command(BaseCommand):
    help = "Import real serving benchmark runs (inference-perf folders, vLLM bench JSON, per-request CSV/JSONL)."

    def add_arguments(self, parser):
        parser.add_argument("paths", nargs="+")
        add_team_arguments(parser)
        parser.add_argument("--gpu", default="", help="GPU type the server ran on (e.g. h100-80gb)")
        parser.add_argument("--name", default="", help="run name (default: the folder or file name)")
        parser.add_argument("--model", default="")
        parser.add_argument("--tp", type=int, default=None, help="tensor-parallel degree (per-request files)")
        parser.add_argument("--max-num-batched-tokens", type=int, default=None)
        parser.add_argument("--max-num-seqs", type=int, default=None)
        parser.add_argument("--engine-version", default="", help="serving engine version, e.g. 0.15.1")
        parser.add_argument("--json", action="store_true", help="print one JSON object")

    def handle(self, *args, **opts):
        team, user = cli_team(opts["team"], opts["user"])
        engine = {"model": opts["model"], "tensor_parallel_size": opts["tp"],
                  "max_num_batched_tokens": opts["max_num_batched_tokens"], "max_num_seqs": opts["max_num_seqs"],
                  "engine_version": opts["engine_version"]}
        imported, errors = [], []
        for raw_path in opts["paths"]:
            path = Path(raw_path)
            if not path.exists():
                errors.append({"path": raw_path, "message": "no such file or folder", "where": raw_path, "hint": ""})
                continue
            files, label = read_path(path)
            try:
                run = services.import_benchmark(team, user, files, name=opts["name"] or label, gpu=opts["gpu"],
                                                engine=engine, original_name=label)
            except BenchmarkError as exc:
                errors.append({"path": raw_path, **exc.as_dict()})
                continue
            imported.append({"id": run.pk, "name": run.name, "format": run.source_format, "model": run.model_name,
                             "gpu": run.gpu_name, "tp": run.tp, "stages": run.stage_count,
                             "overloaded": run.overloaded,
                             "deployment": run.deployment.name if run.deployment else None})
        if opts["json"]:
            self.stdout.write(json.dumps({"ok": not errors, "team": team.name, "imported": imported,
                                          "errors": errors}))
        else:
            for r in imported:
                self.stdout.write(f"#{r['id']} {r['name']}: {r['format']}, {r['model']} on {r['gpu']} x{r['tp']}, "
                                  f"{r['stages']} stage(s){' (overloaded)' if r['overloaded'] else ''}")
        if errors:
            e = errors[0]
            raise CommandError(f"{e['path']}: {e['where']}: {e['message']}" + (f" (fix: {e['hint']})" if e['hint']
                                                                               else ""))
