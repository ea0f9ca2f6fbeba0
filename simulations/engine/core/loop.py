"""The discrete-event loop: construction of a run and the loop merging arrivals, instance events and the rest.

The ``Simulator`` is the instance engine (batching.py on kvcache.py, chunked.py and state.py) and the loop; it owns
the request path (``routing``, arrivals.py), the fleet life cycle and spot pool (``lifecycle``, fleet.py) and the
policy API (``control``, control.py) as parts (see state.py). Arrivals are not pushed: the loop merges the sorted arrival array with the instances' event
queue and the heap of other events.

Compiled build: compiled with Cython by ``python -m simulations.engine.build`` (declarations in the
matching .pxd; ``@cython.locals`` types the hot locals and is inert in Python). The same source runs as
plain Python when there is no fresh build (accel.py); results are identical.
"""

from __future__ import annotations

import gc
import math
from heapq import heappop

import cython
import numpy as np

from simulations.engine.core.control import PolicyAPI
from simulations.engine.core.entities import Endpoint, Instance
from simulations.engine.core.evq import InstanceEvents
from simulations.engine.core.state import EV_DELIVER, EV_KV, EV_READY, EV_SAMPLE, EV_TICK
from simulations.engine.core.view import PolicyView
from simulations.engine.fleet.arrivals import NetworkDelays, RequestPath
from simulations.engine.fleet.fleet import FleetLifecycle
from simulations.engine.fleet.fleetindex import EndpointIndex  # noqa: F401 - types the loop's locals when compiled
from simulations.engine.instance.batching import InstanceEngine
from simulations.engine.policies import get_policy
from simulations.engine.policies.registry import PolicyKind
from simulations.engine.scenario.config import TIER_INDEX, TIERS

NIW = TIER_INDEX["NIW"]


class Simulator(InstanceEngine):
    """One run. Build with a parsed Scenario and a Workload (already remapped to the fleet's names).

    The Simulator is the instance engine (batching, KV cache, chunked prefill: its base types) and the event loop;
    it owns the other parts: ``routing`` (arrivals.RequestPath), ``lifecycle`` (fleet.FleetLifecycle), ``control``
    (control.PolicyAPI, what policies call through ``policy_view``) and ``_pd`` (disagg.Disaggregation)."""

    def __init__(self, scenario, workload, progress=None) -> None:
        self.scenario = scenario
        self._pd = None  # prefill/decode disaggregation (disagg.py), set below when an endpoint has pools
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
        fleet = self._take_workload(scenario, workload)
        self._request_state(self.workload)
        # network delay per request, pre-sampled (used only when the request crosses regions)
        self.net_delay = NetworkDelays(self.scenario.fleet.network.bins, int(net_ss.generate_state(1)[0]))
        self.net_all = fleet.network.apply_to == "all"
        self._build_fleet(scenario, fleet)
        self._loop_state()

    def _take_workload(self, scenario, workload):
        """The run's workload (predicted output lengths, the fleet's names, context limits) and the fleet the
        autoscaler prepares for it."""
        if scenario.policy.predictor:  # predicted output lengths, from each request alone, before the run
            from dataclasses import replace

            from simulations.engine.workload.predictors import predict_output_lengths
            workload = replace(workload, predicted_output_tokens=predict_output_lengths(
                workload, scenario.policy.predictor, scenario.policy.predictor_params, scenario.engine.seed))
        fleet = self.autoscaler.prepare_fleet(scenario.fleet, workload)
        self.fleet = fleet
        self.region_names = fleet.region_names
        self.model_names = sorted({e.model for e in fleet.endpoints})
        self.workload = workload.remap(self.model_names, self.region_names)
        from simulations.engine.workload.limits import apply_context_limits  # engine.over_context

        self.workload, self.context_limits = apply_context_limits(fleet, self.workload, self.model_names,
                                                                  scenario.engine.over_context)
        return fleet

    def _request_state(self, w) -> None:
        """Per-request arrays of the run, and the request sets the loop fills."""
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
        # optional request attributes: predicted output length (filled by a predictor before the
        # run, from the request alone), per-request TTFT / TPOT targets, a class or service id; None when absent
        self.req_pred_out = getattr(w, "predicted_output_tokens", None)
        self._bind_views()
        self.dropped: dict[int, str] = {}
        self.cold_started: set = set()  # requests that waited in an endpoint's backlog for an instance to be ready

    def _build_fleet(self, scenario, fleet) -> None:
        """The scheduler and KV policy, the endpoints, the owned parts and the routers (they see the view)."""
        slo = scenario.slo
        self.ttft_slo = [float(slo.ttft_s.get(t, math.inf)) for t in TIERS]
        sched_cls = get_policy(PolicyKind.SCHEDULER, scenario.policy.scheduler)
        self.scheduler = sched_cls(scenario.policy.scheduler_params, self.ttft_slo)
        self._sched_key = self.scheduler.key
        self.sched_dynamic = sched_cls.dynamic
        self._setup_kv(scenario.engine, self.scheduler)  # admission watermark, preemption victim / mode (kvcache)

        # fleet
        self.endpoints: list[Endpoint] = []
        self.instances: list[Instance] = []
        for cfg in fleet.endpoints:
            ep = Endpoint(len(self.endpoints), cfg, self.region_names.index(cfg.region),
                          self.model_names.index(cfg.model))
            ep.clock = self
            self.endpoints.append(ep)
        self.routing = RequestPath(self)  # candidates and Endpoint.adm (watermark and context limit)
        self._setup_prefix(self.workload, self.endpoints)  # prefix caching's per-request ids (kvcache.py)
        if any(ep.pool == "prefill" for ep in self.endpoints):  # after the bounds: it lowers the prefill pools'
            from simulations.engine.fleet.disagg import Disaggregation

            self._pd = Disaggregation(self)
        self.lifecycle = FleetLifecycle(self, fleet)  # instances' life cycle, spot pools, scale out / in
        self.control = PolicyAPI(self)

        self.policy_view = PolicyView(self)  # what every policy receives instead of the simulator
        params = dict(scenario.policy.autoscaler_params)
        params["region_threshold"] = scenario.policy.region_threshold
        self.region_router = get_policy(PolicyKind.REGION_ROUTER, scenario.policy.region_router)(self.policy_view, params)
        self.endpoint_router = get_policy(PolicyKind.ENDPOINT_ROUTER, scenario.policy.endpoint_router)(self.policy_view, params)
        self.instance_router = get_policy(PolicyKind.INSTANCE_ROUTER, scenario.policy.instance_router)(self.policy_view, params)

    def _loop_state(self) -> None:
        """The event queues, clocks and counters of the loop, and the policy hooks it calls."""
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
        # hooks of the policy API, on only when the autoscaler asks (the stock fast path pays one C test per event)
        a = self.autoscaler
        self._h_batch = bool(getattr(a, "wants_batch_hook", False))
        self._h_complete = bool(getattr(a, "wants_completion_hook", False))
        self._h_release = bool(getattr(a, "wants_release_hook", False))
        self._h_any = self._h_batch or self._h_complete
        self._done_buf = []

    def run(self, until: float | None = None):
        """Run to the end of the workload (or ``max_time_s``); returns the simulated time reached.

        ``until`` (streamed replay, stream.py): stop before the first event at or after ``until`` (arrivals at
        ``until`` and later belong to the next chunk, added by ``extend``); a later ``run`` resumes where this one
        stopped, as if never interrupted. Without ``until`` the run goes to its end.

        The cyclic garbage collector is paused meanwhile: the loop allocates millions of short-lived event tuples
        that reference counting frees, and collection passes over them find nothing (measured ~5 % of a run)."""
        enabled = gc.isenabled()
        gc.disable()
        try:
            return self._run(math.inf if until is None else math.nextafter(until, -math.inf))
        finally:
            if enabled:
                gc.enable()

    def _start(self):
        """Once per run, before the first event: initial instances, the policies' start, the first tick / sample,
        the arrival path (a policy's arrival hook, or the fused path)."""
        self._started = True
        for ep in self.endpoints:
            for _ in range(ep.config.initial):
                self.lifecycle.add_instance(ep, 0.0, 0.0, "initial")
        self.autoscaler.on_start(self.policy_view, 0.0)
        step = self.engine.timeline_step_s
        if step and step > 0:
            self.push(0.0, EV_SAMPLE, None)
        if self.autoscaler.tick_s:
            self.push(self.autoscaler.tick_s, EV_TICK, None)
        self._arrive = self.routing._arrive
        if getattr(self.autoscaler, "wants_arrival_hook", False):
            # a policy may hold arrivals (return True), e.g. a global queue; it later calls sim.send(...)
            route = self._arrive
            hook = self.autoscaler.on_arrival
            view = self.policy_view

            def hooked(rid: int, t: float) -> None:
                if not hook(view, rid, t):
                    route(rid, t)

            self._arrive = hooked
            self._fused = False
        else:
            self._fused = self.routing._setup_fast_arrive()

    @cython.locals(i=cython.Py_ssize_t, n=cython.Py_ssize_t, events=cython.longlong, t=cython.double,
                   next_arr=cython.double, max_time=cython.double, horizon=cython.double,
                   fused=cython.bint, inst=Instance, heap=list, iq=InstanceEvents,
                   tq=cython.double, th=cython.double, instances=list, b0=cython.longlong, ix=EndpointIndex,
                   more=cython.bint, routing=RequestPath)
    def _run(self, stop: float):
        if not self.__dict__.get("_started"):
            self._start()
        heap = self.heap
        iq = self.iq
        instances = self.instances
        arr = self._arr
        n = self.n
        max_time = min(self.engine.max_time_s, stop)  # stop: just below a streamed run's ``until``
        horizon = arr[n - 1] if n else 1.0
        progress = self.progress
        i = self.n_arrived  # 0 on the first call; a resumed (streamed) run goes on from its next arrival
        next_arr = arr[i] if i < n else math.inf
        self.next_arr = next_arr
        events = self.events
        arrive = self._arrive
        fused = self._fused
        routing = self.routing
        more = self.__dict__.get("more_arrivals", False)  # streamed: later chunks will add arrivals
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
                b0 = inst.B
                self._segment_end(inst, tq)
                if self._h_any:
                    self.control._after_instance_event(inst, tq, b0)
                ix = inst.endpoint.ix
                if ix is not None:
                    ix.touch(inst, tq)
            elif th < next_arr:
                if th > max_time:
                    break
                self._heap_event(heappop(heap), i < n or more)
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
                    routing._arrive_fast(i - 1, t)
                else:
                    arrive(i - 1, t)
                self._in_arrival = False
            else:
                break
        self.events = events
        if progress is not None:
            progress(1.0, "simulation finished")
        return self.now

    @cython.locals(t=cython.double, kind=cython.int, arg=cython.longlong, heap=list, iq=InstanceEvents)
    def _heap_event(self, ev: tuple, pending: bool) -> None:
        """One event of the heap (a delivery, an instance ready, a KV landing, a policy tick, a timeline sample);
        ``pending``: arrivals are still to come, in this run or a later chunk."""
        t = ev[0]
        kind = ev[2]
        obj = ev[3]
        arg = ev[4]
        self.now = t
        if kind == EV_DELIVER:
            self.t_work = t
            self.routing._deliver(obj, self.endpoints[arg], t)
        elif kind == EV_READY:
            self.t_work = t
            self.lifecycle._ready(obj, t)
        elif kind == EV_KV:
            self.t_work = t
            self._pd.land(obj, t)
        elif kind == EV_TICK:
            heap = self.heap
            iq = self.iq
            self.autoscaler.on_tick(self.policy_view, t)
            if pending or len(heap) + len(iq) > 1:
                self.push(t + self.autoscaler.tick_s, EV_TICK, None)
        elif kind == EV_SAMPLE:
            heap = self.heap
            iq = self.iq
            self._sample(t)
            if pending or len(iq) > 0 or any(e[2] != EV_SAMPLE and e[2] != EV_TICK for e in heap):
                self.push(t + self.engine.timeline_step_s, EV_SAMPLE, None)

    def _sample(self, t: float) -> None:
        for ep in self.endpoints:
            self.timeline.append((t, ep.eid, len(ep.serving), len(ep.provisioning), len(ep.draining),
                                  ep.util_at(t) if ep.cap_sum else 0.0, ep.queue_len,
                                  sum(i.B for i in ep.serving) + sum(i.B for i in ep.draining)))
