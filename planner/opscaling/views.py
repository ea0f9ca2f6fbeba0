import json

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_POST

from planner.accounts.access import get_for_user_or_404, team_of, visible_to
from planner.opscale.profiles import ARCHS, GPUS, available
from planner.opscale.spec import SpecError
from planner.opscaling.charts import all_figures
from planner.opscaling.models import OperatorPlan
from planner.opscaling.selectors import operator_plans_for
from planner.opscaling.services import create_operator_plan


def _form_context(request, form=None, error=None):
    from planner.traces.models import Trace

    return {
        "plans": operator_plans_for(request.user)[:200],
        "traces": visible_to(request.user, Trace.objects.all())[:500],
        "models": sorted(ARCHS),
        "gpus": sorted(GPUS),
        "profiles": available(),
        "form": form or {"model": "llama-3-8b", "gpu": "a100", "slo_scale": "5", "window_s": "60"},
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


def _ilp_gap(result: dict) -> dict | None:
    """Greedy (Alg. 1) against the ILP optimum on the plan's QPS sweep."""
    rows = [r for r in (result.get("sweeps") or {}).get("qps", []) if (r.get("ilp") or {}).get("cost")]
    if not rows:
        return None
    gaps = [(r["greedy_cost"] - r["ilp"]["cost"]) / r["ilp"]["cost"] for r in rows]
    worst = max(range(len(rows)), key=lambda i: gaps[i])
    return {
        "points": len(rows),
        "mean": sum(gaps) / len(gaps),
        "worst": gaps[worst],
        "worst_qps": rows[worst]["qps"],
        "all_optimal": all(r["ilp"]["status"] == "optimal" for r in rows),
    }


def _in_graph_order(config: dict) -> list[tuple[str, dict]]:
    """PostgreSQL's jsonb sorts keys: put the operators back in dataflow order."""
    from planner.opscale.profiles import OPS

    return sorted(config.items(), key=lambda kv: OPS.index(kv[0]) if kv[0] in OPS else len(OPS))


def _fallback_note(spec: dict, totals: dict) -> str:
    on = ((spec or {}).get("options") or {}).get("fallback_model_level", True)
    if not on:
        return (
            "Fallback to the model-level placement: off (the paper's algorithm as printed), so an operator-level "
            "window may need more GPUs than model-level."
        )
    used = {ph: (totals.get(ph) or {}).get("fallback_windows", 0) for ph in ("prefill", "decode")}
    return (
        "Fallback to the model-level placement: on (the default). A window whose operator-level placement needs "
        "more GPUs than model-level (or misses the SLO where model-level meets it) uses the model-level placement: "
        f"{used['prefill']} prefill and {used['decode']} decode windows did."
    )


@login_required
def plan_detail(request, pk: int):
    plan = get_for_user_or_404(request.user, OperatorPlan.objects.select_related("job", "trace"), pk=pk)
    result = plan.result or {}
    totals = result.get("totals", {})
    rows = []
    for phase in ("prefill", "decode"):
        for strategy in ("model_level", "operator_level", "default_stream", "static_p95"):
            agg = totals.get(phase, {}).get(strategy)
            if agg:
                rows.append(
                    {
                        "phase": phase,
                        "strategy": strategy,
                        "gpu_h": agg["gpu_s"] / 3600.0,
                        "energy_kwh": None if agg.get("energy_j") is None else agg["energy_j"] / 3.6e6,
                        "memory_gb_h": agg["memory_gb_s"] / 3600.0,
                        "savings": agg.get("savings_vs_model_level"),
                        "fallback_windows": (
                            totals[phase].get("fallback_windows", 0) if strategy == "operator_level" else 0
                        ),
                        "windows": totals.get(phase, {}).get("windows"),
                    }
                )
    context = {
        "plan": plan,
        "result": result,
        "rows": rows,
        "fallback_note": _fallback_note(plan.spec, totals) if result else "",
        "figures": all_figures(result) if result else None,
        "spec_json": json.dumps(plan.spec, indent=1),
        "peak": result.get("peak_detail"),
        "ilp_gap": _ilp_gap(result),
        "peak_config": _in_graph_order((result.get("peak_detail") or {}).get("operator_level", {}).get("config", {})),
    }
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
