"""Baselines every later strategy family compares against: a Llumnix-like scheduler and
scaler, a least-requests router, memory-usage routers and static-N. They use only the public policy API.

**MU, the paper's** (``gpu-memory-usage``; PreServe sec. 3.2.2: "the instance with the lowest weighted average of
GPU utilization and memory usage"): 0.5 x GPU utilisation + 0.5 x KV in use / KV capacity (the paper gives no
weights: equal, ours). KV in use counts the running requests' KV only, as vLLM's ``gpu_cache_usage_perc``
(allocated blocks; a queued prompt holds none without chunked prefill; the 16-token block rounding is not
modelled). GPU utilisation is 1 while the instance has any unfinished request, else 0: nvidia-smi's sampled
utilisation of a vLLM engine, which steps back to back while it has unfinished requests. ``memory-usage`` (ours)
adds the queued prompt tokens to the KV in use, which makes it token-aware where the paper's MU is not.

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
from simulations.engine.policies.params import PolicyParams, knob
from simulations.engine.policies.registry import PolicyKind, register
from simulations.engine.policies.routers import InstanceRouter

BLOCK_TOKENS = 16


def freeness_parts(sim, inst, now: float, block: int = BLOCK_TOKENS, queued=None) -> tuple[float, int]:
    """(M - sum V in blocks, B) for one instance at ``now``; ``queued``: the KV tokens its queued prompts need when
    the caller estimates them (default: the exact sum)."""
    if queued is None:
        queued = sim.queued_prompt_tokens(inst)
    free = (inst.cap - sim.kv_used(inst, now) - queued) / block
    return free, sim.request_count(inst)


def freeness(sim, inst, now: float, block: int = BLOCK_TOKENS) -> float:
    free, b = freeness_parts(sim, inst, now, block)
    return free / max(b, 1)


@register(PolicyKind.INSTANCE_ROUTER, "llumnix")
class LlumnixDispatch(InstanceRouter):
    """Dispatch to the serving instance with the highest freeness (ties: the lower instance id)."""

    def choose(self, ep):
        t = self.view.now
        return max(ep.serving, key=lambda i: (freeness(self.view, i, t), -i.iid))


@register(PolicyKind.INSTANCE_ROUTER, "least-requests")
class LeastRequests(InstanceRouter):
    """The serving instance with the fewest requests (running + queued); ties: the lower instance id."""

    def choose(self, ep):
        return min(ep.serving, key=lambda i: (self.view.request_count(i), i.iid))


@register(PolicyKind.INSTANCE_ROUTER, "memory-usage")
class MemoryUsage(InstanceRouter):
    """Ours: the serving instance with the lowest (KV in use + queued prompt tokens) / capacity; ties: lower id."""

    def choose(self, ep):
        t = self.view.now
        sim = self.view
        return min(ep.serving, key=lambda i: ((sim.kv_used(i, t) + sim.queued_prompt_tokens(i)) / i.cap, i.iid))


def gpu_memory_score(sim, inst, now: float, util_weight: float = 0.5) -> float:
    """The paper's MU score of ``inst`` at ``now``: w x busy (1 with any unfinished request, else 0)
    + (1 - w) x KV in use / capacity (running requests only)."""
    busy = 1.0 if sim.request_count(inst) > 0 else 0.0
    return util_weight * busy + (1.0 - util_weight) * sim.kv_used(inst, now) / inst.cap


@register(PolicyKind.INSTANCE_ROUTER, "gpu-memory-usage")
class GpuMemoryUsage(InstanceRouter):
    """The paper's MU: the serving instance with the lowest weighted average of GPU utilisation (1 with any
    unfinished request, else 0) and KV in use / capacity (running requests only; queued prompts ignored), weights
    ``mu_util_weight`` / 1 - it (knob, default 0.5: the paper gives none); ties: the lower instance id."""

    class Params(PolicyParams):
        mu_util_weight: float = knob(0.5, "weight of GPU utilisation (busy or not) against KV in use / capacity",
                                     ge=0, le=1)

    def __init__(self, sim, params: dict) -> None:
        super().__init__(sim, params)
        self.w = self.Params.read(params).mu_util_weight

    def choose(self, ep):
        t = self.view.now
        return min(ep.serving, key=lambda i: (gpu_memory_score(self.view, i, t, self.w), i.iid))


@register(PolicyKind.AUTOSCALER, "llumnix")
class LlumnixScaler(Autoscaler):
    """Average-freeness scaling: every ``interval_s`` (10), +1 instance below ``scale_up_below`` (10), -1 above
    ``scale_down_above`` (60), within the endpoint's min/max, one instance at a time."""
    stream_safe = True

    class Params(PolicyParams):
        interval_s: float = knob(10.0, "period of the scaling decision (s)", gt=0)
        scale_up_below: float = knob(10.0, "add an instance when the average freeness (blocks per request) is "
                                           "below this")
        scale_down_above: float = knob(60.0, "remove an instance when the average freeness is above this")
        block_tokens: int = knob(BLOCK_TOKENS, "tokens per KV block (freeness is counted in blocks)", ge=1)
        donate_to_spot: bool = knob(True, "a removed instance joins the region's spot pool (else its VM is freed)")

    def __init__(self, params, rng):
        super().__init__(params, rng)
        k = self.knobs
        self.tick_s = k.interval_s
        self.up = k.scale_up_below
        self.down = k.scale_down_above
        self.block = k.block_tokens
        self.donate = k.donate_to_spot
        self.decisions: list = []  # (t, endpoint, average freeness, action) for tests and reports

    def queued_tokens(self, sim, inst) -> float:
        """KV tokens the requests queued on ``inst`` need (exact sum; a subclass may estimate it)."""
        return sim.queued_prompt_tokens(inst)

    def average_freeness(self, sim, ep, now: float) -> float:
        free = 0.0
        reqs = 0
        for inst in ep.serving:
            f, b = freeness_parts(sim, inst, now, self.block, self.queued_tokens(sim, inst))
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

    class Params(PolicyParams):
        instances: int = knob(..., "instances per endpoint (required)", ge=1)

    def prepare_fleet(self, fleet, workload):
        n = self.knobs.instances
        return fleet.with_endpoints([replace(ep, initial=n, min_instances=n, max_instances=max(n, ep.max_instances))
                                     for ep in fleet.endpoints])
