"""Chiron (Patke et al., "Hierarchical Autoscaling for LLM Serving with Chiron"): registered as autoscaler ``chiron``.

Uses the simulator's public policy API only (docs/simulator.md, "Policy API"). Every arrival is held
(``on_arrival``) by the global queue of its endpoint (its region and model: an instance serves only its own model,
so each endpoint has its own queue, request groups, Alg. 2 and throughput measurement; ``EndpointBatch``,
queue.py):

- **Interactive** requests (tiers IW-F / IW-N) are never queued: dispatched at once to an interactive instance with
  room (packed: the one already running the most interactive requests, so "instances running interactive
  requests" measures the need), else a mixed instance with room, else a mixed instance after preempting batch
  requests (swapped to host memory, back to the head of the endpoint's queue), else the least loaded interactive or
  mixed instance (its local queue).
- **Batch** requests (tier NIW) wait in their endpoint's queue (request groups by TTFT SLO, queue.py) and fill the
  endpoint's batch instances first, then its mixed instances, whenever they have room (running + local queue < the
  local autoscaler's limit, local queue < ``local_queue`` (4)), paced at ``prefill_budget`` (2,048) prompt tokens
  per decode iteration of the instance (see ``_pump``). An evicted request returns to the instance holding its KV
  (resumed without a prefill) when that instance has room, else it is recomputed where it lands.
- **Local autoscaler** (local.py, Algorithm 1) on every batch change. Lowering the limit does not evict on
  interactive or batch instances (the batch shrinks as requests finish); on a mixed instance running interactive
  requests, batch requests above the limit are preempted (swapped, back to the endpoint's queue), and an interactive
  request placed on a full mixed instance preempts batch ones (the mixed instance already running the most
  interactive requests first).
- **Interactive autoscaler**, every ``interactive_tick_s`` (10 s): IBP = interactive/mixed instances running
  interactive requests / interactive + mixed instances (provisioning included); outside [theta - delta,
  theta + delta] (theta 1/3, delta 0.1) the count moves to ceil(busy / theta) (scale-in: never an instance running
  interactive requests; idle ones first, then mixed ones running only batch requests, drained). New instances are
  typed to keep ~theta of them interactive, the rest mixed.
- **Batch autoscaler** (Algorithm 2), every ``batch_tick_s`` (10 s), per endpoint on its own queue: BBP(n) = groups
  whose estimated wait (mean + ``z`` std, z = 0) with n more batch instances exceeds their deadline; the smallest n
  with BBP(n) = 0 is added at once (capped by the endpoint's max); the endpoint's batch instances with no requests
  are retired while its queue is empty.
  The wait solves Theta_now * T + n * r_new * max(0, T - L) = tokens ahead (L = the instance start-up time), all
  of the endpoint: Theta_now = batch output tokens completed per second over the last 60 s (before that: the batch
  share of the instances' measured throughput, the latency model's at the KV-bound batch until measured), r_new =
  Theta_now per batch-equivalent instance, mu_o and sigma_o from the requests its instances completed. Until
  Theta_now is measured (two 60 s windows after the endpoint's first batch dispatch), Alg. 2 adds nothing unless a
  group's deadline is within ``measure_first_s`` (900 s): an instance added on a ramp's under-read stays for the
  whole dump (batch instances retire only when their endpoint's queue is empty).

Ablations (params): ``local: false`` (+ ``static_batch``) replaces the local autoscaler by a static batch size;
``global: "utilisation"`` replaces the global autoscaler and queue by a KV-utilisation autoscaler (every 10 s:
+1 instance above 70 %, -1 below 30 %) with requests dispatched at once to the least loaded instance.
"""

from __future__ import annotations

import math

import cython

from simulations.engine.core.entities import SERVING, Instance
from simulations.engine.policies.autoscalers import Autoscaler
from simulations.engine.policies.chiron.batch_scaling import BATCH, INTERACTIVE, MIXED, BatchScaling
from simulations.engine.policies.chiron.knobs import ChironParams
from simulations.engine.policies.chiron.local import InstanceState, LocalAutoscaler, state_of
from simulations.engine.policies.chiron.queue import EndpointBatch, GlobalQueue, OutputStats, RequestSLOs
from simulations.engine.policies.registry import PolicyKind, register
from simulations.engine.scenario.config import TIER_INDEX

NIW = TIER_INDEX["NIW"]


def state_on(inst):
    """``state_of`` for an engine instance (compiled: its ``policy_state`` read as a C field)."""
    st = inst.policy_state.get("chiron")
    return st if st is not None else state_of(inst)


def limit_of(st, inst) -> int:
    """The batch limit the local autoscaler set on ``inst`` (the instance's own before it started)."""
    return st.limit if st.started else inst.max_b


def has_room(sim, inst, st, now, prompt, local_queue, kv_room) -> bool:
    """``inst`` takes one more request: below its limit, and the prompt fits in ``kv_room`` of its KV (an
    interactive request, ``prompt`` > 0) or its local queue is shorter than ``local_queue`` (a batch request)."""
    if sim.request_count(inst) >= limit_of(st, inst):
        return False
    if prompt:
        return sim.kv_used(inst, now) + sim.queued_prompt_tokens(inst) + prompt <= kv_room * inst.cap
    return len(inst.waiting) < local_queue


@register(PolicyKind.AUTOSCALER, "chiron")
class Chiron(BatchScaling, Autoscaler):
    """Chiron's global queues (one per endpoint), routing, local and interactive autoscalers; Alg. 2 (the batch
    autoscaler and its throughput measurement) is the ``BatchScaling`` base (batch_scaling.py)."""

    wants_arrival_hook = True
    wants_batch_hook = True
    wants_completion_hook = True

    Params = ChironParams  # knobs.py (kept apart: this module is compiled with Cython)

    @classmethod
    def kv_bytes_use(cls, knobs) -> str:
        return "it swaps preempted batch requests' KV to host memory"

    def __init__(self, params, rng):
        super().__init__(params, rng)
        p = self.params
        k = self.knobs
        self.theta = k.theta
        self.delta = k.delta
        self.int_tick = k.interactive_tick_s
        self.batch_tick = k.batch_tick_s
        self.tick_s = min(self.int_tick, self.batch_tick)
        self.local_queue = k.local_queue
        self.prefill_budget = k.prefill_budget
        self.z = k.z
        self.kv_room = k.kv_room
        self.max_evict_per_change = k.max_evict_per_change
        self.global_mode = k.global_
        self.util_hi = k.scale_out_above
        self.util_lo = k.scale_in_below
        self.record_estimates = k.record_estimates
        self.scale_interactive = k.interactive_autoscaler  # off: fixed interactive/mixed fleet
        self.scale_batch = k.batch_autoscaler  # off: no batch instances (estimator studies)
        self.local = LocalAutoscaler(p)
        self.k_groups = k.k_groups
        self.by_ep: dict = {}  # endpoint id -> its EndpointBatch (global queue, output stats, Theta, r_new)
        self.home: dict = {}  # rid -> instance whose host memory holds its swapped KV
        self.evicting: dict = {}  # rid -> instance, evictions asked for and not yet applied
        self.events: list = []  # (t, action, kind, n, detail) for reports
        self.estimates: list = []  # (t, rid, ahead, mean, std) when record_estimates
        self.dispatched_at: dict = {}  # rid -> first time it left the global queue (record_estimates)
        self.theta_window_s = k.theta_window_s
        # Alg. 2 adds batch instances for good (they retire only once the queue is empty), so it waits for a
        # measured Theta while every group's deadline is further than this (s); 0 = act on the prior at once
        self.measure_first_s = k.measure_first_s
        self.theta_from = k.theta_from
        self._next_int = 0.0
        self._next_batch = 0.0
        self._ep = None
        self._slos = RequestSLOs()  # tier, TTFT SLO, ITL SLO by request id
        self._origin: dict = {}  # region index * 65536 + model index -> its endpoints

    # ------------------------------------------------------------------ helpers
    def _slo(self, sim, rid):
        """(TTFT SLO, ITL SLO) of a request: its own (workload columns), else its tier's, else the paper's."""
        _, ttft, itl = self._info(sim, rid)
        return ttft, itl

    @cython.locals(slos=RequestSLOs)
    def _info(self, sim, rid):
        """(tier, TTFT SLO, ITL SLO) of a request (read from the view once: they do not change)."""
        slos = self._slos
        tier = slos.read(sim, rid)
        return tier, slos.ttft_of(rid), slos.itl_of(rid)

    def batch_of(self, ep) -> EndpointBatch:
        """The batch side of endpoint ``ep`` (its global queue, ...), made on first use."""
        eb = self.by_ep.get(ep.eid)
        if eb is None:
            eb = self.by_ep[ep.eid] = EndpointBatch(self.k_groups)
        return eb

    def queued(self) -> int:
        """Batch requests waiting in every endpoint's queue."""
        return sum(eb.queue.n for eb in self.by_ep.values())

    def _state(self, inst) -> InstanceState:
        return state_of(inst)

    def _im(self, ep):
        return [i for i in ep.serving if i.kind != BATCH]

    def _label(self, inst, kind, now):
        inst.kind = kind
        self._state(inst)

    def _room(self, sim, inst, now, prompt=0):
        return has_room(sim, inst, state_of(inst), now, prompt, self.local_queue, self.kv_room)

    # ------------------------------------------------------------------ life cycle
    def on_start(self, sim, now):
        self._ep = sim.endpoints[0]
        self._slos, self._origin = RequestSLOs(), {}
        for ep in sim.endpoints:
            self.batch_of(ep)
            n_int = max(1, round(self.theta * len(ep.serving)))
            for k, inst in enumerate(ep.serving):
                self._label(inst, INTERACTIVE if k < n_int else MIXED, now)
                sim.set_max_batch(inst, self.local.start(inst, now), now)

    def on_instance_ready(self, sim, inst, now):
        self._state(inst)
        sim.set_max_batch(inst, self.local.start(inst, now), now)
        self._pump(sim, inst, self.batch_of(inst.endpoint).queue, now)
        if self.global_mode == "chiron":
            self._pump_ep(sim, inst.endpoint, now)

    def _add(self, sim, ep, kind, n, now, why):
        added = 0
        for _ in range(n):
            if ep.n_active >= ep.max_instances:
                break
            inst = sim.scale_out(ep, now)
            if inst is None:
                break
            self._label(inst, kind, now)
            added += 1
        if added:
            self.events.append((now, "add", kind, added, why))
        return added

    # ------------------------------------------------------------------ arrivals and routing
    @cython.locals(slos=RequestSLOs, tier=cython.int, eb=EndpointBatch)
    def on_arrival(self, sim, rid, now):
        region, model = sim.region_of(rid), sim.model_of(rid)
        key = region * 65536 + model
        eps = self._origin.get(key)
        if eps is None:  # the fleet's endpoints are fixed for the run
            eps = self._origin[key] = sim.endpoints_for(sim.region_names[region], sim.model_names[model])
        ep = eps[0] if eps else self._ep
        if self.global_mode == "utilisation":
            if not ep.serving:
                return False  # the endpoint's backlog holds it until an instance is ready
            inst = min(ep.serving, key=lambda i: (sim.request_count(i), i.iid))
            self._dispatch(sim, inst, rid, now)
            return True
        slos = self._slos
        tier = slos.read(sim, rid)
        if tier != NIW:
            return self._route_interactive(sim, ep, rid, now)
        eb = self.by_ep[ep.eid]
        eb.queue.push(rid, sim.arrival_s(rid), slos.ttft_of(rid))
        self._pump_ep(sim, ep, now)
        return True

    @cython.locals(i=Instance, chosen=Instance, st=InstanceState, best=InstanceState, local_queue=cython.longlong,
                   kv_room=cython.double)
    def _route_interactive(self, sim, ep, rid, now):
        prompt = sim.prompt_tokens(rid)
        local_queue, kv_room = self.local_queue, self.kv_room
        serving = ep.serving
        for kind in (INTERACTIVE, MIXED):
            # the instance with room already running the most interactive requests (packed), the lowest iid on a tie
            chosen, best = None, None
            for i in serving:
                if i.kind != kind:
                    continue
                st = state_on(i)
                if not has_room(sim, i, st, now, prompt, local_queue, kv_room):
                    st.refused = True  # demand beyond its limit: the instance is saturated
                elif best is None or st.ni > best.ni or (st.ni == best.ni and i.iid < chosen.iid):
                    chosen, best = i, st
            if chosen is not None:
                self._dispatch(sim, chosen, rid, now)
                return True
        ints = [i for i in serving if i.kind == INTERACTIVE]
        mixed = [i for i in serving if i.kind == MIXED]
        victims = [i for i in mixed if state_of(i).nb > 0]
        if victims:
            # packed as above: the mixed instance already running the most interactive requests gives way first,
            # so a spike occupies as few mixed instances as it needs (IBP counts instances, not requests)
            inst = max(victims, key=lambda i: (state_of(i).ni, state_of(i).nb, -i.iid))
            self._evict_batch(sim, inst, now, need_kv=prompt, at_least=1)
            self._dispatch(sim, inst, rid, now)
            return True
        pool = ints + mixed or list(ep.serving)
        if not pool:
            return False  # nothing serves yet: the endpoint's backlog
        self._dispatch(sim, min(pool, key=lambda i: (sim.request_count(i), i.iid)), rid, now)
        return True

    @cython.locals(inst=Instance, st=InstanceState, counts=dict, slos=RequestSLOs, batch=cython.bint,
                   eb=EndpointBatch)
    def _dispatch(self, sim, inst, rid, now):
        st = state_on(inst)
        slos = self._slos
        batch = slos.read(sim, rid) == NIW
        itl = slos.itl_of(rid)
        if batch:
            st.nb += 1
        else:
            st.ni += 1
        counts = st.itl
        counts[itl] = counts.get(itl, 0) + 1
        if batch:
            eb = self.by_ep[inst.endpoint.eid]
            if eb.first_batch_t is None:
                eb.first_batch_t = now
        if self.record_estimates and rid not in self.dispatched_at:
            self.dispatched_at[rid] = now
        home = self.home.pop(rid, None) if self.home else None
        if home is inst:
            sim.resume_swapped(inst, rid, now)
        else:
            sim.dispatch(rid, inst, now)

    def _evict_batch(self, sim, inst, now, need_kv=0, at_least=0):
        """Preempt batch requests on a mixed instance (swap to host): enough to free ``need_kv`` KV tokens and at
        least ``at_least`` slots; they go back to the endpoint's queue once the engine has swapped them out."""
        if inst.state != SERVING:
            return 0
        free = inst.cap * self.kv_room - sim.kv_used(inst, now) - sim.queued_prompt_tokens(inst)
        n = 0
        for rid in reversed(list(inst.running)):
            if n >= at_least and free >= need_kv:
                break
            if n >= self.max_evict_per_change:
                break
            if self._info(sim, rid)[0] != NIW or rid in self.evicting:
                continue
            sim.evict(inst, rid, "swap", now)
            self.evicting[rid] = inst
            free += sim.prompt_tokens(rid) + sim.tokens_generated(rid, now)
            n += 1
        if n:
            pend = sum(1 for i in self.evicting.values() if i is inst)
            # hold the batch at its size after the evictions, so the engine does not swap them straight back in
            sim.set_max_batch(inst, max(1, inst.B - pend), now)
        return n

    # ------------------------------------------------------------------ hooks
    @cython.locals(st=InstanceState, counts=dict, out_stats=OutputStats, slos=RequestSLOs, batch=cython.bint,
                   eb=EndpointBatch)
    def on_complete(self, sim, inst, rid, now):
        st = state_of(inst)
        slos = self._slos
        batch = slos.read(sim, rid) == NIW
        itl = slos.itl_of(rid)
        if batch:
            st.nb -= 1
        else:
            st.ni -= 1
        counts = st.itl
        c = counts.get(itl, 0) - 1
        if c > 0:
            counts[itl] = c
        else:
            counts.pop(itl, None)
        out = float(sim.output_tokens(rid))
        eb = self.by_ep[inst.endpoint.eid]
        out_stats = eb.out_stats
        out_stats.add(out)
        if batch and self.theta_from == "completed":
            eb.done_tok.append((now, out))

    @cython.locals(inst=Instance, st=InstanceState, local=LocalAutoscaler, queue=GlobalQueue, limit=cython.longlong,
                   saturated=cython.bint, pending=cython.bint, eb=EndpointBatch)
    def on_batch_change(self, sim, inst, now):
        st = state_on(inst)
        if self.evicting:
            self._collect_evicted(sim, inst, now)
        itl = st.itl
        itl_slo = min(itl) if itl else math.inf
        kind = inst.kind  # only the policy relabels an instance, never inside this hook
        eb = self.by_ep[inst.endpoint.eid]
        queue = eb.queue  # the queue of the instance's endpoint: the only requests it can serve
        if inst.waiting or inst.swapped or inst.B >= limit_of(st, inst) or (kind != INTERACTIVE and queue.n > 0):
            saturated = True
        else:
            saturated = st.refused
            st.refused = False
        local = self.local
        new = local.observe_state(st, inst, inst.it, inst.B, now, itl_slo, saturated)
        if st.win_new:
            st.win_new = False
            if kind != INTERACTIVE and st.nb > 0 and self.theta_from == "generated":  # batch share of the window's tokens, by request count
                eb.gen_tok.append((now, st.win_tok * st.nb / (st.nb + max(0, st.ni))))
        limit = limit_of(st, inst)
        if new is not None and kind == BATCH:
            thr = st.prev_thr
            if thr > 0:
                eb.r_new = max(eb.r_new * 0.9, thr) if eb.r_new else thr
        pending = False
        if self.evicting:
            for held in self.evicting.values():
                if held is inst:
                    pending = True
                    break
        if (not pending and kind == MIXED and st.ni > 0 and st.nb > 0 and inst.B > limit
                and self.global_mode == "chiron"):
            # a mixed instance running interactive requests holds the batch size Alg. 1 sets for the interactive
            # ITL SLO: the batch requests above it are preempted (swapped, back to the endpoint's queue; sec. 3
            # "mixed instances are preemptible"), instead of waiting for them to finish at the batch-sized ITL
            pending = self._evict_batch(sim, inst, now, at_least=inst.B - limit) > 0
        if not pending and inst.max_b != limit:
            sim.set_max_batch(inst, limit, now)
        if kind != INTERACTIVE and queue.n and self.global_mode == "chiron":
            self._pump(sim, inst, queue, now)

    @cython.locals(st=InstanceState, queue=GlobalQueue)
    def _collect_evicted(self, sim, inst, now):
        """Evictions the engine has applied on ``inst``: swapped-out requests go back to the queue of ``inst``'s
        endpoint (head of their group; their KV stays in ``inst``'s host memory). One the engine resumed at once (the
        batch had room) or that finished first is simply forgotten."""
        asked = {p[0] for p in inst.pending}
        done = [rid for rid, i in self.evicting.items() if i is inst and rid not in asked]
        for rid in done:
            del self.evicting[rid]
            if rid not in inst.swapped:
                continue
            sim.take_swapped(inst, rid)
            st = state_of(inst)
            st.nb -= 1
            _, itl = self._slo(sim, rid)
            c = st.itl.get(itl, 0) - 1
            if c > 0:
                st.itl[itl] = c
            else:
                st.itl.pop(itl, None)
            self.home[rid] = inst
            ttft, _ = self._slo(sim, rid)
            queue = self.by_ep[inst.endpoint.eid].queue
            queue.push(rid, sim.arrival_s(rid), ttft, front=True)

    @cython.locals(inst=Instance, st=InstanceState)
    def _pump(self, sim, inst, queue, now):
        """Fill ``inst`` (batch or mixed) from ``queue`` (its endpoint's) while it has room, paced: at most
        ``prefill_budget`` prompt tokens of batch requests per decode iteration of the instance (the engine, as vLLM
        without chunked prefill, pauses decodes for every admission prefill; an unpaced ramp of hundreds of
        requests would stall the running batch for tens of seconds)."""
        if inst.kind == INTERACTIVE or inst.state != SERVING:
            return
        st = state_on(inst)
        if st.pump_it == inst.it and inst.B > 0:
            return
        self._fill(sim, inst, st, queue, now)

    @cython.locals(inst=Instance, st=InstanceState, queue=GlobalQueue, tokens=cython.longlong, budget=cython.longlong,
                   local_queue=cython.longlong, kv_room=cython.double)
    def _fill(self, sim, inst, st, queue, now):
        """The pump's work once it is due (``_pump``); ``queue`` is the global queue of ``inst``'s endpoint."""
        st.pump_it = inst.it
        budget, local_queue, kv_room = self.prefill_budget, self.local_queue, self.kv_room
        tokens = 0
        while queue.n and tokens < budget and has_room(sim, inst, st, now, 0, local_queue, kv_room):
            rid, _, _ = queue.pop()
            tokens += sim.prompt_tokens(rid)
            self._dispatch(sim, inst, rid, now)

    @cython.locals(inst=Instance, st=InstanceState, queue=GlobalQueue, eb=EndpointBatch)
    def _pump_ep(self, sim, ep, now):
        """Fill the batch, then the mixed instances of endpoint ``ep`` from its queue, each paced as in ``_pump``."""
        eb = self.by_ep[ep.eid]
        queue = eb.queue
        if not queue.n:
            return
        serving = ep.serving
        for kind in (BATCH, MIXED):
            for inst in serving:
                if inst.kind != kind or inst.state != SERVING:
                    continue
                st = state_on(inst)
                if st.pump_it == inst.it and inst.B > 0:
                    continue  # pumped at this iteration already (``_pump``)
                self._fill(sim, inst, st, queue, now)
                if not queue.n:
                    return

    def _pump_all(self, sim, now):
        for ep in sim.endpoints:
            self._pump_ep(sim, ep, now)

    # ------------------------------------------------------------------ global autoscalers
    def on_tick(self, sim, now):
        if self.global_mode == "utilisation":
            self._utilisation_tick(sim, now)
            return
        if now >= self._next_int and self.scale_interactive:
            self._next_int = now + self.int_tick
            for ep in sim.endpoints:
                self._interactive_tick(sim, ep, now)
        if now >= self._next_batch and (self.scale_batch or self.record_estimates):
            self._next_batch = now + self.batch_tick
            for ep in sim.endpoints:
                self._batch_tick(sim, ep, now)
        self._pump_all(sim, now)

    @cython.locals(busy=cython.Py_ssize_t, n=cython.Py_ssize_t)
    def ibp(self, sim, ep):
        """(interactive / mixed instances running interactive requests, interactive / mixed instances, provisioning
        ones included)."""
        busy = n = 0
        for i in ep.serving:
            if i.kind != BATCH:
                n += 1
                if state_of(i).ni > 0:
                    busy += 1
        for i in ep.provisioning:
            if i.kind != BATCH:
                n += 1
        return busy, n

    def _interactive_tick(self, sim, ep, now):
        busy, n_im = self.ibp(sim, ep)
        if n_im == 0:
            return
        ibp = busy / n_im
        target = max(1, math.ceil(busy / self.theta))
        if ibp > self.theta + self.delta and target > n_im:
            n_int = sum(1 for i in ep.serving + ep.provisioning if i.kind == INTERACTIVE)
            for _ in range(target - n_im):
                want_int = n_int < round(self.theta * (n_im + 1))
                if not self._add(sim, ep, INTERACTIVE if want_int else MIXED, 1, now, f"IBP {ibp:.2f}"):
                    break
                n_im += 1
                n_int += want_int
        elif ibp < self.theta - self.delta and target < n_im:
            # sec. 5.2: "if IBP decreases below Theta, mixed and interactive instances are removed". Never one
            # running interactive requests; idle ones first, then mixed instances that only run batch requests
            # (drained: their batch requests finish there, nothing new is routed to them). Retiring only idle
            # instances let the mixed count ratchet up: mixed instances always hold batch work during a dump.
            spare = sorted((i for i in ep.serving if i.kind != BATCH and state_of(i).ni == 0),
                           key=lambda i: (sim.request_count(i) > 0 or bool(i.swapped), i.kind == INTERACTIVE,
                                          sim.request_count(i), -i.iid))
            removed = 0
            for inst in spare[: n_im - target]:
                if len(ep.serving) <= max(1, ep.min_instances or 1):
                    break
                sim.drain(inst, now, donate=True)
                sim.record_scaling(now, ep, "scale_in", source="spot", delay_s=0.0)
                removed += 1
            if removed:
                self.events.append((now, "remove", "interactive/mixed", removed, f"IBP {ibp:.2f}"))

    # ------------------------------------------------------------------ ablation: utilisation autoscaler
    def _utilisation_tick(self, sim, now):
        for ep in sim.endpoints:
            if not ep.serving or ep.provisioning:
                continue
            u = sum(sim.kv_used(i, now) for i in ep.serving) / max(1, sum(i.cap for i in ep.serving))
            if u > self.util_hi and ep.n_active < ep.max_instances:
                self._add(sim, ep, MIXED, 1, now, f"KV {u:.2f}")
            elif u < self.util_lo and ep.n_serving > max(1, ep.min_instances or 1):
                if sim.scale_in(ep, now, donate=True) is not None:
                    self.events.append((now, "remove", MIXED, 1, f"KV {u:.2f}"))
