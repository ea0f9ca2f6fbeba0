"""Every bundled scenario offered on the comparison form runs every strategy it is offered for."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from planner.comparisons.core import chiron_bundles  # noqa: F401  (registers the chiron strategies)
from planner.comparisons.core.runner import run_variant
from planner.comparisons.core.variants import STRATEGIES

# chiron and llumnix-batch read none of the reactive knobs these fixtures set (cooldown_s, ...), and their
# knob checks refuse them; they run on the chiron fixtures (planner/comparisons/tests/test_chiron_bundles.py)
OFFERED = sorted(s for s in STRATEGIES if s not in ("chiron", "llumnix-batch"))

SCENARIOS = Path(__file__).resolve().parents[3] / "fixtures" / "scenarios"


@pytest.mark.parametrize("path", sorted(SCENARIOS.glob("*.json")), ids=lambda p: p.stem)
def test_every_fixture_deployment_has_the_theta_the_lt_strategies_need(path):
    d = json.loads(path.read_text())
    refs = [ep.get("deployment") for ep in d["fleet"]["endpoints"]]  # aggregated, or the two pools' deployments
    refs += [ep[pool]["deployment"] for ep in d["fleet"]["endpoints"] for pool in ("prefill_pool", "decode_pool")
             if pool in ep]
    used = {ref for ref in refs if isinstance(ref, str)}
    missing = [name for name in used if not d["deployments"][name].get("theta_tps")]
    assert not missing, f"{path.name}: LT-I/U/UA fail without theta_tps on {missing}"


@pytest.mark.parametrize("fixture", ["small_reactive", "burst_reactive"])
@pytest.mark.parametrize("strategy", OFFERED)
def test_the_small_fixtures_run_every_strategy(fixture, strategy):
    d = json.loads((SCENARIOS / f"{fixture}.json").read_text())
    d["workload"]["synthetic"]["total_requests"] = 1500
    out = run_variant(d, {"key": strategy, "strategy": strategy, "scheduler": "", "knobs": {}}, base_dir=SCENARIOS)
    assert out["strategy"] == strategy and out["requests"] == 1500
