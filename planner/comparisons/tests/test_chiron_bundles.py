"""The chiron.* bundles: registered, turned into engine scenarios, tunable by a knob sweep, and run."""

from __future__ import annotations

import json
from pathlib import Path

from planner.comparisons.core.bundles import bundle_names, get_bundle
from planner.comparisons.core.chiron_bundles import LLUMNIX_TUNE_GRID
from planner.comparisons.core.runner import engine_scenario_dict
from planner.comparisons.core.variants import build_variants
from simulations.engine import simulate
from simulations.engine.scenario import parse_scenario

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
