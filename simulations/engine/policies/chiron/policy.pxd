# Cython declarations for policy.py (used only when the engine is compiled; see simulations/engine/build.py).
# The policy itself stays a Python class (it mixes in BatchScaling); its hooks read the typed per-instance state,
# local autoscaler and queue through these declarations.

from simulations.engine.core.entities cimport Instance
from simulations.engine.policies.chiron.local cimport InstanceState, LocalAutoscaler, state_of
from simulations.engine.policies.chiron.queue cimport EndpointBatch, GlobalQueue, OutputStats, RequestSLOs

cpdef InstanceState state_on(Instance inst)
cpdef long long limit_of(InstanceState st, Instance inst) except? -1
cpdef bint has_room(sim, Instance inst, InstanceState st, now, long long prompt, long long local_queue,
                    double kv_room) except -1
