"""The scenario schema: one gate for every caller; unknown keys, strict types, finite ranges, sandboxed
workloads and per-run limits. Django-free (no database)."""

from __future__ import annotations

import copy
import dataclasses
import json
import subprocess
import sys
from pathlib import Path

import pytest

from simulations.engine import ScenarioError, build_workload, parse_scenario
from simulations.engine.scenario.config import EngineConfig
from simulations.engine.scenario.schema import Engine, Limits, ScenarioInput

ROOT = Path(__file__).resolve().parents[2]
SMALL = json.loads((ROOT / "fixtures" / "scenarios" / "small_reactive.json").read_text())
ANCHOR = json.loads((ROOT / "fixtures" / "scenarios" / "code_anchor.json").read_text())
DEP = next(iter(SMALL["deployments"]))


def refused(mutate, base=SMALL, **kw) -> ScenarioError:
    d = copy.deepcopy(base)
    mutate(d)
    with pytest.raises(ScenarioError) as info:
        parse_scenario(d, **kw)
    return info.value


@pytest.mark.parametrize("path", sorted((ROOT / "fixtures" / "scenarios").glob("*.json")), ids=lambda p: p.stem)
def test_every_bundled_scenario_passes_the_schema(path):
    parse_scenario(json.loads(path.read_text()))


@pytest.mark.parametrize("mutate, where, hint", [
    (lambda d: d.update(quota=1), "quota", ""),
    (lambda d: d["strategy"].update(parms={}), "strategy.parms", "did you mean 'params'?"),
    (lambda d: d["engine"].update(max_tme_s=5), "engine.max_tme_s", "did you mean 'max_time_s'?"),
    (lambda d: d["fleet"]["endpoints"][0].update(mni=1), "fleet.endpoints[0].mni", "did you mean 'min'?"),
    (lambda d: d["slo"].setdefault("ttft_s", {}).update({"IW-X": 1}), "slo.ttft_s.IW-X", "did you mean"),
    (lambda d: d["deployments"][DEP]["prefill"].update(c3=1.0), f"deployments.{DEP}.prefill.c3", "c2"),
])
def test_an_unknown_key_is_refused_with_its_path_and_a_suggestion(mutate, where, hint):
    err = refused(mutate)
    assert err.field == where and "unknown key" in err.message
    assert hint in err.hint


@pytest.mark.parametrize("mutate, where", [
    (lambda d: d["slo"].setdefault("ttft_s", {}).update({"IW-F": "1"}), "slo.ttft_s.IW-F"),
    (lambda d: d["engine"].update(mode="fsat"), "engine.mode"),
    (lambda d: d["fleet"]["regions"][0]["spot_pool"].update({"x": "x"}), "fleet.regions[0].spot_pool.x"),
    (lambda d: d["fleet"]["endpoints"][0].update(initial=2.0), "fleet.endpoints[0].initial"),
    (lambda d: d.update(seed=True), "seed"),
    (lambda d: d["workload"]["synthetic"].update(peak_hour="NaN"), "workload.synthetic.peak_hour"),
    (lambda d: d["workload"]["synthetic"].update(peak_hour=float("nan")), "workload.synthetic.peak_hour"),
    (lambda d: d["workload"]["synthetic"].update(duration_s=float("inf")), "workload.synthetic.duration_s"),
    (lambda d: d["deployments"][DEP]["prefill"].update(c0=9.2e18), f"deployments.{DEP}.prefill.c0"),
    (lambda d: d["fleet"]["endpoints"][0].update(initial=2**70), "fleet.endpoints[0].initial"),
    (lambda d: d.update(seed=2**64), "seed"),
    (lambda d: d["strategy"].update(params={"cooldown_s": float("nan")}), "strategy.params.cooldown_s"),
    (lambda d: d["strategy"].update(autoscaler="reactive-unifed"), "strategy.autoscaler"),
    (lambda d: d["fleet"].update(network={"bins": [[1.5, 0, 1]]}), "fleet.network.bins[0][0]"),
])
def test_wrong_types_non_finite_and_out_of_range_numbers_name_the_field(mutate, where):
    assert refused(mutate).field == where


def test_a_misspelt_policy_name_gets_a_suggestion():
    err = refused(lambda d: d["strategy"].update(autoscaler="reactive-unifed"))
    assert "'reactive-unifed'" in err.message and "did you mean 'reactive-unified'?" in err.hint


@pytest.mark.parametrize("workload", [
    {"trace_path": "/etc/passwd"},
    {"trace_path": "../../planner/settings.py"},
    {"trace_path": "fixtures/traces/azure_code_2023.csv"},
])
def test_a_trace_path_is_refused_whatever_it_points_at(workload):
    err = refused(lambda d: d.update(workload=workload))
    assert err.field == "workload.trace_path" and "not accepted" in err.message
    assert "passwd" not in str(err) + err.hint and "root:" not in err.hint


@pytest.mark.parametrize("name", ["../traces/azure_code_2023.csv", "/etc/passwd", "azure_code_2023.csv",
                                  "fixtures/traces/azure_code_2023", "nope"])
def test_a_fixture_is_a_bundled_name_never_a_path(name):
    err = refused(lambda d: d.update(workload={"fixture": name}))
    assert err.field == "workload.fixture" and "azure_code_2023" in err.hint
    assert "does not exist" not in err.message  # no hint about what exists outside the whitelist


def test_a_synthesize_spec_is_a_bundled_name_or_inline_never_a_path():
    for name in ("fixtures/workloads/sageserve_day.json", "../../etc/passwd"):
        err = refused(lambda d, name=name: d.update(workload={"synthesize": name}))
        assert err.field == "workload.synthesize"
    parse_scenario({**copy.deepcopy(SMALL), "workload": {"synthesize": "sageserve_day"}})


def test_an_inline_synthesiser_spec_may_not_read_a_file():
    from planner.comparisons.services import validate_scenario

    spec = json.loads((ROOT / "fixtures" / "workloads" / "sageserve_day.json").read_text())
    spec["tokens"] = {"default": {"empirical": {"path": "/etc/passwd"}}}
    with pytest.raises(ScenarioError) as info:
        validate_scenario({**copy.deepcopy(SMALL), "workload": {"synthesize": spec}})
    assert info.value.field.startswith("workload.synthesize.tokens") and "not accepted" in info.value.message


def test_spec_overrides_are_validated_after_merging():
    from planner.comparisons.services import validate_scenario

    scen = json.loads((ROOT / "fixtures" / "scenarios" / "sageserve_day_burst8x.json").read_text())
    validate_scenario(scen)
    scen["workload"]["spec_overrides"]["tiers"]["IW-F"]["bursts"]["multiplier"] = 1e30
    with pytest.raises(ScenarioError) as info:
        validate_scenario(scen)
    assert info.value.field == "workload.synthesize.tiers.IW-F.bursts.multiplier"


def test_exactly_one_workload_source():
    assert refused(lambda d: d.update(workload={})).field == "workload"
    assert refused(lambda d: d["workload"].update(fixture="azure_code_2023")).field == "workload"


def test_a_synthetic_workload_above_the_request_cap_is_refused_before_it_is_generated():
    err = refused(lambda d: d["workload"]["synthetic"].update(total_requests=10**9))
    assert err.field == "workload.synthetic" and "limit" in err.message
    small = Limits(max_requests=100, max_sim_time_s=8 * 86400)
    assert refused(lambda d: None, limits=small).field == "workload.synthetic"


def test_a_trace_above_the_request_or_time_cap_is_refused_before_simulating():
    sc = parse_scenario(copy.deepcopy(ANCHOR), limits=Limits(max_requests=10, max_sim_time_s=1e6))
    with pytest.raises(ScenarioError, match="requests; the limit is 10"):
        build_workload(sc)
    sc = parse_scenario(copy.deepcopy(ANCHOR), limits=Limits(max_requests=10**6, max_sim_time_s=60))
    with pytest.raises(ScenarioError, match="simulated seconds"):
        build_workload(sc)
    assert len(build_workload(parse_scenario({**copy.deepcopy(ANCHOR),
                                              "workload": {**ANCHOR["workload"], "limit": 5}},
                                             limits=Limits(max_requests=10, max_sim_time_s=1e6)))) == 5


def test_simulated_time_is_capped_and_a_larger_max_time_is_refused():
    sc = parse_scenario(copy.deepcopy(SMALL), limits=Limits(max_requests=10**6, max_sim_time_s=7200))
    assert sc.engine.max_time_s == 7200  # unset -> the cap: no run simulates past it
    err = refused(lambda d: d["engine"].update(max_time_s=10_000), limits=Limits(max_sim_time_s=7200))
    assert err.field == "engine.max_time_s"


def test_a_field_added_to_a_config_dataclass_joins_the_schema():
    # the engine section is derived from EngineConfig: every dataclass field is in the schema
    names = {f.name for f in dataclasses.fields(EngineConfig)}
    assert names <= set(Engine.model_fields)
    assert set(ScenarioInput.model_fields) >= {"fleet", "workload", "strategy", "slo", "engine", "deployments"}


def test_the_schema_imports_without_django():
    code = "import sys, simulations.engine.scenario.schema, planner.optimizer.schema, simulations.engine.workload.generator.sageserve_spec; " \
           "assert 'django' not in sys.modules"
    subprocess.run([sys.executable, "-c", code], check=True, cwd=ROOT)


def test_a_misspelt_knob_is_refused_with_a_suggestion():
    err = refused(lambda d: d["strategy"]["params"].update(scale_out_abve=0.8))
    assert err.field == "strategy.params.scale_out_abve" and err.hint == "did you mean 'scale_out_above'?"


def test_every_knob_of_the_bundled_scenarios_and_comparison_strategies_is_known():
    from planner.comparisons.core.runner import engine_scenario_dict

    for path in sorted((ROOT / "fixtures" / "scenarios").glob("*.json")):
        d = json.loads(path.read_text())
        split = "prefill_pool" in path.read_text()  # P/D pools: only autoscalers that size both pools run on them
        for strategy in ("static", "reactive-unified", "reactive-siloed", "lt-i", "lt-u", "lt-ua"):
            scenario = engine_scenario_dict(d, {"strategy": strategy, "key": strategy})
            if split and strategy != "static":
                with pytest.raises(ScenarioError) as refused:
                    parse_scenario(scenario)
                assert refused.value.field == "strategy.autoscaler" and "prefill pool" in refused.value.message
            else:
                parse_scenario(scenario)
