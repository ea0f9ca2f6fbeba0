"""The instance batching engine (vLLM-like): waiting queue, admission and prefill, decode runs, KV
preemption; chunked prefill is its base class (chunked.py), above the KV manager (kvcache.py). The instance
engine is a part the Simulator owns (``sim.instance_engine``); it reads and writes the run state it holds typed
(``self.st``, core/state.py).

Fast mode: between two events an instance's decode batch is fixed, so a whole run of decode iterations
(until the next completion or KV exhaustion) is one event whose duration is summed analytically:
iteration k of a run lasts d0 + c_ctx * B * k, so n iterations last n*d0 + c_ctx*B*n(n-1)/2. A request
reaching a decoding instance truncates the run at the end of the iteration in progress (the earliest
point a continuous-batching scheduler could admit it). Reference mode steps every decode iteration as
its own event; both modes share all other code.

Compiled build: compiled with Cython by ``python -m simulations.engine.build`` (declarations in the
matching .pxd; ``@cython.locals`` types the hot locals and is inert in Python). The same source runs as
plain Python when there is no fresh build (accel.py); results are identical.
"""

from __future__ import annotations

from bisect import insort
from heapq import heappop, heappush
from math import sqrt

import cython

from simulations.engine.core.entities import Instance, IntHeap, RunLog, decode_iters_done

if not cython.compiled:  # compiled: C constants from codes.pxd
    from simulations.engine.core.entities import DECODE, DRAINING, IDLE, MIXED, PREFILL, SERVING, SWAPIN, WAKE
from simulations.engine.instance.chunked import ChunkedPrefill
from simulations.engine.instance.kvcache import FIN_RID
from simulations.engine.policies.schedulers import PRIO_SHIFT

_FIN_RID = cython.declare(cython.longlong, FIN_RID)  # C copies (compiled) of the two constants
_PRIO_SHIFT = cython.declare(cython.double, PRIO_SHIFT)


def work_now(inst: Instance, t: float) -> int:
    """Remaining tokens at time t, counting decode iterations completed inside the current run."""
    if inst.phase == DECODE and inst.seg_n > 1:
        return inst.work - inst.seg_B * decode_iters_done(inst, t)
    return inst.work


@cython.locals(d0=cython.double, a=cython.double, until=cython.double, n=cython.longlong, k=cython.longlong)
def _iterations_until(d0, a, until, n):
    """The decode iterations of a run (iteration k lasts d0 + 2a(k-1)) up to the first boundary at or after
    ``until``, at most ``n``: the first k with k*d0 + a*k*(k-1) >= until (closed form, then exact by stepping)."""
    if n * d0 + a * n * (n - 1) <= until:
        return n
    if a > 0:
        k = int((-(d0 - a) + sqrt((d0 - a) * (d0 - a) + 4 * a * until)) / (2 * a))
    else:
        k = int(until / d0)
    if k < 1:
        k = 1
    while k > 1 and (k - 1) * d0 + a * (k - 1) * (k - 2) >= until:
        k -= 1
    while k * d0 + a * k * (k - 1) < until:
        k += 1
    return k


class InstanceEngine(ChunkedPrefill):
    """Iteration-level batching of every instance (the instance's next event is its ``_segment_end``)."""

    @cython.locals(entry=tuple, phase=cython.int, B=cython.longlong, d0=cython.double, a=cython.double,
                   k=cython.longlong, heap=list, key=cython.double)
    def _join_queue(self, inst: Instance, rid, t: float, need, k_done):
        """Put request ``rid`` (``need`` KV tokens) in ``inst``'s waiting queue at ``t`` and make the instance
        notice it: an idle instance steps now if nothing else is due at this instant, else at ``t`` after the
        instant's other arrivals (they batch together); a decoding instance ends its run at the end of the
        iteration in progress if the request could join then. ``k_done``: decode iterations of the current run
        done by ``t`` when the caller already knows them, else -1."""
        self.st.seq += 1
        self.st._served_inst[rid] = inst.iid
        inst.last_arr = self.st._arr[rid]
        if self._key_fcfs:  # FCFS.key, inline (same float expression)
            key = self.st._prio[rid] * _PRIO_SHIFT + self.st._arr[rid]
            entry = (key, self.st.seq, rid)
        else:
            entry = (self._sched_key(self.st._arr[rid], self.st._tier[rid], self.st._prio[rid]), self.st.seq, rid)
        if self.sched_dynamic:
            insort(inst.waiting, entry)  # a dynamic scheduler reads the waiting list fully sorted
        else:
            heappush(inst.waiting, entry)
        inst.work += need + self.st._out[rid] - self.st._gen[rid]
        inst.q_tok += need  # scaling-signal counter (entities.signal_tokens)
        phase = inst.phase
        if phase == IDLE:
            heap = self.st.heap
            if self.st._in_arrival and self.st.next_arr > t and (not heap or heap[0][0] > t) and self.st.iq.top_time() > t:
                B = inst.B
                self._step(inst, t)
                if self.st._h_any:
                    self.control._after_instance_event(inst, t, B)
                return
            inst.phase = WAKE
            inst.seg_t0 = t
            self.st.seq += 1
            self.st.iq.schedule(inst.iid, t, self.st.seq)
        elif phase == DECODE and inst.seg_n > 1:
            B = inst.seg_B
            if inst.B >= inst.max_b:
                return
            d0 = inst.seg_d0
            a = inst.seg_a
            k = (k_done if k_done >= 0 else decode_iters_done(inst, t)) + 1  # the iteration in progress completes
            if k >= inst.seg_n:
                return
            if need > inst.cap - (inst.S + B * (inst.it + k) + inst.kv_prefill) - self.wm_tokens(inst):
                return  # would not fit at that boundary; KV only grows during the run
            inst.seg_n = k
            inst.seg_end = inst.seg_t0 + k * d0 + a * k * (k - 1)
            self.st.seq += 1
            self.st.iq.schedule(inst.iid, inst.seg_end, self.st.seq)


    # The typed locals (cython.locals) only matter to the compiled build; as Python they are plain names.
    @cython.locals(phase=cython.int, it=cython.longlong, n=cython.longlong, d0=cython.double, rest=cython.double,
                   prev=cython.double, old=cython.double, rem=cython.longlong, f=cython.longlong,
                   rid=cython.longlong, j=cython.longlong, m=cython.double, runs=RunLog, orid=object,
                   fh=IntHeap, running=dict, fe=cython.longlong, held=object)
    def _segment_end(self, inst: Instance, t: float):
        inst.busy_s += t - inst.seg_t0
        phase = inst.phase
        if phase == WAKE:
            return self._step(inst, t)
        if phase == MIXED:
            return self._mixed_end(inst, t)
        if phase == SWAPIN:
            return self._swap_in_end(inst, t)
        if phase == PREFILL:
            it = inst.it
            for rid in inst.batch:
                self._first_token(inst, rid, t, it)
            inst.work -= inst.seg_n  # prompt tokens (seg_n holds the prefill's token count)
            inst.batch = []
        else:
            n = inst.seg_n
            d0 = inst.seg_d0
            rest = d0 + 2 * inst.seg_a * (n - 1) if n > 1 else 0.0
            prev = inst.last_dec_end
            old = inst.seg_t0 - prev + d0 if prev == prev else d0
            runs = inst.runs
            if runs.hi - runs.lo > runs.trim_at:
                self._trim_runs(inst)
            runs.append(inst.it, inst.seg_t0, d0, rest, old if old > rest else rest)
            inst.last_dec_end = t
            it = inst.it + n
            inst.it = it
            inst.work -= inst.seg_B * n
            fh = inst.fin_heap
            if fh.n and fh.h[0] < (it + 1) * _FIN_RID:
                running = inst.running
                # the per-request arrays are indexed through self (a local copy of a typed view costs two atomic
                # reference-count updates per call)
                while fh.n and fh.h[0] < (it + 1) * _FIN_RID:  # fin <= it
                    fe = fh.pop()
                    f = fe // _FIN_RID
                    rid = fe - f * _FIN_RID
                    if self.st._fin[rid] != f:
                        continue  # stale: preempted or re-admitted since
                    orid = rid  # boxed once for the dict operation and the completion buffer
                    held = running.pop(orid, None)  # one look-up: None when not running (values are ints)
                    if held is not None:
                        if inst.pfx is not None:
                            self._pfx_release(inst, rid)
                        # _complete(inst, rid, t) with _close_stint inlined
                        j = self.st._join[rid]
                        if it != j:
                            m = runs.gap_since(j, self.st._tok_t[rid])
                            if m > self.st._tbt_max[rid]:
                                self.st._tbt_max[rid] = m
                        inst.S -= held
                        inst.B -= 1
                        inst.res_tok -= self.st._inp[rid] + self.st._out[rid]
                        self.st._t_done[rid] = t
                        self.st.n_done += 1
                        if self.st._h_complete:
                            self.st._done_buf.append(orid)
        self._step(inst, t)

    @cython.locals(B=cython.longlong, ctx=cython.longlong, kv_used=cython.longlong, admit=cython.bint)
    def _step(self, inst: Instance, t: float):
        """At an iteration boundary: admit (prefill) if possible, else run decode iterations, else idle."""
        if inst.pending:
            self._apply_pending(inst, t)
        admit = True
        if self.pre_vllm and inst.B and inst.cap - (inst.S + inst.B * inst.it + inst.kv_prefill) < inst.B:
            # vLLM: the running batch is scheduled first (preempting until its next iteration fits) and a step
            # that preempted admits nothing and swaps nothing in
            self._make_room(inst, t)
            admit = inst.B == 0
        B = inst.B
        if (self.chunked or inst.v1) and (inst.waiting or inst.prefilling) and self._mixed_step(inst, t, admit):
            return
        if admit and inst.swapped and B < inst.max_b and self._swap_in(inst, t):
            return
        ctx = inst.S + B * inst.it
        kv_used = ctx + inst.kv_prefill
        if admit and inst.waiting and B < inst.max_b and not (self.chunked or inst.v1) and self._admit(inst, t, B,
                                                                                                         kv_used):
            return
        if B > 0:
            self._decode_run(inst, t, B, ctx, kv_used, admit)
            return
        inst.phase = IDLE
        self._sync(inst)
        if inst.state == DRAINING and not inst.waiting and not inst.swapped:
            self.lifecycle._release(inst, t)

    @cython.locals(free=cython.longlong, it=cython.longlong, tokens=cython.longlong, max_bt=cython.longlong,
                   room_b=cython.longlong, need=cython.longlong, rid=cython.longlong, taken=cython.Py_ssize_t,
                   dur=cython.double, sq=cython.double, kv=cython.longlong, ctx=cython.longlong, waiting=list,
                   batch=list, running=dict, orid=object)
    def _admit(self, inst: Instance, t: float, B, kv_used):
        """Admit waiting requests in scheduler order while their KV fits above the watermark, the batch stays under
        ``max_batch_size`` and the prefill under ``max_batch_tokens``: one prefill iteration. False if none fits."""
        waiting = inst.waiting
        free = inst.cap - kv_used - self.wm_tokens(inst)  # vLLM's watermark: admit only above it
        it = inst.it
        batch = []
        tokens = 0
        sq = 0
        max_bt = inst.max_bt
        room_b = inst.max_b - B
        if self.sched_dynamic:
            order = self.scheduler.order(waiting, t, self.policy_view)
            taken = 0
            for _key, _seq, rid in order:
                need = self.st._inp[rid] + self.st._gen[rid]
                if need > free or len(batch) >= room_b or (batch and tokens + need > max_bt):
                    break
                batch.append(rid)
                tokens += need
                sq += need * need
                free -= need
                taken += 1
            if taken:  # keep the rest sorted (the order a dynamic scheduler reads)
                chosen = set(batch)
                inst.waiting = [e for e in waiting if e[2] not in chosen]
        else:
            while waiting:
                orid = waiting[0][2]
                rid = orid
                need = self.st._inp[rid] + self.st._gen[rid]
                if need > free or len(batch) >= room_b or (batch and tokens + need > max_bt):
                    break
                heappop(waiting)
                batch.append(orid)
                tokens += need
                sq += need * need
                free -= need
        if not batch:
            return False
        running = inst.running
        for orid in batch:
            rid = orid
            ctx = self.st._inp[rid] + self.st._gen[rid]
            running[orid] = ctx - it
            inst.S += ctx - it
            inst.q_tok -= ctx
            inst.res_tok += self.st._inp[rid] + self.st._out[rid]
            self.st._join[rid] = it
            if self.st._t_admit[rid] != self.st._t_admit[rid]:
                self.st._t_admit[rid] = t
        inst.B += len(batch)
        inst.batch = batch
        inst.phase = PREFILL
        inst.seg_t0 = t
        inst.seg_n = tokens
        dur = inst.pc0 + inst.pc1 * tokens + inst.pc2 * tokens * tokens
        if inst.pcs or inst.pcr:
            dur += inst.pcs * sq + inst.pcr * len(batch)
        inst.seg_end = t + dur
        kv = inst.S + inst.B * it + inst.kv_prefill  # _sync(inst)
        if inst.state == SERVING:
            inst.endpoint.kv_sum += kv - inst.kv
        inst.kv = kv
        self.st.seq += 1
        self.st.iq.schedule(inst.iid, t + dur, self.st.seq)
        return True

    @cython.locals(room=cython.longlong, f=cython.longlong, n=cython.longlong, n_kv=cython.longlong,
                   d0=cython.double, a=cython.double, until=cython.double, dur=cython.double,
                   rid=cython.longlong, fh=IntHeap, running=dict, fe=cython.longlong)
    def _decode_run(self, inst: Instance, t: float, B, ctx, kv_used, admit):
        """Run the fixed batch's decode iterations: one (reference mode) or, in fast mode, up to the next
        completion, KV exhaustion or the next time a dynamic scheduler's order can change, as one event."""
        room = inst.cap - kv_used
        if room < B:
            self._preempt(inst, t)
            self._step(inst, t)
            return
        fh = inst.fin_heap
        running = inst.running
        while True:  # drop stale heap tops (preempted / re-admitted requests)
            fe = fh.top()
            f = fe // _FIN_RID
            rid = fe - f * _FIN_RID
            if self.st._fin[rid] == f and rid in running:
                break
            fh.pop()
        d0 = inst.dc0 + inst.dcb * B + inst.dcc * ctx
        a = inst.dcc * B * 0.5
        if self.fast:
            n = f - inst.it
            n_kv = room // B
            if n_kv < n:
                n = n_kv
            if inst.waiting and self.sched_dynamic and n > 1:
                # a time-dependent order (DPA) may put a different request at the head later: end the run at
                # the first iteration boundary at or after the next time the order can change
                until = self.scheduler.next_change(inst.waiting, t) - t
                n = 1 if until <= 0 else min(n, _iterations_until(d0, a, until, n))
            if not admit and n > 1:
                n = 1  # admission was skipped (a preempting step): reference mode tries it one iteration on
            if inst.v1_async and n > 1 and inst.waiting and inst.last_arr > self._async_cut(inst):
                n = 1  # async scheduling: a request that arrived during the step that just ended joins at the next
        else:
            n = 1
        dur = n * d0 + a * n * (n - 1)
        inst.phase = DECODE
        inst.seg_t0 = t
        inst.seg_n = n
        inst.seg_d0 = d0
        inst.seg_a = a
        inst.seg_B = B
        inst.seg_end = t + dur
        if inst.state == SERVING:
            inst.endpoint.kv_sum += kv_used - inst.kv
        inst.kv = kv_used
        self.st.seq += 1
        self.st.iq.schedule(inst.iid, t + dur, self.st.seq)

    @cython.locals(rid=cython.longlong, rem=cython.longlong, it=cython.longlong)
    def _swap_in_end(self, inst: Instance, t: float):
        it = inst.it
        for rid in inst.batch:
            rem = self.st._out[rid] - self.st._gen[rid]
            self.st._fin[rid] = it + rem
            inst.fin_heap.push((it + rem) * _FIN_RID + rid)
        inst.batch = []
        self._step(inst, t)

    def _boundary(self, inst: Instance, t: float):
        """Bring ``inst`` to an iteration boundary as soon as one is due: an idle instance steps now (a WAKE
        event at ``t``); a multi-iteration decode run (fast mode) ends at the end of the iteration in progress,
        the boundary where reference mode, which steps every iteration, would act. Other phases end at their
        next boundary anyway."""
        if inst.state != SERVING and inst.state != DRAINING:
            return
        if inst.phase == IDLE:
            inst.phase = WAKE
            inst.seg_t0 = t
            self.st.seq += 1
            self.st.iq.schedule(inst.iid, t, self.st.seq)
        elif inst.phase == DECODE and inst.seg_n > 1:
            k = decode_iters_done(inst, t) + 1
            if k < inst.seg_n:
                inst.seg_n = k
                inst.seg_end = inst.seg_t0 + k * inst.seg_d0 + inst.seg_a * k * (k - 1)
                self.st.seq += 1
                self.st.iq.schedule(inst.iid, inst.seg_end, self.st.seq)
