"""``knative-kpa``: Knative's KPA (controller.py) on the revision's in-flight requests.

Knative's queue-proxy counts a request from arrival to response, so the concurrency is running + waiting requests
(``metric: "concurrency"``; ``"running"`` counts only vLLM's running batch). The autoscaler scrapes every pod each
second (collector.go line 37) and decides every 2 s (multiscaler.go line 36): ``scrape_interval_s`` 1,
``sync_s`` 2, no lag. Target 70 in-flight requests per pod (config.go: 100 x 0.7). Min / max: the endpoint's.
"""

from __future__ import annotations

from typing import Literal

from simulations.engine.policies.knative_kpa.controller import (
    MAX_SCALE_DOWN_RATE,
    MAX_SCALE_UP_RATE,
    PANIC_THRESHOLD,
    PANIC_WINDOW_PCT,
    SCRAPE_S,
    STABLE_WINDOW_S,
    TARGET,
    TICK_S,
    KPAController,
    KPASpec,
)
from simulations.engine.policies.params import knob
from simulations.engine.policies.registry import PolicyKind, register
from simulations.engine.policies.scraped import ScrapedScaler, ScrapeParams


class KPAParams(ScrapeParams):
    scrape_interval_s: float = knob(SCRAPE_S, "seconds between metric scrapes", gt=0, le=3600)
    sync_s: float = knob(TICK_S, "seconds between the controller's decisions", gt=0, le=3600)
    metric: Literal["concurrency", "running"] = knob("concurrency", "the vLLM metric the autoscaler reads")
    target: float = knob(TARGET, "in-flight requests per pod", gt=0)
    stable_window_s: float = knob(STABLE_WINDOW_S, "stable window (s): the average the stable count uses", ge=6, le=3600)
    panic_window_pct: float = knob(PANIC_WINDOW_PCT, "panic window as a percentage of the stable window", ge=1, le=100)
    panic_threshold: float = knob(PANIC_THRESHOLD, "ratio (2.0 = 200 %)", gt=1, le=10)
    max_scale_up_rate: float = knob(MAX_SCALE_UP_RATE, "at most this factor more pods per decision", gt=1)
    max_scale_down_rate: float = knob(MAX_SCALE_DOWN_RATE, "at most this factor fewer pods per decision", gt=1)


@register(PolicyKind.AUTOSCALER, "knative-kpa")
class KnativeKPAScaler(ScrapedScaler):
    """Knative KPA: desired = ceil(window-average concurrency / target) over a 60 s stable window, or the 6 s panic
    window while panicking (panic at 2x the ready pods' worth), no scale-down during panic."""
    Params = KPAParams

    def make_controller(self, ep):
        p = self.p
        return KPAController(KPASpec(target=p.target, stable_window_s=p.stable_window_s,
                                     panic_window_pct=p.panic_window_pct, panic_threshold=p.panic_threshold,
                                     max_scale_up_rate=p.max_scale_up_rate, max_scale_down_rate=p.max_scale_down_rate,
                                     min_scale=ep.min_instances, max_scale=ep.max_instances))

    def feed(self, ctrl, sample):
        ctrl.record(sample.t, sample.total(self.p.metric))

    def decide(self, ctrl, ep, now):
        return ctrl.step(now, ep.n_serving)
