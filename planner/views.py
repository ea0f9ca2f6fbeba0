from django.conf import settings
from django.contrib.auth.decorators import login_required
from django.http import JsonResponse
from django.shortcuts import render

from planner import health
from planner.accounts.access import team_of, visible_to
from planner.jobs.models import Job


@login_required
def dashboard(request):
    jobs = visible_to(request.user, Job.objects.filter(parent=None))[:10]
    return render(request, "dashboard.html", {"team": team_of(request.user), "jobs": jobs})


def healthz(request):
    """Health for load balancers and operators: the database answers; with REDIS_URL, the broker answers a ping;
    in celery mode, at least one worker answers a ping within 1 s. 200 when all hold, else 503 (JSON either way).
    Also which simulator build this process runs ("compiled", or "python" with the reason, e.g. a missing C
    compiler or sources edited since the build)."""
    from simulations.engine import BUILD

    checks = health.run_checks()
    ok = all(check["ok"] for check in checks.values())
    body = {"ok": ok, "checks": checks, "jobs_runner": settings.JOBS_RUNNER,
            "engine_build": BUILD["kind"], "engine_build_reason": BUILD["reason"]}
    if not ok:
        failing = ", ".join(name for name, check in checks.items() if not check["ok"])
        body["error"] = {"message": f"unhealthy: {failing}", "where": "server",
                         "hint": "see checks; the server log has the details",
                         "request_id": getattr(request, "request_id", "")}
    return JsonResponse(body, status=200 if ok else 503, headers={"Cache-Control": "no-store"})
