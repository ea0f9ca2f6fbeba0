"""The Llumnix-like baseline of the Chiron comparison: a static max batch size as a knob and three ways to move load.

``llumnix-batch`` = the ``llumnix`` autoscaler (policies/baselines.py: average freeness every 10 s, +1 below 10,
-1 above 60, one instance at a time) that also fixes every instance's max batch size to ``max_batch`` (default:
the deployment's ``max_batch_size``, vLLM's static ``max_num_seqs``), never adapted. Use it with the ``llumnix``
instance router (or ``llumnix-approx`` below for dumps of hundreds of thousands of requests). ``migration``:

- ``"live"`` (default): Llumnix as configured by default, live migration of RUNNING requests only: the
  ``llumnix-migrate`` loop (policies/llumnix_migration.py, reused as a component with its scaling off; its knobs
  ``poll_s`` 0.05, ``migrate_out_threshold`` 3, ``bandwidth_gb_s`` 25, ...), AlibabaPAI/llumnix
  ``llumnix/config/default.py`` ``REQUEST_MIGRATION_POLICY = 'SR'`` (``llumnix/llumlet/local_migration_scheduler.py``:
  'SR' = the shortest running request; waiting requests move only under 'FCW' / 'FCWSR'). Its load metric reads
  the queued prompts as estimated by ``llumnix-approx`` (queued requests x mean prompt so far, O(1) per instance;
  the exact sum is O(queue), and the loop polls every 50 ms).
- ``"queued"``: our earlier approximation: queued requests migrate between instances every 10 s and when an
  instance becomes ready (``rebalance``); no running request moves.
- ``"none"``: no migration at all.

``migrate`` (bool, older knob) still reads as ``"queued"`` / ``"none"`` when ``migration`` is not given.
Llumnix-like "tuned" = the sweep point of (scale_up_below, scale_down_above, max_batch) with the best SLO
attainment, then the fewest GPU-hours (tests/benchmarks/reproduce_chiron.py).
"""

from __future__ import annotations

from typing import Literal

from simulations.engine.policies.baselines import BLOCK_TOKENS, LlumnixScaler, freeness_parts
from simulations.engine.policies.llumnix_migration import LLUMNIX_LIVE, LiveMigrationParams, LlumnixMigrate
from simulations.engine.policies.params import knob
from simulations.engine.policies.registry import PolicyKind, register
from simulations.engine.policies.routers import InstanceRouter

# the knobs of the live-migration loop (LlumnixMigrate's without ``scaling``) and Llumnix's block size
LIVE_KNOBS = (*sorted(LLUMNIX_LIVE), "block_tokens")


class MeanPrompt:
    """Mean prompt length of the requests arrived so far, kept incrementally (O(new arrivals) per call)."""

    def __init__(self):
        self._k = 0
        self._sum = 0.0

    def __call__(self, sim) -> float:
        k = sim.n_arrived
        if k > self._k:
            self._sum += float(sim.observed()["input_tokens"][self._k:k].sum())
            self._k = k
        return self._sum / self._k if self._k else 0.0


def approx_queued_tokens(inst, mean_prompt: float) -> float:
    """The KV tokens of the requests queued on ``inst``, estimated as (waiting + prefilling requests) x the mean
    prompt so far: O(1), where the exact sum is O(queue)."""
    return (len(inst.waiting) + len(inst.prefilling)) * mean_prompt


class ApproxLiveMigration(LlumnixMigrate):
    """The ``llumnix-migrate`` loop (scaling off) whose load metric estimates the queued prompts as ``llumnix-approx``
    does: (waiting + prefilling requests) x the mean prompt so far."""

    def __init__(self, params, rng):
        super().__init__({**{k: params[k] for k in LIVE_KNOBS if k in params}, "scaling": False}, rng)
        self.mean_prompt = MeanPrompt()

    def queued_tokens(self, sim, inst) -> float:
        return approx_queued_tokens(inst, self.mean_prompt(sim))


@register(PolicyKind.AUTOSCALER, "llumnix-batch")
class LlumnixBatch(LlumnixScaler):
    class Params(LiveMigrationParams, LlumnixScaler.Params):
        max_batch: int | None = knob(None, "a static max batch size on every instance (none or 0: the "
                                           "deployment's)", ge=0)
        migration: Literal["live", "queued", "none"] | None = knob(
            None, "'live': Llumnix's live migration of running requests (default); 'queued': waiting queues "
                  "rebalanced every 10 s; 'none'")
        migrate: bool = knob(True, "older spelling: true = migration 'queued', false = 'none'")
        migrate_slack: int = knob(8, "'queued': a waiting queue is brought within this many requests of the mean",
                                  ge=0)
        approx_queue: bool = knob(True, "the average freeness estimates queued prompts (queued requests x mean "
                                        "prompt) instead of summing them")

    @staticmethod
    def migration_of(k) -> str:
        legacy = "queued" if k.migrate else "none"
        return k.migration or ("live" if "migrate" not in k.model_fields_set else legacy)

    @classmethod
    def kv_bytes_use(cls, knobs) -> str:
        return "its live migration copies running requests' KV" if cls.migration_of(knobs) == "live" else ""

    def __init__(self, params, rng):
        super().__init__(params, rng)
        k = self.knobs
        self.max_batch = k.max_batch or None
        self.migration = self.migration_of(k)
        self.live = ApproxLiveMigration(self.params, rng) if self.migration == "live" else None
        self.interval_s = self.tick_s  # the scaler's period (10 s); with live migration the tick is the poll
        self.next_scale = self.interval_s
        if self.live is not None:
            self.tick_s = self.live.tick_s
        self.migrated = 0  # queued requests moved ("queued"); live migrations: sim.migrations()
        self.mean_prompt = MeanPrompt()

    def _fix(self, sim, inst, now):
        if self.max_batch is not None:
            sim.set_max_batch(inst, self.max_batch, now)

    def on_start(self, sim, now):
        for ep in sim.endpoints:
            for inst in ep.serving:
                self._fix(sim, inst, now)

    def on_instance_ready(self, sim, inst, now):
        self._fix(sim, inst, now)
        if self.migration == "queued":
            self.rebalance(sim, inst.endpoint, now)

    def on_tick(self, sim, now):
        if self.live is None or now >= self.next_scale - 1e-9:
            self.next_scale = now + self.interval_s
            super().on_tick(sim, now)
            if self.migration == "queued":
                for ep in sim.endpoints:
                    self.rebalance(sim, ep, now)
        if self.live is not None:
            self.live.on_tick(sim, now)

    def rebalance(self, sim, ep, now):
        """``migration: "queued"`` (our earlier approximation of Llumnix's migration): only *queued* requests move
        (no KV to copy): every waiting queue is brought to within
        ``migrate_slack`` (8) requests of the endpoint's mean, the excess (the back of a queue) going to the
        instances with the shortest queues."""
        serving = [i for i in ep.serving]
        if len(serving) < 2:
            return
        total = sum(len(i.waiting) for i in serving)
        target = total / len(serving)
        slack = self.knobs.migrate_slack
        moved = []
        for inst in serving:
            excess = len(inst.waiting) - int(target) - slack
            if excess > 0:
                moved += sim.withdraw_waiting(inst, excess)
        if not moved:
            return
        short = sorted(serving, key=lambda i: (len(i.waiting), i.iid))
        k = 0
        for inst in short:
            room = int(target) + 1 - len(inst.waiting)
            while room > 0 and k < len(moved):
                sim.dispatch(moved[k], inst, now)
                k += 1
                room -= 1
        for rid in moved[k:]:
            sim.dispatch(rid, short[0], now)
        self.migrated += len(moved)

    def queued_tokens(self, sim, inst):
        """The average freeness reads queued prompts as ``llumnix-approx`` does (queued requests x mean prompt so
        far) when ``approx_queue`` (default true), else their exact sum."""
        if not self.knobs.approx_queue:
            return super().queued_tokens(sim, inst)
        return approx_queued_tokens(inst, self.mean_prompt(sim))


@register(PolicyKind.INSTANCE_ROUTER, "llumnix-approx")
class LlumnixDispatchApprox(InstanceRouter):
    """``llumnix`` dispatch (the freest instance, (M - sum V) / B in 16-token blocks) with the queued prompts' KV
    estimated as (queued requests) x (mean prompt of the requests arrived so far) instead of summed request by
    request: O(1) per instance, where the exact sum is O(queue) and makes a 1M-request dump (queues of tens of
    thousands per instance) quadratic. Everything else as ``llumnix``; the autoscaler still reads exact sums."""

    def __init__(self, sim, params):
        super().__init__(sim, params)
        self._mean_prompt = MeanPrompt()

    def choose(self, ep):
        sim = self.view
        t = sim.now
        mean = self._mean_prompt(sim)

        def freeness(inst):
            free, b = freeness_parts(sim, inst, t, BLOCK_TOKENS, approx_queued_tokens(inst, mean))
            return free / max(b, 1)

        return max(ep.serving, key=lambda i: (freeness(i), -i.iid))
