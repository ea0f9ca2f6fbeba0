from django.conf import settings
from django.contrib.auth.decorators import login_required
from django.http import JsonResponse
from django.shortcuts import render

from planner import health
from planner.accounts.access import team_of, visible_to
from planner.jobs.models import Job


@login_required
def dashboard(request):
    from planner.comparisons.kinds import answer_of, kind_of_comparison
    from planner.comparisons.selectors import comparisons_for
    from planner.plans.selectors import plans_for

    jobs = list(visible_to(request.user, Job.objects.filter(parent=None))[:10])
    from planner.jobs.views import display_state, object_link

    for job in jobs:
        job.object_link = object_link(job)
        job.shown_status, job.shown_progress = display_state(job)
    plan = plans_for(request.user).exclude(result=None).first()
    comp = comparisons_for(request.user).exclude(summary={}).first()
    return render(request, "dashboard.html", {
        "team": team_of(request.user), "jobs": jobs, "latest_plan": plan, "plan_outcome": plan.outcome if plan else None,
        "latest_comparison": comp, "comparison_headline": kind_of_comparison(comp).headline(comp) if comp else None,
        "comparison_answer": answer_of(comp) if comp else None,
    })


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


def _docs() -> dict[str, str]:
    """slug -> title of every document in docs/ (the listing is the whitelist: names, never paths)."""
    from pathlib import Path

    from django.conf import settings

    out = {}
    for path in sorted((Path(settings.BASE_DIR) / "docs").glob("*.md")):
        first = next((line for line in path.read_text().splitlines() if line.startswith("# ")), f"# {path.stem}")
        out[path.stem] = first[2:].strip()
    return out


@login_required
def doc_page(request, name: str = ""):
    """The project's documents (docs/*.md) in the browser, instead of repository paths."""
    from pathlib import Path

    from django.conf import settings
    from django.http import Http404
    from markdown_it import MarkdownIt

    docs = _docs()
    if not name:
        return render(request, "docs.html", {"docs": docs, "html": None, "title": "Documentation"})
    if name not in docs:
        raise Http404("no such document")
    text = (Path(settings.BASE_DIR) / "docs" / f"{name}.md").read_text()
    html = MarkdownIt("commonmark", {"html": False}).enable("table").render(text)
    return render(request, "docs.html", {"docs": docs, "html": html, "title": docs[name], "name": name})
