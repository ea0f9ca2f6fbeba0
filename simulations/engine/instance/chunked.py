"""Chunked prefill (Sarathi-style, the ``engine.chunked_prefill`` option): an iteration that runs one decode step
of the running batch plus prompt chunks filling the token budget; the base class of the batching engine
(batching.py) above the KV manager. ``_step`` (the iteration boundary) is the batching engine's: both methods end
by calling it.

Compiled build: compiled with Cython by ``python -m simulations.engine.build`` (declarations in the
matching .pxd; ``@cython.locals`` types the hot locals and is inert in Python). The same source runs as
plain Python when there is no fresh build (accel.py); results are identical.
"""

from __future__ import annotations

from heapq import heappop

import cython

from simulations.engine.core.entities import Instance, IntHeap  # noqa: F401 - IntHeap types a local when compiled

if not cython.compiled:  # compiled: C constants from codes.pxd
    from simulations.engine.core.entities import DECODE, MIXED
from simulations.engine.instance.kvcache import FIN_RID, KVManager

_FIN_RID = cython.declare(cython.longlong, FIN_RID)  # C copy (compiled) of the constant
_NO_CUT = cython.declare(cython.double, float("inf"))


class ChunkedPrefill(KVManager):
    """Mixed prefill/decode iterations of an instance; ``InstanceEngine`` (batching.py) supplies ``_step``."""

    def _step(self, inst: Instance, t: float):
        raise NotImplementedError("InstanceEngine._step (batching.py) overrides this")

    @cython.locals(B=cython.longlong, ctx=cython.longlong, free=cython.longlong, reserve=cython.longlong,
                   left=cython.longlong, prefilling=list)
    def _mixed_step(self, inst: Instance, t: float, admit):
        """Chunked prefill (Sarathi-style): one iteration = one decode step of the running batch plus prompt
        chunks filling the token budget (max_batch_tokens - B). Its time is prefill(T) + decode(B, C) with the
        fixed overhead counted once (minus min(c0_prefill, c0_decode)). Returns False if nothing to prefill.
        ``admit``: False in a step that preempted (vLLM V1 then schedules no waiting request). With
        ``preemption = "vllm"`` a waiting request's whole prompt must fit above the watermark after the running
        batch's slots for this iteration (V1 allocates the running requests first).

        vLLM V1 (``inst.v1``; vllm/v1/core/sched/scheduler.py ``Scheduler.schedule``, v0.15: "First, schedule the
        RUNNING requests" spends ``token_budget = max_num_scheduled_tokens`` on the running requests in order, one
        token per decode and up to the budget per partial prefill; "Next, schedule the WAITING requests" only
        ``while self.waiting and token_budget > 0`` and ``len(self.running) < max_num_running_reqs``, each taking
        ``min(num_new_tokens, token_budget)`` after its prefix-cache hit ``num_computed_tokens``): admission stops
        when the budget is spent, and a prefix-cache hit (kvcache.py) shortens the prompt to prefill."""
        B = inst.B
        ctx = inst.S + B * inst.it
        free = inst.cap - ctx - inst.kv_prefill
        prefilling = inst.prefilling
        reserve = self.wm_tokens(inst) + (B if self.pre_vllm else 0)
        left = 1
        if inst.v1:  # V1 admits waiting requests only while the step's token budget lasts, after the running ones
            left = max(inst.max_bt - B, 1)
            for entry in prefilling:
                left -= entry[1]
        if inst.waiting and admit and left > 0:
            free = self._mixed_admit(inst, t, free, reserve, left)
        if not prefilling:
            return False
        if B and free < B:  # the decode step needs one KV slot per running request
            self._preempt(inst, t)
            self._step(inst, t)
            return True
        self._mixed_start(inst, t, B, ctx)
        return True

    @cython.locals(B=cython.longlong, need=cython.longlong, rid=cython.longlong, hit=cython.longlong,
                   adj=cython.longlong, waiting=list, prefilling=list, taken=list)
    def _mixed_admit(self, inst: Instance, t: float, free, reserve, left):
        """Move waiting requests, in scheduler order, to the instance's prefilling list while their prompt fits in
        ``free`` KV tokens above ``reserve`` and the batch has room (with V1, while the step's token budget
        ``left`` lasts); returns the free KV tokens left."""
        B = inst.B
        waiting = inst.waiting
        prefilling = inst.prefilling
        inp, gen = self.st._inp, self.st._gen
        if self.sched_dynamic:
            order = self.scheduler.order(waiting, t, self.policy_view)
        else:
            order = None
        taken = []
        while True:
            if order is not None:
                entry = next(order, None)
                if entry is None:
                    break
            else:
                if not waiting:
                    break
                entry = waiting[0]
            rid = entry[2]
            need = inp[rid] + gen[rid]
            hit = 0
            adj = 0
            if inst.pfx is not None:
                hit, adj = self._pfx_plan(inst, rid)
            if need + adj > free - reserve or B + len(prefilling) >= inst.max_b or self._late(inst, rid):
                break
            if order is None:
                heappop(waiting)
            taken.append(rid)
            prefilling.append([rid, need - hit, need])  # a prefix-cache hit is not prefilled again
            inst.kv_prefill += need
            if inst.pfx is not None:
                self._pfx_acquire(inst, rid, hit)
                inst.work -= hit
            inst.q_tok -= need
            inst.res_tok += inp[rid] + self.st._out[rid]
            free -= need + adj
            if self.st._t_admit[rid] != self.st._t_admit[rid]:
                self.st._t_admit[rid] = t
            if inst.v1:
                left -= need - hit
                if left <= 0:
                    break
        if order is not None and taken:  # keep the rest sorted (the order a dynamic scheduler reads)
            chosen = set(taken)
            inst.waiting = [e for e in waiting if e[2] not in chosen]
        return free

    @cython.locals(budget=cython.longlong, tokens=cython.longlong, take=cython.longlong, dur=cython.double,
                   sq=cython.double, done=cython.longlong, plan=list)
    def _mixed_start(self, inst: Instance, t: float, B, ctx):
        """Start the mixed iteration: the prompt chunks that fill the token budget beside the running batch's
        ``B`` decodes over ``ctx`` context tokens, and its duration."""
        budget = max(inst.max_bt - B, 1)
        tokens = 0
        sq = 0.0
        plan = []
        for entry in inst.prefilling:
            if tokens >= budget:
                break
            take = min(entry[1], budget - tokens)
            plan.append((entry, take))
            tokens += take
            # a chunk of `take` tokens after `done` of its prompt: take*(2*done + take), so a prompt's chunks sum
            # to P^2 (the whole prompt's attention term) however it is split
            done = entry[2] - entry[1]
            sq += take * (2 * done + take)
        dur = inst.pc0 + inst.pc1 * tokens + inst.pc2 * tokens * tokens
        if inst.pcs or inst.pcr:
            dur += inst.pcs * sq + inst.pcr * len(plan)
        if B:
            dur += inst.dc0 + inst.dcb * B + inst.dcc * ctx - min(inst.pc0, inst.dc0)
        inst.batch = plan
        inst.phase = MIXED
        inst.seg_t0 = t
        inst.seg_n = 1
        inst.seg_d0 = dur
        inst.seg_a = 0.0
        inst.seg_B = B
        inst.seg_end = t + dur
        self._sync(inst)
        self.st.seq += 1
        self.st.iq.schedule(inst.iid, t + dur, self.st.seq)

    def _late(self, inst: Instance, rid):
        """Whether waiting request ``rid`` arrived too late for the step being built now: with vLLM's async
        scheduling (``inst.v1_async``; vllm/v1/engine/core.py ``EngineCore.step_with_batch_queue`` schedules the
        next batch as soon as the current one is launched, before its output) the step starting at this boundary
        was scheduled when the step that just ended started, so a request that arrived after that joins one step
        later. An instance waking from idle had no step in flight: nothing is late (a lone request is scheduled
        at once). The waiting queue is FCFS-ordered, so the first late request ends the admission."""
        if not inst.v1_async:
            return False
        return self.st._arr[rid] > self._async_cut(inst)

    @cython.locals(k=cython.longlong)
    def _async_cut(self, inst: Instance):
        """The start of the step that just ended (of its last iteration for a fast-mode decode run, iteration k
        lasting d0 + 2a(k-1)); no cut after an idle instance's wake-up."""
        if inst.phase == MIXED or (inst.phase == DECODE and inst.seg_n == 1):
            return inst.seg_t0
        if inst.phase == DECODE:
            k = inst.seg_n
            return inst.seg_end - (inst.seg_d0 + 2.0 * inst.seg_a * (k - 1))
        return _NO_CUT

    @cython.locals(B=cython.longlong, prev=cython.double, d0=cython.double, it=cython.longlong,
                   f=cython.longlong, rid=cython.longlong, need=cython.longlong, rem=cython.longlong,
                   take=cython.longlong, finished=list, fh=IntHeap, running=dict, fe=cython.longlong)
    def _mixed_end(self, inst: Instance, t: float):
        B = inst.seg_B
        if B:  # the running batch advanced one token (logged as a one-iteration decode run for max TBT)
            prev = inst.last_dec_end
            d0 = inst.seg_d0
            inst.runs.append(inst.it, inst.seg_t0, d0, 0.0, inst.seg_t0 - prev + d0 if prev == prev else d0)
            if inst.runs.hi - inst.runs.lo > inst.runs.trim_at:
                self._trim_runs(inst)
            inst.last_dec_end = t
            inst.it += 1
            inst.work -= B
            fh, running = inst.fin_heap, inst.running
            while fh.n and fh.h[0] < (inst.it + 1) * _FIN_RID:  # fin <= it
                fe = fh.pop()
                f = fe // _FIN_RID
                rid = fe - f * _FIN_RID
                if rid in running and self.st._fin[rid] == f:
                    self._complete(inst, rid, t)
        it = inst.it
        finished = []
        for entry, take in inst.batch:
            entry[1] -= take
            inst.work -= take
            if entry[1] == 0:
                finished.append(entry)
        for entry in finished:
            inst.prefilling.remove(entry)
            rid, _, need = entry
            inst.kv_prefill -= need
            inst.running[rid] = need - it
            inst.S += need - it
            inst.B += 1
            self.st._join[rid] = it
            self._first_token(inst, rid, t, it)
        inst.batch = []
        self._step(inst, t)
