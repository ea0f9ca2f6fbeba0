from simulations.engine.policies.hpa import strategy  # noqa: F401  (registers)
