# Cython declarations for disagg.py (used only when the engine is compiled; see simulations/engine/build.py).

cimport cython

from simulations.engine.core.codes cimport *
from simulations.engine.core.entities cimport Endpoint, Instance, decode_iters_done


@cython.locals(kv=cython.longlong)
cdef _sync(Instance inst)
cdef _touch(Instance inst, double t)


cdef class Disaggregation:
    cdef public object sim
    cdef public dict decode_of, inflight, parked
    cdef public object t_xfer, t_land, t_join
    cdef double[:] _xfer, _land, _joinv
    cdef const long[:] _inp, _out
    cdef int[:] _gen, _served_inst
    cdef public long long xfer_tokens
    cdef public double xfer_bytes
    cdef dict _mig_down
    cdef object _push, _boundary

    cpdef _choose(self, Endpoint dec, double t)
    cdef _send(self, long long rid, Instance src, Instance dst, long long tokens, object link, double t)
    cdef _release(self, Instance inst, long long tokens, double t)
