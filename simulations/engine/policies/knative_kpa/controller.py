"""Knative Serving's pod autoscaler (KPA) decision as a pure controller (no simulator, no Django).

Read from knative/serving (commit 98e5ef90): ``pkg/autoscaler/scaling/autoscaler.go`` ``Scale`` lines 161-257
(ready pods floored at 1, max scale up/down rates, desired stable / panic pod counts = ceil(observed / target),
panic mode entered when the panic count / ready pods >= the panic threshold and left a stable window after the
last time it was over, no scale-down while panicking), the metric windows of ``pkg/autoscaler/metrics/collector.go``
(one scrape a second, line 37; a plain average over each window, ``aggregation.TimedFloat64Buckets.WindowAverage``)
and the decision tick of ``pkg/autoscaler/scaling/multiscaler.go`` line 36 (2 s).

Defaults, ``pkg/autoscaler/config/config.go`` ``defaultConfig`` lines 39-66: target utilisation 0.7 of the
container concurrency target 100 (70 in-flight requests per pod), max scale-up rate 1000, max scale-down rate 2,
stable window 60 s, panic window 10 % of it (6 s), panic threshold 200 %, scale-down delay 0, scale to zero on.
"""

from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass, field

TICK_S = 2.0
SCRAPE_S = 1.0
STABLE_WINDOW_S = 60.0
PANIC_WINDOW_PCT = 10.0
PANIC_THRESHOLD = 2.0
TARGET = 100 * 0.7
MAX_SCALE_UP_RATE = 1000.0
MAX_SCALE_DOWN_RATE = 2.0


class WindowAverage:
    """The average of the samples recorded in the last ``window_s`` seconds (one bucket per second, as
    Knative's TimedFloat64Buckets with its 1 s granularity: samples in the same second are averaged first)."""

    def __init__(self, window_s: float, bucket_s: float = 1.0) -> None:
        self.window_s = float(window_s)
        self.bucket_s = float(bucket_s)
        self.buckets: deque = deque()  # (bucket index, sum, count)

    def record(self, t: float, value: float) -> None:
        b = math.floor(t / self.bucket_s)
        if self.buckets and self.buckets[-1][0] == b:
            _, s, n = self.buckets[-1]
            self.buckets[-1] = (b, s + value, n + 1)
        else:
            self.buckets.append((b, value, 1))

    def average(self, now: float) -> float | None:
        """The mean over the buckets of the window ending at ``now`` (None without data)."""
        first = math.floor(now / self.bucket_s) - round(self.window_s / self.bucket_s) + 1
        while self.buckets and self.buckets[0][0] < first:
            self.buckets.popleft()
        if not self.buckets:
            return None
        return sum(s / n for _, s, n in self.buckets) / len(self.buckets)


@dataclass(frozen=True)
class KPASpec:
    target: float = TARGET  # in-flight requests per pod (or RPS per pod)
    stable_window_s: float = STABLE_WINDOW_S
    panic_window_pct: float = PANIC_WINDOW_PCT
    panic_threshold: float = PANIC_THRESHOLD  # a ratio (200 % = 2.0)
    max_scale_up_rate: float = MAX_SCALE_UP_RATE
    max_scale_down_rate: float = MAX_SCALE_DOWN_RATE
    min_scale: int = 0
    max_scale: int = 0  # 0 = unbounded
    activation_scale: int = 1

    def __post_init__(self) -> None:
        if not self.target > 0:
            raise ValueError("target must be > 0")
        if not 1 <= self.panic_window_pct <= 100:
            raise ValueError("panic_window_pct must be in [1, 100]")
        if not self.stable_window_s >= 6:
            raise ValueError("stable_window_s must be >= 6 s (Knative's minimum)")
        if not self.max_scale_up_rate > 1 or not self.max_scale_down_rate > 1:
            raise ValueError("max_scale_up_rate and max_scale_down_rate must be > 1")

    @property
    def panic_window_s(self) -> float:
        return self.stable_window_s * self.panic_window_pct / 100


@dataclass
class KPAController:
    spec: KPASpec
    panic_time: float | None = None
    max_panic_pods: int = 0
    stable: WindowAverage = field(init=False)
    panic: WindowAverage = field(init=False)

    def __post_init__(self) -> None:
        self.stable = WindowAverage(self.spec.stable_window_s)
        self.panic = WindowAverage(self.spec.panic_window_s)

    def record(self, t: float, value: float) -> None:
        """One scrape: the revision's total in-flight requests (or RPS) at ``t``."""
        self.stable.record(t, value)
        self.panic.record(t, value)

    def step(self, now: float, ready_pods: int) -> int | None:
        """The desired pod count at ``now`` (None without data yet: Knative keeps the current scale)."""
        stable, panic = self.stable.average(now), self.panic.average(now)
        if stable is None or panic is None:
            return None
        return self.decide(now, ready_pods, stable, panic)

    def decide(self, now: float, ready_pods: int, stable: float, panic: float) -> int:
        """autoscaler.go Scale() from the observed stable and panic values."""
        s = self.spec
        ready = max(1.0, float(ready_pods))
        max_up = math.ceil(s.max_scale_up_rate * ready)
        max_down = math.floor(ready / s.max_scale_down_rate)
        dspc = math.ceil(stable / s.target)
        dppc = math.ceil(panic / s.target)
        want_stable = int(min(max(dspc, max_down), max_up))
        want_panic = int(min(max(dppc, max_down), max_up))
        if s.activation_scale > 1:
            if dspc > 0 and s.activation_scale > want_stable:
                want_stable = s.activation_scale
            if dppc > 0 and s.activation_scale > want_panic:
                want_panic = s.activation_scale
        over = dppc / ready >= s.panic_threshold
        if self.panic_time is None and over:
            self.panic_time = now
        elif over:
            self.panic_time = now
        elif self.panic_time is not None and self.panic_time + s.stable_window_s < now:
            self.panic_time = None
            self.max_panic_pods = 0
        desired = want_stable
        if self.panic_time is not None:
            desired = max(desired, want_panic)
            if desired > self.max_panic_pods:
                self.max_panic_pods = desired
            desired = self.max_panic_pods
        desired = max(desired, s.min_scale)
        if s.max_scale > 0:
            desired = min(desired, s.max_scale)
        return desired
