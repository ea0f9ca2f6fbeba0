# Cython declarations for control.py (used only when the engine is compiled; see simulations/engine/build.py).
# PolicyAPI is a plain class (policies call it through the view at their own pace): its methods are compiled,
# its state is in its __dict__.

# the run state's typed per-request views (running_requests reads them)
from simulations.engine.core.state cimport RunState
# the instance type and its decode clock (kv_used and running_generated read its fields as C members)
from simulations.engine.core.entities cimport Instance, decode_iters_done
