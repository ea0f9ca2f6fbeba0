"""Chiron (Patke et al.): local batch-size backpressure (local.py), the global queue,
request groups and the waiting-time estimator (queue.py), instance types and the global autoscalers (policy.py),
their knobs (knobs.py),
and the Llumnix-like baseline with a batch-size knob (baselines.py). Django-free; public policy API only."""

from simulations.engine import accel as _accel

_accel.extend(__name__, __path__)  # queue.py, local.py and policy.py are compiled with Cython (accel.MODULES)

from simulations.engine.policies.chiron import baselines, policy  # noqa: E402, F401  (registers)
