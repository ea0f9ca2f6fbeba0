"""The discrete-event loop: arrivals, routing, iteration-level batching, life cycle, control ticks.

Every event carries a per-run counter ``seq`` (deterministic tie-breaks at equal times, no globals). The
instances' own next events (end of a prefill, a decode run, a chunked iteration, a wake-up) live in
``InstanceEvents`` (evq.py: at most one per instance, rescheduled in place); the rest are ``(time, seq, kind,
obj, arg)`` tuples in a heap. Arrivals are not pushed: the loop merges the sorted arrival array with both.

Fast mode: between two events an instance's decode batch is fixed, so a whole run of decode iterations
(until the next completion or KV exhaustion) is one event whose duration is summed analytically:
iteration k of a run lasts d0 + c_ctx * B * k, so n iterations last n*d0 + c_ctx*B*n(n-1)/2. A request
reaching a decoding instance truncates the run at the end of the iteration in progress (the earliest
point a continuous-batching scheduler could admit it). Reference mode steps every decode iteration as
its own event; both modes share all other code.

Compiled build: this module and entities.py are compiled with Cython by ``python -m simulations.engine.build``
(declarations in loop.pxd / entities.pxd; ``@cython.locals`` below types the hot locals and is inert in Python).
The same source runs as plain Python when there is no fresh build (accel.py); results are identical.
"""

from __future__ import annotations

import gc
import math
from bisect import bisect_left, insort
from heapq import heappop, heappush
from math import sqrt

import cython
import numpy as np

from simulations.engine.config import TIER_INDEX, TIERS
from simulations.engine.entities import (
    DECODE,
    DRAINING,
    IDLE,
    MIXED,
    PREFILL,
    PROVISIONING,
    RELEASED,
    SERVING,
    WAKE,
    Endpoint,
    Instance,
    decode_iters_done,
)
from simulations.engine.evq import InstanceEvents
from simulations.engine.policies import get_policy
from simulations.engine.policies.registry import PolicyKind

EV_INST, EV_DELIVER, EV_READY, EV_TICK, EV_SAMPLE = 0, 1, 2, 3, 4
NIW = TIER_INDEX["NIW"]
NAN = float("nan")


_MASK64 = (1 << 64) - 1


def _splitmix64(x: int) -> int:
    x = (x + 0x9E3779B97F4A7C15) & _MASK64
    x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & _MASK64
    x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & _MASK64
    return x ^ (x >> 31)


class NetworkDelays:
    """Inter-region delay of request ``rid``: ``delays[rid]``, a counter-based draw (splitmix64 of the run's
    key and rid) from the mixture ``[(prob, low_s, high_s), ...]``. Deterministic per request whatever the
    order of use, and no per-request storage."""

    def __init__(self, bins, key: int) -> None:
        total = sum(b[0] for b in bins)
        self.cum = []
        acc = 0.0
        for p, lo, hi in bins:
            acc += p / total
            self.cum.append((acc, lo, hi))
        self.key = key

    def __getitem__(self, rid: int) -> float:
        h = _splitmix64(self.key ^ (rid * 0x9E3779B97F4A7C15 & _MASK64))
        u_bin = (h >> 32) / 4294967296.0
        u = (h & 0xFFFFFFFF) / 4294967296.0
        for acc, lo, hi in self.cum:
            if u_bin < acc:
                return lo + (hi - lo) * u
        acc, lo, hi = self.cum[-1]
        return lo + (hi - lo) * u


def work_now(inst: Instance, t: float) -> int:
    """Remaining tokens at time t, counting decode iterations completed inside the current run."""
    if inst.phase == DECODE and inst.seg_n > 1:
        return inst.work - inst.seg_B * decode_iters_done(inst, t)
    return inst.work


class Simulator:
    """One run. Build with a parsed Scenario and a Workload (already remapped to the fleet's names)."""

    def __init__(self, scenario, workload, progress=None) -> None:
        self.scenario = scenario
        self.engine = scenario.engine
        self.fast = scenario.engine.mode == "fast"
        self.chunked = bool(scenario.engine.chunked_prefill)
        self.progress = progress
        ss = np.random.SeedSequence(scenario.engine.seed)
        net_ss, policy_ss, spot_ss = ss.spawn(3)
        self.rng = np.random.default_rng(policy_ss)
        self.spot_rng = np.random.default_rng(spot_ss)

        self.autoscaler = get_policy(PolicyKind.AUTOSCALER, scenario.policy.autoscaler)(
            scenario.policy.autoscaler_params, self.rng)
        fleet = self.autoscaler.prepare_fleet(scenario.fleet, workload)
        self.fleet = fleet
        self.region_names = fleet.region_names
        self.model_names = sorted({e.model for e in fleet.endpoints})
        self.workload = workload.remap(self.model_names, self.region_names)
        w = self.workload
        n = len(w)
        self.n = n
        # request state: flat Python lists (fast scalar access in the hot loop), numpy at the boundary
        # Per-request state lives in flat numpy arrays (8 bytes a value, no boxed objects), read and written by
        # index in the hot loop through memoryviews (fast scalar access, zero copies); the workload's own
        # arrays are viewed, not copied.
        def view(a, dtype):
            a = np.ascontiguousarray(a, dtype=dtype)
            return memoryview(a)

        self.req_arr = view(w.arrival_s, np.float64)
        self.req_inp = view(w.input_tokens, np.int64)
        self.req_out = view(w.output_tokens, np.int64)
        self.req_tier = view(w.tier, np.int8)
        self.req_model = view(w.model, np.int32)
        self.req_region = view(w.region, np.int32)
        self.req_prio = memoryview((w.tier == NIW).astype(np.int8))  # writable: a queue manager may escalate
        self.gen = memoryview(np.zeros(n, dtype=np.int32))  # tokens generated before the current admission
        self.join = memoryview(np.zeros(n, dtype=np.int32))  # instance decode clock at admission
        self.fin = memoryview(np.zeros(n, dtype=np.int32))  # decode clock of the last token (< 2^31 iterations)
        self.t_first = memoryview(np.full(n, np.nan))
        self.t_done = memoryview(np.full(n, np.nan))
        self.t_admit = memoryview(np.full(n, np.nan))
        self.served_ep = memoryview(np.full(n, -1, dtype=np.int32))
        self.served_inst = memoryview(np.full(n, -1, dtype=np.int32))
        self.preempted = memoryview(np.zeros(n, dtype=np.int32))
        self.tok_t = memoryview(np.full(n, np.nan))  # time of the request's latest token when it (re)joined
        self.tbt_max = memoryview(np.zeros(n))  # longest gap between two of its tokens so far (closed stints)
        self._bind_views()
        self.dropped: dict[int, str] = {}
        # network delay per request, pre-sampled (used only when the request crosses regions)
        self.net_delay = NetworkDelays(self.scenario.fleet.network.bins, int(net_ss.generate_state(1)[0]))
        self.net_all = fleet.network.apply_to == "all"

        slo = scenario.slo
        self.ttft_slo = [float(slo.ttft_s.get(t, math.inf)) for t in TIERS]
        sched_cls = get_policy(PolicyKind.SCHEDULER, scenario.policy.scheduler)
        self.scheduler = sched_cls(scenario.policy.scheduler_params, self.ttft_slo)
        self._sched_key = self.scheduler.key
        self.sched_dynamic = sched_cls.dynamic

        # fleet
        self.endpoints: list[Endpoint] = []
        self.instances: list[Instance] = []
        self._cands: dict = {}
        for cfg in fleet.endpoints:
            ep = Endpoint(len(self.endpoints), cfg, self.region_names.index(cfg.region),
                          self.model_names.index(cfg.model))
            ep.clock = self
            self.endpoints.append(ep)
        self._build_candidates()
        self.spot = [{m: int(c) for m, c in r.spot_pool.items()} for r in fleet.regions]
        self.vm_free = [int(r.vm_capacity) for r in fleet.regions]
        self._spot_last_t = 0.0
        self.spot_seconds = [0.0] * len(fleet.regions)

        params = dict(scenario.policy.autoscaler_params)
        params["region_threshold"] = scenario.policy.region_threshold
        self.region_router = get_policy(PolicyKind.REGION_ROUTER, scenario.policy.region_router)(self, params)
        self.endpoint_router = get_policy(PolicyKind.ENDPOINT_ROUTER, scenario.policy.endpoint_router)(self, params)
        self.instance_router = get_policy(PolicyKind.INSTANCE_ROUTER, scenario.policy.instance_router)(self, params)

        self.heap: list = []  # every event but the instances' own: (time, seq, kind, obj, arg) tuples
        self.iq = InstanceEvents()  # the instances' next events (end of prefill / decode run / wake-up)
        self.seq = 0
        self.now = 0.0
        self.n_arrived = 0
        self.n_done = 0
        self.next_arr = math.inf  # time of the next arrival not yet processed
        self._in_arrival = False  # True while the loop routes a fresh arrival (nothing else is due at that instant)
        self.t_work = 0.0  # time of the last arrival / instance / life-cycle event (the run's end)
        self.events = 0
        self.scaling_events: list[dict] = []
        self.timeline: list[tuple] = []

    # ------------------------------------------------------------------ setup helpers
    def _bind_views(self):
        """The loop's own handles on the per-request arrays: the same buffers as ``req_arr``, ``gen``, ...
        (in the compiled build, typed memoryviews read and written as C arrays)."""
        self._arr, self._inp, self._out = self.req_arr, self.req_inp, self.req_out
        self._tier, self._model, self._region, self._prio = self.req_tier, self.req_model, self.req_region, self.req_prio
        self._gen, self._join, self._fin = self.gen, self.join, self.fin
        self._t_first, self._t_done, self._t_admit = self.t_first, self.t_done, self.t_admit
        self._served_ep, self._served_inst, self._preempted = self.served_ep, self.served_inst, self.preempted
        self._tok_t, self._tbt_max = self.tok_t, self.tbt_max

    def free_run_state(self) -> None:
        """Drop the per-request state only the loop needed (keeps peak memory at the loop's, not above it)."""
        for name in ("gen", "join", "fin", "tok_t", "req_inp", "req_out", "req_arr", "net_delay", "req_model",
                     "req_region"):
            setattr(self, name, None)
        self._arr = self._inp = self._out = self._model = self._region = None
        self._gen = self._join = self._fin = self._tok_t = self._t_admit = None

    def _build_candidates(self):
        """(region, model, tier) -> endpoints eligible for that tier (siloed pools split IW / NIW)."""
        self._cands = {}
        for ep in self.endpoints:
            for tier in range(len(TIERS)):
                if ep.pool == "all" or (ep.pool == "niw") == (tier == NIW):
                    self._cands.setdefault((ep.region_idx, ep.model_idx, tier), []).append(ep)

    def candidates(self, region: int, model: int, tier: int):
        return self._cands.get((region, model, tier))

    def push(self, t, kind, obj, arg=0):
        """Queue an event that is not an instance's own step: EV_DELIVER (obj = rid, arg = endpoint id),
        EV_READY (obj = instance), EV_TICK, EV_SAMPLE."""
        self.seq += 1
        heappush(self.heap, (t, self.seq, kind, obj, arg))

    # ------------------------------------------------------------------ control API for policies
    def endpoints_for(self, region: str, model: str) -> list[Endpoint]:
        return [ep for ep in self.endpoints if ep.region == region and ep.model == model]

    def observed(self, now: float | None = None) -> dict:
        """Arrivals seen so far (never the future): numpy views of the workload up to the current time."""
        k = self.n_arrived
        w = self.workload
        return {"arrival_s": w.arrival_s[:k], "input_tokens": w.input_tokens[:k],
                "output_tokens": w.output_tokens[:k], "tier": w.tier[:k], "model": w.model[:k],
                "region": w.region[:k], "model_names": w.model_names, "region_names": w.region_names}

    def spot_count(self, region: str, model: str | None = None) -> int:
        pool = self.spot[self.region_names.index(region)]
        return pool.get(model, 0) if model is not None else sum(pool.values())

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
        inst = Instance(len(self.instances), ep, now, now + delay_s, source)
        self.instances.append(inst)
        self.iq.add_instance()
        if delay_s <= 0:
            self._ready(inst, now)
        else:
            ep.provisioning.append(inst)
            self.push(now + delay_s, EV_READY, inst)
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
            self.scaling_events.append({"t": now, "endpoint": ep.name, "action": "scale_out_blocked",
                                        "source": source, "delay_s": 0.0})
            return None
        if model is None:
            self.vm_free[r] -= 1
        else:
            self._spot_change(r, model, -1, now)
        event = {"t": now, "endpoint": ep.name, "action": "scale_out", "source": chosen, "delay_s": delay}
        if chosen != "spot-same" and not ep.weights_local:
            event["load"] = "cross-region"
        self.scaling_events.append(event)
        # instant provisioning (issue 19): serve at once; the nominal delay stays on the event for the waste report
        return self.add_instance(ep, now, 0.0 if self.engine.instant_provisioning else delay, chosen)

    def scale_in(self, ep: Endpoint, now: float, donate: bool = True) -> Instance | None:
        """Drain the serving instance with the least remaining work (never the last one)."""
        if len(ep.serving) <= 1:
            return None
        inst = min(ep.serving, key=lambda i: (work_now(i, now), i.iid))
        self.drain(inst, now, donate=donate)
        self.scaling_events.append({"t": now, "endpoint": ep.name, "action": "scale_in",
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
        ep.kv_sum -= inst.kv
        ep.cap_sum -= inst.cap
        inst.state = DRAINING
        inst.donate_on_release = donate
        ep.draining.append(inst)
        if inst.phase == IDLE and not inst.waiting and inst.B == 0:
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
        ep.cap_sum += inst.cap
        ep.kv_sum += inst.kv
        if ep.backlog:
            backlog, ep.backlog = ep.backlog, []
            for rid in backlog:
                self._enqueue(self.instance_router.choose(ep), rid, now)
        self.autoscaler.on_instance_ready(self, inst, now)

    # ------------------------------------------------------------------ request path
    def _drop(self, rid: int, reason: str) -> None:
        self.dropped[rid] = reason

    def _arrive(self, rid: int, t: float) -> None:
        origin = self.req_region[rid]
        eps = self.region_router.choose(self.req_model[rid], origin, self.req_tier[rid])
        if not eps:
            self._drop(rid, "no_endpoint")
            return
        ep = eps[0] if len(eps) == 1 else self.endpoint_router.choose(eps)
        if self.net_all or ep.region_idx != origin:
            self.push(t + self.net_delay[rid], EV_DELIVER, rid, ep.eid)
        else:
            self._deliver(rid, ep, t)

    def _setup_fast_arrive(self) -> bool:
        """Bind the fused arrival path (``_arrive_fast``) when the stock policy stack is in use (SageServe region
        router, JSQ-by-tokens instance router, any endpoint router, any autoscaler) and no policy wrapped the
        request path; False otherwise (the loop then calls ``_arrive``)."""
        from simulations.engine.policies.autoscalers import ReactiveUnified
        from simulations.engine.policies.routers import JoinShortestQueueTokens, PreferenceThresholdRouter

        rr = self.region_router
        if type(rr) is not PreferenceThresholdRouter or type(self.instance_router) is not JoinShortestQueueTokens:
            return False
        if "_arrive" in self.__dict__ or "_deliver" in self.__dict__ or "_enqueue" in self.__dict__:
            return False  # a policy wrapped the request path
        autoscaler = self.autoscaler
        self._generic_arrive = self._arrive
        self._rr_cache = rr._cache
        self._thr = rr.threshold
        self._ep_choose = self.endpoint_router.choose
        self._inst_choose = self.instance_router.choose
        self._net_delay = self.net_delay
        self._autoscaler = autoscaler
        self._hook = bool(autoscaler.wants_request_hook)
        self._reactive = type(autoscaler) is ReactiveUnified
        self._cooldown = getattr(autoscaler, "cooldown", 0.0)
        self._act = autoscaler._act if self._reactive else None
        self._a_hi = getattr(autoscaler, "hi", 0.0)
        self._a_lo = getattr(autoscaler, "lo", 0.0)
        self._scaling_events = self.scaling_events
        return True

    @cython.locals(origin=cython.int, model=cython.int, tier=cython.int, ep0=Endpoint, ep=Endpoint,
                   inst=Instance, cand_inst=Instance, kv=cython.longlong, k=cython.longlong,
                   cap=cython.longlong, v0=cython.double, v=cython.double, u=cython.double, best_u=cython.double,
                   w=cython.longlong, best_w=cython.longlong, j=cython.Py_ssize_t, need=cython.longlong,
                   n_ev=cython.Py_ssize_t, have_k=cython.bint, k_inst=cython.longlong, shared=cython.bint,
                   serving=list, ks=list)
    def _arrive_fast(self, rid, t: float):
        """``_arrive`` -> ``_deliver`` -> ``_enqueue`` for the stock policy stack, computed once: the decode
        progress of each serving instance of the origin endpoint at time t is evaluated once and shared by the
        region router's utilisation, the reactive autoscaler's check and the JSQ choice (nothing changes between
        them unless the autoscaler scales, in which case the shared values are recomputed). Same decisions."""
        origin = self._region[rid]
        model = self._model[rid]
        tier = self._tier[rid]
        lists = self._rr_cache.get((origin, model, tier))
        if lists is None:  # first request of its kind: the router builds its cache
            return self._generic_arrive(rid, t)
        # utilisation of the first candidate endpoint (and its instances' decode progress), once
        ep0 = lists[0][0] if lists else None
        shared = False
        ks = None
        v0 = 2.0
        if ep0 is not None:
            shared = True
            ks = []
            kv = ep0.kv_sum
            for inst in ep0.serving:
                k = 0
                if inst.phase == 2 and inst.seg_n > 1:  # DECODE run: iterations done by t
                    k = decode_iters_done(inst, t)
                    kv += inst.seg_B * k
                ks.append(k)
            cap = ep0.cap_sum
            v0 = kv * ep0.sig / cap if cap else 1.0
        # region router (PreferenceThresholdRouter.choose)
        best = None
        best_u = 2.0
        eps = None
        for cand in lists:
            u = 2.0
            for ep in cand:
                v = v0 if ep is ep0 else ep.util_at(t)
                if v < u:
                    u = v
            if u < self._thr:
                eps = cand
                break
            if u < best_u:
                best, best_u = cand, u
        else:
            eps = best
        if not eps:
            self._drop(rid, "no_endpoint")
            return
        ep = eps[0] if len(eps) == 1 else self._ep_choose(eps)
        if self.net_all or ep.region_idx != origin:
            self.push(t + self._net_delay[rid], EV_DELIVER, rid, ep.eid)
            return
        # _deliver
        self._served_ep[rid] = ep.eid
        if self._hook:
            if self._reactive:
                if not t - ep.last_scale_t < self._cooldown:
                    u = v0 if ep is ep0 else ep.util_at(t)
                    if u > self._a_hi or u < self._a_lo:  # else _act does nothing
                        n_ev = len(self._scaling_events)
                        self._act(self, ep, t, u)
                        if len(self._scaling_events) != n_ev:
                            shared = False  # the fleet may have changed
            else:
                self._autoscaler.on_request(self, ep, t, rid)
                shared = False
        serving = ep.serving
        if not serving:
            ep.backlog.append(rid)
            return
        have_k = False  # whether k_inst (decode iterations the chosen instance has done by t) is known
        k_inst = 0
        if not shared or ep is not ep0:
            inst = serving[0] if len(serving) == 1 else self._inst_choose(ep)
        elif len(serving) == 1:
            inst = serving[0]
            k_inst = ks[0]
            have_k = True
        else:  # JoinShortestQueueTokens.choose with the shared progress
            inst = None
            best_w = 0
            have_k = True
            for j in range(len(serving)):
                cand_inst = serving[j]
                w = cand_inst.work
                k = ks[j]
                if k:
                    w -= cand_inst.seg_B * k
                if inst is None or w < best_w:
                    inst, best_w, k_inst = cand_inst, w, k
        # _enqueue
        need = self._inp[rid] + self._gen[rid]
        if need >= inst.cap:
            self._drop(rid, "prompt_exceeds_kv_capacity")
            return
        self._join_queue(inst, rid, t, need, k_inst if have_k else -1)

    def send(self, rid: int, ep: Endpoint, t: float) -> None:
        """Hand a request (held by a policy, e.g. a queue manager) to endpoint ``ep`` at time ``t``, paying the
        inter-region network delay when ``ep`` is outside the request's origin region."""
        if self.net_all or ep.region_idx != self.req_region[rid]:
            self.push(t + self.net_delay[rid], EV_DELIVER, rid, ep.eid)
        else:
            self._deliver(rid, ep, t)

    def _deliver(self, rid: int, ep: Endpoint, t: float) -> None:
        self.served_ep[rid] = ep.eid
        if self.autoscaler.wants_request_hook:
            self.autoscaler.on_request(self, ep, t, rid)
        if not ep.serving:
            ep.backlog.append(rid)
            return
        self._enqueue(self.instance_router.choose(ep), rid, t)

    def _enqueue(self, inst: Instance, rid: int, t: float) -> None:
        need = self.req_inp[rid] + self.gen[rid]
        if need >= inst.cap:
            self._drop(rid, "prompt_exceeds_kv_capacity")
            return
        self._join_queue(inst, rid, t, need, -1)

    @cython.locals(entry=tuple, phase=cython.int, B=cython.longlong, d0=cython.double, a=cython.double,
                   k=cython.longlong, heap=list)
    def _join_queue(self, inst: Instance, rid, t: float, need, k_done):
        """Put request ``rid`` (``need`` KV tokens) in ``inst``'s waiting queue at ``t`` and make the instance
        notice it: an idle instance steps now if nothing else is due at this instant, else at ``t`` after the
        instant's other arrivals (they batch together); a decoding instance ends its run at the end of the
        iteration in progress if the request could join then. ``k_done``: decode iterations of the current run
        done by ``t`` when the caller already knows them, else -1."""
        self.seq += 1
        self._served_inst[rid] = inst.iid
        entry = (self._sched_key(self._arr[rid], self._tier[rid], self._prio[rid]), self.seq, rid)
        if self.sched_dynamic:
            insort(inst.waiting, entry)  # a dynamic scheduler reads the waiting list fully sorted
        else:
            heappush(inst.waiting, entry)
        inst.work += need + self._out[rid] - self._gen[rid]
        phase = inst.phase
        if phase == IDLE:
            heap = self.heap
            if self._in_arrival and self.next_arr > t and (not heap or heap[0][0] > t) and self.iq.top_time() > t:
                self._step(inst, t)
                return
            inst.phase = WAKE
            inst.seg_t0 = t
            self.seq += 1
            self.iq.schedule(inst.iid, t, self.seq)
        elif phase == DECODE and inst.seg_n > 1:
            B = inst.seg_B
            if inst.B >= inst.max_b:
                return
            d0 = inst.seg_d0
            a = inst.seg_a
            k = (k_done if k_done >= 0 else decode_iters_done(inst, t)) + 1  # the iteration in progress completes
            if k >= inst.seg_n:
                return
            if need > inst.cap - (inst.S + B * (inst.it + k) + inst.kv_prefill):
                return  # would not fit at that boundary; KV only grows during the run
            inst.seg_n = k
            inst.seg_end = inst.seg_t0 + k * d0 + a * k * (k - 1)
            self.seq += 1
            self.iq.schedule(inst.iid, inst.seg_end, self.seq)

    # ------------------------------------------------------------------ instance engine
    # The typed locals (cython.locals) only matter to the compiled build; as Python they are plain names.
    @cython.locals(phase=cython.int, it=cython.longlong, n=cython.longlong, d0=cython.double, rest=cython.double,
                   prev=cython.double, old=cython.double, rem=cython.longlong, f=cython.longlong,
                   rid=cython.longlong, j=cython.longlong, idx=cython.Py_ssize_t, r0=cython.double,
                   d=cython.double, r=cython.double, m=cython.double, runs_i0=list, runs_meta=list,
                   runs_old=list, fh=list, running=dict, top=tuple)
    def _segment_end(self, inst: Instance, t: float):
        inst.busy_s += t - inst.seg_t0
        phase = inst.phase
        if phase == WAKE:
            return self._step(inst, t)
        if phase == MIXED:
            return self._mixed_end(inst, t)
        if phase == PREFILL:
            gen, out, t_first, fin = self._gen, self._out, self._t_first, self._fin
            it = inst.it
            tok_t, tbt_max = self._tok_t, self._tbt_max
            fh = inst.fin_heap
            for rid in inst.batch:
                if t_first[rid] != t_first[rid]:
                    t_first[rid] = t
                prev = tok_t[rid]
                if prev == prev and t - prev > tbt_max[rid]:  # recomputed after a preemption
                    tbt_max[rid] = t - prev
                tok_t[rid] = t
                rem = out[rid] - (gen[rid] + 1)
                if rem <= 0:
                    self._complete(inst, rid, t)
                else:
                    fin[rid] = it + rem
                    heappush(fh, (it + rem, rid))
            inst.work -= inst.seg_n  # prompt tokens (seg_n holds the prefill's token count)
            inst.batch = []
        else:
            n = inst.seg_n
            d0 = inst.seg_d0
            rest = d0 + 2 * inst.seg_a * (n - 1) if n > 1 else 0.0
            prev = inst.last_dec_end
            old = inst.seg_t0 - prev + d0 if prev == prev else d0
            runs_i0 = inst.runs_i0
            if len(runs_i0) > 4096:
                self._trim_runs(inst)
            runs_i0.append(inst.it)
            inst.runs_meta.append((inst.seg_t0, d0, rest))
            inst.runs_old.append(old if old > rest else rest)
            inst.last_dec_end = t
            it = inst.it + n
            inst.it = it
            inst.work -= inst.seg_B * n
            fh = inst.fin_heap
            if fh and fh[0][0] <= it:
                running = inst.running
                fin = self._fin
                join = self._join
                tok_t, tbt_max, t_done = self._tok_t, self._tbt_max, self._t_done
                runs_meta, runs_old = inst.runs_meta, inst.runs_old
                while fh and fh[0][0] <= it:
                    top = heappop(fh)
                    f = top[0]
                    rid = top[1]
                    if rid in running and fin[rid] == f:
                        # _complete(inst, rid, t) with _close_stint inlined
                        j = join[rid]
                        if it != j:
                            idx = bisect_left(runs_i0, j)
                            top = runs_meta[idx]
                            r0 = top[0]
                            d = top[1]
                            r = top[2]
                            m = r0 - tok_t[rid] + d
                            if r > m:
                                m = r
                            if idx + 1 < len(runs_i0):
                                r = max(runs_old[idx + 1:])
                                if r > m:
                                    m = r
                            if m > tbt_max[rid]:
                                tbt_max[rid] = m
                        inst.S -= running.pop(rid)
                        inst.B -= 1
                        t_done[rid] = t
                        self.n_done += 1
        self._step(inst, t)

    @cython.locals(oldest=cython.longlong, cut=cython.Py_ssize_t)
    def _trim_runs(self, inst: Instance):
        """Forget decode runs older than every running request's join clock (bounded memory)."""
        join = self._join
        oldest = min((join[r] for r in inst.running), default=inst.it)
        cut = bisect_left(inst.runs_i0, oldest)
        if cut:
            for lst in (inst.runs_i0, inst.runs_meta, inst.runs_old):
                del lst[:cut]

    @cython.locals(j=cython.longlong, idx=cython.Py_ssize_t, t0=cython.double, d0=cython.double, r=cython.double,
                   m=cython.double, runs_i0=list, meta=tuple)
    def _close_stint(self, inst: Instance, rid):
        """Fold the token gaps of the request's decode iterations since it joined into tbt_max."""
        j = self._join[rid]
        if inst.it == j:
            return  # no decode iteration since joining
        runs_i0 = inst.runs_i0
        idx = bisect_left(runs_i0, j)
        meta = inst.runs_meta[idx]
        t0 = meta[0]
        d0 = meta[1]
        r = meta[2]
        m = t0 - self._tok_t[rid] + d0
        if r > m:
            m = r
        if idx + 1 < len(runs_i0):
            r = max(inst.runs_old[idx + 1:])
            if r > m:
                m = r
        if m > self._tbt_max[rid]:
            self._tbt_max[rid] = m

    def _complete(self, inst: Instance, rid, t: float):
        self._close_stint(inst, rid)
        inst.S -= inst.running.pop(rid)
        inst.B -= 1
        self._t_done[rid] = t
        self.n_done += 1

    @cython.locals(B=cython.longlong, ctx=cython.longlong, kv_used=cython.longlong, free=cython.longlong,
                   it=cython.longlong, tokens=cython.longlong, max_bt=cython.longlong, room_b=cython.longlong,
                   need=cython.longlong, rid=cython.longlong, taken=cython.Py_ssize_t, dur=cython.double,
                   sq=cython.double,
                   kv=cython.longlong, room=cython.longlong, f=cython.longlong, n=cython.longlong,
                   n_kv=cython.longlong, d0=cython.double, a=cython.double, until=cython.double, k=cython.longlong,
                   waiting=list, batch=list,
                   running=dict, fh=list, top=tuple)
    def _step(self, inst: Instance, t: float):
        """At an iteration boundary: admit (prefill) if possible, else run decode iterations, else idle."""
        B = inst.B
        if self.chunked and (inst.waiting or inst.prefilling) and self._mixed_step(inst, t):
            return
        ctx = inst.S + B * inst.it
        kv_used = ctx + inst.kv_prefill
        waiting = inst.waiting
        if waiting and B < inst.max_b and not self.chunked:
            free = inst.cap - kv_used
            inp, gen, join = self._inp, self._gen, self._join
            it = inst.it
            batch = []
            tokens = 0
            sq = 0
            max_bt = inst.max_bt
            room_b = inst.max_b - B
            if self.sched_dynamic:
                order = self.scheduler.order(waiting, t, self)
                taken = 0
                for _key, _seq, rid in order:
                    need = inp[rid] + gen[rid]
                    if need > free or len(batch) >= room_b or (batch and tokens + need > max_bt):
                        break
                    batch.append(rid)
                    tokens += need
                    sq += need * need
                    free -= need
                    taken += 1
                if taken:  # keep the rest sorted (the order a dynamic scheduler reads)
                    chosen = set(batch)
                    inst.waiting = [e for e in waiting if e[2] not in chosen]
            else:
                while waiting:
                    rid = waiting[0][2]
                    need = inp[rid] + gen[rid]
                    if need > free or len(batch) >= room_b or (batch and tokens + need > max_bt):
                        break
                    heappop(waiting)
                    batch.append(rid)
                    tokens += need
                    sq += need * need
                    free -= need
            if batch:
                running = inst.running
                t_admit = self._t_admit
                for rid in batch:
                    ctx = inp[rid] + gen[rid]
                    running[rid] = ctx - it
                    inst.S += ctx - it
                    join[rid] = it
                    if t_admit[rid] != t_admit[rid]:
                        t_admit[rid] = t
                inst.B += len(batch)
                inst.batch = batch
                inst.phase = PREFILL
                inst.seg_t0 = t
                inst.seg_n = tokens
                dur = inst.pc0 + inst.pc1 * tokens + inst.pc2 * tokens * tokens
                if inst.pcs or inst.pcr:
                    dur += inst.pcs * sq + inst.pcr * len(batch)
                inst.seg_end = t + dur
                kv = inst.S + inst.B * it + inst.kv_prefill  # _sync(inst)
                if inst.state == SERVING:
                    inst.endpoint.kv_sum += kv - inst.kv
                inst.kv = kv
                self.seq += 1
                self.iq.schedule(inst.iid, t + dur, self.seq)
                return
        if B > 0:
            room = inst.cap - kv_used
            if room < B:
                self._preempt(inst, t)
                return self._step(inst, t)
            fh = inst.fin_heap
            running = inst.running
            fin = self._fin
            while True:  # drop stale heap tops (preempted / re-admitted requests)
                top = fh[0]
                f = top[0]
                rid = top[1]
                if rid in running and fin[rid] == f:
                    break
                heappop(fh)
            d0 = inst.dc0 + inst.dcb * B + inst.dcc * ctx
            a = inst.dcc * B * 0.5
            if self.fast:
                n = f - inst.it
                n_kv = room // B
                if n_kv < n:
                    n = n_kv
                if waiting and self.sched_dynamic and n > 1:
                    # a time-dependent order (DPA) may put a different request at the head later: end the run at
                    # the first iteration boundary at or after the next time the order can change
                    until = self.scheduler.next_change(waiting, t) - t
                    if until <= 0:
                        n = 1
                    elif n * d0 + a * n * (n - 1) > until:
                        # the first k with k*d0 + a*k*(k-1) >= until (closed form, then exact by stepping)
                        if a > 0:
                            k = int((-(d0 - a) + sqrt((d0 - a) * (d0 - a) + 4 * a * until)) / (2 * a))
                        else:
                            k = int(until / d0)
                        if k < 1:
                            k = 1
                        while k > 1 and (k - 1) * d0 + a * (k - 1) * (k - 2) >= until:
                            k -= 1
                        while k * d0 + a * k * (k - 1) < until:
                            k += 1
                        if k < n:
                            n = k
            else:
                n = 1
            dur = n * d0 + a * n * (n - 1)
            inst.phase = DECODE
            inst.seg_t0 = t
            inst.seg_n = n
            inst.seg_d0 = d0
            inst.seg_a = a
            inst.seg_B = B
            inst.seg_end = t + dur
            if inst.state == SERVING:
                inst.endpoint.kv_sum += kv_used - inst.kv
            inst.kv = kv_used
            self.seq += 1
            self.iq.schedule(inst.iid, t + dur, self.seq)
            return
        inst.phase = IDLE
        self._sync(inst)
        if inst.state == DRAINING and not waiting:
            self._release(inst, t)

    # ------------------------------------------------------------------ chunked prefill (option)
    @cython.locals(B=cython.longlong, ctx=cython.longlong, free=cython.longlong, need=cython.longlong,
                   rid=cython.longlong, budget=cython.longlong, tokens=cython.longlong, take=cython.longlong,
                   dur=cython.double, sq=cython.double, done=cython.longlong, waiting=list, prefilling=list, taken=list, plan=list)
    def _mixed_step(self, inst: Instance, t: float):
        """Chunked prefill (Sarathi-style): one iteration = one decode step of the running batch plus prompt
        chunks filling the token budget (max_batch_tokens - B). Its time is prefill(T) + decode(B, C) with the
        fixed overhead counted once (minus min(c0_prefill, c0_decode)). Returns False if nothing to prefill."""
        B = inst.B
        ctx = inst.S + B * inst.it
        free = inst.cap - ctx - inst.kv_prefill
        prefilling = inst.prefilling
        waiting = inst.waiting
        if waiting:
            inp, gen = self._inp, self._gen
            if self.sched_dynamic:
                order = self.scheduler.order(waiting, t, self)
            else:
                order = None
            taken = []
            while True:
                if order is not None:
                    entry = next(order, None)
                    if entry is None:
                        break
                else:
                    if not waiting:
                        break
                    entry = waiting[0]
                rid = entry[2]
                need = inp[rid] + gen[rid]
                if need > free or B + len(prefilling) >= inst.max_b:
                    break
                if order is None:
                    heappop(waiting)
                taken.append(rid)
                prefilling.append([rid, need, need])
                inst.kv_prefill += need
                free -= need
                if self._t_admit[rid] != self._t_admit[rid]:
                    self._t_admit[rid] = t
            if order is not None and taken:  # keep the rest sorted (the order a dynamic scheduler reads)
                chosen = set(taken)
                inst.waiting = [e for e in waiting if e[2] not in chosen]
        if not prefilling:
            return False
        if B and free < B:  # the decode step needs one KV slot per running request
            self._preempt(inst, t)
            self._step(inst, t)
            return True
        budget = max(inst.max_bt - B, 1)
        tokens = 0
        sq = 0.0
        plan = []
        for entry in prefilling:
            if tokens >= budget:
                break
            take = min(entry[1], budget - tokens)
            plan.append((entry, take))
            tokens += take
            # a chunk of `take` tokens after `done` of its prompt: take*(2*done + take), so a prompt's chunks sum
            # to P^2 (the whole prompt's attention term) however it is split
            done = entry[2] - entry[1]
            sq += take * (2 * done + take)
        dur = inst.pc0 + inst.pc1 * tokens + inst.pc2 * tokens * tokens
        if inst.pcs or inst.pcr:
            dur += inst.pcs * sq + inst.pcr * len(plan)
        if B:
            dur += inst.dc0 + inst.dcb * B + inst.dcc * ctx - min(inst.pc0, inst.dc0)
        inst.batch = plan
        inst.phase = MIXED
        inst.seg_t0 = t
        inst.seg_n = 1
        inst.seg_d0 = dur
        inst.seg_a = 0.0
        inst.seg_B = B
        inst.seg_end = t + dur
        self._sync(inst)
        self.seq += 1
        self.iq.schedule(inst.iid, t + dur, self.seq)
        return True

    @cython.locals(B=cython.longlong, prev=cython.double, d0=cython.double, it=cython.longlong,
                   f=cython.longlong, rid=cython.longlong, need=cython.longlong, rem=cython.longlong,
                   take=cython.longlong, finished=list, fh=list, running=dict)
    def _mixed_end(self, inst: Instance, t: float):
        B = inst.seg_B
        if B:  # the running batch advanced one token (logged as a one-iteration decode run for max TBT)
            prev = inst.last_dec_end
            d0 = inst.seg_d0
            inst.runs_i0.append(inst.it)
            inst.runs_meta.append((inst.seg_t0, d0, 0.0))
            inst.runs_old.append(inst.seg_t0 - prev + d0 if prev == prev else d0)
            if len(inst.runs_i0) > 4096:
                self._trim_runs(inst)
            inst.last_dec_end = t
            inst.it += 1
            inst.work -= B
            fh, running, fin = inst.fin_heap, inst.running, self._fin
            while fh and fh[0][0] <= inst.it:
                f, rid = heappop(fh)
                if rid in running and fin[rid] == f:
                    self._complete(inst, rid, t)
        it = inst.it
        gen, out, t_first, tok_t, tbt_max = self._gen, self._out, self._t_first, self._tok_t, self._tbt_max
        finished = []
        for entry, take in inst.batch:
            entry[1] -= take
            inst.work -= take
            if entry[1] == 0:
                finished.append(entry)
        for entry in finished:
            inst.prefilling.remove(entry)
            rid, _, need = entry
            inst.kv_prefill -= need
            inst.running[rid] = need - it
            inst.S += need - it
            inst.B += 1
            self._join[rid] = it
            if t_first[rid] != t_first[rid]:
                t_first[rid] = t
            prev = tok_t[rid]
            if prev == prev and t - prev > tbt_max[rid]:
                tbt_max[rid] = t - prev
            tok_t[rid] = t
            rem = out[rid] - (gen[rid] + 1)
            if rem <= 0:
                self._complete(inst, rid, t)
            else:
                self._fin[rid] = it + rem
                heappush(inst.fin_heap, (it + rem, rid))
        inst.batch = []
        self._step(inst, t)

    @cython.locals(rid=cython.longlong, gen_now=cython.longlong, best=cython.longlong, best_t=cython.double,
                   r=cython.longlong)
    def _preempt(self, inst: Instance, t: float):
        """KV exhausted: evict the newest running request (latest arrival); it is recomputed later."""
        arr = self._arr
        best = -1
        best_t = 0.0
        for r in inst.running:  # max by (arrival, rid)
            if best < 0 or arr[r] > best_t or (arr[r] == best_t and r > best):
                best, best_t = r, arr[r]
        rid = best
        gen_now = self._gen[rid] + 1 + (inst.it - self._join[rid])
        self._close_stint(inst, rid)
        if inst.it > self._join[rid]:
            self._tok_t[rid] = inst.last_dec_end  # its last token came from the last decode iteration
        inst.S -= inst.running.pop(rid)
        inst.B -= 1
        self._preempted[rid] += 1
        if inst.B == 0 and self._inp[rid] + gen_now >= inst.cap:
            self._gen[rid] = gen_now
            self._drop(rid, "context_exceeds_kv_capacity")
            return
        self._gen[rid] = gen_now
        self.seq += 1
        entry = (self.scheduler.key(arr[rid], self._tier[rid], self._prio[rid]), self.seq, rid)
        if self.sched_dynamic:
            insort(inst.waiting, entry)
        else:
            heappush(inst.waiting, entry)
        inst.work += self._inp[rid] + gen_now

    @cython.locals(kv=cython.longlong)
    def _sync(self, inst: Instance):
        kv = inst.S + inst.B * inst.it + inst.kv_prefill
        if inst.state == SERVING:
            inst.endpoint.kv_sum += kv - inst.kv
        inst.kv = kv

    # ------------------------------------------------------------------ main loop
    def run(self):
        """Run to the end of the workload (or ``max_time_s``); returns the simulated time reached.

        The cyclic garbage collector is paused meanwhile: the loop allocates millions of short-lived event tuples
        that reference counting frees, and collection passes over them find nothing (measured ~5 % of a run)."""
        enabled = gc.isenabled()
        gc.disable()
        try:
            return self._run()
        finally:
            if enabled:
                gc.enable()

    @cython.locals(i=cython.Py_ssize_t, n=cython.Py_ssize_t, events=cython.longlong, t=cython.double,
                   next_arr=cython.double, max_time=cython.double, horizon=cython.double, kind=cython.int,
                   arg=cython.longlong, fused=cython.bint, inst=Instance, heap=list, ev=tuple, iq=InstanceEvents,
                   tq=cython.double, th=cython.double, instances=list)
    def _run(self):
        for ep in self.endpoints:
            for _ in range(ep.config.initial):
                self.add_instance(ep, 0.0, 0.0, "initial")
        self.autoscaler.on_start(self, 0.0)
        step = self.engine.timeline_step_s
        if step and step > 0:
            self.push(0.0, EV_SAMPLE, None)
        if self.autoscaler.tick_s:
            self.push(self.autoscaler.tick_s, EV_TICK, None)

        heap = self.heap
        iq = self.iq
        instances = self.instances
        arr = self._arr
        n = self.n
        if getattr(self.autoscaler, "wants_arrival_hook", False):
            # a policy may hold arrivals (return True), e.g. a global queue; it later calls sim.send(...)
            route = self._arrive
            hook = self.autoscaler.on_arrival

            def hooked(rid: int, t: float) -> None:
                if not hook(self, rid, t):
                    route(rid, t)

            self._arrive = hooked
        max_time = self.engine.max_time_s
        horizon = arr[n - 1] if n else 1.0
        progress = self.progress
        i = 0
        next_arr = arr[0] if n else math.inf
        self.next_arr = next_arr
        events = 0
        arrive = self._arrive
        fused = "_arrive" not in self.__dict__ and self._setup_fast_arrive()
        while True:
            events += 1
            if progress is not None and not events & 0x3FFF:
                progress(min(1.0, self.now / horizon) if horizon > 0 else 1.0,
                         f"simulated {self.now:,.0f} of {horizon:,.0f} s")
            tq = iq.top_time()
            th = heap[0][0] if heap else math.inf
            if tq < next_arr and (tq < th or (tq == th and iq.top_seq() < heap[0][1])):
                # an instance's next step (arrivals first at ties: they can join the same step)
                if tq > max_time:
                    break
                inst = cython.cast(Instance, instances[iq.pop()])
                self.now = tq
                self.t_work = tq
                self._segment_end(inst, tq)
            elif th < next_arr:
                ev = heappop(heap)
                t = ev[0]
                kind = ev[2]
                obj = ev[3]
                arg = ev[4]
                if t > max_time:
                    break
                self.now = t
                if kind == EV_DELIVER:
                    self.t_work = t
                    self._deliver(obj, self.endpoints[arg], t)
                elif kind == EV_READY:
                    self.t_work = t
                    self._ready(obj, t)
                elif kind == EV_TICK:
                    self.autoscaler.on_tick(self, t)
                    if i < n or len(heap) + len(iq) > 1:
                        self.push(t + self.autoscaler.tick_s, EV_TICK, None)
                elif kind == EV_SAMPLE:
                    self._sample(t)
                    if i < n or len(iq) > 0 or any(e[2] != EV_SAMPLE and e[2] != EV_TICK for e in heap):
                        self.push(t + step, EV_SAMPLE, None)
            elif i < n:
                if next_arr > max_time:
                    break
                t = next_arr
                self.now = t
                self.t_work = t
                i += 1
                self.n_arrived = i
                next_arr = arr[i] if i < n else math.inf
                self.next_arr = next_arr
                self._in_arrival = True
                if fused:
                    self._arrive_fast(i - 1, t)
                else:
                    arrive(i - 1, t)
                self._in_arrival = False
            else:
                break
        self.events = events
        if progress is not None:
            progress(1.0, "simulation finished")
        return self.now

    def _sample(self, t: float) -> None:
        for ep in self.endpoints:
            self.timeline.append((t, ep.eid, len(ep.serving), len(ep.provisioning), len(ep.draining),
                                  ep.util_at(t) if ep.cap_sum else 0.0, ep.queue_len,
                                  sum(i.B for i in ep.serving) + sum(i.B for i in ep.draining)))
