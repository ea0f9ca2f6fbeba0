"""Admission and preemption as vLLM does them, and context limits acted on in the loop.

Hand-checked overload case (``test_overload_by_hand``): one instance, KV capacity 200 tokens, prefill of any batch
0.1 s (c0 only), decode iteration 0.01 s (c0 only), three requests r0, r1, r2 arriving at t = 0, prompt 60 and
output 20 tokens each. The first token comes out of the prefill; each decode iteration adds one token and one KV
slot per running request, so a running request holds prompt + tokens generated - 1 slots (the newest token's slot
is taken by the next iteration) and a recomputed one needs prompt + tokens generated.

vLLM (``engine.preemption = "vllm"``, watermark 5 % = 10 tokens), step by step as vllm/v1/core/sched/scheduler.py
``schedule`` and the V0 block manager's ``can_allocate`` do it:

- t = 0: free 200. r0 needs 60: 200 - 60 = 140 >= 10 (watermark) -> admitted; r1: 140 - 60 = 80 >= 10 -> admitted;
  r2: 80 - 60 = 20 >= 10 -> admitted. One prefill of 180 tokens: 0.1 s.
- t = 0.1: each has 1 token; KV 180, room 20 for a batch of 3: 6 decode iterations (0.06 s) fit.
- t = 0.16: KV 198, each has 7 tokens; the next iteration needs 3 slots, 2 are free -> preempt. V1 FCFS preempts
  ``running.pop()``, the most recently scheduled request: r2 (its 66 slots freed; it keeps its 7 tokens and will
  recompute prompt + 7 = 67 tokens). A step that preempted schedules no waiting request (``if not
  preempted_reqs``): r0, r1 decode one iteration -> t = 0.17, KV 134.
- t = 0.17: r2 needs 67: free 66 - 67 < 10 -> LATER. r0, r1 decode their last 12 tokens (room 66 >= 2 x 12):
  t = 0.29, both done (20 tokens), KV 0.
- t = 0.29: r2 admitted (190 - 67 >= 10), prefill 67 tokens 0.1 s -> t = 0.39, its 8th token; 12 decode iterations
  -> done at t = 0.51. Preemptions: r2 once; max 1.

the earlier model (``preemption = "legacy"``, no watermark) on the same case:

- same until t = 0.16: victim = the latest arrival (ties: highest id) = r2 (66 slots freed, KV 132); re-admitted in
  the same step (needs 67, free 68), prefilled alone (0.1 s, r0 and r1 paused) -> t = 0.26, r2 has 8 tokens, KV 199.
- t = 0.26: room 1 < 3 -> r2 evicted again (needs 68, free 68) -> re-admitted, prefilled -> t = 0.36, 9 tokens,
  KV 200.
- t = 0.36: room 0 -> r2 evicted a third time (needs 69 > 68 free): now r0, r1 decode their last 13 tokens ->
  t = 0.49 done; r2 prefilled (69) -> t = 0.59, 10 tokens; 10 iterations -> done at t = 0.69. Preemptions: r2 three
  times: the re-admit-then-evict cycle of the issue, and r0 / r1 finish 0.2 s later.
"""

from __future__ import annotations

import numpy as np
import pytest

from simulations.engine import simulate
from simulations.engine.workload.limits import apply_context_limits
from simulations.tests.engine_helpers import scenario, workload

TINY = {"kv_capacity_tokens": 200, "max_batch_size": 64, "max_batch_tokens": 8192,
        "prefill": {"c0": 0.1, "c1": 0.0, "c2": 0.0}, "decode": {"c0": 0.01, "c_batch": 0.0, "c_ctx": 0.0}}


def _run(mode: str, **engine):
    sc = scenario(spec=TINY, engine={"mode": mode, "timeline_step_s": 0, **engine})
    return simulate(sc, workload([0.0, 0.0, 0.0], [60, 60, 60], [20, 20, 20]))


@pytest.mark.parametrize("mode", ["fast", "reference"])
def test_overload_by_hand(mode):
    r = _run(mode, kv_watermark=0.05)  # preemption "vllm" is the default
    done = r.requests["done_s"]
    assert done == pytest.approx([0.29, 0.29, 0.51])
    assert list(r.requests["preemptions"]) == [0, 0, 1]
    assert r.summary["preemptions_per_request"]["max"] == 1
    assert r.summary["preemptions_per_request"]["requests_preempted"] == 1
    assert r.requests["ttft_s"] == pytest.approx([0.1, 0.1, 0.1])

    old = _run(mode, kv_watermark=0, preemption="legacy")
    assert old.requests["done_s"] == pytest.approx([0.49, 0.49, 0.69])
    assert list(old.requests["preemptions"]) == [0, 0, 3]
    assert old.summary["preemptions_per_request"]["max"] == 3


def test_the_watermark_holds_back_an_admission():
    # cap 200, watermark 10 %: 20 tokens. Prompts 100 + 90: the second leaves 10 < 20 free -> waits for the first
    sc = scenario(spec=TINY, engine={"mode": "reference", "timeline_step_s": 0, "kv_watermark": 0.10})
    r = simulate(sc, workload([0.0, 0.0], [100, 90], [2, 2]))
    # r0: prefill 0.1, one decode 0.01 -> 0.11; r1 admitted then: prefill 0.1 + decode 0.01 -> 0.22
    assert r.requests["done_s"] == pytest.approx([0.11, 0.22])
    sc = scenario(spec=TINY, engine={"mode": "reference", "timeline_step_s": 0, "kv_watermark": 0.0})
    r = simulate(sc, workload([0.0, 0.0], [100, 90], [2, 2]))
    assert r.requests["done_s"] == pytest.approx([0.11, 0.11])  # both in one prefill without the watermark


def test_a_prompt_above_capacity_less_watermark_is_dropped_not_stuck():
    sc = scenario(spec=TINY, engine={"mode": "fast", "timeline_step_s": 0, "kv_watermark": 0.05})
    r = simulate(sc, workload([0.0, 0.0], [195, 50], [3, 3]))  # 195 > 200 - 10: vLLM's AllocStatus.NEVER
    assert r.tiers["IW-F"]["drop_reasons"] == {"prompt_exceeds_kv_capacity": 1}
    assert r.summary["completed"] == 1


def test_priority_scheduler_victim_is_the_lowest_priority():
    # PriorityFirst: NIW (tier 2) ranks after IW; the NIW request is the victim even though it arrived first
    sc = scenario(spec=TINY, strategy={"autoscaler": "static", "scheduler": "pf"},
                  engine={"mode": "reference", "timeline_step_s": 0, "kv_watermark": 0.05})
    r = simulate(sc, workload([0.0, 0.0, 0.0], [60, 60, 60], [20, 20, 20], tiers=[2, 0, 0]))
    assert list(r.requests["preemptions"]) == [1, 0, 0]


def test_swap_preemption_mode_swaps_instead_of_recomputing():
    spec = dict(TINY, kv_bytes_per_token=1e6)
    sc = scenario(spec=spec, engine={"mode": "reference", "timeline_step_s": 0, "kv_watermark": 0.05,
                                     "preemption_mode": "swap"})
    r = simulate(sc, workload([0.0, 0.0, 0.0], [60, 60, 60], [20, 20, 20]))
    assert list(r.requests["preemptions"]) == [0, 0, 1]
    # r2 swapped out at 0.16 with 66 KV tokens; resumes when r0, r1 finish (0.29): 66 MB / 25 GB/s, no prefill,
    # then its remaining 13 tokens as 13 decode iterations
    assert r.requests["done_s"][2] == pytest.approx(0.29 + 66e6 / 25e9 + 0.13)


# ---------------------------------------------------------------------------------------- context limits
def _ctx_run(over: str, prompts, outputs, limit=100):
    spec = dict(TINY, kv_capacity_tokens=100_000, max_model_len=limit)
    sc = scenario(spec=spec, engine={"mode": "fast", "timeline_step_s": 0, "over_context": over})
    n = len(prompts)
    return simulate(sc, workload([0.1 * i for i in range(n)], prompts, outputs))


def test_reject_drops_long_prompts_and_cuts_long_outputs():
    r = _ctx_run("reject", [50, 101, 150, 95, 100], [10, 5, 5, 20, 3])
    # 101 and 150 > 100: refused (vLLM: prompt longer than max_model_len); 95 + 20 > 100: output cut to 5;
    # 100 + 3: output cut to 1 (the prefill's token)
    assert r.tiers["IW-F"]["drop_reasons"] == {"prompt_exceeds_max_model_len": 2}
    assert r.summary["context_limits"]["prompts_over_limit"] == 2
    assert r.summary["context_limits"]["outputs_cut"] == 2
    assert r.summary["context_limits"]["output_tokens_cut"] == 15 + 2
    # the validity report counts the same over-context prompts on the original workload
    assert r.summary["validity"]["prompt_over_context"]["requests"] == 2
    assert r.summary["validity"]["total_over_context"]["requests"] == 4
    assert r.summary["dropped"] == 2
    assert any("refused" in w for w in r.summary["validity"]["warnings"])


def test_truncate_keeps_every_request():
    r = _ctx_run("truncate", [50, 100, 150, 95], [10, 5, 5, 20])
    assert r.summary["dropped"] == 0
    assert r.summary["context_limits"]["prompts_truncated"] == 3  # 100 -> 95, 150 -> 95, 95 -> 80
    assert r.summary["context_limits"]["prompt_tokens_cut"] == 5 + 55 + 15


def test_ignore_simulates_everything():
    r = _ctx_run("ignore", [50, 100, 150, 95], [10, 5, 5, 20])
    assert r.summary["dropped"] == 0
    assert r.summary["context_limits"]["outputs_cut"] == 0


def test_route_sends_long_prompts_to_the_region_that_fits():
    spec_short = dict(TINY, kv_capacity_tokens=100_000, max_model_len=100, name="short")
    spec_long = dict(TINY, kv_capacity_tokens=100_000, max_model_len=1000, name="long")
    base = scenario(spec=spec_short, regions=["r1", "r2"],
                    engine={"mode": "fast", "timeline_step_s": 0, "over_context": "route"})
    eps = list(base.fleet.endpoints)
    from dataclasses import replace

    from simulations.engine.scenario.config import DeploymentSpec
    eps[1] = replace(eps[1], deployment=DeploymentSpec.from_dict(spec_long))
    sc = replace(base, fleet=base.fleet.with_endpoints(eps))
    w = workload([0.0, 0.1, 0.2], [50, 500, 2000], [5, 5, 5], region_names=("r1", "r2"))
    r = simulate(sc, w)
    ep = r.requests["endpoint"]
    assert ep[0] == 0 and ep[1] == 1  # the 500-token prompt crossed to the region whose limit fits
    assert r.tiers["IW-F"]["drop_reasons"] == {"prompt_exceeds_max_model_len": 1}  # 2,000 fits nowhere


def test_apply_context_limits_without_limits_is_the_identity():
    sc = scenario(spec=TINY)
    w = workload([0.0], [10], [5])
    out, info = apply_context_limits(sc.fleet, w, ["toy"], "reject")
    assert out is w and info["limits"] == {}
    assert np.array_equal(out.output_tokens, [5])


# ---------------------------------------------------------------------------------------- page, API, CLI
def _overload_scenario_dict(**engine) -> dict:
    from simulations.tests.engine_helpers import SPEC

    spec = dict(SPEC, **TINY)
    return {"name": "overload by hand", "seed": 3,
            "workload": {"synthetic": {"total_requests": 40, "duration_s": 1.0, "input_tokens": {"mean": 60, "sigma": 0.0,
                                                                                                 "max": 60},
                                       "output_tokens": {"mean": 40, "sigma": 0.0, "max": 40},
                                       "model_weights": {"toy": 1.0}, "region_weights": {"r1": 1.0}}},
            "fleet": {"regions": [{"name": "r1"}],
                      "endpoints": [{"region": "r1", "model": "toy", "deployment": spec, "initial": 1, "min": 1,
                                     "max": 1}]},
            "strategy": {"autoscaler": "static"}, "engine": {"mode": "fast", **engine}}


@pytest.mark.django_db(transaction=True)
def test_run_api_page_and_cli_show_preemptions_per_request(cast, tmp_path):
    import json

    from django.core.management import call_command
    from django.test import Client

    resp = cast.owner.api.post("/api/simulations/", {"scenario": _overload_scenario_dict(preemption="legacy",
                                                                                           kv_watermark=0)},
                               format="json")
    assert resp.status_code == 201, resp.content
    run = cast.owner.api.get(f"/api/simulations/{resp.json()['id']}/").json()
    assert run["status"] == "succeeded"
    ppr = run["preemptions_per_request"]
    assert ppr == run["summary"]["preemptions_per_request"] and ppr["max"] >= 1 and ppr["requests_preempted"] >= 1
    page = Client()
    page.force_login(cast.owner.user)
    html = page.get(f"/simulations/{run['id']}/").content.decode()
    assert 'id="preemptions"' in html and f"at most {ppr['max']} times one request" in html

    path = tmp_path / "s.json"
    path.write_text(json.dumps(_overload_scenario_dict()))
    from io import StringIO
    out = StringIO()
    call_command("simulate", str(path), "--no-save", stdout=out)
    assert "preemptions " in out.getvalue() and "max " in out.getvalue()
