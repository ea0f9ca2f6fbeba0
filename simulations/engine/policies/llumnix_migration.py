"""Llumnix-like scheduler WITH live migration of running requests (Sun et al., OSDI'24), as the autoscaler
``llumnix-migrate``: the ``llumnix`` average-freeness scaler of baselines.py (switch it off with
``scaling: false`` for a static fleet) plus Llumnix's migration loop. Dispatch stays the ``llumnix`` instance
router (freest instance). Uses only the public policy API (``migrate_running``, ``migration_copy_s``,
``running_requests``, ``kv_used``, ``queued_prompt_tokens``, ``request_count``).

Defaults are AlibabaPAI/llumnix ``llumnix/config/default.py``: ``POLLING_INTERVAL = 0.05`` s and
``PAIR_MIGRATION_FREQUENCY = 1`` (pair every poll), ``MIGRATE_OUT_THRESHOLD = 3.0`` on the load metric
``remaining_steps`` (load = - freeness, blocks per request: an instance migrates out when its freeness is below
-3, i.e. its queued demand exceeds its free KV by more than 3 blocks per request; it may receive when its load
is below the threshold), pair policy ``defrag_constrained`` (sources sorted by load, highest first, paired in
order with destinations sorted by load, lowest first: from the least free to the most free),
``REQUEST_MIGRATION_POLICY = 'SR'`` (our reading: the running request with the shortest context, cheapest to
move), ``LAST_STAGE_MAX_BLOCKS = 16``, ``MAX_STAGES = 3``.

Transfer-time model (the stages are ours, the shape is Llumnix's pipelined migration): stage 1 copies the
request's whole KV (prompt + generated tokens) at ``bandwidth_gb_s`` (default 25 GB/s, PCIe 4.0 x16, the paper's
A40s are on PCIe) while the request keeps decoding on the source; each later stage copies the tokens generated
during the previous one; when those are at most ``last_stage_max_blocks`` x 16 tokens the last stage runs:
``migrate_running`` with a downtime = their copy time + ``switch_overhead_s`` (0.02 s, ours: the request's
stall while the destination takes it over). A migration is abandoned when the request finishes, the
destination stops serving or has no room for the KV, or after ``max_stages`` stages. One migration in flight per
source and per destination. Not modelled: priorities, Llumnix's preempted-request trigger
(``num_killed_requests``), the destination's KV reservation during the pre-copy.

``blocking_copy`` (off by default) is the interference the PreServe paper gives as the reason for Llumnix's loss
("the communication overhead and delays from KV cache migration"; the paper gives no figure): no pre-copy, the
request stops decoding for the copy of its whole KV at ``bandwidth_gb_s`` (Llumnix's default backend is gloo,
``MIGRATION_BACKEND = "gloo"``, which stages the copy through host memory, so a lower bandwidth is the other
half of that cost). Not modelled: a copy slowing the source or destination GPU's own iterations.
"""

from __future__ import annotations

from simulations.engine.policies.baselines import BLOCK_TOKENS, LlumnixScaler, freeness_parts
from simulations.engine.policies.params import PolicyParams, knob
from simulations.engine.policies.registry import PolicyKind, register


class LiveMigrationParams(PolicyParams):
    """The migration loop's knobs (also read by llumnix-batch's live migration, chiron/baselines.py)."""

    poll_s: float = knob(0.05, "period of the migration loop (s)", gt=0)
    migrate_out_threshold: float = knob(3.0, "an instance migrates out when its freeness is below minus this "
                                             "(blocks per request)")
    bandwidth_gb_s: float = knob(25.0, "KV copy bandwidth (GB/s)", gt=0)
    switch_overhead_s: float = knob(0.02, "the request's stall at the switch-over (s)", ge=0)
    last_stage_max_blocks: int = knob(16, "the last stage copies at most this many blocks", ge=0)
    max_stages: int = knob(3, "a migration is abandoned after this many stages", ge=1)
    blocking_copy: bool = knob(False, "true: no pre-copy; the request stops decoding while its whole KV is copied "
                                      "(the migration delay the PreServe paper gives for Llumnix's latency spikes)")


LLUMNIX_LIVE = set(LiveMigrationParams.model_fields)


@register(PolicyKind.AUTOSCALER, "llumnix-migrate")
class LlumnixMigrate(LlumnixScaler):
    """Llumnix-like average-freeness scaling (``scaling``, default on) + live migration of running requests."""

    class Params(LiveMigrationParams, LlumnixScaler.Params):
        scaling: bool = knob(True, "false: a static fleet (migration only)")

    @classmethod
    def kv_bytes_use(cls, knobs) -> str:
        return "its live migration copies running requests' KV"

    def __init__(self, params, rng):
        super().__init__(params, rng)
        k = self.knobs
        self.scale_interval_s = k.interval_s
        self.scaling = k.scaling
        self.tick_s = k.poll_s
        self.threshold = k.migrate_out_threshold
        self.bandwidth = k.bandwidth_gb_s
        self.overhead = k.switch_overhead_s
        self.last_stage = k.last_stage_max_blocks * self.block
        self.max_stages = k.max_stages
        self.blocking = k.blocking_copy
        self.next_scale = 0.0
        self.flights: dict = {}  # rid -> [src, dst, stage end time, stage, tokens at stage start]
        self.stats = {"started": 0, "migrated": 0, "abandoned": 0}

    def on_tick(self, sim, now):
        if self.scaling and now >= self.next_scale:
            self.next_scale = now + self.scale_interval_s
            super().on_tick(sim, now)
        self._advance(sim, now)
        for ep in sim.endpoints:
            if len(ep.serving) > 1:
                self._pair(sim, ep, now)

    # ---------------------------------------------------------------- the migration loop
    def load(self, sim, inst, now) -> float:
        """Llumnix's migration load metric: minus the freeness, (M - sum V) / B in blocks (queued prompts as
        ``queued_tokens`` reads them)."""
        free, b = freeness_parts(sim, inst, now, self.block, self.queued_tokens(sim, inst))
        return -free / max(b, 1)

    def _ctx(self, sim, inst, rid, now):
        """Prompt + generated tokens of ``rid`` if it still runs on ``inst`` (O(1): the same value as its entry in
        ``running_requests``, without listing the whole batch), else None."""
        if rid not in inst.running:
            return None
        return sim.request_tokens(rid)[0] + sim.tokens_generated(rid, now)

    def _advance(self, sim, now):
        for rid, f in list(self.flights.items()):
            src, dst, t_end, stage, tok0 = f
            if now < t_end:
                continue
            ctx = self._ctx(sim, src, rid, now)
            if ctx is None or dst not in dst.endpoint.serving or stage >= self.max_stages:
                self._abandon(rid)
                continue
            fresh = ctx - tok0  # tokens generated during the stage just finished
            if fresh <= self.last_stage:
                room = dst.cap - sim.kv_used(dst, now) - self.queued_tokens(sim, dst)
                if room < ctx:
                    self._abandon(rid)
                    continue
                sim.migrate_running(rid, dst, now, sim.migration_copy_s(dst, fresh, self.bandwidth) + self.overhead)
                del self.flights[rid]
                self.stats["migrated"] += 1
            else:
                f[2] = now + sim.migration_copy_s(src, fresh, self.bandwidth)
                f[3] = stage + 1
                f[4] = ctx

    def _abandon(self, rid):
        del self.flights[rid]
        self.stats["abandoned"] += 1

    def _pair(self, sim, ep, now):
        busy = {f[0].iid for f in self.flights.values()} | {f[1].iid for f in self.flights.values()}
        load = {i.iid: self.load(sim, i, now) for i in ep.serving}
        src = sorted((i for i in ep.serving if load[i.iid] > self.threshold and i.iid not in busy and i.running),
                     key=lambda i: (-load[i.iid], i.iid))
        if not src:
            return
        dst = sorted((i for i in ep.serving if load[i.iid] < self.threshold and i.iid not in busy),
                     key=lambda i: (load[i.iid], i.iid))
        for s, d in zip(src, dst, strict=False):
            reqs = [(prompt + gen, rid) for rid, prompt, gen, _p in sim.running_requests(s, now)
                    if rid not in self.flights and not sim.migrating(rid)]
            if not reqs:
                continue
            ctx, rid = min(reqs)
            self.stats["started"] += 1
            if self.blocking:
                self._blocking(sim, rid, s, d, ctx, now)
                continue
            self.flights[rid] = [s, d, now + sim.migration_copy_s(s, ctx, self.bandwidth), 1, ctx]

    def _blocking(self, sim, rid, src, dst, ctx, now):
        """The copy without pre-copy: the request is switched over at once and stalls for its whole KV copy plus
        the switch-over (abandoned when the destination has no room for it)."""
        room = dst.cap - sim.kv_used(dst, now) - self.queued_tokens(sim, dst)
        if room < ctx:
            self.stats["abandoned"] += 1
            return
        sim.migrate_running(rid, dst, now, sim.migration_copy_s(src, ctx, self.bandwidth) + self.overhead)
        self.stats["migrated"] += 1


__all__ = ["LlumnixMigrate", "BLOCK_TOKENS"]
