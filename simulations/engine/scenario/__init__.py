"""A scenario's configuration, at the bottom of the engine's layers: its schema (``schema``), the frozen configuration
(``config``), the energy and device blocks (``power``), the run options (``runoptions``) and the input error
(``errors``). Scenario JSON -> configuration and workload is ``simulations.engine.simulator.scenario``, above the
packages it builds from."""
