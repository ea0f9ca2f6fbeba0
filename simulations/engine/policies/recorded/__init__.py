from simulations.engine.policies.recorded import strategy  # noqa: F401  (registers)
