"""The hardware-catalogue JSON's schema (pydantic v2, Django-free): what a user may upload (docs/hardware.md).

``validate_catalogue_doc(doc)`` runs before ``spec.complete_catalogue`` on every uploaded document: unknown
keys are refused with a "did you mean", types are strict, numbers finite and bounded (so nothing past a
64-bit integer or a NaN reaches the database). ``complete_catalogue`` then checks the cross-references and
derives the missing figures. Fields added to the catalogue format must be declared here too.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, ValidationError, create_model

from planner.catalogue.errors import ProfileError
from planner.catalogue.spec import DEFAULT_STARTUP
from planner.inputs import NUL_MESSAGE, JSONValue, Strict, explain, integer, nul_path, num

Text = Annotated[str, Field(max_length=2000)]
Name = Annotated[str, Field(min_length=1, max_length=120)]
Coeff = Annotated[float, Field(ge=0.0, le=3600.0, allow_inf_nan=False)]
Seconds = Annotated[float, Field(ge=0.0, le=7 * 86400.0, allow_inf_nan=False)]


class Price(Strict):
    cloud: Name
    region: Name
    kind: Literal["on_demand", "spot", "reserved"]
    usd_per_gpu_hour: float = num(ge=0.0, le=1e6)
    source: Text
    as_of: str = Field(pattern=r"^\d{4}-\d{2}-\d{2}$")
    assumed: bool = False


class GpuTypeDoc(Strict):
    name: Name
    display_name: Text = ""
    vendor: Text = ""
    memory_gb: float = num(gt=0.0, le=1e5)
    bf16_tflops: float | None = num(default=None, gt=0.0, le=1e7)
    memory_bandwidth_tbs: float | None = num(default=None, gt=0.0, le=1e4)
    gpus_per_vm: int | None = integer(default=None, ge=1, le=4096)
    source: Text = ""
    prices: list[Price] = Field(default_factory=list, max_length=1000)


class ModelDoc(Strict):
    name: Name
    display_name: Text = ""
    parameters_billion: float = num(gt=0.0, le=1e5)
    layers: int = integer(ge=1, le=100_000)
    kv_heads: int | None = integer(default=None, ge=1, le=100_000)
    head_dim: int | None = integer(default=None, ge=1, le=100_000)
    dtype_bytes: float | None = num(default=None, gt=0.0, le=64.0)
    kv_bytes_per_token: int | None = integer(default=None, ge=1, le=10**12)
    weights_gb: float | None = num(default=None, gt=0.0, le=1e6)
    aliases: list[Name] = Field(default_factory=list, max_length=100)
    source: Text = ""


class Prefill(Strict):
    c0: Coeff
    c1: Coeff
    c2: Coeff = 0.0
    c_sq: Coeff = 0.0
    c_req: Coeff = 0.0


class Decode(Strict):
    c0: Coeff
    c_batch: Coeff
    c_ctx: Coeff = 0.0


Startup = create_model("Startup", __base__=Strict, **{k: (Seconds | None, None) for k in DEFAULT_STARTUP})


class ThetaTargetDoc(Strict):
    prompt_tokens: int = integer(default=1024, ge=1, le=10**7)
    output_tokens: int = integer(default=256, ge=1, le=10**7)
    ttft_s: float = num(default=1.0, gt=0.0, le=3600.0)
    tbt_s: float = num(default=0.1, gt=0.0, le=3600.0)


class DeploymentDoc(Strict):
    name: Text | None = None  # derived (model/gpu/tpN); accepted so an exported entry re-imports
    model: Name
    gpu: Name
    tp: int = integer(ge=1, le=512)
    gpus_per_instance: int | None = integer(default=None, ge=1, le=4096)
    memory_utilisation: float | None = num(default=None, gt=0.0, le=1.0)
    max_batch_size: int | None = integer(default=None, ge=1, le=10**7)
    max_batch_tokens: int | None = integer(default=None, ge=1, le=10**9)
    prefill: Prefill
    decode: Decode
    kv_capacity_tokens: int | None = integer(default=None, ge=1, le=10**12)
    theta_tps: float | None = num(default=None, ge=0.0, le=1e12)
    theta_target: ThetaTargetDoc | None = None
    startup: Startup | None = None  # type: ignore[valid-type]
    price_cloud: Text = ""
    price_region: Text = ""
    basis: Literal["fitted", "derived", "estimated", "manual"] = "manual"
    estimated: bool | None = None
    estimate_rule: Text = ""
    source: Text = ""
    fit_report: JSONValue = None
    points: JSONValue = None
    theta_detail: JSONValue = None


class CatalogueDoc(Strict):
    description: Text = ""
    gpu_types: list[GpuTypeDoc] = Field(default_factory=list, max_length=10_000)
    models: list[ModelDoc] = Field(default_factory=list, max_length=10_000)
    deployments: list[DeploymentDoc] = Field(default_factory=list, max_length=10_000)


def validate_catalogue_doc(doc) -> CatalogueDoc:
    """The validated document, or ProfileError naming the field (``deployments[0].prefill.c0``) with a hint."""
    if not isinstance(doc, dict):
        raise ProfileError("a catalogue file is one JSON object", where="file",
                           hint='{"gpu_types": [...], "models": [...], "deployments": [...]}')
    bad = nul_path(doc)
    if bad:
        raise ProfileError(NUL_MESSAGE, where=f"$.{bad}", hint="remove the NUL character")
    try:
        return CatalogueDoc.model_validate(doc)
    except ValidationError as exc:
        where, message, hint = explain(exc)
        raise ProfileError(message, where=f"$.{where}", hint=hint or "see docs/hardware.md") from None
