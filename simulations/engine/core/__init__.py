"""The bottom layer of the engine: the fleet entities (``entities``), each instance's next event (``evq``), the run
state (``state``), the control verbs policies call (``control``) and the one object policies receive (``view``).
It imports no other engine subpackage but the scenario's configuration; the Simulator that owns these parts is in
``simulations.engine.simulator``.

Compiled with Cython (``simulations.engine.build``); ``accel.extend`` puts a fresh build first on this
package's path.
"""

from simulations.engine import accel as _accel

_accel.extend(__name__, __path__)
