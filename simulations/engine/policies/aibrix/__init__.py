from simulations.engine.policies.aibrix import strategy  # noqa: F401  (registers)
