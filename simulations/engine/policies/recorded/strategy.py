"""``as-run``: replay a recorded replica timeline (an advisory back-test's "as run" run).

``params.replicas``: ``{endpoint name: [[t_s, count], ...]}`` with t_s in simulated seconds, sorted; the count
holds from its time to the next. Each endpoint starts at its count at t = 0 (the first count when the record
starts later) and its active instances (serving + starting) follow the record exactly: a higher count starts
instances that serve after ``startup_s`` (default: the deployment's model load, ``load_same_region_s``: a pod on an
existing node pulls its image and loads its weights), a lower one removes starting instances first, then drains
serving ones. The instances are not drawn from the spot pool or VM capacity (they ran). Endpoints absent from the
record keep the scenario's counts.
"""

from __future__ import annotations

from dataclasses import replace

from simulations.engine.policies.params import knob
from simulations.engine.policies.registry import PolicyKind, register
from simulations.engine.policies.scraped import ScrapedScaler, ScrapeParams
from simulations.engine.scenario.config import ScenarioError


class AsRunParams(ScrapeParams):
    replicas: dict[str, list[list[float]]] = knob(..., "endpoint -> [[t_s, count], ...], sorted by time")
    startup_s: float | None = knob(None, "seconds before a started instance serves", ge=0, le=86400)
    scrape_interval_s: float = knob(1.0, "seconds between metric scrapes", gt=0, le=3600)
    sync_s: float = knob(1.0, "seconds between the controller's decisions", gt=0, le=3600)


def endpoint_name(cfg) -> str:
    """An endpoint config's name as the simulator names it (``region/model[/pool]``)."""
    return f"{cfg.region}/{cfg.model}" + ("" if cfg.pool == "all" else f"/{cfg.pool}")


def count_at(points: list, t: float) -> int:
    """The recorded count holding at ``t`` (the first count before the record starts)."""
    n = points[0][1]
    for ts, c in points:
        if ts <= t:
            n = c
        else:
            break
    return int(n)


@register(PolicyKind.AUTOSCALER, "as-run")
class AsRun(ScrapedScaler):
    """Replicas forced as recorded (an advisory back-test's baseline)."""
    Params = AsRunParams
    tick_s = 1.0

    def __init__(self, params, rng):
        super().__init__(params, rng)
        for name, points in self.p.replicas.items():
            where = f"strategy.params.replicas.{name}"
            if not points or any(len(p) != 2 for p in points):
                raise ScenarioError(where, "must be a non-empty list of [t_s, count] pairs")
            if any(c < 0 or c != int(c) for _, c in points):
                raise ScenarioError(where, "counts must be whole numbers >= 0")
            if any(b[0] < a[0] for a, b in zip(points, points[1:], strict=False)):
                raise ScenarioError(where, "times must be sorted")

    def prepare_fleet(self, fleet, workload):
        out = []
        for ep in fleet.endpoints:
            pts = self.p.replicas.get(endpoint_name(ep))
            if pts is None:
                out.append(ep)
                continue
            top = max(c for _, c in pts)
            out.append(replace(ep, initial=count_at(pts, 0.0), min_instances=0, max_instances=max(top, 1)))
        return fleet.with_endpoints(out)

    def on_start(self, sim, now):
        self.sim = sim

    def on_tick(self, sim, now):
        for ep in sim.endpoints:
            pts = self.p.replicas.get(ep.name)
            if pts is None:
                continue
            want = count_at(pts, now)
            if want != ep.n_active:
                self._apply(sim, ep, want, now)
                self.decisions.append((now, ep.name, ep.n_active, want))

    def _apply(self, sim, ep, want, now):
        delay = self.p.startup_s if self.p.startup_s is not None else ep.spec.startup.load_same_region_s
        while ep.n_active < want:
            sim.add_instance(ep, now, delay, "as-run")
        while ep.n_active > want and ep.provisioning:
            sim.drain(ep.provisioning[-1], now, donate=False)
        while ep.n_active > want:
            if sim.scale_in(ep, now, donate=False, allow_zero=True) is None:
                break
