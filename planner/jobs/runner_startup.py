"""Start-up of the in-process job runner (JOBS_RUNNER=thread, the `make run` default).

Jobs run in threads of the web process, so a restart kills them: at start-up the jobs whose process
is gone are failed as "worker lost" (or re-queued, for idempotent kinds) and queued ones are
dispatched again; then a reaper thread keeps reconciling (planner/jobs/reaper.py). Called from
planner/wsgi.py, which both `runserver` and gunicorn load. With the Celery runner the workers run
the reaper (planner/celery.py), so this does nothing.
"""

from __future__ import annotations

import logging

from django.conf import settings
from django.db import connection

log = logging.getLogger(__name__)


def start_in_process_runner() -> None:
    if settings.JOBS_RUNNER != "thread":
        return
    from planner.jobs.reaper import fail_orphans_of_this_runner, start_reaper_thread

    try:
        settled = fail_orphans_of_this_runner()
        if settled:
            log.warning("in-process runner start-up settled orphaned jobs: %s", settled)
    except Exception as exc:  # e.g. not migrated yet: the periodic reaper will do it later
        log.warning("in-process runner start-up could not check for orphaned jobs (%s)", exc)
    finally:
        connection.close()
    start_reaper_thread()
