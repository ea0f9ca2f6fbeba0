# Cython declarations for view.py (used only when the engine is compiled; see simulations/engine/build.py).
# The view stays a plain Python class; the reads it makes per request hold the run state typed (``st._t_done[i]``
# is a C read of the same buffer as ``t_done``).

from simulations.engine.core.state cimport RunState
