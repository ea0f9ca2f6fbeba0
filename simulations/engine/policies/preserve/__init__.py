"""PreServe (paper: seeds/001, spec 001): the load anticipator, the load-aware router, window forecasts
and the proactive scaler, plus its RQ2 scaling baselines. Django-free; uses the simulator's public policy API only.

- ``anticipator.py``: the projected KV fractions U_j of the next l iterations, on demand (fast mode stays exact)
- ``steps.py``: the same U_j kept as a few linear steps (the router's cache; exact; compiled with Cython)
- ``router.py``: the load-aware router with its hold queue
- ``knobs.py``: the router's and the autoscalers' knobs (pydantic models, not compiled)
- ``forecast.py``: window forecasters (``oracle-noise`` calibrated to Table 1, or ``forecasts.core`` methods)
- ``scaler.py``: the registered autoscalers ``preserve``, ``preserve-router``, ``preserve-forecast``,
  ``preserve-hybrid``, ``preserve-reactive``
- ``profile.py``: the capacity profile mu_p / mu_d / mu_t measured in our engine
- output-length prediction: ``strategy.predictor`` (``oracle``, ``table2-noise``, ``noisy-oracle``,
  ``bucket-median``; engine/workload/predictors.py, plug-in via ``PREDICTORS``)
"""

from simulations.engine import accel as _accel

_accel.extend(__name__, __path__)  # steps.py, router.py and scaler.py are compiled with Cython (accel.MODULES)

from simulations.engine.policies.preserve import scaler  # noqa: E402, F401  (registers)
