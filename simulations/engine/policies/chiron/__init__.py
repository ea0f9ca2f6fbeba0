"""Chiron (Patke et al.): local batch-size backpressure (local.py), the global queue,
request groups and the waiting-time estimator (queue.py), instance types and the global autoscalers (policy.py),
and the Llumnix-like baseline with a batch-size knob (baselines.py). Django-free; public policy API only."""

from simulations.engine.policies.chiron import baselines, policy  # noqa: F401  (registers)
