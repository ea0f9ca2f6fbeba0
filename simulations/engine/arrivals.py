"""Arrivals and routing: region -> endpoint -> instance, inter-region network delay, and the fused arrival
path for the stock policy stack (one evaluation of the instances' decode progress shared by the region
router, the reactive autoscaler and join-the-shortest-queue).

Compiled build: compiled with Cython by ``python -m simulations.engine.build`` (declarations in the
matching .pxd; ``@cython.locals`` types the hot locals and is inert in Python). The same source runs as
plain Python when there is no fresh build (accel.py); results are identical.
"""

from __future__ import annotations

import cython

from simulations.engine.batching import InstanceEngine
from simulations.engine.config import TIER_INDEX, TIERS
from simulations.engine.entities import Endpoint, Instance, decode_iters_done
from simulations.engine.state import EV_DELIVER

NIW = TIER_INDEX["NIW"]
_MASK64 = (1 << 64) - 1


def _splitmix64(x: int) -> int:
    x = (x + 0x9E3779B97F4A7C15) & _MASK64
    x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & _MASK64
    x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & _MASK64
    return x ^ (x >> 31)


class NetworkDelays:
    """Inter-region delay of request ``rid``: ``delays[rid]``, a counter-based draw (splitmix64 of the run's
    key and rid) from the mixture ``[(prob, low_s, high_s), ...]``. Deterministic per request whatever the
    order of use, and no per-request storage."""

    def __init__(self, bins, key: int) -> None:
        total = sum(b[0] for b in bins)
        self.cum = []
        acc = 0.0
        for p, lo, hi in bins:
            acc += p / total
            self.cum.append((acc, lo, hi))
        self.key = key

    def __getitem__(self, rid: int) -> float:
        h = _splitmix64(self.key ^ (rid * 0x9E3779B97F4A7C15 & _MASK64))
        u_bin = (h >> 32) / 4294967296.0
        u = (h & 0xFFFFFFFF) / 4294967296.0
        for acc, lo, hi in self.cum:
            if u_bin < acc:
                return lo + (hi - lo) * u
        acc, lo, hi = self.cum[-1]
        return lo + (hi - lo) * u


class RequestPath(InstanceEngine):
    """The request path: ``_arrive`` (or the fused ``_arrive_fast``) -> ``_deliver`` -> ``_enqueue``."""

    def _build_candidates(self):
        """(region, model, tier) -> endpoints eligible for that tier (siloed pools split IW / NIW)."""
        self._cands = {}
        for ep in self.endpoints:
            for tier in range(len(TIERS)):
                if ep.pool == "all" or (ep.pool == "niw") == (tier == NIW):
                    self._cands.setdefault((ep.region_idx, ep.model_idx, tier), []).append(ep)

    def candidates(self, region: int, model: int, tier: int):
        return self._cands.get((region, model, tier))


    def _arrive(self, rid: int, t: float) -> None:
        origin = self.req_region[rid]
        eps = self.region_router.choose(self.req_model[rid], origin, self.req_tier[rid])
        if not eps:
            self._drop(rid, "no_endpoint")
            return
        if self._route_ctx:
            eps = self._route_by_context(rid, eps, origin)
        ep = eps[0] if len(eps) == 1 else self.endpoint_router.choose(eps)
        if self.net_all or ep.region_idx != origin:
            self.push(t + self.net_delay[rid], EV_DELIVER, rid, ep.eid)
        else:
            self._deliver(rid, ep, t)

    def _setup_fast_arrive(self) -> bool:
        """Bind the fused arrival path (``_arrive_fast``) when the stock policy stack is in use (SageServe region
        router, JSQ-by-tokens instance router, any endpoint router, any autoscaler) and no policy wrapped the
        request path; False otherwise (the loop then calls ``_arrive``)."""
        from simulations.engine.policies.autoscalers import ReactiveUnified
        from simulations.engine.policies.routers import JoinShortestQueueTokens, PreferenceThresholdRouter

        rr = self.region_router
        if self._route_ctx:
            return False  # routing by context limit goes through _arrive
        if type(rr) is not PreferenceThresholdRouter or type(self.instance_router) is not JoinShortestQueueTokens:
            return False
        if "_arrive" in self.__dict__ or "_deliver" in self.__dict__ or "_enqueue" in self.__dict__:
            return False  # a policy wrapped the request path
        autoscaler = self.autoscaler
        self._generic_arrive = self._arrive
        self._rr_cache = rr._cache
        self._thr = rr.threshold
        self._ep_choose = self.endpoint_router.choose
        self._inst_choose = self.instance_router.choose
        self._net_delay = self.net_delay
        self._autoscaler = autoscaler
        self._hook = bool(autoscaler.wants_request_hook)
        self._reactive = type(autoscaler) is ReactiveUnified
        self._cooldown = getattr(autoscaler, "cooldown", 0.0)
        self._act = autoscaler._act if self._reactive else None
        self._a_hi = getattr(autoscaler, "hi", 0.0)
        self._a_lo = getattr(autoscaler, "lo", 0.0)
        self._scaling_events = self.scaling_events
        return True

    @cython.locals(origin=cython.int, model=cython.int, tier=cython.int, ep0=Endpoint, ep=Endpoint,
                   inst=Instance, cand_inst=Instance, kv=cython.longlong, k=cython.longlong,
                   cap=cython.longlong, v0=cython.double, v=cython.double, u=cython.double, best_u=cython.double,
                   w=cython.longlong, best_w=cython.longlong, j=cython.Py_ssize_t, need=cython.longlong,
                   n_ev=cython.Py_ssize_t, have_k=cython.bint, k_inst=cython.longlong, shared=cython.bint,
                   serving=list, ks=list)
    def _arrive_fast(self, rid, t: float):
        """``_arrive`` -> ``_deliver`` -> ``_enqueue`` for the stock policy stack, computed once: the decode
        progress of each serving instance of the origin endpoint at time t is evaluated once and shared by the
        region router's utilisation, the reactive autoscaler's check and the JSQ choice (nothing changes between
        them unless the autoscaler scales, in which case the shared values are recomputed). Same decisions."""
        origin = self._region[rid]
        model = self._model[rid]
        tier = self._tier[rid]
        lists = self._rr_cache.get((origin, model, tier))
        if lists is None:  # first request of its kind: the router builds its cache
            return self._generic_arrive(rid, t)
        # utilisation of the first candidate endpoint (and its instances' decode progress), once
        ep0 = lists[0][0] if lists else None
        shared = False
        ks = None
        v0 = 2.0
        if ep0 is not None:
            shared = True
            ks = []
            kv = ep0.kv_sum
            for inst in ep0.serving:
                k = 0
                if inst.phase == 2 and inst.seg_n > 1:  # DECODE run: iterations done by t
                    k = decode_iters_done(inst, t)
                    kv += inst.seg_B * k
                ks.append(k)
            cap = ep0.cap_sum
            v0 = kv * ep0.sig / cap if cap else 1.0  # the scaling signal (Endpoint.util_at)
        # region router (PreferenceThresholdRouter.choose)
        best = None
        best_u = 1e300  # above any utilisation (the signal may exceed 1, issue 19)
        eps = None
        for cand in lists:
            u = 1e300
            for ep in cand:
                v = v0 if ep is ep0 else ep.util_at(t)
                if v < u:
                    u = v
            if u < self._thr:
                eps = cand
                break
            if u < best_u:
                best, best_u = cand, u
        else:
            eps = best
        if not eps:
            self._drop(rid, "no_endpoint")
            return
        ep = eps[0] if len(eps) == 1 else self._ep_choose(eps)
        if self.net_all or ep.region_idx != origin:
            self.push(t + self._net_delay[rid], EV_DELIVER, rid, ep.eid)
            return
        # _deliver
        self._served_ep[rid] = ep.eid
        if self._hook:
            if self._reactive:
                if not t - ep.last_scale_t < self._cooldown:
                    u = v0 if ep is ep0 else ep.util_at(t)
                    if u > self._a_hi or u < self._a_lo:  # else _act does nothing
                        n_ev = len(self._scaling_events)
                        self._act(self, ep, t, u)
                        if len(self._scaling_events) != n_ev:
                            shared = False  # the fleet may have changed
            else:
                self._autoscaler.on_request(self, ep, t, rid)
                shared = False
        serving = ep.serving
        if not serving:
            ep.backlog.append(rid)
            return
        have_k = False  # whether k_inst (decode iterations the chosen instance has done by t) is known
        k_inst = 0
        if not shared or ep is not ep0:
            inst = serving[0] if len(serving) == 1 else self._inst_choose(ep)
        elif len(serving) == 1:
            inst = serving[0]
            k_inst = ks[0]
            have_k = True
        else:  # JoinShortestQueueTokens.choose with the shared progress
            inst = None
            best_w = 0
            have_k = True
            for j in range(len(serving)):
                cand_inst = serving[j]
                w = cand_inst.work
                k = ks[j]
                if k:
                    w -= cand_inst.seg_B * k
                if inst is None or w < best_w:
                    inst, best_w, k_inst = cand_inst, w, k
        # _enqueue
        need = self._inp[rid] + self._gen[rid]
        if need >= inst.adm:
            self._refuse(inst, rid, need)
            return
        self._join_queue(inst, rid, t, need, k_inst if have_k else -1)


    def _deliver(self, rid: int, ep: Endpoint, t: float) -> None:
        self.served_ep[rid] = ep.eid
        if self.autoscaler.wants_request_hook:
            self.autoscaler.on_request(self, ep, t, rid)
        if not ep.serving:
            ep.backlog.append(rid)
            return
        self._enqueue(self.instance_router.choose(ep), rid, t)

    def _enqueue(self, inst: Instance, rid: int, t: float) -> None:
        need = self.req_inp[rid] + self.gen[rid]
        if need >= inst.adm:
            self._refuse(inst, rid, need)
            return
        self._join_queue(inst, rid, t, need, -1)

    def _refuse(self, inst: Instance, rid: int, need: int) -> None:
        """A request ``inst`` can never serve (``need >= inst.adm``): beyond the deployment's context limit
        (``engine.over_context`` reject / route; vLLM refuses a prompt longer than max_model_len), or beyond what the
        KV cache can hold above the admission watermark (vLLM's AllocStatus.NEVER)."""
        if need >= inst.cap or need > inst.cap - self.wm_tokens(inst):
            self._drop(rid, "prompt_exceeds_kv_capacity")
        else:
            self._drop(rid, "prompt_exceeds_max_model_len")

    def _setup_admission_bounds(self) -> None:
        """Each endpoint's ``adm``: the smallest prompt (+ generated) tokens refused at routing (``_refuse``)."""
        over = self.engine.over_context
        for ep in self.endpoints:
            cap = ep.spec.kv_capacity_tokens
            w = int(self.kv_wm * cap)
            adm = cap if w == 0 else min(cap, cap - w + 1)
            lim = ep.spec.max_model_len
            if lim and over in ("reject", "route") and lim + 1 < adm:
                adm = lim + 1  # vLLM refuses a prompt longer than max_model_len
            ep.adm = adm

    def _route_by_context(self, rid: int, eps, origin: int):
        """``engine.over_context = "route"``: of the endpoints the region router chose, those whose context limit
        fits the request; if none, every endpoint of the model and tier (any region) that fits, in region order;
        if none fits, the router's choice (the request is then refused there)."""
        need = self.req_inp[rid]
        fit = [ep for ep in eps if not ep.spec.max_model_len or need <= ep.spec.max_model_len]
        if fit:
            return fit
        model, tier = self.req_model[rid], self.req_tier[rid]
        fit = [ep for ep in self.endpoints if ep.model_idx == model and (ep.pool == "all" or (ep.pool == "niw") == (
            tier == NIW)) and (not ep.spec.max_model_len or need <= ep.spec.max_model_len)]
        return fit[:1] if fit else eps
