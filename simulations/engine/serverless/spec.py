"""The serverless scenario schema (one schema, parsed once at the boundary): functions, models, nodes, systems.

    {"name": "...", "systems": ["slinfer", "sllm+c+s"], "model": "llama2-7b",
     "workload": {"trace": "1_30_128_8_0", "models": 32, "duration_s": 1800},
     "nodes": {"cpu": 4, "gpu": 4, "gpu_memory_gb": 78},
     "params": {"watermark": 0.25, "keep_alive_s": 1.0, "use_cpu": true, "sharing": true, "consolidation": true}}

``workload.models`` groups the trace's functions as the SLINFER artefact does (function idx kept when
idx % 8 < models / 16 for a 128-function trace); ``functions`` takes the first N functions instead. Django-free.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from simulations.engine.serverless.config import SYSTEMS, ServerlessConfig
from simulations.engine.serverless.perf import MODEL_FACTS

System = Literal["slinfer", "sllm", "sllm+c", "sllm+c+s"]
# the hardware catalogue's names of the models the artefact measured (the names every other page uses) -> the
# artefact's own names, which key its latency tables; either spelling is accepted, the catalogue's is offered
CATALOGUE_MODELS = {"llama2-7b": "llama-2-7b", "llama2-13b": "llama-2-13b", "llama3.1-8b": "llama-3.1-8b",
                    "llama3.2-3b": "llama-3.2-3b"}


class SpecError(ValueError):
    def __init__(self, message: str, where: str = "", hint: str = ""):
        super().__init__(message)
        self.message, self.where, self.hint = message, where, hint

    def to_dict(self) -> dict:
        return {"error": {"message": self.message, "where": self.where, "hint": self.hint}}


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Workload(Strict):
    trace: str = Field(default="1_30_128_8_0", pattern=r"^[A-Za-z0-9_.\-]{1,80}$")
    models: Literal[32, 64, 128] | None = None
    functions: int | None = Field(default=None, ge=1, le=10_000)
    duration_s: float | None = Field(default=None, gt=0, le=86_400)

    @model_validator(mode="after")
    def _one(self):
        if self.models is not None and self.functions is not None:
            raise ValueError("give models (the artefact's grouping) or functions (the first N), not both")
        return self


class Nodes(Strict):
    cpu: int = Field(default=4, ge=0, le=256)
    gpu: int = Field(default=4, ge=0, le=256)
    gpu_memory_gb: float = Field(default=78.0, gt=0, le=1024)
    cpu_memory_gb: float = Field(default=512.0, gt=0, le=8192)

    @model_validator(mode="after")
    def _some(self):
        if self.cpu + self.gpu == 0:
            raise ValueError("at least one node")
        return self


class Params(Strict):
    watermark: float = Field(default=0.25, ge=0, le=4)
    keep_alive_s: float = Field(default=1.0, ge=0, le=3600)
    margin: float = Field(default=1.1, ge=1, le=3)
    use_cpu: bool = True
    sharing: bool = True
    consolidation: bool = True
    shadow: Literal["bound", "replay"] = "bound"
    slot_compute: Literal["half", "shared"] = "half"


class ServerlessSpec(Strict):
    name: str = Field(default="serverless scenario", max_length=200)
    systems: list[System] = Field(default_factory=lambda: ["slinfer"], min_length=1, max_length=len(SYSTEMS))
    model: str = "llama-2-7b"
    workload: Workload = Field(default_factory=Workload)
    nodes: Nodes = Field(default_factory=Nodes)
    params: Params = Field(default_factory=Params)

    @model_validator(mode="after")
    def _model(self):
        if self.engine_model not in MODEL_FACTS:
            raise ValueError(f"unknown model {self.model!r}; one of {', '.join(CATALOGUE_MODELS)} (the hardware "
                             "catalogue's names)")
        return self

    @property
    def engine_model(self) -> str:
        """The artefact's name of the model (its latency tables' key)."""
        return CATALOGUE_MODELS.get(self.model, self.model)

    def config(self, system: str) -> ServerlessConfig:
        return ServerlessConfig(system=system, base_model=self.engine_model, cpu_nodes=self.nodes.cpu,
                                gpu_nodes=self.nodes.gpu, gpu_memory_gb=self.nodes.gpu_memory_gb,
                                cpu_memory_gb=self.nodes.cpu_memory_gb, **self.params.model_dump())


def parse(data) -> ServerlessSpec:
    if not isinstance(data, dict):
        raise SpecError("a serverless scenario is a JSON object", where="", hint="see docs/reproduction_slinfer.md")
    try:
        return ServerlessSpec.model_validate(data)
    except ValidationError as exc:
        e = exc.errors()[0]
        where = ".".join(str(p) for p in e["loc"])
        raise SpecError(e["msg"], where=where, hint="fix this field of the serverless scenario") from None


def workload_frame(spec: ServerlessSpec):
    from simulations.engine.workload.generator import slinfer as g
    from simulations.engine.workload.generator.errors import GeneratorError
    from simulations.engine.workload.generator.spec import SlinferSpec

    w = spec.workload
    try:
        frame = g.read(SlinferSpec(kind="slinfer", trace=w.trace, functions=w.functions, duration_s=w.duration_s))
    except GeneratorError as exc:
        raise SpecError(exc.message, where=f"workload.{exc.where}",
                        hint=exc.hint) from None
    if w.models is not None:
        n = len(frame["model"].cat.categories)
        if n % 8 or w.models > n:
            raise SpecError(f"grouping into {w.models} models needs a trace of 128 functions (this one has {n})",
                            where="workload.models", hint="use functions instead")
        frame = frame[(frame["model"].cat.codes % 8) < w.models * 8 // n].reset_index(drop=True)
    return frame


def run(spec: ServerlessSpec) -> dict:
    from simulations.engine.serverless import simulate

    frame = workload_frame(spec)
    return {"name": spec.name, "model": spec.model, "requests": len(frame),
            "results": {s: simulate(frame, spec.config(s)) for s in spec.systems}}
