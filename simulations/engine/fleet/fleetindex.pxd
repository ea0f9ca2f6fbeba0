# Cython declarations for fleetindex.py (used only when the engine is compiled; see simulations/engine/build.py).

cimport cython

from simulations.engine.core.codes cimport *
from simulations.engine.core.entities cimport Endpoint, Instance, decode_iters_done

cdef long long _MARGIN


@cython.final
cdef class EndpointIndex:
    cdef public Endpoint ep
    cdef public long long next_seq
    cdef public double t_ref, r, rt, q, qt
    cdef public long long b, bn, updates
    cdef public list insts, free
    cdef public Py_ssize_t cap, n, en, ns
    cdef public bint g_on
    cdef public long long g_w
    cdef Py_ssize_t _best
    cdef long long _best_w, _best_k, _best_seq
    # per slot: key, serving order, heap position, key expiry, expiry-heap position; the heaps and the walk's list
    # of evaluated slots (memoryviews on the a_* arrays)
    cdef public object a_lb, a_seq, a_pos, a_h, a_epos, a_hs, a_es, a_seen
    cdef long long[::1] lb, seq, pos, epos, hs, es, seen
    cdef double[::1] h

    cpdef _grow(self, Py_ssize_t want)
    cdef void _up(self, Py_ssize_t p) noexcept
    cdef void _down(self, Py_ssize_t p) noexcept
    cdef _set(self, Instance inst, bint run)
    cdef _unset(self, Instance inst)
    cdef int _key(self, Py_ssize_t s, Instance inst, double t) except -1
    cdef int _rekey(self, Py_ssize_t s, Instance inst, double t) except -1
    cpdef _rebuild(self, double t)
    cpdef add(self, Instance inst, double t)
    cpdef remove(self, Instance inst, double t)
    cpdef touch(self, Instance inst, double t)
    cdef _count(self, double t)
    cpdef (long long, long long) bounds(self, double t)
    cpdef (double, double) util_bounds(self, double t)
    cpdef tuple jsq(self, double t)
    cdef _visit(self, Py_ssize_t p, double t)


cdef void _eup(EndpointIndex ix, Py_ssize_t p) noexcept
cdef void _edown(EndpointIndex ix, Py_ssize_t p) noexcept
cdef void _expire_at(EndpointIndex ix, Py_ssize_t s, double h) noexcept
