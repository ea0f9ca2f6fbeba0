# Cython declarations for kvcache.py (used only when the engine is compiled; see simulations/engine/build.py).
# The KV-cache management of an instance: C methods of the Simulator's second base type.

from simulations.engine.codes cimport *
from simulations.engine.entities cimport Instance
from simulations.engine.state cimport RunState


cdef class KVManager(RunState):
    cdef public double kv_wm
    cdef public bint pre_vllm, pre_swap, victim_by_key, _key_fcfs

    cdef long long wm_tokens(self, Instance inst)
    cdef _trim_runs(self, Instance inst)
    cdef _runs_append(self, Instance inst, double v)
    cdef double _runs_max_from(self, Instance inst, Py_ssize_t s) except? -1.0
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
