"""Routers (SageServe 6.1): region -> endpoint -> instance. Each is a small class with ``choose``.

Candidates with no serving instance report utilisation 1.0, so they are avoided when anything else exists
(unless the scaling signal of the others, which may exceed 1 with ``signal_kv_tokens``, is higher).
"""

from __future__ import annotations

from typing import ClassVar

from simulations.engine.core.entities import DECODE, decode_iters_done
from simulations.engine.policies.params import PolicyParams, knob
from simulations.engine.policies.registry import PolicyKind, register

# "no candidate yet": above any utilisation. A scaling signal that counts KV larger than it is
# (deployment.signal_kv_tokens) can exceed 1 (and 2), so the sentinel must not be a small number.
NO_UTIL = 1e300


class RegionRouter:
    stream_safe = True  # routes one request at a time, keeps no request id (window.py)

    class Params(PolicyParams):
        preference: dict[str, list[str]] | None = knob(
            None, "per origin region, the regions to try in order (default: the origin first, then the others)")

    def __init__(self, sim, params: dict) -> None:
        self.view = sim
        # the strategy's region_threshold (not a knob: the simulator passes it with the params)
        self.threshold = float(params.get("region_threshold", 0.70))
        n = len(sim.region_names)
        order = self.Params.read(params).preference or {}
        # preference[origin] = region indices in order; default: origin first, then the others by index
        self.preference = []
        for r in range(n):
            names = order.get(sim.region_names[r]) if isinstance(order, dict) else None
            if names:
                pref = [sim.region_names.index(x) for x in names if x in sim.region_names]
            else:
                pref = [r] + [x for x in range(n) if x != r]
            self.preference.append(pref)
        self._cache: dict = {}  # (origin, model, tier) -> candidate lists in preference order

    def invalidate(self) -> None:
        """Call after adding or removing endpoints."""
        self._cache.clear()

    def choose(self, model: int, origin: int, tier: int) -> list | None:
        """Return the list of candidate endpoints in the chosen region (or None if the model has none)."""
        raise NotImplementedError


@register(PolicyKind.REGION_ROUTER, "sageserve")
class PreferenceThresholdRouter(RegionRouter):
    """First region in preference order whose utilisation is under the threshold, else the least utilised."""

    def choose(self, model, origin, tier):
        key = (origin, model, tier)
        lists = self._cache.get(key)
        if lists is None:
            lists = [eps for r in self.preference[origin] if (eps := self.view.candidates(r, model, tier))]
            self._cache[key] = lists
        t = self.view.now
        thr = self.threshold
        best = None
        best_u = NO_UTIL
        for eps in lists:
            u = NO_UTIL
            for ep in eps:
                v = ep.util_at(t)
                if v < u:
                    u = v
            if u < thr:
                return eps
            if u < best_u:
                best, best_u = eps, u
        return best


@register(PolicyKind.REGION_ROUTER, "local")
class LocalRouter(RegionRouter):
    """Always the origin region when it hosts the model, else the least utilised region."""

    def choose(self, model, origin, tier):
        eps = self.view.candidates(origin, model, tier)
        if eps:
            return eps
        return PreferenceThresholdRouter.choose(self, model, origin, tier)


@register(PolicyKind.REGION_ROUTER, "round-robin")
class RoundRobinRegionRouter(RegionRouter):
    def __init__(self, sim, params):
        super().__init__(sim, params)
        self.counter = 0

    def choose(self, model, origin, tier):
        n = len(self.view.region_names)
        for _ in range(n):
            r = self.counter % n
            self.counter += 1
            eps = self.view.candidates(r, model, tier)
            if eps:
                return eps
        return None


class EndpointRouter:
    stream_safe = True  # routes one request at a time, keeps no request id (window.py)
    Params: ClassVar[type[PolicyParams]] = PolicyParams  # no knobs

    def __init__(self, sim, params: dict) -> None:
        self.view = sim

    def choose(self, eps: list):
        raise NotImplementedError


@register(PolicyKind.ENDPOINT_ROUTER, "least-utilised")
class LeastUtilisedEndpoint(EndpointRouter):
    def choose(self, eps):
        if len(eps) == 1:
            return eps[0]
        t = self.view.now
        return min(eps, key=lambda ep: ep.util_at(t))


@register(PolicyKind.ENDPOINT_ROUTER, "round-robin")
class RoundRobinEndpoint(EndpointRouter):
    def __init__(self, sim, params):
        super().__init__(sim, params)
        self.counter = 0

    def choose(self, eps):
        self.counter += 1
        return eps[self.counter % len(eps)]


class InstanceRouter:
    stream_safe = True  # routes one request at a time, keeps no request id (window.py)
    Params: ClassVar[type[PolicyParams]] = PolicyParams  # no knobs

    def __init__(self, sim, params: dict) -> None:
        self.view = sim

    def choose(self, ep):
        raise NotImplementedError


def _work(inst):
    return inst.work


def _kv(inst):
    return inst.kv


@register(PolicyKind.INSTANCE_ROUTER, "jsq-tokens")
class JoinShortestQueueTokens(InstanceRouter):
    """Join the shortest queue by remaining tokens (unprefilled prompt + remaining output)."""

    def choose(self, ep):
        serving = ep.serving
        if len(serving) == 1:
            return serving[0]
        if ep.ix is not None:  # the endpoint's JSQ heap (fleetindex.py): the same choice as the scan below
            return ep.ix.jsq(self.view.now)[0]
        t = self.view.now
        best = None
        best_w = None
        for inst in serving:
            w = inst.work
            if inst.phase == DECODE and inst.seg_n > 1:  # count the decode iterations done by now (exact)
                w -= inst.seg_B * decode_iters_done(inst, t)
            if best_w is None or w < best_w:
                best, best_w = inst, w
        return best


@register(PolicyKind.INSTANCE_ROUTER, "least-kv")
class LeastKV(InstanceRouter):
    def choose(self, ep):
        return min(ep.serving, key=_kv)


@register(PolicyKind.INSTANCE_ROUTER, "round-robin")
class RoundRobinInstance(InstanceRouter):
    def choose(self, ep):
        ep.rr += 1
        return ep.serving[ep.rr % len(ep.serving)]
