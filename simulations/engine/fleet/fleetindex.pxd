# Cython declarations for fleetindex.py (used only when the engine is compiled; see simulations/engine/build.py).

cimport cython

from simulations.engine.core.codes cimport *
from simulations.engine.core.entities cimport Endpoint, Instance, decode_iters_done


@cython.final
cdef class EndpointIndex:
    cdef public Endpoint ep
    cdef public list heap
    cdef public long long next_seq
    cdef public double t_ref, r, rt, q, qt
    cdef public long long b, bn, updates
    cdef Instance _best
    cdef long long _best_w, _best_k, _best_seq

    cdef bint _less(self, Instance a, Instance b)
    cdef _up(self, Py_ssize_t p)
    cdef _down(self, Py_ssize_t p)
    cdef _set(self, Instance inst, bint run)
    cdef _unset(self, Instance inst)
    cpdef _rebuild(self, double t)
    cpdef add(self, Instance inst, double t)
    cpdef remove(self, Instance inst, double t)
    cpdef touch(self, Instance inst, double t)
    cdef _count(self, double t)
    cpdef (long long, long long) bounds(self, double t)
    cpdef (double, double) util_bounds(self, double t)
    cpdef tuple jsq(self, double t)
    cdef _visit(self, Py_ssize_t p, double t)
