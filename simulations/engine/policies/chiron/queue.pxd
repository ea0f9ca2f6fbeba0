# Cython declarations for queue.py (used only when the engine is compiled; see simulations/engine/build.py).
# The output statistics, the global queue and an endpoint's batch side become extension types with C fields; every
# field stays public.

cimport cython


@cython.final
cdef class OutputStats:
    cdef public long long n
    cdef public double mean, m2

    cpdef add(self, double x)


@cython.final
cdef class GlobalQueue:
    cdef public long long k, n
    cdef public list centres, groups
    cdef public set slos_seen

    cpdef Py_ssize_t _group_of(self, double slo)


@cython.final
cdef class EndpointBatch:
    cdef public GlobalQueue queue
    cdef public OutputStats out_stats
    cdef public object done_tok, gen_tok, first_batch_t
    cdef public double r_new


@cython.final
cdef class RequestSLOs:
    cdef public signed char[::1] tier
    cdef public double[::1] ttft, itl

    cdef _grow(self, Py_ssize_t rid)
    cpdef int read(self, sim, Py_ssize_t rid) except? -2
    cpdef double ttft_of(self, Py_ssize_t rid) except? -1.0
    cpdef double itl_of(self, Py_ssize_t rid) except? -1.0
