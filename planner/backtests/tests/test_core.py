"""The replica file's checks (row and column named) and the back-test run (as run exactly, deltas, errors)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from planner.backtests.core import run as run_mod
from planner.backtests.core.latency import latency_gap, parse_latency, simulated_minutes
from planner.backtests.core.replicas import ReplicaFileError, count_before, parse_replicas
from planner.backtests.core.run import replica_error, run_backtest

EPS = ["us-west/llama2-70b"]
SCENARIO = json.loads((Path(__file__).resolve().parents[3] / "fixtures/scenarios/industry_burst.json").read_text())


def _parse(text, **kw):
    return parse_replicas(text, EPS, trace_end_s=3600, **kw)


def test_a_good_file_is_sorted_per_endpoint():
    rec = _parse("timestamp,endpoint,replicas\n60,us-west/llama2-70b,3\n0,us-west/llama2-70b,2\n")
    assert rec == {"us-west/llama2-70b": [[0.0, 2], [60.0, 3]]}


def test_iso_times_need_the_origin():
    text = "timestamp,endpoint,replicas\n2026-11-01T10:00:00Z,us-west/llama2-70b,2\n2026-11-01T10:01:00Z,us-west/llama2-70b,4\n"
    assert _parse(text, origin="2026-11-01T10:00:00Z")["us-west/llama2-70b"] == [[0.0, 2], [60.0, 4]]
    with pytest.raises(ReplicaFileError) as exc:
        _parse(text)
    assert exc.value.where == "replicas row 2, column timestamp"


@pytest.mark.parametrize(("body", "where", "words"), [
    ("0,us-east/llama2-70b,2\n", "replicas row 2, column endpoint", "not an endpoint"),
    ("0,us-west/llama2-70b,2\n60,us-west/llama2-70b,-1\n", "replicas row 3, column replicas", "negative"),
    ("0,us-west/llama2-70b,2.5\n", "replicas row 2, column replicas", "whole number"),
    ("0,us-west/llama2-70b,two\n", "replicas row 2, column replicas", "whole number"),
    ("0,us-west/llama2-70b,2\n1000,us-west/llama2-70b,3\n", "replicas row 3, column timestamp", "gap of 1000"),
    ("0,us-west/llama2-70b,2\n0,us-west/llama2-70b,3\n", "replicas row 3, column timestamp", "repeats"),
    ("5000,us-west/llama2-70b,2\n5060,us-west/llama2-70b,3\n", "replicas row 2, column timestamp", "overlap"),
    ("soon,us-west/llama2-70b,2\n", "replicas row 2, column timestamp", "neither seconds"),
])
def test_bad_rows_are_refused_naming_row_and_column(body, where, words):
    with pytest.raises(ReplicaFileError) as exc:
        _parse("timestamp,endpoint,replicas\n" + body)
    assert exc.value.where == where and words in exc.value.message


def test_a_missing_column_names_it():
    with pytest.raises(ReplicaFileError) as exc:
        _parse("time,endpoint,replicas\n0,us-west/llama2-70b,2\n")
    assert exc.value.where == "replicas row 1, column timestamp"


def test_replica_error_by_hand():
    rec = {"a": [[0, 2], [120, 4]]}
    # samples at 0, 60, 120, 180: recorded (before t) 2, 2, 2, 4; simulated 2, 3, 2, 2 -> |diff| 0, 1, 0, 2
    err = replica_error(rec, [0, 60, 120, 180], {"a": [2, 3, 2, 2]})
    assert err["a"] == {"mae": 0.75, "match_share": 0.5}
    assert count_before(rec["a"], 120) == 2 and count_before(rec["a"], 121) == 4


def test_the_as_run_replay_reproduces_the_record_and_alternatives_get_deltas():
    sc = json.loads(json.dumps(SCENARIO))
    sc["workload"]["synthetic"].update(duration_s=900, total_requests=3000,
                                       burst={"at_s": 300, "duration_s": 300, "factor": 3.0})
    recorded = {"us-west/llama2-70b": [[0, 2], [240, 3], [480, 4], [720, 2]]}
    alts = [{"key": "static", "strategy": "static", "scheduler": "", "knobs": {}},
            {"key": "hpa", "strategy": "hpa", "scheduler": "", "knobs": {}}]
    out = run_backtest(sc, recorded, alts, startup_s=60)
    assert out["as_run_exact"] is True
    runs = {r["key"]: r for r in out["runs"]}
    assert runs["as-run"]["gpu_hours_delta"] == 0
    assert runs["static"]["replica_error"]["us-west/llama2-70b"]["match_share"] < 1  # static stays at 2
    # static's delta is its GPU-hours minus the as-run's (2 instances x 8 GPUs vs the record's mix)
    assert runs["static"]["gpu_hours_delta"] == pytest.approx(runs["static"]["gpu_hours"] - runs["as-run"]["gpu_hours"])
    assert runs["static"]["gpu_hours"] < runs["as-run"]["gpu_hours"]
    assert out["recorded"]["us-west/llama2-70b"][:5] == [2, 2, 2, 2, 2]


def test_measured_latency_is_parsed_with_rows_and_columns_named():
    got = parse_latency("minute,ttft_p50_s,ttft_p95_s\n0,0.2,0.9\n1,0.3,\n")
    assert got == {"ttft_p50_s": [[0, 0.2], [1, 0.3]], "ttft_p95_s": [[0, 0.9]]}
    for body, where in (("x,0.2,0.9\n", "latency row 2, column minute"), ("0,-1,0.9\n", "latency row 2, column ttft_p50_s"),
                        ("0,0.2,fast\n", "latency row 2, column ttft_p95_s")):
        with pytest.raises(ReplicaFileError) as exc:
            parse_latency("minute,ttft_p50_s,ttft_p95_s\n" + body)
        assert exc.value.where == where


def test_latency_gap_by_hand():
    gap = latency_gap({"ttft_p95_s": [[0, 1.0], [1, 2.0], [2, 4.0]]}, {"ttft_p95_s": {0: 1.5, 1: 1.0, 3: 9.9}})
    g = gap["ttft_p95_s"]
    assert g["minutes"] == 2 and g["mean_gap_s"] == pytest.approx((0.5 - 1.0) / 2)
    assert g["mean_relative_gap"] == pytest.approx((0.5 - 0.5) / 2)


def test_the_as_run_replay_against_its_own_latency_has_no_gap_and_a_shift_shows():
    sc = json.loads(json.dumps(SCENARIO))
    sc["workload"]["synthetic"].update(duration_s=600, total_requests=1500)
    recorded = {"us-west/llama2-70b": [[0, 2], [300, 3]]}
    alts = [{"key": "static", "strategy": "static", "scheduler": "", "knobs": {}}]
    first = run_backtest(sc, recorded, alts, startup_s=60, measured={"ttft_p95_s": [[0, 1.0]]})
    assert first["latency_gap"]["ttft_p95_s"]["minutes"] == 1
    sim = first["latency_gap"]["ttft_p95_s"]["rows"][0][2]
    # measured = the replay's own p95 + 0.25 s at every minute: the gap is -0.25 s

    r = run_mod._one(sc, run_mod.as_run_variant(recorded, 60), None, recorded)
    own = simulated_minutes(r["requests"], ["ttft_p95_s"])["ttft_p95_s"]
    assert own[0] == pytest.approx(sim)
    shifted = {"ttft_p95_s": [[k, v + 0.25] for k, v in own.items()]}
    out = run_backtest(sc, recorded, alts, startup_s=60, measured=shifted)
    assert out["latency_gap"]["ttft_p95_s"]["minutes"] == len(own)
    assert out["latency_gap"]["ttft_p95_s"]["mean_gap_s"] == pytest.approx(-0.25)


def test_seeds_give_each_delta_a_band_and_the_as_run_stays_exact():
    sc = json.loads(json.dumps(SCENARIO))
    sc["workload"]["synthetic"].update(duration_s=600, total_requests=1500, seed=5)
    recorded = {"us-west/llama2-70b": [[0, 2], [300, 3]]}
    alts = [{"key": "static", "strategy": "static", "scheduler": "", "knobs": {}},
            {"key": "hpa", "strategy": "hpa", "scheduler": "", "knobs": {}}]
    out = run_backtest(sc, recorded, alts, startup_s=60, seeds=[1, 2, 3])
    assert out["as_run_exact"] is True and out["seeds"] == [1, 2, 3]
    assert out["bands"]["as-run"]["gpu_hours_delta"] == [0, 0]
    lo, hi = out["bands"]["hpa"]["gpu_hours_delta"]
    assert lo <= out["runs"][2]["gpu_hours_delta"] <= hi
    singles = [run_backtest(sc, recorded, alts, startup_s=60, seeds=[s])["runs"][2]["gpu_hours_delta"] for s in (1, 2, 3)]
    assert [lo, hi] == [min(singles), max(singles)]  # the band is the seeds' own extremes
    assert len(set(singles)) > 1  # the seeds are different days of the same traffic


def test_the_backtest_core_and_the_industry_policies_import_without_django():
    code = ("import sys; import planner.backtests.core.run, planner.backtests.core.replicas, "
            "planner.backtests.core.latency, simulations.engine.policies.scraped, "
            "simulations.engine.policies.hpa.controller; assert 'django' not in sys.modules")
    subprocess.run([sys.executable, "-c", code], check=True, cwd=Path(__file__).resolve().parents[3])


def _prom(values, label="us-west/llama2-70b", key="endpoint"):
    return json.dumps({"status": "success", "data": {"resultType": "matrix", "result": [
        {"metric": {key: label, "namespace": "llm"}, "values": values}]}})


def test_a_prometheus_export_is_read_on_the_traces_clock():
    t0 = 1_800_000_000  # 2027-01-15T08:00:00Z
    text = _prom([[t0, "2"], [t0 + 60, "3"], [t0 + 120.0, "3"]])
    got = _parse(text, origin="2027-01-15T08:00:00Z")
    assert got == {"us-west/llama2-70b": [[0.0, 2], [60.0, 3], [120.0, 3]]}
    assert _parse(_prom([[t0, "2"]], key="deployment"), origin="2027-01-15T08:00:00Z") == {
        "us-west/llama2-70b": [[0.0, 2]]}


@pytest.mark.parametrize(("text", "origin", "where"), [
    (_prom([[1_800_000_000, "2"]]), None, "origin"),
    (_prom([[1_800_000_000, "2"], [1_800_000_060, "2.5"]]), "2027-01-15T08:00:00Z",
     "replicas result[0].values[1], column replicas"),
    (_prom([[1_800_000_000, "2"]], label="vllm-llama"), "2027-01-15T08:00:00Z",
     "replicas result[0].values[0], column endpoint"),
    (_prom([[1_800_000_000, "2"], [1_800_002_000, "2"]]), "2027-01-15T08:00:00Z",
     "replicas result[0].values[1], column timestamp"),
    ('{"data": {}}', "2027-01-15T08:00:00Z", "replicas"),
])
def test_a_bad_prometheus_export_names_the_point(text, origin, where):
    with pytest.raises(ReplicaFileError) as exc:
        _parse(text, origin=origin)
    assert exc.value.where == where


def _events(*items):
    return json.dumps({"apiVersion": "v1", "kind": "List", "items": list(items)})


def _rescale(t, size, name="us-west-llama2-70b", reason="SuccessfulRescale", kind="HorizontalPodAutoscaler"):
    return {"kind": "Event", "reason": reason, "type": "Normal", "lastTimestamp": t,
            "involvedObject": {"kind": kind, "name": name, "namespace": "llm"},
            "message": f"New size: {size}; reason: external metric vllm:num_requests_running above target"}


def test_hpa_rescale_events_are_read_as_a_record_holding_until_the_next_event():
    text = _events(_rescale("2027-01-15T07:59:00Z", 2),
                   {"kind": "Event", "reason": "ScalingReplicaSet", "lastTimestamp": "2027-01-15T08:10:00Z",
                    "involvedObject": {"kind": "Deployment", "name": "vllm"}, "message": "Scaled up"},
                   _rescale("2027-01-15T08:30:00Z", 5), _rescale("2027-01-15T08:45:00Z", 3))
    got = _parse(text, origin="2027-01-15T08:00:00Z")
    # 31 and 15 minutes without an event are no gap: the count holds
    assert got == {"us-west/llama2-70b": [[-60.0, 2], [1800.0, 5], [2700.0, 3]]}
    assert count_before(got["us-west/llama2-70b"], 1800.0) == 2 and count_before(got["us-west/llama2-70b"], 1801) == 5


@pytest.mark.parametrize(("items", "origin", "where", "says"), [
    ([_rescale("2027-01-15T08:00:00Z", 2)], None, "origin", "ISO"),
    ([_rescale("2027-01-15T08:00:00Z", 2, name="vllm-llama")], "2027-01-15T08:00:00Z",
     "replicas items[0], column endpoint", "names no endpoint"),
    ([_rescale("2027-01-15T08:00:00Z", 2), _rescale("2027-01-15T08:05:00Z", -1)], "2027-01-15T08:00:00Z",
     "replicas items[1], column replicas", "negative"),
    ([_rescale("2027-01-15T08:00:00Z", "2.5")], "2027-01-15T08:00:00Z", "replicas items[0], column replicas",
     "whole number"),
    ([_rescale("2027-01-15T08:10:00Z", 3)], "2027-01-15T08:00:00Z", "replicas items[0], column timestamp",
     "unknown"),
    ([_rescale("2027-01-15T12:00:00Z", 3)], "2027-01-15T08:00:00Z", "replicas items[0], column timestamp",
     "overlap"),
    ([_rescale("2027-01-15T08:00:00Z", 3, reason="FailedGetExternalMetric")], "2027-01-15T08:00:00Z",
     "replicas items", "SuccessfulRescale"),
])
def test_bad_hpa_events_name_the_event(items, origin, where, says):
    with pytest.raises(ReplicaFileError) as exc:
        _parse(_events(*items), origin=origin)
    assert exc.value.where == where and says in str(exc.value)
