"""The Llumnix-like baseline with its max batch size as a knob (for the "tuned" sweep of the Chiron comparison).

``llumnix-batch`` = the ``llumnix`` autoscaler (policies/baselines.py: average freeness every 10 s, +1 below 10,
-1 above 60, one instance at a time) that also fixes every instance's max batch size to ``max_batch`` (default:
the deployment's ``max_batch_size``, vLLM's static ``max_num_seqs``), never adapted. Use it with the ``llumnix``
instance router (or ``llumnix-approx`` below for dumps of hundreds of thousands of requests). Queued requests migrate between instances every 10 s and when an instance becomes ready (``migrate``, default true;
Llumnix migrates running requests live, which is not modelled). Llumnix-like "tuned" = the sweep point of (scale_up_below, scale_down_above, max_batch) with the
best SLO attainment, then the fewest GPU-hours (tests/benchmarks/reproduce_chiron.py).
"""

from __future__ import annotations

from simulations.engine.policies.baselines import BLOCK_TOKENS, LlumnixScaler
from simulations.engine.policies.registry import PolicyKind, register
from simulations.engine.policies.routers import InstanceRouter


@register(PolicyKind.AUTOSCALER, "llumnix-batch")
class LlumnixBatch(LlumnixScaler):
    def __init__(self, params, rng):
        super().__init__(params, rng)
        mb = self.params.get("max_batch")
        self.max_batch = int(mb) if mb else None
        if self.max_batch is not None and self.max_batch < 1:
            raise ValueError("llumnix-batch: max_batch must be >= 1")

    def _fix(self, sim, inst, now):
        if self.max_batch is not None:
            sim.set_max_batch(inst, self.max_batch, now)

    def on_start(self, sim, now):
        for ep in sim.endpoints:
            for inst in ep.serving:
                self._fix(sim, inst, now)

    def on_instance_ready(self, sim, inst, now):
        self._fix(sim, inst, now)
        if self.params.get("migrate", True):
            self.rebalance(sim, inst.endpoint, now)

    def on_tick(self, sim, now):
        super().on_tick(sim, now)
        if self.params.get("migrate", True):
            for ep in sim.endpoints:
                self.rebalance(sim, ep, now)

    def rebalance(self, sim, ep, now):
        """Llumnix migrates requests between instances to even out load; here only *queued* requests move (no KV
        to copy; live migration of running requests is not modelled): every waiting queue is brought to within
        ``migrate_slack`` (8) requests of the endpoint's mean, the excess (the back of a queue) going to the
        instances with the shortest queues."""
        serving = [i for i in ep.serving]
        if len(serving) < 2:
            return
        total = sum(len(i.waiting) for i in serving)
        target = total / len(serving)
        slack = int(self.params.get("migrate_slack", 8))
        moved = []
        for inst in serving:
            excess = len(inst.waiting) - int(target) - slack
            if excess > 0:
                moved += sim.withdraw_waiting(inst, excess)
        if not moved:
            return
        short = sorted(serving, key=lambda i: (len(i.waiting), i.iid))
        k = 0
        for inst in short:
            room = int(target) + 1 - len(inst.waiting)
            while room > 0 and k < len(moved):
                sim.dispatch(moved[k], inst, now)
                k += 1
                room -= 1
        for rid in moved[k:]:
            sim.dispatch(rid, short[0], now)
        self.migrated = getattr(self, "migrated", 0) + len(moved)

    def average_freeness(self, sim, ep, now):
        """As ``llumnix`` (sum of free blocks / sum of requests), with queued prompts estimated as in
        ``llumnix-approx`` (queued requests x mean prompt so far) when ``approx_queue`` (default true)."""
        if not self.params.get("approx_queue", True):
            return super().average_freeness(sim, ep, now)
        k = sim.n_arrived
        mean = float(sim.workload.input_tokens[:k].mean()) if k else 0.0
        free = 0.0
        reqs = 0
        for inst in ep.serving:
            queued = len(inst.waiting) + len(inst.prefilling)
            free += (inst.cap - sim.kv_used(inst, now) - queued * mean) / self.block
            reqs += sim.request_count(inst)
        return free / max(reqs, 1)


@register(PolicyKind.INSTANCE_ROUTER, "llumnix-approx")
class LlumnixDispatchApprox(InstanceRouter):
    """``llumnix`` dispatch (the freest instance, (M - sum V) / B in 16-token blocks) with the queued prompts' KV
    estimated as (queued requests) x (mean prompt of the requests arrived so far) instead of summed request by
    request: O(1) per instance, where the exact sum is O(queue) and makes a 1M-request dump (queues of tens of
    thousands per instance) quadratic. Everything else as ``llumnix``; the autoscaler still reads exact sums."""

    def __init__(self, sim, params):
        super().__init__(sim, params)
        self._k = 0
        self._sum = 0.0

    def _mean_prompt(self) -> float:
        sim = self.sim
        k = sim.n_arrived
        if k > self._k:
            self._sum += float(sim.workload.input_tokens[self._k:k].sum())
            self._k = k
        return self._sum / self._k if self._k else 0.0

    def choose(self, ep):
        sim = self.sim
        t = sim.now
        mean = self._mean_prompt()

        def freeness(inst):
            queued = len(inst.waiting) + len(inst.prefilling)
            free = (inst.cap - sim.kv_used(inst, t) - queued * mean) / BLOCK_TOKENS
            return free / max(sim.request_count(inst), 1)

        return max(ep.serving, key=lambda i: (freeness(i), -i.iid))
