"""Every family in a real browser, on PostgreSQL, Redis and a celery worker.

SageServe against the reactive baseline, PreServe bundles, Chiron bundles and the industry autoscalers from the
comparisons page's form (a fixture or pasted JSON); SLINFER against ServerlessLLM and operator-level against
model-level scaling from the comparison builder's forms. Each runs on the worker; its result page must lead with
the decision card and one compact table, draw no empty chart, put units on every axis, keep every tick label (rotated
ones too) inside its chart and clear of the legend, and not scroll sideways at 1024 px. Every page is photographed
at 1440 px and 1024 px into TEST_ARTIFACTS (look at them).
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
    ("industry", "fleet", TINY, "", [], ["industry.hpa-running", "industry.knative-kpa"], "industry.hpa-running"),
    ("slinfer", "serverless", "", "", [], [], ""),
    ("operator-level", "operator-level", "", "", [], [], ""),
]
# every chart: some data, and a title on each cartesian axis; [] when every chart is fine
CHART_PROBLEMS = r"""Array.from(document.querySelectorAll('.js-plotly-plot')).flatMap((p) => {
  const name = p.id || (p.closest('[id]') || {}).id || '?';
  const problems = [];
  if (!(p.data || []).some((t) => ((t.y || t.x || t.values || []).filter((v) => v !== null)).length)) {
    problems.push(name + ': no data');
  }
  for (const [key, axis] of Object.entries(p.layout || {})) {
    if (/^[xy]axis\d*$/.test(key) && axis.visible !== false && !(axis.title && axis.title.text)) {
      const shared = key.startsWith('x') && Object.keys(p.layout).some((k) => /^xaxis\d*$/.test(k) && k !== key
        && p.layout[k].title && p.layout[k].title.text);  // subplots on one time axis: one title at the bottom
      if (!shared) problems.push(name + ': ' + key + ' has no title');
    }
  }
  // tick labels and axis titles (rotated ones included) inside the chart and clear of the legend
  const box = (p.querySelector('.main-svg') || p).getBoundingClientRect();
  const legend = p.querySelector('.legend');
  const lb = legend ? legend.getBoundingClientRect() : null;
  p.querySelectorAll('.xtick text, .ytick text, .g-xtitle text, .g-ytitle text').forEach((t) => {
    const r = t.getBoundingClientRect();
    if (!r.width) return;
    if (r.left < box.left - 1 || r.right > box.right + 1 || r.top < box.top - 1 || r.bottom > box.bottom + 1) {
      problems.push(name + ': "' + t.textContent + '" is cut off at the chart edge');
    } else if (lb && lb.width && r.left < lb.right && r.right > lb.left && r.top < lb.bottom && r.bottom > lb.top) {
      problems.push(name + ': "' + t.textContent + '" lies under the legend');
    }
  });
  return problems;
})"""


def _builder(page, live_server, kind: str, name: str, trace_pk: int | None) -> None:
    """The comparison builder's serverless or operator-level form, filled as a planner would."""
    page.goto(f"{live_server.url}/comparisons/build/?kind={kind}")
    page.check(f"input[name=kind][value='{kind}']")
    if kind == "serverless":
        page.select_option("select[name=sl-model]", "llama2-7b")
        page.fill("input[name=sl-workload__duration_s]", "120")
        page.fill("input[name=sl-nodes__cpu]", "4")
        page.fill("input[name=sl-nodes__gpu]", "4")
        page.fill("input[name=sl-name]", name)
    else:
        page.select_option("select[name=op-trace]", str(trace_pk))
        page.select_option("select[name=op-model]", "llama3.1-8b")
        page.select_option("select[name=op-gpu]", "a100-80gb")
        page.fill("input[name=op-window_s]", "300")
        page.fill("input[name=op-name]", name)


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
def test_every_family_runs_from_the_forms_and_its_page_leads_with_the_decision(cast, live_server,
                                                                                 celery_worker_process, tmp_path):
    from planner.traces.services import import_trace_file

    trace = import_trace_file(ROOT / "fixtures/traces/azure_code_2023.csv", team=cast.owner.team,
                              user=cast.owner.user, name="code trace", region="eastus", model="llama2-70b",
                              tier="IW-F")
    artifacts = artifacts_dir(tmp_path)
    seen = {}
    with logged_in_page(live_server, "owner", "owner-pass-123") as page:
        page.set_viewport_size({"width": 1440, "height": 900})
        page.goto(f"{live_server.url}/comparisons/")
        page.screenshot(path=str(artifacts / "family-form-1440.png"), full_page=True)
        for family, kind, scenario, fixture, strategies, bundles, baseline in FAMILIES:
            page.set_viewport_size({"width": 1440, "height": 900})
            if kind == "fleet":
                page.goto(f"{live_server.url}/comparisons/")
                _fill_form(page, kind, scenario, fixture, strategies, bundles, baseline, f"family {family}")
                page.click("[data-run-comparison]")
            else:
                _builder(page, live_server, kind, f"family {family}", trace.pk)
                _photograph(page, artifacts, f"builder-{family}")
                page.set_viewport_size({"width": 1440, "height": 900})
                page.click("[data-builder-run]")
            page.wait_for_url("**/comparisons/*/", timeout=30_000)
            page.wait_for_selector("[data-decision-card] [data-headline]", timeout=600_000)
            headline = page.locator("[data-decision-card] [data-headline]").inner_text().strip()
            top = page.evaluate("document.querySelector('[data-decision-card]').getBoundingClientRect().top")
            order = page.evaluate("(() => { const c = document.querySelector('[data-decision-card]');"
                                  " const t = document.querySelector('[data-strategy-table]');"
                                  " return !!t && !!(c.compareDocumentPosition(t) & Node.DOCUMENT_POSITION_FOLLOWING);"
                                  " })()")
            overflow = _photograph(page, artifacts, family)
            seen[family] = (headline, top, order, overflow, page.evaluate(CHART_PROBLEMS))
        page.set_viewport_size({"width": 1440, "height": 900})
        page.goto(f"{live_server.url}/")
        page.screenshot(path=str(artifacts / "family-dashboard-1440.png"), full_page=True)
        headline = page.locator("[data-dashboard-headline]").inner_text()
    comps = {c.name: c for c in Comparison.objects.all()}
    for family, (answer, top, order, overflow, charts) in seen.items():
        comp = comps[f"family {family}"]
        assert comp.status == "succeeded", (family, [(r.key, r.status, r.error) for r in comp.results.all()])
        assert answer, family
        assert top < 900, f"{family}: the decision card is not on the first screen ({top:.0f} px down)"
        assert order, f"{family}: the compact table does not follow the decision card"
        assert overflow <= 1, f"{family}: the page scrolls sideways at 1024 px by {overflow} px"
        assert not charts, f"{family}: {charts}"
    kinds = {comps[f"family {f}"].scenario.get("kind", "fleet") for f in seen}
    assert kinds == {"fleet", "serverless", "operator-level"}
    assert comps["family slinfer"].scenario["model"] == "llama2-7b"  # the catalogue's names, end to end
    assert comps["family operator-level"].scenario["gpu"] == "a100-80gb"
    assert json.loads(json.dumps(headline)) and "SLO targets" in headline
