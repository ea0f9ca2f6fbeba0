"""The decision card's answer for a fleet comparison: the table's choice, monthly cost extrapolated from the span,
per-tier probabilities over seeds with Wilson intervals, the cheapest rejected alternative, honest no-answer."""

import pytest

from planner.comparisons.core.decision import comparison_answer

SCENARIO = {"deployments": {"m/h100-80gb/tp8": {"gpu": "h100-80gb", "gpus_per_instance": 8}},
            "fleet": {"endpoints": [{"region": "us-west", "model": "m", "deployment": "m/h100-80gb/tp8",
                                     "initial": 4, "min": 2, "max": 20}]}}


def _row(key, cost, att_f=0.995, strategy=None):
    return {"key": key, "cost_usd": cost, "gpu_hours": 10.0, "niw_deadline_met": 1.0, "strategy": strategy,
            "tiers": {"IW-F": {"attainment": att_f}, "IW-N": {"attainment": 0.999}}}


def _summary(costs, att_f):
    variants = [{"key": f"{g}+s{s}", "group": g, "seed": s, "strategy": g} for g in costs for s in (1, 2, 3)]
    rows = [_row(f"{g}+s{s}", c, att_f.get(g, {}).get(s, 0.995), g) for g, by in costs.items() for s, c in by.items()]
    return {"rows": rows, "baseline": "reactive+s1", "duration_h": 2.0}, variants


def test_the_cheapest_strategy_meeting_every_seed_is_chosen_and_the_cheaper_misser_is_rejected_with_why():
    summary, variants = _summary({"reactive": {1: 100.0, 2: 110.0, 3: 90.0}, "lt-ua": {1: 80.0, 2: 99.0, 3: 90.0},
                                  "cheap": {1: 50.0, 2: 50.0, 3: 50.0}}, {"cheap": {2: 0.97}})
    a = comparison_answer(summary, variants, SCENARIO)
    assert a["status"] == "answer" and a["choice"]["key"] == "lt-ua"
    c = a["choice"]
    # 2 simulated hours -> x 365 for 730 h a month; median of 80, 99, 90 is 90
    assert c["monthly_cost_usd"]["median"] == pytest.approx(90.0 * 365) and c["span_cost_usd"]["median"] == 90.0
    assert c["monthly_cost_usd"]["p5"] == pytest.approx(81.0 * 365)
    assert a["extrapolated"] and a["span_h"] == 2.0
    assert c["fleet"] == [{"region": "us-west", "model": "m", "gpu": "h100-80gb", "deployment": "m/h100-80gb/tp8",
                           "count": 2, "ceiling": 20, "gpus": 16}]
    iwf = next(s for s in c["slo"] if s["tier"] == "IW-F")
    assert iwf["probability"]["met"] == 3 and iwf["probability"]["n"] == 3
    assert iwf["probability"]["low"] == pytest.approx(0.4385, abs=1e-3)  # Wilson 95 % of 3 of 3
    assert a["rejected"]["key"] == "cheap"
    assert "1 of 3 seeds" in a["rejected"]["why"] and "IW-F 97.00 % < 99 %" in a["rejected"]["why"]
    cheap = next(x for x in a["candidates"] if x["key"] == "cheap")
    assert cheap["meets_all"]["met"] == 2 and not cheap["accepted"]
    assert a["headline"].startswith("run lt-ua: $32,850 [")


def test_when_no_strategy_meets_the_targets_the_answer_says_so_and_names_the_closest():
    summary, variants = _summary({"reactive": {1: 100.0, 2: 100.0, 3: 100.0}, "lt-ua": {1: 80.0, 2: 80.0, 3: 80.0}},
                                 {"reactive": {1: 0.98, 2: 0.98, 3: 0.98}, "lt-ua": {1: 0.95, 2: 0.95, 3: 0.95}})
    a = comparison_answer(summary, variants, SCENARIO)
    assert a["status"] == "no_fleet" and a["choice"] is None and a["best"]["key"] == "reactive"
    assert "no strategy meets" in a["headline"] and "98.0%" in a["headline"]


def test_the_baseline_is_kept_when_it_is_the_answer_and_no_rows_means_no_answer():
    summary, variants = _summary({"reactive": {1: 50.0, 2: 50.0, 3: 50.0}, "lt-ua": {1: 80.0, 2: 80.0, 3: 80.0}}, {})
    a = comparison_answer(summary, variants, SCENARIO)
    assert a["headline"].startswith("keep the baseline") and a["rejected"]["key"] == "lt-ua"
    assert "costs $10,950 a month more" in a["rejected"]["why"]
    assert comparison_answer({"rows": []}, [], SCENARIO) is None


def test_the_card_says_which_input_changes_the_answer_most():
    """lt-ua wins at 99 %; at 99.5 % (half the misses) its 99.2 % seed fails and reactive (99.6 % everywhere) wins;
    an a100 price rise hits lt-ua (all on a100) and not reactive (all on h100): +20 % of 90 = 108 > reactive's 100."""
    summary, variants = _summary({"reactive": {1: 100.0, 2: 110.0, 3: 90.0}, "lt-ua": {1: 80.0, 2: 99.0, 3: 90.0}},
                                 {"reactive": {1: 0.996, 2: 0.996, 3: 0.996}, "lt-ua": {2: 0.992}})
    for r in summary["rows"]:
        r["cost_by_gpu"] = {"a100": r["cost_usd"]} if r["strategy"] == "lt-ua" else {"h100": r["cost_usd"]}
    a = comparison_answer(summary, variants, SCENARIO)
    assert a["choice"]["key"] == "lt-ua"
    by = {s["input"]: s for s in a["sensitivity"]}
    assert by["SLO target (half the misses allowed)"]["changes_answer"]
    assert "the answer becomes reactive" in by["SLO target (half the misses allowed)"]["effect"]
    assert by["SLO target (half the misses allowed)"]["magnitude"] == pytest.approx(1 / 3)
    assert by["a100 price +20%"]["changes_answer"] and "becomes reactive" in by["a100 price +20%"]["effect"]
    assert not by["h100 price +20%"]["changes_answer"] and "+0%" in by["h100 price +20%"]["effect"]
    assert not by["load x1.2"]["replayed"] and "capacity search" in by["load x1.2"]["effect"]
    assert a["most_sensitive"] == "SLO target (half the misses allowed)"  # 1/3 of seeds vs a 20 % cost change
    for r in summary["rows"]:
        del r["cost_by_gpu"]  # a comparison stored before per-GPU costs: no price entries, nothing breaks
    assert [s["input"] for s in comparison_answer(summary, variants, SCENARIO)["sensitivity"]] == [
        "load x1.2", "SLO target (half the misses allowed)"]
