"""Hardware catalogue core, Django-free: perf_model.csv reading and fitting, KV capacity, theta,
scaling rules, and the built-in catalogue (planner/catalogue/data/builtin.json)."""


def engine_spec(name: str) -> dict:
    """Engine deployment dict of a built-in deployment (KeyError if unknown); see builtin.engine_spec."""
    from planner.catalogue.builtin import engine_spec as _engine_spec

    return _engine_spec(name)


builtin_engine_spec = engine_spec
