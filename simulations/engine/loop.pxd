# Cython declarations for loop.py (used only when the engine is compiled; see simulations/engine/build.py).
# The Simulator becomes an extension type: the loop's hot state lives in C fields, the per-request arrays are
# typed memoryviews over the same numpy buffers the Python attributes view, and the instance engine's internal
# steps are C methods. Anything not declared here (policies' attributes, plain Python state) goes to __dict__,
# so policies see the same object either way.

from simulations.engine.entities cimport Endpoint, Instance
from simulations.engine.evq cimport InstanceEvents

cpdef long long work_now(Instance inst, double t)

cdef class Simulator:
    cdef dict __dict__
    cdef public bint fast, chunked, sched_dynamic, net_all, _in_arrival
    cdef public list heap
    cdef public InstanceEvents iq
    cdef public long long seq, n_done, n_arrived, events
    cdef public Py_ssize_t n
    cdef public double now, next_arr, t_work

    # typed views of the per-request arrays (the same buffers as req_arr, gen, ... )
    cdef const double[:] _arr
    cdef const long[:] _inp, _out
    cdef const signed char[:] _tier
    cdef const int[:] _model, _region
    cdef signed char[:] _prio
    cdef int[:] _gen, _join, _fin, _served_ep, _served_inst, _preempted
    cdef double[:] _t_first, _t_done, _t_admit, _tok_t, _tbt_max

    # the fused arrival path's bindings (set by _setup_fast_arrive)
    cdef object _rr_cache, _ep_choose, _inst_choose, _autoscaler, _act, _sched_key, _net_delay, _generic_arrive
    cdef list _scaling_events
    cdef double _thr, _cooldown, _a_hi, _a_lo
    cdef bint _hook, _reactive

    cdef _bind_views(self)
    cdef _arrive_fast(self, long long rid, double t)
    cdef _join_queue(self, Instance inst, long long rid, double t, long long need, long long k_done)
    cdef _segment_end(self, Instance inst, double t)
    cdef _trim_runs(self, Instance inst)
    cdef _close_stint(self, Instance inst, long long rid)
    cdef _complete(self, Instance inst, long long rid, double t)
    cdef _step(self, Instance inst, double t)
    cdef bint _mixed_step(self, Instance inst, double t)
    cdef _mixed_end(self, Instance inst, double t)
    cdef _preempt(self, Instance inst, double t)
    cdef _sync(self, Instance inst)
