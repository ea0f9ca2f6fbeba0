"""Operator-level comparisons: one of the team's traces planned window by window at model level (the baseline)
and at operator level (each operator scaled and batched on its own), GPU-hours, energy and memory side by side.

The scenario is an operator-level plan spec (planner/opscale/spec.py) marked ``"kind": "operator-level"``; model
and GPU names are the hardware catalogue's (llama3.1-8b, a100-80gb). One child job computes the plan; its result
holds both placements, so the comparison's rows are model level and operator level from that one run.
"""

from __future__ import annotations

from django.db import transaction

from planner.comparisons.core.kind_answer import operator_answer
from planner.comparisons.kinds.base import ComparisonKind, ComparisonRequest, RequestError
from planner.comparisons.models import Comparison, VariantResult
from planner.jobs.models import Job
from planner.jobs.services import create_job
from planner.opscale.spec import CATALOGUE_GPUS, CATALOGUE_MODELS, SpecError, catalogue_name, parse_spec

KIND = "operator-level"
BASELINE = "model-level"
VARIANT = "operator-level"
_CATALOGUE_MODEL = {v: k for k, v in CATALOGUE_MODELS.items()}
_CATALOGUE_GPU = {v: k for k, v in CATALOGUE_GPUS.items()}


def spec_of(scenario: dict) -> dict:
    return {k: v for k, v in scenario.items() if k != "kind"}


def _spec_error(exc: SpecError) -> RequestError:
    return RequestError(f"scenario.{exc.field}", exc.message, "see docs/opscale.md for the operator-level spec")


def _trace(spec, team):
    from planner.traces.models import Trace

    if spec.workload.trace_id is None:
        raise RequestError("scenario.workload.trace_id", "pick one of your team's traces",
                           "files on the server are for the command line's operator_plan only")
    trace = Trace.objects.filter(team=team, pk=spec.workload.trace_id).first()
    if trace is None:
        raise RequestError("scenario.workload.trace_id", f"no trace {spec.workload.trace_id} in your team",
                           "upload the trace first, or pick one of yours")
    if not trace.is_ready:
        raise RequestError("scenario.workload.trace_id", f"trace {trace.pk} is {trace.current_status()[0]}, not ready",
                           "wait until its status is ready; a failed trace says why")
    return trace


def _totals(result: dict, phase: str, level: str) -> dict:
    return ((result.get("totals") or {}).get(phase) or {}).get(level) or {}


class OperatorLevelKind(ComparisonKind):
    name = KIND
    label = "Operator-level scaling against model-level scaling"
    card_from_summary = staticmethod(operator_answer)
    noun = "plan"
    template = "comparisons/operator_detail.html"

    @transaction.atomic
    def start(self, *, team, user, request: ComparisonRequest):
        extra = request.fleet_only()
        if extra or request.choices:
            field = next(iter(extra), "strategies")
            raise RequestError(field, "an operator-level comparison has one plan (model level against operator "
                                      "level); it takes no strategies, systems or seeds", "leave it out")
        try:
            spec = parse_spec(spec_of(request.scenario))
        except SpecError as exc:
            raise _spec_error(exc) from None
        trace = _trace(spec, team)
        model = _CATALOGUE_MODEL.get(spec.model, spec.model)
        gpu = _CATALOGUE_GPU.get(spec.gpu, spec.gpu)
        stored = {"kind": KIND, **spec_of(request.scenario), "model": model, "gpu": gpu}
        name = request.name or spec.name or f"{model} on {gpu}, operator against model level, trace {trace.name}"
        variants = [{"key": VARIANT, "strategy": KIND, "scheduler": "", "knobs": {}}]
        parent = create_job(team=team, user=user, kind="comparisons.aggregate", params={}, enqueue=False)
        comp = Comparison.objects.create(team=team, created_by=user, name=name[:200], scenario=stored,
                                         variants=variants, baseline=BASELINE, job=parent)
        Job.objects.filter(pk=parent.pk).update(params={"comparison": comp.pk, "variants": [VARIANT]},
                                                message="waiting for the operator-level plan")
        child = create_job(team=team, user=user, kind="comparisons.variant", parent=parent,
                           params={"comparison": comp.pk, "key": VARIANT})
        VariantResult.objects.create(comparison=comp, key=VARIANT, position=0, strategy=KIND, job=child)
        return comp

    def simulate(self, comp, result, *, progress, base_dir: str = "") -> dict:
        from planner.opscale.plan import run_plan
        from planner.opscaling.services import load_frame

        try:
            spec = parse_spec(spec_of(comp.scenario))
        except SpecError as exc:
            raise _spec_error(exc) from exc
        frame = load_frame(spec, _trace(spec, comp.team))
        try:
            return run_plan(spec, frame, progress=lambda share, message="": progress(share, message))
        except ValueError as exc:
            raise RequestError("scenario.workload", str(exc), "check the trace and the window length") from exc

    def job_summary(self, key: str, metrics: dict) -> dict:
        return {"key": key, "windows": metrics.get("windows"), "infeasible_windows": metrics.get("infeasible_windows")}

    def aggregate(self, comp, summaries: dict[str, dict]) -> dict:
        result = summaries.get(VARIANT)
        if result is None:
            return {"error": "the operator-level plan did not finish"}
        rows = []
        fallback = sum(((result.get("totals") or {}).get(ph) or {}).get("fallback_windows", 0)
                       for ph in ("prefill", "decode"))
        for key, level in ((BASELINE, "model_level"), (VARIANT, "operator_level")):
            pre, dec = _totals(result, "prefill", level), _totals(result, "decode", level)
            gpu_s = (pre.get("gpu_s") or 0.0) + (dec.get("gpu_s") or 0.0)
            energy = [x.get("energy_j") for x in (pre, dec)]
            rows.append({"key": key, "is_baseline": key == BASELINE, "gpu_hours": gpu_s / 3600.0,
                         "prefill_gpu_hours": (pre.get("gpu_s") or 0.0) / 3600.0,
                         "decode_gpu_hours": (dec.get("gpu_s") or 0.0) / 3600.0,
                         "energy_kwh": None if None in energy else sum(energy) / 3.6e6,
                         "memory_gb_hours": ((pre.get("memory_gb_s") or 0.0) + (dec.get("memory_gb_s") or 0.0)) / 3600,
                         "fallback_windows": fallback if key == VARIANT else 0})
        base = rows[0]["gpu_hours"]
        for r in rows:
            r["saved_gpu_hours"] = base - r["gpu_hours"]
            r["saved_gpu_hours_pct"] = None if not base else 100.0 * (base - r["gpu_hours"]) / base
        return {"kind": KIND, "baseline": BASELINE, "rows": rows, "best": min(rows, key=lambda r: r["gpu_hours"])["key"],
                "windows": result.get("windows"), "window_s": result.get("window_s"),
                "infeasible_windows": result.get("infeasible_windows", 0),
                "infeasible_reason": result.get("infeasible_reason", "")}

    def catalogue_ref(self, scenario: dict) -> dict | None:
        """Vidur's per-operator profiles stand for the scenario's model on its GPU, at its model-level TP."""
        if not isinstance(scenario.get("model"), str):
            return None
        model = catalogue_name(scenario["model"], CATALOGUE_MODELS)
        gpu = catalogue_name(str(scenario.get("gpu") or ""), CATALOGUE_GPUS)
        options = scenario.get("options") if isinstance(scenario.get("options"), dict) else {}
        tp = options.get("model_tp") if isinstance(options.get("model_tp"), int) else None
        return {"label": f"{model} on {gpu}, operator by operator", "model": model, "gpu": gpu, "tp": tp,
                "kind": self.name, "text": "operator latencies from Vidur's per-operator profiles, not a catalogue "
                                           "deployment: not checked against real runs"}

    def page_context(self, comp, summaries: dict[str, dict]) -> dict:
        from planner.comparisons.kind_pages import operator_context
        from planner.opscaling.presentation import result_context

        return {**result_context(spec_of(comp.scenario), summaries.get(VARIANT)), **operator_context(comp)}

    def export_csv(self, comp, summaries: dict[str, dict]) -> str:
        import csv
        import io

        out = io.StringIO()
        writer = csv.writer(out)
        writer.writerow(["comparison", "variant", "metric", "value"])
        for r in (comp.summary or {}).get("rows") or []:
            for metric, value in r.items():
                if metric not in ("key", "is_baseline"):
                    writer.writerow([comp.pk, r["key"], metric, value])
        return out.getvalue()

    def export_pdf(self, comp, summaries: dict[str, dict], failures: list[dict]) -> bytes:
        from planner.opscale.report import build_pdf

        return build_pdf(summaries[VARIANT], f"Operator-level report: {comp}", answer=self.answer(comp))
