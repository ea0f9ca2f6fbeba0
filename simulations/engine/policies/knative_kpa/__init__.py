from simulations.engine.policies.knative_kpa import strategy  # noqa: F401  (registers)
