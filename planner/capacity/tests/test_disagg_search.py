"""The capacity search chooses between aggregated and disaggregated serving: each pool's count by its own signal,
the P/D ratio and GPU types, why (the best of each kind), and the boundary's refusals."""

from __future__ import annotations

import copy
import io
import json

import pytest
from django.core.management import call_command

from planner.capacity.core.disagg import group_ok, pool_group
from planner.capacity.core.driver import run_all, run_probe_inputs
from planner.capacity.core.probe import fleet_key, meets, parse_fleet_key
from planner.capacity.core.spec import SpecError, parse_spec
from planner.capacity.models import CapacitySearch
from planner.capacity.tests.scenarios import PD_OPTIONS, pd_queue
from planner.jobs.models import Job

SPEC = {"strategies": ["static"], "targets": {"IW-F": 0.9}, "probability": 0.66, "seeds": [1, 2, 3], "band_draws": 3,
        "disaggregated": PD_OPTIONS}
PRE, DEC = pool_group("r1/m", "prefill"), pool_group("r1/m", "decode")


@pytest.fixture(scope="module")
def searched():
    base = pd_queue()
    spec = parse_spec(SPEC)
    ran = []

    def run(inputs):
        ran.append(json.dumps({k: inputs[k] for k in ("strategy", "pools", "fleet", "seed", "load")}, sort_keys=True))
        return run_probe_inputs(base, inputs)

    state, known = run_all(spec, base, run)
    return base, spec, state, known, ran


def _shares(spec, known, sub_key: str, fleet: dict, group: str) -> float:
    """The share of the search seeds a fleet was run on where the group met its signal (a fleet settled as a miss
    on its first seeds is not run on the others: then the share over those is 0)."""
    outs = [known[pid] for s in spec.seeds if (pid := f"{sub_key}|{fleet_key(fleet)}|{s}|1") in known]
    assert outs
    return sum(group_ok(o, group, spec.targets, meets) for o in outs) / len(outs)


def test_each_pool_gets_the_fewest_instances_its_own_signal_allows(searched):
    base, spec, state, known, ran = searched
    assert len(ran) == len(set(ran)) == len(known)  # never the same probe twice
    found = state.subs["static@pd:p>d"]["search"]
    p, d = found["counts"][PRE], found["counts"][DEC]
    # hand-computed: 8 req/s x 400 prompt tokens at 1,000 tokens/s per prefill instance -> at least 4; 8 x 50 output
    # tokens/s at 16 / 0.052 s per decode instance -> at least 2 (a utilisation below one)
    assert (p, d) == (4, 2)
    assert found["verified"] and all(found["feasible"].values())
    key = "static@pd:p>d"
    # the decode pool waits at its ceiling (16) while the prefill pool is bisected (1, 2, 4, 3), then is bisected
    # itself with the prefill pool at its answer
    fleets = [parse_fleet_key(r["fleet"]) for r in found["rounds"]]
    assert [f[PRE] for f in fleets[:4]] == [1, 2, 4, 3] and {f[DEC] for f in fleets[:4]} == {16}
    assert {f[PRE] for f in fleets[4:]} == {4} and [f[DEC] for f in fleets[4:6]] == [1, 2]
    # one fewer of either pool misses that pool's signal on the search seeds (what the search saw, re-read here)
    assert _shares(spec, known, key, {PRE: p - 1, DEC: 16}, PRE) < spec.probability  # decode at its ceiling
    assert _shares(spec, known, key, {PRE: p, DEC: d - 1}, DEC) < spec.probability
    assert _shares(spec, known, key, {PRE: p, DEC: d}, PRE) >= spec.probability


def test_the_answer_runs_the_cheaper_kind_and_says_why(searched):
    from planner.decisions.answer import build_answer

    base, spec, state, known, _ = searched
    answer = build_answer(spec, base, state.subs)
    serving = answer["serving"]
    agg, dis = serving["aggregated"], serving["disaggregated"]
    assert agg["key"] == "static" and dis["key"] == "static@pd:p>d"
    assert agg["accepted"] and dis["accepted"] and serving["runs"] == "disaggregated"
    assert answer["choice"]["key"] == "static@pd:p>d"
    rows = {r["pool"]: (r["gpu"], r["count"]) for r in answer["choice"]["fleet"]}
    assert rows == {"prefill": ("p", 4), "decode": ("d", 2)}
    n_agg = next(r["count"] for r in agg["pools"])
    # cost by hand: 6 x $0.50/h disaggregated against n x $1.00/h aggregated, both over the same span
    ratio = dis["monthly_cost_usd"]["median"] / agg["monthly_cost_usd"]["median"]
    assert ratio == pytest.approx(6 * 0.5 / (n_agg * 1.0), rel=0.03)
    assert "disaggregated serving (4 prefill on p + 2 decode on d)" in serving["verdict"]
    assert f"best aggregated candidate (static) costs {_money(agg)}" in serving["verdict"]
    # each pool's GPU price moves only that pool's cost: prefill 4 x $0.50 of $3/h, decode 2 x $0.50
    effect = {s["input"]: s["effect"] for s in answer["sensitivity"]}
    assert effect["p price +20 %"].startswith(f"monthly cost {0.2 * 2 / 3:+.0%}")
    assert effect["d price +20 %"].startswith(f"monthly cost {0.2 * 1 / 3:+.0%}")


def _money(row) -> str:
    return f"${row['monthly_cost_usd']['median']:,.0f}"


def test_each_pool_is_judged_by_its_own_signal():
    """TTFT target 2 s, E2E 10 s: the prefill pool by TTFT; the decode pool by E2E with TTFT credited up to 2 s."""
    import numpy as np

    from planner.capacity.core.disagg import pool_attainment
    from planner.capacity.core.probe import slo_met
    from simulations.engine.scenario.config import SLOConfig

    class Workload:
        tier = np.zeros(4, dtype=np.int64)
        deadline_s = None
        arrival_s = np.zeros(4)

    #            slow prefill,   slow decode,    both fine,      never first token
    requests = {"ttft_s": np.array([5.0, 1.0, 1.5, np.nan]), "e2e_s": np.array([12.0, 11.5, 9.0, np.nan]),
                "completed": np.array([True, True, True, False])}
    slo = SLOConfig(ttft_s={"IW-F": 2.0}, e2e_s={"IW-F": 10.0})
    got = pool_attainment(requests, Workload, slo, slo_met)
    assert got["prefill"].tolist() == [False, True, True, False]
    # request 0: 12 - 5 + 2 = 9 s had its prefill met the target: the decode pool did its part
    assert got["decode"].tolist() == [True, False, True, False]
    assert slo_met(requests, Workload, slo).tolist() == [False, False, True, False]  # the full SLO: both


def test_a_search_without_disaggregated_options_reports_no_serving_choice():
    from planner.capacity.core.disagg import serving_choice

    assert serving_choice([{"serving": "aggregated"}]) is None


@pytest.mark.django_db
@pytest.mark.parametrize("change,where", [
    (lambda s, b: s["disaggregated"]["m"].update(prefill=["m/none/tp1"]), "spec.disaggregated.m.prefill[0]"),
    (lambda s, b: s.update(disaggregated={"x": PD_OPTIONS["m"]}), "spec.disaggregated.x"),
    (lambda s, b: s.update(strategies=["reactive-unified"]), "spec.strategies[0]"),
    (lambda s, b: s.update(mode="check"), "spec.disaggregated"),
    (lambda s, b: b["deployments"]["m/d/tp1"].update(kv_capacity_tokens=100), "spec.disaggregated.m.decode[0]"),
    (lambda s, b: b["deployments"]["m/p/tp1"].pop("kv_bytes_per_token"), "spec.disaggregated.m.prefill[0]"),
    (lambda s, b: s["disaggregated"]["m"].update(kv_link={"bandwidth_gb_s": 0}),
     "spec.disaggregated.m.kv_link.bandwidth_gb_s"),
])
def test_bad_disaggregated_input_names_the_field_and_stores_nothing(cast, change, where):
    spec, base = copy.deepcopy(SPEC), pd_queue()
    change(spec, base)
    resp = cast.owner.api.post("/api/capacity-searches/", {"scenario": base, "spec": spec}, format="json")
    assert resp.status_code == 400, resp.content
    assert resp.json()["error"]["where"] == where, resp.json()
    assert not CapacitySearch.objects.exists() and not Job.objects.exists()


@pytest.mark.django_db
def test_a_disaggregated_endpoint_in_the_scenario_is_refused_naming_it(cast):
    base = pd_queue()
    e = base["fleet"]["endpoints"][0]
    base["fleet"]["endpoints"][0] = {"region": "r1", "model": "m", "prefill_pool": {"deployment": "m/p/tp1"},
                                     "decode_pool": {"deployment": "m/d/tp1"}}
    resp = cast.owner.api.post("/api/capacity-searches/", {"scenario": base, "spec": SPEC}, format="json")
    assert resp.status_code == 400 and e
    assert resp.json()["error"]["where"].endswith("fleet.endpoints[0].prefill_pool"), resp.json()


@pytest.mark.django_db
def test_the_pairs_count_against_the_request_bound(cast, settings):
    spec = dict(SPEC, disaggregated={})
    base = pd_queue()
    from planner.capacity.services import check_search

    _, aggregated_only = check_search(base, spec)
    _, with_pairs = check_search(base, SPEC)
    # by hand: ceiling 16 -> 2 x 4 search fleets (spec.search_fleets_bound); 3 seeds, the joint answer and 2 fix-ups,
    # 3 band draws + 3 load-check probes: aggregated (8 + 2 + 1) x 3 + 6 = 39 probes; the pair searches its pools one
    # after the other: (16 + 2 + 1) x 3 + 6 = 63; 960 requests a probe (8 req/s x 120 s)
    assert aggregated_only == 39 * 960 and with_pairs == (39 + 63) * 960
    settings.PLANNER_MAX_SEARCH_REQUESTS = with_pairs - 1  # the aggregated search fits, the pairs do not
    check_search(base, spec)
    with pytest.raises(SpecError) as exc:
        check_search(base, SPEC)
    assert exc.value.where == "spec" and "disaggregated pairs" in exc.value.hint


@pytest.mark.django_db(transaction=True)
def test_api_page_cli_and_pdf_show_both_kinds(cast, client, tmp_path):
    from planner.capacity.tests.test_search_jobs import pdf_text

    resp = cast.owner.api.post("/api/capacity-searches/", {"scenario": pd_queue(), "spec": SPEC}, format="json")
    assert resp.status_code == 201, resp.content
    search = CapacitySearch.objects.get(pk=resp.json()["id"])
    answer = cast.owner.api.get(f"/api/capacity-searches/{search.pk}/answer/").json()["answer"]
    assert answer["serving"]["runs"] == "disaggregated" and answer["choice"]["key"] == "static@pd:p>d"
    client.force_login(cast.owner.user)
    html = client.get(f"/capacity/{search.pk}/").content.decode()
    assert 'data-serving="disaggregated"' in html and 'data-serving-row="aggregated"' in html
    assert 'data-pool="prefill"' in html and 'data-pool="decode"' in html
    text = pdf_text(cast.owner.api.get(f"/api/capacity-searches/{search.pk}/pdf/").content)
    assert "Aggregated or disaggregated" in text and "prefill" in text
    path = tmp_path / "pd.json"
    path.write_text(json.dumps(pd_queue()))
    out = io.StringIO()
    call_command("capacity_search", str(path), "--strategies", "static", "--targets", '{"IW-F": 0.9}',
                 "--probability", "0.66", "--band-draws", "3", "--disaggregated", json.dumps(PD_OPTIONS),
                 "--team", "Fleet A", stdout=out)
    printed = out.getvalue()
    assert "serving: disaggregated serving (4 prefill on p + 2 decode on d)" in printed
    assert "r1/m prefill=4" in printed and "r1/m decode=2" in printed
