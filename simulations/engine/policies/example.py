"""The worked example of the policy API (docs/simulator.md, "Policy API"): registered as ``example-kv-cap``.

It holds every arrival and, at each 1 s tick, drops the ones held more than ``timeout_s`` (30 s; an SLO miss under
``drop_reasons["queue_timeout"]``) and dispatches the others to the serving instance with the fewest requests;
whenever an instance's running batch changes it caps the instance's batch at ``cap`` (8) while its KV is more than
``kv_high`` (90 %) full, and lifts the cap otherwise (effective at the next iteration boundary).
"""

from __future__ import annotations

from simulations.engine.policies.autoscalers import Autoscaler
from simulations.engine.policies.params import PolicyParams, knob
from simulations.engine.policies.registry import PolicyKind, register


@register(PolicyKind.AUTOSCALER, "example-kv-cap")
class KvCapExample(Autoscaler):
    wants_arrival_hook = True
    wants_batch_hook = True
    tick_s = 1.0

    class Params(PolicyParams):  # the policy's knobs: types, ranges, defaults, what they do
        timeout_s: float = knob(30.0, "drop a request held longer than this (s)", gt=0)
        cap: int = knob(8, "batch cap while the instance's KV is nearly full", ge=1)
        kv_high: float = knob(0.9, "KV fullness above which the cap applies", gt=0, le=1)

    def __init__(self, params, rng):
        super().__init__(params, rng)
        self.timeout_s = self.knobs.timeout_s
        self.cap = self.knobs.cap
        self.kv_high = self.knobs.kv_high
        self.held: list[int] = []

    def on_arrival(self, sim, rid, now):  # hold every arrival; the tick dispatches or drops it
        self.held.append(rid)
        return True

    def on_tick(self, sim, now):
        keep = []
        for rid in self.held:
            ep = sim.endpoints_for(sim.region_names[sim.region_of(rid)], sim.model_names[sim.model_of(rid)])[0]
            if now - sim.arrival_s(rid) > self.timeout_s:
                sim.drop(rid, "queue_timeout")
            elif ep.serving:
                sim.dispatch(rid, min(ep.serving, key=sim.request_count), now)
            else:
                keep.append(rid)
        self.held = keep

    def on_batch_change(self, sim, inst, now):
        full = sim.kv_used(inst, now) > self.kv_high * inst.cap
        sim.set_max_batch(inst, self.cap if full else inst.spec.max_batch_size, now)
