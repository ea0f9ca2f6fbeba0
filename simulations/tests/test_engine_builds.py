"""The compiled engine (Cython build of accel.MODULES: entities, evq and the Simulator's modules) and the
pure-Python source give identical results.

Each build runs in its own process (the build is chosen at import by PLANNER_ENGINE_BUILD); every case prints a
SHA-256 over every per-request output array and the JSON summary (wall time and the build's name left out). The
cases cover each path the compiled loop types separately: the fused arrival path with the reactive autoscaler,
scale-outs under a burst, chunked prefill, the richer prefill form (with and without chunking), the reference
mode, dynamic schedulers (DPA, EDF) with siloed pools, live migration of running requests, vLLM V1 scheduling with and
without prefix caching, an LT-UA day slice with the NIW queue manager (hourly ILP, arrival hook), and
disaggregated prefill / decode pools (static, with the mixed pool, and under the Dynamo planner), and the compiled
policies: PreServe (its projection cache, router and scaler) and Chiron (its global queue and local autoscalers).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from simulations.engine import accel

ROOT = Path(__file__).resolve().parents[2]

CASES = r'''
import copy, hashlib, json, sys
import numpy as np
sys.path.insert(0, ".")
import simulations.engine as engine
from simulations.engine import build_workload, parse_scenario, simulate

def load(name):
    return json.load(open(f"fixtures/scenarios/{name}.json"))

def digest(result):
    h = hashlib.sha256()
    for key in sorted(result.requests):
        a = np.asarray(result.requests[key])
        h.update(key.encode()); h.update(np.ascontiguousarray(a).tobytes())
    s = {k: v for k, v in result.summary.items() if "wall" not in k and k != "engine_build"}
    h.update(json.dumps(s, sort_keys=True, default=str).encode())
    h.update(json.dumps(result.scaling_events, sort_keys=True, default=str).encode())
    return h.hexdigest(), result.summary["requests"], result.summary.get("scale_outs", 0)

def run(d):
    sc = parse_scenario(d)
    return digest(simulate(sc, build_workload(sc)))

out = {"build": engine.BUILD["kind"], "cases": {}}
d = load("small_reactive"); out["cases"]["reactive_unified"] = run(d)
d = load("burst_reactive"); d["workload"]["synthetic"]["total_requests"] = 40000; out["cases"]["burst"] = run(d)
d = load("code_anchor"); d["engine"]["chunked_prefill"] = True; d["workload"].update(limit=3000, rate_scale=2.0)
d["fleet"]["endpoints"][0].update(initial=2, min=2, max=2); out["cases"]["chunked_prefill"] = run(d)
d = load("code_anchor"); d["deployments"]["llama2-70b/a100-80gb/tp8"]["prefill"].update(c_sq=2e-9, c_req=1e-3)
d["workload"].update(limit=3000, rate_scale=2.0); d["fleet"]["endpoints"][0].update(initial=2, min=2, max=2)
out["cases"]["rich_prefill"] = run(d); d["engine"]["chunked_prefill"] = True
out["cases"]["rich_prefill_chunked"] = run(d)
d = load("code_anchor"); d["engine"]["mode"] = "reference"; d["workload"].update(limit=1500)
out["cases"]["reference_mode"] = run(d)
d = load("small_reactive"); d["strategy"].update(autoscaler="reactive-siloed", scheduler="dpa")
d["workload"]["synthetic"]["total_requests"] = 8000; out["cases"]["siloed_dpa"] = run(d)
d = load("small_reactive"); d["strategy"]["scheduler"] = "edf"; d["workload"]["synthetic"]["total_requests"] = 8000
out["cases"]["edf"] = run(d)
d = load("preserve_routing"); d["workload"]["synthetic"].update(rate_rps=14.0, duration_s=600.0)
d["strategy"].update(instance_router="llumnix", autoscaler="llumnix-migrate", params={"scaling": False})
out["cases"]["live_migration"] = run(d)  # migrate_running: switch-over, downtime swap-in
d = load("mooncake_prefix"); d["workload"]["limit"] = 1500  # vLLM V1 + prefix caching on Mooncake hash_ids
d["fleet"]["endpoints"][0].update(initial=3, min=3, max=3); out["cases"]["v1_prefix_caching"] = run(d)
d["engine"]["mode"] = "reference"; out["cases"]["v1_prefix_caching_reference"] = run(d)
dep = d["deployments"]["llama2-70b/a100-80gb/tp8/v1-prefix"]; dep["prefix_caching"] = False
d["engine"]["mode"] = "fast"; out["cases"]["v1_no_prefix_caching"] = run(d)
dep["prefix_caching"] = True; dep["async_scheduling"] = True; out["cases"]["v1_async_scheduling"] = run(d)
d = load("code_disagg"); d["workload"].update(limit=3000)
out["cases"]["disaggregated"] = run(d)  # prefill -> KV transfer -> decode pools (disagg.py)
d["fleet"]["endpoints"][0]["mixed_pool"] = {"prefill_queue_tokens": 4096}
out["cases"]["disaggregated_mixed_pool"] = run(d)  # Splitwise's mixed pool: prompts on decode instances
d = load("bench_day_disagg"); d["workload"]["synthetic"].update(total_requests=6000, duration_s=600.0, peak_hour=0.1)
d["strategy"] = {"autoscaler": "dynamo-planner", "params": {"sync_s": 60, "scrape_interval_s": 60}}
for r in d["fleet"]["regions"]:
    r["vm_capacity"] = 0
out["cases"]["disaggregated_dynamo"] = run(d)  # split scaling: pools scale apart, parked hand-offs

d = load("preserve_routing"); d["workload"]["synthetic"].update(rate_rps=14.0, duration_s=240.0)
d["strategy"].update(autoscaler="preserve", predictor="table2-noise")
d["strategy"]["params"] = {"mu_p": 480.0, "mu_d": 560.0, "mu_t": 1040.0, "window_s": 20.0}
d["fleet"]["endpoints"][0].update(initial=2, min=1, max=6)
out["cases"]["preserve"] = run(d)  # PreServe: the router's projection cache (steps.py), its scaler and router
d = load("chiron_fig19_small"); d["workload"]["limit"] = 4000
out["cases"]["chiron"] = run(d)  # Chiron: interactive routing, the global queue's batch dump, local autoscalers

from planner.comparisons.core.runner import run_variant
d = load("sageserve_day"); d["workload"]["spec_overrides"]["total_rps"] = 1.5
d["engine"]["max_time_s"] = 3 * 3600.0
d["strategy_params"] = {"lt-ua": {"forecast_method": "naive"}}
s = run_variant(d, {"key": "lt-ua", "strategy": "lt-ua", "scheduler": "", "knobs": {}}, base_dir=".")
s = {k: v for k, v in s.items() if "wall" not in k and k != "engine_build"}
out["cases"]["lt_ua_niw_queue"] = [hashlib.sha256(json.dumps(s, sort_keys=True, default=str).encode()).hexdigest(),
                                   s.get("requests"), s["totals"]["scale_out_events"] + s["totals"]["scale_in_events"]]
print(json.dumps(out))
'''


def _measured() -> bool:
    """Whether this test process is measured by coverage (the CI's unit run)."""
    coverage = sys.modules.get("coverage")
    return coverage is not None and coverage.Coverage.current() is not None


def _run(build: str, tmp_path: Path) -> dict:
    env = dict(os.environ, PLANNER_ENGINE_BUILD=build, PYTHONPATH=str(ROOT))
    cmd = [sys.executable, "-c", CASES]
    if build == "python" and _measured():
        # the compiled modules' source lines run only here (the suite imports their compiled build): measured into
        # a parallel data file that the run's report combines, so their coverage is counted, not left at zero
        script = tmp_path / "cases.py"
        script.write_text(CASES)
        cmd = [sys.executable, "-m", "coverage", "run", "--parallel-mode", f"--rcfile={ROOT / 'pyproject.toml'}",
               str(script)]
    proc = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


@pytest.mark.timeout(1500)  # two subprocesses of up to 600 s each (the Python one traced under coverage on CI)
def test_the_compiled_build_gives_the_same_results_as_the_python_source(tmp_path):
    fresh, reason = accel.compiled_state()
    if not fresh:
        if os.environ.get("PLANNER_ENGINE_BUILD") == "compiled":
            pytest.fail(f"PLANNER_ENGINE_BUILD=compiled but {reason}")
        pytest.skip(reason)
    compiled = _run("compiled", tmp_path)
    python = _run("python", tmp_path)
    assert compiled["build"] == "compiled" and python["build"] == "python"
    assert set(compiled["cases"]) == set(python["cases"])
    for name, (h_c, n_c, outs_c) in compiled["cases"].items():
        h_p, n_p, outs_p = python["cases"][name]
        assert n_c and n_c == n_p, name
        assert (h_c, outs_c) == (h_p, outs_p), f"{name}: compiled and Python builds differ"
    # the cases do exercise scaling (otherwise the autoscaler paths were not compared)
    assert compiled["cases"]["burst"][2] > 0 and compiled["cases"]["lt_ua_niw_queue"][2] > 0
    assert compiled["cases"]["preserve"][2] > 0 and compiled["cases"]["chiron"][2] > 0


def test_a_stale_build_is_not_used(tmp_path, monkeypatch):
    # an edited source makes the stamp stale: activate() chooses the source and says why, and extend() then
    # leaves every subpackage's path alone
    monkeypatch.setattr(accel, "source_digest", lambda: "not-the-stamped-digest")
    monkeypatch.setattr(accel, "BUILD", dict(accel.BUILD))
    if not accel.STAMP.exists():
        pytest.skip("no compiled build to go stale")
    path: list[str] = []
    monkeypatch.delenv("PLANNER_ENGINE_BUILD", raising=False)
    info = accel.activate()
    accel.extend("simulations.engine.core", path)
    assert path == [] and info["kind"] == "python" and "stale" in info["reason"]
    monkeypatch.setenv("PLANNER_ENGINE_BUILD", "compiled")
    with pytest.raises(ImportError, match="stale"):
        accel.activate()


def test_a_fresh_build_goes_first_on_each_compiled_subpackage_path(monkeypatch):
    monkeypatch.setattr(accel, "BUILD", {"kind": "compiled", "reason": "test"})
    path = ["src"]
    accel.extend("simulations.engine.instance", path)
    accel.extend("simulations.engine.instance", path)  # once only
    assert path == [str(accel.COMPILED_DIR / "instance"), "src"]
    monkeypatch.setattr(accel, "BUILD", {"kind": "python", "reason": "test"})
    path = ["src"]
    accel.extend("simulations.engine.instance", path)
    assert path == ["src"]


def test_the_build_choice_is_validated(monkeypatch):
    monkeypatch.setenv("PLANNER_ENGINE_BUILD", "turbo")
    with pytest.raises(ImportError, match="auto, python or compiled"):
        accel.activate()
