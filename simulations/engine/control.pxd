# Cython declarations for control.py (used only when the engine is compiled; see simulations/engine/build.py).

from simulations.engine.entities cimport Endpoint
from simulations.engine.fleet cimport FleetLifecycle


cdef class PolicyAPI(FleetLifecycle):
    pass
