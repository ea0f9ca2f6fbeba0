"""The Chiron family of strategy bundles. Django-free.

- ``chiron.default``: Chiron as built in simulations/engine/policies/chiron/ (local autoscaler, global queue,
  interactive / mixed / batch instances, interactive and batch autoscalers; theta 1/3, delta 0.1).
- ``chiron.static-batch``: the "local" ablation: the local autoscaler replaced by the deployment's static batch size.
- ``chiron.utilisation``: the "global" ablation: the global autoscaler and queue replaced by a KV-utilisation
  autoscaler (70 % / 30 %), requests dispatched at once.
- ``chiron.llumnix``: the Llumnix-like baseline, untuned (AlibabaPAI/llumnix defaults: average freeness checked
  every 10 s, +1 below 10, -1 above 60; freest-instance dispatch; the deployment's static max batch size; live
  migration of running requests with Llumnix's default policy, ``migration: "live"``).
- ``chiron.llumnix-queued`` / ``chiron.llumnix-no-migration``: the same with our earlier approximation (queued
  requests rebalanced every 10 s, no running request moves) / with no migration at all.
  "Tuned" = a knob sweep over it: on the page / API / CLI use ``tune`` with base ``chiron.llumnix`` and a grid
  over ``scale_up_below``, ``scale_down_above`` and ``max_batch`` (see LLUMNIX_TUNE_GRID).

Run them on a scenario with interactive (IW-F) and batch (NIW) traffic and the paper's SLOs, e.g.
fixtures/scenarios/chiron_fig19_small.json.
"""

from __future__ import annotations

from planner.comparisons.core.bundles import Bundle, register_bundle
from planner.comparisons.core.variants import STRATEGIES

STRATEGIES.setdefault("chiron", "Chiron (hierarchical backpressure): local batch-size autoscaler, global queue with "
                                "request groups, interactive / mixed / batch instances, IBP and BBP autoscalers")
STRATEGIES.setdefault("llumnix-batch", "Llumnix-like: average-freeness autoscaler (+1 below 10, -1 above 60 every "
                                       "10 s), freest-instance dispatch, a static max batch size (max_batch), "
                                       "live migration of running requests (migration: live / queued / none)")

SOURCES = {
    "theta=1/3": "Chiron sec. 5.2 (tail spike 3x the mean -> theta 1/3)",
    "delta=0.1": "not in the paper (footnote 2 only names the band); ours: one instance moves IBP by ~0.07-0.1 "
                 "at 10-15 interactive/mixed instances, so a narrower band would flap",
    "alpha=0.5": "Chiron Algorithm 1",
    "SLOs": "Chiron sec. 6: interactive TTFT 10 s / ITL 200 ms, batch TTFT 1 h / ITL 2 s (the scenario's slo)",
    "llumnix thresholds 10 / 60, 10 s": "AlibabaPAI/llumnix llumnix/config/default.py (simulations/engine/policies/baselines.py)",
    "llumnix migration": "AlibabaPAI/llumnix llumnix/config/default.py: REQUEST_MIGRATION_POLICY 'SR' (the shortest "
                         "running request; llumnix/llumlet/local_migration_scheduler.py), poll 0.05 s, migrate-out "
                         "threshold 3 (simulations/engine/policies/llumnix_migration.py)",
}
LLUMNIX_TUNE_GRID = {"scale_up_below": [10.0, 50.0], "scale_down_above": [60.0, 200.0], "max_batch": [256, 1024]}

_CHIRON = "Chiron: local batch-size backpressure + global queue + interactive/mixed/batch instances"
for name, params, desc in (
    ("chiron.default", {}, _CHIRON),
    ("chiron.static-batch", {"local": False}, "Chiron with static batch sizes in place of the local autoscaler "
                                              "(ablation)"),
    ("chiron.utilisation", {"global": "utilisation"}, "Chiron's local autoscaler with a KV-utilisation autoscaler "
                                                      "in place of the global one (ablation)"),
):
    register_bundle(Bundle(name=name, strategy="chiron", family="chiron", description=desc, params=params,
                           policy={"region_router": "local"}, sources=SOURCES))
for name, migration, desc in (
    ("chiron.llumnix", "live", "Llumnix-like baseline (untuned defaults, live migration of running requests; tune "
                               "with a knob sweep)"),
    ("chiron.llumnix-queued", "queued", "Llumnix-like with queued-request rebalancing instead of live migration "
                                        "(our earlier approximation)"),
    ("chiron.llumnix-no-migration", "none", "Llumnix-like without migration"),
):
    register_bundle(Bundle(name=name, strategy="llumnix-batch", family="chiron", description=desc,
                           params={"migration": migration},
                           policy={"region_router": "local", "instance_router": "llumnix-approx"}, sources=SOURCES))
