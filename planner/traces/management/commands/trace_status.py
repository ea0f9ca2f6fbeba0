"""Where an uploaded trace stands: pending, normalising, ready or failed (with what, where and how to fix it).

    manage.py trace_status ID [ID ...] [--json]

Exit status 1 when any of the traces failed, so a script can stop there.
"""

from __future__ import annotations

import json

from django.core.management.base import BaseCommand, CommandError

from planner.traces.models import Trace


class Command(BaseCommand):
    help = "Print the status of traces (pending, normalising, ready, failed with the reason)."

    def add_arguments(self, parser):
        parser.add_argument("ids", nargs="+", type=int, help="trace ids")
        parser.add_argument("--json", action="store_true", help="one JSON object per trace, one per line")

    def handle(self, *args, **opts):
        failed = False
        for pk in opts["ids"]:
            trace = Trace.objects.select_related("job").filter(pk=pk).first()
            if trace is None:
                raise CommandError(f"no trace #{pk}; list them with GET /api/traces/")
            status, reason = trace.current_status()
            failed |= status == Trace.Status.FAILED
            job = trace.job
            out = {"id": trace.pk, "name": trace.name, "status": status, "status_reason": reason,
                   "requests": trace.requests if status == Trace.Status.READY else None,
                   "job": {"id": job.pk, "kind": job.kind, "status": job.status} if job else None}
            if opts["json"]:
                self.stdout.write(json.dumps(out))
                continue
            line = f"trace #{trace.pk} {trace.name!r}: {status}"
            if status == Trace.Status.READY:
                line += f", {trace.requests:,} requests"
            if job is not None:
                line += f" (job #{job.pk} {job.kind} {job.status})"
            self.stdout.write(line)
            if reason:
                self.stdout.write(f"  {reason.get('message')}\n  where: {reason.get('where')}\n"
                                  f"  how to fix: {reason.get('hint')}")
        if failed:
            raise SystemExit(1)
