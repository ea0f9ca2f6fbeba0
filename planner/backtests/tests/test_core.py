"""The replica file's checks (row and column named) and the back-test run (as run exactly, deltas, errors)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

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
