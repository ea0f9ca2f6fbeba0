"""``dynamo-planner``: NVIDIA Dynamo's SLA planner (controller.py) on an aggregated endpoint, or on the two pools of
a disaggregated one (docs/disaggregation.md): the prefill pool gets the prefill share (TTFT), the decode pool the
decode share (ITL), each sized with its own deployment's profile, as Dynamo's disaggregated planner does.

Every ``sync_s`` (the adjustment interval, 180 s) it observes, per endpoint, what Dynamo's frontend metrics give:
the interval's request count and mean ISL (requests that reached the endpoint's (region, model), shared equally
among its endpoints) and the mean OSL of the requests that completed in the interval (completion hook); the
engine profile comes from the deployment's latency model (controller.Profile). The TTFT / ITL correction factors
stay 1: the policy view exposes no measured latency (not modelled). The metric lag is the interval itself (Dynamo
reads the interval's Prometheus averages at its end).
"""

from __future__ import annotations

from typing import Literal

import numpy as np

from simulations.engine.policies.dynamo_planner.controller import (
    ADJUSTMENT_INTERVAL_S,
    ITL_S,
    TTFT_S,
    Observation,
    PlannerSpec,
    Profile,
    SLAPlanner,
)
from simulations.engine.policies.params import knob
from simulations.engine.policies.registry import PolicyKind, register
from simulations.engine.policies.scraped import ScrapedScaler, ScrapeParams


class DynamoParams(ScrapeParams):
    sync_s: float = knob(ADJUSTMENT_INTERVAL_S, "adjustment interval (s)", gt=0, le=3600)
    scrape_interval_s: float = knob(ADJUSTMENT_INTERVAL_S, "seconds between metric scrapes", gt=0, le=3600)
    ttft_s: float = knob(TTFT_S, "TTFT target (s)", gt=0, le=3600)
    itl_s: float = knob(ITL_S, "ITL target (s)", gt=0, le=60)
    load_predictor: Literal["constant", "arima", "kalman"] = knob("arima", "the load predictor: constant, arima or kalman")
    combine: Literal["sum", "max"] = knob("sum", "sum: prefill share + decode share; max: the larger count")
    arima_window: int = knob(100, "points the ARIMA predictor keeps", ge=5, le=10000)
    kalman_q_level: float = knob(1.0, "Kalman process noise of the level", gt=0)
    kalman_q_trend: float = knob(0.1, "Kalman process noise of the trend", gt=0)
    kalman_r: float = knob(10.0, "Kalman measurement noise", gt=0)


def profile_of(spec) -> Profile:
    p, d = spec.prefill, spec.decode
    return Profile(p_c0=p.c0, p_c1=p.c1, p_c2=p.c2, d_c0=d.c0, d_cb=d.c_batch, d_cc=d.c_ctx,
                   kv_tokens=int(spec.kv_capacity_tokens), max_batch=int(spec.max_batch_size))


@register(PolicyKind.AUTOSCALER, "dynamo-planner")
class DynamoPlannerScaler(ScrapedScaler):
    """Dynamo SLA planner: every 180 s predict the next interval's requests, ISL and OSL (constant / ARIMA /
    Kalman) and size the endpoint for its TTFT and ITL targets from the engine's prefill and decode curves."""
    Params = DynamoParams
    wants_completion_hook = True

    def make_controller(self, ep):
        p = self.p
        spec = PlannerSpec(ttft_s=p.ttft_s, itl_s=p.itl_s, interval_s=p.sync_s, predictor=p.load_predictor,
                           min_endpoint=max(1, ep.min_instances), max_replicas=ep.max_instances, combine=p.combine,
                           predictor_params={"arima_window": p.arima_window, "kalman_q_level": p.kalman_q_level,
                                             "kalman_q_trend": p.kalman_q_trend, "kalman_r": p.kalman_r})
        return {"planner": SLAPlanner(spec, profile_of(ep.spec)), "out_tokens": 0, "done": 0, "osl": 0.0}

    def on_complete(self, sim, instance, rid, now):
        ctrl = self.controllers.get(instance.endpoint.name)
        if ctrl is not None:
            ctrl["out_tokens"] += sim.tokens_generated(rid, now)
            ctrl["done"] += 1

    def feed(self, ctrl, sample):
        pass  # the planner reads interval averages, not gauges

    def decide(self, ctrl, ep, now):
        obs = self._observe(ep, now)
        if ctrl["done"]:
            ctrl["osl"] = ctrl["out_tokens"] / ctrl["done"]
        ctrl["out_tokens"] = ctrl["done"] = 0
        planner = ctrl["planner"]
        planner.observe(Observation(num_req=obs[0], isl=obs[1], osl=ctrl["osl"]))
        if ep.pool == "prefill":  # a disaggregated endpoint: each pool from its own share
            return planner.plan_split()[0]
        if ep.pool == "decode":
            return planner.plan_split()[1]
        return planner.plan()

    def on_start(self, sim, now):
        super().on_start(sim, now)
        self.sim = sim

    def _observe(self, ep, now):
        """(requests, mean prompt tokens) that reached the endpoint's (region, model) in the last interval."""
        seen = self.sim.observed(now)
        t = seen["arrival_s"]
        lo = int(np.searchsorted(t, now - self.p.sync_s, side="right"))
        mask = (seen["model"][lo:] == ep.model_idx) & (seen["region"][lo:] == ep.region_idx)
        n = int(mask.sum())
        # every request reaches both pools of a disaggregated endpoint; other endpoints of the (region, model) share
        share = 1 if ep.pool in ("prefill", "decode") else (len(self.sim.endpoints_for(ep.region, ep.model)) or 1)
        isl = float(seen["input_tokens"][lo:][mask].mean()) if n else 0.0
        return n / share, isl
