"""The Llumnix-like baseline with its max batch size as a knob (for the "tuned" sweep of the Chiron comparison).

``llumnix-batch`` = the ``llumnix`` autoscaler (policies/baselines.py: average freeness every 10 s, +1 below 10,
-1 above 60, one instance at a time) that also fixes every instance's max batch size to ``max_batch`` (default:
the deployment's ``max_batch_size``, vLLM's static ``max_num_seqs``), never adapted. Use it with the ``llumnix``
instance router. Llumnix-like "tuned" = the sweep point of (scale_up_below, scale_down_above, max_batch) with the
best SLO attainment, then the fewest GPU-hours (tests/benchmarks/reproduce_chiron.py).
"""

from __future__ import annotations

from simulations.engine.policies.baselines import LlumnixScaler
from simulations.engine.policies.registry import PolicyKind, register


@register(PolicyKind.AUTOSCALER, "llumnix-batch")
class LlumnixBatch(LlumnixScaler):
    def __init__(self, params, rng):
        super().__init__(params, rng)
        mb = self.params.get("max_batch")
        self.max_batch = int(mb) if mb else None
        if self.max_batch is not None and self.max_batch < 1:
            raise ValueError("llumnix-batch: max_batch must be >= 1")

    def _fix(self, sim, inst, now):
        if self.max_batch is not None:
            sim.set_max_batch(inst, self.max_batch, now)

    def on_start(self, sim, now):
        for ep in sim.endpoints:
            for inst in ep.serving:
                self._fix(sim, inst, now)

    def on_instance_ready(self, sim, inst, now):
        self._fix(sim, inst, now)
