"""PDF report of a serverless comparison: SLINFER and the ServerlessLLM baselines on shared CPU/GPU
nodes. Django-free; reuses the fleet report's table and chart helpers (core/report.py).

Page 1: the answer (the system with the most SLO-met requests, and how many times the baseline's), the table
(SLO-met requests, attainment, average CPU / GPU nodes, energy, resizing share) and the systems that did not
finish. Page 2: the charts (zero-based bars, one colour per system). Appendix: the scenario and the model.
"""

from __future__ import annotations

import io
from datetime import UTC, datetime

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from reportlab.lib.styles import ParagraphStyle, getSampleStyleSheet  # noqa: E402
from reportlab.lib.units import cm  # noqa: E402
from reportlab.platypus import Image, PageBreak, Paragraph, Spacer  # noqa: E402

from planner.comparisons.core.report import _num, _png, _table, failures_story, render_pdf  # noqa: E402
from planner.comparisons.core.serverless import DESCRIPTIONS  # noqa: E402
from planner.decisions.report import compact_card  # noqa: E402
from planner.plotstyle import colour_map  # noqa: E402


def _pct(x, digits=1) -> str:
    return "-" if x is None else f"{100 * x:.{digits}f}%"


def _times(x) -> str:
    return "-" if x is None else f"{x:.2f}x"


def _grouping(wl: dict) -> str:
    if wl.get("models"):
        return f"grouped into {wl['models']} models as the SLINFER artefact does"
    if wl.get("functions"):
        return f"its first {wl['functions']} functions"
    return "all its functions"


def _answer(agg: dict, failures: list[dict]) -> str:
    rows = {r["key"]: r for r in agg["rows"]}
    best = rows.get(agg.get("best") or "")
    base = rows.get(agg["baseline"])
    missing = (f" {len(failures)} system run(s) did not finish and are not compared (listed below)."
               if failures else "")
    if best is None:
        return f"<b>No system run finished.</b>{missing}"
    text = (f"<b>Most SLO-met requests: {best['key']}</b>, {best['slo_met']:,} of {best['requests']:,} "
            f"({_pct(best['slo_attainment'])}) with {best['avg_cpu_nodes']:.2f} CPU and {best['avg_gpu_nodes']:.2f} "
            f"GPU nodes in use on average and {best['energy_kwh']:.3f} kWh.")
    if base is None:
        text += f" The baseline <b>{agg['baseline']}</b> did not finish, so no ratio against it is given."
    elif best["key"] != base["key"]:
        text += (f" That is <b>{_times(best['slo_met_vs_baseline'])}</b> the SLO-met requests of the baseline "
                 f"<b>{base['key']}</b> ({base['slo_met']:,}, {_pct(base['slo_attainment'])}, "
                 f"{base['avg_gpu_nodes']:.2f} GPU nodes, {base['energy_kwh']:.3f} kWh).")
    else:
        text += " It is the baseline itself: no system compared does better."
    return text + missing


def _charts(rows: list[dict]) -> list[io.BytesIO]:
    keys = [r["key"] for r in rows]
    colours = colour_map(keys)
    out = []
    for field, ylabel, title, scale in (("slo_met", "requests", "SLO-met requests", 1.0),
                                        ("energy_kwh", "kWh", "Energy", 1.0),
                                        ("resizing_share", "% of instance lifetime", "Time spent resizing", 100.0)):
        fig, ax = plt.subplots(figsize=(7.2, 2.6))
        vals = [scale * (r.get(field) or 0.0) for r in rows]
        ax.bar(keys, vals, color=[colours[k] for k in keys])
        ax.set_ylim(bottom=0, top=max(max(vals, default=0.0) * 1.15, 1e-3))
        ax.set_ylabel(ylabel)
        ax.set_xlabel("system")
        ax.set_title(title)
        ax.tick_params(axis="x", rotation=20)
        ax.grid(alpha=0.3, axis="y")
        out.append(_png(fig))
    fig, ax = plt.subplots(figsize=(7.2, 2.8))  # node kinds in the page's fixed colours, not the systems' ones
    for i, (label, field, colour) in enumerate((("CPU nodes (Xeon 6462C)", "avg_cpu_nodes", "#7f8c9a"),
                                                ("GPU nodes (A100-80GB)", "avg_gpu_nodes", "#2f6db5"))):
        ax.bar([j + (i - 0.5) * 0.4 for j in range(len(keys))], [r[field] or 0.0 for r in rows], width=0.4,
               label=label, color=colour)
    ax.set_xticks(range(len(keys)))
    ax.set_xticklabels(keys, rotation=20)
    ax.set_ylim(bottom=0)
    ax.set_ylabel("nodes (time-average)")
    ax.set_title("Average nodes in use")
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)
    ax.grid(alpha=0.3, axis="y")
    ax.set_xlabel("system")
    out.insert(1, _png(fig))
    return out


def _chart_timeline(rows: list[dict], summaries: dict[str, dict]) -> io.BytesIO | None:
    keys = [r["key"] for r in rows if (summaries.get(r["key"]) or {}).get("nodes_timeline")]
    if not keys:
        return None
    colours = colour_map([r["key"] for r in rows])
    fig, ax = plt.subplots(figsize=(7.2, 2.8))
    for k in keys:
        tl = summaries[k]["nodes_timeline"]
        ax.step(tl["t_s"], tl["gpu"], where="post", color=colours[k], lw=1.2, label=f"{k} GPU")
        ax.step(tl["t_s"], tl["cpu"], where="post", color=colours[k], lw=1.0, ls=":", label=f"{k} CPU")
    ax.set_ylim(bottom=0)
    ax.set_xlabel("simulated time (s)")
    ax.set_ylabel("nodes hosting an instance")
    ax.set_title("Nodes in use over the run (solid: GPU, dotted: CPU)")
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)
    ax.grid(alpha=0.3)
    return _png(fig)


def build_pdf(*, title: str, scenario: dict, aggregate: dict, failures: list[dict] | None = None,
              summaries: dict[str, dict] | None = None, answer: dict | None = None) -> bytes:
    """The serverless report; page 1 leads with the decision card (``answer``, core/kind_answer.py) when given."""
    failures = failures or []
    styles = getSampleStyleSheet()
    small = ParagraphStyle("small", parent=styles["BodyText"], fontSize=8.5, leading=11)
    h2 = ParagraphStyle("h2", parent=styles["Heading2"], keepWithNext=1)
    rows = aggregate["rows"]
    nodes = scenario.get("nodes") or {}
    wl = scenario.get("workload") or {}
    story = [Paragraph(title, styles["Title"]), Paragraph(
        f"Generated {datetime.now(UTC):%Y-%m-%d %H:%M} UTC by the LLM fleet capacity planner. Serverless scenario: "
        f"{aggregate.get('requests') or 0:,} requests of trace {wl.get('trace')} "
        f"({_grouping(wl)}), "
        f"model {scenario.get('model')}, {nodes.get('cpu')} CPU + {nodes.get('gpu')} GPU nodes. "
        f"Baseline: {aggregate['baseline']}.", small), Spacer(1, 0.3 * cm)]
    if answer:
        story += compact_card(answer, small, ParagraphStyle("card", parent=styles["Heading3"], spaceAfter=2))
    story += [Paragraph(_answer(aggregate, failures), small), Spacer(1, 0.3 * cm)]
    data = [["system", "SLO-met", "SLO %", "x baseline", "dropped", "avg CPU\nnodes", "avg GPU\nnodes", "energy\nkWh",
             "Wh per\nSLO-met", "resizing", "no OOM"]]
    for r in rows:
        data.append([r["key"] + (" (baseline)" if r["is_baseline"] else ""), f"{r['slo_met']:,}",
                     _pct(r["slo_attainment"]), "-" if r["is_baseline"] else _times(r["slo_met_vs_baseline"]),
                     f"{r['dropped']:,}", _num(r["avg_cpu_nodes"], 2), _num(r["avg_gpu_nodes"], 2),
                     _num(r["energy_kwh"], 3), _num(r["wh_per_slo_met"], 3), _pct(r["resizing_share"], 2),
                     f"yes ({r['oom_checks']:,} checks)" if r.get("no_oom") else "NO"])
    story.append(_table(data, font_size=7))
    story.append(Paragraph(
        "SLO-met: time to first token within TTFT_SLO(L) = min(max(0.5, L/512), 8) s (plus the cold-start grace) and "
        "average time per output token within 0.25 s; dropped requests miss. Nodes: time-average of nodes hosting "
        "at least one instance (loading and keep-alive included). Energy: busy W x busy seconds + idle W x in-use "
        "idle seconds (nodes not in use are off; catalogue watts, assumed). Resizing: share of instance lifetime "
        "spent resizing the KV pool. No OOM: memory was checked against each node's capacity after every "
        "allocation.", small))
    story.extend(failures_story(failures, small, "system runs"))
    story.append(PageBreak())
    story.append(Paragraph("Charts", h2))
    timeline = _chart_timeline(rows, summaries or {}) if rows else None
    for png in ([timeline] if timeline else []) + (_charts(rows) if rows else []):
        story.append(Image(png, width=14.5 * cm, height=5.4 * cm, kind="proportional"))
        story.append(Spacer(1, 0.1 * cm))
    story.append(PageBreak())
    story.append(Paragraph("Appendix. Systems and scenario", h2))
    story.append(_table([["system", "what it is"]] + [[r["key"], Paragraph(DESCRIPTIONS.get(r["key"], r["system"]),
                                                                            small)] for r in rows],
                        col_widths=[4 * cm, 13 * cm], font_size=7.5))
    params = scenario.get("params") or {}
    story.append(Spacer(1, 0.3 * cm))
    story.append(_table([["setting", "value"], ["trace", str(wl.get("trace"))], ["model", str(scenario.get("model"))],
                         ["CPU nodes (Xeon 6462C, AMX)", str(nodes.get("cpu"))],
                         ["GPU nodes (A100-80GB)", f"{nodes.get('gpu')} x {nodes.get('gpu_memory_gb')} GB"],
                         ["KV watermark", _pct(params.get("watermark"), 0)],
                         ["keep-alive", f"{params.get('keep_alive_s')} s"],
                         ["shadow-validation margin", f"x{params.get('margin')}"],
                         ["simulated span", f"{_num(aggregate.get('run_length_s'), 0)} s"]],
                        col_widths=[6 * cm, 11 * cm], font_size=7.5))
    story.append(Spacer(1, 0.2 * cm))
    story.append(Paragraph("Model: the shared-node executor (simulations/engine/serverless) after SLINFER (the "
                           "paper in docs/reproduction_slinfer.md), with the authors' measured latency tables and "
                           "ServerlessLLM concurrency limits.", small))
    return render_pdf(story, title)


def to_csv(aggregate: dict) -> str:
    """Long format like the fleet export (section, variant, region, model, tier, metric, value)."""
    import csv

    buf = io.StringIO()
    w = csv.writer(buf)
    w.writerow(["section", "variant", "region", "model", "tier", "metric", "value"])
    for r in aggregate.get("rows") or []:
        for metric, value in r.items():
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                w.writerow(["systems", r["key"], "", "", "", metric, value])
    return buf.getvalue()
