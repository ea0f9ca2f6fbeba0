# Cython declarations for loop.py (used only when the engine is compiled; see simulations/engine/build.py).
# The Simulator is the event loop; it owns its parts, the hot ones typed: the run state (state.pxd), the instance
# engine (batching.pxd: its steps are C calls) and the request path (arrivals.pxd: the fused arrival path in C);
# the fleet life cycle (fleet.py), the policy API (control.py) and the disaggregation part (disagg.pxd) are
# Python-level objects.

from simulations.engine.core.entities cimport Endpoint, Instance
from simulations.engine.core.evq cimport InstanceEvents
from simulations.engine.core.state cimport RunState
from simulations.engine.fleet.arrivals cimport RequestPath
from simulations.engine.fleet.fleetindex cimport EndpointIndex
from simulations.engine.instance.batching cimport InstanceEngine


cdef class Simulator:
    cdef dict __dict__
    cdef public RunState state
    cdef public InstanceEngine instance_engine
    cdef public RequestPath routing
    cdef public object lifecycle, control, _pd, policy_view

    cdef _heap_event(self, tuple ev, bint pending)
