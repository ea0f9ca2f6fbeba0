# Cython declarations for local.py (used only when the engine is compiled; see simulations/engine/build.py).
# An instance's state and the local autoscaler become extension types with C fields; every field stays public,
# so tests and reports written in Python see the same attributes as uncompiled.

cimport cython


@cython.final
cdef class InstanceState:
    cdef public long long ni, nb
    cdef public dict itl
    cdef public bint refused
    cdef public long long pump_it
    cdef public bint win_new
    cdef public double win_tok
    cdef public bint started, sat, last_up
    cdef public double t0, tok, itl_slo, last_t, prev_thr
    cdef public long long it0, last_it, last_b, limit


cpdef InstanceState state_of(inst)


@cython.final
cdef class LocalAutoscaler:
    cdef public double alpha, window_s
    cdef public long long min_batch, max_batch
    cdef public bint enabled, log_steps
    cdef public object static_batch
    cdef public list steps

    cpdef object observe_state(self, InstanceState st, inst, long long it, long long running, double now,
                               double itl_slo, bint saturated)
    cdef object _step(self, InstanceState st, inst, double now, double itl, double thr, double slo, bint sat)
