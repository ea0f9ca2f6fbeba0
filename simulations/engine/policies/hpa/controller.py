"""The Kubernetes Horizontal Pod Autoscaler's replica computation as a pure controller (no simulator, no Django).

One ``step(now, current, metric)`` is one HPA sync: the metric's replica count with the tolerance
(pkg/controller/podautoscaler/replica_calculator.go), then the behaviour's stabilisation window and rate policies
(pkg/controller/podautoscaler/horizontal.go: ``stabilizeRecommendationWithBehaviors``,
``convertDesiredReplicasWithBehaviorRate``, ``calculateScaleUpLimitWithScalingRules``,
``calculateScaleDownLimitWithBehaviors``), read from kubernetes/kubernetes.

Defaults (cited):
- sync period 15 s, downscale stabilisation 300 s, tolerance 0.1: kubernetes/kubernetes
  pkg/controller/podautoscaler/config/v1alpha1/defaults.go lines 40, 46, 58 (commit 85643c0f).
- scale-up: no stabilisation, select Max of {4 pods, 100 %} per 15 s; scale-down: select Max, 100 % per 15 s:
  kubernetes/kubernetes pkg/apis/autoscaling/v2/defaults.go lines 29-31 and 50-53 (commit 1adaa753).

The metric is read as KEDA's Prometheus scaler feeds it (``metric_source="external"``, metricType AverageValue):
the endpoint's total (e.g. ``sum(vllm:num_requests_running)``), desired = ceil(total / target), the tolerance on
total / (target x current) (``GetExternalPerPodMetricReplicas``); ``"pods"`` is a Pods metric averaged over the ready
pods, desired = ceil(average / target x ready) (``calcPlainMetricReplicas``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

SYNC_PERIOD_S = 15.0
TOLERANCE = 0.1
DOWNSCALE_STABILISATION_S = 300.0


@dataclass(frozen=True)
class ScalingPolicy:
    kind: str  # "Pods" or "Percent"
    value: int
    period_s: float

    def __post_init__(self) -> None:
        if self.kind not in ("Pods", "Percent"):
            raise ValueError(f"scaling policy type must be 'Pods' or 'Percent', got {self.kind!r}")
        if self.value <= 0 or self.period_s <= 0:
            raise ValueError("a scaling policy needs value > 0 and period_s > 0")


@dataclass(frozen=True)
class ScalingRules:
    stabilization_s: float
    policies: tuple[ScalingPolicy, ...]
    select: str = "Max"  # "Max", "Min" or "Disabled"

    def __post_init__(self) -> None:
        if self.select not in ("Max", "Min", "Disabled"):
            raise ValueError(f"selectPolicy must be Max, Min or Disabled, got {self.select!r}")
        if not 0 <= self.stabilization_s <= 3600:
            raise ValueError("stabilizationWindowSeconds must be in [0, 3600]")


DEFAULT_SCALE_UP = ScalingRules(0.0, (ScalingPolicy("Pods", 4, 15.0), ScalingPolicy("Percent", 100, 15.0)))
DEFAULT_SCALE_DOWN = ScalingRules(DOWNSCALE_STABILISATION_S, (ScalingPolicy("Percent", 100, 15.0),))


@dataclass(frozen=True)
class HPASpec:
    target: float  # target value per pod (AverageValue)
    min_replicas: int = 1
    max_replicas: int = 10
    tolerance_up: float = TOLERANCE
    tolerance_down: float = TOLERANCE
    metric_source: str = "external"  # "external" (KEDA, a total) or "pods" (an average over ready pods)
    scale_up: ScalingRules = DEFAULT_SCALE_UP
    scale_down: ScalingRules = DEFAULT_SCALE_DOWN

    def __post_init__(self) -> None:
        if not self.target > 0:
            raise ValueError("target must be > 0")
        if self.metric_source not in ("external", "pods"):
            raise ValueError(f"metric_source must be 'external' or 'pods', got {self.metric_source!r}")
        if not 0 <= self.min_replicas <= self.max_replicas:
            raise ValueError("need 0 <= min_replicas <= max_replicas")


@dataclass
class HPAController:
    spec: HPASpec
    recommendations: list = field(default_factory=list)  # [(t, desired)]: the unstabilised recommendations
    up_events: list = field(default_factory=list)  # [(t, replicas added)]
    down_events: list = field(default_factory=list)  # [(t, replicas removed)]

    def metric_replicas(self, current: int, value: float, ready: int) -> int:
        """The metric's replica count with the tolerance (replica_calculator.go). ``value``: the total for an
        external metric, the average over ``ready`` pods for a Pods metric."""
        s = self.spec
        if s.metric_source == "external":
            ratio = value / (s.target * max(current, 1))
            if 1 - s.tolerance_down <= ratio <= 1 + s.tolerance_up:
                return current
            return math.ceil(value / s.target)
        ratio = value / s.target
        if 1 - s.tolerance_down <= ratio <= 1 + s.tolerance_up:
            return current
        return math.ceil(ratio * ready)

    def step(self, now: float, current: int, value: float, ready: int | None = None) -> int:
        """One HPA sync at ``now`` with ``current`` replicas (the scale target's spec) and the metric ``value``:
        the replica count to set."""
        s = self.spec
        ready = current if ready is None else ready
        if current > s.max_replicas:
            desired = s.max_replicas
        elif current < s.min_replicas:
            desired = s.min_replicas
        else:
            desired = self.metric_replicas(current, value, ready)
            desired = self._stabilise(now, current, desired)
            desired = self._rate_limit(now, current, desired)
        if desired > current:
            self.up_events.append((now, desired - current))
        elif desired < current:
            self.down_events.append((now, current - desired))
        return desired

    def _stabilise(self, now: float, current: int, desired: int) -> int:
        """stabilizeRecommendationWithBehaviors: the lowest recommendation of the scale-up window and the highest of
        the scale-down window bound the current count; the unstabilised recommendation is recorded."""
        up_cut = now - self.spec.scale_up.stabilization_s
        down_cut = now - self.spec.scale_down.stabilization_s
        up_rec = down_rec = desired
        for t, rec in self.recommendations:
            if t > up_cut:
                up_rec = min(up_rec, rec)
            if t > down_cut:
                down_rec = max(down_rec, rec)
        keep = min(up_cut, down_cut)
        self.recommendations = [(t, r) for t, r in self.recommendations if t >= keep]
        self.recommendations.append((now, desired))
        rec = current
        if rec < up_rec:
            rec = up_rec
        if rec > down_rec:
            rec = down_rec
        return rec

    @staticmethod
    def _changed(events: list, now: float, period_s: float) -> int:
        return sum(n for t, n in events if t > now - period_s)  # getReplicasChangePerPeriod

    def _rate_limit(self, now: float, current: int, desired: int) -> int:
        """convertDesiredReplicasWithBehaviorRate: the rate policies, then min/max replicas."""
        s = self.spec
        if desired > current:
            limit = self._up_limit(now, current)
            limit = max(limit, current)
            return min(desired, min(s.max_replicas, limit))
        if desired < current:
            limit = self._down_limit(now, current)
            limit = min(limit, current)
            return max(desired, max(s.min_replicas, limit))
        return desired

    def _period_start(self, now: float, current: int, period_s: float) -> int:
        """periodStartReplicas: the count at the start of a policy's period."""
        return current - self._changed(self.up_events, now, period_s) + self._changed(self.down_events, now, period_s)

    def _up_limit(self, now: float, current: int) -> int:
        """calculateScaleUpLimitWithBehaviors: Max takes the highest proposal, Min the lowest."""
        return self._policy_limit(self.spec.scale_up, now, current, _scaled_up, biggest_change=max)

    def _down_limit(self, now: float, current: int) -> int:
        """calculateScaleDownLimitWithBehaviors: for scale-down the largest change is the lowest count."""
        return self._policy_limit(self.spec.scale_down, now, current, _scaled_down, biggest_change=min)

    def _policy_limit(self, rules: ScalingRules, now: float, current: int, proposal, biggest_change) -> int:
        """Each rate policy's proposal from the count at the start of its period, then the selected one."""
        if rules.select == "Disabled":
            return current
        results = [proposal(self._period_start(now, current, p.period_s), p) for p in rules.policies]
        smallest_change = min if biggest_change is max else max
        return biggest_change(results) if rules.select == "Max" else smallest_change(results)


def _scaled_up(start: int, p: ScalingPolicy) -> int:
    return start + p.value if p.kind == "Pods" else math.ceil(start * (1 + p.value / 100))


def _scaled_down(start: int, p: ScalingPolicy) -> int:
    return start - p.value if p.kind == "Pods" else int(start * (1 - p.value / 100))
