"""The SageServe-like synthesiser spec's one schema (kind ``sageserve``; pydantic v2, Django-free), owned by the
generator and used by every caller (scenarios, comparisons, the trace pages and ``manage.py synth_trace`` through
``planner.ingest.synth``); see docs/traces.md.

``validate_synth_spec(spec)`` checks the whole spec before any work: unknown keys (with a "did you mean"),
strict types, finite numbers in range, and the expected request count against ``MAX_REQUESTS``.
Token lengths sampled from a real trace name it as ``{"empirical": {"trace": ID}}`` (resolved and
team-checked by the Django layer into a path) or inline lists; a file path is accepted only from trusted
callers (``allow_paths=True``: the CLI, or the Django layer after it resolved a trace id).
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Discriminator, Field, Tag, ValidationError, model_validator
from pydantic_core import PydanticCustomError

from planner.inputs import NUL_MESSAGE, Strict, explain, integer, nul_path, num

MAX_REQUESTS = 50_000_000
MAX_EMPIRICAL = 1_000_000
TierName = Literal["IW-F", "IW-N", "NIW"]
Weight = Annotated[float, Field(ge=0.0, le=1e9, allow_inf_nan=False)]
Factor = Annotated[float, Field(ge=0.0, le=100.0, allow_inf_nan=False)]
Tokens = Annotated[int, Field(ge=0, le=10_000_000)]


class SpecInputError(ValueError):
    def __init__(self, where: str, message: str, hint: str = "") -> None:
        super().__init__(f"{where}: {message}")
        self.where = where
        self.message = message
        self.hint = hint


class Diurnal(Strict):
    amplitude: float = num(default=0.0, ge=0.0, le=1.0)
    peak_hour: float = num(default=14.0, ge=0.0, le=24.0)


class Bursts(Strict):
    per_day: float = num(default=0.0, ge=0.0, le=1440.0)
    multiplier: float = num(default=1.0, ge=0.0, le=1000.0)
    duration_s: float = num(default=600.0, ge=0.0, le=7 * 86400.0)


class TierSpec(Strict):
    share: float = num(default=1.0, ge=0.0, le=1e9)
    diurnal: Diurnal | None = None
    weekday_factors: list[Factor] | None = Field(None, min_length=7, max_length=7)
    weekend_factor: float = num(default=1.0, ge=0.0, le=100.0)
    noise: float = num(default=0.0, ge=0.0, le=3.0)
    bursts: Bursts | None = None
    growth_per_day: float = num(default=0.0, ge=-0.99, le=10.0)
    deadline_s: float | None = num(default=None, ge=0.0, le=1e9)


class Lognormal(Strict):
    median: float = num(default=1000.0, gt=0.0, le=1e7)
    sigma: float = num(default=1.0, ge=0.0, le=5.0)


class Length(Strict):
    min: int = integer(default=1, ge=0, le=10_000_000)
    max: int = integer(default=128_000, ge=0, le=10_000_000)
    fixed: float | None = num(default=None, ge=0.0, le=1e7)
    lognormal: Lognormal | None = None


class InlineEmpirical(Strict):
    input: list[Tokens] = Field(min_length=1, max_length=MAX_EMPIRICAL)
    output: list[Tokens] = Field(min_length=1, max_length=MAX_EMPIRICAL)


class TraceEmpirical(Strict):
    trace: int = integer(ge=1)


class PathEmpirical(Strict):
    path: str = Field(min_length=1, max_length=4096)


def _empirical_tag(value: Any) -> str:
    if isinstance(value, str):
        return "<path>"
    if isinstance(value, dict) and "path" in value:
        return "<pathobj>"
    if isinstance(value, dict) and "trace" in value:
        return "<trace>"
    return "<inline>"


Empirical = Annotated[
    Annotated[str, Tag("<path>")] | Annotated[PathEmpirical, Tag("<pathobj>")]
    | Annotated[TraceEmpirical, Tag("<trace>")] | Annotated[InlineEmpirical, Tag("<inline>")],
    Discriminator(_empirical_tag),
]


class Dist(Strict):
    input: Length | None = None
    output: Length | None = None
    empirical: Empirical | None = None


class TokenSpec(Strict):
    default: Dist | None = None
    by_model: dict[str, Dist] | None = None
    by_tier: dict[TierName, Dist] | None = None
    by_model_tier: dict[str, Dist] | None = None
    empirical: Empirical | None = None
    input: Length | None = None
    output: Length | None = None


class Override(Strict):
    region: str | None = None
    model: str | None = None
    tier: TierName | None = None
    factor: float = num(ge=0.0, le=1e6)


Weights = list[Annotated[str, Field(min_length=1, max_length=200)]] | dict[str, Weight]


class SynthSpec(Strict):
    name: str = Field("", max_length=500)
    description: str = Field("", max_length=20_000)
    seed: int = integer(default=0)
    days: float = num(default=1.0, ge=1 / 24, le=366.0)
    start_weekday: int = integer(default=0, ge=0, le=6)
    step_s: float = num(default=60.0, ge=1.0, le=3600.0)
    noise_step_s: float = num(default=900.0, ge=1.0, le=366 * 86400.0)
    total_rps: float = num(default=1.0, ge=0.0, le=1e6)
    regions: Weights = Field(min_length=1, max_length=1000)
    models: Weights = Field(min_length=1, max_length=1000)
    tiers: dict[TierName, TierSpec] = Field(min_length=1)
    overrides: list[Override] = Field(default_factory=list, max_length=10_000)
    tokens: TokenSpec | None = None
    growth_per_day: float = num(default=0.0, ge=-0.99, le=10.0)

    @model_validator(mode="after")
    def _bounded(self) -> SynthSpec:
        expected = self.total_rps * self.days * 86400.0
        if expected > MAX_REQUESTS:
            raise PydanticCustomError(
                "too_many_requests", "asks for about {n} requests (limit {limit})",
                {"n": f"{expected:,.0f}", "limit": f"{MAX_REQUESTS:,}", "hint": "lower total_rps or days"})
        return self


def _paths_in(spec: Any, where: str = "") -> str | None:
    """The location of the first file path in a spec's token sources, else None."""
    tokens = spec.get("tokens") if isinstance(spec, dict) else None

    def visit(node: Any, here: str) -> str | None:
        if isinstance(node, dict):
            for key, value in node.items():
                if key == "empirical" and (isinstance(value, str) or (isinstance(value, dict) and "path" in value)):
                    return f"{here}.empirical"
                found = visit(value, f"{here}.{key}")
                if found:
                    return found
        return None

    return visit(tokens, "tokens") if tokens is not None else None


def validate_synth_spec(spec: Any, *, allow_paths: bool = False) -> SynthSpec:
    """The validated spec model; SpecInputError(where, message, hint) on the first problem."""
    if not isinstance(spec, dict):
        raise SpecInputError("spec", "must be a JSON object", "see fixtures/workloads/sageserve_day.json")
    bad = nul_path(spec)
    if bad:
        raise SpecInputError(bad, NUL_MESSAGE, "remove the NUL character")
    try:
        model = SynthSpec.model_validate(spec)
    except ValidationError as exc:
        where, message, hint = explain(exc)
        raise SpecInputError(where, message, hint) from None
    if not allow_paths:
        found = _paths_in(spec)
        if found:
            raise SpecInputError(found, "file paths are not accepted here",
                                 'sample token lengths from one of your traces: {"empirical": {"trace": ID}}')
    return model
