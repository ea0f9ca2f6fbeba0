"""Energy in comparisons: per-variant kWh in the aggregate, on the page, in the PDF and the CLI."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from planner.comparisons.core.aggregate import energy_table
from planner.comparisons.core.report import _energy_section
from planner.comparisons.models import Comparison

TINY = json.loads((Path(__file__).resolve().parent / "tiny_scenario.json").read_text())


def test_the_energy_table_compares_variants_against_the_baseline():
    summaries = {
        "a": {"requests": 2000, "energy": {"energy_kwh": 100.0, "busy_kwh": 80.0, "idle_kwh": 15.0,
                                           "provisioning_kwh": 5.0, "energy_cost_usd": 8.0}},
        "b": {"requests": 2000, "energy": {"energy_kwh": 75.0, "busy_kwh": 70.0, "idle_kwh": 5.0,
                                           "provisioning_kwh": 0.0, "energy_cost_usd": 6.0}},
        "c": {"requests": 2000, "energy": {"energy_kwh": None, "missing_power": ["x/y/tp1"]}},
    }
    rows = {r["key"]: r for r in energy_table(summaries, "a", ["a", "b", "c"])}
    assert rows["b"]["saved_kwh"] == 25.0 and rows["b"]["saved_kwh_pct"] == pytest.approx(25.0)
    assert rows["b"]["kwh_per_1k_requests"] == pytest.approx(37.5)
    assert rows["c"]["energy_kwh"] is None and rows["c"]["saved_kwh"] is None
    assert len(_energy_section(list(rows.values()), None, None)) == 5  # spacer, heading, table, spacer, note
    assert _energy_section([rows["c"]], None, None) == []  # no run with power figures: no section


@pytest.mark.django_db(transaction=True)
def test_a_real_comparison_reports_energy_on_its_page(cast, client):
    client.force_login(cast.owner.user)
    scenario = dict(TINY, energy={"usd_per_kwh": {"default": 0.2}})
    resp = client.post("/comparisons/new/", {"scenario_json": json.dumps(scenario),
                                             "strategies": ["static", "reactive-unified"],
                                             "baseline": "reactive-unified", "name": "tiny-energy"})
    assert resp.status_code == 302
    comp = Comparison.objects.get(name="tiny-energy")
    assert comp.job.status == "succeeded", comp.job.last_error
    energy = {e["key"]: e for e in comp.summary["energy"]}
    metrics = comp.results.get(key="static").metrics
    static = metrics["energy"]
    # every endpoint's kWh lies between all-idle and all-busy for its GPU-hours (A100 50/400 W, H100 70/700 W)
    watts = {"a100-80gb": (50, 400), "h100-80gb": (70, 700)}
    gpu_hours = {f"{e['region']}/{e['model']}": (e["gpu"], e["gpu_hours"]) for e in metrics["endpoints"]}
    for e in static["endpoints"]:
        gpu, hours = gpu_hours[f"{e['region']}/{e['model']}"]
        idle, busy = watts[gpu]
        assert idle * hours / 1000 < e["energy_kwh"] < busy * hours / 1000
    assert static["energy_kwh"] == pytest.approx(sum(e["energy_kwh"] for e in static["endpoints"]))
    assert energy["static"]["energy_cost_usd"] == pytest.approx(0.2 * energy["static"]["energy_kwh"])
    html = client.get(f"/comparisons/{comp.pk}/").content.decode()
    assert 'id="energy"' in html and "kWh per 1k requests" in html
    assert client.get(f"/comparisons/{comp.pk}/report.pdf").content[:5] == b"%PDF-"


def test_the_cli_prints_small_energy_figures_with_significant_digits():
    """A 0.1 h test comparison uses ~0.04 kWh: the CLI said "0.0 kWh, $0.00" (rounded to one decimal)."""
    from planner.comparisons.kinds.fleet import _amount

    assert [_amount(x) for x in (0.039654, 0.00317, 5.5, 0.0, 1234.56)] == ["0.0397", "0.00317", "5.5", "0.0", "1,234.6"]
