"""PDF pages for an operator-level plan (reportlab + matplotlib). Django-free.

``section(result, name)`` returns self-contained flowables (a heading, what was planned, one table per phase
with operator-level, default-stream, model-level and static P95 side by side, a chart of savings vs QPS), used
by the comparison cost report and by ``build_pdf`` for a standalone operator-level report.
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
from reportlab.platypus import Image, PageBreak, Paragraph, SimpleDocTemplate, Spacer, Table, TableStyle  # noqa: E402

from planner.decisions.report import compact_card  # noqa: E402
from planner.opscale.spec import CATALOGUE_GPUS, CATALOGUE_MODELS, catalogue_name  # noqa: E402

LABELS = {
    "model_level": "model-level autoscaling (baseline)",
    "operator_level": "operator-level (Alg. 1 + 2, GPU sharing)",
    "default_stream": "operator-level, no GPU sharing",
    "static_p95": "static, sized for the P95 window",
}


def _pct(x) -> str:
    return "-" if x is None else f"{100 * x:+.1f}%"


def _num(x, scale=1.0, digits=2) -> str:
    return "-" if x is None else f"{x / scale:,.{digits}f}"


def _table(data):
    t = Table(data, repeatRows=1)
    t.setStyle(
        TableStyle(
            [
                ("FONT", (0, 0), (-1, -1), "Helvetica", 7.5),
                ("FONT", (0, 0), (-1, 0), "Helvetica-Bold", 7.5),
                ("BACKGROUND", (0, 0), (-1, 0), colors.HexColor("#e2e8f0")),
                ("GRID", (0, 0), (-1, -1), 0.25, colors.HexColor("#a0aec0")),
                ("ALIGN", (1, 1), (-1, -1), "RIGHT"),
            ]
        )
    )
    return t


def _chart(result: dict) -> io.BytesIO | None:
    rows = (result.get("sweeps") or {}).get("qps")
    if not rows:
        return None
    fig, ax = plt.subplots(figsize=(7.5, 3.0), dpi=150)
    xs = [r["qps"] for r in rows]
    for key, label in (("gpus", "GPUs"), ("energy", "energy"), ("memory", "memory")):
        ax.plot(
            xs,
            [100 * ((r["operator_level_savings"] or {}).get(key) or 0.0) for r in rows],
            marker="o",
            ms=3,
            label=label,
        )
    ax.plot(
        xs,
        [100 * ((r["default_stream_savings"] or {}).get("gpus") or 0.0) for r in rows],
        ls=":",
        label="GPUs, no sharing",
    )
    ax.axhline(0, color="#718096", lw=0.6)
    ax.set_xlabel("QPS (prefill)")
    ax.set_ylabel("savings vs model-level (%)")
    ax.set_title(f"Operator-level savings vs QPS ({result['sweeps']['at']['length']:.0f}-token inputs)", fontsize=9)
    ax.legend(fontsize=7)
    fig.tight_layout()
    buf = io.BytesIO()
    fig.savefig(buf, format="png")
    plt.close(fig)
    buf.seek(0)
    return buf


def section(result: dict | None, name: str = "") -> list:
    """Flowables for one operator-level plan; [] when there is none."""
    if not result:
        return []
    styles = getSampleStyleSheet()
    small = ParagraphStyle("opscale-small", parent=styles["BodyText"], fontSize=8.5, leading=11)
    story: list = [PageBreak(), Paragraph("Operator-level scaling next to model-level scaling", styles["Heading2"])]
    t = result["typical"]
    derived = (
        " The profile is <b>derived</b> (roofline fit of Vidur's tables), not measured."
        if result.get("derived_profile")
        else ""
    )
    story.append(
        Paragraph(
            f"{name + ': ' if name else ''}{catalogue_name(result['model'], CATALOGUE_MODELS)} on "
            f"{catalogue_name(result['gpu'], CATALOGUE_GPUS)}, {result['windows']} windows of "
            f"{result['window_s']:g} s, typically {t['qps']:.2f} requests/s with {t['length']:.0f}-token inputs and "
            f"{t['out_tokens']:.0f} output tokens. Each window is planned per phase (prefill against the TTFT SLO, decode "
            f"against the TBT SLO) with per-operator M/M/R queues; savings are against model-level autoscaling under "
            f"the same queueing model ('From Models to Operators', docs/opscale.md).{derived}"
            + (
                f" <b>{result['infeasible_windows']} window-phases miss their SLO.</b>"
                if result.get("infeasible_windows")
                else ""
            ),
            small,
        )
    )
    story.append(Spacer(1, 0.2 * cm))
    for phase in ("prefill", "decode"):
        tot = result["totals"][phase]
        data = [[f"{phase}: strategy", "GPU-h", "energy kWh", "memory GB-h", "GPU", "energy", "memory"]]
        for key in ("model_level", "operator_level", "default_stream", "static_p95"):
            row = tot[key]
            sv = row.get("savings_vs_model_level") or {}
            data.append(
                [
                    LABELS[key],
                    _num(row["gpu_s"], 3600),
                    _num(row.get("energy_j"), 3.6e6, 3),
                    _num(row["memory_gb_s"], 3600, 1),
                    _pct(sv.get("gpu_s")) if sv else "baseline",
                    _pct(sv.get("energy_j")) if sv else "",
                    _pct(sv.get("memory_gb_s")) if sv else "",
                ]
            )
        story.append(_table(data))
        if tot.get("fallback_windows"):
            story.append(
                Paragraph(
                    f"{tot['fallback_windows']} of {tot['windows']} {phase} windows fell back to the model-level "
                    "placement (their operator-level placement needed more GPUs).",
                    small,
                )
            )
        story.append(Spacer(1, 0.25 * cm))
    png = _chart(result)
    if png is not None:
        story.append(Image(png, width=15 * cm, height=6 * cm, kind="proportional"))
    return story


def build_pdf(result: dict, title: str, answer: dict | None = None) -> bytes:
    """A standalone operator-level report; a comparison's leads with its decision card (``answer``)."""
    styles = getSampleStyleSheet()
    story = [
        Paragraph(title, styles["Title"]),
        Paragraph(
            f"Generated {datetime.now(UTC):%Y-%m-%d %H:%M} UTC by the LLM fleet capacity planner.", styles["BodyText"]
        ),
    ]
    if answer:
        small = ParagraphStyle("small", parent=styles["BodyText"], fontSize=8.5, leading=11)
        story += compact_card(answer, small, ParagraphStyle("card", parent=styles["Heading3"], spaceAfter=2))
    story += section(result)[1:]  # no page break before the first section
    buf = io.BytesIO()
    SimpleDocTemplate(buf, pagesize=A4, title=title, leftMargin=1.6 * cm, rightMargin=1.6 * cm).build(story)
    return buf.getvalue()
