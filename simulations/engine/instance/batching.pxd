# Cython declarations for batching.py (used only when the engine is compiled; see simulations/engine/build.py).
# The instance engine's internal steps: its third and last type, the one the Simulator and the request path hold.

from simulations.engine.core.codes cimport *
from simulations.engine.core.entities cimport Instance, IntHeap, RunLog, decode_iters_done
from simulations.engine.instance.chunked cimport ChunkedPrefill

cpdef long long work_now(Instance inst, double t)


cdef class InstanceEngine(ChunkedPrefill):
    cdef _join_queue(self, Instance inst, long long rid, double t, long long need, long long k_done)
    cdef _segment_end(self, Instance inst, double t)
    cdef _step(self, Instance inst, double t)
    cdef bint _admit(self, Instance inst, double t, long long B, long long kv_used)
    cdef _decode_run(self, Instance inst, double t, long long B, long long ctx, long long kv_used, bint admit)
    cdef _swap_in_end(self, Instance inst, double t)
