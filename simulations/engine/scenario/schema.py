"""The scenario JSON's one schema (pydantic v2, Django-free): every caller parses through ``parse_scenario``.

The sections that mirror a frozen config dataclass of ``simulations.engine.scenario.config`` (deployment and its
latency coefficients, start-up delays, regions, endpoints, network, strategy, engine) are *derived* from
the dataclass with ``planner.inputs.section``: a field added to the dataclass joins the schema with its
type and default; only bounds and JSON spellings are declared here. The rest (workload, SLO targets per
tier, comparison-only keys) is declared by hand.

Inputs are sandboxed: a workload names a trace by id (resolved and team-checked by the Django layer), a
bundled trace by name (``fixture``, looked up in the listing of ``fixtures/traces/``) or a bundled
synthesiser spec by name (``synthesize``, from ``fixtures/workloads/``); no file path from a scenario
reaches the filesystem. Work is bounded by ``Limits`` (requests and simulated time per run), whose
defaults the Django app sets from settings at start-up.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import Discriminator, Field, Tag, ValidationError, field_validator, model_validator
from pydantic_core import PydanticCustomError

from planner.inputs import BIGINT, NUL_MESSAGE, JSONValue, Strict, explain, integer, nul_path, num, section, suggest
from simulations.engine.scenario.config import (
    DecodeCoeffs,
    DeploymentSpec,
    EndpointConfig,
    EngineConfig,
    KVLinkConfig,
    NetworkConfig,
    PolicyConfig,
    PrefillCoeffs,
    RegionConfig,
    ScenarioError,
    StartupDelays,
)

REPO_ROOT = Path(__file__).resolve().parents[3]
TRACE_FIXTURES = REPO_ROOT / "fixtures" / "traces"
WORKLOAD_FIXTURES = REPO_ROOT / "fixtures" / "workloads"
TRACE_SUFFIXES = (".csv", ".jsonl", ".parquet")

MAX_INSTANCES = 100_000  # per endpoint (and per spot pool / VM capacity)
MAX_COEFF_S = 3600.0  # no latency coefficient may exceed an hour per iteration / token
MAX_DELAY_S = 7 * 86400.0
MAX_RATE_SCALE = 10_000.0
MAX_SECONDS = 1e9  # about 31 years: SLO targets, simulated time


@dataclass(frozen=True)
class Limits:
    """Work one run may ask for; the Django app sets the defaults from settings (PLANNER_MAX_SIM_*)."""

    max_requests: int = 20_000_000
    max_sim_time_s: float = 8 * 86400.0


_DEFAULT_LIMITS = [Limits()]


def set_default_limits(limits: Limits) -> None:
    """Called once at start-up by the Django app (simulations.apps) with the values from settings."""
    _DEFAULT_LIMITS[0] = limits


def default_limits() -> Limits:
    return _DEFAULT_LIMITS[0]


def _listing(folder: Path, suffixes: tuple[str, ...]) -> dict[str, Path]:
    """Name -> file of the bundled fixtures: the whitelist (user input only ever selects from it)."""
    if not folder.is_dir():
        return {}
    return {p.stem: p for p in sorted(folder.iterdir()) if p.is_file() and p.suffix.lower() in suffixes}


def trace_fixtures() -> dict[str, Path]:
    return _listing(TRACE_FIXTURES, TRACE_SUFFIXES)


def workload_fixtures() -> dict[str, Path]:
    return _listing(WORKLOAD_FIXTURES, (".json",))


def _fixture_name(value: str, names: dict[str, Path], what: str) -> str:
    if value in names:
        return value
    stem = re.split(r"[\\/]", value)[-1].rsplit(".", 1)[0]
    hint = f"did you mean {stem!r}?" if stem in names and stem != value else suggest(value, list(names))
    raise PydanticCustomError("unknown_fixture", f"is not a bundled {what} (names, not paths)",
                              {"hint": hint + f"; bundled: {', '.join(sorted(names))}"})


# ----------------------------------------------------------------------------------------- deployments
Coeff = dict(ge=0.0, le=MAX_COEFF_S)
Prefill = section(PrefillCoeffs, "Prefill", bounds={k: Coeff for k in ("c0", "c1", "c2", "c_sq", "c_req")})
Decode = section(DecodeCoeffs, "Decode", bounds={k: Coeff for k in ("c0", "c_batch", "c_ctx")})
Delay = dict(ge=0.0, le=MAX_DELAY_S)
Startup = section(StartupDelays, "Startup", bounds={k: Delay for k in
                                                    ("vm_acquire_s", "load_same_region_s", "load_cross_region_s",
                                                     "spot_reclaim_s")})
Price = Annotated[float, Field(ge=0.0, le=1e7, allow_inf_nan=False)]
Name = Annotated[str, Field(min_length=1, max_length=200)]


class Device(Strict):
    """A deployment's device kind and power per device (energy reporting, simulations/engine/results/energy.py)."""

    kind: Literal["gpu", "cpu"] = "gpu"
    idle_w: float = num(default=0.0, ge=0.0, le=1e5)
    busy_w: float = num(default=0.0, ge=0.0, le=1e5)
    source: str = Field("", max_length=500)
    assumed: bool = True

    @model_validator(mode="after")
    def _busy_above_idle(self) -> Device:
        if self.busy_w < self.idle_w:
            raise PydanticCustomError("busy_below_idle", "busy power ({busy} W) is below idle power ({idle} W)",
                                      {"busy": self.busy_w, "idle": self.idle_w, "hint": "busy_w >= idle_w"})
        return self


class Energy(Strict):
    """Electricity price per region (``default`` for the others) and PUE; see docs/simulator.md, Energy."""

    usd_per_kwh: dict[str, Annotated[float, Field(ge=0.0, le=100.0, allow_inf_nan=False)]] = Field(
        default_factory=dict, max_length=1000)
    pue: float = num(default=1.0, ge=1.0, le=5.0)
Deployment = section(
    DeploymentSpec, "Deployment",
    fields={
        "name": (str, Field("", max_length=200)), "model": (str, Field("", max_length=200)),
        "gpu": (str, Field("", max_length=200)),
        "gpus_per_instance": (int | None, integer(default=None, ge=1, le=4096)),
        "prefill": (Prefill, ...), "decode": (Decode, ...), "startup": (Startup | None, None),
        "price_per_instance_hour": (dict[str, Price | None] | None, None),
        "device": (Device | None, None),
    },
    bounds={"tp": dict(ge=1, le=512), "weights_gb": dict(ge=0.0, le=1e6),
            "kv_capacity_tokens": dict(ge=1, le=10**12), "max_batch_size": dict(ge=1, le=10**7),
            "max_batch_tokens": dict(ge=1, le=10**9), "theta_tps": dict(ge=0.0, le=1e12),
            "kv_bytes_per_token": dict(ge=0.0, le=1e12), "max_model_len": dict(ge=0, le=10**9)},
    add={"theta_catalogue_tps": (float | None, num(default=None, ge=0.0)),  # comparison metadata (PDF)
         "theta_source": (str, Field("", max_length=2000))},
)


def _deployment_tag(value: Any) -> str:
    return "<name>" if isinstance(value, str) else "<spec>"


DeploymentRef = Annotated[Annotated[Name, Tag("<name>")] | Annotated[Deployment, Tag("<spec>")],
                          Discriminator(_deployment_tag)]


# ----------------------------------------------------------------------------------------- fleet
Region = section(RegionConfig, "Region", fields={
    "name": (Name, ...),
    "spot_pool": (dict[str, Annotated[int, Field(ge=0, le=MAX_INSTANCES)]], Field(default_factory=dict)),
}, bounds={"vm_capacity": dict(ge=0, le=MAX_INSTANCES)})


def _region_tag(value: Any) -> str:
    return "<name>" if isinstance(value, str) else "<region>"


RegionRef = Annotated[Annotated[Name, Tag("<name>")] | Annotated[Region, Tag("<region>")],
                      Discriminator(_region_tag)]
class Pool(Strict):
    """One pool of a disaggregated endpoint (docs/disaggregation.md): its deployment (GPU, TP) and count."""

    deployment: DeploymentRef  # type: ignore[valid-type]
    initial: int = integer(default=1, ge=0, le=MAX_INSTANCES)
    min_instances: Annotated[int, Field(alias="min", validation_alias="min")] = integer(default=1, ge=1,
                                                                                        le=MAX_INSTANCES)
    max_instances: Annotated[int | None, Field(alias="max", validation_alias="max")] = integer(
        default=None, ge=1, le=MAX_INSTANCES)


KVLink = section(KVLinkConfig, "KVLink", fields={
    "link_class": (Literal["nvlink", "infiniband", "infiniband-hdr", "ethernet"], "infiniband"),
    "bandwidth_gb_s": (float | None, num(default=None, gt=0.0, le=1e5)),
    "latency_s": (float | None, num(default=None, ge=0.0, le=10.0)),
})

Endpoint = section(
    EndpointConfig, "Endpoint",
    fields={"region": (str | None, Field(None, max_length=200)), "model": (str | None, Field(None, max_length=200)),
            "deployment": (DeploymentRef | None, None),  # required unless prefill_pool and decode_pool are given
            "max_instances": (int | None, integer(default=None, ge=0, le=MAX_INSTANCES))},
    aliases={"min_instances": "min", "max_instances": "max"},
    bounds={"initial": dict(ge=0, le=MAX_INSTANCES), "min_instances": dict(ge=0, le=MAX_INSTANCES)},
    exclude=("pool", "kv_link"),  # pool: set by the siloed autoscaler or a disaggregated endpoint's expansion
    add={"prefill_pool": (Pool | None, None), "decode_pool": (Pool | None, None), "kv_link": (KVLink | None, None)},
)
_Delay = Annotated[float, Field(ge=0.0, le=3600.0, strict=True, allow_inf_nan=False)]
# [probability, low_s, high_s]: a JSON list (lax container), strict finite numbers inside
Bin = Annotated[tuple[Annotated[float, Field(ge=0.0, le=1.0, strict=True, allow_inf_nan=False)], _Delay, _Delay],
                Field(strict=False)]
Network = section(NetworkConfig, "Network", fields={
    "bins": (list[Bin] | None, Field(None, min_length=1, max_length=100)),
    "apply_to": (Literal["cross_region", "all"], "cross_region"),
})


class Fleet(Strict):
    regions: list[RegionRef] = Field(default_factory=list, max_length=1000)
    endpoints: list[Endpoint] = Field(min_length=1, max_length=10_000)  # type: ignore[valid-type]
    network: Network | None = None  # type: ignore[valid-type]


# ----------------------------------------------------------------------------------------- strategy
def _policy_name(kind: str):
    def check(cls, value: str) -> str:
        from simulations.engine.policies import registry

        table = getattr(registry, kind.upper() + "S")
        if value not in table:
            raise PydanticCustomError("unknown_policy", f"unknown {kind} {value!r}".replace("{", "{{").replace("}", "}}"),
                                      {"hint": suggest(value, list(table))})
        return value

    return check


_POLICY_FIELDS = ("autoscaler", "region_router", "endpoint_router", "instance_router", "scheduler")
Strategy = section(
    PolicyConfig, "Strategy",
    fields={"autoscaler_params": (dict[str, JSONValue], Field(default_factory=dict)),
            "scheduler_params": (dict[str, JSONValue], Field(default_factory=dict))},
    aliases={"autoscaler_params": "params"},
    bounds={"region_threshold": dict(ge=0.0, le=1.0)},
    validators={**{f"_check_{k}": field_validator(k)(_policy_name(k)) for k in _POLICY_FIELDS},
                "_check_predictor": field_validator("predictor")(lambda cls, v: _predictor(v))},
)


def _predictor(value: str) -> str:
    from simulations.engine.workload.predictors import PREDICTORS

    if value and value not in PREDICTORS:
        raise PydanticCustomError("unknown_predictor", f"unknown predictor {value!r}".replace("{", "{{").replace("}", "}}"),
                                  {"hint": suggest(value, list(PREDICTORS))})
    return value


def _strategy_tag(value: Any) -> str:
    return "<name>" if isinstance(value, str) else "<strategy>"


StrategyRef = Annotated[Annotated[str, Tag("<name>")] | Annotated[Strategy, Tag("<strategy>")],
                        Discriminator(_strategy_tag)]

Engine = section(EngineConfig, "Engine", fields={
    "mode": (Literal["fast", "reference"], "fast"),
    "max_time_s": (float | None, num(default=None, gt=0.0, le=MAX_SECONDS)),
    "preemption": (Literal["vllm", "legacy"], "vllm"),
    "preemption_mode": (Literal["recompute", "swap"], "recompute"),
    "over_context": (Literal["reject", "truncate", "route", "ignore"], "reject"),
}, bounds={"timeline_step_s": dict(ge=0.0, le=86400.0), "seed": dict(ge=0, le=BIGINT),
           "swap_bandwidth_gb_s": dict(gt=0.0, le=1e6), "kv_watermark": dict(ge=0.0, le=0.5)})

Seconds = Annotated[float, Field(ge=0.0, le=MAX_SECONDS, allow_inf_nan=False)]


class TierSeconds(Strict):
    """Seconds per tier; ``null`` means no target."""

    iw_f: Seconds | None = Field(None, alias="IW-F", validation_alias="IW-F")
    iw_n: Seconds | None = Field(None, alias="IW-N", validation_alias="IW-N")
    niw: Seconds | None = Field(None, alias="NIW", validation_alias="NIW")

    def given(self) -> dict[str, float]:
        """Only the tiers the scenario names (null -> infinity)."""
        out = {}
        for name, info in type(self).model_fields.items():
            if name in self.model_fields_set:
                v = getattr(self, name)
                out[info.alias] = math.inf if v is None else float(v)
        return out


Positive = Annotated[float, Field(gt=0.0, le=MAX_SECONDS, allow_inf_nan=False)]


class TierPositive(Strict):
    """A positive number per tier (ITL targets in seconds, normalised-latency multiples); omitted = no target."""

    iw_f: Positive | None = Field(None, alias="IW-F", validation_alias="IW-F")
    iw_n: Positive | None = Field(None, alias="IW-N", validation_alias="IW-N")
    niw: Positive | None = Field(None, alias="NIW", validation_alias="NIW")

    def given(self) -> dict[str, float]:
        return {info.alias: float(getattr(self, name)) for name, info in type(self).model_fields.items()
                if getattr(self, name) is not None}


class TTFTPrompt(Strict):
    """TTFT target as a function of the prompt length L: min(max(min_s, L * per_token_s), max_s)."""

    min_s: float = num(default=0.0, ge=0.0, le=MAX_SECONDS)
    per_token_s: float = num(default=0.0, ge=0.0, le=MAX_SECONDS)
    max_s: float = num(default=MAX_SECONDS, gt=0.0, le=MAX_SECONDS)


class TierTTFTPrompt(Strict):
    iw_f: TTFTPrompt | None = Field(None, alias="IW-F", validation_alias="IW-F")
    iw_n: TTFTPrompt | None = Field(None, alias="IW-N", validation_alias="IW-N")
    niw: TTFTPrompt | None = Field(None, alias="NIW", validation_alias="NIW")

    def given(self) -> dict[str, dict]:
        return {info.alias: getattr(self, name).model_dump() for name, info in type(self).model_fields.items()
                if getattr(self, name) is not None}


class SLO(Strict):
    ttft_s: TierSeconds = Field(default_factory=TierSeconds)
    e2e_s: TierSeconds = Field(default_factory=TierSeconds)
    percentile: float = num(default=95.0, gt=0.0, le=100.0)
    # the richer SLOs (engine/results/slo.py)
    itl_s: TierPositive = Field(default_factory=TierPositive)
    itl_stat: Literal["mean", "max"] = "mean"
    normalised_latency_x: TierPositive = Field(default_factory=TierPositive)
    ttft_prompt: TierTTFTPrompt = Field(default_factory=TierTTFTPrompt)
    cold_start_grace_s: float = num(default=0.0, ge=0.0, le=MAX_SECONDS)
    window_s: float = num(default=60.0, gt=0.0, le=MAX_SECONDS)

    def rich_kwargs(self) -> dict:
        return {"itl_s": self.itl_s.given(), "itl_stat": self.itl_stat,
                "normalised_latency_x": self.normalised_latency_x.given(), "ttft_prompt": self.ttft_prompt.given(),
                "cold_start_grace_s": float(self.cold_start_grace_s), "window_s": float(self.window_s)}


# ----------------------------------------------------------------------------------------- workload
class TokenLengths(Strict):
    mean: float = num(default=None, gt=0.0, le=1e7)
    sigma: float = num(default=None, ge=0.0, le=5.0)
    max: int = integer(default=None, ge=1, le=10**7)


class Burst(Strict):
    at_s: float = num(ge=0.0, le=MAX_SECONDS)
    duration_s: float = num(gt=0.0, le=MAX_SECONDS)
    factor: float = num(default=8.0, gt=0.0, le=1000.0)


Weight = Annotated[float, Field(ge=0.0, le=1e9, allow_inf_nan=False)]


class Synthetic(Strict):
    """The engine's small synthetic generator (simulations.engine.workload.generator.diurnal), kind ``diurnal``."""

    kind: Literal["diurnal"] | None = None

    duration_s: float = num(default=86400.0, gt=0.0, le=366 * 86400.0)
    total_requests: int = integer(default=None, ge=1, le=10**9)
    rps: float = num(default=None, gt=0.0, le=1e6)
    diurnal_amplitude: float = num(default=0.6, ge=0.0, le=1.0)
    peak_hour: float = num(default=14.0, ge=0.0, le=24.0)
    tier_mix: dict[Literal["IW-F", "IW-N", "NIW"], Weight] | None = None
    model_weights: list[Weight] | dict[str, Weight] | None = None
    region_weights: list[Weight] | dict[str, Weight] | None = None
    input_tokens: TokenLengths | None = None
    output_tokens: TokenLengths | None = None
    burst: Burst | None = None
    seed: int = integer(default=None, ge=0)

    def expected_requests(self) -> float:
        if self.total_requests is not None:
            return float(self.total_requests)
        return float(self.rps if self.rps is not None else 10.0) * self.duration_s

    def to_spec(self) -> dict:
        return self.model_dump(exclude_unset=True, by_alias=True)


def _synthetic_tag(value: Any) -> str:
    """``workload.synthetic`` without a kind (or kind diurnal) is the original generator; the generator's stream
    kinds (poisson, gamma, batch, slinfer, mix) have their own models (simulations/engine/workload/generator/spec.py)."""
    from simulations.engine.workload.generator import STREAM_KINDS

    kind = value.get("kind") if isinstance(value, dict) else getattr(value, "kind", None)
    return "<stream>" if kind in STREAM_KINDS else "<diurnal>"


def _stream_spec():
    from simulations.engine.workload.generator.spec import StreamSpec

    return StreamSpec


SyntheticRef = Annotated[Annotated[Synthetic, Tag("<diurnal>")] | Annotated[_stream_spec(), Tag("<stream>")],
                         Discriminator(_synthetic_tag)]


def expected_requests(synthetic) -> float:
    """About how many requests a ``workload.synthetic`` asks for (0 when bounded by a bundled file)."""
    if isinstance(synthetic, Synthetic):
        return synthetic.expected_requests()
    from simulations.engine.workload.generator import expected_requests as generator_expected

    return generator_expected(synthetic)  # the parsed stream-kind model: not parsed again


class Rename(Strict):
    model: dict[str, Name] = Field(default_factory=dict)
    region: dict[str, Name] = Field(default_factory=dict)
    tier: dict[str, Literal["IW-F", "IW-N", "NIW"]] = Field(default_factory=dict)


class Workload(Strict):
    """Exactly one source: ``trace_id``, ``fixture``, ``synthetic`` or ``synthesize``."""

    trace_id: int | None = integer(default=None, ge=1)
    fixture: str | None = Field(None, max_length=200)
    synthetic: SyntheticRef | None = None  # type: ignore[valid-type]
    synthesize: str | dict[str, JSONValue] | None = None  # a bundled spec's name, or the spec inline
    spec_overrides: dict[str, JSONValue] | None = None
    rename: Rename | None = None
    seed: int | None = integer(default=None, ge=0)
    trace_path: JSONValue = None  # refused below, with a clear message
    frame: bool = False  # set by the comparison runner: the frame is passed in
    rate_scale: float = num(default=1.0, gt=0.0, le=MAX_RATE_SCALE)
    limit: int | None = integer(default=None, ge=1)
    model: str | None = Field(None, max_length=200)
    region: str | None = Field(None, max_length=200)
    tier: Literal["IW-F", "IW-N", "NIW"] | None = None

    @field_validator("trace_path")
    @classmethod
    def _no_paths(cls, value: Any) -> None:
        if value is not None:
            raise PydanticCustomError(
                "path_refused", "file paths are not accepted in a scenario",
                {"hint": "upload the trace and give workload.trace_id, or name a bundled trace with workload.fixture "
                         f"(one of: {', '.join(sorted(trace_fixtures()))})"})

    @field_validator("fixture")
    @classmethod
    def _known_fixture(cls, value: str | None) -> str | None:
        return None if value is None else _fixture_name(value, trace_fixtures(), "trace")

    @field_validator("synthesize")
    @classmethod
    def _known_spec(cls, value):
        if isinstance(value, str):
            return _fixture_name(value, workload_fixtures(), "workload spec")
        return value

    @model_validator(mode="after")
    def _one_source(self) -> Workload:
        given = [k for k in ("trace_id", "fixture", "synthetic", "synthesize") if getattr(self, k) is not None]
        if self.frame:
            given.append("frame")
        if len(given) != 1:
            raise PydanticCustomError(
                "workload_source", "give exactly one of trace_id, fixture, synthetic or synthesize"
                                   + (f" (got {', '.join(given)})" if given else ""),
                {"hint": "e.g. {\"fixture\": \"azure_code_2023\"} or {\"trace_id\": 12}"})
        if self.synthetic is not None and not isinstance(self.synthetic, Synthetic):
            from simulations.engine.workload.generator import find_paths

            found = find_paths(self.synthetic.model_dump(exclude_unset=True))
            if found:
                raise PydanticCustomError(
                    "path_refused", "file paths are not accepted in a scenario (synthetic.{where})",
                    {"where": found, "hint": "name a bundled SLINFER trace (\"trace\") or sample lengths inline"})
        if self.spec_overrides is not None and self.synthesize is None:
            raise PydanticCustomError("workload_source", "spec_overrides only applies to synthesize",
                                      {"hint": "remove spec_overrides or use synthesize"})
        return self


class StrategyPolicies(Strict):
    """Per-strategy policy overrides of a comparison scenario (``strategy_policies``)."""

    region_router: str | None = None
    endpoint_router: str | None = None
    instance_router: str | None = None
    scheduler: str | None = None

    @field_validator("region_router", "endpoint_router", "instance_router", "scheduler")
    @classmethod
    def _known(cls, value, info):
        return value if value is None else _policy_name(info.field_name)(cls, value)


class ForecastHistory(Strict):
    days: int = integer(default=0, ge=0, le=28)


class ScenarioInput(Strict):
    """A scenario (docs/simulator.md); comparison scenarios add the keys marked so (docs/comparisons.md)."""

    name: str = Field("scenario", max_length=500)
    description: str = Field("", max_length=20_000)
    seed: int | None = integer(default=None, ge=0)
    deployments: dict[str, Deployment] = Field(default_factory=dict)  # type: ignore[valid-type]
    fleet: Fleet
    strategy: StrategyRef | None = None
    slo: SLO = Field(default_factory=SLO)
    engine: Engine | None = None  # type: ignore[valid-type]
    workload: Workload
    energy: Energy | None = None
    # comparison-only
    strategy_params: dict[str, dict[str, JSONValue]] = Field(default_factory=dict)
    # routers / scheduler per strategy name, and a preset's name and the source of each of its settings
    strategy_policies: dict[str, StrategyPolicies] = Field(default_factory=dict)
    preset: str = Field("", max_length=200)
    preset_sources: dict[str, str] = Field(default_factory=dict)
    forecast_history: ForecastHistory | None = None
    niw_queue: bool = True
    price_sources: dict[str, str] = Field(default_factory=dict)
    paper: JSONValue = None


def validate_input(data: Any) -> ScenarioInput:
    """The validated scenario model, or ScenarioError naming the field (with a hint)."""
    if not isinstance(data, dict):
        raise ScenarioError("scenario", "must be a JSON object", hint="see docs/simulator.md")
    bad = nul_path(data)
    if bad:
        raise ScenarioError(bad, NUL_MESSAGE, hint="remove the NUL character")
    try:
        return ScenarioInput.model_validate(data)
    except ValidationError as exc:
        where, message, hint = explain(exc)
        raise ScenarioError(where, message, hint=hint) from None


def synth_spec(workload: Workload) -> dict:
    """The planner.ingest synthesiser spec of a ``synthesize`` workload: bundled or inline, overrides merged,
    validated by the synthesiser's own schema (errors name ``workload.synthesize...``)."""
    import json

    from planner.inputs import deep_merge

    spec = workload.synthesize
    if isinstance(spec, str):
        spec = json.loads(workload_fixtures()[spec].read_text())
    spec = deep_merge(spec, workload.spec_overrides or {})
    from simulations.engine.workload.generator import GeneratorError, validate

    try:
        validate(spec, allow_paths=False)
    except GeneratorError as exc:
        where = "" if exc.where in ("", "spec") else exc.where
        raise ScenarioError(f"workload.synthesize.{where}".rstrip("."), exc.message, hint=exc.hint) from None
    return spec


__all__ = ["Limits", "ScenarioInput", "default_limits", "set_default_limits", "trace_fixtures", "validate_input",
           "workload_fixtures"]
