"""Frozen, typed configuration of one simulation run (Django-free).

A scenario dict (see docs/simulator.md) is parsed into these dataclasses by
``parse_scenario``; every validation failure raises ``ScenarioError`` naming the field.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import Any

from simulations.engine.scenario.errors import ScenarioError
from simulations.engine.scenario.power import parse_device

TIERS = ("IW-F", "IW-N", "NIW")
TIER_INDEX = {name: i for i, name in enumerate(TIERS)}


def _num(d: dict, key: str, where: str, default: Any = None, *, minimum: float | None = None) -> float:
    value = d.get(key, default)
    if value is None:
        raise ScenarioError(f"{where}.{key}", "is required")
    try:
        value = float(value)
    except (TypeError, ValueError):
        raise ScenarioError(f"{where}.{key}", f"must be a number, got {value!r}") from None
    if not math.isfinite(value):
        raise ScenarioError(f"{where}.{key}", "must be finite")
    if minimum is not None and value < minimum:
        raise ScenarioError(f"{where}.{key}", f"must be >= {minimum}, got {value}")
    return value


def _int(d: dict, key: str, where: str, default: Any = None, *, minimum: int | None = None) -> int:
    value = _num(d, key, where, default, minimum=minimum)
    if value != int(value):
        raise ScenarioError(f"{where}.{key}", f"must be an integer, got {value}")
    return int(value)


def _bool(d: dict, key: str, where: str, default: bool = False) -> bool:
    value = d.get(key, default)
    if not isinstance(value, bool):
        raise ScenarioError(f"{where}.{key}", f"must be true or false, got {value!r}")
    return value


def _device(d, where: str):
    return parse_device(d, where)


@dataclass(frozen=True)
class PrefillCoeffs:
    """One prefill iteration over a batch of prompts P_1..P_B (T = sum P_i tokens) lasts
    c0 + c1*T + c2*T^2 + c_sq*sum(P_i^2) + c_req*B. The contract form is the first three terms; ``c_sq``
    (attention, quadratic per sequence) and ``c_req`` (per-sequence overhead) are optional (0 = contract form)
    and fit measured tables where many short prompts cost more than one long prompt of the same total."""

    c0: float
    c1: float
    c2: float = 0.0
    c_sq: float = 0.0
    c_req: float = 0.0


@dataclass(frozen=True)
class DecodeCoeffs:
    c0: float
    c_batch: float
    c_ctx: float


@dataclass(frozen=True)
class StartupDelays:
    vm_acquire_s: float = 155.0
    load_same_region_s: float = 600.0
    load_cross_region_s: float = 7200.0
    spot_reclaim_s: float = 65.0


@dataclass(frozen=True)
class DeploymentSpec:
    """One instance type: a model on the GPUs of one hardware profile (contract format, seconds)."""

    name: str
    model: str
    gpu: str
    tp: int
    gpus_per_instance: int
    weights_gb: float
    kv_capacity_tokens: int
    max_batch_size: int
    max_batch_tokens: int
    prefill: PrefillCoeffs
    decode: DecodeCoeffs
    theta_tps: float = 0.0
    startup: StartupDelays = field(default_factory=StartupDelays)
    price_per_instance_hour: dict = field(default_factory=lambda: {"on_demand": 98.32})
    estimated: bool = False
    # scaling signal: the KV tokens one instance holds *as the utilisation signal counts them*
    # (0 = kv_capacity_tokens, the true capacity). E.g. the SageServe authors' code sizes KV per token as
    # 2 x hidden x layers x dtype (multi-head, ignoring GQA), so its Llama-2-70B instance holds ~210k tokens where
    # the true (GQA) cache holds 1.34M. Admission always uses kv_capacity_tokens.
    signal_kv_tokens: int = 0
    # what else the signal counts (both off = the KV in use now): each admitted request's whole output
    # reserved from admission (the authors' code), and the prompts waiting in the instances' queues
    signal_reserve_output: bool = False
    signal_queued: bool = False
    kv_bytes_per_token: float = 0.0  # KV-cache bytes per token (all layers); needed only to swap KV to host memory
    device: Any = None  # power.DevicePower: device kind and idle / busy watts per device (None = unknown)
    # context limit (vLLM --max-model-len): prompt + output tokens one request may hold; 0 = no limit. What happens
    # to a longer request is the scenario's ``engine.over_context`` (batching / arrivals; docs/simulator.md)
    max_model_len: int = 0
    # vLLM V1 scheduling (chunked.py): one token budget per step (max_batch_tokens = max_num_batched_tokens) spent on
    # the running decodes first, then on chunked prefills of running and newly admitted requests; max_batch_size =
    # max_num_seqs. Prefix caching (kvcache.py; needs vllm_v1): prompts' cached 16-token blocks are not prefilled
    # again and their KV is held once; the requests' prefix ids come from the workload (Workload.prefix_ids)
    vllm_v1: bool = False
    prefix_caching: bool = False
    # vLLM's async scheduling (needs vllm_v1; vLLM's default from v0.14): the scheduler builds the next step while
    # the current one runs, so a request that arrives while a step runs joins one step later (chunked.py ``_late``)
    async_scheduling: bool = False

    @property
    def signal_scale(self) -> float:
        """Factor from true KV tokens to signal KV tokens (1.0 unless signal_kv_tokens is set)."""
        return self.kv_capacity_tokens / self.signal_kv_tokens if self.signal_kv_tokens else 1.0

    @property
    def signal_mode(self) -> int:
        """entities.SIG_RESERVE (1) | SIG_QUEUED (2) as set; 0 = the KV in use."""
        return (1 if self.signal_reserve_output else 0) | (2 if self.signal_queued else 0)

    @classmethod
    def from_dict(cls, d: dict, where: str = "deployment") -> DeploymentSpec:
        if not isinstance(d, dict):
            raise ScenarioError(where, "must be an object (contract deployment spec) or a catalogue name")
        for key in ("prefill", "decode"):
            if not isinstance(d.get(key), dict):
                raise ScenarioError(f"{where}.{key}", "is required: an object of latency coefficients")
        pre, dec = d["prefill"], d["decode"]
        st = d.get("startup") or {}
        if not isinstance(st, dict):
            raise ScenarioError(f"{where}.startup", "must be an object")
        name = str(d.get("name") or f"{d.get('model', 'model')}/{d.get('gpu', 'gpu')}/tp{d.get('tp', 1)}")
        price = d.get("price_per_instance_hour") or {"on_demand": 98.32}
        if not isinstance(price, dict):
            raise ScenarioError(f"{where}.price_per_instance_hour", "must be an object like {\"on_demand\": 98.32}")
        spec = cls(
            name=name,
            model=str(d.get("model") or name.split("/")[0]),
            gpu=str(d.get("gpu") or ""),
            tp=_int(d, "tp", where, 1, minimum=1),
            gpus_per_instance=_int(d, "gpus_per_instance", where, d.get("tp", 1), minimum=1),
            weights_gb=_num(d, "weights_gb", where, 0.0, minimum=0.0),
            kv_capacity_tokens=_int(d, "kv_capacity_tokens", where, minimum=1),
            max_batch_size=_int(d, "max_batch_size", where, 256, minimum=1),
            max_batch_tokens=_int(d, "max_batch_tokens", where, 8192, minimum=1),
            prefill=PrefillCoeffs(
                c0=_num(pre, "c0", f"{where}.prefill", minimum=0.0),
                c1=_num(pre, "c1", f"{where}.prefill", minimum=0.0),
                c2=_num(pre, "c2", f"{where}.prefill", 0.0, minimum=0.0),
                c_sq=_num(pre, "c_sq", f"{where}.prefill", 0.0, minimum=0.0),
                c_req=_num(pre, "c_req", f"{where}.prefill", 0.0, minimum=0.0),
            ),
            decode=DecodeCoeffs(
                c0=_num(dec, "c0", f"{where}.decode", minimum=0.0),
                c_batch=_num(dec, "c_batch", f"{where}.decode", minimum=0.0),
                c_ctx=_num(dec, "c_ctx", f"{where}.decode", minimum=0.0),
            ),
            theta_tps=_num(d, "theta_tps", where, 0.0, minimum=0.0),
            startup=StartupDelays(
                vm_acquire_s=_num(st, "vm_acquire_s", f"{where}.startup", 155.0, minimum=0.0),
                load_same_region_s=_num(st, "load_same_region_s", f"{where}.startup", 600.0, minimum=0.0),
                load_cross_region_s=_num(st, "load_cross_region_s", f"{where}.startup", 7200.0, minimum=0.0),
                spot_reclaim_s=_num(st, "spot_reclaim_s", f"{where}.startup", 65.0, minimum=0.0),
            ),
            price_per_instance_hour={str(k): float(v) for k, v in price.items()},
            estimated=bool(d.get("estimated", False)),
            signal_kv_tokens=_int(d, "signal_kv_tokens", where, 0, minimum=0),
            signal_reserve_output=_bool(d, "signal_reserve_output", where),
            signal_queued=_bool(d, "signal_queued", where),
            kv_bytes_per_token=_num(d, "kv_bytes_per_token", where, 0.0, minimum=0.0),
            device=_device(d.get("device"), f"{where}.device"),
            max_model_len=_int(d, "max_model_len", where, 0, minimum=0),
            vllm_v1=_bool(d, "vllm_v1", where),
            prefix_caching=_bool(d, "prefix_caching", where),
            async_scheduling=_bool(d, "async_scheduling", where),
        )
        for key in ("prefix_caching", "async_scheduling"):
            if getattr(spec, key) and not spec.vllm_v1:
                raise ScenarioError(f"{where}.{key}", f"{key.replace('_', ' ')} is simulated with vLLM V1 "
                                                      "scheduling: set vllm_v1 to true as well")
        if spec.prefill.c0 + spec.prefill.c1 <= 0:
            raise ScenarioError(f"{where}.prefill", "c0 and c1 cannot both be 0 (prefill would take no time)")
        if spec.decode.c0 + spec.decode.c_batch <= 0:
            raise ScenarioError(f"{where}.decode", "c0 and c_batch cannot both be 0 (decode would take no time)")
        return spec

    def to_dict(self) -> dict:
        return {
            "name": self.name, "model": self.model, "gpu": self.gpu, "tp": self.tp,
            "gpus_per_instance": self.gpus_per_instance, "weights_gb": self.weights_gb,
            "kv_capacity_tokens": self.kv_capacity_tokens, "max_batch_size": self.max_batch_size,
            "max_batch_tokens": self.max_batch_tokens,
            "prefill": {"c0": self.prefill.c0, "c1": self.prefill.c1, "c2": self.prefill.c2,
                        **({"c_sq": self.prefill.c_sq, "c_req": self.prefill.c_req}
                           if self.prefill.c_sq or self.prefill.c_req else {})},
            "decode": {"c0": self.decode.c0, "c_batch": self.decode.c_batch, "c_ctx": self.decode.c_ctx},
            "theta_tps": self.theta_tps,
            "startup": {"vm_acquire_s": self.startup.vm_acquire_s,
                        "load_same_region_s": self.startup.load_same_region_s,
                        "load_cross_region_s": self.startup.load_cross_region_s,
                        "spot_reclaim_s": self.startup.spot_reclaim_s},
            "price_per_instance_hour": dict(self.price_per_instance_hour), "estimated": self.estimated,
            **({"signal_kv_tokens": self.signal_kv_tokens} if self.signal_kv_tokens else {}),
            **({"signal_reserve_output": True} if self.signal_reserve_output else {}),
            **({"signal_queued": True} if self.signal_queued else {}),
            **({"kv_bytes_per_token": self.kv_bytes_per_token} if self.kv_bytes_per_token else {}),
            **({"device": self.device.to_dict()} if self.device is not None else {}),
            **({"max_model_len": self.max_model_len} if self.max_model_len else {}),
            **({"vllm_v1": True} if self.vllm_v1 else {}),
            **({"prefix_caching": True} if self.prefix_caching else {}),
            **({"async_scheduling": True} if self.async_scheduling else {}),
        }

    @property
    def on_demand_price(self) -> float:
        return float(self.price_per_instance_hour.get("on_demand", 0.0))


@dataclass(frozen=True)
class KVLinkConfig:
    """The link a disaggregated endpoint's KV caches cross from a prefill instance to a decode instance
    (disagg.py): ``bandwidth_gb_s`` GB/s (10^9 bytes a second) between the two instances and ``latency_s`` per
    transfer. ``link_class`` names where the figures come from (disagg.LINK_CLASSES)."""

    link_class: str = "infiniband"
    bandwidth_gb_s: float = 50.0
    latency_s: float = 0.0

    def transfer_s(self, tokens: int, kv_bytes_per_token: float) -> float:
        """Seconds to move ``tokens`` tokens of KV cache over the link."""
        return self.latency_s + tokens * kv_bytes_per_token / (self.bandwidth_gb_s * 1e9)


@dataclass(frozen=True)
class MixedPoolConfig:
    """Splitwise's mixed pool (ISCA'24, sec. 4.3) for a disaggregated endpoint (disagg.py): instances move from
    the prefill or decode pool into a mixed pool that serves both kinds of work while the other pool is
    overloaded, and back when they are idle. The prefill pool is overloaded for a request when the instance its
    router chose has a queue and its queued tokens plus the request's exceed ``prefill_queue_tokens``
    (splitwise-sim's ``prompt_max_pending_batch_tokens``); the decode pool when no decode instance has free KV
    for the whole request (prompt and output)."""

    prefill_queue_tokens: int = 8192


@dataclass(frozen=True)
class EndpointConfig:
    """A (region, model) endpoint: its deployment and instance bounds.

    ``pool`` is "all" for a unified endpoint, "iw" / "niw" for the siloed pools, or "prefill" / "decode" for the
    two pools of a disaggregated endpoint (the prefill pool carries ``kv_link``; disagg.py). ``weights_in_region``:
    whether the model's weights are in the region's repository (SageServe 2.3: a load takes ~10 min from there,
    ~2 h from another region); False models bringing a model to a new region: the first load is cross-region.
    """

    region: str
    model: str
    deployment: DeploymentSpec
    initial: int = 2
    min_instances: int = 1
    max_instances: int = 1_000_000
    pool: str = "all"
    weights_in_region: bool = True
    kv_link: KVLinkConfig | None = None  # a disaggregated endpoint's prefill pool: the link to its decode pool
    mixed_pool: MixedPoolConfig | None = None  # a disaggregated endpoint's prefill pool: Splitwise's mixed pool

    @property
    def key(self) -> tuple[str, str, str]:
        return (self.region, self.model, self.pool)


@dataclass(frozen=True)
class SLOConfig:
    """Per-tier targets: TTFT deadline (seconds) for IW tiers, completion deadline for NIW."""

    ttft_s: dict = field(default_factory=lambda: {"IW-F": 1.0, "IW-N": 60.0, "NIW": 86400.0})
    e2e_s: dict = field(default_factory=lambda: {"IW-F": math.inf, "IW-N": math.inf, "NIW": 86400.0})
    percentile: float = 95.0
    # richer SLOs (all optional, evaluated in engine/results/slo.py into result.slo):
    itl_s: dict = field(default_factory=dict)  # tier -> inter-token latency target (s)
    itl_stat: str = "mean"  # "mean": the request's mean ITL (TPOT) meets it; "max": every gap does
    normalised_latency_x: dict = field(default_factory=dict)  # tier -> E2E within x times an isolated run
    ttft_prompt: dict = field(default_factory=dict)  # tier -> {"min_s", "per_token_s", "max_s"}: min(max(a, L*b), c)
    cold_start_grace_s: float = 0.0  # added to the TTFT target of a request that waited for a cold start
    window_s: float = 60.0  # window of the "peak of windowed means" metrics

    @property
    def rich(self) -> bool:
        return bool(self.itl_s or self.normalised_latency_x or self.ttft_prompt or self.cold_start_grace_s)


@dataclass(frozen=True)
class NetworkConfig:
    """Inter-region latency: a discrete mixture ``[(prob, low_s, high_s), ...]`` (uniform within a bin).

    Default after SageServe 7.1: 90% under 500 ms, 8% 0.5-2.5 s, 2% at 2.5 s. Applied to requests served
    outside their origin region (``apply_to="cross_region"``) or to all requests (``"all"``).
    """

    bins: tuple = ((0.90, 0.05, 0.5), (0.08, 0.5, 2.5), (0.02, 2.5, 2.5))
    apply_to: str = "cross_region"


@dataclass(frozen=True)
class PolicyConfig:
    autoscaler: str = "static"
    autoscaler_params: dict = field(default_factory=dict)
    region_router: str = "sageserve"
    endpoint_router: str = "least-utilised"
    instance_router: str = "jsq-tokens"
    scheduler: str = "fcfs"
    scheduler_params: dict = field(default_factory=dict)
    region_threshold: float = 0.70
    predictor: str = ""  # output-length predictor run before the run (engine/workload/predictors.py); "" = none
    predictor_params: dict = field(default_factory=dict)


@dataclass(frozen=True)
class EngineConfig:
    mode: str = "fast"  # "fast" (analytic multi-iteration steps) or "reference" (every iteration)
    chunked_prefill: bool = False
    timeline_step_s: float = 60.0
    max_time_s: float = math.inf  # stop simulating after this simulated time (unfinished = dropped)
    seed: int = 0
    # instances serve at once on scale-out (as the SageServe authors' simulator does); the nominal
    # start-up delay is still logged on the scale-out event and reported as provisioning waste added afterwards
    instant_provisioning: bool = False
    swap_bandwidth_gb_s: float = 25.0  # host <-> device bandwidth for swapped KV (PCIe 4.0 x16 ~ 25 GB/s)
    # admission and preemption as vLLM does them (kvcache.py; docs/simulator.md "Admission and preemption"):
    # a request is admitted only if the KV cache keeps this fraction free afterwards (vLLM's block manager
    # watermark, 0.01 by default; 0 = the old behaviour)
    kv_watermark: float = 0.01
    # "vllm": the victim is the most recently admitted running request (vLLM V1 FCFS ``running.pop()``; for a
    # priority scheduler the lowest-priority, latest-arriving one) and no request is admitted in a step that had to
    # preempt (V1 schedules WAITING only ``if not preempted_reqs``); "legacy": the latest arrival, re-admission in the
    # same step (the earlier model)
    preemption: str = "vllm"
    preemption_mode: str = "recompute"  # "recompute" (vLLM's default) or "swap" (KV to host; needs kv_bytes_per_token)
    # a request longer than its deployment's max_model_len: "reject" (dropped, reason prompt_exceeds_max_model_len;
    # a prompt that fits but whose output would not is cut at the limit, as vLLM stops at max_model_len),
    # "truncate" (the prompt's head is cut so prompt + output fit), "route" (only endpoints whose limit fits; if
    # none, rejected), "ignore" (simulated anyway, the earlier model; validity.py warns)
    over_context: str = "reject"


@dataclass(frozen=True)
class RegionConfig:
    name: str
    spot_pool: dict = field(default_factory=dict)  # model -> donated instances available to reclaim
    vm_capacity: int = 0  # extra VMs that can be acquired fresh (instances), beyond the spot pool


@dataclass(frozen=True)
class FleetConfig:
    regions: tuple[RegionConfig, ...]
    endpoints: tuple[EndpointConfig, ...]
    network: NetworkConfig = field(default_factory=NetworkConfig)

    @property
    def region_names(self) -> list[str]:
        return [r.name for r in self.regions]

    def with_endpoints(self, endpoints) -> FleetConfig:
        return replace(self, endpoints=tuple(endpoints))
