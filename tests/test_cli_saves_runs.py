"""Work done on the command line shows in the workspace: plan, simulate and compare save rows of a team."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command
from django.test import Client

from planner.accounts.models import Membership
from planner.accounts.services import create_user
from planner.comparisons.models import Comparison
from planner.jobs.models import Job
from planner.plans.models import CapacityPlan
from simulations.models import SimulationRun

ROOT = Path(__file__).resolve().parents[1]
SIMPLE_PLAN = ROOT / "fixtures" / "plans" / "infeasible_westus_quota.json"


@pytest.fixture
def demo(db):
    user, _ = create_user("demo", "demo-planner", "Demo fleet", role=Membership.Role.OWNER)
    client = Client()
    client.force_login(user)
    return user, client


def test_plan_saves_a_row_of_the_demo_team_that_its_page_and_the_api_show(demo):
    user, client = demo
    out = io.StringIO()
    call_command("plan", str(SIMPLE_PLAN), "--hours", "4", "--json", stdout=out)
    printed = json.loads(out.getvalue())
    plan = CapacityPlan.objects.get()
    assert plan.team == user.membership.team and plan.created_by == user
    assert plan.job.status == Job.Status.SUCCEEDED and plan.job.started <= plan.job.finished
    assert plan.result["cost"] == printed["cost"]  # --json prints the figures that were stored
    assert client.get(f"/plans/{plan.pk}/").status_code == 200
    assert client.get("/plans/").content.decode().count(f"/plans/{plan.pk}/") >= 1


def test_plan_solver_options_are_kept_in_the_stored_scenario(demo):
    call_command("plan", str(SIMPLE_PLAN), "--hours", "2", "--time-limit", "7", "--solver", "cbc", stdout=io.StringIO())
    plan = CapacityPlan.objects.get()
    assert plan.scenario["solver"]["time_limit_s"] == 7 and plan.scenario["solver"]["name"] == "cbc"
    assert plan.result["solver"] == "cbc"


def test_plan_no_save_keeps_nothing_and_team_puts_it_elsewhere(demo):
    call_command("plan", str(SIMPLE_PLAN), "--hours", "2", "--no-save", stdout=io.StringIO())
    assert not CapacityPlan.objects.exists()
    call_command("plan", str(SIMPLE_PLAN), "--hours", "2", "--team", "Fleet Z", stdout=io.StringIO())
    assert CapacityPlan.objects.get().team.name == "Fleet Z"


def test_an_unknown_user_is_an_error_not_a_silent_default(demo):
    with pytest.raises(CommandError, match="no user 'ghost'"):
        call_command("plan", str(SIMPLE_PLAN), "--user", "ghost", stdout=io.StringIO())


def test_simulate_saves_a_finished_run_with_its_result(demo):
    user, client = demo
    out = io.StringIO()
    call_command("simulate", str(ROOT / "fixtures/scenarios/code_anchor.json"), "--json", stdout=out)
    printed = json.loads(out.getvalue())
    run = SimulationRun.objects.get()
    assert run.team == user.membership.team and run.status == "succeeded"
    assert run.requests_simulated == printed["requests_simulated"] == 8819
    assert run.result["summary"]["gpu_hours"] == printed["summary"]["gpu_hours"]
    page = client.get(f"/simulations/{run.pk}/")
    assert page.status_code == 200 and "8819" in page.content.decode().replace(",", "")
    api = client.get("/api/simulations/")
    assert run.pk in [r["id"] for r in api.json()["results"]]


@pytest.mark.django_db(transaction=True)
def test_compare_defaults_to_the_demo_team_so_the_demo_user_sees_it(demo, tmp_path):
    user, client = demo
    scenario = json.loads((ROOT / "fixtures/scenarios/code_anchor.json").read_text())
    path = tmp_path / "s.json"
    path.write_text(json.dumps(scenario))
    call_command("compare", str(path), "--strategies", "static,reactive-unified", "--json", stdout=io.StringIO())
    comp = Comparison.objects.get()
    assert comp.team == user.membership.team and comp.created_by == user
    assert client.get(f"/comparisons/{comp.pk}/").status_code == 200
