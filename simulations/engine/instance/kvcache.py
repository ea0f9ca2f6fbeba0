"""KV-cache management of an instance (vLLM-like): admission room with a free-block watermark, the choice of the
preemption victim, recompute / swap eviction and swap-in, token-gap bookkeeping of finished and evicted requests;
the base class of the batching engine (batching.py) above the run state.

What vLLM does, and what is modelled (docs/simulator.md "Admission and preemption"):

- Admission watermark. vLLM's block manager admits a waiting request only if the free blocks left after allocating
  its prompt stay at or above ``watermark_blocks`` = 1 % of the GPU blocks (``can_allocate``: ``num_free_gpu_blocks
  - num_required_blocks >= watermark_blocks`` -> OK, else LATER; ``num_total_gpu_blocks - num_required_blocks <
  watermark_blocks`` -> NEVER; vllm/core/block_manager.py, "Use watermark to avoid frequent cache eviction").
  Here: ``need <= free - watermark`` with ``watermark = floor(kv_watermark x capacity)`` tokens (``wm_tokens``); a
  request with ``need > capacity - watermark`` can never be admitted and is dropped at routing (arrivals.py).
- Victim. When the running batch cannot get one more KV slot each for the next decode iteration, vLLM V1 preempts
  ``self.running.pop()`` (FCFS: the most recently scheduled running request; PRIORITY: ``max(running, key=(priority,
  arrival_time))``) until it fits (vllm/v1/core/sched/scheduler.py ``schedule``); the victim's KV is freed and it
  goes to the front of the waiting queue to be recomputed. ``engine.preemption = "vllm"``: the most recently
  admitted running request (the running dict keeps admission order) for FCFS and dynamic schedulers, the largest
  scheduler key (lowest priority, latest) for the static priority schedulers. ``"legacy"``: the latest arrival
  (the earlier model).
- No re-admission in a preempting step. V1 schedules WAITING requests only ``if not preempted_reqs``; V0 swaps in
  only when nothing was preempted. With ``preemption = "vllm"`` a step that preempts runs the decode iteration of
  the remaining batch without admitting or swapping in (batching.py ``_step``), so an evicted request cannot be
  prefilled again only to be evicted at the next iteration.
- Mode: recompute (vLLM's default) or swap (``engine.preemption_mode``; KV to host at swap_bandwidth_gb_s).
- Prefix caching (deployments with ``prefix_caching``, which run V1 scheduling). vLLM hashes every full 16-token
  block of a prompt, chained on its parent's hash (vllm/v1/core/kv_cache_utils.py ``hash_block_tokens``,
  ``hash_request_tokens``); at admission the longest run of cached blocks from the start is a hit
  (vllm/v1/core/kv_cache_manager.py ``get_computed_blocks``: ``find_longest_cache_hit``, at most the prompt less
  one token, "we need to recompute the last token"), those tokens are not prefilled again and their blocks are
  shared (reference counted); the blocks computed for the request are cached as they are allocated
  (``allocate_slots`` -> ``cache_blocks``). A block whose last holder finishes goes to the free queue, in reverse
  order so the tail of a prompt is evicted first (vllm/v1/core/block_pool.py ``free_blocks``), and free cached
  blocks are evicted least recently freed first when a new block needs room (``get_new_blocks`` ->
  ``_maybe_evict_cached_block``). Here: a request's prefix is a list of ids (``Workload.prefix_ids``), each one
  chained hash of ``Workload.prefix_chunk_tokens`` prompt tokens (a multiple of 16: one block, or 512 = 32 blocks
  for one Mooncake ``hash_ids`` entry); a chunk is looked up, shared, freed and evicted as a whole, and hits count
  whole 16-token blocks. Free cached chunks count
  as free memory (as vLLM's free queue does) and are evicted LRU when an admission needs their room. Simplified:
  a chunk is cached from the admission of the request that computes it (vLLM: from the step that schedules its
  tokens), and generated tokens are not hashed.

Compiled build: compiled with Cython by ``python -m simulations.engine.build`` (declarations in the
matching .pxd; ``@cython.locals`` types the hot locals and is inert in Python). The same source runs as
plain Python when there is no fresh build (accel.py); results are identical.
"""

from __future__ import annotations

from bisect import insort
from heapq import heappush

import cython
import numpy as np

from simulations.engine.core.entities import Instance

if not cython.compiled:  # compiled: C constants from codes.pxd
    from simulations.engine.core.entities import SERVING, SWAPIN
from simulations.engine.core.state import RunState  # noqa: F401 - types the state field when compiled

# An instance's finish heap holds one int per running request, ``fin * FIN_RID + rid`` (fin = decode clock of its
# last token, rid < FIN_RID): ordered exactly as the (fin, rid) pairs, without a tuple per entry
FIN_RID = 1 << 32
_FIN_RID = cython.declare(cython.longlong, FIN_RID)  # C copy (compiled)

# prefix caching: tokens hashed under one prefix id (32 blocks of 16), and an instance's cache value encoding
# ``refs * PFX_REF + cached tokens`` (cached tokens <= PFX_CHUNK < PFX_REF)
PFX_BLOCK = 16
PFX_CHUNK = 512
PFX_REF = 1024
_PFX_BLOCK = cython.declare(cython.longlong, PFX_BLOCK)
_PFX_REF = cython.declare(cython.longlong, PFX_REF)


class KVManager:
    """An instance's KV cache: admission room, preemption (victim and mode), swap-in, finished requests."""

    def __init__(self, st: RunState, engine, scheduler) -> None:
        """The instance engine of one run over run state ``st``, with the options of ``engine``
        (config.EngineConfig) and the run's scheduler."""
        self.st = st
        self.config = engine
        self.fast = engine.mode == "fast"
        self.chunked = bool(engine.chunked_prefill)
        self.scheduler = scheduler
        self._sched_key = scheduler.key
        self.sched_dynamic = type(scheduler).dynamic
        # the parts the engine calls back, bound by the Simulator once they exist (``bind``)
        self.control = self.lifecycle = self.policy_view = self._pd = None
        self._setup_kv(engine, scheduler)

    def bind(self, control, lifecycle, policy_view, pd) -> None:
        """The policy API (hooks, live migrations), the fleet life cycle (release of a drained instance), the view
        a dynamic scheduler reads and the disaggregation part (None without disaggregated endpoints)."""
        self.control, self.lifecycle, self.policy_view, self._pd = control, lifecycle, policy_view, pd

    def _setup_kv(self, engine, scheduler) -> None:
        """Bind the admission / preemption options of ``engine`` (config.EngineConfig)."""
        from simulations.engine.policies.schedulers import FCFS

        self.kv_wm = float(engine.kv_watermark)
        self.pre_vllm = engine.preemption == "vllm"
        self.pre_swap = engine.preemption_mode == "swap"
        self.victim_by_key = self.pre_vllm and not scheduler.dynamic and type(scheduler) is not FCFS
        self._migrating = None  # live migrations (control.py migrate_running): rid -> (dst instance, downtime s)
        self._mig_down = None   # migrated requests waiting on their destination: rid -> downtime s
        self._mig_count = 0
        # FCFS's key (prio * PRIO_SHIFT + arrival) computed inline by _join_queue: no Python call per request
        self._key_fcfs = type(scheduler) is FCFS
        if self.st.n >= FIN_RID:
            raise ValueError(f"{self.st.n} requests in one run: at most {FIN_RID - 1} (finish-heap encoding)")

    def _setup_prefix(self, workload, endpoints) -> None:
        """Bind the workload's prefix ids (CSR: request i's ids are ``prefix_ids[prefix_off[i]:prefix_off[i+1]]``) when
        a deployment caches prefixes; counters of looked-up and hit prompt tokens."""
        off = getattr(workload, "prefix_off", None)
        self.pfx_on = any(getattr(ep.spec, "prefix_caching", False) for ep in endpoints)
        n = self.st.n
        if not self.pfx_on or off is None:
            off = np.zeros(n + 1, dtype=np.int64)
            ids = np.zeros(0, dtype=np.int64)
        else:
            ids = workload.prefix_ids
        self.pfx_off = memoryview(np.ascontiguousarray(off, dtype=np.int64))
        self.pfx_ids = memoryview(np.ascontiguousarray(ids, dtype=np.int64))
        self.pfx_n = memoryview(np.zeros(n if self.pfx_on else 0, dtype=np.int32))  # ids each request holds
        self.pfx_hit = memoryview(np.zeros(n if self.pfx_on else 0, dtype=np.int64))  # tokens hit, all admissions
        self._pfx_off, self._pfx_ids, self._pfx_n, self._pfx_hit = self.pfx_off, self.pfx_ids, self.pfx_n, self.pfx_hit
        self.pfx_query_tok = 0
        self.pfx_hit_tok = 0
        self.pfx_chunk = int(getattr(workload, "prefix_chunk_tokens", PFX_CHUNK))
        if self.pfx_chunk % PFX_BLOCK or not PFX_BLOCK <= self.pfx_chunk < PFX_REF:
            raise ValueError(f"prefix_chunk_tokens {self.pfx_chunk}: a multiple of {PFX_BLOCK} below {PFX_REF}")

    @cython.locals(own=cython.longlong, pos=cython.longlong, tok=cython.longlong, v=cython.longlong,
                   ct=cython.longlong, c=cython.longlong, j=cython.longlong, o=cython.longlong, e=cython.longlong,
                   hit=cython.longlong, adj=cython.longlong, hitting=cython.bint, cache=dict, chunk=cython.longlong)
    def _pfx_plan(self, inst: Instance, rid):
        """Look request ``rid``'s prefix up in ``inst``'s cache: (hit tokens, KV adjustment) where the adjustment is
        what its admission adds to the KV in use besides its own prompt + generated tokens (negative: shared chunks
        already held by others; positive: a chunk cached longer than this request's part of it)."""
        chunk = self.pfx_chunk
        own = ((self.st._inp[rid] - 1) // _PFX_BLOCK) * _PFX_BLOCK  # full blocks, leaving the last token to compute
        o = self._pfx_off[rid]
        e = self._pfx_off[rid + 1]
        cache = inst.pfx
        pos = 0
        hit = 0
        adj = 0
        hitting = True
        j = o
        while j < e and pos < own:
            tok = own - pos
            if tok > chunk:
                tok = chunk
            v = cache.get(self._pfx_ids[j], -1)
            if v < 0:
                hitting = False
            else:
                ct = v % _PFX_REF
                c = ct if ct < tok else tok
                if hitting:
                    hit += c
                    hitting = c == tok
                adj += (ct - c) if v < _PFX_REF else -c
            pos += tok
            j += 1
        return hit, adj

    @cython.locals(own=cython.longlong, pos=cython.longlong, tok=cython.longlong, v=cython.longlong,
                   ct=cython.longlong, c=cython.longlong, j=cython.longlong, o=cython.longlong, e=cython.longlong,
                   k=cython.longlong, cache=dict, key=cython.longlong, chunk=cython.longlong, okey=object)
    def _pfx_acquire(self, inst: Instance, rid, hit):
        """Admit ``rid``'s prefix on ``inst`` (after ``_pfx_plan``): reference every chunk of it, cache the missing
        ones, count the hit; then evict free cached chunks (LRU) the KV in use now needs."""
        chunk = self.pfx_chunk
        own = ((self.st._inp[rid] - 1) // _PFX_BLOCK) * _PFX_BLOCK
        o = self._pfx_off[rid]
        e = self._pfx_off[rid + 1]
        cache = inst.pfx
        lru = inst.pfx_lru
        pos = 0
        k = 0
        j = o
        while j < e and pos < own:
            tok = own - pos
            if tok > chunk:
                tok = chunk
            key = self._pfx_ids[j]
            v = cache.get(key, -1)
            if v < 0:
                cache[key] = _PFX_REF + tok
            else:
                ct = v % _PFX_REF
                c = ct if ct < tok else tok
                if v < _PFX_REF:  # free cached: leaves the free queue
                    okey = key  # boxed here: Cython's int-indexed del on a mapping does not release its key
                    del lru[okey]
                    inst.pfx_lru_tok -= ct
                    inst.kv_prefill += ct - c
                else:
                    inst.kv_prefill -= c
                cache[key] = v + _PFX_REF
            pos += tok
            j += 1
            k += 1
        self._pfx_n[rid] = k
        self._pfx_hit[rid] += hit
        self.pfx_hit_tok += hit
        self.pfx_query_tok += self.st._inp[rid]
        self._pfx_evict(inst)

    @cython.locals(room=cython.longlong, v=cython.longlong)
    def _pfx_evict(self, inst: Instance):
        """Evict free cached chunks, least recently freed first, until they fit in the KV not in use."""
        room = inst.cap - (inst.S + inst.B * inst.it + inst.kv_prefill)
        lru = inst.pfx_lru
        while inst.pfx_lru_tok > room and lru:
            key = lru.popitem(last=False)[0]
            v = inst.pfx.pop(key)
            inst.pfx_lru_tok -= v % _PFX_REF

    @cython.locals(own=cython.longlong, tok=cython.longlong, v=cython.longlong, ct=cython.longlong,
                   c=cython.longlong, j=cython.longlong, o=cython.longlong, k=cython.longlong, cache=dict,
                   key=cython.longlong, chunk=cython.longlong, okey=object)
    def _pfx_release(self, inst: Instance, rid):
        """``rid`` leaves ``inst`` (finished or preempted): drop its references; chunks nobody holds go to the free
        queue, its last chunk first (evicted first, as vLLM frees a request's blocks in reverse)."""
        k = self._pfx_n[rid]
        if k == 0:
            return
        chunk = self.pfx_chunk
        own = ((self.st._inp[rid] - 1) // _PFX_BLOCK) * _PFX_BLOCK
        o = self._pfx_off[rid]
        cache = inst.pfx
        lru = inst.pfx_lru
        j = k - 1
        while j >= 0:
            tok = own - j * chunk
            if tok > chunk:
                tok = chunk
            key = self._pfx_ids[o + j]
            v = cache[key] - _PFX_REF
            ct = v % _PFX_REF
            c = ct if ct < tok else tok
            cache[key] = v
            if v < _PFX_REF:
                inst.kv_prefill -= ct - c
                okey = key  # boxed here, as in _pfx_acquire
                lru[okey] = None
                inst.pfx_lru_tok += ct
            else:
                inst.kv_prefill += c
            j -= 1
        self._pfx_n[rid] = 0

    @cython.locals(w=cython.longlong)
    def wm_tokens(self, inst: Instance):
        """KV tokens an admission must leave free on ``inst`` (vLLM's watermark blocks, in tokens)."""
        w = int(self.kv_wm * inst.cap)
        return w

    @cython.locals(oldest=cython.longlong, r=cython.longlong, j=cython.longlong)
    def _trim_runs(self, inst: Instance):
        """Forget decode runs older than every running request's join clock (bounded memory; entities.RunLog)."""
        oldest = inst.it
        for r in inst.running:
            j = self.st._join[r]
            if j < oldest:
                oldest = j
        inst.runs.trim(oldest)

    @cython.locals(m=cython.double)
    def _close_stint(self, inst: Instance, rid):
        """Fold the token gaps of the request's decode iterations since it joined into tbt_max."""
        if inst.it == self.st._join[rid]:
            return  # no decode iteration since joining
        m = inst.runs.gap_since(self.st._join[rid], self.st._tok_t[rid])
        if m > self.st._tbt_max[rid]:
            self.st._tbt_max[rid] = m

    @cython.locals(prev=cython.double, rem=cython.longlong)
    def _first_token(self, inst: Instance, rid, t: float, it):
        """Request ``rid``'s prefill ended at ``t`` (decode clock ``it``): its first token (or, after a recompute,
        its next one: the gap since its last token is a token gap), then completion if that was its last token,
        else its finish iteration on the instance's finish heap."""
        if self.st._t_first[rid] != self.st._t_first[rid]:
            self.st._t_first[rid] = t
        prev = self.st._tok_t[rid]
        if prev == prev and t - prev > self.st._tbt_max[rid]:  # recomputed after a preemption
            self.st._tbt_max[rid] = t - prev
        self.st._tok_t[rid] = t
        rem = self.st._out[rid] - (self.st._gen[rid] + 1)
        if rem <= 0:
            self._complete(inst, rid, t)
        elif self._pd is not None and self._pd.hand_off(inst, rid, t):
            pass  # a prefill pool's instance: the KV moves to a decode instance (disagg.py)
        else:
            self.st._fin[rid] = it + rem
            inst.fin_heap.push((it + rem) * _FIN_RID + rid)

    def _complete(self, inst: Instance, rid, t: float):
        self._close_stint(inst, rid)
        if inst.pfx is not None:
            self._pfx_release(inst, rid)
        inst.S -= inst.running.pop(rid)
        inst.B -= 1
        inst.res_tok -= self.st._inp[rid] + self.st._out[rid]  # scaling-signal counter (entities.signal_tokens)
        self.st._t_done[rid] = t
        self.st.n_done += 1
        if self.st._h_complete:
            self.st._done_buf.append(rid)

    @cython.locals(best=cython.longlong, best_t=cython.double, r=cython.longlong)
    def _victim(self, inst: Instance):
        """The running request vLLM would preempt (see the module docstring)."""
        if self.pre_vllm:
            if not self.victim_by_key:
                return next(reversed(inst.running))  # the most recently admitted (V1 FCFS ``running.pop()``)
            key = self._sched_key
            best_k = None
            best = -1
            for r in inst.running:  # V1 PRIORITY: max by (priority, arrival); later admission wins ties
                k = key(self.st._arr[r], self.st._tier[r], self.st._prio[r])
                if best < 0 or not k < best_k:
                    best, best_k = r, k
            return best
        arr = self.st._arr
        best = -1
        best_t = 0.0
        for r in inst.running:  # legacy: max by (arrival, rid)
            if best < 0 or arr[r] > best_t or (arr[r] == best_t and r > best):
                best, best_t = r, arr[r]
        return best

    def _preempt(self, inst: Instance, t: float):
        """KV exhausted: evict one running request (recomputed later, or swapped out with preemption_mode swap)."""
        self._evict(inst, self._victim(inst), t, self.pre_swap)

    @cython.locals(n=cython.int)
    def _make_room(self, inst: Instance, t: float):
        """Preempt until the running batch has one free KV slot per request for its next decode iteration (vLLM:
        ``while allocate_slots(...) is None: preempt``). Returns the number of requests preempted."""
        n = 0
        while inst.B > 0 and inst.cap - (inst.S + inst.B * inst.it + inst.kv_prefill) < inst.B:
            self._preempt(inst, t)
            n += 1
        return n

    @cython.locals(gen_now=cython.longlong)
    def _evict(self, inst: Instance, rid, t: float, swap):
        """Take running request ``rid`` off ``inst`` at an iteration boundary. Recompute (vLLM's recompute
        preemption): back to the waiting queue, prefilled again later over prompt + generated tokens. Swap: its KV
        (prompt + generated tokens but the last) goes to host memory; it resumes before any waiting request, without
        a prefill, once ``ctx * kv_bytes_per_token / swap_bandwidth`` has been paid (``_swap_in``)."""
        arr = self.st._arr
        gen_now = self.st._gen[rid] + 1 + (inst.it - self.st._join[rid])
        self._close_stint(inst, rid)
        if inst.it > self.st._join[rid]:
            self.st._tok_t[rid] = inst.last_dec_end  # its last token came from the last decode iteration
        if inst.pfx is not None:
            self._pfx_release(inst, rid)
        inst.S -= inst.running.pop(rid)
        inst.B -= 1
        inst.res_tok -= self.st._inp[rid] + self.st._out[rid]
        self.st._preempted[rid] += 1
        self.st._gen[rid] = gen_now
        if swap:
            inst.swapped.append(rid)
            return
        if (inst.B == 0 and self.st._inp[rid] + gen_now >= inst.cap) or (
                self.kv_wm > 0 and self.st._inp[rid] + gen_now > inst.cap - self.wm_tokens(inst)):
            self.st._drop(rid, "context_exceeds_kv_capacity")  # could never be admitted again (vLLM: NEVER)
            return
        self.st.seq += 1
        entry = (self.scheduler.key(arr[rid], self.st._tier[rid], self.st._prio[rid]), self.st.seq, rid)
        if self.sched_dynamic:
            insort(inst.waiting, entry)
        else:
            heappush(inst.waiting, entry)
        inst.work += self.st._inp[rid] + gen_now
        inst.q_tok += self.st._inp[rid] + gen_now

    @cython.locals(B=cython.longlong, free=cython.longlong, need=cython.longlong, tokens=cython.longlong,
                   rid=cython.longlong, it=cython.longlong, dur=cython.double, down=cython.double, batch=list,
                   swapped=list)
    def _swap_in(self, inst: Instance, t: float):
        """Resume swapped-out requests (in eviction order, before any waiting request, as vLLM does) while their
        KV fits and the batch has room: one SWAPIN segment of (their KV tokens x kv_bytes_per_token) / bandwidth,
        during which decodes pause; no token is produced. False if none fits."""
        B = inst.B
        free = inst.cap - (inst.S + B * inst.it + inst.kv_prefill) - self.wm_tokens(inst)  # vLLM: can_swap_in
        swapped = inst.swapped
        batch = []
        tokens = 0
        down = 0.0
        while swapped and B + len(batch) < inst.max_b:
            rid = swapped[0]
            need = self.st._inp[rid] + self.st._gen[rid] - 1
            if need > free:
                break
            swapped.pop(0)
            batch.append(rid)
            free -= need
            if self._mig_down is not None and rid in self._mig_down:
                down = max(down, self._mig_down.pop(rid))  # migrated in: its KV is already here (control.py)
            else:
                tokens += need
        if not batch:
            return False
        it = inst.it
        for rid in batch:
            need = self.st._inp[rid] + self.st._gen[rid] - 1
            inst.running[rid] = need - it
            inst.S += need - it
            inst.res_tok += self.st._inp[rid] + self.st._out[rid]
            self.st._join[rid] = it
            if self._pd is not None:
                self._pd.joined(rid, t)
        inst.B += len(batch)
        inst.batch = batch
        inst.phase = SWAPIN
        inst.seg_t0 = t
        inst.seg_n = 0
        dur = tokens * inst.spec.kv_bytes_per_token / (self.config.swap_bandwidth_gb_s * 1e9) + down
        inst.seg_end = t + dur
        self._sync(inst)
        self.st.seq += 1
        self.st.iq.schedule(inst.iid, t + dur, self.st.seq)
        return True

    def _apply_pending(self, inst: Instance, t: float):
        """Evictions a policy asked for (``PolicyAPI.evict``), due at this iteration boundary."""
        pending, inst.pending = inst.pending, []
        for rid, swap in pending:
            mig = swap and self._migrating is not None and rid in self._migrating
            if rid in inst.running:
                self._evict(inst, rid, t, swap)
                if mig:
                    self.control._land_migration(inst, rid, t)  # control.py: a live migration's switch-over
            elif mig:  # finished or preempted before the switch-over: the migration is void
                del self._migrating[rid]

    @cython.locals(kv=cython.longlong)
    def _sync(self, inst: Instance):
        kv = inst.S + inst.B * inst.it + inst.kv_prefill
        if inst.state == SERVING:
            inst.endpoint.kv_sum += kv - inst.kv
        inst.kv = kv
