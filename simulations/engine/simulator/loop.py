"""The discrete-event loop: construction of a run and the loop merging arrivals, instance events and the rest.

The ``Simulator`` is the loop; it inherits nothing and owns its parts as attributes:

    state: RunState (core/state.py)                  per-request arrays and typed views, event heap, counters
    instance_engine: InstanceEngine (instance/)      every instance's batching, KV cache and chunked prefill
    routing: RequestPath (fleet/arrivals.py)         arrivals, region/endpoint/instance routing, the fused path
    lifecycle: FleetLifecycle (fleet/fleet.py)       provisioning -> serving -> draining -> released, spot, scaling
    control: PolicyAPI (core/control.py)             what policies may read and call (bound into ``policy_view``)
    _pd: Disaggregation (fleet/disagg.py)            prefill/decode disaggregation, when an endpoint has pools

Arrivals are not pushed: the loop merges the sorted arrival array with the instances' event queue and the heap of
other events.

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
from simulations.engine.core.evq import InstanceEvents  # noqa: F401 - types the loop's locals when compiled
from simulations.engine.core.state import EV_DELIVER, EV_KV, EV_READY, EV_SAMPLE, EV_TICK, RunState
from simulations.engine.core.view import PolicyView
from simulations.engine.fleet.arrivals import NetworkDelays, RequestPath
from simulations.engine.fleet.fleet import FleetLifecycle
from simulations.engine.fleet.fleetindex import EndpointIndex  # noqa: F401 - types the loop's locals when compiled
from simulations.engine.instance.batching import InstanceEngine
from simulations.engine.policies import get_policy
from simulations.engine.policies.registry import PolicyKind
from simulations.engine.scenario.config import TIERS


class Simulator:
    """One run. Build with a parsed Scenario and a Workload (already remapped to the fleet's names).

    The Simulator is the event loop; it inherits nothing and owns its parts: ``state`` (state.RunState: per-request
    arrays, event queues, counters), ``instance_engine`` (batching.InstanceEngine: every instance's batching, KV
    cache and chunked prefill), ``routing`` (arrivals.RequestPath), ``lifecycle`` (fleet.FleetLifecycle),
    ``control`` (control.PolicyAPI, what policies call through ``policy_view``) and ``_pd``
    (disagg.Disaggregation, None without disaggregated endpoints)."""

    def __init__(self, scenario, workload, progress=None) -> None:
        self.scenario = scenario
        self._pd = None  # prefill/decode disaggregation (disagg.py), set below when an endpoint has pools
        self.engine = scenario.engine
        self.progress = progress
        ss = np.random.SeedSequence(scenario.engine.seed)
        net_ss, policy_ss, spot_ss = ss.spawn(3)
        self.rng = np.random.default_rng(policy_ss)
        self.spot_rng = np.random.default_rng(spot_ss)

        self.autoscaler = get_policy(PolicyKind.AUTOSCALER, scenario.policy.autoscaler)(
            scenario.policy.autoscaler_params, self.rng)
        fleet = self._take_workload(scenario, workload)
        self.state = st = RunState(self.workload)
        # network delay per request, pre-sampled (used only when the request crosses regions)
        st.net_delay = NetworkDelays(self.scenario.fleet.network.bins, int(net_ss.generate_state(1)[0]))
        st.net_all = fleet.network.apply_to == "all"
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

    def _build_fleet(self, scenario, fleet) -> None:
        """The scheduler and KV policy, the endpoints, the owned parts and the routers (they see the view)."""
        slo = scenario.slo
        self.ttft_slo = [float(slo.ttft_s.get(t, math.inf)) for t in TIERS]
        sched_cls = get_policy(PolicyKind.SCHEDULER, scenario.policy.scheduler)
        self.scheduler = sched_cls(scenario.policy.scheduler_params, self.ttft_slo)
        # every instance's batching, KV cache (admission watermark, preemption victim / mode) and chunked prefill
        self.instance_engine = ie = InstanceEngine(self.state, scenario.engine, self.scheduler)

        # fleet
        self.endpoints: list[Endpoint] = []
        self.instances: list[Instance] = []
        for cfg in fleet.endpoints:
            ep = Endpoint(len(self.endpoints), cfg, self.region_names.index(cfg.region),
                          self.model_names.index(cfg.model))
            ep.clock = self.state
            self.endpoints.append(ep)
        self.routing = RequestPath(self)  # candidates and Endpoint.adm (watermark and context limit)
        ie._setup_prefix(self.workload, self.endpoints)  # prefix caching's per-request ids (kvcache.py)
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
        """The run's scaling events and timeline, the policy hooks the loop calls, the instance engine's callbacks."""
        self.scaling_events: list[dict] = []
        self.timeline: list[tuple] = []
        # hooks of the policy API, on only when the autoscaler asks (the stock fast path pays one C test per event)
        a = self.autoscaler
        st = self.state
        st._h_batch = bool(getattr(a, "wants_batch_hook", False))
        st._h_complete = bool(getattr(a, "wants_completion_hook", False))
        st._h_release = bool(getattr(a, "wants_release_hook", False))
        st._h_any = st._h_batch or st._h_complete
        self.instance_engine.bind(self.control, self.lifecycle, self.policy_view, self._pd)

    @property
    def now(self) -> float:
        """The simulated time reached (the run state's clock)."""
        return self.state.now

    def _bind_views(self) -> None:
        """Rebind the typed views of the per-request arrays after they were replaced (streamed replay)."""
        self.state._bind_views()
        self.routing._bind_views()

    def free_run_state(self) -> None:
        """Drop the per-request state only the loop needed (keeps peak memory at the loop's, not above it)."""
        self.state.free_run_state()
        self.routing._bind_views()  # drops its copies of the freed views too

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
            self.state.push(0.0, EV_SAMPLE, None)
        if self.autoscaler.tick_s:
            self.state.push(self.autoscaler.tick_s, EV_TICK, None)
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
                   more=cython.bint, routing=RequestPath, st=RunState, ie=InstanceEngine)
    def _run(self, stop: float):
        if not self.__dict__.get("_started"):
            self._start()
        st = self.state
        ie = self.instance_engine
        heap = st.heap
        iq = st.iq
        instances = self.instances
        arr = st._arr
        n = st.n
        max_time = min(self.engine.max_time_s, stop)  # stop: just below a streamed run's ``until``
        horizon = arr[n - 1] if n else 1.0
        progress = self.progress
        i = st.n_arrived  # 0 on the first call; a resumed (streamed) run goes on from its next arrival
        next_arr = arr[i] if i < n else math.inf
        st.next_arr = next_arr
        events = st.events
        arrive = self._arrive
        fused = self._fused
        routing = self.routing
        more = self.__dict__.get("more_arrivals", False)  # streamed: later chunks will add arrivals
        while True:
            events += 1
            if progress is not None and not events & 0x3FFF:
                progress(min(1.0, st.now / horizon) if horizon > 0 else 1.0,
                         f"simulated {st.now:,.0f} of {horizon:,.0f} s")
            tq = iq.top_time()
            th = heap[0][0] if heap else math.inf
            if tq < next_arr and (tq < th or (tq == th and iq.top_seq() < heap[0][1])):
                # an instance's next step (arrivals first at ties: they can join the same step)
                if tq > max_time:
                    break
                inst = cython.cast(Instance, instances[iq.pop()])
                st.now = tq
                st.t_work = tq
                b0 = inst.B
                ie._segment_end(inst, tq)
                if st._h_any:
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
                st.now = t
                st.t_work = t
                i += 1
                st.n_arrived = i
                next_arr = arr[i] if i < n else math.inf
                st.next_arr = next_arr
                st._in_arrival = True
                if fused:
                    routing._arrive_fast(i - 1, t)
                else:
                    arrive(i - 1, t)
                st._in_arrival = False
            else:
                break
        st.events = events
        if progress is not None:
            progress(1.0, "simulation finished")
        return st.now

    @cython.locals(t=cython.double, kind=cython.int, arg=cython.longlong, heap=list, iq=InstanceEvents)
    def _heap_event(self, ev: tuple, pending: bool) -> None:
        """One event of the heap (a delivery, an instance ready, a KV landing, a policy tick, a timeline sample);
        ``pending``: arrivals are still to come, in this run or a later chunk."""
        t = ev[0]
        kind = ev[2]
        obj = ev[3]
        arg = ev[4]
        self.state.now = t
        if kind == EV_DELIVER:
            self.state.t_work = t
            self.routing._deliver(obj, self.endpoints[arg], t)
        elif kind == EV_READY:
            self.state.t_work = t
            self.lifecycle._ready(obj, t)
        elif kind == EV_KV:
            self.state.t_work = t
            self._pd.land(obj, t)
        elif kind == EV_TICK:
            heap = self.state.heap
            iq = self.state.iq
            self.autoscaler.on_tick(self.policy_view, t)
            if pending or len(heap) + len(iq) > 1:
                self.state.push(t + self.autoscaler.tick_s, EV_TICK, None)
        elif kind == EV_SAMPLE:
            heap = self.state.heap
            iq = self.state.iq
            self._sample(t)
            if pending or len(iq) > 0 or any(e[2] != EV_SAMPLE and e[2] != EV_TICK for e in heap):
                self.state.push(t + self.engine.timeline_step_s, EV_SAMPLE, None)

    def _sample(self, t: float) -> None:
        for ep in self.endpoints:
            self.timeline.append((t, ep.eid, len(ep.serving), len(ep.provisioning), len(ep.draining),
                                  ep.util_at(t) if ep.cap_sum else 0.0, ep.queue_len,
                                  sum(i.B for i in ep.serving) + sum(i.B for i in ep.draining)))
