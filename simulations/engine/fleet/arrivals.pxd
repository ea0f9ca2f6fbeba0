# Cython declarations for arrivals.py (used only when the engine is compiled; see simulations/engine/build.py).
# The request path is a part the Simulator owns; it holds the run state and the instance engine typed, so the fused
# arrival path's reads and calls (the per-request arrays, _join_queue) are C reads and calls.

from simulations.engine.core.state cimport RunState
from simulations.engine.instance.batching cimport InstanceEngine
from simulations.engine.core.entities cimport Endpoint, Instance
from simulations.engine.fleet.fleetindex cimport EndpointIndex


cdef class RequestPath:
    cdef dict __dict__
    cdef public object sim
    cdef public RunState st
    cdef public InstanceEngine ie
    cdef public dict _cands
    # the fused arrival path's bindings (set by _setup_fast_arrive)
    cdef object _rr_cache, _ep_choose, _inst_choose, _autoscaler, _act, _net_delay, _generic_arrive
    cdef list _scaling_events, _lists_by_key
    cdef Py_ssize_t _n_models
    cdef double _thr, _cooldown, _a_hi, _a_lo
    cdef bint _hook, _reactive, _ix_check
    cdef public bint _route_ctx
    # the per-request arrays the fused path reads (the instance engine's views: same buffers)
    cdef const int[:] _model, _region
    cdef const signed char[:] _tier
    cdef const long[:] _inp
    cdef int[:] _gen, _served_ep

    cdef _arrive_fast(self, long long rid, double t)
    cdef _request_hook(self, Endpoint ep, double t, long long rid)
    cdef bint _util_below(self, Endpoint ep, double t, double thr)
