from django.apps import AppConfig


class SimulationsConfig(AppConfig):
    name = "simulations"

    def ready(self):
        # the engine is Django-free: hand it the per-run work limits from settings once, at start-up
        from planner.limits import scenario_limits
        from simulations.engine.scenario.schema import set_default_limits

        set_default_limits(scenario_limits())
