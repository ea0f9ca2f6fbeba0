from simulations.engine.policies.dynamo_planner import strategy  # noqa: F401  (registers)
