"""Django-free core of the benchmark app: parse real serving benchmarks, re-simulate them, calibrate the physics
latency model and score the simulator against the measurements."""
