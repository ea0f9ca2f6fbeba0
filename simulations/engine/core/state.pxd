# Cython declarations for state.py (used only when the engine is compiled; see simulations/engine/build.py).
# RunState is a part the Simulator owns (``sim.state``); the parts that read it hold it typed (``cdef RunState st``),
# so ``st._gen[rid]`` is a C read. The loop's hot state lives in C fields, the per-request arrays are typed
# memoryviews over the same numpy buffers the Python attributes view; the rest (req_arr, dropped, ...) is in
# its __dict__.

from simulations.engine.core.evq cimport InstanceEvents


cdef class RunState:
    cdef dict __dict__
    cdef public bint net_all, _in_arrival
    cdef public list heap
    cdef public InstanceEvents iq
    cdef public long long seq, n_done, n_arrived, events
    cdef public Py_ssize_t n
    cdef public double now, next_arr, t_work

    # typed views of the per-request arrays (the same buffers as req_arr, gen, ... )
    cdef const double[:] _arr
    cdef const long[:] _inp, _out
    cdef const signed char[:] _tier
    cdef const int[:] _model, _region
    cdef signed char[:] _prio
    cdef int[:] _gen, _join, _fin, _served_ep, _served_inst, _preempted
    cdef double[:] _t_first, _t_done, _t_admit, _tok_t, _tbt_max
    # the policy API's hooks (switched on only when the policy asks: control.py)
    cdef public bint _h_batch, _h_complete, _h_release, _h_any
    cdef public list _done_buf

    cpdef _bind_views(self)
