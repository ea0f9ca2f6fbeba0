"""The capacity search mixes aggregated and disaggregated endpoints: with disaggregated options for two models, a
candidate splits each model alone (the other aggregated) beside the one splitting both, and the cheapest accepted
wins, whichever it is."""

from __future__ import annotations

import pytest

from planner.capacity.core.driver import run_all, run_probe_inputs, subs_of
from planner.capacity.core.spec import parse_spec
from planner.capacity.tests.scenarios import PD_OPTIONS, pd_queue

SPEC = {"strategies": ["static"], "targets": {"IW-F": 0.9}, "probability": 0.66, "seeds": [1, 2, 3], "band_draws": 3,
        "disaggregated": {"m": PD_OPTIONS["m"], "n": {"prefill": ["n/p/tp1"], "decode": ["n/d/tp1"]}}}


def two_models() -> dict:
    """pd_queue's model m (the split pays: $0.50/h a pool instance against $1/h aggregated) beside a copy n whose
    pool deployments cost $2/h (the split does not pay), each at pd_queue's rate."""
    base = pd_queue()
    deps = base["deployments"]
    for name in list(deps):
        twin = dict(deps[name], model="n", name=name.replace("m/", "n/"))
        if name != "m/g/tp1":
            twin["price_per_instance_hour"] = {"on_demand": 2.0}
        deps[twin["name"]] = twin
    syn = base["workload"]["synthetic"]
    syn["rate_rps"] *= 2
    syn.pop("model")
    syn["models"] = {"m": 0.5, "n": 0.5}
    base["fleet"]["endpoints"].append(dict(base["fleet"]["endpoints"][0], model="n", deployment="n/g/tp1"))
    return base


@pytest.fixture(scope="module")
def searched():
    base, spec = two_models(), parse_spec(SPEC)
    state, _known = run_all(spec, base, lambda inputs: run_probe_inputs(base, inputs))
    return base, spec, state


def test_each_model_alone_is_a_candidate_beside_both():
    subs = {s.key: s for s in subs_of(parse_spec(SPEC), two_models(), set())}
    assert list(subs) == ["static", "static@pd:p>d", "static@pd[m]:p>d", "static@pd[n]:p>d"]
    assert set(subs["static@pd[m]:p>d"].pools) == {"r1/m"} and set(subs["static@pd[n]:p>d"].pools) == {"r1/n"}
    one = dict(SPEC, disaggregated={"m": PD_OPTIONS["m"]})  # one model: nothing to mix
    assert [s.key for s in subs_of(parse_spec(one), two_models(), set())] == ["static", "static@pd:p>d"]


def test_the_search_chooses_the_mix_when_it_is_cheapest(searched):
    """Each model needs 4 prefill + 2 decode split (test_disagg_search.py's hand count) or 6 aggregated instances:
    m split + n aggregated = 6 x $0.50 + 6 x $1 = $9/h; all aggregated $12/h; both split 6 x $0.50 + 6 x $2 =
    $15/h; n split alone $18/h."""
    from planner.decisions.answer import build_answer

    base, spec, state = searched
    answer = build_answer(spec, base, state.subs)
    assert answer["choice"]["key"] == "static@pd[m]:p>d"
    rows = {(r["model"], r["pool"]): (r["gpu"], r["count"]) for r in answer["choice"]["fleet"]}
    assert rows == {("m", "prefill"): ("p", 4), ("m", "decode"): ("d", 2), ("n", ""): ("g", 6)}
    cost = {c["key"]: c["monthly_cost_usd"]["median"] for c in answer["candidates"]}
    for key, per_hour in (("static@pd:p>d", 15.0), ("static@pd[n]:p>d", 18.0), ("static@pd[m]:p>d", 9.0)):
        assert cost[key] / cost["static"] == pytest.approx(per_hour / 12.0, rel=0.03), key
    verdict = answer["serving"]["verdict"]
    assert verdict.startswith("disaggregated serving (4 prefill on p + 2 decode on d + 6 aggregated on g)")


@pytest.mark.django_db
def test_the_mixed_candidates_count_against_the_request_bound(cast):
    from planner.capacity.services import check_search

    # by hand (test_disagg_search.py): 39 probes aggregated, 63 a pair; three pair sub-searches (both, m, n);
    # 1,920 requests a probe (16 req/s x 120 s)
    _, total = check_search(two_models(), SPEC)
    assert total == (39 + 3 * 63) * 1920


def test_the_mixed_pool_option_reaches_the_probes_scenario():
    from planner.capacity.core.probe import fleet_scenario
    from simulations.engine import parse_scenario

    spec = parse_spec({**SPEC, "disaggregated": {"m": {**PD_OPTIONS["m"], "mixed_pool": {"prefill_queue_tokens": 4096}}}})
    sub = next(s for s in subs_of(spec, pd_queue(), set()) if s.pools)
    d = fleet_scenario(pd_queue(), {"r1/m#prefill": 2, "r1/m#decode": 1}, pools=sub.pools)
    assert d["fleet"]["endpoints"][0]["mixed_pool"] == {"prefill_queue_tokens": 4096}
    pre = next(e for e in parse_scenario(d).fleet.endpoints if e.pool == "prefill")
    assert pre.mixed_pool.prefill_queue_tokens == 4096
    plain = next(s for s in subs_of(parse_spec(SPEC), two_models(), set()) if s.pools)
    assert all("mixed_pool" not in p for p in plain.pools.values())  # without it, probe inputs are as before


@pytest.mark.django_db
@pytest.mark.parametrize("value, tail", [(0, "prefill_queue_tokens"), ("8192", "prefill_queue_tokens"),
                                         ({"threshold": 1}, "threshold")])
def test_a_bad_mixed_pool_is_a_400_naming_the_field(cast, value, tail):
    from planner.capacity.models import CapacitySearch

    opt = {**PD_OPTIONS["m"], "mixed_pool": value if isinstance(value, dict) else {"prefill_queue_tokens": value}}
    resp = cast.owner.api.post("/api/capacity-searches/", {"scenario": pd_queue(), "spec": dict(
        SPEC, disaggregated={"m": opt})}, format="json")
    assert resp.status_code == 400, resp.content
    assert resp.json()["error"]["where"] == f"spec.disaggregated.m.mixed_pool.{tail}", resp.json()
    assert not CapacitySearch.objects.exists()


@pytest.mark.django_db
def test_the_page_form_names_a_bad_mixed_pool(cast, client):
    import json

    from planner.capacity.models import CapacitySearch

    client.force_login(cast.owner.user)
    opt = {"m": {**PD_OPTIONS["m"], "mixed_pool": {"prefill_queue_tokens": 0}}}
    resp = client.post("/capacity/new/", {"scenario_json": json.dumps(pd_queue()), "strategies": ["static"],
                                      "disaggregated": json.dumps(opt)})
    assert resp.status_code == 400
    assert "disaggregated.m.mixed_pool.prefill_queue_tokens" in resp.content.decode()
    assert not CapacitySearch.objects.exists()
