"""Fair comparisons in the comparison layer: named strategy bundles, seeds, the equal-SLO tuned baseline (hand-computed),
the CLI and the API on top of them."""

from __future__ import annotations

import io
import json

import pytest
from django.core.management import call_command

from planner.comparisons.core.bundles import (
    Bundle,
    BundleError,
    apply_signal_rule,
    bundle_names,
    get_bundle,
    register_bundle,
)
from planner.comparisons.core.fair import fair_summary
from planner.comparisons.core.runner import engine_scenario_dict, with_seed
from planner.comparisons.core.variants import VariantError, build_variants, pick_baseline
from planner.comparisons.models import Comparison, VariantResult
from planner.comparisons.tests.test_comparisons import TINY, fake_engine, fake_summary  # noqa: F401
from planner.jobs.models import Job

# ---------------------------------------------------------------- bundles


def test_both_sageserve_presets_are_registered_for_every_strategy():
    names = bundle_names()
    for s in ("reactive-unified", "lt-i", "lt-u", "lt-ua"):
        assert f"sageserve-text.{s}" in names and f"sageserve-code.{s}" in names
    code = get_bundle("sageserve-code.reactive-unified")
    assert (code.params["scale_out_above"], code.params["scale_in_below"]) == (0.5, 0.25)
    assert all(src for src in code.sources.values())  # every setting says where it comes from


def test_another_family_registers_a_bundle_by_name_and_a_comparison_selects_it():
    register_bundle(Bundle(name="test-family.lt-i-upper", strategy="lt-i", family="test-family",
                           description="LT-I on the upper forecast", params={"forecast_value": "upper"},
                           policy={"region_router": "local"}))
    vs = build_variants(bundles=["test-family.lt-i-upper", "sageserve-text.reactive-unified"])
    assert [(v["key"], v["strategy"], v["bundle"]) for v in vs] == [
        ("test-family.lt-i-upper", "lt-i", "test-family.lt-i-upper"),
        ("sageserve-text.reactive-unified", "reactive-unified", "sageserve-text.reactive-unified")]
    assert vs[0]["knobs"] == {"forecast_value": "upper"}
    assert pick_baseline(vs, None) == "sageserve-text.reactive-unified"
    with pytest.raises(BundleError):
        register_bundle(Bundle(name="test-family.lt-i-upper", strategy="lt-u", description="other settings"))


def test_an_unknown_bundle_is_refused_with_the_field_named():
    with pytest.raises(VariantError) as exc:
        build_variants(bundles=["sageserve-code.lt-zz"])
    assert exc.value.field == "bundles[0]" and "sageserve-code.lt-ua" in exc.value.message


def test_the_authors_code_bundle_sets_routers_engine_options_and_the_multi_head_signal():
    v = build_variants(bundles=["sageserve-code.lt-ua"])[0]
    d = engine_scenario_dict(TINY, v)
    assert d["strategy"]["autoscaler"] == "lt-ua" and d["strategy"]["region_router"] == "local"
    assert d["engine"]["instant_provisioning"] is True
    assert d["strategy"]["params"]["niw_feed"] == "code" and d["strategy"]["params"]["ua_gate_util"] is False
    llama = d["deployments"]["llama2-70b/h100-80gb/tp8"]
    assert llama["signal_kv_tokens"] == 1_330_000 // 8  # 64 query heads over 8 KV heads
    llama31 = d["deployments"]["llama3.1-8b/a100-80gb/tp2"]
    assert llama31["signal_kv_tokens"] == 976_000 // 4
    assert "signal_kv_tokens" not in TINY["deployments"]["llama2-70b/h100-80gb/tp8"]  # the input is untouched
    # the paper-text bundle changes nothing but the predictor
    t = engine_scenario_dict(TINY, build_variants(bundles=["sageserve-text.reactive-unified"])[0])
    assert t["deployments"] == TINY["deployments"] and "region_router" not in t["strategy"]


def test_the_signal_rule_leaves_unknown_models_alone():
    d = apply_signal_rule({"deployments": {"x": {"model": "mystery", "kv_capacity_tokens": 1000}}}, "mha")
    assert "signal_kv_tokens" not in d["deployments"]["x"]


def test_per_strategy_policies_in_the_scenario_apply_to_that_strategy_only():
    sc = dict(TINY, strategy_policies={"lt-ua": {"region_router": "local"}})
    assert engine_scenario_dict(sc, {"key": "a", "strategy": "lt-ua"})["strategy"]["region_router"] == "local"
    assert "region_router" not in engine_scenario_dict(sc, {"key": "b", "strategy": "lt-i"})["strategy"]


# ---------------------------------------------------------------- seeds and tuning variants


def test_seeds_cross_every_variant_and_change_the_workload_seed():
    vs = build_variants(["reactive-unified", "lt-ua"], seeds=[1, 2])
    assert [v["key"] for v in vs] == ["reactive-unified+s1", "reactive-unified+s2", "lt-ua+s1", "lt-ua+s2"]
    assert pick_baseline(vs, None) == "reactive-unified+s1" and pick_baseline(vs, "lt-ua") == "lt-ua+s1"
    sc = {"seed": 7, "workload": {"synthesize": "x.json"}}
    assert with_seed(sc, 2) == {"seed": 2, "workload": {"synthesize": "x.json", "seed": 2}}
    with pytest.raises(VariantError):
        build_variants(["lt-ua"], seeds=[1, 1])


def test_the_tuning_sweep_is_the_baseline_with_each_grid_point_on_top():
    vs = build_variants(["reactive-unified", "lt-ua"], tune={"grid": {"scale_out_above": [0.5, 0.6],
                                                                     "cooldown_s": [30.0]}, "tolerance": 0.01})
    tuning = [v for v in vs if v.get("role") == "tuning"]
    assert [(v["key"], v["knobs"]) for v in tuning] == [
        ("tune.reactive-unified.1", {"scale_out_above": 0.5, "cooldown_s": 30.0}),
        ("tune.reactive-unified.2", {"scale_out_above": 0.6, "cooldown_s": 30.0})]
    assert tuning[0]["tune_tolerance"] == 0.01 and pick_baseline(vs, None) == "reactive-unified"
    with pytest.raises(VariantError) as exc:
        build_variants(["lt-ua"], tune={"base": "reactive-unified"})
    assert exc.value.field == "tune.base"


# ---------------------------------------------------------------- the equal-SLO arithmetic, by hand


def _s(key, gpu_h, att_f, floor=100.0):
    s = fake_summary(key, "x", inst_h=gpu_h / 8, att_f=att_f)
    s["totals"].update(floor_gpu_hours=floor, gpu_hours_above_floor=gpu_h - floor)
    return s


def test_savings_are_against_the_cheapest_baseline_variant_at_least_as_good_on_every_tier():
    # seed 1: untuned 1000 GPU-h at 92 % IW-F; tuning A 1100 at 95 %, B 1200 at 97 %; LT-UA 900 at 95.5 %
    # seed 2: the same +10 %. With a 0.5-point tolerance A qualifies (95 >= 95.5 - 0.5), the untuned does not.
    vs = build_variants(["reactive-unified", "lt-ua"], seeds=[1, 2],
                        tune={"grid": {"scale_out_above": [0.5, 0.4]}, "tolerance": 0.005})
    table = {"reactive-unified": (1000, 0.92), "tune.reactive-unified.1": (1100, 0.95),
             "tune.reactive-unified.2": (1200, 0.97), "lt-ua": (900, 0.955)}
    sums = {}
    for v in vs:
        gpu, att = table[v["group"]]
        sums[v["key"]] = _s(v["key"], gpu * (1.1 if v["seed"] == 2 else 1.0), att)
    out = fair_summary(sums, vs, "reactive-unified+s1")
    rows = {r["key"]: r for r in out["rows"]}
    lt = rows["lt-ua"]
    assert lt["vs_untuned"]["saved_gpu_hours_pct"]["mean"] == pytest.approx(10.0)
    assert lt["vs_tuned"]["baseline"] == "tune.reactive-unified.1"
    assert lt["vs_tuned"]["point"] == {"scale_out_above": 0.5}
    assert lt["vs_tuned"]["saved_gpu_hours_pct"]["min"] == pytest.approx(100 * 200 / 1100)
    assert lt["gpu_hours"] == pytest.approx({"min": 900, "mean": 945, "max": 990, "n": 2})
    assert lt["gpu_hours_above_floor"]["min"] == pytest.approx(800)
    # the untuned baseline is its own cheapest equal-SLO baseline
    assert rows["reactive-unified"]["vs_tuned"]["baseline"] == "reactive-unified"
    # without tolerance A (95 %) is below 95.5 %: B is the cheapest that qualifies
    strict = {r["key"]: r for r in fair_summary(sums, vs, "reactive-unified+s1", tolerance=0.0)["rows"]}
    assert strict["lt-ua"]["vs_tuned"]["baseline"] == "tune.reactive-unified.2"
    assert strict["lt-ua"]["vs_tuned"]["saved_gpu_hours_pct"]["mean"] == pytest.approx(25.0)


def test_the_rows_say_where_the_savings_come_from():
    # NIW deferral and unserved share per seed, the forecast methods summed over seeds, the model's instance-hours
    vs = build_variants(["reactive-unified", "lt-ua"], seeds=[1, 2])
    sums = {}
    for v in vs:
        s = _s(v["key"], 1000 if v["group"] == "reactive-unified" else 900, 0.95)
        s["tiers"]["NIW"] = {"n": 200, "completed": 150 if v["seed"] == 1 else 190, "attainment": 0.9,
                             "queueing_p95": 3600.0 * v["seed"]}
        s["totals"]["forecast_methods"] = {"arima": 23, "naive (fallback)": 1} if v["group"] == "lt-ua" else {}
        s["totals"]["gpu_hours_without_provisioning"] = s["totals"]["gpu_hours"] - 50.0
        s["endpoints"] = [{"model": "llama2-70b", "instance_hours": 10.0 * v["seed"]}, {"model": "other",
                                                                                       "instance_hours": 99.0}]
        sums[v["key"]] = s
    out = fair_summary(sums, vs, "reactive-unified+s1")
    lt = next(r for r in out["rows"] if r["key"] == "lt-ua")
    assert lt["niw_unserved_pct"] == pytest.approx({"min": 5.0, "mean": 15.0, "max": 25.0, "n": 2})
    assert lt["niw_deferral_p95_s"]["max"] == 7200.0
    assert lt["forecast_methods"] == {"arima": 46, "naive (fallback)": 2}
    assert lt["llama2-70b_instance_hours"]["mean"] == pytest.approx(15.0)
    assert lt["gpu_hours_without_provisioning"]["mean"] == pytest.approx(850.0)
    assert out["model_of_interest"] == "llama2-70b"
    from planner.comparisons.core.fair import methods_text

    assert methods_text(lt["forecast_methods"]) == "arima 46, naive (fallback) 2"


def test_when_no_baseline_variant_reaches_the_strategy_the_report_says_so():
    vs = build_variants(["reactive-unified", "lt-ua"], tune={"grid": {"scale_out_above": [0.5]}})
    sums = {"reactive-unified": _s("r", 1000, 0.90), "tune.reactive-unified.1": _s("t", 1100, 0.91),
            "lt-ua": _s("l", 900, 0.99)}
    row = next(r for r in fair_summary(sums, vs, "reactive-unified")["rows"] if r["key"] == "lt-ua")
    assert row["vs_tuned"]["baseline"] is None and "widen the grid" in row["vs_tuned"]["why"]


# ---------------------------------------------------------------- CLI and API end to end (canned engine runs)


@pytest.mark.django_db(transaction=True)
def test_the_compare_command_runs_bundles_over_seeds_with_a_tuned_baseline(db, tmp_path, fake_engine):  # noqa: F811
    path = tmp_path / "tiny.json"
    path.write_text(json.dumps(TINY))
    out = io.StringIO()
    call_command("compare", str(path), "--strategies", "reactive-unified,lt-ua", "--seeds", "1,2",
                 "--tune", '{"grid": {"scale_out_above": [0.5, 0.6]}}', "--json", stdout=out)
    body = json.loads(out.getvalue())
    assert body["status"] == "succeeded"
    assert len(body["variants"]) == (2 + 2) * 2  # 2 strategies + 2 tuning points, each on 2 seeds
    fair = body["aggregate"]["fair"]
    assert {r["key"] for r in fair["rows"]} == {"reactive-unified", "lt-ua"}
    lt = next(r for r in fair["rows"] if r["key"] == "lt-ua")
    assert lt["seeds"] == [1, 2] and lt["vs_untuned"]["saved_gpu_hours_pct"]["mean"] == pytest.approx(
        100 * (362.25 - 277.5) / 362.25)
    comp = Comparison.objects.get(pk=body["comparison"])
    assert Job.objects.filter(parent=comp.job, variant__role="").count() == 8
    # plus the chosen strategy's two seeds at 1.2x the load (the card's load sensitivity), never a tuning point
    replays = VariantResult.all_runs.filter(comparison=comp, role="load")
    assert Job.objects.filter(parent=comp.job).count() == 10 and replays.count() == 2
    assert {r.key.split("+")[0] for r in replays} == {body["aggregate"]["load_check"]["strategy"]} <= {"lt-ua", "reactive-unified"}
    text = io.StringIO()
    call_command("compare", "--list-bundles", stdout=text)
    assert "sageserve-code.lt-ua" in text.getvalue()


@pytest.mark.django_db(transaction=True)
def test_the_api_accepts_bundles_seeds_and_tuning(cast, fake_engine):  # noqa: F811
    body = {"scenario": TINY, "bundles": ["sageserve-text.reactive-unified", "sageserve-code.lt-ua"],
            "seeds": [3, 4], "tune": {"grid": {"scale_out_above": [0.5]}}}
    resp = cast.owner.api.post("/api/comparisons/", body, format="json")
    assert resp.status_code == 201, resp.content
    comp = Comparison.objects.get(pk=resp.json()["id"])
    assert comp.baseline == "sageserve-text.reactive-unified+s3"
    assert "fair" in comp.summary
    bad = cast.owner.api.post("/api/comparisons/", {"scenario": TINY, "bundles": ["nope"]}, format="json")
    assert bad.status_code == 400 and "bundles" in json.dumps(bad.json()), bad.json()


@pytest.mark.django_db(transaction=True)
def test_the_page_runs_bundles_over_seeds_with_tuning_and_shows_both_baselines(cast, client, fake_engine):  # noqa: F811
    client.force_login(cast.owner.user)
    page = client.get("/comparisons/")
    assert b"sageserve-code.lt-ua" in page.content and b"Tune the baseline" in page.content
    resp = client.post("/comparisons/new/", {"scenario_json": json.dumps(TINY), "strategies": ["reactive-unified"],
                                             "bundles": ["sageserve-text.lt-ua"], "seeds": "5, 6", "tune": "1",
                                             "tolerance": "0.5", "name": "fair page"})
    assert resp.status_code == 302
    comp = Comparison.objects.get(name="fair page")
    assert comp.job.status == "succeeded", comp.job.last_error
    assert len(comp.variants) == (2 + 6) * 2  # 2 runs + the default 6-point sweep, on 2 seeds
    html = client.get(f"/comparisons/{comp.pk}/").content.decode()
    assert "equal-SLO tuned" in html and "Saved % vs untuned (reactive-unified)" in html
    csv_text = client.get(f"/comparisons/{comp.pk}/export.csv").content.decode()
    assert "fair,sageserve-text.lt-ua,,,,vs_untuned_baseline,reactive-unified" in csv_text
    assert "vs_tuned_baseline" in csv_text and "saved_gpu_hours_pct_vs_tuned.mean" in csv_text
    assert "Where the savings come from" in html and "NIW p95 deferral h" in html
    assert "niw_deferral_p95_s" not in csv_text  # the canned summaries have no queueing figures: no empty rows
    pdf = client.get(f"/comparisons/{comp.pk}/report.pdf")
    assert pdf.status_code == 200 and pdf.content[:5] == b"%PDF-"
    bad = client.post("/comparisons/new/", {"scenario_json": json.dumps(TINY), "strategies": ["reactive-unified"],
                                            "seeds": "one,two", "name": "bad seeds"}, follow=True)
    assert b"seeds" in bad.content and not Comparison.objects.filter(name="bad seeds").exists()


def test_the_api_lists_the_bundles_with_their_sources(cast):
    resp = cast.owner.api.get("/api/comparisons/bundles/")
    assert resp.status_code == 200
    code = next(b for b in resp.json() if b["name"] == "sageserve-code.lt-ua")
    assert code["policy"] == {"region_router": "local"} and code["signal"] == "mha+reserve"
    assert any("arbiter.py" in v for v in code["sources"].values())
