"""``llmd-wva``: llm-d's workload variant autoscaler, saturation analyzer (controller.py), one variant.

Each decision (every 60 s, ``sync_s``) reads per ready replica the peak KV-cache usage and waiting requests over
the last minute (``max_over_time(...[1m])``) from samples scraped every 15 s (ours: a common Prometheus interval).
"""

from __future__ import annotations

from simulations.engine.policies.llmd_wva.controller import INTERVAL_S, METRIC_WINDOW_S, WVASpec, target_replicas
from simulations.engine.policies.params import knob
from simulations.engine.policies.registry import PolicyKind, register
from simulations.engine.policies.scraped import ScrapedScaler, ScrapeParams


class WVAParams(ScrapeParams):
    sync_s: float = knob(INTERVAL_S, "seconds between the controller's decisions", gt=0, le=3600)
    kv_cache_threshold: float = knob(0.80, "a replica is saturated at this KV-cache usage", ge=0, le=1)
    queue_length_threshold: float = knob(5.0, "a replica is saturated at this many waiting requests", ge=0)
    kv_spare_trigger: float = knob(0.1, "scale up when the average spare KV capacity is below this", ge=0, le=1)
    queue_spare_trigger: float = knob(3.0, "scale up when the average spare queue capacity is below this", ge=0)
    metric_window_s: float = knob(METRIC_WINDOW_S, "the peaks of the last this many seconds (max_over_time)", gt=0, le=3600)


@register(PolicyKind.AUTOSCALER, "llmd-wva")
class WVAScaler(ScrapedScaler):
    """llm-d WVA: +1 replica when the non-saturated replicas' average spare KV (< 0.1) or queue (< 3) runs low,
    -1 when removing one keeps both margins, nothing while replicas start."""
    Params = WVAParams

    def make_controller(self, ep):
        p = self.p
        spec = WVASpec(kv_cache_threshold=p.kv_cache_threshold, queue_length_threshold=p.queue_length_threshold,
                       kv_spare_trigger=p.kv_spare_trigger, queue_spare_trigger=p.queue_spare_trigger,
                       min_replicas=ep.min_instances, max_replicas=ep.max_instances)
        return {"spec": spec, "samples": []}

    def feed(self, ctrl, sample):
        ctrl["samples"].append(sample)

    def decide(self, ctrl, ep, now):
        cut = now - self.p.metric_window_s
        ctrl["samples"] = [s for s in ctrl["samples"] if s.t > cut]
        if not ctrl["samples"]:
            return None
        ready = {inst.iid for inst in ep.serving}
        peaks: dict = {}
        for s in ctrl["samples"]:
            for pod in s.pods:
                if pod.iid in ready:
                    kv, q = peaks.get(pod.iid, (0.0, 0))
                    peaks[pod.iid] = (max(kv, pod.kv_usage), max(q, pod.waiting))
        # replicas without metrics yet (starting, or ready since the last scrape) put the model in transition
        return target_replicas(ctrl["spec"], len(peaks), ep.n_active - len(peaks), list(peaks.values()))
