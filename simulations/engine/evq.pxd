# Cython declarations for evq.py (used only when the engine is compiled; see simulations/engine/build.py).

cimport cython


@cython.final
cdef class InstanceEvents:
    cdef public list t, s, pos, heap
    cdef public Py_ssize_t n

    cpdef add_instance(self)
    cpdef schedule(self, Py_ssize_t iid, double t, long long seq)
    cpdef cancel(self, Py_ssize_t iid)
    cpdef double top_time(self)
    cpdef long long top_seq(self)
    cpdef Py_ssize_t pop(self) except -1
    cdef _remove_at(self, Py_ssize_t p)
    cdef bint _less(self, Py_ssize_t a, Py_ssize_t b)
    cdef _up(self, Py_ssize_t p)
    cdef _down(self, Py_ssize_t p)
