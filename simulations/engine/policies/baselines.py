"""Baselines every later strategy family compares against (issue 11 item 6): a Llumnix-like scheduler and
scaler, a least-requests router, a memory-usage router and static-N. They use only the public policy API.

**Llumnix-like** (Sun et al., OSDI'24; defaults of AlibabaPAI/llumnix ``llumnix/config/default.py``:
``SCALING_INTERVAL = 10`` s, ``SCALING_POLICY = 'avg_load'``, ``SCALE_UP_THRESHOLD = 10``,
``SCALE_DOWN_THRESHOLD = 60``, ``DISPATCH_POLICY = 'load'``, vLLM's 16-token KV blocks). An instance's
*freeness* is ``(M - sum V) / B``: M its KV capacity, V the virtual usage of each of its requests (the KV a
running request holds; the prompt KV a queued request needs), B its number of requests, in 16-token blocks,
i.e. how many more decode steps the batch can run. The ``llumnix`` instance router dispatches to the freest
serving instance. The ``llumnix`` autoscaler checks the endpoint's average freeness (the aggregate: sum of free
blocks over the sum of requests, as Llumnix's avg_load) every 10 s and adds one instance when it is below 10,
drains one when it is above 60 (one instance at a time: nothing while one is still provisioning).
Not modelled: Llumnix's live migration between instances and its priorities.
"""

from __future__ import annotations

from dataclasses import replace

from simulations.engine.policies.autoscalers import Autoscaler
from simulations.engine.policies.registry import PolicyKind, register
from simulations.engine.policies.routers import InstanceRouter

BLOCK_TOKENS = 16


def freeness_parts(sim, inst, now: float, block: int = BLOCK_TOKENS) -> tuple[float, int]:
    """(M - sum V in blocks, B) for one instance at ``now``."""
    free = (inst.cap - sim.kv_used(inst, now) - sim.queued_prompt_tokens(inst)) / block
    return free, sim.request_count(inst)


def freeness(sim, inst, now: float, block: int = BLOCK_TOKENS) -> float:
    free, b = freeness_parts(sim, inst, now, block)
    return free / max(b, 1)


@register(PolicyKind.INSTANCE_ROUTER, "llumnix")
class LlumnixDispatch(InstanceRouter):
    """Dispatch to the serving instance with the highest freeness (ties: the lower instance id)."""

    def choose(self, ep):
        t = self.sim.now
        return max(ep.serving, key=lambda i: (freeness(self.sim, i, t), -i.iid))


@register(PolicyKind.INSTANCE_ROUTER, "least-requests")
class LeastRequests(InstanceRouter):
    """The serving instance with the fewest requests (running + queued); ties: the lower instance id."""

    def choose(self, ep):
        return min(ep.serving, key=lambda i: (self.sim.request_count(i), i.iid))


@register(PolicyKind.INSTANCE_ROUTER, "memory-usage")
class MemoryUsage(InstanceRouter):
    """The serving instance with the lowest KV usage fraction now (plus queued prompts); ties: lower id."""

    def choose(self, ep):
        t = self.sim.now
        sim = self.sim
        return min(ep.serving, key=lambda i: ((sim.kv_used(i, t) + sim.queued_prompt_tokens(i)) / i.cap, i.iid))


@register(PolicyKind.AUTOSCALER, "llumnix")
class LlumnixScaler(Autoscaler):
    """Average-freeness scaling: every ``interval_s`` (10), +1 instance below ``scale_up_below`` (10), -1 above
    ``scale_down_above`` (60), within the endpoint's min/max, one instance at a time."""
    stream_safe = True

    def __init__(self, params, rng):
        super().__init__(params, rng)
        self.tick_s = float(self.params.get("interval_s", 10.0))
        self.up = float(self.params.get("scale_up_below", 10.0))
        self.down = float(self.params.get("scale_down_above", 60.0))
        self.block = int(self.params.get("block_tokens", BLOCK_TOKENS))
        self.donate = bool(self.params.get("donate_to_spot", True))
        self.decisions: list = []  # (t, endpoint, average freeness, action) for tests and reports

    def average_freeness(self, sim, ep, now: float) -> float:
        free = 0.0
        reqs = 0
        for inst in ep.serving:
            f, b = freeness_parts(sim, inst, now, self.block)
            free += f
            reqs += b
        return free / max(reqs, 1)

    def on_tick(self, sim, now):
        for ep in sim.endpoints:
            if not ep.serving or ep.provisioning:
                continue
            f = self.average_freeness(sim, ep, now)
            action = None
            if f < self.up and ep.n_active < ep.max_instances:
                if sim.scale_out(ep, now) is not None:
                    action = "scale_out"
            elif f > self.down and ep.n_serving > max(1, ep.min_instances):
                if sim.scale_in(ep, now, donate=self.donate) is not None:
                    action = "scale_in"
            if action:
                ep.last_scale_t = now
                self.decisions.append((now, ep.name, f, action))


@register(PolicyKind.AUTOSCALER, "static-n")
class StaticN(Autoscaler):
    """A fixed fleet of ``instances`` (N) per endpoint, whatever the scenario's initial counts say."""
    stream_safe = True

    def prepare_fleet(self, fleet, workload):
        n = int(self.params.get("instances", 0))
        if n < 1:
            from simulations.engine.config import ScenarioError
            raise ScenarioError("strategy.params.instances", "static-n needs instances >= 1")
        return fleet.with_endpoints([replace(ep, initial=n, min_instances=n, max_instances=max(n, ep.max_instances))
                                     for ep in fleet.endpoints])
