"""Risk bands: the [p5, p95] band of a mean over N draws shrinks as 1/sqrt(N); probabilities carry Wilson bounds."""

from __future__ import annotations

import numpy as np
import pytest

from planner.capacity.core.bands import band, fmt_band, probability, wilson


def test_a_band_is_the_median_and_the_5th_and_95th_percentiles():
    b = band(range(101))
    assert (b["median"], b["p5"], b["p95"], b["n"]) == (50.0, 5.0, 95.0, 101)
    assert band([None, float("nan")]) == {"median": None, "p5": None, "p95": None, "n": 0}
    assert fmt_band(band([1.0, 2.0, 3.0]), "{:.1f}") == "2.0 [1.1, 2.9]"
    assert fmt_band(band([1090425.0]), "${:,.0f}") == "$1,090,425 (one draw, no band)"


def test_the_band_of_a_mean_shrinks_about_as_one_over_the_square_root_of_the_draws():
    """Each draw's KPI is the mean of n requests' latencies; with 4x the draws' requests the band halves.
    Widths are averaged over 200 repetitions so the check is about the law, not one sample."""
    rng = np.random.default_rng(3)

    def mean_width(n: int) -> float:
        widths = []
        for _ in range(200):
            kpis = [rng.exponential(1.0, n).mean() for _ in range(20)]
            b = band(kpis)
            widths.append(b["p95"] - b["p5"])
        return float(np.mean(widths))

    w100, w400, w1600 = mean_width(100), mean_width(400), mean_width(1600)
    assert w100 / w400 == pytest.approx(2.0, rel=0.12)
    assert w400 / w1600 == pytest.approx(2.0, rel=0.12)


def test_the_uncertainty_of_a_probability_shrinks_as_one_over_the_square_root_of_the_draws():
    lo20, hi20 = wilson(18, 20)
    lo80, hi80 = wilson(72, 80)
    assert (hi20 - lo20) / (hi80 - lo80) == pytest.approx(2.0, rel=0.15)


def test_a_probability_counts_the_draws_that_met_the_target():
    p = probability([True] * 19 + [False])
    assert p["p"] == 0.95 and p["met"] == 19 and p["n"] == 20
    assert 0.75 < p["low"] < 0.95 < p["high"] <= 1.0
    assert probability([True] * 20)["high"] == 1.0


def test_a_quantity_band_shows_three_significant_digits_however_small():
    """GPU-hours of a short simulated span are fractions: shown with three significant digits, not "0 [0, 0]";
    large ones stay whole numbers with thousands separators; the card's filter is the same."""
    from planner.capacity.core.bands import fmt_sig_band
    from planner.decisions.templatetags.decision_card import num_band

    small = {"median": 0.01234, "p5": 0.0119, "p95": 0.0131, "n": 20}
    assert fmt_sig_band(small) == "0.0123 [0.0119, 0.0131]"
    assert num_band(small) == "0.0123 [0.0119, 0.0131]"
    assert fmt_sig_band({"median": 2.5, "p5": 2.25, "p95": 3.0, "n": 20}) == "2.50 [2.25, 3.00]"
    assert fmt_sig_band({"median": 61375.2, "p5": 60900.0, "p95": 61800.4, "n": 20}) == "61,375 [60,900, 61,800]"
    assert fmt_sig_band({"median": 0.0, "p5": 0.0, "p95": 0.0, "n": 3}) == "0 [0, 0]"  # nothing used: zero is right
    assert fmt_sig_band({"median": None, "p5": None, "p95": None, "n": 0}) == "\u2014"
