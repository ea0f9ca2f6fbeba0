"""``aibrix-apa`` and ``aibrix-kpa``: AIBrix's autoscalers (controller.py) on a vLLM metric.

Defaults from AIBrix's own autoscaling benchmark (vllm-project/aibrix benchmarks/scenarios/autoscaling/
deepseek-llm-7b-chat/apa.yaml lines 22-23, kpa.yaml lines 20-21): metric ``gpu_cache_usage_perc`` (``kv``) with
target 0.5 per pod. The controller resyncs every 10 s (podautoscaler_controller.go line 101); it reads the pods'
metrics directly, so ``scrape_interval_s`` 10 and no lag (ours).

KPA's observed value (``kpa_value``): the algorithm divides it by the per-pod target as a total (kpa.go line 127;
its tests, kpa_test.go, pass totals), while AIBrix's metrics client records the mean over the pods
(metrics/client.go lines 166-171), with which the desired count could never exceed ceil(mean / target). Default
``"total"`` (the algorithm's and Knative's meaning); ``"pod-mean"`` reproduces the client as written.
"""

from __future__ import annotations

from typing import Literal

from simulations.engine.policies.aibrix.controller import (
    PANIC_WINDOW_S,
    RESYNC_S,
    STABLE_WINDOW_S,
    AIBrixKPAController,
    AIBrixSpec,
    APAController,
)
from simulations.engine.policies.params import knob
from simulations.engine.policies.registry import PolicyKind, register
from simulations.engine.policies.scraped import ScrapedScaler, ScrapeParams


class AIBrixParams(ScrapeParams):
    scrape_interval_s: float = knob(RESYNC_S, "seconds between metric scrapes", gt=0, le=3600)
    sync_s: float = knob(RESYNC_S, "seconds between the controller's decisions", gt=0, le=3600)
    metric: Literal["kv", "running", "waiting", "concurrency"] = knob("kv", "the vLLM metric the autoscaler reads")
    target: float = knob(0.5, "target metric value per pod", gt=0)
    max_scale_up_rate: float = knob(2.0, "at most this factor more pods per decision", ge=1)
    max_scale_down_rate: float = knob(2.0, "at most this factor fewer pods per decision", ge=1)
    up_tolerance: float = knob(0.1, "scale up only when metric / target > 1 + this", ge=0, lt=1)
    down_tolerance: float = knob(0.1, "scale down only when metric / target < 1 - this", ge=0, lt=1)
    scale_up_cooldown_s: float = knob(0.0, "scale-up cooldown window (s): the highest recommendation in it", ge=0, le=3600)
    scale_down_cooldown_s: float = knob(300.0, "scale-down cooldown window (s): the lowest recommendation in it (AIBrix)", ge=0, le=3600)
    stable_window_s: float = knob(STABLE_WINDOW_S, "stable window (s): the average the stable count uses", gt=0, le=3600)


class AIBrixKPAParams(AIBrixParams):
    panic_window_s: float = knob(PANIC_WINDOW_S, "panic window (s)", gt=0, le=3600)
    panic_threshold: float = knob(2.0, "panic when the panic count over the ready pods reaches this ratio (2.0 = 200 %)", gt=1, le=10)
    kpa_value: Literal["total", "pod-mean"] = knob("total", "total: the endpoint's total (the algorithm's meaning); pod-mean: the metrics client as written")


class _AIBrixBase(ScrapedScaler):
    def spec(self, ep, **extra):
        p = self.p
        return AIBrixSpec(target=p.target, min_replicas=ep.min_instances, max_replicas=ep.max_instances,
                          max_scale_up_rate=p.max_scale_up_rate, max_scale_down_rate=p.max_scale_down_rate,
                          up_tolerance=p.up_tolerance, down_tolerance=p.down_tolerance,
                          scale_up_cooldown_s=p.scale_up_cooldown_s, scale_down_cooldown_s=p.scale_down_cooldown_s,
                          stable_window_s=p.stable_window_s, **extra)

    def decide(self, ctrl, ep, now):
        return ctrl.step(now, ep.n_active)


@register(PolicyKind.AUTOSCALER, "aibrix-apa")
class AIBrixAPAScaler(_AIBrixBase):
    """AIBrix APA: scale by the per-pod metric / target outside +/-10 % tolerances, at most x2 up or /2 down per
    step, AIBrix's stabiliser (300 s scale-down cooldown)."""
    Params = AIBrixParams

    def make_controller(self, ep):
        return APAController(self.spec(ep))

    def feed(self, ctrl, sample):
        ctrl.record(sample.t, sample.per_pod(self.p.metric))


@register(PolicyKind.AUTOSCALER, "aibrix-kpa")
class AIBrixKPAScaler(_AIBrixBase):
    """AIBrix KPA: Knative-style stable (180 s) and panic (60 s) windows, panic when panic / stable > 2, tolerance
    bands, no scale-down while panicking, AIBrix's stabiliser."""
    Params = AIBrixKPAParams

    def make_controller(self, ep):
        p = self.p
        return AIBrixKPAController(self.spec(ep, panic_window_s=p.panic_window_s, panic_threshold=p.panic_threshold))

    def feed(self, ctrl, sample):
        value = sample.per_pod(self.p.metric) if self.p.kpa_value == "pod-mean" else sample.total(self.p.metric)
        ctrl.record(sample.t, value)
