"""llm-d's workload variant autoscaler (WVA), its saturation analyzer, as a pure controller (no simulator, no
Django). One model with one variant (accelerator type): the per-variant cost choice does not arise.

Read from llm-d/llm-d-workload-variant-autoscaler (commit b08b1c77):

- ``internal/saturation/analyzer.go`` lines 163-174: a replica is saturated when its KV-cache usage >=
  kvCacheThreshold or its waiting queue >= queueLengthThreshold; the spare KV / queue capacity of the others is
  threshold - value, averaged over the non-saturated replicas (0 when every replica is saturated);
- lines 199-212: scale up (+1 ready replica) when the average spare KV < kvSpareTrigger or the average spare queue
  < queueSpareTrigger;
- lines 233-275: scale down (-1) only when at least 2 replicas are not saturated and, with their average load
  scaled by N / (N - 1), both spare margins stay at or above the triggers;
- lines 290-390 (``CalculateSaturationTargets``): while the model is in transition (replicas reporting metrics !=
  current replicas, i.e. pods still starting) no decision is made and the target stays the current count; else
  the target is readyReplicas + 1 (scale-up), readyReplicas - 1 (safe scale-down) or readyReplicas.

Defaults: charts/workload-variant-autoscaler/values.yaml lines 64-67 (kvCacheThreshold 0.80, queueLengthThreshold
5, kvSpareTrigger 0.1, queueSpareTrigger 3); the metrics are ``max_over_time(...[1m])`` per pod
(internal/collector/registration/saturation.go lines 33 and 43); the loop runs every GLOBAL_OPT_INTERVAL, 60 s
(internal/config/loader.go line 87).
"""

from __future__ import annotations

from dataclasses import dataclass

INTERVAL_S = 60.0
METRIC_WINDOW_S = 60.0


@dataclass(frozen=True)
class WVASpec:
    kv_cache_threshold: float = 0.80
    queue_length_threshold: float = 5.0
    kv_spare_trigger: float = 0.1
    queue_spare_trigger: float = 3.0
    min_replicas: int = 1
    max_replicas: int = 10

    def __post_init__(self) -> None:
        if not 0 <= self.kv_cache_threshold <= 1:
            raise ValueError("kv_cache_threshold must be in [0, 1]")
        if self.queue_length_threshold < 0 or self.kv_spare_trigger < 0 or self.queue_spare_trigger < 0:
            raise ValueError("thresholds and triggers must be >= 0")


@dataclass(frozen=True)
class Analysis:
    non_saturated: int
    avg_spare_kv: float
    avg_spare_queue: float
    scale_up: bool
    scale_down_safe: bool


def analyse(spec: WVASpec, replicas: list[tuple[float, float]]) -> Analysis:
    """``replicas``: (KV-cache usage 0-1, waiting requests) per ready replica (peaks over the metric window)."""
    spare_kv = spare_q = 0.0
    n = 0
    for kv, queue in replicas:
        if kv >= spec.kv_cache_threshold or queue >= spec.queue_length_threshold:
            continue
        spare_kv += spec.kv_cache_threshold - kv
        spare_q += spec.queue_length_threshold - queue
        n += 1
    avg_kv = spare_kv / n if n else 0.0
    avg_q = spare_q / n if n else 0.0
    up = avg_kv < spec.kv_spare_trigger or avg_q < spec.queue_spare_trigger
    safe = False
    if n >= 2:
        factor = n / (n - 1)
        rem_kv = spec.kv_cache_threshold - (spec.kv_cache_threshold - avg_kv) * factor
        rem_q = spec.queue_length_threshold - (spec.queue_length_threshold - avg_q) * factor
        safe = rem_kv >= spec.kv_spare_trigger and rem_q >= spec.queue_spare_trigger
    return Analysis(n, avg_kv, avg_q, up, safe)


def target_replicas(spec: WVASpec, ready: int, pending: int, replicas: list[tuple[float, float]]) -> int:
    """The variant's target: unchanged (ready + pending) while replicas are pending, else ready + 1 on saturation,
    ready - 1 when a scale-down is safe, or ready; within [min, max]."""
    if pending > 0:
        return min(max(ready + pending, spec.min_replicas), spec.max_replicas)
    a = analyse(spec, replicas)
    target = ready
    if a.scale_up:
        target = ready + 1
    elif a.scale_down_safe:
        target = ready - 1
    return min(max(target, spec.min_replicas), spec.max_replicas)
