"""The page and the API read the published board; a missing board or a bad query is a 4xx in the error shape."""

from __future__ import annotations

import json

import pytest

from planner.leaderboard import store
from planner.leaderboard.core import board as board_mod
from planner.leaderboard.core import report
from planner.leaderboard.tests.test_board import _runs


@pytest.fixture
def published(tmp_path, monkeypatch):
    b = board_mod.build({"runs": _runs(), "wall_s": 1.0, "cpu_s": 1.5, "workers": 1},
                        static_defaults={"azure-code": 3}, meta={"date": "today"})
    path = tmp_path / "leaderboard.json"
    path.write_text(json.dumps(b))
    monkeypatch.setattr(store, "results_path", lambda: path)
    return b


def test_api_serves_the_board_and_filters_by_trace(cast, published):
    got = cast.owner.api.get("/api/leaderboard/").json()
    assert got["digest"] == published["digest"] and "runs" not in got
    assert [r["strategy"] for r in got["traces"][0]["rows"]] == ["hpa-running", "static", "chiron"]
    got = cast.owner.api.get("/api/leaderboard/?trace=azure-code&runs=true").json()
    assert len(got["runs"]) == len(published["runs"])


@pytest.mark.parametrize("query, where", [("trace=nope", "query string: trace"), ("runs=maybe", "query string: runs")])
def test_api_bad_query_is_a_400_naming_it(cast, published, query, where):
    resp = cast.owner.api.get(f"/api/leaderboard/?{query}")
    assert resp.status_code == 400
    err = resp.json()["error"]
    assert err["where"] == where and err["hint"]


def test_api_without_a_board_is_a_404_saying_how_to_make_one(cast, tmp_path, monkeypatch):
    monkeypatch.setattr(store, "results_path", lambda: tmp_path / "none.json")
    resp = cast.owner.api.get("/api/leaderboard/")
    assert resp.status_code == 404 and "manage.py leaderboard" in resp.json()["error"]["hint"]


def test_the_page_shows_ranked_rows_with_intervals(cast, client, published):
    client.force_login(cast.owner.user)
    html = client.get("/leaderboard/").content.decode()
    assert "Policy leaderboard" in html and "hpa-running" in html
    assert "target 8: 2.5 [" in html  # the tuned point, its GPU-hours and interval
    assert html.index("hpa-running</td>") < html.index("chiron</td>")
    assert 'href="/leaderboard/"' in html  # in the nav
    assert "azure-code (baseline static 3, 99.0 %): 1 of 2 strategies use fewer GPU-hours" in html


def test_the_markdown_has_every_trace_and_the_rules(published):
    md = report.render(published)
    assert "## Rules" in md and "target 8: 2.5 [" in md and published["digest"] in md


def test_savings_read_as_words_not_signed_numbers():
    from planner.leaderboard.templatetags.leaderboard_tags import saving_words

    assert saving_words(12.34) == "saves 12.3 %"
    assert saving_words(-49.8) == "costs 49.8 % more"
    assert saving_words(None) == "\u2013"
