"""The run state: per-request arrays and their typed views, the event queues, clocks and counters of one run.

The ``Simulator`` (simulator/loop.py) owns one ``RunState`` (``sim.state``) and hands it, typed, to the parts that
read and write it: the instance engine (instance/: KV cache, chunked prefill, batching), the request path, the
fleet life cycle, the policy API and the disaggregation part (fleet/, core/control.py). Results (results/,
streaming/) read the finished run's arrays from it.

Every event carries a per-run counter ``seq`` (deterministic tie-breaks at equal times, no globals). The
instances' own next events live in ``InstanceEvents`` (evq.py); the rest are ``(time, seq, kind, obj, arg)``
tuples in ``heap``.

Compiled build: compiled with Cython by ``python -m simulations.engine.build`` (declarations in the
matching .pxd; ``@cython.locals`` types the hot locals and is inert in Python). The same source runs as
plain Python when there is no fresh build (accel.py); results are identical.
"""

from __future__ import annotations

import math
from heapq import heappush

import numpy as np

from simulations.engine.core.evq import InstanceEvents
from simulations.engine.scenario.config import TIER_INDEX

EV_INST, EV_DELIVER, EV_READY, EV_TICK, EV_SAMPLE, EV_KV = 0, 1, 2, 3, 4, 5  # EV_KV: a KV transfer lands (disagg.py)
NIW = TIER_INDEX["NIW"]


class RunState:
    """The per-request arrays, event queues and counters of one run (fields declared in state.pxd for the compiled
    build)."""

    def __init__(self, w) -> None:
        self._request_state(w)
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
        self.net_all = False  # the network delay applies to every request, not only cross-region ones
        self.net_delay = None  # the per-request network delay (arrivals.NetworkDelays, set by the Simulator)
        # hooks of the policy API, on only when the autoscaler asks (the stock fast path pays one C test per event)
        self._h_batch = self._h_complete = self._h_release = self._h_any = False
        self._done_buf = []

    def _request_state(self, w) -> None:
        """Per-request arrays of the run, and the request sets the loop fills."""
        n = len(w)
        self.n = n
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

    def _bind_views(self):
        """The typed handles on the per-request arrays: the same buffers as ``req_arr``, ``gen``, ... (in the
        compiled build, typed memoryviews read and written as C arrays). The parts holding copies of them rebind
        after this (``Simulator._bind_views``)."""
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

    def push(self, t, kind, obj, arg=0):
        """Queue an event that is not an instance's own step: EV_DELIVER (obj = rid, arg = endpoint id),
        EV_READY (obj = instance), EV_TICK, EV_SAMPLE, EV_KV (obj = rid, arg = decode instance id)."""
        self.seq += 1
        heappush(self.heap, (t, self.seq, kind, obj, arg))

    def _drop(self, rid: int, reason: str) -> None:
        self.dropped[rid] = reason
