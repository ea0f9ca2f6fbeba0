"""The workspace as a new planner meets it, in headless Chromium at 1440 and 1024 px: the top bar stays on one line
on every page (the secondary pages under "More"), no table sticks out of its card and no page scrolls sideways (a
characterised trace's page included), the forecast form's horizon and backtest follow the chosen trace, a pasted
empty plan lists every problem at the top of its form. Every page is photographed into TEST_ARTIFACTS (look at
them)."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from tests.integration.conftest import artifacts_dir, logged_in_page

ROOT = Path(__file__).resolve().parents[2]

pytestmark = [pytest.mark.django_db(transaction=True)]

PAGES = ["/", "/traces/", "/hardware/", "/forecasts/", "/plans/", "/simulations/", "/comparisons/",
         "/comparisons/build/", "/capacity/", "/jobs/", "/operator-plans/", "/backtests/", "/docs/"]
# the top bar's items and how many distinct lines they sit on
BAR_LINES = r"""(() => {
  const bar = document.querySelector('header.topbar');
  const items = bar.querySelectorAll('.brand, nav > a, nav > details > summary, .logout');
  return new Set(Array.from(items).map((e) => Math.round(e.getBoundingClientRect().top / 8))).size;
})()"""
# tables wider than their card (outside a scrolling box): what the card cuts off or spills
STICKING_OUT = r"""Array.from(document.querySelectorAll('.card table')).filter((t) => !t.closest('.table-scroll'))
  .filter((t) => t.getBoundingClientRect().right > t.closest('.card').getBoundingClientRect().right + 1)
  .map((t) => (t.closest('[id]') || {}).id || t.className || 'a table')"""


@pytest.mark.browser
def test_the_top_bar_is_one_line_and_the_forms_guide_a_new_planner(cast, live_server, celery_worker_process,
                                                                   tmp_path):
    from planner.traces.models import Trace
    from planner.traces.services import import_trace_file

    team = cast.owner.team
    day = Trace.objects.create(team=team, name="a day", format="native", storage_key="walk-day",
                               fingerprint="walk-day", span_s=86400)
    hour = Trace.objects.create(team=team, name="an hour", format="native", storage_key="walk-hour",
                                fingerprint="walk-hour", span_s=3600)
    code = import_trace_file(ROOT / "fixtures/traces/azure_code_2023.csv", team=team, user=cast.owner.user,
                             name="code trace", region="eastus", model="llama2-70b", tier="IW-F")
    deadline = time.monotonic() + 180
    while code.characterisation is None and time.monotonic() < deadline:  # normalised, then characterised
        time.sleep(0.5)
        code.refresh_from_db()
    assert code.characterisation, (code.status, code.job.status if code.job else None)
    artifacts = artifacts_dir(tmp_path)
    wrapped, sticking = [], []
    with logged_in_page(live_server, "owner", "owner-pass-123") as page:
        for width in (1440, 1024):
            page.set_viewport_size({"width": width, "height": 900})
            for url in [*PAGES, f"/traces/{code.pk}/"]:
                page.goto(f"{live_server.url}{url}")
                lines = page.evaluate(BAR_LINES)
                if lines != 1:
                    wrapped.append(f"{url} at {width} px: {lines} lines")
                sticking += [f"{url} at {width} px: {t}" for t in page.evaluate(STICKING_OUT)]
                sideways = page.evaluate("document.documentElement.scrollWidth - window.innerWidth")
                if sideways > 1:
                    sticking.append(f"{url} at {width} px: the page scrolls sideways by {sideways} px")
                name = url.strip("/").replace("/", "-") or "dashboard"
                page.screenshot(path=str(artifacts / f"walk-{name}-{width}.png"), full_page=True)
        assert not wrapped, wrapped
        assert not sticking, sticking
        # the secondary pages are one click away
        page.set_viewport_size({"width": 1440, "height": 900})
        page.goto(f"{live_server.url}/")
        page.click("[data-nav-more] summary")
        page.screenshot(path=str(artifacts / "walk-more-menu-1440.png"))
        page.click("[data-nav-more] a:has-text('Operator plans')")
        page.wait_for_url("**/operator-plans/")
        # the forecast form: picking the 1-hour trace puts in a backtest the trace can hold
        page.goto(f"{live_server.url}/forecasts/")
        page.select_option("#id_trace", str(day.pk))
        first = page.input_value("#id_backtest")
        page.select_option("#id_trace", str(hour.pk))
        backtest, horizon = page.input_value("#id_backtest"), page.input_value("#id_horizon")
        page.screenshot(path=str(artifacts / "walk-forecast-form-1440.png"), full_page=True)
        # a pasted empty plan: every missing section named at the top of the form
        page.goto(f"{live_server.url}/plans/")
        page.fill("#scenario-text", "{}")
        page.click("#new-plan button[type=submit]")
        page.wait_for_selector("[data-form-errors]")
        summary = page.locator("[data-form-errors]").inner_text()
        page.screenshot(path=str(artifacts / "walk-plan-errors-1440.png"), full_page=True)
    assert first == "12h" and (backtest, horizon) == ("30min", "15min"), (first, backtest, horizon)
    assert "regions: is required" in summary and "deployments: is required" in summary, summary
