"""The search's page (form -> card), the CLI and the card partial."""

from __future__ import annotations

import io
import json

import pytest
from django.core.management import call_command
from django.template.loader import render_to_string

from planner.capacity.models import CapacitySearch
from planner.capacity.tests.scenarios import two_region_queue

FORM = {"name": "queue", "fixture": "", "strategies": ["static"], "target_IW-F": "0.9", "target_IW-N": "",
        "target_NIW": "", "probability": "0.66", "seeds": "1,2,3", "band_draws": "3", "quota_gpus": "",
        "gpu_options": ""}


@pytest.fixture
def page(cast, client):
    client.force_login(cast.owner.user)
    return client


@pytest.mark.django_db(transaction=True)
def test_the_form_starts_a_search_and_its_page_opens_with_the_decision_card(page):
    resp = page.post("/capacity/new/", dict(FORM, scenario_json=json.dumps(two_region_queue())))
    assert resp.status_code == 302, resp.content[:500]
    search = CapacitySearch.objects.get()
    html = page.get(resp["Location"]).content.decode()
    assert "data-decision-card" in html and 'data-status="answer"' in html
    assert "run static" in html and "Cheapest rejected" not in html  # one candidate: nothing rejected
    assert "extrapolated" in html and "P(attainment" in html
    assert page.get("/capacity/").status_code == 200
    assert search.answer["choice"]["fleet"][0]["count"] == 12


@pytest.mark.django_db
def test_a_bad_form_keeps_the_answers_and_says_what_is_wrong(page):
    resp = page.post("/capacity/new/", dict(FORM, scenario_json=json.dumps(two_region_queue()), probability="lots"))
    assert resp.status_code == 400
    html = resp.content.decode()
    assert "probability: &#x27;lots&#x27; is not a number" in html and "two-region queue" in html
    assert not CapacitySearch.objects.exists()


@pytest.mark.django_db(transaction=True)
def test_the_cli_prints_the_decision(cast, tmp_path):
    path = tmp_path / "queue.json"
    path.write_text(json.dumps(two_region_queue(ceiling=6)))
    out = io.StringIO()
    call_command("capacity_search", str(path), "--strategies", "static", "--targets", '{"IW-F": 0.9}',
                 "--probability", "0.66", "--band-draws", "2", "--team", "Fleet A", "--json", stdout=out)
    data = json.loads(out.getvalue())
    assert data["status"] == "succeeded" and data["answer"]["status"] == "no_fleet"
    assert "no fleet within the ceilings meets the SLO" in data["answer"]["headline"]


def test_the_card_says_an_honest_no_fleet_outcome():
    answer = {"status": "no_fleet", "headline": "no fleet within the quotas meets the SLO; the best (static) reaches "
                                                "97.20% [96.80%, 97.50%] of IW-F requests within target",
              "best": {"key": "static", "monthly_cost_usd": {"median": 1000.0, "p5": 900.0, "p95": 1100.0},
                       "why": "r1/m miss the SLO even at the ceiling"}, "failed": {}}
    html = render_to_string("decisions/_card.html", {"answer": answer})
    assert 'data-status="no_fleet"' in html and "97.20% [96.80%, 97.50%]" in html
    assert "$1,000 [$900, $1,100]" in html
