# Cython declarations for loop.py (used only when the engine is compiled; see simulations/engine/build.py).
# The Simulator is the last of a chain of extension types (state.pxd: RunState -> kvcache.pxd -> chunked.pxd -> batching.pxd -> arrivals.pxd
# -> fleet.pxd -> control.pxd -> here); its fields are declared where their concept lives.

from simulations.engine.control cimport PolicyAPI
from simulations.engine.entities cimport Endpoint, Instance
from simulations.engine.evq cimport InstanceEvents
from simulations.engine.fleetindex cimport EndpointIndex


cdef class Simulator(PolicyAPI):
    pass
