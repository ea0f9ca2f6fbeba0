"""The input of an operator-level plan, parsed once at the boundary (pydantic v2, strict, no extra keys,
finite numbers). Django-free: the API, the page, the CLI and the worker all call ``parse_spec``."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from planner.opscale.profiles import ARCHS, GPUS

Positive = Annotated[float, Field(gt=0, allow_inf_nan=False)]
# the hardware catalogue's names of the same models and GPU types (the names every other page uses)
CATALOGUE_MODELS = {"llama2-7b": "llama-2-7b", "llama2-70b": "llama-2-70b", "llama3.1-8b": "llama-3-8b"}
CATALOGUE_GPUS = {"a100-80gb": "a100", "h100-80gb": "h100", "a40": "a40"}


def catalogue_name(name: str, names: dict[str, str]) -> str:
    """The hardware catalogue's name of a profile's model or GPU (llama-3-8b -> llama3.1-8b, a100 -> a100-80gb), as
    every page and report names them; the profile's own name where the catalogue has none."""
    return next((k for k, v in names.items() if v == name), name)


class SpecError(ValueError):
    """Bad input: ``field`` (dotted path) and a sentence."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}")
        self.field = field
        self.message = message


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)


class SloSpec(_Strict):
    ttft_s: Positive | None = None
    tbt_s: Positive | None = None
    scale: Annotated[float, Field(ge=1.0, le=1000.0, allow_inf_nan=False)] = 5.0


class WorkloadSpec(_Strict):
    trace_id: Annotated[int, Field(ge=1)] | None = None
    path: str | None = None
    window_s: Annotated[float, Field(ge=1.0, le=86400.0, allow_inf_nan=False)] = 60.0
    length_stat: Literal["mean", "p50", "p90"] = "mean"
    rate_scale: Annotated[float, Field(gt=0, le=1000.0, allow_inf_nan=False)] = 1.0
    max_windows: Annotated[int, Field(ge=1, le=5000)] = 1440

    @model_validator(mode="after")
    def one_source(self):
        if (self.trace_id is None) == (self.path is None):
            raise ValueError("give exactly one of trace_id (one of your team's traces) or path (CLI only)")
        return self


class OptionsSpec(_Strict):
    units: Literal["physical", "paper"] = "physical"
    init_parallelism: Literal["model_plan", "min"] = "model_plan"
    downscale: Literal["every_op", "bottleneck"] = "every_op"
    interference: Literal["placed", "load", "sm_sum"] = "placed"
    kappa: Annotated[float, Field(ge=0.0, le=10.0, allow_inf_nan=False)] = 1.0
    eps_frac: Annotated[float, Field(ge=0.0, lt=1.0, allow_inf_nan=False)] = 0.05
    enforce_capacity: bool = False
    communication: bool = False
    model_tp: Literal[1, 2, 4, 8] = 1
    prefill_batch_max: Annotated[int, Field(ge=1, le=256)] = 32
    decode_batch_max: Annotated[int, Field(ge=1, le=1024)] = 256
    sharing: bool | None = None  # None: what the GPU type supports
    upscale: Literal["cheapest", "efficiency"] = "cheapest"
    band: Literal["stop", "refine"] = "stop"
    decode_length: Literal["context", "one"] = "context"
    # the product's fallback: a window whose operator-level placement needs more GPUs than model-level uses the
    # model-level placement (shown as such); the reproduction turns it off to measure the paper's algorithm
    fallback_model_level: bool = True


class OpscaleSpec(_Strict):
    name: Annotated[str, Field(max_length=200)] = ""
    model: str
    gpu: str
    slo: SloSpec = SloSpec()
    workload: WorkloadSpec
    options: OptionsSpec = OptionsSpec()
    ilp: bool = True
    ilp_time_limit_s: Annotated[float, Field(gt=0, le=600, allow_inf_nan=False)] = 10.0
    sweeps: bool = True

    @field_validator("model", mode="before")
    @classmethod
    def catalogue_model(cls, v):
        return CATALOGUE_MODELS.get(v, v) if isinstance(v, str) else v

    @field_validator("gpu", mode="before")
    @classmethod
    def catalogue_gpu(cls, v):
        return CATALOGUE_GPUS.get(v, v) if isinstance(v, str) else v

    @field_validator("model")
    @classmethod
    def known_model(cls, v: str) -> str:
        if v not in ARCHS:
            raise ValueError(f"unknown model {v!r}; known: {', '.join(sorted(ARCHS))}")
        return v

    @field_validator("gpu")
    @classmethod
    def known_gpu(cls, v: str) -> str:
        if v not in GPUS:
            raise ValueError(f"unknown GPU type {v!r}; known: {', '.join(sorted(GPUS))}")
        return v


def parse_spec(data) -> OpscaleSpec:
    """Validate a plan spec (a dict from JSON); raises SpecError naming the first bad field."""
    if not isinstance(data, dict):
        raise SpecError("spec", "must be a JSON object")
    try:
        return OpscaleSpec.model_validate(data)
    except ValidationError as exc:
        err = exc.errors()[0]
        where = ".".join(str(p) for p in err.get("loc", ())) or "spec"
        msg = err.get("msg", "invalid")
        if err.get("type") == "extra_forbidden":
            msg = "unknown field (check the spelling; see docs/opscale.md)"
        raise SpecError(where, msg) from None
