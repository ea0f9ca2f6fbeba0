# Cython declarations for chunked.py (used only when the engine is compiled; see simulations/engine/build.py).
# Chunked prefill: C methods of the instance engine's second type; _step is overridden by batching.pxd's InstanceEngine.

from simulations.engine.core.codes cimport *
from simulations.engine.core.entities cimport Instance, IntHeap
from simulations.engine.instance.kvcache cimport KVManager


cdef class ChunkedPrefill(KVManager):
    cdef _step(self, Instance inst, double t)
    cdef bint _mixed_step(self, Instance inst, double t, bint admit)
    cdef long long _mixed_admit(self, Instance inst, double t, long long free, long long reserve, long long left)
    cdef _mixed_start(self, Instance inst, double t, long long B, long long ctx)
    cdef bint _late(self, Instance inst, long long rid)
    cdef double _async_cut(self, Instance inst)
    cdef _mixed_end(self, Instance inst, double t)
