"""``hpa``: the Kubernetes HPA (controller.py) on a vLLM metric as KEDA's Prometheus scaler reads it.

Metric (``metric``): ``running`` = sum(vllm:num_requests_running), ``waiting`` = sum(vllm:num_requests_waiting),
``concurrency`` = running + waiting, ``kv`` = the mean vllm:kv_cache_usage_perc (a Pods-type average: with
``metric: "kv"`` the metric source is ``pods``). ``target`` is per pod; there is no upstream default for it (the
operator sets it): ours is 16 running requests per pod. Scrape every 15 s (ours: a common Prometheus interval),
no extra lag, an HPA sync every 15 s (the controller's default). Min / max replicas are the endpoint's.
"""

from __future__ import annotations

from typing import Literal

from simulations.engine.policies.hpa.controller import (
    SYNC_PERIOD_S,
    TOLERANCE,
    HPAController,
    HPASpec,
    ScalingPolicy,
    ScalingRules,
)
from simulations.engine.policies.params import knob
from simulations.engine.policies.registry import PolicyKind, register
from simulations.engine.policies.scraped import ScrapedScaler, ScrapeParams


class HPAParams(ScrapeParams):
    sync_s: float = knob(SYNC_PERIOD_S, "HPA sync period (s)", gt=0, le=3600)
    metric: Literal["running", "waiting", "concurrency", "kv"] = knob("running", "the vLLM metric the autoscaler reads")
    target: float = knob(16.0, "target metric value per pod", gt=0)
    metric_source: Literal["external", "pods"] = knob("external", "external: a total (KEDA AverageValue); pods: an average over the ready pods")
    tolerance: float = knob(TOLERANCE, "no change while metric / target is within 1 +/- tolerance", ge=0, lt=1)
    scale_up_stabilization_s: float = knob(0.0, "scale-up stabilisation window (s): the lowest recent recommendation", ge=0, le=3600)
    scale_down_stabilization_s: float = knob(300.0, "scale-down stabilisation window (s): the highest recent recommendation", ge=0, le=3600)
    scale_up_pods: int = knob(4, "scale-up policy: at most this many pods added per period", ge=1)
    scale_up_percent: int = knob(100, "scale-up policy: at most this percentage added per period", ge=1)
    scale_up_period_s: float = knob(15.0, "period of the scale-up policies (s)", gt=0, le=1800)
    scale_down_percent: int = knob(100, "scale-down policy: at most this percentage removed per period", ge=1, le=100)
    scale_down_period_s: float = knob(15.0, "period of the scale-down policy (s)", gt=0, le=1800)
    select_policy: Literal["Max", "Min", "Disabled"] = knob("Max", "which policy limits: Max (the larger change), Min or Disabled")


@register(PolicyKind.AUTOSCALER, "hpa")
class HPAScaler(ScrapedScaler):
    """Kubernetes HPA (+ KEDA on vLLM's metrics): desired = ceil(current x metric / target) with a 10 % tolerance,
    scale-up / scale-down stabilisation windows and rate policies."""
    Params = HPAParams

    def make_controller(self, ep):
        p = self.p
        up = ScalingRules(p.scale_up_stabilization_s, (ScalingPolicy("Pods", p.scale_up_pods, p.scale_up_period_s),
                                                       ScalingPolicy("Percent", p.scale_up_percent,
                                                                     p.scale_up_period_s)), p.select_policy)
        down = ScalingRules(p.scale_down_stabilization_s,
                            (ScalingPolicy("Percent", p.scale_down_percent, p.scale_down_period_s),), p.select_policy)
        source = "pods" if p.metric == "kv" else p.metric_source
        spec = HPASpec(target=p.target, min_replicas=ep.min_instances, max_replicas=ep.max_instances,
                       tolerance_up=p.tolerance, tolerance_down=p.tolerance, metric_source=source,
                       scale_up=up, scale_down=down)
        return {"hpa": HPAController(spec), "last": None}

    def feed(self, ctrl, sample):
        ctrl["last"] = sample

    def decide(self, ctrl, ep, now):
        sample = ctrl["last"]
        if sample is None:
            return None
        hpa = ctrl["hpa"]
        value = sample.per_pod(self.p.metric) if hpa.spec.metric_source == "pods" else sample.total(self.p.metric)
        return hpa.step(now, ep.n_active, value, ready=len(sample.pods))
