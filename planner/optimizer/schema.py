"""The capacity-plan JSON's one schema (pydantic v2, Django-free); the format is docs/optimizer.md.

Every rule about one object lives here: unknown keys (with a "did you mean"), strict types, finite numbers in
range, non-blank names, distinct regions, a price per GPU type, quantile levels, min <= max instances.
``planner.optimizer.scenario.parse_scenario`` validates the JSON here once, then only resolves the
cross-references of the typed plan (a deployment's GPU type, a demand's region, the horizon) into the frozen
``Scenario``.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import AfterValidator, Field, ValidationError, field_validator, model_validator
from pydantic_core import PydanticCustomError

from planner.inputs import NUL_MESSAGE, Strict, every_problem, explain, integer, nul_path, num

MAX_HOURS = 168
TPS = Annotated[float, Field(ge=0.0, le=1e12, allow_inf_nan=False)]
Series = TPS | Annotated[list[TPS], Field(min_length=1, max_length=10_000)]


def _not_blank(value: str) -> str:
    if not value.strip():
        raise PydanticCustomError("blank", "must be a non-empty string")
    return value


Name = Annotated[str, Field(min_length=1, max_length=200), AfterValidator(_not_blank)]
Price = Annotated[float, Field(ge=0.0, le=1e7, allow_inf_nan=False)]
GPUs = Annotated[int, Field(ge=0, le=10_000_000)]
# an endpoint's pool: "all" (aggregated), or the prefill / decode pool of a disaggregated endpoint (the two-pool
# form, docs/optimizer.md): a pool's theta and demand count the tokens of its phase (prompt / output tokens/s)
PoolName = Literal["all", "prefill", "decode"]


class GpuPrices(Strict):
    on_demand: Price | None = None
    reserved: Price | None = None
    spot: Price | None = None

    @model_validator(mode="after")
    def _priced(self):
        if self.on_demand is None and self.reserved is None:
            raise PydanticCustomError("unpriced", "needs an on_demand or a reserved price")
        return self

    def prices(self) -> dict[str, float]:
        """Option -> $ per GPU-hour, for the options given."""
        return {k: float(v) for k, v in (("reserved", self.reserved), ("on_demand", self.on_demand),
                                         ("spot", self.spot)) if v is not None}


class Deployment(Strict):
    name: Name | None = None  # a hardware-catalogue deployment; the keys below override it
    model: Name | None = None
    gpu: Name | None = None
    gpus_per_instance: int = integer(default=1, ge=1, le=4096)
    theta_tps: float = num(default=None, gt=0.0, le=1e12)
    startup_s: float = num(default=600.0, ge=0.0, le=7 * 86400.0)
    pool: PoolName = "all"


class Demand(Strict):
    model: Name
    region: Name
    pool: PoolName = "all"
    tps: Series
    quantiles: dict[str, Series] | None = Field(None, max_length=100)
    std: Series | None = None
    cv: float = num(default=None, ge=0.0, le=100.0)

    @field_validator("quantiles")
    @classmethod
    def _levels(cls, value: dict | None) -> dict | None:
        for key in value or {}:
            try:
                level = float(key)
            except ValueError:
                raise PydanticCustomError("quantile_level", "quantile level {key} is not a number",
                                          {"key": repr(key)}) from None
            if not 0.0 <= level <= 1.0:
                raise PydanticCustomError("quantile_level", "quantile level {key} must be in [0, 1]",
                                          {"key": repr(key)})
        return value


class RegionGpu(Strict):
    region: Name
    gpu: Name
    max_gpus: GPUs


class Spot(Strict):
    risk_discount: float = num(default=0.0, ge=0.0, le=0.99)
    available: list[RegionGpu] = Field(default_factory=list, max_length=10_000)


class Initial(Strict):
    model: Name
    region: Name
    pool: PoolName = "all"
    gpu: Name
    instances: int = integer(ge=0, le=10_000_000)


class InstanceLimits(Strict):
    model: Name
    region: Name
    pool: PoolName = "all"
    min_instances: int = integer(default=None, ge=0, le=10_000_000)
    max_instances: int = integer(default=None, ge=0, le=10_000_000)

    @model_validator(mode="after")
    def _ordered(self):
        if self.min_instances is not None and self.max_instances is not None and self.min_instances > self.max_instances:
            raise PydanticCustomError("limits_order", "min_instances exceeds max_instances")
        return self


class Latency(Strict):
    from_: Name = Field(alias="from", validation_alias="from")
    to: Name
    ms: float = num(ge=0.0, le=1e7)
    symmetric: bool = True


class Rerouting(Strict):
    enabled: bool = False
    max_latency_ms: float | None = num(default=None, ge=0.0, le=1e7)
    latency_ms: list[Latency] = Field(default_factory=list, max_length=100_000)
    min_local_share: float = num(default=0.0, ge=0.0, le=1.0)


class Solver(Strict):
    name: Literal["highs", "cbc"] = "highs"
    time_limit_s: float = num(default=60.0, ge=0.1, le=3600.0)
    gap_rel: float = num(default=0.01, ge=0.0, le=0.5)


class DemandFromTrace(Strict):
    trace_id: int | None = integer(default=None, ge=1)
    path: str | None = Field(None, max_length=4096)  # the CLI only; the web layer refuses it
    tiers: list[Literal["IW-F", "IW-N", "NIW"]] | None = None
    statistic: Literal["peak", "mean"] = "peak"
    window_s: float = num(default=300.0, ge=1.0, le=3600.0)
    start_hour: int = integer(default=0, ge=0, le=1_000_000)
    cv: float | None = num(default=None, ge=0.0, le=100.0)
    resolved: bool = False


class PlanInput(Strict):
    name: str = Field("scenario", max_length=500)
    description: str = Field("", max_length=20_000)
    hours: int = integer(default=24, ge=1, le=MAX_HOURS)
    risk_quantile: float | None = num(default=None, gt=0.0, lt=1.0)
    regions: list[Name] = Field(min_length=1, max_length=1000)
    gpus: dict[str, GpuPrices] = Field(default_factory=dict, max_length=1000)
    deployments: list[Deployment] = Field(min_length=1, max_length=10_000)
    demand: list[Demand] = Field(default_factory=list, max_length=100_000)
    quotas: list[RegionGpu] = Field(default_factory=list, max_length=100_000)
    spot: Spot | None = None
    initial: list[Initial] = Field(default_factory=list, max_length=100_000)
    limits: list[InstanceLimits] = Field(default_factory=list, max_length=100_000)
    rerouting: Rerouting | None = None
    start_fee: float = num(default=0.0, ge=0.0, le=1e9)
    shortfall_penalty_per_tps_hour: float | None = num(default=None, gt=0.0, le=1e12)
    solver: Solver | None = None
    demand_from_trace: DemandFromTrace | None = None

    @field_validator("regions")
    @classmethod
    def _distinct(cls, value: list[str]) -> list[str]:
        if len(set(value)) != len(value):
            raise PydanticCustomError("duplicates", "has duplicates")
        return value


def validate_plan(data: Any) -> PlanInput:
    """The validated plan model; raises ``(where, message, hint)`` as PlanSchemaError."""
    bad = nul_path(data)
    if bad:
        raise PlanSchemaError(bad, NUL_MESSAGE, "remove the NUL character")
    try:
        return PlanInput.model_validate(data)
    except ValidationError as exc:
        raise PlanSchemaError(*explain(exc)) from None


def plan_problems(data: Any) -> list[tuple[str, str, str]]:
    """Every ``(where, message, hint)`` the schema finds in ``data`` ([] when it passes): the page lists them all,
    where the parser stops at the first."""
    try:
        PlanInput.model_validate(data)
    except ValidationError as exc:
        return every_problem(exc)
    return []


class PlanSchemaError(ValueError):
    def __init__(self, where: str, message: str, hint: str = "") -> None:
        super().__init__(f"{where}: {message}")
        self.where, self.message, self.hint = where, message, hint
