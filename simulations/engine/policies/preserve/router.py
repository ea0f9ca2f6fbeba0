"""PreServe's load-aware request router (paper 4.3.3, spec 3.5), with its hold queue.

For an arriving request r (P prompt tokens, predicted D^ output tokens) and each routable (serving, not isolated)
instance i:

    L_i = (queued prompt tokens_i + P) + (predicted decode tokens still to generate_i + D^)
          + beta x max(0, max_j U^(i,+r)_j - T_mem) x M_i          beta = 1, T_mem = 0.8, j < l = 100

and r goes to argmin L_i (ties: the lower instance id). "Predicted decode tokens still to generate" (the paper's
current_d_i, "the total tokens to be generated in the decode phase") counts the running requests, from the
anticipator (with its late-finish extensions): the paper's map holds a request from the end of its prefill. The
other reading, with the queued requests' predicted output too (``queued_decode: true``; the score adds r's own D^
while r is still queued), was measured and is worse in our engine (P99 normalised latency at 12.5
req/s 1.69 vs 1.09 s/token, docs/reproduction_preserve.md): not the default.

When every routable instance is potentially overloaded (the scaler's predicate: more than 10 % of the next 100 iterations above 95 % KV) the request is held; held
requests are retried in arrival order whenever a request completes and at every tick, and an arrival finding the
hold queue full (``hold_capacity``, the paper gives no value: default 256) is dropped with reason
``router_queue_full`` (an SLO miss). Uses only the public policy API (``request_tokens``, ``running_generated``
and ``kv_used`` through the projection cache, ``queued_prompt_tokens``, ``dispatch``, ``drop``).
"""

from __future__ import annotations

from collections import deque

from simulations.engine.policies.preserve.anticipator import Projection
from simulations.engine.policies.preserve.knobs import LoadAwareParams
from simulations.engine.policies.preserve.steps import ProjectionCache


class LoadAwareRouter:
    def __init__(self, params: dict) -> None:
        k = LoadAwareParams.read(params)
        self.beta = k.beta
        self.t_mem = k.t_mem
        self.horizon = k.horizon
        self.extension = k.extension
        self.hold_capacity = k.hold_capacity
        self.hold_enabled = k.hold
        # current_d also counts the queued requests' predicted decode (off by default; see the module docstring)
        self.queued_decode = k.queued_decode
        self.held: deque = deque()
        self.stats = {"routed": 0, "held": 0, "dropped_queue_full": 0, "cache_hits": 0, "cache_advances": 0}
        self._cache = ProjectionCache(self.horizon, self.extension, self.stats)
        self.use_cache = k.projection_cache

    def projections(self, sim, instances, now: float) -> list:
        """``Projection.of`` for each of ``instances``, maintained incrementally per instance as ``Steps`` (the
        same U_j, bit for bit: ``steps.ProjectionCache``; exact: test_preserve.py compares whole runs with
        ``projection_cache: false``)."""
        if not self.use_cache:
            return [Projection.of(sim, inst, now, self.horizon, self.extension) for inst in instances]
        get = self._cache.get
        return [get(sim, inst, now) for inst in instances]

    def projection(self, sim, inst, now: float):
        return self.projections(sim, [inst], now)[0]

    def choose(self, sim, rid: int, instances: list, now: float, projs: list | None = None):
        """The instance for ``rid`` or None when every instance is potentially overloaded."""
        if not instances:
            return None
        if len(instances) == 1:  # nothing to score: the one instance unless it is overloaded (and we hold)
            if self.hold_enabled and (projs or self.projections(sim, instances, now))[0].overloaded():
                return None
            return instances[0]
        prompt, pred = sim.request_tokens(rid)
        projs = projs if projs is not None else self.projections(sim, instances, now)
        if self.hold_enabled and all(p.overloaded() for p in projs):
            return None
        best, best_score = None, None
        for inst, proj in zip(instances, projs, strict=True):
            peak = proj.peak_with_request(prompt, pred)
            current_d = proj.remaining_decode + (self.queued_decode_tokens(sim, inst) if self.queued_decode else 0)
            score = (sim.queued_prompt_tokens(inst) + prompt) + (current_d + pred) \
                + self.beta * max(0.0, peak - self.t_mem) * proj.cap
            if best_score is None or score < best_score or (score == best_score and inst.iid < best.iid):
                best, best_score = inst, score
        return best

    @staticmethod
    def queued_decode_tokens(sim, inst) -> int:
        """Predicted output tokens still to generate by the requests queued on ``inst`` (at least 1 each)."""
        return sum(max(pred - gen, 1) for _rid, _p, gen, pred in sim.queued_requests(inst))

    def arrive(self, sim, ep, rid: int, now: float) -> None:
        """Route or hold an arriving request (called from the owning autoscaler's ``on_arrival``)."""
        if self.held:  # keep arrival order: a newcomer waits behind the held ones
            self._hold(sim, rid)
            self.release(sim, ep, now)
            return
        inst = self.choose(sim, rid, list(ep.serving), now)
        if inst is None:
            self._hold(sim, rid)
        else:
            sim.dispatch(rid, inst, now)
            self.stats["routed"] += 1

    def _hold(self, sim, rid: int) -> None:
        if len(self.held) >= self.hold_capacity:
            sim.drop(rid, "router_queue_full")
            self.stats["dropped_queue_full"] += 1
            return
        self.held.append(rid)
        self.stats["held"] += 1

    def release(self, sim, ep, now: float) -> None:
        """Dispatch held requests in order while some instance is not overloaded."""
        if not self.held or not ep.serving:
            return
        instances = list(ep.serving)
        # dispatching only queues a request (the map holds running requests): the projections stay valid
        projs = self.projections(sim, instances, now)
        while self.held:
            inst = self.choose(sim, self.held[0], instances, now, projs)
            if inst is None:
                return
            sim.dispatch(self.held.popleft(), inst, now)
            self.stats["routed"] += 1
