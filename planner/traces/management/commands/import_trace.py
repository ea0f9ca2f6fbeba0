from __future__ import annotations

import json

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError

from planner.accounts.models import Team
from planner.traces.services import TraceInputError, import_trace_file


class Command(BaseCommand):
    help = (
        "Import a trace file (Azure, BurstGPT, Mooncake or native; plain or gzip) for a team, normalise it "
        "to Parquet and characterise it."
    )

    def add_arguments(self, parser):
        parser.add_argument("file")
        parser.add_argument("--name")
        parser.add_argument("--format", default="auto", choices=["auto", "azure", "burstgpt", "mooncake", "native"])
        parser.add_argument("--region", help='a value, ratios "a:0.6,b:0.4", or JSON {"column": ..., "map": {...}}')
        parser.add_argument("--model", help="same forms as --region")
        parser.add_argument("--tier", help="IW-F, IW-N, NIW, ratios or a column mapping")
        parser.add_argument("--time-scale", type=float, help="multiply all times (0.5 halves the span)")
        parser.add_argument("--rate", type=float, help="request-rate multiplier: <1 thins, >1 replicates")
        parser.add_argument("--jitter", type=float, help="replica jitter window in seconds (default 1)")
        parser.add_argument("--seed", type=int, help="seed for splits, thinning and replication (default 0)")
        parser.add_argument("--team", default="demo", help="owning team (created if new; default: demo)")
        parser.add_argument("--user", help="username recorded as the creator (must exist)")
        parser.add_argument("--json", action="store_true", help="print one JSON object")

    def handle(self, *args, **opts):
        user = None
        if opts["user"]:
            user = get_user_model().objects.filter(username=opts["user"]).first()
            if user is None:
                raise CommandError(f"user {opts['user']!r} does not exist; create it with `manage.py create_user`")
            team = user.membership.team
        else:
            team, _ = Team.objects.get_or_create(name=opts["team"])
        options = {
            k: v
            for k, v in (
                ("time_scale", opts["time_scale"]),
                ("rate", opts["rate"]),
                ("jitter_s", opts["jitter"]),
                ("seed", opts["seed"]),
            )
            if v is not None
        }

        def progress(fraction, message):
            if not opts["json"] and opts["verbosity"] > 1:
                self.stderr.write(f"{100 * fraction:5.1f}% {message}")

        try:
            trace = import_trace_file(
                opts["file"],
                team=team,
                user=user,
                name=opts["name"],
                fmt=opts["format"],
                options=options,
                region=opts["region"],
                model=opts["model"],
                tier=opts["tier"],
                progress=progress,
            )
        except TraceInputError as exc:
            if opts["json"]:
                self.stdout.write(json.dumps({"error": exc.as_dict()}))
                raise SystemExit(1) from None
            raise CommandError(str(exc)) from None
        trace.refresh_from_db()
        out = {
            "id": trace.pk,
            "name": trace.name,
            "team": team.name,
            "format": trace.format,
            "requests": trace.requests,
            "span_s": trace.span_s,
            "input_tokens": trace.input_tokens,
            "output_tokens": trace.output_tokens,
            "failed_requests": trace.failed_requests,
            "was_sorted": trace.was_sorted,
            "status": trace.current_status()[0],
            "normalised_file": str(trace.normalised_file),
            "job": trace.job_id,
            "job_status": trace.job.status if trace.job else None,
            "characterised": trace.characterised is not None,
            # requests beyond each catalogue model's context limit (once characterised; null before)
            "context_limits": (trace.characterisation or {}).get("context_limits") if trace.characterised else None,
        }
        if opts["json"]:
            self.stdout.write(json.dumps(out))
        else:
            self.stdout.write(
                f"imported trace #{trace.pk} {trace.name!r} ({trace.format}): {trace.requests:,} requests "
                f"over {trace.span_s:,.1f} s, {trace.input_tokens:,} input and "
                f"{trace.output_tokens:,} output tokens; characterisation job #{trace.job_id} "
                f"{out['job_status']}"
            )
