"""Built-in job kinds of the jobs app itself."""

from __future__ import annotations

import time

from planner.jobs.registry import handler


@handler("system.sleep")
def sleep(job, ctx):
    """Sleep ``seconds`` in steps, reporting progress: proves a worker is alive and cancellation works."""
    seconds = float(job.params.get("seconds", 1.0))
    steps = max(1, int(seconds / 0.1))
    for step in range(steps):
        time.sleep(seconds / steps)
        ctx.progress(100.0 * (step + 1) / steps, f"slept {seconds * (step + 1) / steps:.1f} s", force=True)
    return {"slept_s": seconds}
