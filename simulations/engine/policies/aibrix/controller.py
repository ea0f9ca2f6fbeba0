"""AIBrix's pod autoscaler algorithms (APA and its KPA) as pure controllers (no simulator, no Django).

Read from vllm-project/aibrix (commit e3e10f9e), pkg/controller/podautoscaler/:

- ``algorithm/apa.go`` lines 90-109 (APA): with r = current use per pod / target, scale up when r > 1 + up tolerance
  to ceil(current x r), at most ceil(max scale-up rate x current); scale down when r < 1 - down tolerance to
  ceil(current x r), at least floor(current / max scale-down rate); else keep the count.
- ``algorithm/kpa.go`` lines 91-96 and 100-191 (AIBrix KPA): panic mode when panic / stable > panic threshold (or
  stable <= 0); desired stable / panic counts ceil(value / target) outside the tolerance band, kept in
  [floor(ready / down rate), max(1, ceil(up rate x ready))]; no scale-down while panicking.
- ``podautoscaler_controller.go`` lines 1215-1290 (``stabilizeRecommendation``): over the cooldown window of the
  scaling direction, the highest recommendation when scaling up and the *lowest* when scaling down (the reverse of
  Kubernetes' HPA, which keeps the highest recommendation of its scale-down window; implemented as written).
- ``algorithm/algorithm.go`` lines 77-85: min / max replicas.

Defaults: ``context/context.go`` lines 108-115 (max scale-up rate 2, max scale-down rate 2, tolerances 0.1 / 0.1,
scale-up cooldown 0 s, scale-down cooldown 300 s, panic threshold 2); ``metrics/client.go`` lines 28-29 (stable
window 180 s, panic window 60 s, the mean of the pods' values per sample, lines 166-171);
``podautoscaler_controller.go`` line 101 (a 10 s resync).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from simulations.engine.policies.knative_kpa.controller import WindowAverage

RESYNC_S = 10.0
STABLE_WINDOW_S = 180.0
PANIC_WINDOW_S = 60.0


@dataclass(frozen=True)
class AIBrixSpec:
    target: float  # target value per pod
    min_replicas: int = 1
    max_replicas: int = 10
    max_scale_up_rate: float = 2.0
    max_scale_down_rate: float = 2.0
    up_tolerance: float = 0.1
    down_tolerance: float = 0.1
    scale_up_cooldown_s: float = 0.0
    scale_down_cooldown_s: float = 300.0
    panic_threshold: float = 2.0
    stable_window_s: float = STABLE_WINDOW_S
    panic_window_s: float = PANIC_WINDOW_S

    def __post_init__(self) -> None:
        if not self.target > 0:
            raise ValueError("target must be > 0")
        if not self.max_scale_up_rate >= 1 or not self.max_scale_down_rate >= 1:
            raise ValueError("max scale rates must be >= 1")
        if not 0 <= self.min_replicas <= self.max_replicas:
            raise ValueError("need 0 <= min_replicas <= max_replicas")


def apa_replicas(spec: AIBrixSpec, current: int, use_per_pod: float) -> int:
    """apa.go computeTargetReplicas, then the min / max constraints."""
    r = use_per_pod / spec.target
    desired = current
    if r > 1 + spec.up_tolerance:
        desired = min(math.ceil(current * r), math.ceil(spec.max_scale_up_rate * current))
    elif r < 1 - spec.down_tolerance:
        desired = max(math.ceil(current * r), math.floor(current / spec.max_scale_down_rate))
    return min(max(desired, spec.min_replicas), spec.max_replicas)


@dataclass
class Stabiliser:
    """podautoscaler_controller.go stabilizeRecommendation."""
    up_s: float
    down_s: float
    history: list = field(default_factory=list)  # [(t, recommendation)]

    def apply(self, now: float, recommendation: int, current: int) -> int:
        self.history.append((now, recommendation))
        self.history = [(t, r) for t, r in self.history if t > now - max(self.up_s, self.down_s)
                        or t == now]
        if recommendation == current:
            return current
        up = recommendation > current
        cutoff = now - (self.up_s if up else self.down_s)
        inside = [r for t, r in self.history if t > cutoff]
        if not inside:
            return recommendation
        return max(inside) if up else min(inside)


@dataclass
class APAController:
    spec: AIBrixSpec
    window: WindowAverage = field(init=False)
    stabiliser: Stabiliser = field(init=False)

    def __post_init__(self) -> None:
        self.window = WindowAverage(self.spec.stable_window_s)
        self.stabiliser = Stabiliser(self.spec.scale_up_cooldown_s, self.spec.scale_down_cooldown_s)

    def record(self, t: float, per_pod_mean: float) -> None:
        self.window.record(t, per_pod_mean)

    def step(self, now: float, current: int) -> int | None:
        value = self.window.average(now)
        if value is None:
            return None
        return self.stabiliser.apply(now, apa_replicas(self.spec, current, value), current)


@dataclass
class AIBrixKPAController:
    """AIBrix's KPA. ``record`` takes the value the algorithm divides by the per-pod target: the revision's total
    (the algorithm's own tests, kpa_test.go, and Knative), see the strategy's ``kpa_value`` knob."""
    spec: AIBrixSpec
    max_panic_pods: int = 0
    stable: WindowAverage = field(init=False)
    panic: WindowAverage = field(init=False)
    stabiliser: Stabiliser = field(init=False)

    def __post_init__(self) -> None:
        self.stable = WindowAverage(self.spec.stable_window_s)
        self.panic = WindowAverage(self.spec.panic_window_s)
        self.stabiliser = Stabiliser(self.spec.scale_up_cooldown_s, self.spec.scale_down_cooldown_s)

    def record(self, t: float, value: float) -> None:
        self.stable.record(t, value)
        self.panic.record(t, value)

    def step(self, now: float, current: int) -> int | None:
        stable, panic = self.stable.average(now), self.panic.average(now)
        if stable is None or panic is None:
            return None
        return self.stabiliser.apply(now, self.decide(current, stable, panic), current)

    def decide(self, current: int, stable: float, panic: float) -> int:
        s = self.spec
        in_panic = stable <= 0 or panic / stable > s.panic_threshold
        ready = max(0.0, float(current))
        max_up = max(1.0, math.ceil(s.max_scale_up_rate * ready))
        max_down = math.floor(ready / s.max_scale_down_rate)
        up_th, down_th = s.target * (1 + s.up_tolerance), s.target * (1 - s.down_tolerance)
        dspc = math.ceil(stable / s.target) if (stable > up_th or stable < down_th) else current
        dppc = math.ceil(panic / s.target) if (panic > up_th or panic < down_th) else current
        want_stable = int(min(max(dspc, max_down), max_up))
        want_panic = int(min(max(dppc, max_down), max_up))
        desired = want_stable
        if in_panic:
            desired = max(desired, want_panic)
            self.max_panic_pods = max(self.max_panic_pods, desired)
            desired = self.max_panic_pods
        else:
            self.max_panic_pods = 0  # ours: AIBrix rebuilds its context each reconcile; the hold ends with panic
        return min(max(desired, s.min_replicas), s.max_replicas)
