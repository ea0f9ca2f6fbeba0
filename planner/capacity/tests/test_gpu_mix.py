"""GPU types per endpoint (Melange's idea): each option searched, the per-region cheapest mix checked by simulation."""

from __future__ import annotations

import copy
import json

from planner.capacity.core.driver import run_all, run_probe_inputs
from planner.capacity.core.spec import parse_spec
from planner.capacity.tests.scenarios import two_region_queue
from planner.decisions.answer import build_answer


def test_each_region_gets_its_cheaper_gpu_and_the_mix_is_checked_by_simulation():
    base = two_region_queue(duration_s=300.0)
    base["workload"]["synthetic"]["regions"] = {"r1": 0.8, "r2": 0.2}  # 12.8 and 3.2 requests/s
    fast = copy.deepcopy(base["deployments"]["m/g/tp1"])  # twice as fast per token, 1.7x the price
    fast.update(name="m/h/tp1", gpu="h", decode={"c0": 0.005, "c_batch": 0.0, "c_ctx": 0.0},
                price_per_instance_hour={"on_demand": 1.7})
    base["deployments"]["m/h/tp1"] = fast
    spec = parse_spec({"strategies": ["static"], "targets": {"IW-F": 0.9}, "probability": 0.66, "seeds": [1, 2, 3],
                       "band_draws": 3, "gpu_options": {"m": ["m/g/tp1", "m/h/tp1"]}})
    ran = []

    def run(inputs):
        ran.append(json.dumps({k: inputs[k] for k in ("strategy", "deployments", "fleet", "seed", "load")},
                              sort_keys=True))
        return run_probe_inputs(base, inputs)

    state, known = run_all(spec, base, run)
    assert len(ran) == len(set(ran)) == len(known)  # never the same (strategy, GPU types, fleet, seed, load) twice
    answer = build_answer(spec, base, state.subs)
    fleets = {c["key"]: {r["region"]: (r["gpu"], r["count"]) for r in c["fleet"]} for c in answer["candidates"]}
    g, h = fleets["static@g"], fleets["static@h"]
    # per region, instances x $/h: the cheaper GPU type wins there
    cheaper = {r: ("g" if g[r][1] * 1.0 < h[r][1] * 1.7 else "h") for r in ("r1", "r2")}
    assert cheaper == {"r1": "h", "r2": "g"}  # the busy region on the fast GPU, the quiet one on the cheap GPU
    assert fleets["static@mix"] == {"r1": h["r1"], "r2": g["r2"]}
    assert any(pid.startswith("static@mix|") for pid in known)  # the mix itself was simulated, not assumed
    assert answer["choice"]["key"] == "static@mix"
    # the single-GPU candidates cost more than the mix on the search seeds and meet no SLO more often: pruned,
    # never replayed on the band seeds; only the chosen mix is replayed at 1.2x the load
    band_seeds = set(spec.band_seeds)
    for key in ("static@g", "static@h"):
        c = next(c for c in answer["candidates"] if c["key"] == key)
        assert c["pruned_by"] == "static@mix" and not c["accepted"] and "dominated by static@mix" in c["why"]
        assert not [p for p in known if p.startswith(key + "|") and int(p.split("|")[2]) in band_seeds]
    assert {p.split("|")[0] for p in known if p.endswith("|1.2")} == {"static@mix"}
    assert answer["sensitivity"] and answer["sensitivity"][0]["input"] == "load x1.2"


def test_dominance_needs_no_more_cost_and_no_less_success_everywhere():
    from planner.capacity.core.driver import Sub, _Found, dominated_by

    sub = Sub(key="x", strategy={"strategy": "static", "key": "static"}, mode="static")
    cheap = _Found("a", sub, 10.0, {"r1": 1.0, "r2": 0.67}, True, order=1)
    dear_better = _Found("b", sub, 12.0, {"r1": 1.0, "r2": 1.0}, True)  # costs more but meets r2 more often
    dear_same = _Found("c", sub, 12.0, {"r1": 1.0, "r2": 0.67}, True)
    cheap_infeasible = _Found("d", sub, 5.0, {"r1": 1.0, "r2": 1.0}, False)
    assert dominated_by([cheap, dear_better, dear_same, cheap_infeasible]) == {"c": "a"}
    twin = _Found("e", sub, 10.0, {"r1": 1.0, "r2": 0.67}, True, order=2)
    assert dominated_by([twin, cheap]) == {"e": "a"}  # a tie: the earlier in the spec stays
