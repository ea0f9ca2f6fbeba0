# Cython declarations for kvcache.py (used only when the engine is compiled; see simulations/engine/build.py).
# The KV-cache management of an instance: the root type of the instance engine, the part the Simulator owns
# (``sim.instance_engine``); it holds the run state typed, so ``self.st._gen[rid]`` is a C read.

from simulations.engine.core.codes cimport *
from simulations.engine.core.entities cimport Instance
from simulations.engine.core.state cimport RunState


cdef class KVManager:
    cdef dict __dict__
    cdef public RunState st
    cdef public object config, scheduler, control, lifecycle, policy_view, _pd
    cdef public bint fast, chunked, sched_dynamic
    cdef object _sched_key
    cdef public double kv_wm
    cdef public bint pre_vllm, pre_swap, victim_by_key, _key_fcfs
    cdef public bint pfx_on
    cdef public long long pfx_query_tok, pfx_hit_tok, pfx_chunk
    cdef const long[:] _pfx_off, _pfx_ids
    cdef int[:] _pfx_n
    cdef long[:] _pfx_hit

    cdef long long wm_tokens(self, Instance inst)
    cdef _trim_runs(self, Instance inst)
    cdef _close_stint(self, Instance inst, long long rid)
    cdef _first_token(self, Instance inst, long long rid, double t, long long it)
    cdef _complete(self, Instance inst, long long rid, double t)
    cdef long long _victim(self, Instance inst)
    cdef _preempt(self, Instance inst, double t)
    cdef int _make_room(self, Instance inst, double t)
    cdef _evict(self, Instance inst, long long rid, double t, bint swap)
    cdef bint _swap_in(self, Instance inst, double t)
    cdef _apply_pending(self, Instance inst, double t)
    cdef _sync(self, Instance inst)
    cdef tuple _pfx_plan(self, Instance inst, long long rid)
    cdef _pfx_acquire(self, Instance inst, long long rid, long long hit)
    cdef _pfx_evict(self, Instance inst)
    cdef _pfx_release(self, Instance inst, long long rid)
