"""Fleet-size-independent routing (fleetindex.py), streamed replay (stream.py), pandas-free trace reading
(traceio.py) and the light CLI (run.py)."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from simulations.engine import build_workload, parse_scenario, simulate
from simulations.engine.streaming.stream import HI, LO, REL_ERR, LogHistogram, chunks_of, simulate_stream

ROOT = Path(__file__).resolve().parents[2]


def _load(name: str) -> dict:
    return json.loads((ROOT / "fixtures" / "scenarios" / f"{name}.json").read_text())


def _digest(result) -> tuple:
    keys = sorted(result.requests)
    return tuple(np.asarray(result.requests[k]).tobytes() for k in keys), json.dumps(
        {k: v for k, v in result.summary.items() if "wall" not in k}, sort_keys=True, default=str)


def _many_instances(n: int = 24, limit: int = 3000) -> dict:
    d = _load("code_anchor")
    d["workload"].update(limit=limit, rate_scale=float(n) / 4)
    d["fleet"]["endpoints"][0].update(initial=n, min=n, max=n)
    return d


def _run_checked(d: dict, monkeypatch, check: bool):
    if check:
        monkeypatch.setenv("PLANNER_ENGINE_INDEX_CHECK", "1")
    else:
        monkeypatch.delenv("PLANNER_ENGINE_INDEX_CHECK", raising=False)
    sc = parse_scenario(d)
    return simulate(sc, build_workload(sc))


@pytest.mark.parametrize("case", ["many_instances", "reactive", "burst", "siloed"])
def test_every_indexed_routing_decision_equals_the_scan(case, monkeypatch):
    # PLANNER_ENGINE_INDEX_CHECK=1 re-runs the linear scans beside every indexed decision (JSQ choice and its
    # decode progress, the region router's threshold test, the autoscaler's band test) and raises on a difference
    if case == "many_instances":
        d = _many_instances()
    elif case == "reactive":
        d = _load("small_reactive")
        d["workload"]["synthetic"]["total_requests"] = 6000
    elif case == "burst":
        d = _load("burst_reactive")
        d["workload"]["synthetic"]["total_requests"] = 12000
    else:
        d = _load("small_reactive")
        d["strategy"]["autoscaler"] = "reactive-siloed"
        d["workload"]["synthetic"]["total_requests"] = 6000
    checked = _run_checked(d, monkeypatch, True)
    plain = _run_checked(d, monkeypatch, False)
    assert checked.summary["requests"] > 0 and checked.summary["completed"] > 0
    assert _digest(checked) == _digest(plain)


def test_the_jsq_heap_finds_the_first_least_loaded_instance_at_ties():
    from simulations.engine.core.entities import Endpoint, Instance
    from simulations.engine.fleet.fleetindex import EndpointIndex, jsq_scan
    from simulations.engine.scenario.config import DeploymentSpec, EndpointConfig

    spec = DeploymentSpec.from_dict(_load("code_anchor")["deployments"]["llama2-70b/a100-80gb/tp8"], "d")
    ep = Endpoint(0, EndpointConfig(region="r", model=spec.model, deployment=spec), 0, 0)
    works = [50, 7, 30, 7, 7, 90, 0, 0, 12]
    for i, w in enumerate(works):
        inst = Instance(i, ep, 0.0, 0.0, "initial")
        inst.work = w
        ep.serving.append(inst)
    ix = EndpointIndex(ep, 0.0)
    assert ix.jsq(0.0)[0] is ep.serving[6] is jsq_scan(ep.serving, 0.0)[0]  # two zeros: the first one
    for inst in ep.serving[6:8]:
        inst.work = 100
        ix.touch(inst, 0.0)
    assert ix.jsq(0.0)[0] is ep.serving[1] is jsq_scan(ep.serving, 0.0)[0]  # three 7s: the first one
    ix.remove(ep.serving[1], 0.0)
    ep.serving.pop(1)
    assert ix.jsq(0.0)[0] is ep.serving[2] is jsq_scan(ep.serving, 0.0)[0]  # the next 7 in serving order
    assert ix.bounds(0.0) == (0, 0)  # nothing decoding: the utilisation is exact


def test_histogram_percentiles_are_within_the_stated_bound():
    rng = np.random.default_rng(3)
    x = np.concatenate([rng.lognormal(0, 2, 50_000), rng.uniform(LO, 10 * LO, 1000), [LO, HI / 2]])
    h = LogHistogram()
    h.add(x[: len(x) // 2])
    other = LogHistogram()
    other.add(x[len(x) // 2:])
    h.merge(other)  # merged = one histogram of everything
    assert h.n == len(x)
    for p in (1, 10, 50, 90, 95, 99, 99.9, 100):
        exact = float(np.percentile(x, p, method="inverted_cdf"))
        est = h.percentile(p)
        assert abs(est - exact) <= REL_ERR * exact, (p, exact, est)
    # the bound is tight: a value at a bin's edge is reported REL_ERR away (not better), never more
    assert h.percentile(0) is not None and math.isclose(LogHistogram().percentile(50) or 0, 0)


def test_a_one_chunk_stream_reproduces_the_exact_run():
    d = _load("small_reactive")
    d["workload"]["synthetic"]["total_requests"] = 8000
    sc = parse_scenario(d)
    w = build_workload(sc)
    exact = simulate(sc, w)
    st = simulate_stream(sc, workload_chunks=chunks_of(w, 1e12)).to_dict()
    s, e = st["summary"], exact.summary
    assert (s["requests"], s["completed"], s["scale_outs"], s["scale_ins"]) == (
        e["requests"], e["completed"], e["scale_outs"], e["scale_ins"])
    assert s["gpu_hours"] == pytest.approx(e["gpu_hours"], rel=1e-12)
    assert s["slo_attainment"] == pytest.approx(e["slo_attainment"], abs=1e-9)
    assert s["ttft"]["mean"] == pytest.approx(e["ttft"]["mean"], rel=1e-9)
    done = exact.requests["completed"]
    for key in ("ttft", "e2e"):
        x = exact.requests[key + "_s"][done]
        for p in (50, 90, 95, 99):
            ref = float(np.percentile(x, p, method="inverted_cdf"))
            assert abs(s[key][f"p{p}"] - ref) <= REL_ERR * ref
    # hourly rollups add up to the totals
    assert sum(r["requests"] for r in st["hourly"]) == e["requests"]
    assert sum(r["completed"] for r in st["hourly"]) == e["completed"]


def test_hourly_chunks_count_every_request_once():
    d = _load("small_reactive")
    d["workload"]["synthetic"]["total_requests"] = 8000
    sc = parse_scenario(d)
    w = build_workload(sc)
    exact = simulate(sc, w)
    sizes = []
    st = simulate_stream(sc, workload_chunks=chunks_of(w, 1800.0),
                         on_chunk=lambda i, t0, r: sizes.append(r.summary["requests"])).to_dict()
    assert len(sizes) > 1 and sum(sizes) == len(w) == st["summary"]["requests"]
    assert st["summary"]["completed"] == exact.summary["completed"]
    hours = {r["hour"] for r in st["hourly"]}
    assert hours == set(range(int(w.arrival_s[-1] // 3600) + 1))


def test_the_pandas_free_reader_gives_the_workload_pandas_reads(tmp_path):
    import pandas as pd
    import pyarrow as pa
    import pyarrow.parquet as pq

    from simulations.engine.workload.traceio import iter_parquet_chunks, read_trace_arrays

    d = _load("code_anchor")
    d["workload"]["limit"] = 2000
    sc = parse_scenario(d)
    light = build_workload(sc)  # the engine's one reader (csv module, no pandas)
    # independently: pandas read_csv + to_datetime of the Azure columns (seconds from the file's first stamp), the
    # first 2,000 rows, sorted, from 0
    df = pd.read_csv(ROOT / "fixtures" / "traces" / "azure_code_2023.csv")
    ts = pd.to_datetime(df["TIMESTAMP"].astype(str).str.strip(), format="mixed", utc=True)
    arrival = (ts - ts.min()).dt.total_seconds().to_numpy()[:2000]
    df = df.iloc[:2000]
    order = np.argsort(arrival, kind="stable")
    assert np.array_equal(light.arrival_s, arrival[order] - arrival[order][0])
    assert np.array_equal(light.input_tokens, df["ContextTokens"].to_numpy()[order])
    assert np.array_equal(light.output_tokens, df["GeneratedTokens"].to_numpy()[order])
    assert light.model_names == [sc.fleet.endpoints[0].model] and (light.model == 0).all()
    cols = read_trace_arrays(ROOT / "fixtures" / "traces" / "azure_code_2023.csv")
    path = tmp_path / "t.parquet"
    pq.write_table(pa.table({k: cols[k] for k in ("arrival_s", "input_tokens", "output_tokens")}), path,
                   row_group_size=1000)
    back = read_trace_arrays(path)
    assert all(np.array_equal(back[k], cols[k]) for k in ("arrival_s", "input_tokens", "output_tokens"))
    parts = list(iter_parquet_chunks(path, rows=3000))
    assert len(parts) == 3 and np.array_equal(np.concatenate([p["arrival_s"] for p in parts]), cols["arrival_s"])


def test_a_streamed_parquet_trace_is_cut_at_chunk_boundaries(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    from simulations.engine.workload.traceio import read_trace_arrays

    cols = read_trace_arrays(ROOT / "fixtures" / "traces" / "azure_code_2023.csv")
    path = tmp_path / "t.parquet"
    pq.write_table(pa.table({k: cols[k] for k in ("arrival_s", "input_tokens", "output_tokens")}), path)
    d = _load("code_anchor")
    sc = parse_scenario(d)
    starts = []
    st = simulate_stream(sc, trace=str(path), chunk_s=900.0,
                         on_chunk=lambda i, t0, r: starts.append((t0, r.summary["requests"]))).to_dict()
    assert [t for t, _ in starts] == [0.0, 900.0, 1800.0, 2700.0]
    assert sum(n for _, n in starts) == len(cols["arrival_s"]) == st["summary"]["requests"]
    exact = np.histogram(cols["arrival_s"] - cols["arrival_s"].min(), bins=[0, 900, 1800, 2700, 1e9])[0]
    assert [n for _, n in starts] == exact.tolist()


def test_the_light_cli_prints_what_manage_py_simulate_prints():
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    scenario = str(ROOT / "fixtures" / "scenarios" / "small_reactive.json")
    proc = subprocess.run([sys.executable, "-m", "simulations.engine.run", scenario, "--json"], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    out = json.loads(proc.stdout)
    sc = parse_scenario(_load("small_reactive"))
    ref = simulate(sc, build_workload(sc))
    assert out["requests_simulated"] == ref.summary["requests"]
    assert out["summary"]["gpu_hours"] == ref.summary["gpu_hours"]
    assert out["tiers"] == json.loads(json.dumps(ref.tiers))
    # importing the engine and running it never loads pandas, scipy or statsmodels
    probe = (f"import sys, runpy; sys.argv = ['run', {scenario!r}, '--json']\n"
             "try:\n    runpy.run_module('simulations.engine.run', run_name='__main__')\n"
             "except SystemExit:\n    pass\n"
             "print(sorted(m for m in ('pandas', 'scipy', 'statsmodels', 'django') if m in sys.modules))")
    proc = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.strip().splitlines()[-1] == "[]"


def test_the_light_cli_refuses_a_bad_scenario_with_a_clear_error(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({**_load("small_reactive"), "strategy": {"autoscaler": "nope"}}))
    proc = subprocess.run([sys.executable, "-m", "simulations.engine.run", str(bad)], cwd=ROOT,
                          env=dict(os.environ, PYTHONPATH=str(ROOT)), capture_output=True, text=True, timeout=300)
    assert proc.returncode == 2 and "error: scenario field" in proc.stderr and "Traceback" not in proc.stderr
