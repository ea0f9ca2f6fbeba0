"""The instance engine (vLLM-like): KV-cache management (``kvcache``), chunked prefill (``chunked``) and batching
(``batching``), each the base of the next: together ``InstanceEngine``, the one part the Simulator owns for every
instance (``sim.instance_engine``); the latency model and its fitter (``perf``).

Compiled with Cython (``simulations.engine.build``); ``accel.extend`` puts a fresh build first on this
package's path.
"""

from simulations.engine import accel as _accel

_accel.extend(__name__, __path__)
