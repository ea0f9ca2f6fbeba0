"""The preserve.* RQ3 baseline bundles: the paper's MU router is registered, becomes an engine scenario
with its instance router, and runs on the RQ3 fixture (Django-free, no worker)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from planner.comparisons.core.bundles import bundle_names, get_bundle
from planner.comparisons.core.runner import engine_scenario_dict
from planner.comparisons.core.variants import build_variants
from simulations.engine import simulate
from simulations.engine.scenario.config import ScenarioError
from simulations.engine.simulator.scenario import parse_scenario

BASE = json.loads((Path(__file__).resolve().parents[3] / "fixtures/scenarios/preserve_routing.json").read_text())


def test_the_papers_mu_baseline_is_a_bundle_with_its_sources():
    assert {"preserve.baseline-gpu-memory-usage", "preserve.baseline-memory-usage"} <= set(bundle_names())
    b = get_bundle("preserve.baseline-gpu-memory-usage")
    assert b.policy == {"instance_router": "gpu-memory-usage"} and b.strategy == "static"
    assert any("sec. 3.2.2" in v for v in b.sources.values())
    assert "ours" in get_bundle("preserve.baseline-memory-usage").description


def test_the_papers_mu_bundle_runs_the_rq3_fixture_differently_from_ours():
    sc = json.loads(json.dumps(BASE))
    sc["workload"]["synthetic"].update(rate_rps=12.0, duration_s=60)
    out = {}
    for key in ("preserve.baseline-gpu-memory-usage", "preserve.baseline-memory-usage"):
        v = next(v for v in build_variants(bundles=[key]) if v["key"] == key)
        d = engine_scenario_dict(sc, v)
        assert d["strategy"]["instance_router"] == get_bundle(key).policy["instance_router"]
        r = simulate(parse_scenario(d))
        assert r.summary["completed"] == r.summary["requests"] > 600
        out[key] = list(r.requests["instance"])
    assert out["preserve.baseline-gpu-memory-usage"] != out["preserve.baseline-memory-usage"]


def test_a_bad_mu_weight_is_refused_when_the_scenario_is_built():
    sc = json.loads(json.dumps(BASE))
    sc["strategy"] = {**sc["strategy"], "instance_router": "gpu-memory-usage", "params": {"mu_util_weight": -1}}
    sc["workload"]["synthetic"].update(duration_s=5)
    with pytest.raises(ScenarioError, match="mu_util_weight"):
        simulate(parse_scenario(sc))
