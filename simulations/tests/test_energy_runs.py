"""Energy and the generator's new kinds through a stored run: API, job, page."""

from __future__ import annotations

import pytest
from django.test import Client

from planner.jobs.models import Job
from simulations.models import SimulationRun
from simulations.tests.engine_helpers import SPEC

DEVICE = {"kind": "cpu", "idle_w": 80, "busy_w": 250, "source": "test figures", "assumed": True}


@pytest.mark.django_db(transaction=True)
def test_a_run_with_gamma_arrivals_reports_its_energy_through_the_api_and_the_page(cast):
    scenario = {
        "name": "energy", "seed": 1,
        "workload": {"synthetic": {"kind": "gamma", "rate_rps": 0.5, "cv": 2.0, "duration_s": 600,
                                   "lengths": {"input": {"quantiles": {"p5": 7, "p50": 52, "p95": 911}},
                                               "output": {"quantiles": {"p5": 5, "p50": 87, "p95": 632}}}}},
        "fleet": {"regions": [{"name": "r1"}],
                  "endpoints": [{"region": "r1", "model": "toy", "deployment": dict(SPEC, device=DEVICE),
                                 "initial": 2, "min": 2, "max": 2}]},
        "energy": {"usd_per_kwh": {"r1": 0.3}, "pue": 1.1},
    }
    resp = cast.owner.api.post("/api/simulations/", {"scenario": scenario, "name": "energy"}, format="json")
    assert resp.status_code == 201, resp.content
    run = SimulationRun.objects.get(pk=resp.json()["id"])
    assert run.job.status == Job.Status.SUCCEEDED, run.job.last_error
    summary, usage = run.result["summary"], run.result["usage"][0]
    assert 200 < summary["requests"] < 400  # ~0.5 RPS x 600 s
    want = 8 * (250 * usage["serving_instance_hours"] + 80 * (usage["idle_instance_hours"]
                                                              + usage["provisioning_instance_hours"])) / 1000 * 1.1
    assert summary["energy_kwh"] == pytest.approx(want) and summary["energy_cost_usd"] == pytest.approx(0.3 * want)
    assert usage["device_kind"] == "cpu"
    page = Client()
    page.force_login(cast.owner.user)
    html = page.get(f"/simulations/{run.pk}/").content.decode()
    assert 'id="energy"' in html and "kWh" in html and "(CPU)" in html
    bad = dict(scenario, energy={"pue": 0.5})
    resp = cast.owner.api.post("/api/simulations/", {"scenario": bad}, format="json")
    assert resp.status_code == 400 and "energy.pue" in resp.content.decode()
