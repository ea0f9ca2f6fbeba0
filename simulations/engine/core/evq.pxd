# Cython declarations for evq.py (used only when the engine is compiled; see simulations/engine/build.py).

cimport cython


@cython.final
cdef class InstanceEvents:
    cdef public list t, s, pos, heap
    cdef public Py_ssize_t n
    # compiled: per instance id its event time, seq and heap position; the heap of instance ids (C arrays)
    cdef double *ct
    cdef long long *cs
    cdef Py_ssize_t *cpos
    cdef Py_ssize_t *cheap
    cdef public Py_ssize_t size, cap, hn

    cdef _grow(self, Py_ssize_t want)
    cpdef add_instance(self)
    cpdef schedule(self, Py_ssize_t iid, double t, long long seq)
    cpdef cancel(self, Py_ssize_t iid)
    cpdef double top_time(self)
    cpdef long long top_seq(self)
    cpdef Py_ssize_t pop(self) except -1
    cdef void _remove_at(self, Py_ssize_t p) noexcept
    cdef inline bint _less(self, Py_ssize_t a, Py_ssize_t b) noexcept
    cdef void _up(self, Py_ssize_t p) noexcept
    cdef void _down(self, Py_ssize_t p) noexcept
