# Cython declarations for fleet.py (used only when the engine is compiled; see simulations/engine/build.py).

from simulations.engine.arrivals cimport RequestPath
from simulations.engine.entities cimport Endpoint, Instance


cdef class FleetLifecycle(RequestPath):
    pass
