"""The decision as a PDF (reportlab): page 1 is the card, page 2 every candidate with its bands. Django-free."""

from __future__ import annotations

import io
from collections.abc import Mapping
from datetime import UTC, datetime

from reportlab.lib import colors
from reportlab.lib.pagesizes import A4
from reportlab.lib.styles import getSampleStyleSheet
from reportlab.lib.units import cm
from reportlab.platypus import PageBreak, Paragraph, SimpleDocTemplate, Spacer, Table, TableStyle

from planner.capacity.core.bands import fmt_band, fmt_sig_band, sig_decimals


def _prob(p: Mapping | None) -> str:
    if not p or p.get("p") is None:
        return "-"
    return f"{p['p']:.2f} [{p['low']:.2f}, {p['high']:.2f}]"


def _table(rows: list[list], widths=None) -> Table:
    t = Table(rows, colWidths=widths, repeatRows=1)
    t.setStyle(TableStyle([("FONTSIZE", (0, 0), (-1, -1), 7.5), ("BACKGROUND", (0, 0), (-1, 0), colors.HexColor("#eef2f7")),
                           ("GRID", (0, 0), (-1, -1), 0.25, colors.HexColor("#c8ced6")),
                           ("VALIGN", (0, 0), (-1, -1), "TOP")]))
    return t


def compact_card(answer: Mapping, small, heading) -> list:
    """The decision card in a few lines, to lead another report's page 1 (a comparison's cost report)."""
    story = [Paragraph("Decision: " + str(answer.get("headline", "")), heading)]
    choice = answer.get("choice")
    if choice and answer.get("single_run"):
        story.append(Paragraph(_single_run(answer, choice), small))
    elif choice:
        draws = f"{choice['draws']} {answer.get('draws_label') or 'workload seeds'}"
        slo = "; ".join(f"{s['tier']} {_prob(s['probability'])}" for s in choice["slo"])
        fleet = ", ".join(f"{r['region']}/{r['model']}" + (f" {r['pool']}" if r.get("pool") else "") + f" {r['count']}"
                          + (f"-{r['ceiling']}" if r.get("ceiling") and r["ceiling"] != r["count"] else "")
                          + f" x {r['gpu']}" for r in choice["fleet"])
        story.append(Paragraph(
            f"Monthly cost <b>{fmt_band(choice['monthly_cost_usd'], '${:,.0f}')}</b> (median [p5, p95] over {draws}; "
            f"extrapolated from {answer['span_h']} simulated hours). P(meets the SLO) [95 % interval]: {slo}. "
            f"What to run: <b>{choice['strategy']}</b> on {fleet or 'the scenario fleet'}.", small))
    elif answer.get("best"):
        story.append(Paragraph(f"Closest: {answer['best']['key']}: {answer['best']['why']}.", small))
    if answer.get("serving"):
        story.append(Paragraph(f"Aggregated or disaggregated: {answer['serving']['verdict']}.", small))
    if answer.get("rejected"):
        rej = answer["rejected"]
        cost = (f"{fmt_band(rej['monthly_cost_usd'], '${:,.0f}')} a month, extrapolated"
                if (rej.get("monthly_cost_usd") or {}).get("median") is not None else rej.get("usage", ""))
        story.append(Paragraph(f"Cheapest rejected alternative: {rej['key']} ({cost}): {rej['why']}.", small))
    if answer.get("most_sensitive"):
        story.append(Paragraph(f"What would change the answer most: {answer['most_sensitive']}. " + "; ".join(
            f"{s['input']}: {s['effect']}" for s in answer.get("sensitivity") or []) + ".", small))
    return story + [Spacer(1, 6)]


def _single_run(answer: Mapping, choice: Mapping) -> str:
    """A choice measured on one run (no seeds, no prices): its attainment, resources and what it would cost."""
    slo = "; ".join(f"{s['tier']} {s['attainment']['median']:.1%} (target {s['target']:.1%})" for s in choice["slo"]
                    if s["attainment"]["median"] is not None)
    usage = "; ".join(f"{u['label']} {u['value']:,.{sig_decimals({'median': u['value']})}f} {u['unit']}"
                      for u in choice.get("usage") or [] if u.get("value") is not None)
    return (f"What to run: <b>{choice.get('what') or choice['strategy']}</b>. SLO attainment over one "
            f"{answer.get('draws_label') or 'run'}: {slo}. {usage}. Cost: not known ({answer.get('cost_note') or 'no prices'}).")


def serving_rows(serving: Mapping) -> list[list]:
    """The best aggregated and the best disaggregated candidate side by side."""
    rows = [["serving", "best candidate", "fleet", "monthly cost", "P(every SLO)", "accepted"]]
    for kind in ("aggregated", "disaggregated"):
        r = serving[kind]
        fleet = ", ".join(f"{p['count']} {p['pool']} x {p['gpu']}".replace("  ", " ") for p in r["pools"])
        rows.append([kind, r["key"], fleet, fmt_band(r["monthly_cost_usd"], "${:,.0f}"), _prob(r["meets_all"]),
                     "yes" if r["accepted"] else "no"])
    return rows


def build_pdf(answer: Mapping, *, title: str) -> bytes:
    styles = getSampleStyleSheet()
    small = styles["BodyText"].clone("small", fontSize=8, leading=10)
    buf = io.BytesIO()
    doc = SimpleDocTemplate(buf, pagesize=A4, leftMargin=1.5 * cm, rightMargin=1.5 * cm, topMargin=1.5 * cm,
                            bottomMargin=1.5 * cm, title=title)
    story = [Paragraph(title, styles["Title"]),
             Paragraph(f"Decision, {datetime.now(UTC):%Y-%m-%d %H:%M} UTC", small), Spacer(1, 6),
             Paragraph(str(answer.get("headline", "")), styles["Heading2"])]
    choice = answer.get("choice")
    if choice:
        story.append(Paragraph(
            f"Monthly cost, median [p5, p95] over {choice['draws']} new workload seeds: "
            f"<b>{fmt_band(choice['monthly_cost_usd'], '${:,.0f}')}</b> (extrapolated: {answer['span_h']} simulated "
            f"hours x {answer['hours_per_month']:.0f} h per month).", small))
        rows = [["SLO", "target attainment", "P(meets) [95 % interval]", "attainment median [p5, p95]"]]
        rows += [[s["tier"], f"{s['target']:.1%}", _prob(s["probability"]), fmt_band(s["attainment"], "{:.2%}")]
                 for s in choice["slo"]]
        rows.append(["every SLO at once", f"required P >= {answer['required_probability']:.0%}",
                     _prob(choice["meets_all"]), ""])
        story += [Spacer(1, 6), _table(rows), Spacer(1, 8),
                  Paragraph(f"<b>What to run: {choice['strategy']}</b>"
                            + (" (static counts)" if choice["mode"] == "static" else " (floors under the autoscaler)"),
                            styles["Heading3"])]
        fleet = [["region", "model", "pool", "GPU", "deployment", "instances" if choice["mode"] == "static" else
                  "floor", "ceiling", "GPUs"]]
        fleet += [[r["region"], r["model"], r.get("pool") or "aggregated", r["gpu"], r["deployment"], r["count"],
                   r["ceiling"] or "-", r["gpus"]] for r in choice["fleet"]]
        story.append(_table(fleet))
        if answer.get("serving"):
            story += [Spacer(1, 6), Paragraph(f"<b>Aggregated or disaggregated:</b> {answer['serving']['verdict']}.",
                                              small), Spacer(1, 4), _table(serving_rows(answer["serving"]))]
        if answer.get("rejected"):
            rej = answer["rejected"]
            story += [Spacer(1, 6), Paragraph(
                f"<b>Cheapest rejected alternative:</b> {rej['key']} "
                f"({fmt_band(rej['monthly_cost_usd'], '${:,.0f}')} a month, extrapolated): {rej['why']}.", small)]
        if answer.get("sensitivity"):
            story += [Spacer(1, 6), Paragraph(f"<b>What would change the answer most:</b> {answer['most_sensitive']}.",
                                              small)]
            story += [Paragraph(f"{s['input']}: {s['effect']}" + (" (changes the answer)" if s["changes_answer"] else ""),
                                small) for s in answer["sensitivity"]]
    elif answer.get("best"):
        story.append(Paragraph(f"Closest candidate: {answer['best']['key']}: {answer['best']['why']}.", small))
    if answer.get("failed"):
        story.append(Paragraph(f"{len(answer['failed'])} simulations did not finish; the candidates below say "
                               "which strategies they stopped.", small))
    story += [PageBreak(), Paragraph("Every candidate", styles["Heading2"])]
    rows = [["candidate", "accepted", "monthly cost", "GPU-hours (span)", "P(every SLO)", "why not"]]
    for c in answer.get("candidates", []):
        rows.append([c["key"], "yes" if c["accepted"] else "no", fmt_band(c["monthly_cost_usd"], "${:,.0f}"),
                     fmt_sig_band(c["gpu_hours"]), _prob(c["meets_all"]), Paragraph(c["why"] or "", small)])
    story.append(_table(rows, widths=[3.2 * cm, 1.4 * cm, 4.2 * cm, 2.6 * cm, 2.6 * cm, 4 * cm]))
    doc.build(story)
    return buf.getvalue()
