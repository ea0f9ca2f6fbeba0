"""GPU types per endpoint (Melange's idea): each option searched, the per-region cheapest mix checked by simulation."""

from __future__ import annotations

import copy

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
    state, known = run_all(spec, base, lambda inputs: run_probe_inputs(base, inputs))
    answer = build_answer(spec, base, state.subs)
    fleets = {c["key"]: {r["region"]: (r["gpu"], r["count"]) for r in c["fleet"]} for c in answer["candidates"]}
    g, h = fleets["static@g"], fleets["static@h"]
    # per region, instances x $/h: the cheaper GPU type wins there
    cheaper = {r: ("g" if g[r][1] * 1.0 < h[r][1] * 1.7 else "h") for r in ("r1", "r2")}
    assert cheaper == {"r1": "h", "r2": "g"}  # the busy region on the fast GPU, the quiet one on the cheap GPU
    assert fleets["static@mix"] == {"r1": h["r1"], "r2": g["r2"]}
    assert any(pid.startswith("static@mix|") for pid in known)  # the mix itself was simulated, not assumed
    assert answer["choice"]["key"] == "static@mix"
