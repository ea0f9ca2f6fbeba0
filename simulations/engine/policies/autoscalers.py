"""Autoscalers: a control tick plus a per-request hook, with access to the fleet and the past only.

Interface (subclass ``Autoscaler``, decorate with ``@register(PolicyKind.AUTOSCALER, "name")``):

- ``prepare_fleet(fleet, workload)`` -> FleetConfig: may rewrite the initial fleet before the run (split
  pools, size it). It receives the whole workload; only oracle baselines (``peak``) may look at it.
- ``on_start(sim, now)``: once, at t=0, after the initial instances exist.
- ``tick_s``: if set, ``on_tick(sim, now)`` runs every ``tick_s`` simulated seconds.
- ``on_request(sim, endpoint, now, rid)``: every request as it reaches a regional endpoint (only if
  ``wants_request_hook``).
- ``on_instance_ready(sim, instance, now)``: an instance finished provisioning.
- ``on_arrival(sim, rid, now) -> bool`` (only if ``wants_arrival_hook``): before routing; True holds the
  request (e.g. a global NIW queue), which the policy later hands over with ``sim.send(rid, endpoint, t)`` or
  ``sim.dispatch(rid, instance, t)``, or drops with ``sim.drop(rid, reason)``.
- ``on_batch_change(sim, instance, now)``, ``on_complete(sim, instance, rid, now)``,
  ``on_instance_release(sim, instance, now)``: only with ``wants_batch_hook`` / ``wants_completion_hook`` /
  ``wants_release_hook``.

``sim`` in every hook is the run's ``PolicyView`` (simulations/engine/core/view.py), never the simulator: the read-only
request and instance information and the control verbs policies may use. A policy's randomness is the ``rng`` its
constructor receives.
"""

from __future__ import annotations

import math
from dataclasses import replace
from typing import ClassVar

import numpy as np

from simulations.engine.policies.params import PolicyParams, knob
from simulations.engine.policies.registry import PolicyKind, register
from simulations.engine.scenario.config import TIER_INDEX, FleetConfig


class Autoscaler:
    # the policy's knobs (strategy.params), declared as a typed model (policies/params.py); read as ``self.knobs``
    Params: ClassVar[type[PolicyParams]] = PolicyParams
    tick_s: float | None = None
    wants_request_hook = False
    wants_arrival_hook = False
    # the policy API's instance hooks (control.py), off unless a policy needs them
    wants_batch_hook = False
    wants_completion_hook = False
    wants_release_hook = False
    # a streamed run (window.py) may drop finished requests' rows only if the policy keeps no request id and reads
    # no observed() history across chunks: True for the stock scalers below, False unless a policy says so
    stream_safe = False

    def __init__(self, params: dict, rng: np.random.Generator) -> None:
        self.params = dict(params or {})
        self.knobs = self.Params.read(self.params)
        self.rng = rng

    @classmethod
    def kv_bytes_use(cls, knobs) -> str:
        """Why this policy moves KV between memories (swap to host, live migration), in words, given its read
        knobs; "" when it never does. A deployment without ``kv_bytes_per_token`` is then refused when the
        scenario is parsed (scenario.py), not half-way through the run."""
        return ""

    def prepare_fleet(self, fleet: FleetConfig, workload) -> FleetConfig:
        return fleet

    def on_start(self, sim, now: float) -> None:
        pass

    def on_tick(self, sim, now: float) -> None:
        pass

    def on_request(self, sim, endpoint, now: float, rid: int) -> None:
        pass

    def on_instance_ready(self, sim, instance, now: float) -> None:
        pass

    def on_batch_change(self, sim, instance, now: float) -> None:
        """The running batch of ``instance`` changed (only if ``wants_batch_hook``)."""

    def on_complete(self, sim, instance, rid: int, now: float) -> None:
        """Request ``rid`` finished on ``instance``: capacity freed (only if ``wants_completion_hook``)."""

    def on_instance_release(self, sim, instance, now: float) -> None:
        """``instance`` was released after draining (only if ``wants_release_hook``)."""

    def on_arrival(self, sim, rid: int, now: float) -> bool:
        """Before routing (only if ``wants_arrival_hook``): return True to hold the request; release it later
        with ``sim.send(rid, endpoint, t)``."""
        return False


class ScaleLockParams(PolicyParams):
    cooldown_out_s: float | None = knob(None, "wait after a scale-out (s); default cooldown_s", ge=0)
    cooldown_in_s: float | None = knob(None, "wait after a scale-in (s); default cooldown_s", ge=0)
    lock_after_scale_out: bool = knob(False, "after a scale-out, wait at least the new instance's start-up delay")


class ScaleLock:
    """How long an endpoint waits after a scaling action before the next one.

    Params: ``cooldown_out_s`` / ``cooldown_in_s`` (default ``cooldown_s``, 15 s) after a scale-out / scale-in,
    and ``lock_after_scale_out`` (default false): after a scale-out, wait at least the new instance's nominal
    start-up delay (spot reclaim 65 s, or VM + model load), as the SageServe authors' arbiter locks the model
    until the instance is ready. The policies check ``now - ep.last_scale_t < cooldown``, so a wait of W is
    stored as ``last_scale_t = now + W - cooldown`` (exactly ``now`` when W equals the cooldown: unchanged runs).
    """

    def __init__(self, knobs: ScaleLockParams, cooldown: float) -> None:
        self.cooldown = cooldown
        self.out_s = cooldown if knobs.cooldown_out_s is None else knobs.cooldown_out_s
        self.in_s = cooldown if knobs.cooldown_in_s is None else knobs.cooldown_in_s
        self.until_ready = knobs.lock_after_scale_out

    def _hold(self, ep, now: float, wait: float) -> None:
        ep.last_scale_t = now if wait == self.cooldown else now + wait - self.cooldown

    def after_out(self, sim, ep, now: float) -> None:
        wait = self.out_s
        if self.until_ready:
            last = sim.last_scaling_event() or {}
            if last.get("action") == "scale_out":
                wait = max(wait, float(last.get("delay_s") or 0.0))
        self._hold(ep, now, wait)

    def after_in(self, ep, now: float) -> None:
        self._hold(ep, now, self.in_s)


@register(PolicyKind.AUTOSCALER, "static")
class Static(Autoscaler):
    """Fixed instance counts per endpoint (the scenario's ``initial``)."""
    stream_safe = True

    class Params(PolicyParams):
        refuse_unknown: ClassVar[bool] = False  # reads no knob: a comparison's shared knobs are ignored


@register(PolicyKind.AUTOSCALER, "peak")
class PeakProvisioning(Autoscaler):
    """Static counts sized from the trace itself (an oracle baseline): for each (region, model), the peak
    input TPS over ``window_s`` windows of requests originating there, / theta_tps x (1 + headroom)."""
    stream_safe = True

    class Params(PolicyParams):
        window_s: float = knob(60.0, "window over which the peak input TPS is measured (s)", gt=0)
        headroom: float = knob(0.0, "extra capacity above the peak, as a fraction", ge=0)

    def prepare_fleet(self, fleet, workload):
        window = self.knobs.window_s
        headroom = self.knobs.headroom
        endpoints = []
        for ep in fleet.endpoints:
            theta = ep.deployment.theta_tps
            if theta <= 0 or ep.region not in workload.region_names or ep.model not in workload.model_names:
                endpoints.append(ep)
                continue
            mask = (workload.region == workload.region_names.index(ep.region)) & (
                workload.model == workload.model_names.index(ep.model))
            if not mask.any():
                count = ep.min_instances
            else:
                bins = (workload.arrival_s[mask] // window).astype(np.int64)
                tps = np.bincount(bins, weights=workload.input_tokens[mask]).max() / window
                count = math.ceil(tps * (1 + headroom) / theta)
            count = max(ep.min_instances, min(ep.max_instances, count))
            endpoints.append(replace(ep, initial=count))
        return fleet.with_endpoints(endpoints)


@register(PolicyKind.AUTOSCALER, "reactive-unified")
class ReactiveUnified(Autoscaler):
    """SageServe's reactive heuristic (sec. 4, 7.1): on each request at a regional endpoint, if effective
    memory utilisation > 70% scale out by one (spot of the same model first, then of another model, then
    a new VM), if < 30% scale in by one (donated to the spot pool), with a 15 s cooldown per endpoint and
    the endpoint's min/max bounds. One pool per (region, model) shared by all tiers."""
    stream_safe = True

    wants_request_hook = True

    class Params(ScaleLockParams):
        scale_out_above: float = knob(0.70, "scale out by one above this effective memory utilisation", ge=0)
        scale_in_below: float = knob(0.30, "scale in by one below this effective memory utilisation", ge=0)
        cooldown_s: float = knob(15.0, "wait between two scaling actions of an endpoint (s)", ge=0)
        donate_to_spot: bool = knob(True, "a scaled-in instance joins the region's spot pool (else its VM is freed)")
        tick_s: float | None = knob(None, "also check every endpoint every tick_s seconds (none or 0: per request "
                                          "only)", ge=0)

    def __init__(self, params, rng):
        super().__init__(params, rng)
        k = self.knobs
        self.hi = k.scale_out_above
        self.lo = k.scale_in_below
        self.cooldown = k.cooldown_s
        self.lock = ScaleLock(k, self.cooldown)
        self.donate = k.donate_to_spot
        self.tick_s = k.tick_s if k.tick_s else None

    def _check(self, sim, ep, now):
        if now - ep.last_scale_t < self.cooldown:
            return
        self._act(sim, ep, now, ep.util_at(now))

    def _act(self, sim, ep, now, u):
        """The scaling decision given the endpoint's utilisation ``u`` at ``now`` (cooldown already passed);
        the loop's fused arrival path calls it with the value the region router just computed."""
        if u > self.hi and ep.n_active < ep.max_instances:
            if sim.scale_out(ep, now) is not None:
                self.lock.after_out(sim, ep, now)
        elif u < self.lo and ep.n_serving > max(1, ep.min_instances) and not ep.provisioning:
            if sim.scale_in(ep, now, donate=self.donate) is not None:
                self.lock.after_in(ep, now)

    def on_request(self, sim, endpoint, now, rid):
        self._check(sim, endpoint, now)

    def on_tick(self, sim, now):
        for ep in sim.endpoints:
            self._check(sim, ep, now)


@register(PolicyKind.AUTOSCALER, "reactive-siloed")
class ReactiveSiloed(ReactiveUnified):
    """As reactive-unified, but every (region, model) endpoint is split into an IW pool and an NIW pool
    (default 80% / 20% of the initial count, as SageServe's 16 + 4); IW requests only use the IW pool."""

    class Params(ReactiveUnified.Params):
        niw_share: float = knob(0.2, "share of each endpoint's initial instances in the NIW pool", ge=0, le=1)

    def prepare_fleet(self, fleet, workload):
        share = self.knobs.niw_share
        endpoints = []
        for ep in fleet.endpoints:
            if ep.pool != "all":
                endpoints.append(ep)
                continue
            niw = max(ep.min_instances, int(round(ep.initial * share)))
            iw = max(ep.min_instances, ep.initial - niw)
            endpoints.append(replace(ep, pool="iw", initial=iw))
            endpoints.append(replace(ep, pool="niw", initial=niw))
        return fleet.with_endpoints(endpoints)


NIW = TIER_INDEX["NIW"]
