"""The capacity search in a real browser, on PostgreSQL, Redis and a real celery worker: fill the form, wait for the
workers, read the decision card. Screenshots go to TEST_ARTIFACTS."""

from __future__ import annotations

import json
import time

import pytest

from planner.capacity.models import CapacitySearch
from planner.capacity.tests.scenarios import two_region_queue
from tests.integration.conftest import artifacts_dir, logged_in_page

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]


def _fill_search(page, name: str, scenario: dict, strategies: list[str], band_draws: int) -> None:
    """The capacity form with a pasted scenario, these strategies only, IW-F at 90 % with probability 0.66."""
    page.fill("input[name=name]", name)
    page.select_option("select[name=fixture]", "")
    page.click("#new-search details summary")
    page.fill("textarea[name=scenario_json]", json.dumps(scenario))
    for box in page.query_selector_all("input[name=strategies]:checked"):
        box.uncheck()
    for strategy in strategies:
        page.check(f"input[name=strategies][value={strategy}]")
    page.fill("input[name=target_IW-F]", "0.9")
    page.fill("input[name=target_IW-N]", "")
    page.fill("input[name=target_NIW]", "")
    page.fill("input[name=probability]", "0.66")
    page.fill("input[name=band_draws]", str(band_draws))


def _wait_for_card(page, minutes: int = 10) -> None:
    """Reload the page until the workers' answer, the decision card, is on it."""
    deadline = time.monotonic() + 60 * minutes
    while not page.query_selector("[data-decision-card]"):
        assert time.monotonic() < deadline, f"no decision card after {minutes} minutes"
        time.sleep(3)
        page.reload()


@pytest.mark.browser
def test_a_planner_searches_capacity_in_the_form_and_reads_the_decision_card(cast, live_server, celery_worker_process,
                                                                               tmp_path):
    artifacts = artifacts_dir(tmp_path)
    with logged_in_page(live_server, "owner", "owner-pass-123") as page:
        page.goto(f"{live_server.url}/capacity/")
        _fill_search(page, "two-region queue", two_region_queue(), ["static", "reactive-unified"], band_draws=4)
        page.screenshot(path=str(artifacts / "capacity-form.png"))
        page.click("#new-search button[type=submit]")
        pk = int(page.url.rstrip("/").rsplit("/", 1)[1])  # the search's page (no ORM inside Playwright's loop)
        _wait_for_card(page)
        page.screenshot(path=str(artifacts / "capacity-card.png"), full_page=True)
        card = page.inner_text("[data-decision-card]")
        assert "a month" in card and "extrapolated" in card and "IW-F" in card
        assert page.query_selector_all("[data-decision-fleet] tr")[1:]  # what to run, one row per endpoint
        assert "Cheapest rejected alternative" in card  # two strategies: one is the alternative
        assert page.request.get(f"{live_server.url}/capacity/{pk}/report.pdf").body()[:5] == b"%PDF-"
    search = CapacitySearch.objects.get(pk=pk)
    assert search.name == "two-region queue" and search.job.status == "succeeded"


@pytest.mark.browser
def test_a_planner_checks_a_plan_hour_by_hour_and_reads_the_hours_at_risk(cast, live_server, celery_worker_process,
                                                                          tmp_path):
    from planner.capacity.tests.test_plan_check import PLAN
    from planner.plans.models import CapacityPlan

    resp = cast.owner.api.post("/api/plans/", {"scenario": PLAN}, format="json")
    assert resp.status_code == 201, resp.content
    plan_id = resp.json()["id"]
    deadline = time.monotonic() + 300
    while not (CapacityPlan.objects.get(pk=plan_id).result or {}).get("instances"):
        assert time.monotonic() < deadline, "the plan was not solved in 5 minutes"
        time.sleep(2)
    artifacts = artifacts_dir(tmp_path)
    with logged_in_page(live_server, "owner", "owner-pass-123") as page:
        page.goto(f"{live_server.url}/plans/{plan_id}/")
        page.click("[data-plan-checks] button[type=submit]")
        _wait_for_card(page)
        page.screenshot(path=str(artifacts / "plan-check-card.png"), full_page=True)
        card = page.inner_text("[data-decision-card]")
        assert "forecast draws" in card and "Hour by hour" in card
        assert len(page.query_selector_all("[data-plan-hours] td[data-hour]")) == 2
        page.click(f"[data-plan-link] a[href='/plans/{plan_id}/']")  # the check links back to the plan
        page.wait_for_selector("[data-plan-checks]")
        page.screenshot(path=str(artifacts / "plan-with-check.png"), full_page=True)
        assert page.query_selector("[data-decision-card] [data-plan-hours]")


@pytest.mark.browser
def test_a_planner_compares_aggregated_and_disaggregated_serving_in_the_form(cast, live_server, celery_worker_process,
                                                                            tmp_path):
    from planner.capacity.tests.scenarios import PD_OPTIONS, pd_queue

    artifacts = artifacts_dir(tmp_path)
    with logged_in_page(live_server, "owner", "owner-pass-123") as page:
        page.goto(f"{live_server.url}/capacity/")
        _fill_search(page, "prefill-heavy queue, P/D or not", pd_queue(), ["static"], band_draws=3)
        page.fill("input[name=disaggregated]", json.dumps(PD_OPTIONS))
        page.screenshot(path=str(artifacts / "capacity-disagg-form.png"), full_page=True)
        page.click("#new-search button[type=submit]")
        pk = int(page.url.rstrip("/").rsplit("/", 1)[1])
        _wait_for_card(page)
        page.screenshot(path=str(artifacts / "capacity-disagg-card.png"), full_page=True)
        card = page.inner_text("[data-decision-card]")
        assert "Aggregated or disaggregated" in card and "disaggregated serving (4 prefill on p + 2 decode on d)" in card
        rows = page.inner_text("[data-serving-table]")
        assert "aggregated" in rows and "static@pd:p>d" in rows
        pools = [c.inner_text() for c in page.query_selector_all("[data-decision-fleet] td[data-pool]")]
        assert sorted(pools) == ["decode", "prefill"]
    search = CapacitySearch.objects.get(pk=pk)
    assert search.job.status == "succeeded" and search.answer["serving"]["runs"] == "disaggregated"
    probes = search.probes.values_list("pid", flat=True)
    assert any(p.startswith("static@pd:p>d|") for p in probes)  # the pools' probes ran on the workers
