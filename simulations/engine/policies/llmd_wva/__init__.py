from simulations.engine.policies.llmd_wva import strategy  # noqa: F401  (registers)
