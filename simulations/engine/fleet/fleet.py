"""The fleet life cycle and the spot pool: provisioning -> serving -> draining -> released (donated to the
region's spot pool, or the VM freed); scale-out sources (spot of the same model, spot of another model, a new
VM) and scale-in.

Compiled build: compiled with Cython by ``python -m simulations.engine.build`` (declarations in the
matching .pxd; ``@cython.locals`` types the hot locals and is inert in Python). The same source runs as
plain Python when there is no fresh build (accel.py); results are identical.
"""

from __future__ import annotations

from simulations.engine.core.entities import DRAINING, IDLE, PROVISIONING, RELEASED, SERVING, Endpoint, Instance
from simulations.engine.core.state import EV_READY
from simulations.engine.instance.batching import work_now


class FleetLifecycle:
    """Instances' life cycle per endpoint and the regions' spot pools: a part the Simulator owns
    (``sim.lifecycle``); the fleet verbs of the policy view are its methods."""

    def __init__(self, sim, fleet) -> None:
        self.sim = sim
        self.spot = [{m: int(c) for m, c in r.spot_pool.items()} for r in fleet.regions]
        self.vm_free = [int(r.vm_capacity) for r in fleet.regions]
        self._spot_last_t = 0.0
        self.spot_seconds = [0.0] * len(fleet.regions)

    def spot_flush(self, now: float) -> None:
        """Integrate spot-pool occupancy (instance-seconds per region) up to ``now``."""
        dt = now - self._spot_last_t
        if dt > 0:
            for ri, pool in enumerate(self.spot):
                self.spot_seconds[ri] += dt * sum(pool.values())
            self._spot_last_t = now

    def _spot_change(self, r: int, model: str, delta: int, now: float) -> None:
        self.spot_flush(now)
        self.spot[r][model] = self.spot[r].get(model, 0) + delta

    def add_instance(self, ep: Endpoint, now: float, delay_s: float, source: str) -> Instance:
        """Start provisioning one instance of ``ep`` that serves after ``delay_s`` (paid, not serving)."""
        sim = self.sim
        inst = Instance(len(sim.instances), ep, now, now + delay_s, source)
        sim.instances.append(inst)
        sim.state.iq.add_instance()
        if delay_s <= 0:
            self._ready(inst, now)
        else:
            ep.provisioning.append(inst)
            sim.state.push(now + delay_s, EV_READY, inst)
        return inst

    def scale_out(self, ep: Endpoint, now: float, source: str = "auto") -> Instance | None:
        """Add one instance: reclaim spot of the same model (spot_reclaim_s), else spot of another model
        (redeploy: a model load), else a new VM (vm_acquire_s + a model load). A load takes load_same_region_s
        when the weights are in the region's repository, else load_cross_region_s (``weights_in_region``)."""
        r = ep.region_idx
        st = ep.spec.startup
        load = st.load_same_region_s if ep.weights_local else st.load_cross_region_s
        pool = self.spot[r]
        chosen = None
        if source in ("auto", "spot-same") and pool.get(ep.model, 0) > 0:
            chosen, delay, model = "spot-same", st.spot_reclaim_s, ep.model
        elif source in ("auto", "spot-other") and any(c > 0 for m, c in pool.items() if m != ep.model):
            model = max((m for m, c in pool.items() if c > 0 and m != ep.model), key=lambda m: (pool[m], m))
            chosen, delay = "spot-other", load
        elif source in ("auto", "new-vm") and self.vm_free[r] > 0:
            chosen, delay, model = "new-vm", st.vm_acquire_s + load, None
        if chosen is None:
            self.sim.scaling_events.append({"t": now, "endpoint": ep.name, "action": "scale_out_blocked",
                                        "source": source, "delay_s": 0.0})
            return None
        if model is None:
            self.vm_free[r] -= 1
        else:
            self._spot_change(r, model, -1, now)
        event = {"t": now, "endpoint": ep.name, "action": "scale_out", "source": chosen, "delay_s": delay}
        if chosen != "spot-same" and not ep.weights_local:
            event["load"] = "cross-region"
        self.sim.scaling_events.append(event)
        # instant provisioning: serve at once; the nominal delay stays on the event for the waste report
        return self.add_instance(ep, now, 0.0 if self.sim.engine.instant_provisioning else delay, chosen)

    def scale_in(self, ep: Endpoint, now: float, donate: bool = True, allow_zero: bool = False) -> Instance | None:
        """Drain the serving instance with the least remaining work (never the last one, unless ``allow_zero``:
        scale-to-zero, for policies that scale out again on demand; requests reaching an endpoint with no serving
        instance wait in its backlog until one is ready)."""
        if len(ep.serving) <= (0 if allow_zero else 1):
            return None
        inst = min(ep.serving, key=lambda i: (work_now(i, now), i.iid))
        self.drain(inst, now, donate=donate)
        self.sim.scaling_events.append({"t": now, "endpoint": ep.name, "action": "scale_in",
                                    "source": "spot" if donate else "release", "delay_s": 0.0})
        return inst

    def drain(self, inst: Instance, now: float, donate: bool = True) -> None:
        """Stop routing to ``inst``; it finishes its queue, then is released (donated to spot if asked)."""
        ep = inst.endpoint
        if inst.state == PROVISIONING:
            ep.provisioning.remove(inst)
            inst.state = DRAINING
            inst.donate_on_release = donate
            self._release(inst, now)
            return
        if inst.state != SERVING:
            return
        ep.serving.remove(inst)
        if ep.ix is not None:
            ep.ix.remove(inst, now)
        ep.kv_sum -= inst.kv
        ep.cap_sum -= inst.cap
        inst.state = DRAINING
        inst.donate_on_release = donate
        ep.draining.append(inst)
        if inst.phase == IDLE and not inst.waiting and inst.B == 0 and not inst.swapped:
            self._release(inst, now)

    def _release(self, inst: Instance, now: float) -> None:
        ep = inst.endpoint
        if inst in ep.draining:
            ep.draining.remove(inst)
        inst.state = RELEASED
        inst.t_released = now
        if inst.donate_on_release:
            self._spot_change(ep.region_idx, ep.model, +1, now)
        else:
            self.vm_free[ep.region_idx] += 1
        sim = self.sim
        if sim.state._h_release:
            sim.autoscaler.on_instance_release(sim.policy_view, inst, now)

    def _ready(self, inst: Instance, now: float) -> None:
        ep = inst.endpoint
        if inst.state != PROVISIONING:
            return
        if inst in ep.provisioning:
            ep.provisioning.remove(inst)
        inst.state = SERVING
        inst.t_ready = now
        ep.weights_local = True  # the region's repository has the weights from now on
        ep.serving.append(inst)
        if ep.ix is not None:
            ep.ix.add(inst, now)
        ep.cap_sum += inst.cap
        ep.kv_sum += inst.kv
        sim = self.sim
        if ep.backlog:
            backlog, ep.backlog = ep.backlog, []
            sim.state.cold_started.update(backlog)
            for rid in backlog:
                sim.routing._enqueue(sim.instance_router.choose(ep), rid, now)
        if sim._pd is not None and ep.pool == "decode":
            sim._pd.on_ready(inst, now)  # requests whose prefill ended while no decode instance served
        sim.autoscaler.on_instance_ready(sim.policy_view, inst, now)
