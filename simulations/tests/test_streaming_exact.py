"""The streamed replay is one continuous simulation (window.py, streamacc.py): whatever the chunk
size, it reports what the unstreamed run reports (counts, GPU-hours, cost, energy, scale events, SLO attainment,
means to float rounding, percentiles within stream.REL_ERR of the exact nearest-rank ones), while its request
window holds only the requests from the oldest one in flight onwards."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from simulations.engine import build_workload, parse_scenario, simulate
from simulations.engine.results.metrics import build_result
from simulations.engine.streaming.stream import REL_ERR, chunks_of, simulate_stream

ROOT = Path(__file__).resolve().parents[2]
COUNTS = ("requests", "completed", "dropped", "scale_outs", "scale_ins", "preemptions", "events")
SUMS = ("gpu_hours", "serving_gpu_hours", "idle_gpu_hours", "provisioning_gpu_hours", "cost_usd", "energy_kwh",
        "energy_cost_usd", "floor_gpu_hours")


def _scenario(name: str, requests: int, **over) -> dict:
    d = json.loads((ROOT / "fixtures" / "scenarios" / f"{name}.json").read_text())
    d["workload"]["synthetic"]["total_requests"] = requests
    for key, value in over.items():
        d.setdefault(key, {}).update(value)
    return d


def _assert_same(st: dict, exact) -> None:
    s, e = st["summary"], exact.summary
    for k in COUNTS:
        assert s[k] == e[k], (k, s[k], e[k])
    for k in SUMS:  # the same instances, summed in the same order: the same floats
        assert s[k] == e[k], (k, s[k], e[k])
    assert s["slo_attainment"] == e["slo_attainment"]
    assert s["duration_s"] == e["duration_s"]
    for key in ("ttft", "e2e", "queueing", "tbt_mean", "tbt_max"):
        assert s[key]["mean"] == pytest.approx(e[key]["mean"], rel=1e-9)
    done = exact.requests["completed"]
    for key in ("ttft", "e2e", "queueing"):
        x = exact.requests[key + "_s"][done]
        for p in (50, 90, 95, 99):
            ref = float(np.percentile(x, p, method="inverted_cdf"))
            assert abs(s[key][f"p{p}"] - ref) <= REL_ERR * ref + 1e-4, (key, p, s[key][f"p{p}"], ref)
    for tier, t in exact.tiers.items():
        got = st["tiers"][tier]
        assert (got["requests"], got["completed"], got["drop_reasons"], got["preempted_requests"]) == (
            t["requests"], t["completed"], t["drop_reasons"], t["preempted_requests"])
        assert got["slo_attainment"] == pytest.approx(t["slo_attainment"], abs=1e-15)
    assert s["preemptions_per_request"]["max"] == e["preemptions_per_request"]["max"]


@pytest.mark.parametrize("chunk_s", [1800.0, 300.0, 61.0])
def test_any_chunk_size_reproduces_the_exact_run(chunk_s):
    sc = parse_scenario(_scenario("small_reactive", 5000))
    w = build_workload(sc)
    exact = simulate(sc, w)
    infos = []
    st = simulate_stream(sc, workload_chunks=chunks_of(w, chunk_s),
                         on_chunk=lambda i, t0, info: infos.append((i, t0, info.to_dict()))).to_dict()
    _assert_same(st, exact)
    # one call per chunk, in order, covering every request; the window stays far below the run's size
    assert [i for i, _, _ in infos] == list(range(len(infos))) and len(infos) == st["summary"]["chunks"] > 1
    assert sum(info["requests"] for _, _, info in infos) == len(w)
    assert infos[-1][2]["in_flight"] == 0 and infos[-1][2]["folded"] < len(w)
    assert st["window"]["trimmed"] and st["window"]["max_requests_held"] < len(w)
    # the bound: after each chunk the window holds the requests in flight and the next chunk, nothing else
    sizes = [info["requests"] for _, _, info in infos]
    for j, (_, _, info) in enumerate(infos[:-1]):
        assert info["window"] <= info["in_flight"] + sizes[j + 1], (j, info)
    if chunk_s < 100:
        assert st["window"]["max_requests_held"] < len(w) / 5
    # the rollups add up to the totals
    assert sum(r["requests"] for r in st["hourly"]) == len(w)
    assert sum(r["slo_met"] for r in st["hourly"]) == round(exact.summary["slo_attainment"] * len(w))
    assert sum(r["gpu_hours"] for r in st["hourly_endpoints"]) == pytest.approx(exact.summary["gpu_hours"], rel=1e-9)


@pytest.mark.parametrize("engine", [{}, {"preemption_mode": "swap"}, {"chunked_prefill": True},
                                    {"mode": "reference"}])
def test_requests_in_flight_across_boundaries_keep_their_state(engine):
    # an overloaded burst: preemptions (recompute / swap), prompts prefilled in chunks, deep queues and scale-outs
    # cross every boundary of 97 s chunks; their ids are shifted in every queue, heap and list that holds them
    d = _scenario("burst_reactive", 6000, engine=engine)
    d["workload"]["synthetic"]["duration_s"] = 900
    for dep in d["deployments"].values():  # small KV caches: preemptions
        dep["kv_capacity_tokens"] = min(dep["kv_capacity_tokens"], 15000)
    sc = parse_scenario(d)
    w = build_workload(sc)
    exact = simulate(sc, w)
    assert exact.summary["preemptions"] > 0 and exact.summary["scale_outs"] > 0
    st = simulate_stream(sc, workload_chunks=chunks_of(w, 97.0)).to_dict()
    _assert_same(st, exact)
    assert st["window"]["trimmed"]


def test_a_policy_that_may_hold_request_ids_keeps_the_whole_window(monkeypatch):
    from simulations.engine.policies.autoscalers import ReactiveUnified

    monkeypatch.setattr(ReactiveUnified, "stream_safe", False)
    sc = parse_scenario(_scenario("small_reactive", 3000))
    w = build_workload(sc)
    exact = simulate(sc, w)
    st = simulate_stream(sc, workload_chunks=chunks_of(w, 300.0)).to_dict()
    _assert_same(st, exact)
    assert not st["window"]["trimmed"] and st["window"]["max_requests_held"] == len(w)


def test_a_policy_with_rebase_is_told_every_renumbering(monkeypatch):
    from simulations.engine.policies.autoscalers import ReactiveUnified

    maps = []
    monkeypatch.setattr(ReactiveUnified, "stream_safe", False)
    monkeypatch.setattr(ReactiveUnified, "rebase", lambda self, sim, remap: maps.append(remap.copy()),
                        raising=False)
    sc = parse_scenario(_scenario("small_reactive", 3000))
    w = build_workload(sc)
    st = simulate_stream(sc, workload_chunks=chunks_of(w, 300.0)).to_dict()
    assert st["window"]["trimmed"] and len(maps) > 1
    for remap in maps:  # kept rows numbered 0, 1, 2, ... in their old order; dropped rows -1
        kept = remap[remap >= 0]
        assert kept.tolist() == list(range(kept.size)) and (remap < 0).any()
    assert st["summary"]["requests"] == len(w)


def test_a_run_stopped_and_resumed_equals_one_run():
    from simulations.engine.simulator.loop import Simulator

    sc = parse_scenario(_scenario("burst_reactive", 8000))
    w = build_workload(sc)
    ref = simulate(sc, w)
    sim = Simulator(sc, w)
    stops = np.linspace(0.0, float(w.arrival_s[-1]) + 50.0, 23)[1:]
    for t in stops:
        sim.run(until=float(t))
    sim.run()
    got = build_result(sim, 0.0)
    for k in sorted(ref.requests):
        assert np.array_equal(np.asarray(ref.requests[k]), np.asarray(got.requests[k]), equal_nan=True), k
    assert got.summary["events"] == ref.summary["events"] + len(stops)  # each stop counts its last look
    for k in ("gpu_hours", "cost_usd", "scale_outs", "completed", "slo_attainment"):
        assert got.summary[k] == ref.summary[k], k


def test_chunks_out_of_time_order_are_refused():
    sc = parse_scenario(_scenario("small_reactive", 2000))
    w = build_workload(sc)
    parts = list(chunks_of(w, 600.0))
    with pytest.raises(ValueError, match="time order"):
        simulate_stream(sc, workload_chunks=[parts[1], parts[0]])


@pytest.mark.parametrize("strategy", ["reactive-unified-niwq", "lt-u"])
def test_policies_holding_queued_requests_and_reading_history_stream_exactly(strategy):
    # the NIW queue manager holds request ids (shifted by its rebase); the long-term scaler reads observed()
    # history by time (observed_history_s keeps those rows in the window)
    d = _scenario("small_reactive", 6000)
    d["workload"]["synthetic"]["duration_s"] = 3 * 3600
    d["strategy"] = {"autoscaler": strategy, "scheduler": "fcfs"}
    sc = parse_scenario(d)
    w = build_workload(sc)
    exact = simulate(sc, w)
    st = simulate_stream(sc, workload_chunks=chunks_of(w, 600.0)).to_dict()
    _assert_same(st, exact)
    assert st["window"]["trimmed"] and st["window"]["max_requests_held"] < len(w)


def test_a_parquet_trace_read_in_batches_streams_like_the_whole_file(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    from simulations.engine.simulator.scenario import build_workload
    from simulations.engine.workload.traceio import read_trace_arrays

    cols = read_trace_arrays(ROOT / "fixtures" / "traces" / "azure_code_2023.csv")
    path = tmp_path / "t.parquet"
    pq.write_table(pa.table({k: cols[k] for k in ("arrival_s", "input_tokens", "output_tokens")}), path,
                   row_group_size=1000)
    sc = parse_scenario(json.loads((ROOT / "fixtures" / "scenarios" / "code_anchor.json").read_text()))
    exact = simulate(sc, build_workload(sc, trace=str(path)))
    st = simulate_stream(sc, trace=str(path), chunk_s=600.0).to_dict()
    _assert_same(st, exact)
    assert st["summary"]["chunks"] == 6 and st["window"]["max_requests_held"] < len(cols["arrival_s"])


@pytest.mark.parametrize("chunk_s", [300.0, 61.0])
def test_a_run_that_reaches_its_time_limit_counts_the_rest_as_unfinished_like_the_exact_run(chunk_s):
    # engine.max_time_s half-way through the arrivals: the unstreamed run stops there and counts every request it
    # did not finish (or reach) as dropped "unfinished"; the streamed run must report the same, without taking
    # the later chunks into its window (before the fix it kept appending them: memory grew with the horizon)
    w = build_workload(parse_scenario(_scenario("small_reactive", 5000)))
    limit = float(np.median(w.arrival_s))
    sc = parse_scenario(_scenario("small_reactive", 5000, engine={"max_time_s": limit}))
    exact = simulate(sc, w)
    assert exact.summary["dropped"] > len(w) / 3  # the limit does cut the run
    infos = []
    st = simulate_stream(sc, workload_chunks=chunks_of(w, chunk_s),
                         on_chunk=lambda i, t0, info: infos.append(info.to_dict())).to_dict()
    _assert_same(st, exact)
    assert sum(r["requests"] for r in st["hourly"]) == len(w)
    assert sum(info["requests"] for info in infos) == len(w)
    late = [info for info in infos if info.get("past_time_limit")]
    assert late and all(info["window"] == late[0]["window"] for info in late)  # the window stopped growing
