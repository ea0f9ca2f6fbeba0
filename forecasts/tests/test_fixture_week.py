"""The SageServe-like fixture week: weekdays are forecastable, the weekend dip is where forecasts fail."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from forecasts.core import backtest, build_series
from forecasts.core.pipeline import SeriesOptions, analyse_series

FIXTURE = Path(__file__).resolve().parents[2] / "fixtures" / "workloads" / "sageserve_week.json"
HOUR = 3600


@pytest.fixture(scope="module")
def week():
    from planner.ingest.synth import synthesize

    spec = json.loads(FIXTURE.read_text())  # starts on a Monday (start_weekday 0)
    frame = synthesize(spec)
    return build_series(frame, HOUR, metrics=("input_tps",))


def test_the_fixture_gives_36_series_of_a_week(week):
    assert len(week) == 36  # 3 regions x 4 models x 3 tiers
    assert {len(df) for df in week.values()} == {167}  # the trailing partial hour is dropped


def test_a_daily_seasonal_forecast_works_on_friday_and_fails_on_the_weekend(week):
    y = week[("us-east", "model-a", "IW-F")]["input_tps"].to_numpy()
    res = backtest(y, "seasonal_naive_daily", HOUR, horizon=1, initial=4 * 24, every=1)
    day = res.origins // 24
    err = res.per_origin_wmape()
    friday, weekend = np.nanmean(err[day == 4]), np.nanmean(err[day >= 5])
    assert friday < 20.0
    assert weekend > 2.5 * friday  # Saturday repeats Friday: the weekend drop is over-forecast
    assert res.peak[day == 5].mean() > 1.5 * res.actual_peak[day == 5].mean()


def test_the_run_result_flags_the_weekend_hours_as_failures(week):
    from forecasts.selectors import failures

    y = week[("us-east", "model-a", "IW-F")]["input_tps"].to_numpy()
    result = analyse_series(
        y, SeriesOptions(resolution_s=HOUR, method="seasonal_naive_daily", backtest_s=3 * 86400, horizon_s=HOUR)
    )
    flagged = failures(result, "seasonal_naive_daily")
    assert flagged, "no hour was flagged"
    assert all(f["origin"] >= 5 * 24 for f in flagged)  # only Saturday and Sunday hours
