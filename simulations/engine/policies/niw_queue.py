"""SageServe's NIW Queue Manager (sections 6.1-6.2), Django-free.

NIW requests do not go to an endpoint when they arrive: they wait in a global queue per model (oldest
first). Every ``signal_period_s`` each endpoint that can serve NIW (a unified pool, or a siloed NIW pool)
"signals" its effective memory utilisation U: under ``one_below`` (60 %) the manager sends it one
queued request of its model, under ``two_below`` (50 %) two. A released request older than
``escalate_after_s`` (10 h) gets priority 0 (on par with IW), younger ones priority 1 (admitted only
when no priority-0 request waits). So that the 24 h deadline can still be met when every endpoint stays
busy, a request that reaches 10 h in the queue is released to the least utilised endpoint of its model
regardless of the thresholds (spec section 8 row 20; the paper does not say what happens then).

The manager is driven by an autoscaler: ``bind`` at start, ``offer`` from the autoscaler's ``on_arrival``
hook (the engine's "hold this arrival" extension point) and ``on_tick`` on the autoscaler's tick:
``reactive-unified-niwq`` below is the unified reactive baseline with the queue (SageServe's "Reactive"
in section 7 has it, section 4), and the LT policies (longterm.py) use it too.

An autoscaler that owns a queue sets ``wants_arrival_hook`` and returns ``queue.offer(...)`` from its
``on_arrival``: NIW requests are held, every other request is routed at once.

Options: ``niw_gate`` "kv" (default: the signal above, effective memory utilisation) or "load": the
endpoint's IW input TPS over the trailing ``niw_load_window_s`` (60 s; IW requests the endpoint received, fed by the
owning autoscaler's ``on_request`` through ``note_request``) per serving instance, as a share of the deployment's
theta (its sustainable input TPS), against the same thresholds. The queue also keeps, per endpoint, the NIW input
tokens it released (``released_tps``): LT's ``beta_basis: "released"`` budgets beta on them.
"""

from __future__ import annotations

from collections import deque
from typing import Literal

from simulations.engine.policies.autoscalers import ReactiveUnified
from simulations.engine.policies.params import PolicyParams, knob
from simulations.engine.policies.registry import PolicyKind, register
from simulations.engine.scenario.config import TIER_INDEX

NIW = TIER_INDEX["NIW"]


class NIWQueueParams(PolicyParams):
    niw_one_below: float = knob(0.60, "release one held NIW request per signal to an endpoint below this "
                                      "utilisation", ge=0)
    niw_two_below: float = knob(0.50, "release two below this utilisation", ge=0)
    niw_escalate_after_s: float = knob(36000.0, "a request held this long goes out at priority 0 (s)", ge=0)
    niw_signal_period_s: float = knob(1.0, "period of the endpoints' release signals (s)", gt=0)
    niw_feed: Literal["text", "code"] = knob("text", "'text': the paper (one under 60 %, two under 50 %); 'code': "
                                                     "the authors' simulator (one at <= 50 %, two at 50-60 %)")
    niw_escalate: bool = knob(True, "false: no priority 0 and no forced release at niw_escalate_after_s")
    niw_gate: Literal["kv", "load"] = knob("kv", "'kv': the memory signal; 'load': IW input TPS per serving "
                                                 "instance as a share of theta_tps")
    niw_load_window_s: float = knob(60.0, "trailing window of the 'load' gate (s)", gt=0)


class NIWQueueManager:
    def __init__(self, params: dict | None = None) -> None:
        k = NIWQueueParams.read(params)
        self.one_below = k.niw_one_below
        self.two_below = k.niw_two_below
        self.escalate_after_s = k.niw_escalate_after_s
        self.period_s = k.niw_signal_period_s
        self.feed = k.niw_feed
        self.escalate = k.niw_escalate
        self.gate = k.niw_gate
        self.load_window_s = k.niw_load_window_s
        self._iw: dict[int, deque] = {}  # eid -> (t, input tokens) of IW requests received (gate "load")
        self._iw_sum: dict[int, float] = {}
        self._rel: dict[int, deque] = {}  # eid -> (t, input tokens) of NIW requests released to it
        self.track_released = False  # set by an owner that reads released_tps (LT with beta_basis "released")
        self.queues: dict[int, deque] = {}
        self.held = 0
        self.released = 0
        self.forced = 0
        self.max_len = 0
        self._next_signal = 0.0
        self._turn = 0

    # ------------------------------------------------------------------ wiring
    def bind(self, sim) -> None:
        self.view = sim
        if self.gate == "load":
            missing = [ep.spec.name for ep in sim.endpoints if ep.pool not in ("iw", "decode")
                       and ep.spec.theta_tps <= 0]
            if missing:
                from simulations.engine.scenario.config import ScenarioError

                raise ScenarioError("strategy.params.niw_gate", "'load' needs theta_tps on every deployment that "
                                    f"serves NIW; missing on {', '.join(sorted(set(missing)))}")

    def note_request(self, sim, ep, rid: int, t: float) -> None:
        """An IW request reached endpoint ``ep`` (called by the owning autoscaler's ``on_request``)."""
        if self.gate != "load" or sim.tier_of(rid) == NIW:
            return
        q = self._iw.get(ep.eid)
        if q is None:
            q = self._iw[ep.eid] = deque()
            self._iw_sum[ep.eid] = 0.0
        tok = float(sim.prompt_tokens(rid))
        q.append((t, tok))
        self._iw_sum[ep.eid] += tok

    def load(self, ep, now: float) -> float:
        """IW input TPS per serving instance over the trailing window, as a share of theta (gate "load")."""
        q = self._iw.get(ep.eid)
        s = 0.0
        if q is not None:
            s = self._iw_sum[ep.eid]
            edge = now - self.load_window_s
            while q and q[0][0] < edge:
                s -= q.popleft()[1]
            self._iw_sum[ep.eid] = s
        cap = ep.n_serving * ep.spec.theta_tps
        return s / self.load_window_s / cap if cap > 0 else 1.0

    def busy(self, ep, now: float) -> float:
        """What the release rules compare with the thresholds: the utilisation signal, or the load (niw_gate)."""
        return ep.utilisation if self.gate == "kv" else self.load(ep, now)

    def released_tps(self, ep, now: float, span_s: float = 3600.0) -> float:
        """NIW input TPS released to ``ep`` over the last ``span_s`` (at most the time since the start)."""
        q = self._rel.get(ep.eid)
        if not q:
            return 0.0
        while q and q[0][0] < now - span_s:
            q.popleft()
        return sum(tok for _, tok in q) / max(1.0, min(span_s, now))

    def offer(self, sim, rid: int, t: float) -> bool:
        """Hold an NIW request (True); any other tier is left to the router (False)."""
        if sim.tier_of(rid) != NIW:
            return False
        self.hold(sim, rid, t)
        return True

    def hold(self, sim, rid: int, t: float) -> None:
        q = self.queues.get(sim.model_of(rid))
        if q is None:
            q = self.queues[sim.model_of(rid)] = deque()
        q.append(rid)
        self.held += 1
        if len(q) > self.max_len:
            self.max_len = len(q)

    def rebase(self, sim, remap) -> None:
        """A streamed run dropped finished requests' rows (engine/streaming/window.py): renumber the held ids."""
        for q in self.queues.values():
            shifted = [int(remap[rid]) for rid in q]
            q.clear()
            q.extend(shifted)

    @property
    def waiting(self) -> int:
        return sum(len(q) for q in self.queues.values())

    # ------------------------------------------------------------------ signals and release
    def on_tick(self, sim, now: float) -> None:
        if now < self._next_signal or not self.waiting:
            return
        self._next_signal = now + self.period_s
        # deadline-forced release: requests that reached the escalation age go out with priority 0
        for model, q in self.queues.items():
            while self.escalate and q and now - sim.arrival_s(q[0]) >= self.escalate_after_s:
                eps = [ep for ep in sim.endpoints if ep.model_idx == model and ep.pool not in ("iw", "decode")
                       and ep.serving]
                if not eps:
                    break
                ep = min(eps, key=lambda e: (self.busy(e, now), e.eid))
                self.release(sim, q.popleft(), ep, now)
                self.forced += 1
        eps = sim.endpoints
        n = len(eps)
        self._turn = (self._turn + 1) % max(1, n)
        for k in range(n):  # rotate who signals first so no endpoint is always served first
            ep = eps[(k + self._turn) % n]
            if ep.pool == "iw" or ep.pool == "decode" or not ep.serving:  # a decode pool: requests come prefilled
                continue
            q = self.queues.get(ep.model_idx)
            if not q:
                continue
            u = self.busy(ep, now)
            if self.feed == "text":
                take = 2 if u < self.two_below else 1 if u < self.one_below else 0
            else:
                take = 1 if u <= self.two_below else 2 if u <= self.one_below else 0
            for _ in range(take):
                if not q:
                    break
                self.release(sim, q.popleft(), ep, now)

    def release(self, sim, rid: int, ep, now: float) -> None:
        age = now - sim.arrival_s(rid)
        sim.set_priority(rid, 0 if self.escalate and age >= self.escalate_after_s else 1)
        self.released += 1
        if self.track_released:
            q = self._rel.get(ep.eid)
            if q is None:
                q = self._rel[ep.eid] = deque()
            q.append((now, float(sim.prompt_tokens(rid))))
        sim.send(rid, ep, now)  # network delay when ep is outside the request's origin region

    def stats(self) -> dict:
        return {"held": self.held, "released": self.released, "forced_at_escalation": self.forced,
                "still_waiting": self.waiting, "max_queue": self.max_len}


@register(PolicyKind.AUTOSCALER, "reactive-unified-niwq")
class ReactiveUnifiedWithQueue(ReactiveUnified):
    """SageServe's unified reactive heuristic (70 % / 30 %, 15 s cooldown) with NIW requests held by the
    Queue Manager and released only to endpoints under 60 % / 50 % (paper sections 4 and 7.1)."""

    class Params(NIWQueueParams, ReactiveUnified.Params):
        pass

    def __init__(self, params, rng):
        super().__init__(params, rng)
        self.queue = NIWQueueManager(self.params)
        self.tick_s = min(self.tick_s or self.queue.period_s, self.queue.period_s)
        self._react_on_tick = bool(self.knobs.tick_s)

    wants_arrival_hook = True

    def on_start(self, sim, now):
        self.queue.bind(sim)

    def on_arrival(self, sim, rid, now):
        return self.queue.offer(sim, rid, now)

    def rebase(self, sim, remap) -> None:
        self.queue.rebase(sim, remap)

    def on_request(self, sim, endpoint, now, rid):
        self.queue.note_request(sim, endpoint, rid, now)
        super().on_request(sim, endpoint, now, rid)

    def on_tick(self, sim, now):
        if self._react_on_tick:
            super().on_tick(sim, now)
        self.queue.on_tick(sim, now)
