"""The decision card on a fleet comparison's page, on the dashboard and as ``answer`` in the comparisons API."""

import pytest

from planner.comparisons.tests.test_comparisons import _create, fake_engine  # noqa: F401 (a fixture)


@pytest.mark.django_db(transaction=True)
def test_the_card_leads_the_page_the_dashboard_and_the_api_with_the_same_choice(cast, fake_engine, client):  # noqa: F811
    pk = _create(cast).json()["id"]
    body = cast.owner.api.get(f"/api/comparisons/{pk}/").json()
    a = body["answer"]
    # lt-i is the cheapest (274.5 instance-hours x $100 over 24 h) and every strategy meets the targets
    assert a["status"] == "answer" and a["choice"]["key"] == "lt-i"
    assert a["choice"]["monthly_cost_usd"]["median"] == pytest.approx(27450.0 * 730 / 24)
    assert a["choice"]["span_cost_usd"]["median"] == pytest.approx(27450.0)
    assert [s["tier"] for s in a["choice"]["slo"]] == ["IW-F", "IW-N", "NIW"]
    assert a["rejected"]["key"] == "lt-ua" and "costs $9,125 a month more" in a["rejected"]["why"]
    client.force_login(cast.teammate.user)
    html = client.get(f"/comparisons/{pk}/").content.decode()
    card = html.index("data-decision-card")
    assert card < html.index("data-strategy-table")
    assert 'data-kpi="answer"' not in html and 'aria-label="Key figures"' not in html  # the old answer card is gone
    for text in ("run lt-i: $834,938 (one draw, no band) a month (extrapolated)", "over the simulated span $27,450",
                 "Cheapest rejected alternative:</strong> lt-ua", "1 workload seed", "P(attainment &ge; 99.0%)"):
        assert text in html, text
    assert "What would change the answer most:" in html and "SLO target (half the misses allowed)" in html
    import io

    from pypdf import PdfReader

    pdf = client.get(f"/comparisons/{pk}/report.pdf").content
    page1 = PdfReader(io.BytesIO(pdf)).pages[0].extract_text()
    assert "Decision: run lt-i: $834,938" in page1 and "What would change the answer most" in page1
    assert "h100 price +20%" in page1 and "What to run: lt-i" in page1
    dash = client.get("/").content.decode()
    assert "data-decision-card" in dash and "run lt-i: $834,938" in dash and f"/comparisons/{pk}/" in dash


@pytest.mark.django_db(transaction=True)
def test_a_strategy_that_failed_is_named_on_the_card_and_not_chosen(cast, fake_engine, client):  # noqa: F811
    pk = _create(cast, strategies=["reactive-unified", "lt-ua"],
                 variants=[{"strategy": "lt-i", "knobs": {"explode": True}, "key": "lt-i-broken"}]).json()["id"]
    a = cast.owner.api.get(f"/api/comparisons/{pk}/").json()["answer"]
    assert a["choice"]["key"] == "lt-ua" and list(a["failed"]) == ["lt-i-broken"]
    assert "exploded" in a["failed"]["lt-i-broken"]["message"]
    client.force_login(cast.owner.user)
    assert "1 simulation did not finish" in client.get(f"/comparisons/{pk}/").content.decode()


@pytest.mark.django_db(transaction=True)
def test_the_page_says_which_deployments_are_checked_against_real_runs(cast, fake_engine, client):  # noqa: F811
    pk = _create(cast).json()["id"]
    client.force_login(cast.owner.user)
    html = client.get(f"/comparisons/{pk}/").content.decode()
    assert 'id="validation-badges"' in html and "not checked against real runs" in html
    assert html.index('id="validation-badges"') < html.index("data-strategy-table")


def test_the_card_names_the_variant_a_planner_picked_not_the_engine_autoscaler_under_it():
    """An industry bundle runs the engine's 'hpa' autoscaler; the card must say which configuration to run."""
    from planner.comparisons.core.decision import _candidate

    row = {"key": "industry.hpa-running", "strategy": "hpa", "meets": True, "misses": [], "is_baseline": False,
           "saving_words": ""}
    runs = [{"cost_usd": 10.0, "gpu_hours": 2.0, "tiers": {}}]
    assert _candidate(row, runs, [], 1.0, {})["strategy"] == "industry.hpa-running"


@pytest.mark.parametrize("breaks", [True, False])
@pytest.mark.django_db(transaction=True)
def test_the_chosen_strategy_is_replayed_at_more_load_for_the_cards_load_sensitivity(cast, monkeypatch, client,
                                                                                   breaks):
    """Once every strategy has run, the chosen one (lt-i) runs again on each seed's workload at 1.2x the requests
    as a child run; its attainment there is the card's load entry in the API answer, on the page and on page 1 of
    the PDF. The fake engine misses IW-F at the higher load (97 %) or not, by the requests it is handed."""
    from planner.comparisons import services as comparison_services
    from planner.comparisons.kinds import fleet as fleet_kind
    from planner.comparisons.models import Comparison, VariantResult
    from planner.comparisons.tests.test_comparisons import FAKE, TINY, fake_summary

    seen = {}

    def run(scenario, variant, *, progress, base_dir):
        total = scenario["workload"]["synthetic"]["total_requests"]
        seen[variant["key"]] = (total, variant.get("seed"))
        att_f = 0.97 if breaks and total > TINY["workload"]["synthetic"]["total_requests"] else 0.995
        return fake_summary(variant["key"], variant["strategy"], inst_h=FAKE[variant["strategy"]], att_f=att_f)

    monkeypatch.setattr(fleet_kind, "_run", run)
    monkeypatch.setattr(comparison_services, "validate_variants", lambda scenario, variants: None)
    resp = cast.owner.api.post("/api/comparisons/", {"scenario": TINY, "strategies": ["reactive-unified", "lt-i", "lt-ua"],
                                                     "seeds": [1, 2]}, format="json")
    assert resp.status_code == 201, resp.content
    comp = Comparison.objects.get(pk=resp.json()["id"])
    # every run at the scenario's 1,500 requests; the chosen strategy's two seeds again at 1,800, same seeds
    assert seen["lt-i+s1@load1.2"] == (1800, 1) and seen["lt-i+s2@load1.2"] == (1800, 2)
    assert sorted(k for k, (n, _) in seen.items() if n != 1500) == ["lt-i+s1@load1.2", "lt-i+s2@load1.2"]
    comp.refresh_from_db()
    assert comp.job.status == "succeeded" and comp.results.count() == 6  # the replays are not strategy runs
    assert len(comp.summary["rows"]) == 6 and "lt-i+s1@load1.2" not in {r["key"] for r in comp.summary["rows"]}
    check = comp.summary["load_check"]
    assert check["strategy"] == "lt-i" and check["factor"] == 1.2 and len(check["rows"]) == 2
    assert [r["tiers"]["IW-F"]["attainment"] for r in check["rows"]] == ([0.97, 0.97] if breaks else [0.995, 0.995])
    a = cast.owner.api.get(f"/api/comparisons/{comp.pk}/").json()["answer"]
    assert a["choice"]["key"] == "lt-i"
    load = next(s for s in a["sensitivity"] if s["input"] == "load x1.2")
    assert load["replayed"] and load["changes_answer"] is breaks and load["magnitude"] == (1.0 if breaks else 0.0)
    words = ("lt-i meets every target on 0 of 2 seeds at 1.2x the load (IW-F 97.00 % < 99 %)" if breaks
             else "lt-i meets every target on 2 of 2 seeds at 1.2x the load")
    assert load["effect"] == words
    if breaks:
        assert a["most_sensitive"] == "load x1.2"
    client.force_login(cast.teammate.user)
    assert words in client.get(f"/comparisons/{comp.pk}/").content.decode().replace("&lt;", "<")
    import io

    from pypdf import PdfReader

    page1 = PdfReader(io.BytesIO(client.get(f"/comparisons/{comp.pk}/report.pdf").content)).pages[0].extract_text()
    assert "at 1.2x the load" in page1.replace("\n", " ")
    assert VariantResult.all_runs.filter(comparison=comp, role="load").count() == 2


@pytest.mark.django_db(transaction=True)
def test_a_load_check_that_cannot_start_never_strands_the_comparison(cast, fake_engine, monkeypatch):  # noqa: F811
    """If picking the answer for the load replays breaks, the comparison still aggregates and ends; the card says
    the load was not replayed."""
    from planner.comparisons import load_check
    from planner.comparisons.models import Comparison, VariantResult

    def broken(comp):
        raise RuntimeError("no answer today")

    monkeypatch.setattr(load_check, "chosen_runs", broken)
    comp = Comparison.objects.get(pk=_create(cast).json()["id"])
    comp.refresh_from_db()
    assert comp.job.status == "succeeded" and "load_check" not in comp.summary
    assert not VariantResult.all_runs.filter(comparison=comp, role="load").exists()
    a = cast.owner.api.get(f"/api/comparisons/{comp.pk}/").json()["answer"]
    load = next(s for s in a["sensitivity"] if s["input"] == "load x1.2")
    assert not load["replayed"] and "not replayed" in load["effect"]
