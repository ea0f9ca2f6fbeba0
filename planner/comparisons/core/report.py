"""PDF cost report for finance (reportlab + matplotlib). Django-free.

Pages: summary (what was compared, the answer in one paragraph and one table), assumptions (trace,
fleet, prices with their sources, SLOs, knobs), the savings table with SLO attainment beside each
saving, key charts (Fig. 11, 12a, 13a, 13b styles), and the per-(region, model) breakdown.
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
    Image,
    PageBreak,
    Paragraph,
    SimpleDocTemplate,
    Spacer,
    Table,
    TableStyle,
)

TIERS = ("IW-F", "IW-N", "NIW")


def _money(x) -> str:
    if x is None:
        return "-"
    sign = "-" if x < 0 else ""
    x = abs(float(x))
    if x >= 1e6:
        return f"{sign}${x / 1e6:,.2f}M"
    if x >= 1e4:
        return f"{sign}${x / 1e3:,.1f}k"
    return f"{sign}${x:,.0f}"


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
    for key in order:
        tl = summaries[key].get("timeline") or {}
        t = [x / 3600.0 for x in tl.get("t_s", [])]
        ih = (summaries[key].get("totals") or {}).get("instance_hours", 0.0)
        if t:
            ax.step(t, tl.get("instances_total", []), where="post", label=f"{key} ({ih:.1f} inst-h)", lw=1.2)
    ax.set_xlabel("simulated hour")
    ax.set_ylabel("instances")
    ax.set_title("Instances over time (area = instance-hours)", fontsize=9)
    ax.legend(fontsize=7, ncol=2)
    ax.grid(alpha=0.3)
    return _png(fig)


def _grouped_bars(ax, labels, series: dict[str, list], ylabel, title, log=False):
    n = max(1, len(series))
    width = 0.8 / n
    for i, (name, ys) in enumerate(series.items()):
        xs = [j + (i - (n - 1) / 2) * width for j in range(len(labels))]
        ax.bar(xs, [y if y is not None else 0 for y in ys], width=width, label=name)
    ax.set_xticks(range(len(labels)))
    ax.set_xticklabels(labels, rotation=30, ha="right", fontsize=7)
    ax.set_ylabel(ylabel, fontsize=8)
    ax.set_title(title, fontsize=9)
    if log:
        ax.set_yscale("log")
    ax.legend(fontsize=6.5, ncol=3)
    ax.grid(alpha=0.3, axis="y")


def _chart_endpoints(summaries, order):
    labels = [f"{e['region']}/{e['model']}" for e in summaries[order[0]].get("endpoints", [])]
    series = {}
    for key in order:
        by = {f"{e['region']}/{e['model']}": e.get("gpu_hours", 0.0) for e in summaries[key].get("endpoints", [])}
        series[key] = [by.get(lab, 0.0) for lab in labels]
    fig, ax = plt.subplots(figsize=(7.2, 3.0))
    _grouped_bars(ax, labels, series, "GPU-hours", "GPU-hours per region and model")
    return _png(fig)


def _chart_latency(summaries, order):
    fig, axes = plt.subplots(1, 2, figsize=(7.2, 2.8))
    for ax, metric, title in ((axes[0], "ttft_p95", "p95 TTFT per tier"), (axes[1], "e2e_p95", "p95 E2E per tier")):
        labels = [t for t in TIERS if any((summaries[k].get("tiers") or {}).get(t, {}).get("n") for k in order)]
        series = {k: [((summaries[k].get("tiers") or {}).get(t) or {}).get(metric) for t in labels] for k in order}
        _grouped_bars(ax, labels, series, "seconds (log)", title, log=True)
    fig.tight_layout()
    return _png(fig)


def _chart_waste(summaries, order):
    fig, ax = plt.subplots(figsize=(7.2, 2.6))
    vals = [(summaries[k].get("totals") or {}).get("provisioning_gpu_hours", 0.0) for k in order]
    ax.bar(order, vals, color="#c0504d")
    ax.set_ylim(bottom=0, top=max(max(vals, default=0.0) * 1.15, 0.1))
    ax.set_ylabel("GPU-hours", fontsize=8)
    ax.set_title("Scaling waste: GPU-hours paid while instances provision", fontsize=9)
    ax.tick_params(axis="x", labelsize=7)
    ax.grid(alpha=0.3, axis="y")
    return _png(fig)


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
    return [Spacer(1, 0.4 * cm), Paragraph("Energy", h2), _table(data, font_size=6.5), Spacer(1, 0.2 * cm),
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


def build_pdf(*, title: str, assumptions: dict, aggregate: dict, summaries: dict[str, dict]) -> bytes:
    """Render the report; returns the PDF bytes."""
    styles = getSampleStyleSheet()
    small = ParagraphStyle("small", parent=styles["BodyText"], fontSize=8.5, leading=11)
    h1, h2 = styles["Title"], styles["Heading2"]
    order = [k for k in aggregate["order"] if k in summaries]
    rows = {r["key"]: r for r in aggregate["rows"]}
    base = aggregate["baseline"]
    story = []

    # 1. summary
    story.append(Paragraph(title, h1))
    story.append(Paragraph(f"Generated {datetime.now(UTC):%Y-%m-%d %H:%M} UTC by the LLM fleet capacity "
                           f"planner. Simulated span: {aggregate['duration_h']:.1f} h.", small))
    story.append(Spacer(1, 0.3 * cm))
    best = rows.get(aggregate.get("best") or "")
    b = rows[base]
    if best:
        iw = ", ".join(f"{t} {_att(best['tiers'][t]['attainment'])} (baseline {_att(b['tiers'].get(t, {}).get('attainment'))})"
                       for t in ("IW-F", "IW-N") if t in best["tiers"])
        text = (f"<b>Answer.</b> Against the baseline <b>{base}</b>, the cheapest strategy is <b>{best['key']}</b>: "
                f"{_num(best['saved_gpu_hours'])} GPU-hours ({_pct(best['saved_gpu_hours_pct'])}) and "
                f"{_money(best['saved_usd'])} less over the simulated span, i.e. {_money(best['saved_usd_per_week'])} "
                f"per week and {_money(best['saved_usd_per_month'])} per month for this fleet, with SLO attainment "
                f"{iw or 'n/a'}. Scaling waste changes by {_pct(best['waste_reduction_pct'])} (positive = less).")
    else:
        text = f"Only the baseline <b>{base}</b> produced a result; there is nothing to compare it with."
    story.append(Paragraph(text, small))
    story.append(Spacer(1, 0.3 * cm))
    story.extend(_validity_section(summaries, order, small))
    head = ["variant", "GPU-h", "saved", "$ / week saved", "IW-F SLO", "IW-N SLO", "NIW on time"]
    data = [head]
    for k in order:
        r = rows[k]
        data.append([k + (" (baseline)" if r["is_baseline"] else ""), _num(r["gpu_hours"]),
                     _pct(r["saved_gpu_hours_pct"]), _money(r["saved_usd_per_week"]),
                     _att(r["tiers"].get("IW-F", {}).get("attainment")),
                     _att(r["tiers"].get("IW-N", {}).get("attainment")), _att(r.get("niw_deadline_met"))])
    story.append(_table(data, font_size=8))
    story.append(Spacer(1, 0.3 * cm))
    proj = aggregate["projection"]
    story.append(Paragraph(
        f"<b>How the money is projected.</b> Bottom-up: {proj['bottom_up_formula']}. Paper-style (SageServe 7.2.1): "
        f"{proj['paper_formula']}, with models x regions = {proj['models']:g} x {proj['regions']:g} chosen for this "
        f"report. The paper's own example, {proj['paper_own_example']['formula']}, multiplies out to "
        f"{_money(proj['paper_own_example']['value_usd'])} per week (the paper rounds it to "
        f"{proj['paper_own_example']['paper_says']}).", small))
    story.append(PageBreak())

    # 2. assumptions
    story.append(Paragraph("Assumptions", h2))
    for section, items in assumptions.items():
        story.append(Paragraph(f"<b>{section}</b>", small))
        if isinstance(items, list) and items and isinstance(items[0], (list, tuple)):
            story.append(_table([list(map(str, r)) for r in items], font_size=7.5))
        elif isinstance(items, dict):
            cell = ParagraphStyle("cell", parent=small, fontSize=7, leading=8.5)
            story.append(_table([["item", "value"]] + [[Paragraph(str(k), cell), Paragraph(str(v), cell)]
                                                       for k, v in items.items()],
                                col_widths=[5.5 * cm, 12 * cm], font_size=7.5))
        else:
            story.append(Paragraph(str(items), small))
        story.append(Spacer(1, 0.25 * cm))
    story.append(PageBreak())

    # 3. savings table
    story.append(Paragraph(f"Savings against {base}", h2))
    head = ["variant", "inst-h", "GPU-h", "cost", "saved\nGPU-h", "saved $", "$/month\nsaved", "waste\nGPU-h",
            "p95 TTFT\nIW-F (s)", "p95 TTFT\nIW-N (s)", "IW-F\nSLO", "IW-N\nSLO", "NIW\non time"]
    data = [head]
    for k in order:
        r = rows[k]
        t = r["tiers"]
        data.append([k, _num(r["instance_hours"]), _num(r["gpu_hours"]), _money(r["cost_usd"]),
                     f"{_num(r['saved_gpu_hours'])} ({_pct(r['saved_gpu_hours_pct'])})", _money(r["saved_usd"]),
                     _money(r["saved_usd_per_month"]), _num(r["waste_gpu_hours"]),
                     _num(t.get("IW-F", {}).get("ttft_p95_s"), 2), _num(t.get("IW-N", {}).get("ttft_p95_s"), 2),
                     _att(t.get("IW-F", {}).get("attainment")), _att(t.get("IW-N", {}).get("attainment")),
                     _att(r.get("niw_deadline_met"))])
    story.append(_table(data, font_size=6.2))
    story.append(Spacer(1, 0.3 * cm))
    story.append(Paragraph("SLO columns: share of requests meeting their tier's target (see Assumptions). "
                           "Waste: GPU-hours of instances that were paid for while acquiring a VM, loading weights or "
                           "being reclaimed from spot (SageServe Fig. 13b).", small))
    story.append(PageBreak())
    _fair_section(story, aggregate.get("fair"), small, h2)

    # 4. charts
    story.append(Paragraph("Key charts", h2))
    for png in (_chart_instances(summaries, order), _chart_endpoints(summaries, order),
                _chart_latency(summaries, order), _chart_waste(summaries, order)):
        story.append(Image(png, width=14.5 * cm, height=6.0 * cm, kind="proportional"))
        story.append(Spacer(1, 0.1 * cm))
    story.append(PageBreak())

    # 5. breakdown
    story.append(Paragraph("Per region and model", h2))
    data = [["variant", "region", "model", "GPU", "inst-h", "GPU-h", "cost", "waste GPU-h", "mean util."]]
    for e in aggregate["breakdown"]:
        data.append([e["key"], e["region"], e["model"], e.get("gpu") or "", _num(e["instance_hours"]),
                     _num(e["gpu_hours"]), _money(e["cost_usd"]), _num(e["waste_gpu_hours"], 2),
                     _att(e.get("mean_utilisation"))])
    story.append(_table(data, font_size=6.5))
    story.extend(_energy_section(aggregate.get("energy") or [], h2, small))
    story.extend(aggregate.get("extra_story") or [])  # e.g. the operator-level plan (planner/opscale/report.py)

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
    """Issue 19: savings over seeds against the untuned AND the equal-SLO tuned baseline (each named)."""
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
    if fair.get("tuning"):
        story.append(Spacer(1, 0.2 * cm))
        data = [["tuning run", "knobs", "GPU-h", "IW-F / IW-N / NIW SLO (mean)"]]
        for tp in fair["tuning"]:
            att = " / ".join(_att(tp["attainment"].get(k)) for k in ("IW-F", "IW-N", "NIW"))
            data.append([tp["key"], ", ".join(f"{k}={v}" for k, v in tp["point"].items()),
                         _range(tp["gpu_hours"], digits=0, sign=False), att])
        story.append(_table(data, font_size=6.5))
    story.append(PageBreak())
