"""The control API policies call (autoscalers, routers, queue managers): reads of the fleet and of the past,
and hand-over of held requests. Policies use only what is here and in fleet.py's public methods.

Compiled build: compiled with Cython by ``python -m simulations.engine.build`` (declarations in the
matching .pxd; ``@cython.locals`` types the hot locals and is inert in Python). The same source runs as
plain Python when there is no fresh build (accel.py); results are identical.
"""

from __future__ import annotations

from simulations.engine.entities import Endpoint
from simulations.engine.fleet import FleetLifecycle
from simulations.engine.state import EV_DELIVER


class PolicyAPI(FleetLifecycle):
    """What a policy may read and call on ``sim`` (besides the fleet's ``scale_out`` / ``scale_in`` / ``drain``)."""

    def endpoints_for(self, region: str, model: str) -> list[Endpoint]:
        return [ep for ep in self.endpoints if ep.region == region and ep.model == model]

    def observed(self, now: float | None = None) -> dict:
        """Arrivals seen so far (never the future): numpy views of the workload up to the current time."""
        k = self.n_arrived
        w = self.workload
        return {"arrival_s": w.arrival_s[:k], "input_tokens": w.input_tokens[:k],
                "output_tokens": w.output_tokens[:k], "tier": w.tier[:k], "model": w.model[:k],
                "region": w.region[:k], "model_names": w.model_names, "region_names": w.region_names}

    def spot_count(self, region: str, model: str | None = None) -> int:
        pool = self.spot[self.region_names.index(region)]
        return pool.get(model, 0) if model is not None else sum(pool.values())


    def send(self, rid: int, ep: Endpoint, t: float) -> None:
        """Hand a request (held by a policy, e.g. a queue manager) to endpoint ``ep`` at time ``t``, paying the
        inter-region network delay when ``ep`` is outside the request's origin region."""
        if self.net_all or ep.region_idx != self.req_region[rid]:
            self.push(t + self.net_delay[rid], EV_DELIVER, rid, ep.eid)
        else:
            self._deliver(rid, ep, t)
