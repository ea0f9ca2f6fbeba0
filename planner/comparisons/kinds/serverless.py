"""Serverless comparisons: SLINFER, the ServerlessLLM baselines and the ablations on shared CPU/GPU nodes
(simulations/engine/serverless), SLO-met requests, nodes and energy side by side."""

from __future__ import annotations

from planner.comparisons import serverless as service
from planner.comparisons.core import serverless as core
from planner.comparisons.core.kind_answer import serverless_answer
from planner.comparisons.kinds.base import ComparisonKind, ComparisonRequest, RequestError


def _spec_error(exc) -> RequestError:
    where = f"scenario.{exc.where}" if exc.where else "scenario"
    return RequestError(where, exc.message, exc.hint or "fix this field of the serverless scenario")


class ServerlessKind(ComparisonKind):
    name = core.KIND
    label = "Serverless systems on shared CPU/GPU nodes (SLINFER)"
    card_from_summary = staticmethod(serverless_answer)
    noun = "system"
    template = "comparisons/serverless_detail.html"

    def matches(self, scenario: dict) -> bool:
        return core.is_serverless(scenario)

    def start(self, *, team, user, request: ComparisonRequest):
        from simulations.engine.serverless.spec import SpecError

        extra = request.fleet_only()
        if extra:
            name = next(iter(extra))
            raise RequestError(name, f"a serverless comparison has no {name}; choose its systems instead",
                               f"systems: {', '.join(core.SYSTEMS)}")
        try:
            return service.start_serverless_comparison(team=team, user=user, scenario=request.scenario,
                                                       systems=list(request.choices) or None,
                                                       baseline=request.baseline or None, name=request.name)
        except SpecError as exc:
            raise _spec_error(exc) from None
        except core.ServerlessVariantError as exc:
            raise RequestError(exc.field, exc.message, f"choose from {', '.join(core.SYSTEMS)}") from None

    def simulate(self, comp, result, *, progress, base_dir: str = "") -> dict:
        from simulations.engine.serverless.spec import SpecError

        progress(0.0, f"{result.key}: simulating the serverless scenario")
        try:
            return service.simulate_variant(comp.scenario, {"key": result.key, "strategy": result.strategy,
                                                            "knobs": result.knobs})
        except SpecError as exc:
            raise _spec_error(exc) from exc

    def job_summary(self, key: str, metrics: dict) -> dict:
        return {"key": key, "slo_met": metrics.get("slo_met"), "avg_gpu_nodes": metrics.get("avg_gpu_nodes"),
                "energy_kwh": metrics.get("energy_kwh")}

    def aggregate(self, comp, summaries: dict[str, dict]) -> dict:
        summary = core.aggregate(summaries, comp.baseline, [r.key for r in comp.results.all()])
        if not summary["rows"]:
            summary["error"] = "no system run finished"
        return summary

    def catalogue_ref(self, scenario: dict) -> dict | None:
        """SLINFER's measured tables stand for the scenario's model on the catalogue's A100-80GB."""
        from simulations.engine.serverless.spec import CATALOGUE_MODELS

        if not isinstance(scenario.get("model"), str):
            return None
        model = {v: k for k, v in CATALOGUE_MODELS.items()}.get(scenario["model"], scenario["model"])
        return {"label": f"{model} on SLINFER's GPU nodes", "model": model, "gpu": "a100-80gb", "tp": None,
                "kind": self.name, "text": "latencies from SLINFER's measured CPU/GPU tables (the paper's artefact), "
                                           "not a catalogue deployment: not checked against real runs"}

    def page_context(self, comp, summaries: dict[str, dict]) -> dict:
        from planner.comparisons.serverless_page import page_context

        return page_context(comp, summaries)

    def export_csv(self, comp, summaries: dict[str, dict]) -> str:
        from planner.comparisons.core.serverless_report import to_csv

        return to_csv(comp.summary or {})

    def export_pdf(self, comp, summaries: dict[str, dict], failures: list[dict]) -> bytes:
        from planner.comparisons.core.serverless_report import build_pdf

        return build_pdf(title=f"Serverless report: {comp}", scenario=comp.scenario, aggregate=comp.summary,
                         failures=failures, summaries=summaries, answer=self.answer(comp))
