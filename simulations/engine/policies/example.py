"""The worked example of the policy API (docs/simulator.md, "Policy API"): registered as ``example-kv-cap``.

It holds every arrival and, at each 1 s tick, drops the ones held more than ``timeout_s`` (30 s; an SLO miss under
``drop_reasons["queue_timeout"]``) and dispatches the others to the serving instance with the fewest requests;
whenever an instance's running batch changes it caps the instance's batch at ``cap`` (8) while its KV is more than
``kv_high`` (90 %) full, and lifts the cap otherwise (effective at the next iteration boundary).
"""

from __future__ import annotations

from simulations.engine.policies.autoscalers import Autoscaler
from simulations.engine.policies.registry import PolicyKind, register


@register(PolicyKind.AUTOSCALER, "example-kv-cap")
class KvCapExample(Autoscaler):
    wants_arrival_hook = True
    wants_batch_hook = True
    tick_s = 1.0

    def __init__(self, params, rng):
        super().__init__(params, rng)
        self.timeout_s = float(self.params.get("timeout_s", 30.0))
        self.cap = int(self.params.get("cap", 8))
        self.kv_high = float(self.params.get("kv_high", 0.9))
        self.held: list[int] = []

    def on_arrival(self, sim, rid, now):  # hold every arrival; the tick dispatches or drops it
        self.held.append(rid)
        return True

    def on_tick(self, sim, now):
        keep = []
        for rid in self.held:
            ep = sim.endpoints_for(sim.region_names[sim.req_region[rid]], sim.model_names[sim.req_model[rid]])[0]
            if now - sim.req_arr[rid] > self.timeout_s:
                sim.drop(rid, "queue_timeout")
            elif ep.serving:
                sim.dispatch(rid, min(ep.serving, key=sim.request_count), now)
            else:
                keep.append(rid)
        self.held = keep

    def on_batch_change(self, sim, inst, now):
        full = sim.kv_used(inst, now) > self.kv_high * inst.cap
        sim.set_max_batch(inst, self.cap if full else inst.spec.max_batch_size, now)
