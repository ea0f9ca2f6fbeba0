# Cython declarations for loop.py (used only when the engine is compiled; see simulations/engine/build.py).
# The Simulator is the instance engine (state.pxd: RunState -> kvcache.pxd -> chunked.pxd -> batching.pxd) plus the
# event loop; it owns the request path (arrivals.pxd, typed: the loop calls its fused arrival path in C), the
# fleet life cycle (fleet.py), the policy API (control.py) and the disaggregation part (disagg.pxd).

from simulations.engine.fleet.arrivals cimport RequestPath
from simulations.engine.instance.batching cimport InstanceEngine
from simulations.engine.core.entities cimport Endpoint, Instance
from simulations.engine.core.evq cimport InstanceEvents
from simulations.engine.fleet.fleetindex cimport EndpointIndex


cdef class Simulator(InstanceEngine):
    cdef public RequestPath routing
    cdef public object lifecycle, control

    cdef _heap_event(self, tuple ev, bint pending)
