"""The simulator's run state: per-request arrays, the event queues, counters; the base of the instance engine.

The ``Simulator`` (loop.py) is the instance engine and the event loop, and owns the other parts of a run:

    RunState (state.py)           per-request arrays and their typed views, the event heap, ``push``, ``_drop``
    KVManager (kvcache.py)        an instance's KV cache: watermark, preemption victim and mode, swap-in
    ChunkedPrefill (chunked.py)   the chunked-prefill option: mixed prefill-chunk + decode iterations
    InstanceEngine (batching.py)  an instance's iteration-level batching: admit / prefill / decode runs
    Simulator (loop.py)           construction and the event loop; it owns (as attributes, not base classes):
      routing: RequestPath (arrivals.py)       arrivals, region/endpoint/instance routing, the fused arrival path
      lifecycle: FleetLifecycle (fleet.py)     provisioning -> serving -> draining -> released, spot pool, scaling
      control: PolicyAPI (control.py)          what policies may read and call (bound into ``policy_view``)
      _pd: Disaggregation (disagg.py)          prefill/decode disaggregation, when an endpoint has pools

Every event carries a per-run counter ``seq`` (deterministic tie-breaks at equal times, no globals). The
instances' own next events live in ``InstanceEvents`` (evq.py); the rest are ``(time, seq, kind, obj, arg)``
tuples in ``heap``.

Compiled build: compiled with Cython by ``python -m simulations.engine.build`` (declarations in the
matching .pxd; ``@cython.locals`` types the hot locals and is inert in Python). The same source runs as
plain Python when there is no fresh build (accel.py); results are identical.
"""

from __future__ import annotations

from heapq import heappush

EV_INST, EV_DELIVER, EV_READY, EV_TICK, EV_SAMPLE, EV_KV = 0, 1, 2, 3, 4, 5  # EV_KV: a KV transfer lands (disagg.py)


class RunState:
    """State shared by every part of one run (fields declared in state.pxd for the compiled build)."""

    def _bind_views(self):
        """The loop's own handles on the per-request arrays: the same buffers as ``req_arr``, ``gen``, ...
        (in the compiled build, typed memoryviews read and written as C arrays)."""
        self._arr, self._inp, self._out = self.req_arr, self.req_inp, self.req_out
        self._tier, self._model, self._region, self._prio = self.req_tier, self.req_model, self.req_region, self.req_prio
        self._gen, self._join, self._fin = self.gen, self.join, self.fin
        self._t_first, self._t_done, self._t_admit = self.t_first, self.t_done, self.t_admit
        self._served_ep, self._served_inst, self._preempted = self.served_ep, self.served_inst, self.preempted
        self._tok_t, self._tbt_max = self.tok_t, self.tbt_max
        routing = getattr(self, "routing", None)  # the request path's copies of these views (arrivals.py)
        if routing is not None:
            routing._bind_views()

    def free_run_state(self) -> None:
        """Drop the per-request state only the loop needed (keeps peak memory at the loop's, not above it)."""
        for name in ("gen", "join", "fin", "tok_t", "req_inp", "req_out", "req_arr", "net_delay", "req_model",
                     "req_region"):
            setattr(self, name, None)
        self._arr = self._inp = self._out = self._model = self._region = None
        self._gen = self._join = self._fin = self._tok_t = self._t_admit = None
        routing = getattr(self, "routing", None)
        if routing is not None:
            routing._bind_views()  # drops its copies of the freed views too


    def push(self, t, kind, obj, arg=0):
        """Queue an event that is not an instance's own step: EV_DELIVER (obj = rid, arg = endpoint id),
        EV_READY (obj = instance), EV_TICK, EV_SAMPLE, EV_KV (obj = rid, arg = decode instance id)."""
        self.seq += 1
        heappush(self.heap, (t, self.seq, kind, obj, arg))


    def _drop(self, rid: int, reason: str) -> None:
        self.dropped[rid] = reason
