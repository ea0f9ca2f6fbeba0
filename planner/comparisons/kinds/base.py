"""What every kind of comparison provides, and the one request every entry point (form, API, CLI) builds.

A comparison is one scenario and a list of variants run as child jobs, aggregated by the parent job. What a
scenario means, how a variant runs, how the results aggregate and how the page, the exports and the dashboard show
them depends on its *kind* (fleet strategies, serverless systems, operator-level plans). Each kind is one class
below's subclass, registered in ``planner.comparisons.kinds``; the views, jobs, selectors, API and CLI call the kind
and never branch on it.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

from planner.comparisons.core.variants import STRATEGIES


class RequestError(ValueError):
    """Bad input to a comparison, from any entry point: ``field`` (dotted path), a sentence, how to fix it."""

    def __init__(self, field: str, message: str, hint: str = "") -> None:
        super().__init__(f"{field}: {message}" if field else message)
        self.field, self.message, self.hint = field, message, hint


@dataclass(frozen=True)
class ComparisonRequest:
    """A comparison to start, as the form, the API and the CLI give it (parsed by ``kinds.parse_request``).

    ``choices`` are the variants chosen by name (fleet strategies, serverless systems); the other lists only
    concern fleet comparisons and are refused by a kind that has no use for them."""

    scenario: dict
    name: str = ""
    choices: tuple[str, ...] = ()
    baseline: str = ""
    schedulers: tuple[str, ...] = ()
    variants: tuple[dict, ...] = ()
    bundles: tuple[str, ...] = ()
    seeds: tuple[int, ...] = ()
    tune: dict = field(default_factory=dict)
    projection: dict = field(default_factory=dict)
    base_dir: str = ""

    def fleet_only(self) -> dict[str, Any]:
        """The fleet-only fields that were given (a serverless or operator-level kind refuses them)."""
        given = {"schedulers": self.schedulers, "variants": self.variants, "bundles": self.bundles,
                 "seeds": self.seeds, "tune": self.tune, "projection": self.projection}
        return {k: v for k, v in given.items() if v}


class ComparisonKind:
    """One kind of comparison. Subclasses set the names and implement the methods; the defaults raise."""

    name: str = ""  # stored as the scenario's "kind" (fleet scenarios carry none)
    label: str = ""  # in words, for pages
    noun: str = "strategy"  # what one variant is called on pages ("strategy", "system", "plan")
    default_choices: tuple[str, ...] = ()  # the variants a request naming none runs (none: the kind's service picks)

    def matches(self, scenario: dict) -> bool:
        return scenario.get("kind") == self.name

    # --- writes
    def start(self, *, team, user, request: ComparisonRequest):
        """Validate (RequestError naming the field; nothing stored) and create the comparison and its jobs."""
        raise NotImplementedError

    def simulate(self, comp, result, *, progress, base_dir: str = "") -> dict:
        """Run one variant; its metrics. Raise RequestError for a bad scenario (the job fails with it)."""
        raise NotImplementedError

    def job_summary(self, key: str, metrics: dict) -> dict:
        """The child job's small ``result`` (the figures a job row shows)."""
        return {"key": key}

    def load_check_pending(self, comp) -> bool:
        """Called when every variant run is final, before the aggregation is claimed: True while the kind has more
        runs to wait for (a fleet comparison replays its chosen strategy at a higher load for the decision card,
        planner/comparisons/load_check.py), starting them if need be. The default: none."""
        return False

    def aggregate(self, comp, summaries: dict[str, dict]) -> dict:
        """The comparison's ``summary`` from the finished variants' metrics (in the variants' order), with what the
        kind's extra runs found (a fleet comparison's ``load_check``)."""
        raise NotImplementedError

    # --- reads
    # staticmethod((summary, scenario) -> the card's answer or None): a kind whose card comes from its aggregate
    card_from_summary: Any = None

    def headline(self, comp) -> dict | None:
        """{"answer", "note", "verdict"} in words for the dashboard and lists; None before the aggregate. Here: the
        decision card's choice (or, when nothing meets the target, its best) and headline."""
        answer = self.answer(comp)
        if answer is None:
            return None
        return {"answer": (answer["choice"] or answer["best"])["key"],
                "verdict": "meets" if answer["status"] == "answer" else "misses", "note": answer["headline"]}

    def answer(self, comp) -> dict | None:
        """The decision card's ``answer`` (the shape of planner/decisions/answer.py) that the page, the API, the CLI
        and page 1 of the PDF show; None when the kind has none or before the aggregate. Here: from
        ``card_from_summary``, with the variants that failed."""
        if self.card_from_summary is None:
            return None
        from planner.comparisons.outcome import failures_of

        answer = self.card_from_summary(comp.summary or {}, comp.scenario or {})
        if answer is not None:
            answer["failed"] = {f["key"]: f for f in failures_of(comp)}
        return answer

    def catalogue_ref(self, scenario: dict) -> dict | None:
        """{"label", "model", "gpu", "tp", "kind", "text"}: the catalogue deployment a scenario whose latencies come
        from its paper's own tables stands for, and where they come from in words (its validation badge says so,
        planner/benchmarks/badges.py); None for a scenario whose deployments are the catalogue's own."""
        return None

    def page_context(self, comp, summaries: dict[str, dict]) -> dict:
        """Extra context for the comparison page (the template ``comparisons/<kind>_result.html``)."""
        return {}

    template: str = "comparisons/detail.html"

    def from_fleet_panel(self, request: ComparisonRequest) -> ComparisonRequest:
        """The request as this kind reads it when the form's fleet panel sent it (a scenario of this kind pasted
        there): the fleet panel's strategies, bundles and strategy baseline are not this kind's variants."""
        return replace(request, choices=(), bundles=(),
                       baseline="" if request.baseline in STRATEGIES else request.baseline)

    def text_lines(self, comp) -> list[str]:
        """The comparison's rows as plain text lines (the CLI): here, each row's figures."""
        return [f"  {r['key']}: " + ", ".join(f"{k} {v}" for k, v in r.items() if k not in ("key", "description"))
                for r in (comp.summary or {}).get("rows", [])]

    def export_csv(self, comp, summaries: dict[str, dict]) -> str:
        raise NotImplementedError

    def export_pdf(self, comp, summaries: dict[str, dict], failures: list[dict]) -> bytes:
        raise NotImplementedError
