import json

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_POST

from planner.accounts.access import get_for_user_or_404, team_of, visible_to
from planner.opscale.profiles import ARCHS, GPUS, available
from planner.opscale.spec import CATALOGUE_GPUS, CATALOGUE_MODELS, SpecError
from planner.opscaling.models import OperatorPlan
from planner.opscaling.presentation import result_context
from planner.opscaling.selectors import operator_plans_for
from planner.opscaling.services import create_operator_plan


def catalogue_names(profiles, aliases: dict) -> list[str]:
    """The hardware catalogue's name of each profile where it has one (llama3.1-8b, a100-80gb), else the profile's."""
    by_profile = {v: k for k, v in aliases.items()}
    return sorted(by_profile.get(name, name) for name in profiles)


def _form_context(request, form=None, error=None):
    from planner.traces.models import Trace

    return {
        "plans": operator_plans_for(request.user)[:200],
        "traces": visible_to(request.user, Trace.objects.all())[:500],
        "models": catalogue_names(ARCHS, CATALOGUE_MODELS),
        "gpus": catalogue_names(GPUS, CATALOGUE_GPUS),
        "profiles": available(),
        "form": form or {"model": "llama3.1-8b", "gpu": "a100-80gb", "slo_scale": "5", "window_s": "60"},
        "error": error,
    }


@login_required
def plan_list(request):
    return render(request, "opscaling/list.html", _form_context(request))


def _float_or_none(value: str, field: str):
    value = (value or "").strip()
    if not value:
        return None
    try:
        return float(value)
    except ValueError:
        raise SpecError(field, "must be a number") from None


def spec_from_form(post) -> dict:
    trace_id = (post.get("trace_id") or "").strip()
    if not trace_id.isdigit():
        raise SpecError("workload.trace_id", "pick one of your team's traces")
    slo = {
        k: v
        for k, v in (
            ("ttft_s", _float_or_none(post.get("ttft_s"), "slo.ttft_s")),
            ("tbt_s", _float_or_none(post.get("tbt_s"), "slo.tbt_s")),
            ("scale", _float_or_none(post.get("slo_scale"), "slo.scale")),
        )
        if v is not None
    }
    workload = {"trace_id": int(trace_id)}
    window = _float_or_none(post.get("window_s"), "workload.window_s")
    if window is not None:
        workload["window_s"] = window
    spec = {"model": post.get("model", ""), "gpu": post.get("gpu", ""), "slo": slo, "workload": workload}
    options = {}
    if post.get("no_sharing"):
        options["sharing"] = False
    if post.get("no_fallback"):
        options["fallback_model_level"] = False
    if options:
        spec["options"] = options
    return spec


@login_required
@require_POST
def plan_create(request):
    team = team_of(request.user)
    try:
        if team is None:
            raise SpecError("team", "your user belongs to no team")
        spec = spec_from_form(request.POST)
        plan = create_operator_plan(team=team, user=request.user, spec=spec, name=request.POST.get("name", ""))
    except SpecError as exc:
        return render(request, "opscaling/list.html", _form_context(request, request.POST, str(exc)), status=400)
    messages.info(request, f"Operator-level plan #{plan.pk} queued.")
    return redirect("opscaling:detail", pk=plan.pk)


@login_required
def plan_detail(request, pk: int):
    plan = get_for_user_or_404(request.user, OperatorPlan.objects.select_related("job", "trace"), pk=pk)
    from planner.benchmarks.badges import badges_for

    context = {"plan": plan, "spec_json": json.dumps(plan.spec, indent=1), **result_context(plan.spec, plan.result),
               "validation_badges": badges_for(team_of(request.user), {"kind": "operator-level", **plan.spec})}
    return render(request, "opscaling/detail.html", context)


@login_required
def plan_pdf(request, pk: int):
    from planner.opscale.report import build_pdf

    plan = get_for_user_or_404(request.user, OperatorPlan.objects.all(), pk=pk)
    if not plan.result:
        messages.warning(request, "The plan has no result yet.")
        return redirect("opscaling:detail", pk=plan.pk)
    response = HttpResponse(
        build_pdf(plan.result, f"Operator-level plan #{plan.pk}: {plan.name}"), content_type="application/pdf"
    )
    response["Content-Disposition"] = f'attachment; filename="operator-plan-{plan.pk}.pdf"'
    return response
