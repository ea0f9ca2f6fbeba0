"""The bad-input corpus: every crash found by trying bad inputs, through the API (and the pages where it
was found there). Each one must be a 4xx with the documented JSON shape on the API, never a 500, and
must store nothing. Django-side caps come from settings' "Limits" block.
"""

from __future__ import annotations

import copy
import gzip
import io
import json
from pathlib import Path

import pytest
from django.test import Client

from planner.hardware.models import Deployment, GpuType
from planner.plans.models import CapacityPlan
from planner.traces.models import Trace
from simulations.models import SimulationRun

ROOT = Path(__file__).resolve().parents[1]
SMALL = json.loads((ROOT / "fixtures" / "scenarios" / "small_reactive.json").read_text())
PLAN = json.loads((ROOT / "fixtures" / "plans" / "small_two_regions.json").read_text())
DEP = next(iter(SMALL["deployments"]))


def shaped(response, status: int) -> dict:
    """The response has exactly the expected 4xx and the documented error shape, {"error": {"message", "where",
    "hint", "request_id"}} with the request id of the X-Request-ID header; returns its error object."""
    assert response.status_code == status, (response.status_code, response.content[:400])
    assert response["Content-Type"].startswith("application/json"), response["Content-Type"]
    err = response.json()["error"]
    assert all(err.get(key) for key in ("message", "where", "hint", "request_id")), err
    assert err["request_id"] == response["X-Request-ID"], (err, response["X-Request-ID"])
    return err


def upload(api, content: bytes, name: str = "t.csv", **fields):
    f = io.BytesIO(content)
    f.name = name
    return api.post("/api/traces/", {"file": f, **fields}, format="multipart")


def scenario(mutate) -> dict:
    d = copy.deepcopy(SMALL)
    mutate(d)
    return d


# ----------------------------------------------------------------------------------- scenarios (simulations)
SCENARIO_CRASHES = [
    ("slo.ttft_s '1'", lambda d: d["slo"].setdefault("ttft_s", {}).update({"IW-F": "1"}), "scenario.slo.ttft_s.IW-F"),
    ("engine 'fast' as a string", lambda d: d.update(engine="fast"), "scenario.engine"),
    ("spot pool entry 'x'", lambda d: d["fleet"]["regions"][0]["spot_pool"].update({"x": "x"}),
     "scenario.fleet.regions[0].spot_pool.x"),
    ("peak_hour 'NaN'", lambda d: d["workload"]["synthetic"].update(peak_hour="NaN"),
     "scenario.workload.synthetic.peak_hour"),
    ("prefill.c0 9.2e18", lambda d: d["deployments"][DEP]["prefill"].update(c0=9.2e18),
     f"scenario.deployments.{DEP}.prefill.c0"),
    ("unknown key", lambda d: d["strategy"].update(parms={}), "scenario.strategy.parms"),
    ("initial past bigint", lambda d: d["fleet"]["endpoints"][0].update(initial=2**64),
     "scenario.fleet.endpoints[0].initial"),
    ("trace_path ../", lambda d: d.update(workload={"trace_path": "../../planner/settings.py"}),
     "scenario.workload.trace_path"),
    ("trace_path absolute", lambda d: d.update(workload={"trace_path": "/etc/passwd"}), "scenario.workload.trace_path"),
    ("another team's media file", lambda d: d.update(workload={"trace_path": "var/media/traces/x/normalised.parquet"}),
     "scenario.workload.trace_path"),
    ("1e9 synthetic requests", lambda d: d["workload"]["synthetic"].update(total_requests=10**9),
     "scenario.workload.synthetic"),
]


@pytest.mark.parametrize("name, mutate, where", SCENARIO_CRASHES, ids=[c[0] for c in SCENARIO_CRASHES])
def test_a_bad_simulation_scenario_is_a_documented_400_and_stores_nothing(cast, name, mutate, where):
    r = cast.owner.api.post("/api/simulations/", {"scenario": scenario(mutate)}, format="json")
    err = shaped(r, 400)
    assert err["where"] == where, err
    assert SimulationRun.objects.count() == 0


def test_a_refused_path_never_echoes_contents_or_existence(cast):
    for path in ("/etc/passwd", "/etc/does-not-exist", "fixtures/traces/azure_code_2023.csv"):
        r = cast.owner.api.post("/api/simulations/", {"scenario": scenario(lambda d, p=path: d.update(
            workload={"trace_path": p}))}, format="json")
        err = shaped(r, 400)
        text = json.dumps(err)
        assert "root:" not in text and "exist" not in text and path not in text


def test_a_scenario_of_another_teams_trace_id_is_a_400(cast):
    trace = _seed_trace(cast.outsider)
    r = cast.owner.api.post("/api/simulations/", {"scenario": scenario(lambda d: d.update(
        workload={"trace_id": trace.pk}))}, format="json")
    assert shaped(r, 400)["where"] == "scenario.workload.trace_id"


def test_the_scenario_form_refuses_nan_and_unknown_keys_without_a_crash(cast, client):
    client.force_login(cast.owner.user)
    for field, text in (
            ("scenario.workload.synthetic.peak_hour: must be a finite number",
             json.dumps(scenario(lambda d: d["workload"]["synthetic"].update(peak_hour=float("nan"))))),
            ("scenario.quota: is an unknown key", json.dumps(scenario(lambda d: d.update(quota=1))))):
        r = client.post("/simulations/", {"scenario": text})
        assert r.status_code == 400, r.status_code
        assert field in r.content.decode(), r.content[:400]
    assert SimulationRun.objects.count() == 0


# ----------------------------------------------------------------------------------- comparisons
def test_a_comparison_with_a_synthesize_path_or_a_file_reading_spec_is_a_400(cast):
    for wl in ({"synthesize": "../../etc/passwd"}, {"synthesize": {"regions": ["a"], "models": ["m"], "tiers": {
            "NIW": {}}, "tokens": {"default": {"empirical": {"path": "/etc/passwd"}}}}}):
        d = scenario(lambda d, wl=wl: d.update(workload=wl))
        r = cast.owner.api.post("/api/comparisons/", {"scenario": d, "strategies": ["static"]}, format="json")
        assert shaped(r, 400)["where"].startswith("scenario.workload.synthesize")


def test_a_comparison_with_a_misspelt_key_gets_a_suggestion(cast):
    d = scenario(lambda d: d.update(niw_queu=False))
    r = cast.owner.api.post("/api/comparisons/", {"scenario": d, "strategies": ["static"]}, format="json")
    err = shaped(r, 400)
    assert err["where"] == "scenario.niw_queu" and "niw_queue" in err["hint"]


# ----------------------------------------------------------------------------------- capacity plans
PLAN_CRASHES = [
    ("quota for quotas", lambda d: d.update(quota=d.pop("quotas")), "scenario.quota"),
    ("tps as a string", lambda d: d["demand"][0].update(tps="1"), "scenario.demand[0].tps"),
    ("max_gpus past bigint", lambda d: d["quotas"][0].update(max_gpus=2**64), "scenario.quotas[0].max_gpus"),
    ("misspelt knob", lambda d: d["solver"].update(time_limt_s=5), "scenario.solver.time_limt_s"),
]


@pytest.mark.parametrize("name, mutate, where", PLAN_CRASHES, ids=[c[0] for c in PLAN_CRASHES])
def test_a_bad_plan_is_a_documented_400_and_stores_nothing(cast, name, mutate, where):
    d = copy.deepcopy(PLAN)
    mutate(d)
    r = cast.owner.api.post("/api/plans/", {"scenario": d}, format="json")
    assert shaped(r, 400)["where"] == where
    assert CapacityPlan.objects.count() == 0


def test_the_plan_form_refuses_nan_without_a_crash(cast, client):
    client.force_login(cast.owner.user)
    d = copy.deepcopy(PLAN)
    d["demand"][0]["tps"] = float("nan")
    r = client.post("/plans/new/", {"scenario": json.dumps(d)})
    assert r.status_code == 400 and "demand[0].tps" in r.content.decode()
    assert CapacityPlan.objects.count() == 0


def test_plan_hours_past_bigint_is_a_400(cast):
    r = cast.owner.api.post("/api/plans/", {"scenario": PLAN, "hours": 2**64}, format="json")
    assert shaped(r, 400)["where"] == "request body: hours"
    assert CapacityPlan.objects.count() == 0


# ----------------------------------------------------------------------------------- traces
HEADER = b"arrival_s,input_tokens,output_tokens\n"
# Bad file contents: the upload is stored (202) and its normalisation job fails the trace with what/where/how.
TRACE_CONTENTS = [
    ("an arrival of 1e30", HEADER + b"0,10,10\n1e30,10,10\n2,10,10\n", "t.csv", "too large"),
    ("an unterminated quote", b'arrival_s,input_tokens,output_tokens,model\n0,10,10,"abc\n1,10,10,x\n', "t.csv",
     "quoted field"),
    ("a 1-byte non-UTF-8 file", b"\xff", "t.csv", "UTF-8"),
    ("valid 64 KB then 0xff", HEADER + b"".join(b"%d,10,10\n" % i for i in range(8000)) + b"\xff\n", "t.csv",
     "UTF-8"),
    ("Mooncake hash_ids ['a']", b'{"timestamp": 0, "input_length": 10, "output_length": 5, "hash_ids": ["a"]}\n',
     "t.jsonl", "hash_ids"),
    ("a 1e9-second span", HEADER + b"0,10,10\n1,10,10\n1000000000,10,10\n", "t.csv", "spans more than"),
]
# Bad options: refused in the request (400), nothing stored.
TRACE_OPTIONS = [
    ("rate 1e7 on a 60-byte file", {"rate": "1e7"}, "rate"),
    ("rate 1e11", {"rate": "1e11"}, "rate"),
    ("time_scale 1e30", {"time_scale": "1e30"}, "time_scale"),
    ("seed past bigint", {"seed": str(2**64)}, "seed"),
]


def failed_normalisation(response) -> dict:
    """A bad file is accepted (202, Location of the trace) and its normalisation job fails it: the trace's
    status_reason and the job's last_error say what, where (the file's name first) and how to fix it; no
    normalised file is kept. Returns the reason."""
    from planner.jobs.tasks import execute

    assert response.status_code == 202, (response.status_code, response.content[:400])
    body = response.json()
    # the request answered before any normalisation (these tests' transactions never commit, so no job ran yet)
    assert body["status"] == "pending" and body["job"]["kind"] == "trace.normalise", body
    assert execute(body["job"]["id"]) == "failed"  # what a worker does with the queued job
    trace = Trace.objects.select_related("job").get(pk=body["id"])
    assert response["Location"] == f"/api/traces/{trace.pk}/"
    body = Client(HTTP_AUTHORIZATION=response.wsgi_request.META["HTTP_AUTHORIZATION"]).get(response["Location"]).json()
    assert body["status"] == "failed" and trace.status == "failed", body["status"]
    reason = body["status_reason"]
    assert all(reason.get(key) for key in ("message", "where", "hint", "file")), reason
    assert reason["where"].startswith(reason["file"]), reason
    assert trace.job.kind == "trace.normalise" and trace.job.status == "failed"
    assert trace.job.last_error["message"] == reason["message"]
    assert not trace.normalised_file.exists()
    return reason


@pytest.mark.parametrize("name, content, fname, words", TRACE_CONTENTS, ids=[c[0] for c in TRACE_CONTENTS])
def test_a_bad_trace_file_fails_its_normalisation_with_a_documented_reason(cast, name, content, fname, words):
    reason = failed_normalisation(upload(cast.owner.api, content, fname))
    assert words.lower() in json.dumps(reason).lower(), reason


@pytest.mark.parametrize("name, fields, words", TRACE_OPTIONS, ids=[c[0] for c in TRACE_OPTIONS])
def test_a_bad_trace_upload_option_is_a_documented_400_and_stores_nothing(cast, name, fields, words):
    err = shaped(upload(cast.owner.api, HEADER + b"0,10,10\n1,10,10\n", "t.csv", **fields), 400)
    assert words.lower() in json.dumps(err).lower(), err
    assert Trace.objects.count() == 0


def _bomb() -> bytes:
    buf = io.BytesIO()
    with gzip.GzipFile(fileobj=buf, mode="wb", compresslevel=9) as f:
        f.write(HEADER)
        block = b"0,1,1\n" * 100_000
        for _ in range(110):  # 66 MB of rows from ~100 KB: an 11M-row bomb
            f.write(block)
    return buf.getvalue()


def test_a_gzip_bomb_is_refused_while_it_inflates(cast):
    content = _bomb()
    assert len(content) < 200_000
    err = failed_normalisation(upload(cast.owner.api, content, "t.csv.gz"))
    assert "decompression bomb" in err["message"] or "decompresses" in err["message"]


def test_a_trace_row_cap_holds_after_the_rate_multiplier(cast, settings):
    settings.TRACE_MAX_ROWS = 50
    err = failed_normalisation(upload(cast.owner.api, HEADER + b"0,10,10\n1,10,10\n", rate="40"))
    assert "more than 50 requests" in err["message"]


def test_an_upload_above_the_cap_is_refused_from_its_content_length_before_it_is_read(cast, settings):
    settings.TRACE_UPLOAD_MAX_BYTES = 100
    big = HEADER + b"0,10,10\n" * 200_000  # 1.6 MB > 100 B + 1 MiB framing
    response = upload(cast.owner.api, big)
    err = shaped(response, 413)
    assert "TRACE_UPLOAD_MAX_BYTES" in err["hint"]
    assert response["X-Request-ID"] and err.get("request_id", response["X-Request-ID"]) == response["X-Request-ID"]
    assert Trace.objects.count() == 0


def test_an_upload_above_the_cap_is_stopped_while_it_streams(cast, settings):
    settings.TRACE_UPLOAD_MAX_BYTES = 100
    err = shaped(upload(cast.owner.api, HEADER + b"0,10,10\n" * 100), 413)  # within the framing slack
    assert "TRACE_UPLOAD_MAX_BYTES" in err["hint"]
    assert Trace.objects.count() == 0


def test_a_json_body_above_the_cap_is_refused_before_it_is_parsed(cast, settings):
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 1000
    r = cast.owner.api.post("/api/plans/", {"scenario": PLAN, "name": "x" * 5000}, format="json")
    assert "DATA_UPLOAD_MAX_MEMORY_SIZE" in shaped(r, 413)["hint"]


def test_a_synthesis_spec_with_nan_or_a_huge_burst_is_a_400(cast):
    spec = json.loads((ROOT / "fixtures" / "workloads" / "sageserve_day.json").read_text())
    spec["tiers"]["NIW"]["bursts"]["multiplier"] = 1e30
    r = cast.owner.api.post("/api/traces/synthesise/", {"spec": spec}, format="json")
    err = shaped(r, 400)
    assert err["where"] == "spec" and err["message"].startswith("tiers.NIW.bursts.multiplier: must be <="), err
    assert Trace.objects.count() == 0


# ----------------------------------------------------------------------------------- hardware
def test_patch_of_a_price_without_as_of_is_a_400(cast):
    gpu = cast.owner.api.post(f"/api/hardware/gpus/{GpuType.objects.filter(builtin=True).first().pk}/copy/").json()
    price = {"cloud": "azure", "region": "eastus", "kind": "on_demand", "usd_per_gpu_hour": 3.5, "source": "quote"}
    r = cast.owner.api.patch(f"/api/hardware/gpus/{gpu['id']}/", {"prices": [price]}, format="json")
    assert shaped(r, 400)["where"] == "request body: prices[0].as_of"


def test_a_form_patch_of_a_copied_fitted_deployment_with_an_empty_object_field_keeps_the_stored_one(cast):
    builtin = Deployment.objects.filter(builtin=True, basis="fitted").first()
    copy_ = cast.owner.api.post(f"/api/hardware/deployments/{builtin.pk}/copy/").json()
    url = f"/api/hardware/deployments/{copy_['id']}/"
    r = cast.owner.api.patch(url, {"max_batch_size": "64", "prefill": ""}, format="multipart")
    assert r.status_code == 200, r.content[:300]  # an empty form field is an absent one, not an empty object
    assert r.json()["max_batch_size"] == 64 and r.json()["prefill"] == copy_["prefill"], r.json()
    r = cast.owner.api.patch(url, {"max_batch_size": "32"}, format="multipart")
    assert r.status_code == 200 and r.json()["max_batch_size"] == 32, r.content[:300]


@pytest.mark.parametrize("field, value, where", [
    ("kv_capacity_tokens", 2**64, "request body: kv_capacity_tokens"),
    ("gpus_per_instance", 2**64, "request body: gpus_per_instance"),
    ("max_batch_size", 2**64, "request body: max_batch_size"),
    ("theta_tps", "nan", "deployment.theta_tps"), ("theta_tps", "inf", "deployment.theta_tps")])
def test_hardware_numbers_past_bigint_or_not_finite_are_400s(cast, field, value, where):
    builtin = Deployment.objects.filter(builtin=True).first()
    copy_ = cast.owner.api.post(f"/api/hardware/deployments/{builtin.pk}/copy/").json()
    r = cast.owner.api.patch(f"/api/hardware/deployments/{copy_['id']}/", {field: value}, format="multipart")
    assert shaped(r, 400)["where"] == where
    assert Deployment.objects.get(pk=copy_["id"]).gpus_per_instance == copy_["gpus_per_instance"]


# ----------------------------------------------------------------------------------- ids and query strings
@pytest.mark.parametrize("url, status, where", [
    ("/api/traces/99999999999999999999999/", 404, "GET /api/traces/99999999999999999999999/"),
    ("/api/jobs/99999999999999999999999/", 404, "GET /api/jobs/99999999999999999999999/"),
    ("/api/plans/18446744073709551616/", 404, "GET /api/plans/18446744073709551616/"),
    ("/api/traces/?min_requests=1e400", 400, "query string: min_requests"),
    ("/api/traces/?min_requests=abc", 400, "query string: min_requests"),
    ("/api/jobs/?parent=" + "9" * 30, 400, "query string: parent"),
    ("/api/jobs/?parent=999", 400, "query string: parent"),
    ("/api/traces/?page=99999999999999999999999", 404, "query string: page"),
    ("/api/traces/?page=abc", 404, "query string: page"),
    ("/api/traces/?created_before=2000-01-01T00:00:00%2B16:00", 400, "query string: created_before"),
    ("/api/traces/?name=%00", 400, "query string: name"),
])
def test_huge_ids_and_numbers_in_urls_are_documented_4xx(cast, url, status, where):
    assert shaped(cast.owner.api.get(url), status)["where"] == where


def test_a_page_past_the_end_says_which_pages_exist(cast):
    err = shaped(cast.owner.api.get("/api/traces/?page=2"), 404)
    assert err["message"] == "page '2' does not exist; this list has 1 page(s)", err
    assert err["hint"].startswith("ask for a page from 1 to 1 ("), err


def test_a_count_filter_beyond_any_row_is_an_empty_list_not_an_error(cast):
    _seed_trace(cast.owner)
    r = cast.owner.api.get("/api/traces/?min_requests=99999999999999999999999")
    assert r.status_code == 200 and r.json() == {"count": 0, "next": None, "previous": None, "results": []}
    assert cast.owner.api.get("/api/traces/?min_requests=1").json()["count"] == 1


def _seed_trace(member):
    from planner.traces.services import import_trace_file

    return import_trace_file(ROOT / "fixtures" / "traces" / "azure_code_2023.csv", team=member.team, user=member.user,
                             name="seed")


def test_a_misspelt_knob_in_a_comparisons_strategy_params_is_a_400(cast):
    d = scenario(lambda d: d.update(strategy_params={"lt-ua": {"beta_fracton": 0.2}}))
    r = cast.owner.api.post("/api/comparisons/", {"scenario": d, "strategies": ["lt-ua"]}, format="json")
    err = shaped(r, 400)
    assert err["where"] == "scenario.strategy_params.lt-ua.beta_fracton" and "beta_fraction" in err["hint"]


def test_a_bad_knob_value_in_a_comparisons_strategy_params_is_a_400_not_a_failed_child(cast):
    d = scenario(lambda d: d.update(strategy_params={"lt-ua": {"beta_basis": "sideways"}}))
    r = cast.owner.api.post("/api/comparisons/", {"scenario": d, "strategies": ["lt-ua"]}, format="json")
    err = shaped(r, 400)
    assert err["where"] == "scenario.strategy_params.lt-ua.beta_basis" and "arrived" in err["message"]


def test_a_catalogue_upload_with_an_unknown_key_or_nan_is_a_400(cast):
    doc = json.loads((ROOT / "fixtures" / "hardware" / "example_catalogue.json").read_text())
    doc["deployments"][0]["tpp"] = 1
    f = io.BytesIO(json.dumps(doc).encode())
    f.name = "cat.json"
    err = shaped(cast.owner.api.post("/api/hardware/import/", {"file": f}, format="multipart"), 400)
    assert err["where"].endswith("deployments[0].tpp") and "'tp'" in err["hint"]
    doc["deployments"][0].pop("tpp")
    f = io.BytesIO(json.dumps(doc).replace("0.00012", "NaN").encode())
    f.name = "cat.json"
    err = shaped(cast.owner.api.post("/api/hardware/import/", {"file": f}, format="multipart"), 400)
    assert "prefill.c1" in err["where"]


@pytest.mark.parametrize("url, body", [
    ("/api/plans/", {"scenario": {**PLAN, "name": "a\x00b"}}),
    ("/api/comparisons/", {"scenario": SMALL, "strategies": ["static"], "projection": {"x\x00": 1}}),
    ("/api/comparisons/", {"scenario": SMALL, "variants": [{"strategy": "static", "knobs": {"a": "\x00"}}]}),
    ("/api/simulations/", {"scenario": {**SMALL, "description": "\x00"}}),
])
def test_a_nul_character_anywhere_in_a_json_body_is_a_400_not_a_database_error(cast, url, body):
    assert "NUL" in shaped(cast.owner.api.post(url, body, format="json"), 400)["message"]
    assert CapacityPlan.objects.count() == 0 and SimulationRun.objects.count() == 0


def test_the_scenario_schema_itself_refuses_nul_characters():
    from simulations.engine import ScenarioError, parse_scenario

    with pytest.raises(ScenarioError) as info:
        parse_scenario({**copy.deepcopy(SMALL), "price_sources": {"a": "b\x00"}})
    assert info.value.field == "price_sources.a"
