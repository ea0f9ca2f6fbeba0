"""The public instance-control API policies call (autoscalers, routers, queue managers, schedulers).

Policies use only what is here, the fleet's ``scale_out`` / ``scale_in`` / ``drain`` / ``add_instance``
(fleet.py), the read-only attributes of endpoints and instances listed in docs/simulator.md, and the hooks they
switch on (``wants_*`` on the autoscaler; off by default so the stock fast path keeps its speed):

- reads: ``endpoints_for``, ``observed`` (the past only), ``spot_count``, ``running_by_tier``, ``kv_used``,
  ``request_count``, ``queued_prompt_tokens``, ``remaining_decode_tokens`` (true or predicted),
  ``tokens_generated``;
- requests: ``dispatch(rid, instance, now)`` (to one instance), ``send(rid, endpoint, now)`` (to an endpoint,
  through its instance router, paying the network delay across regions), ``drop(rid, reason)``;
- instances: ``set_max_batch(instance, n, now)`` and ``evict(instance, rid, mode, now)`` with mode
  ``recompute`` or ``swap`` (``take_swapped`` / ``resume_swapped`` hand a swapped request to the policy and back;
  ``withdraw_waiting`` takes queued requests back), both effective at the next iteration boundary (the end of the iteration in
  progress, in fast mode too), ``instance.kind`` and ``instance.policy_state`` for the policy's own labels;
- hooks (after the instance's event is fully processed, so a hook may call anything above):
  ``on_batch_change(sim, instance, now)`` (``wants_batch_hook``: the running batch changed),
  ``on_complete(sim, instance, rid, now)`` (``wants_completion_hook``: a request finished, capacity freed),
  ``on_instance_release(sim, instance, now)`` (``wants_release_hook``).

Compiled build: compiled with Cython by ``python -m simulations.engine.build`` (declarations in the
matching .pxd; ``@cython.locals`` types the hot locals and is inert in Python). The same source runs as
plain Python when there is no fresh build (accel.py); results are identical.
"""

from __future__ import annotations

from heapq import heapify

import cython

from simulations.engine.config import TIERS
from simulations.engine.entities import (
    DECODE,
    PREFILL,
    SERVING,
    SWAPIN,
    Endpoint,
    Instance,
    decode_iters_done,
)
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

    # ------------------------------------------------------------------ reads
    def running_by_tier(self, inst: Instance) -> dict:
        """Running requests of ``inst`` per tier name."""
        counts = dict.fromkeys(TIERS, 0)
        for rid in inst.running:
            counts[TIERS[self.req_tier[rid]]] += 1
        return counts

    def queued_prompt_tokens(self, inst: Instance) -> int:
        """Prompt tokens still to prefill on ``inst``: its waiting queue (prompt + tokens already generated, for a
        recomputed request) and the unprefilled part of prompts in chunked prefill."""
        total = 0
        for entry in inst.waiting:
            rid = entry[2]
            total += self.req_inp[rid] + self.gen[rid]
        for entry in inst.prefilling:
            total += entry[1]
        return int(total)

    @cython.locals(it=cython.longlong)
    def _clock_at(self, inst: Instance, now: float) -> int:
        it = inst.it
        if inst.phase == DECODE and inst.seg_n > 1:
            it += decode_iters_done(inst, now)
        return it

    def kv_used(self, inst: Instance, now: float | None = None) -> int:
        """KV tokens in use on ``inst`` at ``now`` (exact inside a fast-mode decode run, as in reference mode)."""
        now = self.now if now is None else now
        return int(inst.kv + (inst.seg_B * decode_iters_done(inst, now)
                              if inst.phase == DECODE and inst.seg_n > 1 else 0))

    def request_count(self, inst: Instance) -> int:
        """Requests on ``inst``: running, waiting, in chunked prefill and swapped out."""
        return inst.B + len(inst.waiting) + len(inst.prefilling) + len(inst.swapped)

    def tokens_generated(self, rid: int, now: float | None = None) -> int:
        """Output tokens request ``rid`` has produced by ``now`` (exact in both modes)."""
        now = self.now if now is None else now
        if self.t_done[rid] == self.t_done[rid]:
            return int(self.req_out[rid])
        iid = self.served_inst[rid]
        if iid < 0:
            return 0
        inst = self.instances[iid]
        if rid not in inst.running or (inst.phase in (PREFILL, SWAPIN) and rid in inst.batch):
            return int(self.gen[rid])  # waiting, swapped out or (re)starting: what it had before
        return int(self.req_out[rid] - (self.fin[rid] - self._clock_at(inst, now)))

    def remaining_decode_tokens(self, inst: Instance, now: float | None = None, predicted: bool = False) -> int:
        """Output tokens the running requests of ``inst`` still have to produce at ``now``. With ``predicted``,
        from the workload's predicted output lengths (``predicted_output_tokens``; what a real scheduler knows),
        at least 1 per running request; else from the true lengths (an oracle)."""
        now = self.now if now is None else now
        pred = self.req_pred_out if predicted else None
        if predicted and pred is None:
            raise ValueError("remaining_decode_tokens(predicted=True): the workload has no predicted_output_tokens")
        total = 0
        for rid in inst.running:
            done = self.tokens_generated(rid, now)
            if pred is None:
                total += int(self.req_out[rid]) - done
            else:
                total += max(int(pred[rid]) - done, 1)
        return total

    # ------------------------------------------------------------------ control
    def dispatch(self, rid: int, inst: Instance, now: float) -> None:
        """Put request ``rid`` in the waiting queue of ``inst`` (a serving instance) at ``now``, bypassing the
        endpoint's instance router; no network delay (use ``send`` to cross regions)."""
        if inst.state != SERVING:
            raise ValueError(f"dispatch: instance {inst.iid} is not serving (state {inst.state})")
        self.served_ep[rid] = inst.endpoint.eid
        self._enqueue(inst, rid, now)

    def drop(self, rid: int, reason: str) -> None:
        """Drop a request that is held by the policy, waiting in an instance's queue or swapped out, with a reason
        (counted as an SLO miss and under ``dropped`` by reason). A running request must be evicted first."""
        iid = self.served_inst[rid]
        if iid >= 0 and self.t_done[rid] != self.t_done[rid]:
            inst = self.instances[iid]
            if rid in inst.running:
                raise ValueError(f"drop: request {rid} is running on instance {iid}; evict it first")
            kept = [e for e in inst.waiting if e[2] != rid]
            if len(kept) != len(inst.waiting):
                if not self.sched_dynamic:
                    heapify(kept)
                inst.waiting = kept
                inst.work -= self.req_inp[rid] + self.req_out[rid]
            elif rid in inst.swapped:  # its KV is in host memory: forget it (it never resumes)
                inst.swapped.remove(rid)
                inst.work -= self.req_out[rid] - self.gen[rid]
        self._drop(rid, str(reason))

    def set_max_batch(self, inst: Instance, n: int, now: float) -> None:
        """Change the instance's maximum batch size. Admission reads it at every iteration boundary; raising it
        while requests wait ends a fast-mode decode run at the end of the iteration in progress, the boundary where
        reference mode would admit. Lowering it never evicts: the batch shrinks as requests finish."""
        n = int(n)
        if n < 1:
            raise ValueError(f"set_max_batch: n must be >= 1, got {n}")
        raised = n > inst.max_b
        inst.max_b = n
        if raised and (inst.waiting or inst.swapped):
            self._boundary(inst, now)

    def evict(self, inst: Instance, rid: int, mode: str, now: float) -> None:
        """Evict running request ``rid`` from ``inst`` at the next iteration boundary: ``recompute`` (back to
        the waiting queue, prefilled again) or ``swap`` (KV to host memory at ``engine.swap_bandwidth_gb_s``,
        resumed without a prefill after (prompt + generated tokens) x ``kv_bytes_per_token`` / bandwidth)."""
        if mode not in ("recompute", "swap"):
            raise ValueError(f"evict: mode must be 'recompute' or 'swap', got {mode!r}")
        if rid not in inst.running:
            raise ValueError(f"evict: request {rid} is not running on instance {inst.iid}")
        if mode == "swap":
            if self.chunked:
                raise ValueError("evict(mode='swap') is not supported with engine.chunked_prefill")
            if not inst.spec.kv_bytes_per_token > 0:
                raise ValueError(f"evict(mode='swap'): deployment {inst.spec.name} has no kv_bytes_per_token")
        inst.pending.append((rid, mode == "swap"))
        self._boundary(inst, now)

    def withdraw_waiting(self, inst: Instance, n: int) -> list:
        """Take up to ``n`` requests from the back of ``inst``'s waiting queue (the last in its scheduler order)
        back to the policy, which dispatches them elsewhere (e.g. a Llumnix-like migration of queued requests).
        Returns their ids, in queue order."""
        n = int(n)
        if n <= 0 or not inst.waiting:
            return []
        entries = sorted(inst.waiting)
        keep, taken = entries[:max(0, len(entries) - n)], entries[max(0, len(entries) - n):]
        inst.waiting = keep  # a sorted list is a valid heap, and the order a dynamic scheduler keeps
        out = []
        for entry in taken:
            rid = entry[2]
            inst.work -= self.req_inp[rid] + self.req_out[rid]
            out.append(rid)
        return out

    def take_swapped(self, inst: Instance, rid: int) -> None:
        """Take a swapped-out request (``evict(..., "swap")`` done) off ``inst``: the policy holds it again, e.g. in
        a global queue (Chiron). Its KV stays in ``inst``'s host memory: ``resume_swapped(inst, rid, now)`` puts it
        back there (resumed without a prefill); ``dispatch`` to any instance recomputes prompt + generated tokens."""
        if rid not in inst.swapped:
            raise ValueError(f"take_swapped: request {rid} is not swapped out on instance {inst.iid}")
        inst.swapped.remove(rid)
        inst.work -= self.req_out[rid] - self.gen[rid]

    def resume_swapped(self, inst: Instance, rid: int, now: float) -> None:
        """Give a request taken with ``take_swapped`` back to the instance whose host memory holds its KV: it
        resumes (before waiting requests, as any swapped request) at the next iteration boundary."""
        if inst.state != SERVING:
            raise ValueError(f"resume_swapped: instance {inst.iid} is not serving (state {inst.state})")
        if self.t_done[rid] == self.t_done[rid]:
            raise ValueError(f"resume_swapped: request {rid} has finished")
        if self.served_inst[rid] != inst.iid or rid in inst.running or rid in inst.swapped:
            raise ValueError(f"resume_swapped: request {rid} was not taken off instance {inst.iid}")
        inst.swapped.append(rid)
        inst.work += self.req_out[rid] - self.gen[rid]
        self._boundary(inst, now)

    def _after_instance_event(self, inst: Instance, t: float, b0: int) -> None:
        """Run the hooks a policy asked for, once the instance's event is fully processed."""
        done = self._done_buf
        if done:
            self._done_buf = []
            if self._h_complete:
                for rid in done:
                    self.autoscaler.on_complete(self, inst, rid, t)
        if self._h_batch and (inst.B != b0 or done):
            self.autoscaler.on_batch_change(self, inst, t)
