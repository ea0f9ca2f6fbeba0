"""Comparison figures read alike in every panel; the PDF answers with the right strategy and names what failed."""

from __future__ import annotations

import pytest

from planner.comparisons.core.aggregate import aggregate
from planner.comparisons.core.figures import all_figures
from planner.comparisons.core.report import build_pdf, slo_verdict
from planner.comparisons.tests.test_comparisons import FAKE, fake_summary
from planner.plotstyle import axes_without_title, palette, trace_colour


def legend_colours_match(fig) -> list[str]:
    """Problems: a legend name drawn in two colours, or a trace without a colour."""
    seen, problems = {}, []
    for tr in fig.data:
        colour = trace_colour(tr)
        if colour is None:
            problems.append(f"{tr.name}: no colour")
        elif seen.setdefault(tr.legendgroup or tr.name, colour) != colour:
            problems.append(f"{tr.name}: {colour} != {seen[tr.legendgroup or tr.name]}")
    return problems


def test_every_comparison_figure_has_one_colour_per_strategy_and_titled_axes():
    sums = {k: fake_summary(k, k, inst_h=v) for k, v in FAKE.items()}
    figs = all_figures(sums, list(sums))
    for name, fig in figs.items():
        assert not axes_without_title(fig), name
        assert not legend_colours_match(fig), name
    # the same strategy is the same colour in every figure (and in the PDF, which uses the same map)
    lt_ua = {trace_colour(t) for f in ("fig12a", "fig12a_gpu", "fig13a") for t in figs[f].data
             if t.legendgroup == "lt-ua"}
    assert len(lt_ua) == 1
    # latency bars start at zero (no log axis)
    assert figs["fig13a"].layout.yaxis.type != "log" and figs["fig13a"].layout.yaxis.rangemode == "tozero"


def test_the_palette_never_repeats_within_a_figure_of_36_series():
    assert len(set(palette(12)[:12])) == 12 and len(set(palette(36)[:36])) == 36


def _agg(**inst_h):
    sums = {k: fake_summary(k, k, inst_h=v, price=98.32) for k, v in inst_h.items()}
    return sums, aggregate(sums, "reactive-unified")


def _pdf_text(pdf: bytes) -> str:
    """The report's text, pages separated by form feeds."""
    import io

    from pypdf import PdfReader

    return "\f".join(" ".join(page.extract_text().split()) for page in PdfReader(io.BytesIO(pdf)).pages)


def test_when_the_baseline_is_cheapest_page_one_says_keep_it():
    sums, agg = _agg(**{"reactive-unified": 100.0, "static": 300.0, "lt-i": 120.0})
    assert agg["cheapest"] == "reactive-unified" and agg["best"] == "lt-i"
    text = _pdf_text(build_pdf(title="t", assumptions={}, aggregate=agg, summaries=sums))
    page1 = text.split("\f")[0]
    assert "Answer: keep reactive-unified" in page1
    assert "cheapest strategy is lt-i" not in page1


def test_page_one_names_the_cheapest_and_every_failed_run_with_its_reason():
    sums, agg = _agg(**{"reactive-unified": 362.25, "lt-i": 274.5})
    failures = [{"key": "lt-ua", "status": "failed", "message": "LT-UA needs theta_tps", "where": "deployments"}]
    page1 = _pdf_text(build_pdf(title="t", assumptions={}, aggregate=agg, summaries=sums,
                                failures=failures)).split("\f")[0]
    assert "Answer: lt-i" in page1 and "$" in page1
    assert "lt-ua" in page1 and "LT-UA needs theta_tps" in page1
    assert "$60,393 per week" in page1  # (362.25 - 274.5) inst-h x $98.32 x 7 days/week, with a thousands separator


def test_the_paper_style_week_prices_each_endpoint_at_its_own_price():
    def with_prices(key, inst_h):
        s = fake_summary(key, key, inst_h=inst_h, price=100.0)
        s["endpoints"][0]["price_per_instance_hour"] = 100.0
        s["endpoints"][1]["price_per_instance_hour"] = 10.0
        return s

    agg = aggregate({"reactive-unified": with_prices("reactive-unified", 200.0), "lt-i": with_prices("lt-i", 100.0)},
                    "reactive-unified")
    row = next(r for r in agg["rows"] if r["key"] == "lt-i")
    # 50 inst-h saved on each endpoint per day: (50 x $100 + 50 x $10) / 2 endpoints x 7 days
    assert row["paper_style_usd_per_week"] == pytest.approx((50 * 100 + 50 * 10) / 2 * 7)


def test_the_slo_verdict_says_which_tier_misses():
    _, agg = _agg(**{"reactive-unified": 100.0})
    row = agg["rows"][0]
    assert slo_verdict(row) == "meets"
    row["tiers"]["IW-F"]["attainment"] = 0.9
    assert slo_verdict(row) == "misses: IW-F 90.00 % < 99 %"


def test_the_answer_is_the_cheapest_strategy_that_meets_the_slo_targets():
    from planner.comparisons.core.report import choose_answer

    sums = {"reactive-unified": fake_summary("reactive-unified", "reactive-unified", inst_h=100.0, att_f=0.999),
            "lt-i": fake_summary("lt-i", "lt-i", inst_h=60.0, att_f=0.80),  # cheapest, misses IW-F
            "lt-ua": fake_summary("lt-ua", "lt-ua", inst_h=90.0, att_f=0.995)}
    agg = aggregate(sums, "reactive-unified")
    assert choose_answer(agg)["key"] == "lt-ua" and choose_answer(agg)["cheapest"] == "lt-i"
    page1 = _pdf_text(build_pdf(title="t", assumptions={}, aggregate=agg, summaries=sums)).split("\f")[0]
    assert "Answer: lt-ua." in page1 and "lt-i costs less" in page1 and "misses: IW-F 80.00 % < 99 %" in page1
    sums["lt-ua"] = fake_summary("lt-ua", "lt-ua", inst_h=90.0, att_f=0.9)
    sums["reactive-unified"] = fake_summary("reactive-unified", "reactive-unified", inst_h=100.0, att_f=0.9)
    agg = aggregate(sums, "reactive-unified")
    assert choose_answer(agg)["key"] is None
    page1 = _pdf_text(build_pdf(title="t", assumptions={}, aggregate=agg, summaries=sums)).split("\f")[0]
    assert "Answer: no strategy meets the SLO targets." in page1


def test_overlapping_lines_have_their_own_dash_titles_are_plain_and_empty_charts_are_left_out():
    from planner.comparisons.core.figures import all_figures

    summaries = {k: fake_summary(k, k, inst_h=100.0) for k in ("reactive-unified", "lt-i", "lt-u", "lt-ua")}
    for s in summaries.values():
        s["timeline"] = {"t_s": [0, 3600], "instances_total": [4, 4]}  # identical lines: only dashes part them
        s["totals"]["provisioning_gpu_hours"] = 0.0
        s["waste_by_source"] = {}
    figs = all_figures(summaries, list(summaries))
    dashes = [tr.line.dash for tr in figs["fig11"].data]
    assert len(set(dashes)) == 4
    assert "fig13b" not in figs  # no GPU-hour was wasted: no empty chart
    for name, fig in figs.items():
        assert "Fig." not in fig.layout.title.text.split("<br>")[0], name  # the paper reference is only a note
        assert fig.layout.legend.y > 1, name  # above the plot, clear of the tick labels
