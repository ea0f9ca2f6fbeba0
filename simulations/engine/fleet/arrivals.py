"""Arrivals and routing: region -> endpoint -> instance, inter-region network delay, and the fused arrival
path for the stock policy stack (one evaluation of the instances' decode progress shared by the region
router, the reactive autoscaler and join-the-shortest-queue).

Compiled build: compiled with Cython by ``python -m simulations.engine.build`` (declarations in the
matching .pxd; ``@cython.locals`` types the hot locals and is inert in Python). The same source runs as
plain Python when there is no fresh build (accel.py); results are identical.
"""

from __future__ import annotations

import os

import cython

from simulations.engine.core.entities import Endpoint, Instance
from simulations.engine.core.state import EV_DELIVER, RunState  # noqa: F401 - RunState types a field when compiled
from simulations.engine.fleet.fleetindex import EndpointIndex, jsq_scan
from simulations.engine.instance.batching import InstanceEngine  # noqa: F401 - types a field when compiled
from simulations.engine.scenario.config import TIER_INDEX, TIERS

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


class RequestPath:
    """The request path: ``_arrive`` (or the fused ``_arrive_fast``) -> ``_deliver`` -> ``_enqueue``; a part the
    Simulator owns (``sim.routing``). It reads the run state (``st``) and admits requests into the instance engine
    (``ie``), both typed when compiled, so the fused path's reads and calls stay C reads and calls."""

    def __init__(self, sim) -> None:
        self.sim = sim
        self.st = sim.state
        self.ie = sim.instance_engine
        self._bind_views()
        self._build_candidates()
        self._route_ctx = sim.engine.over_context == "route" and any(ep.spec.max_model_len for ep in sim.endpoints)
        self._setup_admission_bounds()  # Endpoint.adm: watermark and context limit

    def _bind_views(self):
        """The fused path's own handles on the per-request arrays it reads (the instance engine's typed views: the
        same buffers); rebound whenever the simulator rebinds the state's (``Simulator._bind_views``)."""
        self._region, self._model, self._tier = self.st._region, self.st._model, self.st._tier
        self._inp, self._gen, self._served_ep = self.st._inp, self.st._gen, self.st._served_ep

    def _build_candidates(self):
        """(region, model, tier) -> endpoints eligible for that tier (siloed pools split IW / NIW)."""
        self._cands = {}
        for ep in self.sim.endpoints:
            if ep.pool == "decode":
                continue  # a disaggregated endpoint's decode pool gets requests from its prefill pool only
            for tier in range(len(TIERS)):
                if ep.pool == "all" or ep.pool == "prefill" or (ep.pool == "niw") == (tier == NIW):
                    self._cands.setdefault((ep.region_idx, ep.model_idx, tier), []).append(ep)

    def candidates(self, region: int, model: int, tier: int):
        return self._cands.get((region, model, tier))


    def _arrive(self, rid: int, t: float) -> None:
        sim = self.sim
        origin = self.st.req_region[rid]
        eps = sim.region_router.choose(self.st.req_model[rid], origin, self.st.req_tier[rid])
        if not eps:
            self.st._drop(rid, "no_endpoint")
            return
        if self._route_ctx:
            eps = self._route_by_context(rid, eps, origin)
        ep = eps[0] if len(eps) == 1 else sim.endpoint_router.choose(eps)
        if self.st.net_all or ep.region_idx != origin:
            self.st.push(t + self.st.net_delay[rid], EV_DELIVER, rid, ep.eid)
        else:
            self._deliver(rid, ep, t)

    def _setup_fast_arrive(self) -> bool:
        """Bind the fused arrival path (``_arrive_fast``) when the stock policy stack is in use (SageServe region
        router, JSQ-by-tokens instance router, any endpoint router, any autoscaler) and no policy wrapped the
        request path; False otherwise (the loop then calls ``_arrive``)."""
        from simulations.engine.policies.autoscalers import ReactiveSiloed, ReactiveUnified
        from simulations.engine.policies.routers import JoinShortestQueueTokens, PreferenceThresholdRouter

        sim = self.sim
        rr = sim.region_router
        if self._route_ctx:
            return False  # routing by context limit goes through _arrive
        if type(rr) is not PreferenceThresholdRouter or type(sim.instance_router) is not JoinShortestQueueTokens:
            return False
        autoscaler = sim.autoscaler
        self._generic_arrive = self._arrive
        self._rr_cache = rr._cache
        self._thr = rr.threshold
        self._ep_choose = sim.endpoint_router.choose
        self._inst_choose = sim.instance_router.choose
        self._net_delay = self.st.net_delay
        self._autoscaler = autoscaler
        self._hook = bool(autoscaler.wants_request_hook)
        # the reactive heuristic's decision inline (ReactiveSiloed only changes the fleet it starts from)
        self._reactive = type(autoscaler) is ReactiveUnified or type(autoscaler) is ReactiveSiloed
        self._cooldown = getattr(autoscaler, "cooldown", 0.0)
        self._act = autoscaler._act if self._reactive else None
        self._a_hi = getattr(autoscaler, "hi", 0.0)
        self._a_lo = getattr(autoscaler, "lo", 0.0)
        self._scaling_events = sim.scaling_events
        self._ix_check = os.environ.get("PLANNER_ENGINE_INDEX_CHECK", "") not in ("", "0")
        # the region router's candidate lists by (origin, model, tier), filled from its cache as it fills
        self._n_models = len(sim.model_names)
        self._lists_by_key = [None] * (len(sim.region_names) * self._n_models * 3)
        for ep in sim.endpoints:  # the per-endpoint indexes (fleetindex.py), kept current from here on
            ep.ix = EndpointIndex(ep, self.st.now)
        return True

    @cython.locals(ep=Endpoint, ix=EndpointIndex, lo=cython.double, hi=cython.double, v=cython.double)
    def _util_below(self, ep, t: float, thr: float):
        """Whether ``ep.util_at(t) < thr``, settled by the index's bounds when they can (else the exact value)."""
        ix = ep.ix
        if ix is not None and not ep.smode:  # the bounds cover the plain KV signal only (modes: exact)
            lo, hi = ix.util_bounds(t)
            if hi < thr:
                v = -1.0
            elif lo >= thr:
                v = 2.0 * thr + 1.0
            else:
                v = ep.util_at(t)
            if self._ix_check and (ep.util_at(t) < thr) != (v < thr):
                raise AssertionError(f"utilisation bounds wrong at t={t}: {lo} {hi} vs {ep.util_at(t)}")
            return v < thr
        return ep.util_at(t) < thr

    @cython.locals(origin=cython.int, model=cython.int, tier=cython.int, ep=Endpoint, ix=EndpointIndex,
                   inst=Instance, u=cython.double, v=cython.double, best_u=cython.double, lo=cython.double,
                   hi=cython.double, k_inst=cython.longlong, need=cython.longlong, n_ev=cython.Py_ssize_t,
                   below=cython.bint, serving=list, other=Instance)
    def _arrive_fast(self, rid, t: float):
        """``_arrive`` -> ``_deliver`` -> ``_enqueue`` for the stock policy stack with the endpoints' indexes
        (fleetindex.py): the region router's threshold test and the reactive autoscaler's band test are settled by
        O(1) utilisation bounds when they can (else the exact value), JSQ walks the endpoint's heap. Same decisions
        as the scans they replace (``PLANNER_ENGINE_INDEX_CHECK=1`` verifies every one)."""
        origin = self._region[rid]
        model = self._model[rid]
        tier = self._tier[rid]
        lists = self._lists_by_key[(origin * self._n_models + model) * 3 + tier]
        if lists is None:
            lists = self._rr_cache.get((origin, model, tier))
            if lists is None:  # first request of its kind: the router builds its cache
                return self._generic_arrive(rid, t)
            self._lists_by_key[(origin * self._n_models + model) * 3 + tier] = lists
        # region router (PreferenceThresholdRouter.choose): the first list with an endpoint under the threshold,
        # else the least utilised list (a single list is chosen either way)
        eps = None
        if len(lists) == 1:
            eps = lists[0]
        else:
            for cand in lists:
                below = False
                for ep in cand:
                    if self._util_below(ep, t, self._thr):
                        below = True
                        break
                if below:
                    eps = cand
                    break
            if eps is None:
                best_u = 1e300  # above any utilisation (the signal may exceed 1)
                for cand in lists:
                    u = 1e300
                    for ep in cand:
                        v = ep.util_at(t)
                        if v < u:
                            u = v
                    if u < best_u:
                        eps, best_u = cand, u
        if not eps:
            self.st._drop(rid, "no_endpoint")
            return
        ep = eps[0] if len(eps) == 1 else self._ep_choose(eps)
        if self.st.net_all or ep.region_idx != origin:
            self.st.push(t + self._net_delay[rid], EV_DELIVER, rid, ep.eid)
            return
        # _deliver
        self._served_ep[rid] = ep.eid
        if self._hook:
            self._request_hook(ep, t, rid)
        serving = ep.serving
        if not serving:
            ep.backlog.append(rid)
            return
        ix = ep.ix
        inst, k_inst = ix.jsq(t)
        if self._ix_check:
            self._check_jsq(ep, t, inst, k_inst)
        # _enqueue
        need = self._inp[rid] + self._gen[rid]
        if need >= inst.adm:
            self._refuse(inst, rid, need)
            return
        if self.ie._pd is not None:  # Splitwise's mixed pool may give the prompt to a decode instance (disagg.py)
            other = self.ie._pd.route(inst, rid, need, t)
            if other is not inst:
                self.ie._join_queue(other, rid, t, need, -1)
                other.endpoint.ix.touch(other, t)
                return
        self.ie._join_queue(inst, rid, t, need, k_inst)
        ix.touch(inst, t)


    @cython.locals(ix=EndpointIndex, u=cython.double, lo=cython.double, hi=cython.double, n_srv=cython.Py_ssize_t,
                   n_prov=cython.Py_ssize_t, can_out=cython.bint, can_in=cython.bint)
    def _request_hook(self, ep: Endpoint, t: float, rid):
        """The autoscaler's per-request hook on the fused path: the reactive heuristic's band test inline (settled by
        the index's utilisation bounds when it can), any other autoscaler's ``on_request``."""
        if not self._reactive:
            self._autoscaler.on_request(self.sim.policy_view, ep, t, rid)
            return
        if t - ep.last_scale_t < self._cooldown:
            return
        # ReactiveUnified._act scales out only if u > hi and the endpoint is below its max, in only if u < lo, more
        # than max(1, min) serve and none is provisioning: when neither can happen (an endpoint at its floor under
        # light load, the common case) the utilisation is not needed
        n_srv = len(ep.serving)
        n_prov = len(ep.provisioning)
        can_out = n_srv + n_prov < ep.max_instances
        can_in = n_prov == 0 and n_srv > max(1, ep.min_instances)
        if not (can_out or can_in):
            return
        ix = ep.ix
        if ep.smode:  # the index bounds cover the plain KV signal only: no shortcut
            lo, hi = -1e300, 1e300  # (never "surely inside the band")
        else:
            lo, hi = ix.util_bounds(t)
        # else surely no action: _act would do nothing
        if (can_out and not hi <= self._a_hi) or (can_in and not lo >= self._a_lo):
            u = ep.util_at(t)
            if u > self._a_hi or u < self._a_lo:
                self._act(self.sim.policy_view, ep, t, u)
        elif self._ix_check:
            u = ep.util_at(t)
            if (can_out and u > self._a_hi) or (can_in and u < self._a_lo):
                raise AssertionError(f"utilisation band bounds wrong at t={t}")

    def _check_jsq(self, ep, t, inst, k_inst):
        want = jsq_scan(ep.serving, t)
        if want[0] is not inst or want[1] != k_inst:
            raise AssertionError(f"JSQ index chose instance {inst.iid} at t={t}, the scan {want[0].iid}")

    def _deliver(self, rid: int, ep: Endpoint, t: float) -> None:
        sim = self.sim
        self.st.served_ep[rid] = ep.eid
        if sim.autoscaler.wants_request_hook:
            sim.autoscaler.on_request(sim.policy_view, ep, t, rid)
        if not ep.serving:
            ep.backlog.append(rid)
            return
        self._enqueue(sim.instance_router.choose(ep), rid, t)

    def _enqueue(self, inst: Instance, rid: int, t: float) -> None:
        need = self.st.req_inp[rid] + self.st.gen[rid]
        if need >= inst.adm:
            self._refuse(inst, rid, need)
            return
        if self.ie._pd is not None:  # Splitwise's mixed pool (disagg.py)
            inst = self.ie._pd.route(inst, rid, need, t)
        self.ie._join_queue(inst, rid, t, need, -1)
        if inst.endpoint.ix is not None:
            inst.endpoint.ix.touch(inst, t)

    def _refuse(self, inst: Instance, rid: int, need: int) -> None:
        """A request ``inst`` can never serve (``need >= inst.adm``): beyond the deployment's context limit
        (``engine.over_context`` reject / route; vLLM refuses a prompt longer than max_model_len), or beyond what the
        KV cache can hold above the admission watermark (vLLM's AllocStatus.NEVER)."""
        if need >= inst.cap or need > inst.cap - self.ie.wm_tokens(inst) or (
                self.ie._pd is not None and self.ie._pd.beyond_decode(inst, need)):
            self.st._drop(rid, "prompt_exceeds_kv_capacity")
        else:
            self.st._drop(rid, "prompt_exceeds_max_model_len")

    def _setup_admission_bounds(self) -> None:
        """Each endpoint's ``adm``: the smallest prompt (+ generated) tokens refused at routing (``_refuse``)."""
        sim = self.sim
        over = sim.engine.over_context
        for ep in sim.endpoints:
            cap = ep.spec.kv_capacity_tokens
            w = int(self.ie.kv_wm * cap)
            adm = cap if w == 0 else min(cap, cap - w + 1)
            lim = ep.spec.max_model_len
            if lim and over in ("reject", "route") and lim + 1 < adm:
                adm = lim + 1  # vLLM refuses a prompt longer than max_model_len
            ep.adm = adm

    def _route_by_context(self, rid: int, eps, origin: int):
        """``engine.over_context = "route"``: of the endpoints the region router chose, those whose context limit
        fits the request; if none, every endpoint of the model and tier (any region) that fits, in region order;
        if none fits, the router's choice (the request is then refused there)."""
        sim = self.sim
        need = self.st.req_inp[rid]
        fit = [ep for ep in eps if not ep.spec.max_model_len or need <= ep.spec.max_model_len]
        if fit:
            return fit
        model, tier = self.st.req_model[rid], self.st.req_tier[rid]
        fit = [ep for ep in sim.endpoints if ep.model_idx == model and ep.pool != "decode" and (ep.pool in ("all", "prefill") or (ep.pool == "niw") == (
            tier == NIW)) and (not ep.spec.max_model_len or need <= ep.spec.max_model_len)]
        return fit[:1] if fit else eps
