"""``manage.py serverless SPEC.json --compare``: the systems as a comparison, waited for and printed."""

from __future__ import annotations

import json
from pathlib import Path

from django.core.management.base import CommandError


def _csv_list(value: str) -> list[str]:
    return [x.strip() for x in (value or "").split(",") if x.strip()]


def compare(cmd, data, opts) -> None:
    from planner.clirun import cli_team
    from planner.comparisons import kinds
    from planner.comparisons.models import Comparison
    from planner.jobs.cliwait import wait_for

    team, user = cli_team(opts["team"], opts["user"])
    if not isinstance(data, dict):
        raise CommandError("a serverless scenario is a JSON object")
    scenario = {"kind": "serverless", **data}
    try:
        kind, request = kinds.parse_request({"scenario": scenario, "systems": _csv_list(opts["systems"]),
                                             "baseline": opts["baseline"], "name": opts["name"]})
        comp = kind.start(team=team, user=user, request=request)
    except kinds.RequestError as exc:
        hint = f" ({exc.hint})" if exc.hint else ""
        raise CommandError(f"{exc.field}: {exc.message}{hint}") from None
    pk = comp.pk
    comp = wait_for(lambda: Comparison.objects.select_related("job").get(pk=pk), what=f"comparison {pk}",
                    url=f"/comparisons/{pk}/", timeout_s=opts["timeout"], stderr=cmd.stderr)
    summary = comp.summary or {}
    if opts["pdf"] and summary.get("rows"):
        Path(opts["pdf"]).write_bytes(kinds.export_pdf(comp))
    if opts["csv"]:
        Path(opts["csv"]).write_text(kinds.export_csv(comp))
    runs = {r.key: {"status": r.status, "error": r.error, "wall_s": r.wall_s} for r in comp.results.all()}
    if opts["json"]:
        cmd.stdout.write(json.dumps({"comparison": comp.pk, "status": comp.status, "baseline": comp.baseline,
                                     "variants": runs, "aggregate": summary}, default=str))
        return
    cmd.stdout.write(f"serverless comparison {comp.pk}: {comp.status} (/comparisons/{comp.pk}/)")
    for key, r in runs.items():
        if r["status"] != "done":
            cmd.stdout.write(f"  {key}: {r['status']} {(r['error'] or {}).get('message', '')}")
    if not summary.get("rows"):
        cmd.stdout.write("no system finished")
        return
    cmd.stdout.write(f"{'system':26} {'SLO-met':>8} {'SLO %':>6} {'x base':>7} {'CPUs':>5} {'GPUs':>5} "
                     f"{'kWh':>7} {'resize %':>8}")
    for r in summary["rows"]:
        ratio = "   -   " if r["is_baseline"] or r["slo_met_vs_baseline"] is None else f"{r['slo_met_vs_baseline']:6.2f}x"
        cmd.stdout.write(f"{r['key'] + (' (base)' if r['is_baseline'] else ''):26} {r['slo_met']:8d} "
                         f"{100 * r['slo_attainment']:6.1f} {ratio:>7} {r['avg_cpu_nodes']:5.2f} "
                         f"{r['avg_gpu_nodes']:5.2f} {r['energy_kwh']:7.3f} {100 * r['resizing_share']:8.2f}")
    if opts["pdf"]:
        cmd.stdout.write(f"PDF report: {opts['pdf']}")
