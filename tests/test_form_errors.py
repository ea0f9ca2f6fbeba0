"""Forms say what is wrong at the top as well as on the field: the plan builder, the comparison builder and the
forecast form, posted empty or with a bad value."""

from __future__ import annotations

import re
from html.parser import HTMLParser

import pytest
from django.test import Client


@pytest.fixture
def page(cast):
    client = Client()
    client.force_login(cast.owner.user)
    return client


class _Fields(HTMLParser):
    """The fields a browser would post from the form with ``form_id``: inputs (checked boxes only), selected
    options (else the first), textareas."""

    def __init__(self, form_id: str):
        super().__init__()
        self.form_id, self.inside, self.data, self.select, self.first = form_id, False, {}, None, None

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "form":
            self.inside = a.get("id") == self.form_id
        if not self.inside:
            return
        name = a.get("name")
        if tag == "input" and name and a.get("type") not in ("submit", "button"):
            if a.get("type") in ("checkbox", "radio") and "checked" not in a:
                return
            self.data.setdefault(name, []).append(a.get("value", "on" if a.get("type") == "checkbox" else ""))
        elif tag == "select" and name:
            self.select, self.first = name, None
        elif tag == "option" and self.select:
            if self.first is None:
                self.first = a.get("value", "")
            if "selected" in a:
                self.data[self.select] = [a.get("value", "")]
        elif tag == "textarea" and name:
            self.data.setdefault(name, [""])

    def handle_endtag(self, tag):
        if tag == "select" and self.select:
            self.data.setdefault(self.select, [self.first or ""])
            self.select = None
        if tag == "form":
            self.inside = False


def browser_post(page, url: str, form_id: str, **changes):
    """Post the form as the browser shows it (every default as it is), with ``changes``."""
    parser = _Fields(form_id)
    parser.feed(page.get(url).content.decode())
    data = {**parser.data, **{k: v if isinstance(v, list) else [v] for k, v in changes.items()}}
    return page.post(url, data)


def _summary(html: str) -> str:
    m = re.search(r"data-form-errors>(.*?)</div>", html, re.S)
    assert m, "no error summary at the top of the form"
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", m.group(1)))


@pytest.mark.django_db
def test_an_empty_plan_form_names_every_missing_field_at_the_top_and_on_the_field(page):
    resp = page.post("/plans/build/", {"action": "run"})
    html = resp.content.decode()
    assert resp.status_code == 400
    summary = _summary(html)
    assert "Demand from: This field is required." in summary, summary
    assert html.index("data-form-errors") < html.index("data-demand-source")
    assert "data-field-error" in html[html.index("data-demand-source"):]
    # the page as it opens, solved without typing anything: the plan parser's complaint is named at the top too
    blank = browser_post(page, "/plans/build/", "plan-builder", action="run", demand_source="typed")
    assert blank.status_code == 400
    summary = _summary(blank.content.decode())
    assert "Demand from: type at least one demand row" in summary and "validation" not in summary, summary


@pytest.mark.django_db
def test_the_comparison_builder_lists_its_errors_at_the_top(page):
    resp = page.post("/comparisons/build/", {"action": "run"})
    summary = _summary(resp.content.decode())
    assert resp.status_code == 400 and "choose at least one strategy or bundle" in summary


@pytest.mark.django_db
def test_the_forecast_form_lists_its_errors_at_the_top(page):
    resp = page.post("/forecasts/", {"trace": "", "metrics": []})
    summary = _summary(resp.content.decode())
    assert resp.status_code == 400 and "Trace" in summary and "Metrics" in summary
