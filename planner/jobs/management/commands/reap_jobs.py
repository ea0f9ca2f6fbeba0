"""Reconcile job rows once (or for ever with --loop): fail or re-queue jobs whose worker died,
re-dispatch queued jobs whose message was lost (planner/jobs/reaper.py).

Every Celery worker already runs this in a thread, and so does the web process with the in-process
runner; the command is for cron, a sidecar, or an operator who wants to see what it would settle now.
"""

from __future__ import annotations

import json
import time

from django.conf import settings
from django.core.management.base import BaseCommand
from django.db import connection

from planner.jobs.reaper import sweep


class Command(BaseCommand):
    help = "Fail or re-queue jobs whose worker died; re-dispatch queued jobs whose message was lost."

    def add_arguments(self, parser):
        parser.add_argument("--loop", action="store_true", help="sweep every JOBS_REAPER_INTERVAL_S until stopped")
        parser.add_argument("--interval", type=float, default=None, help="seconds between sweeps with --loop")

    def handle(self, *args, **opts):
        interval = opts["interval"] or float(settings.JOBS_REAPER_INTERVAL_S)
        while True:
            result = sweep()
            self.stdout.write(json.dumps({"reaped": {str(k): v for k, v in result["reaped"].items()},
                                         "redispatched": result["redispatched"]}))
            if not opts["loop"]:
                return
            connection.close()
            time.sleep(interval)
