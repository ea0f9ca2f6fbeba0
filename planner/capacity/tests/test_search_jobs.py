"""A capacity search through the API and the jobs: fan-out per (fleet, seed), the memo, partial answers, bounds."""

from __future__ import annotations

import io

import pytest
from pypdf import PdfReader

from planner.capacity import jobs as capacity_jobs
from planner.capacity.models import CapacitySearch, Probe
from planner.capacity.tests.scenarios import two_region_queue
from planner.jobs.models import Job


def pdf_text(pdf: bytes) -> str:
    return "\n".join(page.extract_text() for page in PdfReader(io.BytesIO(pdf)).pages)


SPEC = {"strategies": ["static", "reactive-unified"], "targets": {"IW-F": 0.9}, "probability": 0.66,
        "seeds": [1, 2, 3], "band_draws": 4}


def _start(cast, **body):
    body.setdefault("scenario", two_region_queue())
    body.setdefault("spec", SPEC)
    return cast.owner.api.post("/api/capacity-searches/", body, format="json")


@pytest.mark.django_db(transaction=True)
def test_a_search_fans_out_one_probe_job_per_fleet_and_seed_and_answers(cast):
    resp = _start(cast)
    assert resp.status_code == 201, resp.content
    search = CapacitySearch.objects.get(pk=resp.json()["id"])
    assert search.job.status == "succeeded", search.job.last_error
    probes = list(search.probes.all())
    assert probes and all(p.status == "done" and p.job.status == "succeeded" for p in probes)
    assert len({p.pid for p in probes}) == len(probes)  # the memo: never the same (fleet, seed, load) twice
    assert Job.objects.filter(parent=search.job, kind="capacity.probe").count() == len(probes)  # one job each
    assert Job.objects.filter(parent=search.job, kind="capacity.step").count() == search.round
    assert not search.stepping and search.changes_seen == search.changes
    answer = cast.owner.api.get(f"/api/capacity-searches/{search.pk}/answer/").json()["answer"]
    assert answer["status"] == "answer"
    counts = {r["region"]: r["count"] for r in answer["choice"]["fleet"]}
    assert counts == {"r1": 12, "r2": 12}  # Erlang C for 8 req/s per region (planner/capacity/tests/test_search_core)
    assert answer["choice"]["meets_all"]["n"] == 4 and answer["choice"]["monthly_cost_usd"]["median"] > 0
    assert answer["extrapolated"] and answer["span_h"] > 0
    assert {s["input"].split(" ")[0] for s in answer["sensitivity"]} >= {"load", "SLO"}
    csv = cast.owner.api.get(f"/api/capacity-searches/{search.pk}/csv/").content.decode()
    assert "monthly_cost_usd" in csv and "attainment.IW-F" in csv
    pdf = cast.owner.api.get(f"/api/capacity-searches/{search.pk}/pdf/").content
    assert pdf[:5] == b"%PDF-"
    text = pdf_text(pdf)
    assert "run static" in text.split("Every candidate")[0] and "What to run" in text  # page 1 is the card
    assert cast.outsider.api.get(f"/api/capacity-searches/{search.pk}/").status_code == 404


@pytest.mark.django_db(transaction=True)
def test_an_impossible_slo_gets_a_clear_answer_not_an_error(cast):
    resp = _start(cast, scenario=two_region_queue(ceiling=6), spec=dict(SPEC, strategies=["static"]))
    search = CapacitySearch.objects.get(pk=resp.json()["id"])
    assert search.job.status == "succeeded"
    assert search.answer["status"] == "no_fleet"
    assert search.answer["headline"].startswith("no fleet within the ceilings meets the SLO; the best")


@pytest.mark.django_db(transaction=True)
def test_quotas_that_exclude_every_fleet_get_a_clear_answer(cast):
    resp = _start(cast, spec=dict(SPEC, strategies=["static"], quota_gpus={"r1": 0}))
    search = CapacitySearch.objects.get(pk=resp.json()["id"])
    assert search.job.status == "succeeded" and search.answer["status"] == "no_fleet"
    assert "quota" in search.answer["headline"] or "quota" in search.answer["candidates"][0]["why"]


@pytest.mark.django_db
def test_a_search_above_the_request_bound_is_refused_with_a_400_and_stores_nothing(cast, settings):
    settings.PLANNER_MAX_SEARCH_REQUESTS = 100_000
    resp = _start(cast)
    assert resp.status_code == 400
    err = resp.json()["error"]
    assert err["where"] == "spec" and "limit is 100,000" in err["message"] and "band_draws" in err["hint"]
    assert not CapacitySearch.objects.exists() and not Job.objects.exists()


@pytest.mark.django_db
@pytest.mark.parametrize("spec,where", [({"strategies": ["warp-drive"]}, "spec.strategies[0]"),
                                        ({"probability": 2}, "spec.probability"),
                                        ({"targets": {"IW-X": 0.9}}, "spec.targets"),
                                        ({"quota_gpus": {"mars": 8}}, "spec.quota_gpus.mars"),
                                        ({"seeds": [1, 1]}, "spec.seeds"),
                                        ({"start_plan": 999}, "spec.start_plan")])
def test_bad_search_input_names_the_field(cast, spec, where):
    resp = _start(cast, spec=spec)
    assert resp.status_code == 400, resp.content
    assert resp.json()["error"]["where"] == where
    assert not CapacitySearch.objects.exists()


@pytest.mark.django_db(transaction=True)
def test_failed_probes_give_a_partial_answer_naming_them(cast, monkeypatch):
    from planner.capacity.core import driver

    real = driver.run_probe_inputs

    def flaky(base, inputs, **kw):
        if inputs["strategy"]["strategy"] == "reactive-unified":
            raise RuntimeError("the simulator blew up")
        return real(base, inputs, **kw)

    monkeypatch.setattr(driver, "run_probe_inputs", flaky)
    monkeypatch.setattr(capacity_jobs, "run_probe_inputs", flaky, raising=False)
    resp = _start(cast)
    search = CapacitySearch.objects.get(pk=resp.json()["id"])
    assert search.job.status == "partial"
    assert search.job.last_error["type"] == "PartialFailure"
    answer = search.answer
    assert answer["status"] == "answer" and answer["choice"]["key"] == "static"
    broken = next(c for c in answer["candidates"] if c["key"] == "reactive-unified")
    assert not broken["accepted"] and "blew up" in broken["why"]
    assert search.probes.filter(status="failed").exists()


@pytest.mark.django_db
def test_a_probe_lost_with_its_worker_is_recorded_and_the_search_goes_on(cast, django_capture_on_commit_callbacks):
    from planner.capacity.services import run_step
    from planner.jobs.tasks import execute

    with django_capture_on_commit_callbacks(execute=False):  # nothing runs by itself: the test drives the jobs
        resp = _start(cast)
        search = CapacitySearch.objects.get(pk=resp.json()["id"])
        run_step(search)
        probes = list(search.probes.all())
        assert len(probes) == 6  # two strategies x three seeds, at the first counts
        lost, *rest = probes
        Job.objects.filter(pk=lost.job_id).update(status="failed", last_error={"type": "WorkerLost",
                                                                               "message": "worker lost"})
        capacity_jobs._probe_lost(Job.objects.get(pk=lost.job_id))  # what the reaper calls
        lost.refresh_from_db()
        assert lost.status == "failed" and lost.error["type"] == "WorkerLost"
        for p in rest:
            execute(p.job_id)
        search.refresh_from_db()
        assert search.round == 2  # the last probe of a fleet claimed the next step although one was lost
        step = Job.objects.get(parent=search.job, kind="capacity.step", params__round=2)
        execute(step.pk)
    search.refresh_from_db()
    subs = search.state["subs"]
    stopped = [k for k, e in subs.items() if e.get("failed")]
    assert len(stopped) == 1 and subs[stopped[0]]["failed"]["error"]["type"] == "WorkerLost"


def _run_probes(search, sub):
    from planner.jobs.tasks import execute

    for p in search.probes.filter(status="pending", pid__startswith=f"{sub}|").order_by("pk"):
        execute(p.job_id)


@pytest.mark.django_db
def test_a_sub_search_moves_on_while_another_ones_probes_still_run(cast, django_capture_on_commit_callbacks):
    from planner.capacity.services import run_step
    from planner.jobs.tasks import execute

    with django_capture_on_commit_callbacks(execute=False):  # nothing runs by itself: the test drives the jobs
        search = CapacitySearch.objects.get(pk=_start(cast).json()["id"])
        run_step(search)
        first = {p.pid for p in search.probes.all()}
        static = sorted(p for p in first if p.startswith("static|"))
        assert len(first) == 6 and len(static) == 3
        for pid in static[:2]:  # two of the fleet's three seeds: the search cannot move yet
            execute(search.probes.get(pid=pid).job_id)
        search.refresh_from_db()
        assert (search.round, search.changes) == (1, 0)
        execute(search.probes.get(pid=static[2]).job_id)  # the fleet's last seed: a step, reactive still running
        search.refresh_from_db()
        assert (search.round, search.changes, search.stepping) == (2, 1, True)
        execute(Job.objects.get(parent=search.job, kind="capacity.step", params__round=2).pk)
        reactive = search.probes.filter(pid__startswith="reactive-unified|")
        assert set(reactive.values_list("status", flat=True)) == {"pending"} and reactive.count() == 3
        moved = search.probes.filter(pid__startswith="static|").exclude(pid__in=static)
        # the next fleet, on its first two seeds: if both miss it misses whatever the third says (0.66 of 3 seeds)
        assert moved.count() == 2 and {p.pid.split("|")[1] for p in moved} != {static[0].split("|")[1]}
        search.refresh_from_db()
        assert not search.stepping and search.changes_seen == 1
        # the next fleet of static finishes while a step is running: no second step; the running one claims after
        CapacitySearch.objects.filter(pk=search.pk).update(stepping=True)
        _run_probes(search, "static")
        search.refresh_from_db()
        assert (search.round, search.changes) == (2, 2)
        assert Job.objects.filter(parent=search.job, kind="capacity.step").count() == 2
        CapacitySearch.objects.filter(pk=search.pk).update(stepping=False)
        from planner.capacity.services import maybe_step

        assert maybe_step(search) is True and maybe_step(search) is False  # exactly one claim wins
        assert Job.objects.filter(parent=search.job, kind="capacity.probe").count() == search.probes.count()


@pytest.mark.django_db
def test_a_step_lost_with_its_worker_ends_the_search_with_a_partial_answer(cast, settings,
                                                                          django_capture_on_commit_callbacks):
    from datetime import timedelta

    from django.utils import timezone

    from planner.capacity.services import run_step
    from planner.jobs import reaper

    settings.JOBS_HEARTBEAT_TIMEOUT_S = 30
    with django_capture_on_commit_callbacks(execute=False):
        search = CapacitySearch.objects.get(pk=_start(cast).json()["id"])
        run_step(search)
        _run_probes(search, "static")
        _run_probes(search, "reactive-unified")
        step = Job.objects.get(parent=search.job, kind="capacity.step", params__round=2)
        stale = timezone.now() - timedelta(seconds=120)
        Job.objects.filter(pk=step.pk).update(status="running", started=stale, heartbeat=stale,
                                              attempts=settings.JOBS_MAX_ATTEMPTS, worker="celery:elsewhere:1")
        assert reaper.reap_running() == {step.pk: "failed"}  # the step's worker died, no attempts left
        search.refresh_from_db()
        assert search.finishing and search.job.dispatched is not None  # the parent is sent to build the answer
        execute_parent = search.job_id
    from planner.jobs.tasks import execute

    execute(execute_parent)
    search.refresh_from_db()
    assert search.job.status == "succeeded" and search.answer["status"] in {"answer", "no_fleet"}
    assert search.probes.filter(status="done").count() == 6  # nothing lost: every finished probe is kept
    assert search.probes.exclude(status="done").count() == 0


@pytest.mark.django_db
def test_cancelling_the_search_cancels_its_probes(cast, django_capture_on_commit_callbacks):
    from planner.capacity.services import maybe_step, run_step
    from planner.jobs.services import cancel_job

    with django_capture_on_commit_callbacks(execute=False):
        resp = _start(cast)
        search = CapacitySearch.objects.get(pk=resp.json()["id"])
        run_step(search)
        assert search.probes.exists()
        cancel_job(search.job)
        assert set(Job.objects.filter(parent=search.job).values_list("status", flat=True)) == {"cancelled"}
        Probe.objects.filter(search=search).update(status="cancelled")
        CapacitySearch.objects.filter(pk=search.pk).update(changes=5)
        assert maybe_step(search) is False  # no new step after a cancel


@pytest.mark.django_db
@pytest.mark.parametrize("body,field,says", [({"scenario": {}}, "scenario", "give a scenario object"),
                                             ({"scenario": {}, "scenario_fixture": "no-such"}, "scenario_fixture",
                                              "unknown fixture"),
                                             ({"scenario": [1, 2]}, "scenario", "must be a JSON object")])
def test_a_missing_or_unknown_scenario_names_the_field(cast, body, field, says):
    resp = _start(cast, **body)
    assert resp.status_code == 400, resp.content
    assert says in resp.json()["error"]["fields"][field][0]
    assert not CapacitySearch.objects.exists()


@pytest.mark.django_db(transaction=True)
def test_a_search_starts_from_the_ilp_plans_counts(cast):
    plan = {"name": "queue plan", "hours": 2, "regions": ["r1", "r2"], "gpus": {"g": {"on_demand": 1.0}},
            "deployments": [{"model": "m", "gpu": "g", "theta_tps": 1.0, "startup_s": 0}],
            "demand": [{"model": "m", "region": "r1", "tps": [9.0, 11.0]},
                       {"model": "m", "region": "r2", "tps": [6.0, 13.0]}]}
    resp = cast.owner.api.post("/api/plans/", {"scenario": plan}, format="json")
    assert resp.status_code == 201, resp.content
    from planner.plans.models import CapacityPlan

    result = CapacityPlan.objects.get(pk=resp.json()["id"]).result
    peaks = {}
    for row in result["instances"]:
        g = f"{row['region']}/{row['model']}"
        peaks[g] = max(peaks.get(g, 0), row["instances"])
    assert peaks == {"r1/m": 11, "r2/m": 13}  # theta 1 token/s per instance: the peak TPS
    resp = _start(cast, spec=dict(SPEC, strategies=["static"], band_draws=2, start_plan=resp.json()["id"]))
    assert resp.status_code == 201, resp.content
    search = CapacitySearch.objects.get(pk=resp.json()["id"])
    assert search.state["start"]["static"] == peaks
    first = search.probes.order_by("pk").first().pid
    assert first.startswith("static|r1/m=11,r2/m=13|")  # the first fleet probed is the plan's
    assert search.answer["choice"]["fleet"][0]["count"] == 12  # and the search still lands on Erlang C's count


@pytest.mark.django_db(transaction=True)
def test_spare_work_fills_idle_workers_without_changing_the_answer_or_passing_the_bound(cast, settings, monkeypatch):
    """CAPACITY_SEARCH_WORKERS: the search also runs the probes it will probably need next (the next fleet of a
    climb, early band draws); the answer is the same, every probe it needs is among them, and the probes in all stay
    within the bound the search was admitted under."""
    from planner.capacity import services

    plain = CapacitySearch.objects.get(pk=_start(cast).json()["id"])
    needed = set(plain.probes.values_list("pid", flat=True))
    settings.CAPACITY_SEARCH_WORKERS = 4
    spared = CapacitySearch.objects.get(pk=_start(cast).json()["id"])
    ran = set(spared.probes.values_list("pid", flat=True))
    assert spared.job.status == "succeeded" and spared.answer["headline"] == plain.answer["headline"]
    assert ran >= needed  # everything the search needed ran
    assert spared.state["spare_probes"] >= len(ran - needed) > 0  # some spare probes may have been needed later
    monkeypatch.setattr(services, "spare_budget", lambda spec: 2)  # the spare probes one search may run in all
    capped = CapacitySearch.objects.get(pk=_start(cast).json()["id"])
    assert capped.answer["headline"] == plain.answer["headline"]
    assert capped.state["spare_probes"] <= 2 and capped.probes.count() <= len(needed) + 2


def test_a_probe_that_starts_after_its_search_ended_is_not_run(cast, monkeypatch, django_capture_on_commit_callbacks):
    """Spare work still queued when the search answers (CAPACITY_SEARCH_WORKERS): the probe ends cancelled with
    the reason, and no simulation runs for it."""
    from planner.capacity.core import driver
    from planner.capacity.services import run_step
    from planner.jobs.tasks import execute

    with django_capture_on_commit_callbacks(execute=False):
        search = CapacitySearch.objects.get(pk=_start(cast).json()["id"])
        run_step(search)
        first, *_ = search.probes.all()
        Job.objects.filter(pk=search.job_id).update(status="succeeded")  # the search has answered
        ran = []
        monkeypatch.setattr(driver, "run_probe_inputs", lambda *a, **k: ran.append(a) or {})
        execute(first.job_id)
    first.refresh_from_db()
    assert first.status == "cancelled" and first.error["type"] == "SearchEnded" and not ran
    assert Job.objects.get(pk=first.job_id).status == "succeeded"  # the probe's job ended, with its reason
    assert "did not run" in Job.objects.get(pk=first.job_id).result["skipped"]
    from django.test import Client

    browser = Client()
    browser.force_login(cast.owner.user)
    page = browser.get(f"/capacity/{search.pk}/").content.decode()
    assert "did not finish" not in page  # spare work skipped after the answer is not shown as a failure
