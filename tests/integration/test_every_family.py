"""Every family through the one comparison form, in a real browser, on PostgreSQL, Redis and a celery worker.

SageServe against the reactive baseline, PreServe bundles, Chiron bundles, SLINFER against ServerlessLLM and
operator-level against model-level scaling: each is started from the comparisons page, run on the worker, and
its result page is read (the answer card on top) and photographed at 1440 px and 1024 px, where it must not scroll
sideways. Screenshots go to TEST_ARTIFACTS (look at them).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from planner.comparisons.models import Comparison
from tests.integration.conftest import artifacts_dir, logged_in_page

ROOT = Path(__file__).resolve().parents[2]
TINY = (ROOT / "planner/comparisons/tests/tiny_scenario.json").read_text()

pytestmark = [pytest.mark.django_db(transaction=True)]

# (family, the form's kind, pasted scenario or fixture, strategies, bundles, baseline)
FAMILIES = [
    ("sageserve", "fleet", TINY, "", ["reactive-unified", "lt-ua"], [], "reactive-unified"),
    ("preserve", "fleet", TINY, "", [], ["preserve.static-4", "preserve.reactive"], "preserve.static-4"),
    ("chiron", "fleet", "", "chiron_fig19_small", [], ["chiron.llumnix", "chiron.default"], "chiron.llumnix"),
    ("slinfer", "serverless", "", "", [], [], ""),
    ("operator-level", "operator-level", "", "", [], [], ""),
]


def _fill_form(page, kind, scenario, fixture, strategies, bundles, baseline, name):
    page.evaluate("document.getElementById('new-comparison').open = true")
    page.check(f"input[name=kind][value='{kind}']")
    page.fill("input[name=name]", name)
    if kind != "fleet":
        return
    checked = page.locator("input[name=strategies]:checked")
    while checked.count():
        checked.first.uncheck()
    for value in strategies:
        page.check(f"input[name=strategies][value='{value}']")
    for value in bundles:
        page.check(f"input[name=bundles][value='{value}']")
    page.select_option("select[name=fixture]", fixture)
    page.evaluate("(text) => { const t = document.querySelector('textarea[name=scenario_json]');"
                  " t.closest('details').open = true; t.value = text; }", scenario)
    page.fill("input[name=baseline]", baseline)


def _photograph(page, artifacts: Path, name: str) -> int:
    """Full-page screenshots at 1440 and 1024 px; how far the page scrolls sideways at 1024 px."""
    overflow = 0
    for width in (1440, 1024):
        page.set_viewport_size({"width": width, "height": 900})
        page.evaluate("document.querySelectorAll('.js-plotly-plot').forEach(p => Plotly.Plots.resize(p))")
        page.wait_for_timeout(1500)
        page.screenshot(path=str(artifacts / f"family-{name}-{width}.png"), full_page=True)
        overflow = page.evaluate("document.documentElement.scrollWidth - window.innerWidth")
    return overflow


@pytest.mark.browser
def test_every_family_runs_from_the_one_form_and_its_page_leads_with_the_answer(cast, live_server,
                                                                                  celery_worker_process, tmp_path):
    from planner.traces.services import import_trace_file

    import_trace_file(ROOT / "fixtures/traces/azure_code_2023.csv", team=cast.owner.team, user=cast.owner.user,
                      name="code trace", region="eastus", model="llama2-70b", tier="IW-F")
    artifacts = artifacts_dir(tmp_path)
    seen = {}
    with logged_in_page(live_server, "owner", "owner-pass-123") as page:
        page.set_viewport_size({"width": 1440, "height": 900})
        page.goto(f"{live_server.url}/comparisons/")
        page.screenshot(path=str(artifacts / "family-form-1440.png"), full_page=True)
        for family, kind, scenario, fixture, strategies, bundles, baseline in FAMILIES:
            page.set_viewport_size({"width": 1440, "height": 900})
            page.goto(f"{live_server.url}/comparisons/")
            _fill_form(page, kind, scenario, fixture, strategies, bundles, baseline, f"family {family}")
            page.click("[data-run-comparison]")
            page.wait_for_url("**/comparisons/*/", timeout=30_000)
            # a fleet comparison opens with the decision card, the other kinds with their answer box
            lead = "[data-decision-card], [data-kpi=answer]"
            page.wait_for_selector(lead, timeout=600_000)
            first = page.locator(lead).first
            answer = first.locator("h2, .kpi-value").first.inner_text().strip()
            top = page.evaluate(f"document.querySelector('{lead}').getBoundingClientRect().top")
            seen[family] = (answer, top, _photograph(page, artifacts, family))
        page.set_viewport_size({"width": 1440, "height": 900})
        page.goto(f"{live_server.url}/")
        page.screenshot(path=str(artifacts / "family-dashboard-1440.png"), full_page=True)
        headline = page.locator("[data-dashboard-headline]").inner_text()
    comps = {c.name: c for c in Comparison.objects.all()}
    for family, (answer, top, overflow) in seen.items():
        comp = comps[f"family {family}"]
        assert comp.status == "succeeded", (family, [(r.key, r.status, r.error) for r in comp.results.all()])
        assert answer, family
        assert top < 900, f"{family}: the answer card is not on the first screen ({top:.0f} px down)"
        assert overflow <= 1, f"{family}: the page scrolls sideways at 1024 px by {overflow} px"
    kinds = {comps[f"family {f}"].scenario.get("kind", "fleet") for f in seen}
    assert kinds == {"fleet", "serverless", "operator-level"}
    assert json.loads(json.dumps(headline)) and "SLO targets" in headline
