"""What an autoscaler running beside a vLLM fleet sees, and how its replica count reaches the fleet.

Shared by the industry autoscalers (``hpa/``, ``knative_kpa/``, ``aibrix/``, ``dynamo_planner/``, ``llmd_wva/``):

- ``MetricFeed``: every ``scrape_interval_s`` a scrape of each serving instance's vLLM gauges
  (``vllm:num_requests_running``, ``vllm:num_requests_waiting``, ``vllm:kv_cache_usage_perc``), visible to the
  controller ``metric_lag_s`` later (Prometheus scrape + rule evaluation + adapter cache). Provisioning instances
  report nothing (a pod that has not loaded its model serves no /metrics).
- ``apply_replicas``: a desired count becomes scale-outs (each pays the deployment's start-up figures: spot
  reclaim, or VM acquisition + model load, ``FleetLifecycle.scale_out``) or scale-ins (instances still starting
  are removed first, newest first, as a ReplicaSet deletes unready pods first; then the serving instance with
  the least remaining work drains), within the endpoint's min / max; never below one serving instance (scale to
  zero and the activator that would wake the endpoint are not modelled).
- ``ScrapedScaler``: the autoscaler base: one controller per endpoint, fed the visible samples, asked for a count
  every ``sync_s``; its knobs are its ``Params`` model (policies/params.py); ``decisions`` keeps (t, endpoint,
  current, desired) for timelines and back-tests.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass

from simulations.engine.policies.autoscalers import Autoscaler
from simulations.engine.policies.params import PolicyParams, knob


@dataclass(frozen=True)
class PodSample:
    iid: int
    running: int
    waiting: int
    kv_usage: float  # 0-1


@dataclass(frozen=True)
class EndpointSample:
    t: float
    pods: tuple  # PodSample per serving instance
    starting: int  # instances still provisioning

    @property
    def running(self) -> int:
        return sum(p.running for p in self.pods)

    @property
    def waiting(self) -> int:
        return sum(p.waiting for p in self.pods)

    @property
    def concurrency(self) -> int:
        return self.running + self.waiting

    def total(self, metric: str) -> float:
        """The endpoint's total of ``metric`` (``running``, ``waiting``, ``concurrency``, ``kv``: the sum of the
        pods' KV-cache usage fractions, as ``sum(vllm:kv_cache_usage_perc)``)."""
        if metric == "kv":
            return sum(p.kv_usage for p in self.pods)
        return float(getattr(self, metric))

    def per_pod(self, metric: str) -> float:
        """The mean over the reporting pods (0 without any)."""
        return self.total(metric) / len(self.pods) if self.pods else 0.0


def scrape(sim, ep, now: float) -> EndpointSample:
    pods = []
    for inst in ep.serving:
        n = sim.request_count(inst)
        pods.append(PodSample(iid=inst.iid, running=inst.B, waiting=n - inst.B, kv_usage=sim.kv_used(inst, now) / inst.cap))
    return EndpointSample(t=now, pods=tuple(pods), starting=ep.n_provisioning)


class MetricFeed:
    """Samples per endpoint, handed to the controller once they are ``lag_s`` old."""

    def __init__(self, lag_s: float) -> None:
        self.lag_s = lag_s
        self.pending: dict = {}  # endpoint name -> deque of samples not yet visible

    def record(self, sample: EndpointSample, endpoint: str) -> None:
        self.pending.setdefault(endpoint, deque()).append(sample)

    def visible(self, endpoint: str, now: float) -> list:
        """Samples that became visible by ``now`` since the last call, oldest first."""
        q = self.pending.get(endpoint)
        out = []
        while q and q[0].t <= now - self.lag_s + 1e-9:
            out.append(q.popleft())
        return out


def apply_replicas(sim, ep, desired: int, now: float, donate: bool = True) -> int:
    """Move the endpoint's active count (serving + starting) to ``desired`` within its min / max; the new count."""
    desired = max(ep.min_instances, min(ep.max_instances, int(desired)))
    active = ep.n_active
    while active < desired:
        if sim.scale_out(ep, now) is None:
            break  # no capacity left (recorded by the fleet)
        active += 1
    while active > desired and ep.provisioning:
        sim.drain(ep.provisioning[-1], now, donate=donate)
        active -= 1
    while active > desired:
        if sim.scale_in(ep, now, donate=donate) is None:  # never the last one: scale to zero is not modelled
            break
        active -= 1
    return ep.n_active


class ScrapeParams(PolicyParams):
    """Knobs every industry autoscaler has: what it sees and when."""

    scrape_interval_s: float = knob(15.0, "seconds between metric scrapes", gt=0, le=3600)
    metric_lag_s: float = knob(0.0, "seconds before a scrape is visible to the controller", ge=0, le=3600)
    sync_s: float = knob(15.0, "seconds between the controller's decisions", gt=0, le=3600)
    donate_to_spot: bool = knob(True, "released instances return to the region's spot pool")


class ScrapedScaler(Autoscaler):
    """Base of the industry autoscalers: scrape, feed, decide every ``sync_s``, apply. Subclasses set
    ``Params`` and implement ``make_controller(ep)``, ``feed(ctrl, sample)`` and ``decide(ctrl, ep, now)``
    (-> desired count or None to keep the current one)."""
    Params: type[ScrapeParams] = ScrapeParams
    stream_safe = False

    def __init__(self, params, rng):
        super().__init__(params, rng)
        self.p = self.knobs
        self.tick_s = min(self.p.scrape_interval_s, self.p.sync_s)
        self.feed_ = MetricFeed(self.p.metric_lag_s)
        self.controllers: dict = {}
        self.next_scrape = 0.0
        self.next_sync = self.p.sync_s
        self.decisions: list = []  # (t, endpoint, current, desired)

    def make_controller(self, ep):
        raise NotImplementedError

    def feed(self, ctrl, sample: EndpointSample) -> None:
        raise NotImplementedError

    def decide(self, ctrl, ep, now: float) -> int | None:
        raise NotImplementedError

    def on_start(self, sim, now):
        for ep in sim.endpoints:
            self.controllers[ep.name] = self.make_controller(ep)

    def on_tick(self, sim, now):
        if now >= self.next_scrape - 1e-9:
            for ep in sim.endpoints:
                self.feed_.record(scrape(sim, ep, now), ep.name)
            self.next_scrape += self.p.scrape_interval_s
        if now >= self.next_sync - 1e-9:
            self.next_sync += self.p.sync_s
            for ep in sim.endpoints:
                ctrl = self.controllers[ep.name]
                for sample in self.feed_.visible(ep.name, now):
                    self.feed(ctrl, sample)
                desired = self.decide(ctrl, ep, now)
                if desired is None:
                    continue
                current = ep.n_active
                if desired != current:
                    apply_replicas(sim, ep, desired, now, donate=self.p.donate_to_spot)
                    self.decisions.append((now, ep.name, current, int(desired)))
