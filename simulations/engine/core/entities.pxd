# Cython declarations for entities.py (used only when the engine is compiled; see simulations/engine/build.py).
# Instance and Endpoint become extension types with C fields: the hot loop reads and writes them as struct
# members. Every field stays public, so policies written in Python see the same attributes as uncompiled.

cimport cython

cdef class Endpoint
cdef class Instance


@cython.final
cdef class IntHeap:
    cdef long[::1] h
    cdef public Py_ssize_t n, cap

    cpdef _grow(self, Py_ssize_t cap)
    cpdef long top(self) except? -1
    cpdef push(self, long v)
    cpdef long pop(self) except? -1


@cython.final
cdef class RunLog:
    cdef long[::1] i0, mx
    cdef double[::1] t0, d0, rest, old
    cdef public Py_ssize_t lo, hi, mlo, mhi, cap, trim_at

    cpdef _alloc(self, Py_ssize_t cap)
    cdef void _compact(self) noexcept
    cdef _copy_to(self, i0, t0, d0, rest, vold, mx)
    cpdef Py_ssize_t count(self)
    cpdef clear(self)
    cpdef append(self, long long i0, double t0, double d0, double rest, double old)
    cpdef Py_ssize_t first_from(self, long long clock)
    cpdef double max_from(self, Py_ssize_t s)
    cpdef double gap_since(self, long long join, double tok_t) except? -1.0
    cpdef trim(self, long long oldest)

@cython.locals(e=cython.double, d0=cython.double, a=cython.double, b=cython.double, k=cython.longlong, n=cython.longlong)
cpdef long long decode_iters_done(Instance inst, double t)

@cython.locals(kv=cython.longlong)
cpdef long long signal_tokens(Instance inst, double t, int mode)

cdef class Instance:
    cdef public long long iid
    cdef public Endpoint endpoint
    cdef public object spec
    cdef public int state
    cdef public long long cap, max_b, max_bt
    cdef public double pc0, pc1, pc2, pcs, pcr, dc0, dcb, dcc
    cdef public list waiting
    cdef public dict running
    cdef public IntHeap fin_heap
    cdef public long long B, S, it, kv, work
    cdef public int phase
    cdef public double seg_t0
    cdef public long long seg_n
    cdef public double seg_d0, seg_a
    cdef public long long seg_B
    cdef public double seg_end
    cdef public list batch
    cdef public double busy_s, t_requested, t_ready, t_released
    cdef public object source
    cdef public long long rr
    cdef public bint donate_on_release
    cdef public RunLog runs
    cdef public double last_dec_end
    cdef public list prefilling
    cdef public long long kv_prefill
    cdef public list swapped, pending
    cdef public str kind
    cdef public dict policy_state
    cdef public long long adm
    cdef public long long ix_pos, ix_seq
    cdef public bint ix_run
    cdef public double ix_r, ix_rt, ix_q, ix_qt
    cdef public long long ix_b, ix_bn
    cdef public long long res_tok, q_tok
    cdef public bint v1
    cdef public dict pfx
    cdef public object pfx_lru
    cdef public long long pfx_lru_tok
    cdef public bint v1_async
    cdef public double last_arr


cdef class Endpoint:
    cdef public long long eid
    cdef public object config, spec
    cdef public str region
    cdef public long long region_idx
    cdef public str model
    cdef public long long model_idx
    cdef public str pool
    cdef public list serving, provisioning, draining
    cdef public long long kv_sum, cap_sum
    cdef public list backlog
    cdef public long long rr
    cdef public double last_scale_t
    cdef public str name
    cdef public object min_instances, max_instances
    cdef public dict state
    cdef public object clock
    cdef public bint weights_local
    cdef public double sig
    cdef public long long adm
    cdef public object ix
    cdef public int smode

    @cython.locals(inst=Instance, kv=cython.longlong, cap=cython.longlong)
    cpdef double util_at(self, double t)
