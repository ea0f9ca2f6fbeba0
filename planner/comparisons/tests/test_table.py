"""The compact strategy table: bands across seeds, savings in words, no saving of the baseline against itself, and
the reasons a comparison misses its SLO targets. Hand-computed cases."""

from __future__ import annotations

import pytest

from planner.comparisons.core.table import band, saving_words, slo_reasons, span_words, strategy_table


def test_a_band_is_the_median_and_the_5th_and_95th_percentiles():
    assert band([5, 1, 4, 2, 3]) == {"median": 3.0, "p5": pytest.approx(1.2), "p95": pytest.approx(4.8), "n": 5}
    assert band([7.0, None]) == {"median": 7.0, "p5": 7.0, "p95": 7.0, "n": 1}
    assert band([None]) is None and band([]) is None


def test_savings_read_forwards_and_never_as_a_negative_saving():
    assert saving_words(32886.4, 12.34) == "saves $32,886 (12.3 %)"
    assert saving_words(-32886.4, -99.5) == "costs $32,886 more (99.5 %)"
    assert saving_words(0.0, 0.0) == "costs the same" and saving_words(12.5) == "saves $12.50"
    assert "-" not in saving_words(-5.0, -1.0)
    assert span_words(1.0) == "1.0 h" and span_words(24.0) == "24 h" and span_words(168.0) == "7.0 days"


def _row(key, cost, att_f=0.995, att_n=0.995, niw=1.0, gpu_h=10.0):
    return {"key": key, "cost_usd": cost, "gpu_hours": gpu_h, "niw_deadline_met": niw,
            "tiers": {"IW-F": {"attainment": att_f}, "IW-N": {"attainment": att_n}}}


def test_with_seeds_each_strategy_is_one_row_paired_by_seed_and_the_baseline_saves_nothing():
    variants = [{"key": f"{g}+s{s}", "group": g, "seed": s, "strategy": g} for g in ("reactive", "lt-ua")
                for s in (1, 2, 3)] + [{"key": "reactive@t1+s1", "group": "reactive@t1", "seed": 1, "role": "tuning"}]
    costs = {"reactive": {1: 100.0, 2: 110.0, 3: 90.0}, "lt-ua": {1: 80.0, 2: 99.0, 3: 90.0}}
    rows = [_row(f"{g}+s{s}", c) for g, by in costs.items() for s, c in by.items()] + [_row("reactive@t1+s1", 1.0)]
    table = strategy_table({"rows": rows, "baseline": "reactive+s2", "duration_h": 1.0}, variants)
    by = {r["key"]: r for r in table["rows"]}
    assert list(by) == ["reactive", "lt-ua"]  # the tuning run is no strategy
    assert by["reactive"]["is_baseline"] and by["reactive"]["saved_usd"] is None
    assert by["reactive"]["saving_words"] == "the baseline"
    # per seed against the baseline's run on the same seed: 20, 11, 0 -> median 11
    assert by["lt-ua"]["saved_usd"]["median"] == pytest.approx(11.0) and by["lt-ua"]["saved_usd"]["n"] == 3
    assert by["lt-ua"]["saved_usd"]["p5"] == pytest.approx(1.1) and by["lt-ua"]["saved_usd"]["p95"] == pytest.approx(19.1)
    assert by["lt-ua"]["saving_words"] == "saves $11.00 (10.0 %)"
    assert table["answer"] == "lt-ua" and table["seeds"] == 3 and table["span"] == "1.0 h"


def test_a_strategy_meets_the_targets_only_when_every_seed_does_and_niw_needs_99_not_100_percent():
    variants = [{"key": f"a+s{s}", "group": "a", "seed": s} for s in (1, 2)] + [
        {"key": f"b+s{s}", "group": "b", "seed": s} for s in (1, 2)]
    rows = [_row("a+s1", 100.0, niw=0.9998), _row("a+s2", 100.0), _row("b+s1", 50.0), _row("b+s2", 50.0, att_f=0.9)]
    table = strategy_table({"rows": rows, "baseline": "a+s1", "duration_h": 24.0}, variants)
    by = {r["key"]: r for r in table["rows"]}
    assert by["a"]["meets"] and not by["b"]["meets"] and by["b"]["misses"] == ["IW-F 90.00 % < 99 %"]
    assert table["answer"] == "a" and table["cheapest"] == "b"


def test_the_reasons_name_over_context_prompts_unreachable_targets_and_overload():
    rows = [_row("base", 100.0, att_f=0.785, att_n=0.90), _row("lt", 80.0, att_f=0.7851, att_n=0.97)]
    table = strategy_table({"rows": rows, "baseline": "base", "duration_h": 24.0}, [])
    summaries = {"base": {"requests": 1000, "context_limits": {"prompts_over_limit": 215, "mode": "reject"}}}
    reasons = slo_reasons(table, summaries)
    assert [r["kind"] for r in reasons] == ["over-context", "unreachable", "overload"]
    assert "21.5 % of the requests (215 of 1,000)" in reasons[0]["text"] and "refused" in reasons[0]["text"]
    assert "IW-F" in reasons[1]["text"] and "IW-N" in reasons[2]["text"] and "97.00 %" in reasons[2]["text"]
    fine = strategy_table({"rows": [_row("base", 1.0)], "baseline": "base", "duration_h": 1.0}, [])
    assert slo_reasons(fine, summaries) == []
