"""The one schema of a benchmark run, whatever file it came from (pydantic; parsed once at the boundary).

A run = the deployment it measured (model x GPU x TP x engine settings), the workload and load it offered, and
what was measured per load stage (latency statistics) and, when the file has them, per request.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

Num = float


class EngineSettings(BaseModel):
    """The serving engine's settings that shape latency (vLLM names)."""

    model_config = ConfigDict(extra="forbid")
    engine: str = "vllm"
    engine_version: str = ""
    model: str
    gpu: str = ""
    tensor_parallel_size: int = Field(ge=1, le=64)
    max_num_batched_tokens: int = Field(default=2048, ge=1)
    max_num_seqs: int = Field(default=256, ge=1)
    max_model_len: int = Field(default=0, ge=0)
    gpu_memory_utilization: float = Field(default=0.9, gt=0, le=1)
    chunked_prefill: bool = True
    prefix_caching: bool = True
    kv_offload_gb: float = Field(default=0.0, ge=0)
    async_scheduling: bool | None = None  # None: the engine version's default (vLLM: on from 0.14)


class SharedPrefix(BaseModel):
    model_config = ConfigDict(extra="ignore")
    num_groups: int = Field(ge=1)
    prompts_per_group: int = Field(ge=1)
    system_prompt_len: int = Field(ge=0)
    question_len: int = Field(ge=1)
    output_len: int = Field(ge=1)
    multi_turn: bool = False


class LengthDistribution(BaseModel):
    model_config = ConfigDict(extra="ignore")
    mean: Num = Field(gt=0)
    std: Num = Field(default=0.0, ge=0)
    min: Num = Field(default=1, ge=1)
    max: Num = Field(default=1e9, ge=1)


class WorkloadSpec(BaseModel):
    model_config = ConfigDict(extra="forbid")
    kind: Literal["shared_prefix", "synthetic", "random", "requests"]
    shared_prefix: SharedPrefix | None = None
    input: LengthDistribution | None = None
    output: LengthDistribution | None = None

    @model_validator(mode="after")
    def _parts(self):
        if self.kind == "shared_prefix" and self.shared_prefix is None:
            raise ValueError("a shared_prefix workload needs its shared_prefix block")
        if self.kind in ("synthetic", "random") and (self.input is None or self.output is None):
            raise ValueError(f"a {self.kind} workload needs input and output length distributions")
        return self


class LoadStage(BaseModel):
    model_config = ConfigDict(extra="ignore")
    rate: Num = Field(gt=0, le=100_000)
    duration: Num = Field(gt=0, le=7 * 86400)


class LoadSpec(BaseModel):
    model_config = ConfigDict(extra="forbid")
    type: Literal["constant", "poisson", "trace"]
    stages: list[LoadStage] = Field(default_factory=list)


class Stat(BaseModel):
    """A latency statistic in seconds."""

    model_config = ConfigDict(extra="ignore")
    mean: Num = Field(ge=0)
    p50: Num | None = Field(default=None, ge=0)
    p90: Num | None = Field(default=None, ge=0)
    p99: Num | None = Field(default=None, ge=0)


class StageResult(BaseModel):
    model_config = ConfigDict(extra="forbid")
    index: int = Field(ge=0)
    rate: Num | None = None
    duration_s: Num | None = None
    requests_ok: int = Field(ge=0)
    requests_failed: int = Field(default=0, ge=0)
    achieved_rate: Num | None = None
    prompt_len_mean: Num | None = None
    output_len_mean: Num | None = None
    ttft: Stat
    e2e: Stat

    @property
    def failure_rate(self) -> float:
        n = self.requests_ok + self.requests_failed
        return self.requests_failed / n if n else 0.0


class RequestRecords(BaseModel):
    """Per-request measurements, column-wise (seconds; arrival relative to the run's start)."""

    model_config = ConfigDict(extra="forbid")
    arrival_s: list[Num] | None = None  # None: the file has no arrivals (the load's stages say how they came)
    input_tokens: list[int]
    output_tokens: list[int]
    ttft_s: list[Num]
    e2e_s: list[Num]

    @model_validator(mode="after")
    def _same_length(self):
        n = len(self.input_tokens)
        for name in ("arrival_s", "output_tokens", "ttft_s", "e2e_s"):
            values = getattr(self, name)
            if values is not None and len(values) != n:
                raise ValueError(f"{name} has {len(values)} values, input_tokens {n}")
        return self


class BenchmarkRun(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: str = Field(min_length=1, max_length=200)
    source_format: Literal["inference-perf", "vllm-bench", "per-request"]
    engine: EngineSettings
    workload: WorkloadSpec
    load: LoadSpec
    stages: list[StageResult] = Field(min_length=1)
    requests: RequestRecords | None = None
    notes: list[str] = Field(default_factory=list)

    @property
    def overloaded(self) -> bool:
        """More than 10 % of requests failed in some stage: the server could not keep up."""
        return any(s.failure_rate > 0.10 for s in self.stages)
