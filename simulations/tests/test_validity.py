"""Share of a run beyond the context limits and outside the fitted ranges (simulations/engine/results/validity.py)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from simulations.engine import parse_scenario, simulate
from simulations.engine.results.validity import catalogue_limits, validity_report
from simulations.engine.workload.workload import Workload

ROOT = Path(__file__).resolve().parents[2]
EP = {"deployment": "d", "max_model_len": 4096,
      "fitted_range": {"prompt_tokens": [128.0, 8192.0], "context_tokens": [256.0, 8704.0]}}


def test_hand_checked_counts_and_shares():
    """Prompts 100 / 1000 / 5000 / 9000 (+ 10 output tokens) on a 4,096-token model fitted on prompts 128-8,192
    and contexts up to 8,704; a fifth request (prompt 4,090 + 10 output) is never served.

    - prompt over the limit: 5000, 9000 -> 2 of 4 served, prompt tokens (5000+9000)/15100;
    - prompt + output over: the same two (4090+10 is not served; 1000+10 is under);
    - prompt outside 128-8192: 100 (below) and 9000 (above) -> 2 of 4, tokens 9100/15100;
    - context beyond 8704: 9000+10 only -> 1 of 4, tokens 9000/15100."""
    prompt = [100, 1000, 5000, 9000, 4090]
    out = validity_report(prompt, [10] * 5, [0, 0, 0, 0, -1], [EP])
    assert out["served_requests"] == 4 and out["served_prompt_tokens"] == 15100
    assert out["prompt_over_context"] == {"requests": 2, "share": 0.5, "prompt_token_share": pytest.approx(14000 / 15100)}
    assert out["total_over_context"]["requests"] == 2
    assert out["prompt_outside_fitted"] == {"requests": 2, "share": 0.5, "prompt_token_share": pytest.approx(9100 / 15100)}
    assert out["context_beyond_fitted"] == {"requests": 1, "share": 0.25, "prompt_token_share": pytest.approx(9000 / 15100)}
    assert out["deployments"]["d"]["prompt_over_context"] == 2 and out["deployments"]["d"]["served_requests"] == 4
    assert len(out["warnings"]) == 3 and "refuse" in out["warnings"][0]


def test_output_only_over_the_limit_and_unknown_range_are_reported():
    out = validity_report([4000, 200], [200, 10], [0, 0], [{"deployment": "x", "max_model_len": 4096}])
    assert out["prompt_over_context"]["requests"] == 0
    assert out["total_over_context"]["requests"] == 1
    assert out["prompt_outside_fitted"]["requests"] == 0  # nothing known: not checked, and said so
    assert out["unknown"] == {"context_limit": [], "fitted_range": ["x"]}
    assert any("stop them early" in w for w in out["warnings"])
    assert any("no fitted range known for x" in w for w in out["warnings"])


def test_inside_everything_gives_no_warning():
    out = validity_report([500, 600], [100, 100], [0, 0], [EP])
    assert out["warnings"] == []
    assert all(out[k]["share"] == 0.0 for k in ("prompt_over_context", "prompt_outside_fitted"))


def test_catalogue_limits_of_builtins():
    got = catalogue_limits("llama2-70b/a100-80gb/tp8", "llama2-70b")
    assert got["max_model_len"] == 4096
    assert got["fitted_range"]["prompt_tokens"] == [128.0, 8192.0]
    # an unknown deployment of a known model (by alias) still gets the model's context limit, no range
    assert catalogue_limits("mine", "meta-llama/Llama-3.1-8B-Instruct") == {"max_model_len": 131072, "fitted_range": {}}


def test_run_summary_carries_the_report():
    """The anchor scenario's deployment carries the built-in's name: its limits and range are the catalogue's."""
    scenario = parse_scenario(json.loads((ROOT / "fixtures/scenarios/code_anchor.json").read_text()))
    model = scenario.fleet.endpoints[0].model
    frame = pd.DataFrame({"arrival_s": [0.0, 1.0, 2.0, 3.0], "input_tokens": [100, 1000, 5000, 9000],
                          "output_tokens": [10, 10, 10, 10], "model": model})
    workload = Workload.from_frame(frame, default_region=scenario.fleet.endpoints[0].region)
    result = simulate(scenario, workload)
    v = result.summary["validity"]
    assert result.summary["completed"] == 4
    assert v["prompt_over_context"]["requests"] == 2
    assert v["prompt_outside_fitted"]["requests"] == 2
    assert np.isclose(v["prompt_outside_fitted"]["prompt_token_share"], 9100 / 15100)
    assert json.loads(json.dumps(result.to_dict()))["summary"]["validity"]["warnings"]


@pytest.mark.django_db(transaction=True)
def test_run_api_and_page_warn_when_requests_are_beyond_the_context(cast):
    from django.test import Client

    resp = cast.owner.api.post("/api/simulations/", {"fixture": "code_anchor"}, format="json")
    assert resp.status_code == 201, resp.content
    run = cast.owner.api.get(f"/api/simulations/{resp.json()['id']}/").json()
    assert run["status"] == "succeeded"
    assert run["summary"]["validity"]["prompt_over_context"]["requests"] == 1241  # of 8,819 (Llama-2: 4,096)
    assert any("context limit" in w for w in run["warnings"])
    page = Client()
    page.force_login(cast.owner.user)
    html = page.get(f"/simulations/{run['id']}/").content.decode()
    assert 'id="validity"' in html and "1241 served requests" in html


def test_comparison_pdf_section_warns_only_when_needed():
    from reportlab.lib.styles import getSampleStyleSheet

    from planner.comparisons.core.report import _validity_section

    small = getSampleStyleSheet()["BodyText"]
    inside = {"a": {"validity": validity_report([500], [10], [0], [EP])}}
    assert _validity_section(inside, ["a"], small) == []
    outside = {"a": {"validity": validity_report([500], [10], [0], [EP])},
               "b": {"validity": validity_report([5000, 100], [10, 10], [0, 0], [EP])}}
    story = _validity_section(outside, ["a", "b"], small)
    table = story[1]
    assert [row[0] for row in table._cellvalues] == ["variant", "b"]
    assert table._cellvalues[1][1] == "1 (50.00%)"


def test_siloed_pools_are_indexed_by_the_simulated_fleet():
    """The siloed autoscaler splits each endpoint into IW / NIW pools (more endpoints than the scenario lists):
    the report follows the fleet the run simulated, and every served request lands on one deployment."""
    d = json.loads((ROOT / "fixtures/scenarios/small_reactive.json").read_text())
    d["strategy"].update(autoscaler="reactive-siloed")
    d["workload"]["synthetic"]["total_requests"] = 2000
    result = simulate(parse_scenario(d))
    v = result.summary["validity"]
    served = int((result.requests["endpoint"] >= 0).sum())
    assert v["served_requests"] == served > 0
    assert sum(row["served_requests"] for row in v["deployments"].values()) == served
