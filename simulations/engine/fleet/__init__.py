"""The fleet: arrivals and routing (``arrivals``), per-endpoint routing indexes (``fleetindex``), the life cycle and
the spot pool (``fleet``), prefill/decode disaggregation (``disagg``) and its pools (``pools``).

Compiled with Cython (``simulations.engine.build``); ``accel.extend`` puts a fresh build first on this
package's path.
"""

from simulations.engine import accel as _accel

_accel.extend(__name__, __path__)
