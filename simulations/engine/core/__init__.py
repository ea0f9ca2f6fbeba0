"""The Simulator and what it holds: the event loop (``loop``), each instance's next event (``evq``), the run state
(``state``), the fleet entities (``entities``), the control verbs policies call (``control``) and the one object
policies receive (``view``).

Compiled with Cython (``simulations.engine.build``); ``accel.extend`` puts a fresh build first on this
package's path.
"""

from simulations.engine import accel as _accel

_accel.extend(__name__, __path__)
