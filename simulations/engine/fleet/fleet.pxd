# Cython declarations for fleet.py (used only when the engine is compiled; see simulations/engine/build.py).
# FleetLifecycle is a plain class (the life cycle is not on the hot path): its methods are compiled, its state is
# in its __dict__.
