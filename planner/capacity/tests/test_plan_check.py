"""A plan's "check by simulation": its hourly fleet replayed on draws of the hourly demand from the forecast's
intervals (and spot preemptions), the hours at risk marked; links from the plan to the check and back."""

from __future__ import annotations

import pytest

from planner.capacity.models import CapacitySearch

PLAN = {"name": "small", "hours": 2, "regions": ["us-west"],
        "gpus": {"a100": {"on_demand": 4.1}},
        "deployments": [{"model": "llama3.2-3b", "gpu": "a100", "theta_tps": 7000, "startup_s": 0}],
        "demand": [{"model": "llama3.2-3b", "region": "us-west", "tps": [4000, 6000],
                    "quantiles": {"0.5": [4000, 6000], "0.9": [4400, 9000]}}]}


@pytest.mark.django_db(transaction=True)
def test_a_plan_is_checked_by_simulation_and_the_two_pages_link_each_other(cast, client):
    resp = cast.owner.api.post("/api/plans/", {"scenario": PLAN}, format="json")
    assert resp.status_code == 201, resp.content
    plan_id = resp.json()["id"]
    client.force_login(cast.owner.user)
    resp = client.post(f"/plans/{plan_id}/check/")
    assert resp.status_code == 302, resp.content[:300]
    search = CapacitySearch.objects.get(plan_id=plan_id)
    assert search.spec["mode"] == "check" and search.job.status == "succeeded", search.job.last_error
    assert "plan_draws" in search.scenario and search.scenario["plan_draws"]["counts"]
    answer = search.answer
    assert answer["status"] in ("answer", "no_fleet")
    cand = answer["candidates"][0]
    assert cand["draws"] == 20 and cand["fleet"][0]["count"] >= 1
    # hour by hour: both hours judged over the 20 draws; hour 1 (6,000 TPS, wide interval) is no safer than hour 0
    hours = answer["hours"]
    assert [h["hour"] for h in hours] == [0, 1] and all(18 <= h["draws"] <= 20 for h in hours)  # a draw may be ~0
    assert hours[1]["p_miss"] >= hours[0]["p_miss"]
    assert answer["hours_at_risk"] == [h["hour"] for h in hours if h["p_miss"] > 1 - search.spec["probability"]]
    assert "forecast draws" in answer["headline"] or "forecast draws" in answer["draws_label"]
    page = client.get(resp["Location"]).content.decode()
    assert f'href="/plans/{plan_id}/"' in page and "data-decision-card" in page and "data-plan-hours" in page
    assert "hour by hour on 20 draws" in page and "P(IW-F" in page and "P(IW-N" not in page  # IW-F requests only
    plan_page = client.get(f"/plans/{plan_id}/").content.decode()
    assert f'href="/capacity/{search.pk}/"' in plan_page and "data-decision-card" in plan_page
    assert cast.outsider.api.get(f"/api/capacity-searches/{search.pk}/").status_code == 404
