"""The run pages and the `forecast` management command."""

from __future__ import annotations

import json
import subprocess
import sys
from io import StringIO

import pytest
from django.core.management import CommandError, call_command
from django.test import Client

from forecasts import services
from forecasts.models import ForecastRun

pytestmark = pytest.mark.django_db(transaction=True)

QUICK = {"resolution_s": 900, "candidates": ["naive", "seasonal_naive_daily", "arima"]}


def login(user):
    client = Client()
    client.force_login(user)
    return client


def test_the_run_page_shows_the_forecast_leaderboard_errors_and_residuals(cast, make_trace):
    trace = make_trace(cast.owner.team)
    run = services.create_run(trace=trace, team=cast.owner.team, user=cast.owner.user, params=QUICK)
    series = run.series.order_by("position").first()
    client = login(cast.teammate.user)
    page = client.get(f"/forecasts/{run.pk}/")
    assert page.status_code == 200
    html = page.content.decode()
    for text in (
        "actual vs forecast",
        "Backtest leaderboard",
        "where forecasts fail",
        "Residuals of",
        "Mean absolute error by lead time",
        series.label,
    ):
        assert text in html, text
    # method and horizon are selectable: the naive method at the first bin only
    page = client.get(f"/forecasts/{run.pk}/?series={series.pk}&method=naive&horizon=1")
    assert page.status_code == 200 and "Residuals of naive" in page.content.decode()
    assert "first 1 bin " in page.content.decode()
    assert login(cast.outsider.user).get(f"/forecasts/{run.pk}/").status_code == 404


def test_the_list_page_starts_a_run_and_shows_field_errors(cast, make_trace):
    trace = make_trace(cast.owner.team)
    client = login(cast.owner.user)
    assert client.get("/forecasts/").status_code == 200
    bad = client.post(
        "/forecasts/",
        {
            "trace": trace.pk,
            "metrics": ["input_tps"],
            "method": "naive",
            "resolution": "15min",
            "horizon": "never",
            "backtest": "2d",
        },
    )
    assert bad.status_code == 400 and "cannot read duration" in bad.content.decode()
    assert ForecastRun.objects.count() == 0
    ok = client.post(
        "/forecasts/",
        {
            "trace": trace.pk,
            "metrics": ["input_tps"],
            "method": "naive",
            "group_by": ["region"],
            "resolution": "15min",
            "horizon": "1h",
            "backtest": "1d",
        },
    )
    run = ForecastRun.objects.get()
    assert ok.status_code == 302 and ok["Location"] == f"/forecasts/{run.pk}/"
    assert run.status == "succeeded" and run.series.count() == 2


def test_the_command_prints_one_json_object_with_every_series(cast, make_trace):
    trace = make_trace(cast.owner.team)
    out = StringIO()
    call_command(
        "forecast",
        "--trace",
        str(trace.pk),
        "--group",
        "region",
        "--method",
        "auto",
        "--candidates",
        "naive,seasonal_naive_daily",
        "--resolution",
        "15min",
        "--horizon",
        "1h",
        "--json",
        stdout=out,
    )
    body = json.loads(out.getvalue())
    assert body["status"] == "succeeded" and len(body["series"]) == 2
    for row in body["series"]:
        assert row["chosen"] in ("naive", "seasonal_naive_daily") and row["peak"] > 0
        assert row["leaderboard"][0]["rank"] == 1
    assert ForecastRun.objects.get(pk=body["run"]).team == cast.owner.team


def test_the_command_names_the_bad_option(cast, make_trace):
    trace = make_trace(cast.owner.team)
    with pytest.raises(CommandError, match="--resolution"):
        call_command("forecast", "--trace", str(trace.pk), "--resolution", "2min")
    with pytest.raises(CommandError, match="--trace"):
        call_command("forecast", "--trace", "99999")


def test_the_forecasts_app_core_stays_importable_without_django():
    code = "import sys, forecasts.core.pipeline; assert 'django' not in sys.modules"
    subprocess.run([sys.executable, "-c", code], check=True)


def test_the_page_says_when_a_series_fell_back_for_lack_of_history(cast, make_trace):
    trace = make_trace(cast.owner.team)  # three days: a weekly seasonal naive needs more than a week
    run = services.create_run(
        trace=trace,
        team=cast.owner.team,
        user=cast.owner.user,
        params={**QUICK, "resolution_s": 3600, "method": "seasonal_naive_weekly"},
    )
    html = login(cast.owner.user).get(f"/forecasts/{run.pk}/").content.decode()
    assert "seasonal_naive_weekly <span" in html and "(fell back to moving_average)" in html
    assert "needs review" in html and "seasonal_naive_weekly fell back: moving_average actually ran" in html
    listing = login(cast.owner.user).get("/forecasts/").content.decode()
    assert "data-forecast-status>needs review<" in listing


def test_a_run_without_a_backtest_needs_review_and_a_good_one_succeeds(cast, make_trace):
    from forecasts.core import synthetic as syn

    frame = syn.synthetic_trace(days=3, peak_rps=0.05, seed=1)
    hour = make_trace(cast.owner.team, frame=frame[frame["arrival_s"] < 3600], name="one hour")
    blind = services.create_run(trace=hour, team=cast.owner.team, user=cast.owner.user,
                                params={"resolution_s": 300, "horizon_s": 3600})  # 12 bins: no room to backtest
    trace = make_trace(cast.owner.team)
    html = login(cast.owner.user).get(f"/forecasts/{blind.pk}/").content.decode()
    assert blind.status == "succeeded" and "data-forecast-status>needs review<" in html
    assert "no backtest ran" in html
    checked = services.create_run(trace=trace, team=cast.owner.team, user=cast.owner.user,
                                  params={**QUICK, "method": "naive", "candidates": ["naive"]})
    from forecasts.selectors import flagged_series, shown_status

    series = flagged_series(checked)
    assert series and all(s.leaderboard for s in series)
    assert not any("no backtest" in f for s in series for f in s.flags)
    assert shown_status(checked, series) in ("succeeded", "needs review")  # poor fit may still flag it


def test_the_form_starts_with_a_backtest_that_fits_the_trace(cast, make_trace):
    from forecasts.core import synthetic as syn
    from forecasts.forms import coherent_defaults

    assert coherent_defaults(3600) == {"horizon": "15min", "backtest": "30min", "resolution": "1min"}
    assert coherent_defaults(7 * 86400) == {"horizon": "1h", "backtest": "2d", "resolution": "5min"}
    hour = syn.synthetic_trace(days=3, peak_rps=0.05, seed=1)
    hour = hour[hour["arrival_s"] < 3600]
    short = make_trace(cast.owner.team, frame=hour, name="one hour")
    html = login(cast.owner.user).get(f"/forecasts/?trace={short.pk}").content.decode()
    expected = coherent_defaults(short.span_s)
    assert short.span_s < 3600 and expected["backtest"] in ("29min", "30min")
    assert f'name="backtest" value="{expected["backtest"]}"' in html
    assert f'name="horizon" value="{expected["horizon"]}"' in html
