# Cython declarations for arrivals.py (used only when the engine is compiled; see simulations/engine/build.py).

from simulations.engine.batching cimport InstanceEngine
from simulations.engine.entities cimport Endpoint, Instance
from simulations.engine.fleetindex cimport EndpointIndex


cdef class RequestPath(InstanceEngine):
    # the fused arrival path's bindings (set by _setup_fast_arrive)
    cdef object _rr_cache, _ep_choose, _inst_choose, _autoscaler, _act, _net_delay, _generic_arrive
    cdef list _scaling_events, _lists_by_key
    cdef Py_ssize_t _n_models
    cdef double _thr, _cooldown, _a_hi, _a_lo
    cdef bint _hook, _reactive, _ix_check
    cdef public bint _route_ctx

    cdef _arrive_fast(self, long long rid, double t)
    cdef _request_hook(self, Endpoint ep, double t, long long rid)
    cdef bint _util_below(self, Endpoint ep, double t, double thr)
