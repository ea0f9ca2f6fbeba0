"""The chiron.* bundles: registered, turned into engine scenarios, tunable by a knob sweep, and run."""

from __future__ import annotations

import json
from pathlib import Path

from planner.comparisons.core.bundles import bundle_names, get_bundle
from planner.comparisons.core.chiron_bundles import LLUMNIX_TUNE_GRID
from planner.comparisons.core.runner import engine_scenario_dict
from planner.comparisons.core.variants import build_variants
from simulations.engine import simulate
from simulations.engine.simulator.scenario import parse_scenario

TINY = json.loads((Path(__file__).resolve().parent / "chiron_tiny_scenario.json").read_text())
NAMES = ["chiron.default", "chiron.static-batch", "chiron.utilisation", "chiron.llumnix", "chiron.llumnix-queued",
         "chiron.llumnix-no-migration"]


def test_the_chiron_family_is_registered_with_its_sources():
    assert set(NAMES) <= set(bundle_names())
    assert get_bundle("chiron.llumnix").policy["instance_router"] == "llumnix-approx"
    assert "theta=1/3" in get_bundle("chiron.default").sources


def test_bundles_become_engine_scenarios_with_their_autoscaler_and_knobs():
    variants = build_variants(bundles=NAMES)
    by_key = {v["key"]: v for v in variants}
    d = engine_scenario_dict(TINY, by_key["chiron.static-batch"])
    assert d["strategy"]["autoscaler"] == "chiron" and d["strategy"]["params"] == {"local": False}
    d = engine_scenario_dict(TINY, by_key["chiron.llumnix"])
    assert d["strategy"]["autoscaler"] == "llumnix-batch" and d["strategy"]["instance_router"] == "llumnix-approx"
    parse_scenario(d)  # valid for the engine (knobs checked)
    for key, migration in (("chiron.llumnix", "live"), ("chiron.llumnix-queued", "queued"),
                           ("chiron.llumnix-no-migration", "none")):
        assert engine_scenario_dict(TINY, by_key[key])["strategy"]["params"] == {"migration": migration}


def test_llumnix_tuned_is_a_knob_sweep_over_the_untuned_bundle():
    variants = build_variants(bundles=["chiron.default", "chiron.llumnix"],
                              tune={"base": "chiron.llumnix", "grid": LLUMNIX_TUNE_GRID})
    tuning = [v for v in variants if v.get("role") == "tuning"]
    assert len(tuning) == 8 and {v["strategy"] for v in tuning} == {"llumnix-batch"}
    assert {v["knobs"]["max_batch"] for v in tuning} == {256, 1024}
    parse_scenario(engine_scenario_dict(TINY, tuning[0]))


def test_chiron_and_llumnix_run_the_tiny_scenario_and_chiron_queues_batch_work():
    out = {}
    for key in ("chiron.default", "chiron.llumnix"):
        v = next(v for v in build_variants(bundles=[key]) if v["key"] == key)
        r = simulate(parse_scenario(engine_scenario_dict(TINY, v)))
        out[key] = r
        assert r.summary["completed"] == r.summary["requests"]
    assert out["chiron.default"].slo["tiers"]["NIW"]["attainment"] >= 0.99


def test_chiron_variants_do_not_inherit_the_reactive_scenarios_thresholds():
    """A comparison of a reactive scenario (bench day: reactive thresholds and cooldown in strategy.params) with
    Chiron: Chiron's own ``scale_out_above`` (its utilisation ablation) keeps its default, the reactive cooldown is
    not handed to it (it would be refused), LT keeps the reactive layer's thresholds, router knobs pass to all."""
    root = Path(__file__).resolve().parents[3]
    scenario = json.loads((root / "fixtures/scenarios/bench_day.json").read_text())
    scenario["strategy"]["params"] = {"scale_out_above": 0.9, "scale_in_below": 0.2, "cooldown_s": 30,
                                      "mu_util_weight": 0.5}
    by_key = {v["key"]: v for v in build_variants(strategies=["lt-ua"], bundles=["chiron.utilisation",
                                                                                  "chiron.default"])}
    for name in ("chiron.utilisation", "chiron.default"):
        d = engine_scenario_dict(scenario, by_key[name])
        assert "scale_out_above" not in d["strategy"]["params"] and "cooldown_s" not in d["strategy"]["params"]
        assert d["strategy"]["params"]["mu_util_weight"] == 0.5
        parse_scenario(d)  # before: "strategy.params.cooldown_s: is not a knob of the 'chiron' autoscaler"
    lt = engine_scenario_dict(scenario, by_key["lt-ua"])["strategy"]["params"]
    assert lt["scale_out_above"] == 0.9 and lt["cooldown_s"] == 30


def _without_kv_bytes() -> dict:
    scenario = json.loads(json.dumps(TINY))
    for dep in scenario["deployments"].values():
        dep.pop("kv_bytes_per_token", None)
    return scenario


def test_a_strategy_that_moves_kv_is_refused_on_a_deployment_without_kv_bytes_per_token():
    import pytest

    from simulations.engine import ScenarioError

    scenario = _without_kv_bytes()
    by_key = {v["key"]: v for v in build_variants(bundles=NAMES)}
    for key in ("chiron.default", "chiron.utilisation", "chiron.llumnix"):
        with pytest.raises(ScenarioError) as exc:
            parse_scenario(engine_scenario_dict(scenario, by_key[key]))
        assert exc.value.field == "deployments.llama3.1-8b/a100-80gb/tp1.kv_bytes_per_token", key
        assert "kv_bytes_per_token" in exc.value.message and "131072" in exc.value.hint
    # strategies that never move KV still run on it
    for key in ("chiron.llumnix-queued", "chiron.llumnix-no-migration"):
        parse_scenario(engine_scenario_dict(scenario, by_key[key]))


def test_a_chiron_comparison_without_kv_bytes_per_token_is_a_400_naming_the_field(cast):
    from planner.comparisons.models import Comparison
    from planner.jobs.models import Job

    resp = cast.owner.api.post("/api/comparisons/", {"scenario": _without_kv_bytes(), "strategies": ["static"],
                                                     "bundles": ["chiron.default"]}, format="json")
    assert resp.status_code == 400, resp.content
    error = resp.json()["error"]
    assert error["where"] == "scenario.deployments.llama3.1-8b/a100-80gb/tp1.kv_bytes_per_token"
    assert "kv_bytes_per_token" in error["message"] and error["hint"]
    assert not Comparison.objects.exists() and not Job.objects.exists()  # nothing half stored
