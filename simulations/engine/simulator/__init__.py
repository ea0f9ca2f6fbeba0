"""The Simulator (``loop``): the event loop of one run and the owner of its parts, above the packages they come from
(``core``: the run state, policy API and view; ``instance``: the instance engine; ``fleet``: routing, the fleet life
cycle, disaggregation), and the builder of a run's inputs (``scenario``: scenario JSON -> ``Scenario`` and its
workload, from the fleet's pools, the policies' parameters and the workload generator).

Compiled with Cython (``simulations.engine.build``); ``accel.extend`` puts a fresh build first on this
package's path.
"""

from simulations.engine import accel as _accel

_accel.extend(__name__, __path__)
