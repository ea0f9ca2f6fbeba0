"""PDF cost report for finance (reportlab + matplotlib). Django-free.

Page 1 is the answer: which strategy is cheapest (the baseline when nothing beats it), what it saves per
week with the SLO attainment and pass/fail beside every saving, which strategy runs are missing and why,
and the assumptions in plain words. Then the key charts (zero-based bars, one colour per strategy in every
chart), and an appendix with the engineering detail: the full savings table, the assumptions' tables
(trace, fleet, prices with their sources, SLOs, knobs), the per-(region, model) breakdown.
"""

from __future__ import annotations

import io
from datetime import UTC, datetime

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from reportlab.lib import colors  # noqa: E402
from reportlab.lib.pagesizes import A4  # noqa: E402
from reportlab.lib.styles import ParagraphStyle, getSampleStyleSheet  # noqa: E402
from reportlab.lib.units import cm  # noqa: E402
from reportlab.platypus import (  # noqa: E402
    CondPageBreak,
    Image,
    KeepTogether,
    PageBreak,
    Paragraph,
    SimpleDocTemplate,
    Spacer,
    Table,
    TableStyle,
)

from planner.comparisons.core.table import (  # noqa: E402
    misses,
    money,
    run_savings,
    saving_words,
    slo_reasons,
    strategy_table,
)
from planner.plotstyle import colour_map  # noqa: E402

TIERS = ("IW-F", "IW-N", "NIW")
plt.rcParams.update({"font.family": "DejaVu Sans", "font.size": 8, "axes.titlesize": 9, "axes.labelsize": 8,
                     "legend.fontsize": 7, "xtick.labelsize": 7, "ytick.labelsize": 7})


def _money(x) -> str:
    if x is None:
        return "-"
    sign = "-" if x < 0 else ""
    return f"{sign}${abs(float(x)):,.0f}"


def _pct(x, digits=1) -> str:
    return "-" if x is None else f"{x:.{digits}f}%"


def _att(x) -> str:
    return "-" if x is None else f"{100 * x:.1f}%"


def _num(x, digits=1) -> str:
    return "-" if x is None else f"{x:,.{digits}f}"


def _table(data, col_widths=None, header_rows=1, font_size=7.5):
    t = Table(data, colWidths=col_widths, repeatRows=header_rows)
    style = [
        ("FONT", (0, 0), (-1, -1), "Helvetica", font_size),
        ("FONT", (0, 0), (-1, header_rows - 1), "Helvetica-Bold", font_size),
        ("BACKGROUND", (0, 0), (-1, header_rows - 1), colors.HexColor("#e8edf3")),
        ("GRID", (0, 0), (-1, -1), 0.25, colors.HexColor("#b0b8c4")),
        ("ALIGN", (1, 0), (-1, -1), "RIGHT"),
        ("VALIGN", (0, 0), (-1, -1), "MIDDLE"),
    ]
    t.setStyle(TableStyle(style))
    return t


def _png(fig) -> io.BytesIO:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=150, bbox_inches="tight")
    plt.close(fig)
    buf.seek(0)
    return buf


def _chart_instances(summaries, order):
    fig, ax = plt.subplots(figsize=(7.2, 3.0))
    colours = colour_map(order)
    for key in order:
        tl = summaries[key].get("timeline") or {}
        t = [x / 3600.0 for x in tl.get("t_s", [])]
        ih = (summaries[key].get("totals") or {}).get("instance_hours", 0.0)
        if t:
            ax.step(t, tl.get("instances_total", []), where="post", label=f"{key} ({ih:,.1f} inst-h)", lw=1.2,
                    color=colours[key])
    ax.set_ylim(bottom=0)
    ax.set_xlabel("simulated time (h)")
    ax.set_ylabel("instances (count)")
    ax.set_title("Instances over time (area = instance-hours)")
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)
    ax.grid(alpha=0.3)
    return _png(fig)


def _grouped_bars(ax, labels, series: dict[str, list], ylabel, title, legend=True):
    """Bars from zero (never a log axis: finance reads bar length), one colour per strategy."""
    n = max(1, len(series))
    width = 0.8 / n
    colours = colour_map(list(series))
    for i, (name, ys) in enumerate(series.items()):
        xs = [j + (i - (n - 1) / 2) * width for j in range(len(labels))]
        ax.bar(xs, [y if y is not None else 0 for y in ys], width=width, label=name, color=colours[name])
    ax.set_xticks(range(len(labels)))
    ax.set_xticklabels(labels, rotation=30, ha="right")
    ax.set_ylabel(ylabel)
    ax.set_ylim(bottom=0)
    ax.set_title(title)
    if legend:
        ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)
    ax.grid(alpha=0.3, axis="y")


def _chart_endpoints(summaries, order):
    labels = [f"{e['region']}/{e['model']}" for e in summaries[order[0]].get("endpoints", [])]
    series = {}
    for key in order:
        by = {f"{e['region']}/{e['model']}": e.get("gpu_hours", 0.0) for e in summaries[key].get("endpoints", [])}
        series[key] = [by.get(lab, 0.0) for lab in labels]
    fig, ax = plt.subplots(figsize=(7.2, 3.0))
    _grouped_bars(ax, labels, series, "GPU-hours", "GPU-hours per region and model")
    ax.set_xlabel("region / model")
    return _png(fig)


def _chart_latency(summaries, order):
    # interactive tiers only: NIW's hour-long batch deadlines would flatten the seconds-scale bars
    labels = [t for t in ("IW-F", "IW-N") if any((summaries[k].get("tiers") or {}).get(t, {}).get("n") for k in order)]
    fig, axes = plt.subplots(1, 2, figsize=(7.2, 2.8))
    for i, (ax, metric, title) in enumerate(((axes[0], "ttft_p95", "p95 time to first token"),
                                             (axes[1], "e2e_p95", "p95 end-to-end latency"))):
        series = {k: [((summaries[k].get("tiers") or {}).get(t) or {}).get(metric) for t in labels] for k in order}
        _grouped_bars(ax, labels, series, "seconds", title, legend=i == 1)
        ax.set_xlabel("tier")
    fig.tight_layout()
    return _png(fig)


def _chart_waste(summaries, order):
    fig, ax = plt.subplots(figsize=(7.2, 2.6))
    vals = [(summaries[k].get("totals") or {}).get("provisioning_gpu_hours", 0.0) for k in order]
    colours = colour_map(order)
    ax.bar(order, vals, color=[colours[k] for k in order])
    ax.set_ylim(bottom=0, top=max(max(vals, default=0.0) * 1.15, 0.1))
    ax.set_ylabel("GPU-hours")
    ax.set_xlabel("strategy")
    none = " (none in this run)" if not any(vals) else ""
    ax.set_title(f"Scaling waste: GPU-hours paid while instances provision{none}")
    ax.grid(alpha=0.3, axis="y")
    return _png(fig)


def choose_answer(aggregate: dict) -> dict:
    """The right answer: the cheapest strategy that meets the SLO targets (the baseline wins ties).

    Returns {"key": answer or None when no strategy meets the targets, "cheapest": cheapest overall,
    "meets": {key: bool}}; the cheapest overall is only the answer when it meets the targets too."""
    rows = aggregate["rows"]
    meets = {r["key"]: slo_verdict(r) == "meets" for r in rows}
    order = sorted(rows, key=lambda r: (r["cost_usd"], not r["is_baseline"]))
    cheapest = order[0]["key"] if order else None
    answer = next((r["key"] for r in order if meets[r["key"]]), None)
    return {"key": answer, "cheapest": cheapest, "meets": meets}


def _answer(table: dict, failures: list[dict], per_week: float) -> str:
    """Page 1's answer in words: the cheapest strategy that meets the SLO targets; the baseline when nothing
    beats it; said plainly when the cheapest misses the targets or when no strategy meets them. Savings read
    forwards ("saves $X (Y %)" / "costs $X more") over the simulated span; a week is labelled as extrapolated."""
    rows = {r["key"]: r for r in table["rows"]}
    base = next((r for r in table["rows"] if r["is_baseline"]), None)
    span = table["span"]
    missing = f" {len(failures)} strategy run(s) did not finish and are not compared (see below)." if failures else ""
    others = [r for r in table["rows"] if not r["is_baseline"]]
    if base is None or not others:
        return f"Only the baseline produced a result; there is nothing to compare it with.{missing}"
    cheapest = rows[table["cheapest"]]
    if table["answer"] is None:
        return (f"<b>Answer: no strategy meets the SLO targets.</b> The cheapest, <b>{cheapest['key']}</b>, "
                f"misses: {'; '.join(cheapest['misses'])}. See why below before choosing on cost.{missing}")
    answer = rows[table["answer"]]
    caveat = ""
    if answer["key"] != cheapest["key"]:
        gap = answer["cost"]["median"] - cheapest["cost"]["median"]
        caveat = (f" <b>{cheapest['key']}</b> costs less ({money(gap)} over the simulated {span}) but misses: "
                  f"{'; '.join(cheapest['misses'])}.")
    if answer["is_baseline"]:
        runner_up = min(others, key=lambda r: r["cost"]["median"])
        return (f"<b>Answer: keep {base['key']}.</b> The baseline is the cheapest of the {len(rows)} strategies "
                f"compared that meets the SLO targets.{caveat} The next cheapest, <b>{runner_up['key']}</b>, "
                f"{runner_up['saving_words']} over the simulated {span}.{missing}")
    week = saving_words(answer["saved_usd"]["median"] * per_week)
    extrapolated = "" if abs(per_week - 1.0) < 1e-9 else f"; it {week} per week if that span repeats (extrapolated)"
    return (f"<b>Answer: {answer['key']}.</b> It is the cheapest strategy that meets the SLO targets. Against the "
            f"baseline <b>{base['key']}</b> it <b>{answer['saving_words']}</b> over the simulated {span}"
            f"{extrapolated}.{caveat}{missing}")


def _band_text(b, fmt) -> str:
    if not b:
        return "-"
    return fmt(b["median"]) + (f" [{fmt(b['p5'])}, {fmt(b['p95'])}]" if b["n"] > 1 else "")


def _decision_table(table: dict, per_week: float, small):
    """Page 1's table, one row per strategy, wrapped cells in fixed widths that fit the A4 text frame."""
    cell = ParagraphStyle("cell", parent=small, fontSize=7, leading=8.5)
    head = ["strategy", f"cost over {table['span']}", "against the baseline", "per week (extrapolated)", "IW-F SLO",
            "IW-N SLO", "NIW on time", "SLO targets"]
    data = [[Paragraph(f"<b>{h}</b>", cell) for h in head]]
    for r in table["rows"]:
        s = r["saved_usd"]
        week = "-" if s is None else saving_words(s["median"] * per_week)
        att = [_band_text(r["attainment"].get(t), lambda x: f"{100 * x:.2f} %") for t in TIERS]
        verdict = "meets" if r["meets"] else "misses: " + "; ".join(r["misses"])
        data.append([Paragraph(r["key"] + (" (baseline)" if r["is_baseline"] else ""), cell),
                     Paragraph(_band_text(r["cost"], money), cell), Paragraph(r["saving_words"], cell),
                     Paragraph(week, cell), *[Paragraph(a, cell) for a in att], Paragraph(verdict, cell)])
    widths = [c * cm for c in (2.6, 2.0, 2.6, 2.4, 1.7, 1.7, 1.7, 3.0)]  # 17.7 cm of the 17.8 cm frame
    return _table(data, col_widths=widths, font_size=7)


def slo_verdict(r: dict, targets: dict | None = None) -> str:
    """'meets' when every tier's attainment is at least its target share (core/table.TARGETS: 99 % per tier)."""
    missed = misses(r, targets)
    return "meets" if not missed else "misses: " + "; ".join(missed)


def _plain_assumptions(assumptions: dict, aggregate: dict) -> str:
    trace = assumptions.get("Trace") or {}
    fleet = assumptions.get("Fleet") or []
    slos = assumptions.get("SLOs") or {}
    endpoints = max(0, len(fleet) - 1)
    source = f" ({trace['workload']})" if trace.get("workload") else ""
    return (f"<b>Assumptions.</b> {_num(trace.get('requests simulated'), 0)} requests{source} "
            f"over {aggregate['duration_h']:.1f} simulated hours, replayed on "
            f"{endpoints} endpoint{'s' if endpoints != 1 else ''} (region x model) priced at each deployment's "
            f"on-demand $/instance-hour. "
            f"A request meets its SLO when it completes with time to first token within "
            f"{slos.get('IW-F TTFT (s)')} s (IW-F, fast interactive) or {slos.get('IW-N TTFT (s)')} s (IW-N), and a "
            f"batch (NIW) request when it finishes within {slos.get('NIW completion (s)')} s. Weekly and monthly "
            f"dollars scale the simulated span linearly (x 24 / span x 7, x 30.44 per month): a day is assumed to "
            f"repeat. Details in the appendix.")


def _energy_section(energy: list[dict], h2, small) -> list:
    """6. energy per variant (kWh, cost, change against the baseline); nothing when no run reports energy."""
    if not any(e.get("energy_kwh") is not None for e in energy):
        return []
    data = [["variant", "kWh", "busy kWh", "idle kWh", "prov. kWh", "kWh / 1k req.", "saved kWh", "energy cost"]]
    for e in energy:
        if e.get("energy_kwh") is None:
            data.append([e["key"], "no power figures: " + ", ".join(e.get("missing_power") or []), "", "", "", "", "",
                         ""])
            continue
        saved = "" if e["is_baseline"] or e.get("saved_kwh") is None else (
            f"{_num(e['saved_kwh'])} ({_pct(e.get('saved_kwh_pct'))})")
        data.append([e["key"], _num(e["energy_kwh"]), _num(e["busy_kwh"]), _num(e["idle_kwh"]),
                     _num(e["provisioning_kwh"]), _num(e.get("kwh_per_1k_requests"), 3), saved,
                     "-" if e.get("energy_cost_usd") is None else f"${e['energy_cost_usd']:,.2f}"])
    return [Spacer(1, 0.4 * cm), Paragraph("Appendix D. Energy", h2), _table(data, font_size=6.5), Spacer(1, 0.2 * cm),
            Paragraph("kWh = devices x (busy W x serving hours + idle W x (idle + provisioning hours)) x PUE, with each "
                      "deployment's watts from the hardware catalogue (most are assumed: datasheet TDP as busy power). "
                      "The energy cost is informational: cloud GPU-hour prices already include power.", small)]


def _validity_section(summaries: dict[str, dict], order: list[str], small) -> list:
    """A warning when any variant simulated requests beyond a context limit or outside a fitted range."""
    data = [["variant", "prompt over context", "prompt + output over context", "prompt outside fitted range",
             "prompt tokens outside"]]
    for k in order:
        v = summaries[k].get("validity") or {}
        c, t, p = (v.get(x) or {} for x in ("prompt_over_context", "total_over_context", "prompt_outside_fitted"))
        if c.get("requests") or t.get("requests") or p.get("requests"):
            data.append([k, f"{c.get('requests', 0)} ({_pct(100 * c.get('share', 0.0), 2)})",
                         f"{t.get('requests', 0)} ({_pct(100 * t.get('share', 0.0), 2)})",
                         f"{p.get('requests', 0)} ({_pct(100 * p.get('share', 0.0), 2)})",
                         _pct(100 * p.get("prompt_token_share", 0.0), 2)])
    if len(data) == 1:
        return []
    return [Paragraph("<b>Warning: part of this workload is outside what the latency models know.</b> Requests "
                      "beyond a deployment's context limit would be refused (or cut short) by a real server but are "
                      "simulated in full here; prompts outside the range a latency model was fitted on have "
                      "extrapolated prefill times. Shares are of served requests.", small),
            _table(data, font_size=7), Spacer(1, 0.3 * cm)]


def _appendix_runs(aggregate: dict, order: list, rows: dict, small, h2) -> list:
    """Appendix A: every run's totals, saving against the baseline and SLO columns, and how money is projected."""
    story = []
    story.append(Paragraph("Appendix A. Every run in detail", h2))
    head = ["run", "inst-h", "GPU-h", "cost", "against the baseline", "waste\nGPU-h", "p95 TTFT\nIW-F (s)",
            "p95 TTFT\nIW-N (s)", "IW-F\nSLO", "IW-N\nSLO", "NIW\non time"]
    data = [head]
    cell = ParagraphStyle("cellA", parent=small, fontSize=6.2, leading=7.4)
    savings = run_savings(aggregate, aggregate.get("variants") or [])
    for k in order:
        r = rows[k]
        t = r["tiers"]
        saved = savings.get(k)
        data.append([Paragraph(k, cell), _num(r["instance_hours"]), _num(r["gpu_hours"]), _money(r["cost_usd"]),
                     Paragraph("the baseline" if saved is None else saving_words(*saved), cell),
                     _num(r["waste_gpu_hours"]),
                     _num(t.get("IW-F", {}).get("ttft_p95_s"), 2), _num(t.get("IW-N", {}).get("ttft_p95_s"), 2),
                     _att(t.get("IW-F", {}).get("attainment")), _att(t.get("IW-N", {}).get("attainment")),
                     _att(r.get("niw_deadline_met"))])
    story.append(_table(data, font_size=6.2, col_widths=[c * cm for c in (3.4, 1.2, 1.3, 1.5, 2.8, 1.2, 1.35, 1.35,
                                                                           1.25, 1.25, 1.2)]))
    story.append(Spacer(1, 0.2 * cm))
    story.append(Paragraph("SLO columns: share of requests meeting their tier's target. Waste: GPU-hours of "
                           "instances paid for while acquiring a VM, loading weights or being reclaimed from spot "
                           "(SageServe Fig. 13b).", small))
    proj = aggregate["projection"]
    story.append(Paragraph(
        f"<b>How the money is projected.</b> Bottom-up: {proj['bottom_up_formula']}. Paper-style (SageServe 7.2.1): "
        f"{proj['paper_formula']} (each endpoint at its own price), with models x regions = {proj['models']:g} x "
        f"{proj['regions']:g} chosen for this report. The paper's own example, "
        f"{proj['paper_own_example']['formula']}, multiplies out to {_money(proj['paper_own_example']['value_usd'])} "
        f"per week (the paper rounds it to {proj['paper_own_example']['paper_says']}).", small))
    return story


def _appendix_assumptions(assumptions: dict, small, h2) -> list:
    """Appendix B: each assumption section as a table or a paragraph."""
    story = []
    story.append(Paragraph("Appendix B. Assumptions", h2))
    for section, items in assumptions.items():
        block = [Paragraph(f"<b>{section}</b>", small)]
        if isinstance(items, list) and items and isinstance(items[0], (list, tuple)):
            block.append(_table([list(map(str, r)) for r in items], font_size=7.5))
        elif isinstance(items, dict):
            cell = ParagraphStyle("cell", parent=small, fontSize=7, leading=8.5)
            block.append(_table([["item", "value"]] + [[Paragraph(str(k), cell), Paragraph(str(v), cell)]
                                                       for k, v in items.items()],
                                col_widths=[5.5 * cm, 12 * cm], font_size=7.5))
        else:
            block.append(Paragraph(str(items), small))
        block.append(Spacer(1, 0.25 * cm))
        story.append(KeepTogether(block))
    return story


def build_pdf(*, title: str, assumptions: dict, aggregate: dict, summaries: dict[str, dict],
              failures: list[dict] | None = None, baseline_note: str = "", answer: dict | None = None) -> bytes:
    """Render the report; returns the PDF bytes. ``failures``: strategy runs that did not finish
    ([{key, status, message, where}]) - named on page 1 so a partial comparison never reads as complete."""
    failures = failures or []
    styles = getSampleStyleSheet()
    small = ParagraphStyle("small", parent=styles["BodyText"], fontSize=8.5, leading=11)
    h1 = styles["Title"]
    h2 = ParagraphStyle("h2", parent=styles["Heading2"], keepWithNext=1)
    order = [k for k in aggregate["order"] if k in summaries]
    rows = {r["key"]: r for r in aggregate["rows"]}
    base = aggregate["baseline"]
    story = []

    # page 1: the answer, the savings with SLO beside every saving, the assumptions in words
    story.append(Paragraph(title, h1))
    story.append(Paragraph(f"Generated {datetime.now(UTC):%Y-%m-%d %H:%M} UTC by the LLM fleet capacity "
                           f"planner. Simulated span: {aggregate['duration_h']:.1f} h. Baseline: {base}."
                           + (f" {baseline_note}" if baseline_note else ""), small))
    story.append(Spacer(1, 0.3 * cm))
    if answer:  # the decision card leads page 1
        from planner.decisions.report import compact_card

        story.extend(compact_card(answer, small, ParagraphStyle("card", parent=styles["Heading3"], spaceAfter=2)))
    table = strategy_table(aggregate, aggregate.get("variants") or [])
    per_week = 24.0 / max(aggregate["duration_h"], 1e-9) * 7.0
    story.append(Paragraph(_answer(table, failures, per_week), small))
    reasons = slo_reasons(table, summaries)
    if reasons:
        story.append(Spacer(1, 0.2 * cm))
        story.append(Paragraph("<b>Why the SLO targets are missed.</b> " + " ".join(r["text"] for r in reasons),
                               small))
    story.append(Spacer(1, 0.3 * cm))
    story.extend(_validity_section(summaries, order, small))
    story.append(_decision_table(table, per_week, small))
    story.append(Paragraph(f"Costs and savings over the simulated {table['span']}"
                           + (f"; median and [5th, 95th percentile] over {table['seeds']} workload seeds"
                              if table["seeds"] > 1 else "")
                           + ". Per week: the simulated span repeated to fill 7 days (an extrapolation). SLO "
                           "targets: at least 99 % of each tier's requests within its TTFT target (IW-F, IW-N) or by "
                           "its deadline (NIW).", small))
    story.extend(failures_story(failures, small, "strategy runs"))
    story.append(Spacer(1, 0.3 * cm))
    story.append(Paragraph(_plain_assumptions(assumptions, aggregate), small))
    story.append(PageBreak())

    # page 2: the key charts
    story.append(Paragraph("Key charts", h2))
    for png in (_chart_instances(summaries, order), _chart_endpoints(summaries, order),
                _chart_latency(summaries, order), _chart_waste(summaries, order)):
        story.append(Image(png, width=14.5 * cm, height=5.6 * cm, kind="proportional"))
        story.append(Spacer(1, 0.1 * cm))
    story.append(PageBreak())

    # appendix: engineering detail
    story.extend(_appendix_runs(aggregate, order, rows, small, h2))
    story.append(Spacer(1, 0.3 * cm))
    _fair_section(story, aggregate.get("fair"), small, h2)  # tuned baselines
    story.extend(_appendix_assumptions(assumptions, small, h2))
    story.append(CondPageBreak(6 * cm))
    story.append(Paragraph("Appendix C. Per region and model", h2))
    data = [["variant", "region", "model", "GPU", "inst-h", "GPU-h", "cost", "waste GPU-h", "mean util."]]
    for e in aggregate["breakdown"]:
        data.append([e["key"], e["region"], e["model"] + (f" ({e['pool']} pool)" if e.get("pool") else ""),
                     e.get("gpu") or "", _num(e["instance_hours"]),
                     _num(e["gpu_hours"]), _money(e["cost_usd"]), _num(e["waste_gpu_hours"], 2),
                     _att(e.get("mean_utilisation"))])
    story.append(_table(data, font_size=6.5))
    story.extend(_energy_section(aggregate.get("energy") or [], h2, small))
    story.extend(aggregate.get("extra_story") or [])  # e.g. the operator-level plan (planner/opscale/report.py)

    return render_pdf(story, title)


def failures_story(failures: list[dict], small, what: str) -> list:
    """The "Not in this report" list: each failed child run with its status, message and where (empty when none
    failed)."""
    if not failures:
        return []
    out = [Spacer(1, 0.2 * cm), Paragraph(f"<b>Not in this report</b> (these {what} did not finish):", small)]
    for f in failures:
        where = f" (where: {f['where']})" if f.get("where") else ""
        out.append(Paragraph(f"&bull; <b>{f['key']}</b>: {f['status']}: {f['message']}{where}", small))
    return out


def render_pdf(story: list, title: str) -> bytes:
    """The house A4 layout (margins, metadata, a "title - page N" footer) around ``story``; PDF bytes."""
    buf = io.BytesIO()
    doc = SimpleDocTemplate(buf, pagesize=A4, leftMargin=1.6 * cm, rightMargin=1.6 * cm, topMargin=1.5 * cm,
                            bottomMargin=1.5 * cm, title=title, author="LLM fleet capacity planner")

    def footer(canvas, doc_):
        canvas.saveState()
        canvas.setFont("Helvetica", 7)
        canvas.drawRightString(A4[0] - 1.6 * cm, 0.9 * cm, f"{title} - page {doc_.page}")
        canvas.restoreState()

    doc.build(story, onFirstPage=footer, onLaterPages=footer)
    return buf.getvalue()


def _range(st, scale=1.0, digits=1, sign=True) -> str:
    if not st:
        return "-"
    f = f"{{:{'+' if sign else ''}.{digits}f}}"
    return f"{f.format(scale * st['mean'])} [{f.format(scale * st['min'])}, {f.format(scale * st['max'])}]"


def _fair_section(story, fair, small, h2) -> None:
    """Savings over seeds against the untuned AND the equal-SLO tuned baseline (each named)."""
    if not fair:
        return
    story.append(Paragraph("Savings over seeds, against the untuned and the equal-SLO tuned baseline", h2))
    story.append(Paragraph(
        f"Mean [min, max] over {max((r['n'] for r in fair['rows']), default=0)} run(s) per strategy. Untuned baseline: "
        f"<b>{fair['baseline']}</b>. {fair['rule']}.", small))
    head = ["strategy", "GPU-h", "above floors", "saved % vs\nuntuned", "saved % vs\ntuned", "tuned baseline",
            "IW-F SLO", "IW-N SLO", "NIW p95\nTTFT (h)"]
    data = [head]
    for r in fair["rows"]:
        t = r["vs_tuned"]
        data.append([r["key"], _range(r["gpu_hours"], digits=0, sign=False),
                     _range(r["gpu_hours_above_floor"], digits=0, sign=False),
                     _range(r["vs_untuned"]["saved_gpu_hours_pct"]), _range(t.get("saved_gpu_hours_pct")),
                     Paragraph(str(t.get("baseline") or t.get("why") or "-"), small),
                     _range(r["attainment"].get("IW-F"), 100.0, sign=False),
                     _range(r["attainment"].get("IW-N"), 100.0, sign=False),
                     _range(r["niw_ttft_p95_s"], 1 / 3600, 2, sign=False)])
    story.append(_table(data, font_size=6.0))
    story.append(Spacer(1, 0.2 * cm))
    mi = fair.get("model_of_interest", "llama2-70b")
    story.append(Paragraph(
        "Where the savings come from: floors (minimum instances all day, paid by every strategy), GPU-hours above "
        f"them and without provisioning, {mi} instance-hours (the paper's Fig. 11), NIW deferral (arrival to "
        "admission, p95) and NIW left unserved, the forecast method that ran each hourly decision.", small))
    from planner.comparisons.core.fair import methods_text

    data = [["strategy", "floors GPU-h", "above floors", "without\nprovisioning", f"{mi}\ninst-h",
             "NIW p95\ndeferral (h)", "NIW\nunserved %", "forecast methods"]]
    for r in fair["rows"]:
        data.append([r["key"], _range(r.get("floor_gpu_hours"), digits=0, sign=False),
                     _range(r.get("gpu_hours_above_floor"), digits=0, sign=False),
                     _range(r.get("gpu_hours_without_provisioning"), digits=0, sign=False),
                     _range(r.get(f"{mi}_instance_hours"), sign=False),
                     _range(r.get("niw_deferral_p95_s"), 1 / 3600, 2, sign=False),
                     _range(r.get("niw_unserved_pct"), sign=False),
                     Paragraph(methods_text(r.get("forecast_methods")), small)])
    story.append(_table(data, font_size=6.0))
    if fair.get("tuning"):
        story.append(Spacer(1, 0.2 * cm))
        data = [["tuning run", "knobs", "GPU-h", "IW-F / IW-N / NIW SLO (mean)"]]
        for tp in fair["tuning"]:
            att = " / ".join(_att(tp["attainment"].get(k)) for k in ("IW-F", "IW-N", "NIW"))
            data.append([tp["key"], ", ".join(f"{k}={v}" for k, v in tp["point"].items()),
                         _range(tp["gpu_hours"], digits=0, sign=False), att])
        story.append(_table(data, font_size=6.5))
    story.append(PageBreak())
