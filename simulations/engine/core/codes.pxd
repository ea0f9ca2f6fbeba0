# The instance phase and life-cycle codes as C constants for the compiled engine modules (cimported by their
# .pxd; each .py imports the Python values from entities.py only when it runs uncompiled). The values must be
# those of simulations/engine/core/entities.py (checked by simulations/tests/test_monthperf.py).

cdef enum:
    # Instance.phase
    IDLE = 0
    PREFILL = 1
    DECODE = 2
    WAKE = 3
    MIXED = 4
    SWAPIN = 5
    # Instance.state
    PROVISIONING = 0
    SERVING = 1
    DRAINING = 2
    RELEASED = 3
