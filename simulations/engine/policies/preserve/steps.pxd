# Cython declarations for steps.py (used only when the engine is compiled; see simulations/engine/build.py).
# Steps, the projection cache and its per-instance entries become extension types whose integers are C long longs
# and whose requests and steps live in flat 64-bit buffers (typed memoryviews): no boxed int per request or step.

cimport cython


@cython.final
cdef class Steps:
    cdef public long long cap, horizon, off, rem_sum, n, m, x
    cdef long long[::1] buf


@cython.locals(i=cython.Py_ssize_t, j=cython.Py_ssize_t, v=cython.longlong)
cdef int _sort(long long[::1] a, Py_ssize_t n) except -1

@cython.locals(s=Steps, i=cython.Py_ssize_t, m=cython.Py_ssize_t, step=cython.Py_ssize_t, e=cython.longlong,
               c=cython.longlong, k=cython.longlong)
cdef Steps _steps_from(long long[::1] packed, Py_ssize_t n, long long cap, long long horizon, long long total,
                       long long rem_sum, long long x)


@cython.final
cdef class _Entry:
    cdef public long long n, phase, it, kv, offset, x
    cdef public object cap
    cdef long long[::1] rids, ctx, gen, pred
    cdef public object steps


@cython.final
cdef class ProjectionCache:
    cdef public long long horizon
    cdef public object extension
    cdef public dict entries, stats
    cdef long long[::1] scratch, orid, oprompt, opred
