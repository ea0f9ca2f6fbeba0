"""Fleet comparisons: autoscaling strategies (SageServe, PreServe, Chiron and the baselines) replayed through the
fleet simulator on one scenario, savings against a baseline strategy."""

from __future__ import annotations

from planner.comparisons import selectors
from planner.comparisons.core.variants import VariantError
from planner.comparisons.families import DEFAULT_STRATEGIES
from planner.comparisons.kinds.base import ComparisonKind, ComparisonRequest, RequestError
from planner.comparisons.services import start_comparison, team_trace, validate_scenario


def _run(scenario: dict, variant: dict, *, progress, base_dir: str, trace=None):
    """Indirection so tests can replace the engine run with a canned summary."""
    from planner.comparisons.core.runner import run_variant

    return run_variant(scenario, variant, progress=progress, base_dir=base_dir or None, trace=trace)


def _trace_kwargs(comp) -> dict:
    """{"trace": the normalised file} when the scenario replays one of the team's uploaded traces
    (``workload.trace_id``); the engine reads it with its one trace reader."""
    trace_id = ((comp.scenario or {}).get("workload") or {}).get("trace_id")
    if trace_id is None:
        return {}
    return {"trace": team_trace(trace_id, comp.team).normalised_file}


def _scenario_error(exc) -> RequestError:
    return RequestError(f"scenario.{exc.field}", exc.message, getattr(exc, "hint", "") or
                        "fix this field of the scenario and start the comparison again")


class FleetKind(ComparisonKind):
    name = "fleet"
    label = "Fleet autoscaling strategies"
    noun = "strategy"
    default_choices = DEFAULT_STRATEGIES
    template = "comparisons/detail.html"

    def matches(self, scenario: dict) -> bool:
        return scenario.get("kind", "fleet") == "fleet"

    def start(self, *, team, user, request: ComparisonRequest):
        from simulations.engine import ScenarioError

        try:
            validate_scenario(request.scenario)
            return start_comparison(
                team=team, user=user, scenario=request.scenario, strategies=list(request.choices),
                schedulers=list(request.schedulers), variants=list(request.variants),
                baseline=request.baseline or None, name=request.name, projection=request.projection or None,
                bundles=list(request.bundles), seeds=list(request.seeds) or None, tune=request.tune or None,
                base_dir=request.base_dir)
        except ScenarioError as exc:
            raise _scenario_error(exc) from None
        except VariantError as exc:
            raise RequestError(exc.field, exc.message, "see the strategies and bundles the form offers") from None

    def simulate(self, comp, result, *, progress, base_dir: str = "") -> dict:
        from planner.comparisons.load_check import load_variant
        from simulations.engine import ScenarioError

        variant = {"key": result.key, "strategy": result.strategy, "scheduler": result.scheduler,
                   "knobs": result.knobs}
        # the comparison's own variant list carries the rest (bundle, seed, tuning role); a load replay runs its
        # strategy run's variant on the scenario at 1.2x the load
        scenario, meta = load_variant(comp, result)
        variant.update({k: v for k, v in meta.items() if k in ("bundle", "seed", "group", "role")})
        try:
            return _run(scenario, variant, progress=progress, base_dir=base_dir, **_trace_kwargs(comp))
        except ScenarioError as exc:
            raise RequestError(exc.field, exc.message, "fix this field of the scenario and start the comparison "
                                                       "again") from exc

    def job_summary(self, key: str, metrics: dict) -> dict:
        tot = metrics.get("totals", {})
        return {"key": key, "instance_hours": tot.get("instance_hours"), "gpu_hours": tot.get("gpu_hours"),
                "cost_usd": tot.get("cost_usd")}

    def load_check_pending(self, comp) -> bool:
        from planner.comparisons.load_check import load_check_pending

        return load_check_pending(comp)

    def aggregate(self, comp, summaries: dict[str, dict]) -> dict:
        from planner.comparisons.core.aggregate import aggregate
        from planner.comparisons.core.fair import fair_summary
        from planner.comparisons.load_check import load_check_summary

        order = [r.key for r in comp.results.all()]
        if comp.baseline not in summaries:
            return {"error": f"the baseline {comp.baseline!r} did not finish; no savings can be computed"}
        summary = aggregate(summaries, comp.baseline, order=order, projection=comp.projection)
        variants = comp.variants or []
        if any("seed" in v or v.get("role") == "tuning" for v in variants):
            summary["fair"] = fair_summary(summaries, variants, comp.baseline)
        check = load_check_summary(comp) if "rows" in summary else None
        if check is not None:
            summary["load_check"] = check
        return summary

    def headline(self, comp) -> dict | None:
        kpis = selectors.kpis(comp)
        if kpis is None:
            return None
        answer = kpis["answer_row"]
        if answer is None:
            why = kpis["reasons"][0]["kind"] if kpis["reasons"] else ""
            return {"answer": "no strategy meets the SLO targets", "verdict": "misses",
                    "note": f"the cheapest is {kpis['cheapest']}" + (f"; main reason: {why}" if why else "")}
        if answer["is_baseline"]:
            return {"answer": answer["key"], "verdict": answer["verdict"],
                    "note": "keep the baseline: the cheapest strategy that meets the SLO targets"}
        return {"answer": answer["key"], "verdict": answer["verdict"],
                "note": f"{answer['saving_words']} over the simulated {kpis['span']} against {comp.baseline}"}

    def answer(self, comp) -> dict | None:
        return selectors.fleet_answer(comp)

    def page_context(self, comp, summaries: dict[str, dict]) -> dict:
        from planner.comparisons.fleet_page import page_context

        return page_context(comp, summaries)

    def export_csv(self, comp, summaries: dict[str, dict]) -> str:
        from planner.comparisons.core.export import to_csv

        return to_csv(summaries, comp.summary if comp.summary.get("rows") else None)

    def export_pdf(self, comp, summaries: dict[str, dict], failures: list[dict]) -> bytes:
        from planner.comparisons.core.report import build_pdf
        from planner.comparisons.core.runner import describe_assumptions
        from planner.opscaling.selectors import operator_level_story

        aggregate = {**comp.summary, "variants": comp.variants or [], "extra_story": operator_level_story(
            comp.team, (comp.scenario.get("workload") or {}).get("trace_id"))}
        return build_pdf(title=f"Cost report: {comp}", assumptions=describe_assumptions(comp.scenario, summaries),
                         aggregate=aggregate, summaries=summaries, failures=failures, answer=self.answer(comp))

    def from_fleet_panel(self, request: ComparisonRequest) -> ComparisonRequest:
        return request  # the panel's own kind

    def text_lines(self, comp) -> list[str]:
        """A table of the variants, the fair comparison over seeds and the energy of each variant."""
        summary = comp.summary or {}
        pct = lambda x: "   -  " if x is None else f"{100 * x:5.1f}%"  # noqa: E731
        lines = [f"{'variant':24} {'inst-h':>9} {'GPU-h':>9} {'cost $':>10} {'saved%':>7} {'$/week':>10} "
                 f"{'waste':>7} {'IW-F':>6} {'IW-N':>6} {'NIW':>6}"]
        for r in summary.get("rows", []):
            att = [pct((r["tiers"].get(t) or {}).get("attainment")) for t in ("IW-F", "IW-N", "NIW")]
            saved = r["saved_gpu_hours_pct"]
            lines.append(f"{r['key']:24} {r['instance_hours']:9.1f} {r['gpu_hours']:9.1f} {r['cost_usd']:10.0f} "
                         f"{(saved if saved is not None else 0):6.1f}% {r['saved_usd_per_week']:10.0f} "
                         f"{r['waste_gpu_hours']:7.2f} {' '.join(att)}")
        lines += _fair_lines(summary.get("fair"))
        for e in summary.get("energy") or []:  # energy per variant: kWh and its cost
            kwh = e.get("energy_kwh")
            lines.append(f"  energy {e['key']}: " + (f"{_amount(kwh)} kWh, ${_amount(e['energy_cost_usd'])}"
                                                     if kwh is not None else
                                                     "no power figures for " + ", ".join(e.get("missing_power") or [])))
        return lines


def _amount(x: float) -> str:
    """Thousands with one decimal; a small figure with three significant digits (0.0397, not 0.0)."""
    return f"{x:,.1f}" if abs(x) >= 10 or x == 0 else f"{x:.3g}"


def _fair_lines(fair: dict | None) -> list[str]:
    """The fair comparison over seeds (mean [min, max]) as text lines; none without seeds."""
    if not fair:
        return []

    def rng(st, scale=1.0, fmt="{:+.1f}"):
        if not st:
            return "-"
        lo, mid, hi = (scale * st[k] for k in ("min", "mean", "max"))
        return f"{fmt.format(mid)} [{fmt.format(lo)}, {fmt.format(hi)}]"

    lines = ["", f"over seeds (mean [min, max]); {fair['rule']}",
             f"{'variant':34} {'GPU-h':>22} {'saved% vs untuned':>26} {'saved% vs tuned':>26} "
             f"{'tuned baseline':>28} IW-F attainment"]
    for r in fair["rows"]:
        t = r["vs_tuned"]
        lines.append(f"{r['key']:34} {rng(r['gpu_hours'], fmt='{:.0f}'):>22} "
                     f"{rng(r['vs_untuned']['saved_gpu_hours_pct']):>26} {rng(t.get('saved_gpu_hours_pct')):>26} "
                     f"{(t.get('baseline') or t.get('why') or '-')[:28]:>28} "
                     f"{rng(r['attainment'].get('IW-F'), 100.0, '{:.1f}')}")
    return lines
